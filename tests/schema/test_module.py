"""An ontology author's temporary module: a class three levels below rk:Memory with its
own shape is a memory with no code change (seed 003 §3, §7; DESIGN.md "Memories")."""

from __future__ import annotations

import pytest

from reckon._errors import SchemaError
from reckon.schema import load_schema, validate

from .conftest import memory_graph

EX = "https://example.org/seo#"

ONTOLOGY = """
@prefix ex:   <https://example.org/seo#> .
@prefix rk:   <https://reckon.dev/ns/core#> .
@prefix owl:  <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd:  <http://www.w3.org/2001/XMLSchema#> .

ex:ChannelMemory a owl:Class ; rdfs:subClassOf rk:Memory ;
    rdfs:label "channel memory" ; rdfs:comment "About one acquisition channel." .
ex:SearchMemory a owl:Class ; rdfs:subClassOf ex:ChannelMemory ;
    rdfs:label "search memory" ; rdfs:comment "About search." .
ex:KeywordTargetMemory a owl:Class ; rdfs:subClassOf ex:SearchMemory ;
    rdfs:label "keyword target memory" ; rdfs:comment "A ranking target for one keyword." .
ex:channel a owl:DatatypeProperty ; rdfs:label "channel" ; rdfs:comment "Channel name." .
ex:keyword a owl:DatatypeProperty ; rdfs:label "keyword" ; rdfs:comment "The keyword." .
ex:targetRank a owl:DatatypeProperty ; rdfs:label "target rank" ; rdfs:comment "Rank to reach." .
"""

SHAPES = """
@prefix ex:   <https://example.org/seo#> .
@prefix sh:   <http://www.w3.org/ns/shacl#> .
@prefix xsd:  <http://www.w3.org/2001/XMLSchema#> .

ex:ChannelMemoryShape a sh:NodeShape ; sh:targetClass ex:ChannelMemory ;
    sh:property [ sh:path ex:channel ; sh:name "channel" ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:datatype xsd:string ; sh:message "channel is required" ] .
ex:KeywordTargetMemoryShape a sh:NodeShape ; sh:targetClass ex:KeywordTargetMemory ;
    sh:property [ sh:path ex:keyword ; sh:name "keyword" ; sh:order 1 ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:datatype xsd:string ; sh:minLength 1 ; sh:message "keyword is required" ] ,
                [ sh:path ex:targetRank ; sh:name "target_rank" ; sh:order 2 ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:datatype xsd:integer ; sh:minInclusive 1 ; sh:maxInclusive 100 ;
                  sh:message "target_rank: one integer from 1 to 100" ] .
"""

RULES = """
PREFIX ex: <https://example.org/seo#>
PREFIX rk: <https://reckon.dev/ns/core#>
RULE { ?m ex:tracked true } WHERE { ?m a ex:KeywordTargetMemory ; a rk:ActiveMemory }
"""

NODE = "urn:reckon:acme:memory:kw1"


def keyword_memory(**changes):
    fields = {
        "a": "ex:KeywordTargetMemory",
        "rdfs:label": '"Rank for reckon"',
        "rk:kind": "rk:Objective",
        "rk:scope": "rk:CompanyScope",
        "rk:importance": "4",
        "rk:source": "rk:Operator",
        "rk:confidence": '"1.0"^^xsd:decimal',
        "rk:createdAt": '"2026-03-02T09:15:00Z"^^xsd:dateTime',
        "ex:channel": '"organic search"',
        "ex:keyword": '"reckon"',
        "ex:targetRank": "3",
    }
    for k, v in changes.items():
        fields[k.replace("__", ":")] = v
    return memory_graph(fields, node=NODE, prefixes="@prefix ex: <https://example.org/seo#> .\n")


@pytest.fixture
def module(tmp_path):
    (tmp_path / "seo.ttl").write_text(ONTOLOGY)
    (tmp_path / "seo-shapes.ttl").write_text(SHAPES)
    (tmp_path / "seo.srl").write_text(RULES)
    return tmp_path


def test_deep_class_is_catalogued_with_own_and_inherited_properties(module):
    schema = load_schema(module / "seo.ttl", module / "seo-shapes.ttl", module / "seo.srl")
    cat = schema.catalogue()
    assert "ex:KeywordTargetMemory" in cat.names() and "mk:BudgetConstraintMemory" in cat.names()
    kw = cat.get("ex:KeywordTargetMemory")
    assert kw.depth == 3
    assert kw.ancestors == (EX + "SearchMemory", EX + "ChannelMemory", "https://reckon.dev/ns/core#Memory")
    assert kw.parents == (EX + "SearchMemory",)
    assert [p.name for p in kw.properties] == ["keyword", "target_rank"]
    assert [p.name for p in kw.inherited][:1] == ["channel"]
    assert kw.property("target_rank").max_inclusive == 100
    assert schema.rule_files[-1] == (module / "seo.srl").resolve()
    assert schema.is_memory_class(schema.ontology.namespace_manager.expand_curie("ex:KeywordTargetMemory"))


