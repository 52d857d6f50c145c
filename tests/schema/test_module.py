"""An ontology author's temporary module: a class three levels below rk:Memory with its
own shape is a memory with no code change (seed 003 §3, §7; DESIGN.md "Memories")."""

from __future__ import annotations

import json

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
    # "usd": the pattern and the ISO 4217 list (a named RDF list, kept with the shapes) refuse it
    assert sorted(v["constraint"] for v in vs) == ["sh:InConstraintComponent", "sh:InConstraintComponent",
                                                   "sh:PatternConstraintComponent"]


# ---------------------------------------------------------------------------------------
# A whole module in Turtle + SRL, no Python: a status property with its rendering template
# (issue 10: status rendering as data; ontology/core.ttl rk:statusTemplate)
# ---------------------------------------------------------------------------------------

STATUS_ONTOLOGY = ONTOLOGY + """
ex:RankObservation a owl:Class ; rdfs:label "rank observation" ;
    rdfs:comment "Business data: where the site ranks for a keyword today." .
ex:rank a owl:DatatypeProperty ; rdfs:label "rank" .
ex:RankState a owl:Class ; rdfs:label "rank state" .
ex:OnTarget a ex:RankState ; rdfs:label "on_target" .
ex:OffTarget a ex:RankState ; rdfs:label "off_target" .
ex:currentRank a owl:DatatypeProperty ; rdfs:label "current rank" ;
    rdfs:comment "Derived: today's rank for the memory's keyword." .
ex:rankStatus a owl:ObjectProperty ; rdfs:label "rank status" ;
    rdfs:comment "Derived: ex:OnTarget or ex:OffTarget." ;
    rk:statusTemplate "{{ value }} — ranked {{ currentRank }} for '{{ keyword }}' (target {{ targetRank }}, {{ channel | upper }})" .
"""

STATUS_SHAPES = SHAPES + """
ex:RankObservationShape a sh:NodeShape ; sh:targetClass ex:RankObservation ;
    sh:property [ sh:path ex:rank ; sh:name "rank" ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:datatype xsd:integer ; sh:minInclusive 1 ; sh:message "rank: one integer >= 1" ] ,
                [ sh:path ex:keyword ; sh:minCount 1 ; sh:maxCount 1 ; sh:datatype xsd:string ] .
"""

STATUS_RULES = """
PREFIX ex: <https://example.org/seo#>
PREFIX rk: <https://reckon.dev/ns/core#>
# rule: seo-current-rank — If an active keyword target's keyword has a rank observation,
#   then the memory's ex:currentRank is that rank.
RULE { ?m ex:currentRank ?r } WHERE {
  ?m a ex:KeywordTargetMemory ; a rk:ActiveMemory ; ex:keyword ?k .
  ?o a ex:RankObservation ; ex:keyword ?k ; ex:rank ?r .
}
RULE { ?m ex:rankStatus ex:OnTarget } WHERE { ?m ex:currentRank ?r ; ex:targetRank ?t . FILTER(?r <= ?t) }
RULE { ?m ex:rankStatus ex:OffTarget } WHERE { ?m ex:currentRank ?r ; ex:targetRank ?t . FILTER(?r > ?t) }
"""

RANK = """
@prefix ex: <https://example.org/seo#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
<urn:reckon:seo:rank:reckon> a ex:RankObservation ; ex:keyword "reckon" ; ex:rank {rank} .
"""


@pytest.fixture
def status_module(tmp_path):
    d = tmp_path / "seo"
    d.mkdir()
    (d / "seo.ttl").write_text(STATUS_ONTOLOGY, encoding="utf-8")
    (d / "seo-shapes.ttl").write_text(STATUS_SHAPES, encoding="utf-8")
    (d / "seo.srl").write_text(STATUS_RULES, encoding="utf-8")
    return d


def test_module_with_a_status_template_validates_derives_renders_and_is_a_tool(status_module, tmp_path,
                                                                               monkeypatch):
    from reckon import InvalidInput, Principal, ShapeViolation
    from reckon.api import Engine
    from reckon.loaders import load_turtle

    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    eng = Engine(tmp_path / "data", modules=[status_module])
    t = eng.create_tenant("seo", company_name="Seo Inc")
    ops = Principal.operator("dana")
    # appears in the tool schema, with the shapes' constraints
    remember = next(d for d in t.tool_definitions(format="anthropic") if d["name"] == "remember")
    assert "KeywordTargetMemory" in json.dumps(remember["input_schema"])
    # validates: the module's shape refuses a rank target of 0, by the shape's message
    base = dict(kind="objective", scope="company", importance=5, source="operator", label="Rank for reckon",
                content="Get the site into the top 3 for 'reckon'.", subclass="KeywordTargetMemory")
    with pytest.raises(ShapeViolation, match="target_rank"):
        t.remember(principal=ops, **base, properties={"channel": "organic search", "keyword": "reckon",
                                                       "target_rank": 0})
    m = t.remember(principal=ops, **base, properties={"channel": "organic search", "keyword": "reckon",
                                                       "target_rank": 3})
    # business data of the module goes through its shapes too (a rank of 0 is refused)
    bad = tmp_path / "bad.ttl"
    bad.write_text(RANK.replace("{rank}", "0"), encoding="utf-8")
    with pytest.raises(InvalidInput):
        load_turtle(t, bad)
    # derives: the module's rules join the memory with the business data
    good = tmp_path / "rank.ttl"
    good.write_text(RANK.replace("{rank}", "7"), encoding="utf-8")
    load_turtle(t, good)
    assert t.get(m.id).status == {"currentRank": 7, "rankStatus": "off_target"}
    # renders in the bundle through the module's template, no Python
    text = t.context(ops).render()
    assert "off_target — ranked 7 for 'reckon' (target 3, ORGANIC SEARCH)" in text, text
    assert "rankStatus:" not in text


def test_check_reports_a_status_template_that_does_not_compile(status_module):
    from reckon.schema import check_schema

    ok = load_schema(status_module)
    assert not [p for p in check_schema(ok, rules=False) if "Template" in p.message]
    broken = status_module / "seo.ttl"
    broken.write_text(STATUS_ONTOLOGY.replace("{{ value }} —", "{{ value | nosuchfilter }} —"), encoding="utf-8")
    problems = [str(p) for p in check_schema(load_schema(status_module), rules=False)]
    assert any("ex:rankStatus" in p and "does not compile" in p and "nosuchfilter" in p for p in problems), problems
