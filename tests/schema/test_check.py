"""reckon.schema.check_schema: every problem of a module set, for the ontology author."""

from __future__ import annotations

from reckon.schema import check_schema, load_schema

GOOD_ONTOLOGY = """
@prefix ex: <https://example.org/m#> . @prefix rk: <https://reckon.dev/ns/core#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:NoteMemory a owl:Class ; rdfs:subClassOf rk:Memory ; rdfs:label "note" ; rdfs:comment "A note." .
ex:topic a owl:DatatypeProperty ; rdfs:label "topic" ; rdfs:comment "Topic." .
"""


def test_shipped_modules_have_no_problems():
    assert check_schema(load_schema()) == []


def test_a_broken_module_reports_every_problem(tmp_path):
    (tmp_path / "m.ttl").write_text(
        """@prefix ex: <https://example.org/m#> . @prefix rk: <https://reckon.dev/ns/core#> .
        @prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
        @prefix sh: <http://www.w3.org/ns/shacl#> .
        ex:NoteMemory a owl:Class ; rdfs:subClassOf rk:Memory .
        ex:NoteShape a sh:NodeShape ; sh:targetClass ex:NoteMemry ;
            sh:property [ sh:path ex:topic ; sh:class ex:Topic ] .
        """
    )
    (tmp_path / "m.srl").write_text("PREFIX ex: <https://example.org/m#>\nRULE { ?x ex:p ?y } WHERE { ?x ex:q ?z }\n")
    problems = [str(p) for p in check_schema(load_schema(tmp_path))]
    errors = [p for p in problems if p.startswith("error:")]
    assert "error: memory class ex:NoteMemory has no rdfs:label" in errors
    assert "error: memory class ex:NoteMemory has no rdfs:comment" in errors
    assert "error: shape ex:NoteShape targets ex:NoteMemry, which the ontology does not declare" in errors
    assert any("sh:class ex:Topic" in p for p in errors)
    assert "error: property shape path ex:topic is not a property declared in the ontology" in errors
    assert any(p.startswith("error: rules:") and "?y" in p for p in errors)
    assert "warning: property shape on ex:topic has no sh:message" in problems
    assert problems.index(errors[-1]) < problems.index("warning: property shape on ex:topic has no sh:message")


def test_a_good_module_passes(tmp_path):
    (tmp_path / "m.ttl").write_text(GOOD_ONTOLOGY)
    (tmp_path / "m-shapes.ttl").write_text(
        """@prefix ex: <https://example.org/m#> . @prefix sh: <http://www.w3.org/ns/shacl#> .
        @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
        ex:NoteShape a sh:NodeShape ; sh:targetClass ex:NoteMemory ;
            sh:property [ sh:path ex:topic ; sh:name "topic" ; sh:datatype xsd:string ; sh:message "topic: a string" ] .
        """
    )
    assert check_schema(load_schema(tmp_path)) == []


def test_settings_overridden_out_of_range_is_an_error(tmp_path):
    (tmp_path / "s.ttl").write_text(
        '@prefix rk: <https://reckon.dev/ns/core#> . rk:settings rk:liveContextCap -1 .\n'
    )
    problems = [str(p) for p in check_schema(load_schema(tmp_path / "s.ttl"), rules=False)]
    assert any("live_context_cap" in p and p.startswith("error:") for p in problems), problems