def test_deep_class_instance_validates_against_all_levels(module):
    schema = load_schema(module)  # a folder works too
    assert validate(keyword_memory(), [NODE], schema=schema) == []
    # the shape three levels up (ex:ChannelMemory) and the base shape (rk:Memory) apply
    vs = validate(keyword_memory(ex__channel=None, rk__source=None, ex__targetRank="0"), [NODE], schema=schema)
    got = sorted((v["field"], v["constraint"]) for v in vs)
    assert got == [
        ("channel", "sh:MinCountConstraintComponent"),
        ("source", "sh:MinCountConstraintComponent"),
        ("target_rank", "sh:MinInclusiveConstraintComponent"),
    ]


def test_shipped_schema_does_not_know_the_module(module):
    load_schema(module)
    shipped = load_schema()
    vs = validate(keyword_memory(), [NODE], schema=shipped)
    assert [v["constraint"] for v in vs] == ["rk:KnownClassConstraint"]


def test_one_file_holding_ontology_and_shapes_is_split(tmp_path):
    both = ONTOLOGY + "\n" + SHAPES.replace("@prefix ex:   <https://example.org/seo#> .", "")
    (tmp_path / "seo-all.ttl").write_text(both)
    schema = load_schema(tmp_path / "seo-all.ttl")
    from rdflib import URIRef
    from rdflib.namespace import SH

    shape = URIRef(EX + "KeywordTargetMemoryShape")
    assert (shape, None, None) in schema.shapes and (shape, None, None) not in schema.ontology
    cls = URIRef(EX + "KeywordTargetMemory")
    assert (cls, None, None) in schema.ontology and (cls, None, None) not in schema.shapes
    assert len(list(schema.shapes.objects(shape, SH.property))) == 2
    assert validate(keyword_memory(ex__keyword='""'), [NODE], schema=schema)[0]["constraint"] == (
        "sh:MinLengthConstraintComponent"
    )


def test_schema_cache_follows_file_changes(module):
    first = load_schema(module / "seo.ttl", module / "seo-shapes.ttl")
    assert load_schema(module / "seo.ttl", module / "seo-shapes.ttl") is first
    import os

    p = module / "seo-shapes.ttl"
    p.write_text(SHAPES.replace("sh:maxInclusive 100", "sh:maxInclusive 10"))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    second = load_schema(module / "seo.ttl", module / "seo-shapes.ttl")
    assert second is not first
    assert second.catalogue().get("ex:KeywordTargetMemory").property("target_rank").max_inclusive == 10


def test_bad_module_files_are_refused_with_the_file_named(tmp_path):
    bad = tmp_path / "broken.ttl"
    bad.write_text("@prefix ex: <https://example.org/> .\nex:a ex:b .\n")
    with pytest.raises(SchemaError, match="broken.ttl"):
        load_schema(bad)
    odd = tmp_path / "module.owl"
    odd.write_text("")
    with pytest.raises(SchemaError, match="unknown extension"):
        load_schema(odd)
    with pytest.raises(SchemaError, match="not found"):
        load_schema(tmp_path / "missing.ttl")


def test_schema_graph_and_triples_for_the_store(schema):
    g = schema.graph()
    assert len(g) == len(schema.ontology) + len(schema.shapes)
    triples = schema.triples()
    assert len(triples) == len(g)
    import pyoxigraph as ox

    assert all(isinstance(t, ox.Triple) for t in triples)


def test_schema_from_a_tenant_schema_graph_behaves_like_the_files(schema):
    """The store keeps ontology + shapes in one named graph (Oxigraph types strings
    xsd:string); a schema rebuilt from those triples validates and catalogues the same."""
    from reckon.schema import schema_from_graph

    from .conftest import MEMORY, budget

    rebuilt = schema_from_graph(schema.triples())
    assert rebuilt.catalogue().names() == schema.catalogue().names()
    assert len(rebuilt.shapes) == len(schema.shapes)
    assert validate(budget(), [MEMORY], schema=rebuilt) == []
    vs = validate(budget(rk__kind="rk:Banana", mk__currency='"usd"'), [MEMORY], schema=rebuilt)
    assert sorted(v["constraint"] for v in vs) == ["sh:InConstraintComponent", "sh:PatternConstraintComponent"]
