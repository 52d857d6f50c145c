"""LLM tool definitions generated from the subclass catalogue, and the tool-call handler
(seed 003 §5: "the set of available subclasses is described to the model"; §6: search).

* both formats (OpenAI function tools, Anthropic tools) are valid JSON Schema documents
  (checked with ``jsonschema`` when installed, and structurally always);
* a subclass added in Turtle changes ``tool_definitions()`` with no code change;
* bad arguments come back as ``{"ok": False, "error": {...}}`` naming the field.
"""

from __future__ import annotations

import json
import os

import pytest

from reckon.api import Engine, Principal

DANA = Principal.operator(person="dana", teams=["growth"])
ANN = Principal(person="ann", teams=["growth"])

try:  # the brief: use jsonschema when it is installed, else check structure only
    import jsonschema
except ImportError:  # pragma: no cover
    jsonschema = None

MODULE = """
@prefix rk:   <https://reckon.dev/ns/core#> .
@prefix ex:   <https://example.org/ns/creative#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl:  <http://www.w3.org/2002/07/owl#> .
@prefix sh:   <http://www.w3.org/ns/shacl#> .
@prefix xsd:  <http://www.w3.org/2001/XMLSchema#> .

ex:CreativeMemory a owl:Class ; rdfs:subClassOf rk:Memory ; rdfs:label "creative memory" .
ex:HeadlineRuleMemory a owl:Class ; rdfs:subClassOf ex:CreativeMemory ; rdfs:label "headline rule memory" ;
    rdfs:comment "A rule for ad headlines." .
ex:maxWords a owl:DatatypeProperty ; rdfs:label "max words" ; rdfs:comment "Most words a headline may have." .
ex:channel a owl:DatatypeProperty ; rdfs:label "channel" .

ex:HeadlineRuleMemoryShape a sh:NodeShape ;
    sh:targetClass ex:HeadlineRuleMemory ;
    sh:property [ sh:path ex:maxWords ; sh:name "max_words" ; sh:minCount 1 ; sh:maxCount 1 ;
                  sh:datatype xsd:integer ; sh:minInclusive 1 ; sh:maxInclusive 30 ;
                  sh:message "max_words is required: one integer 1-30" ] ;
    sh:property [ sh:path ex:channel ; sh:name "channels" ; sh:datatype xsd:string ;
                  sh:in ( "search" "social" "display" ) ] .
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    yield Engine(tmp_path_factory.mktemp("tools"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


_n = iter(range(10_000))


@pytest.fixture
def tenant(engine):
    t = engine.create_tenant(f"tools{next(_n)}")
    t.add_team("growth")  # DANA's and ANN's team
    return t


def _check_structure(schema: dict) -> None:
    """Structural JSON Schema check: every node is a dict with known keywords and types."""
    assert isinstance(schema, dict)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        assert names and set(names) <= {"object", "array", "string", "integer", "number", "boolean", "null"}
    for key in ("properties",):
        for name, sub in schema.get(key, {}).items():
            assert isinstance(name, str)
            _check_structure(sub)
    if "items" in schema:
        _check_structure(schema["items"])
    for key in ("oneOf", "anyOf", "allOf"):
        for sub in schema.get(key, []):
            _check_structure(sub)
    if "required" in schema:
        assert set(schema["required"]) <= set(schema.get("properties", {}))
    if "enum" in schema:
        assert isinstance(schema["enum"], list) and schema["enum"]


def _remember_schema(defs, fmt="openai"):
    for t in defs:
        if fmt == "openai" and t["function"]["name"] == "remember":
            return t["function"]["parameters"]
        if fmt == "anthropic" and t["name"] == "remember":
            return t["input_schema"]
    raise AssertionError("no remember tool")


def test_both_formats_are_valid_json_schema(tenant):
    both = tenant.tool_definitions("both")
    openai, anthropic = both["openai"], both["anthropic"]
    assert [t["function"]["name"] for t in openai] == ["remember", "search", "supersede", "get_context"]
    assert [t["name"] for t in anthropic] == ["remember", "search", "supersede", "get_context"]
    for t in openai:
        assert set(t) == {"type", "function"} and t["type"] == "function"
        assert set(t["function"]) == {"name", "description", "parameters"}
        assert t["function"]["parameters"]["type"] == "object"
    for t in anthropic:
        assert set(t) == {"name", "description", "input_schema"} and t["input_schema"]["type"] == "object"
    for a, o in zip(anthropic, openai):
        assert a["input_schema"] == o["function"]["parameters"]
        _check_structure(a["input_schema"])
        if jsonschema is not None:
            jsonschema.Draft202012Validator.check_schema(a["input_schema"])
    json.dumps(both)  # serialisable
    assert tenant.tool_definitions() == openai and tenant.tool_definitions("anthropic") == anthropic


def test_remember_schema_lists_every_subclass_with_its_properties(tenant):
    schema = _remember_schema(tenant.tool_definitions())
    variants = {v["title"]: v for v in schema["properties"]["subclass"]["oneOf"]}
    assert {"BudgetConstraintMemory", "PerformanceTargetMemory", "BrandVoiceMemory", "HiringCriteriaMemory",
            "CandidateAssessmentMemory", "SourcingPreferenceMemory"} <= set(variants)
    budget = variants["BudgetConstraintMemory"]["properties"]["properties"]
    assert set(budget["required"]) == {"platform", "amount", "currency", "period"}
    assert budget["properties"]["amount"]["type"] == ["number", "string"] and budget["properties"]["amount"]["minimum"] == 0
    assert "meta" in budget["properties"]["platform"]["enum"]
    assert "Monthly" in budget["properties"]["period"]["enum"]
    assert budget["additionalProperties"] is False
    brand = variants["BrandVoiceMemory"]["properties"]["properties"]["properties"]
    assert brand["avoid_terms"]["type"] == "array" and brand["avoid_terms"]["items"]["type"] == "string"
    hiring = variants["HiringCriteriaMemory"]["properties"]["properties"]["properties"]
    assert hiring["target_days_to_fill"] == {**hiring["target_days_to_fill"], "type": "integer", "minimum": 1}
    assert variants["BudgetConstraintMemory"]["properties"]["name"]["const"] == "BudgetConstraintMemory"
    if jsonschema is not None:  # the union is discriminated: exactly one branch matches
        ok = {"label": "Meta cap", "content": "Meta under $40k", "kind": "objective", "scope": "company",
              "importance": 5, "subclass": {"name": "BudgetConstraintMemory", "properties": {
                  "platform": "meta", "amount": 40000, "currency": "USD", "period": "Monthly"}}}
        jsonschema.validate(ok, schema)
        jsonschema.validate({k: v for k, v in ok.items() if k != "subclass"}, schema)


def test_subclass_added_in_turtle_changes_the_tool_definitions(tmp_path, tenant):
    mod = tmp_path / "creative.ttl"
    mod.write_text(MODULE)
    eng = Engine(tmp_path / "data", modules=[mod])
    t = eng.create_tenant("creative")
    t.add_team("growth")
    before = _remember_schema(tenant.tool_definitions())
    after = _remember_schema(t.tool_definitions())
    assert before != after
    names_before = {v["title"] for v in before["properties"]["subclass"]["oneOf"]}
    variants = {v["title"]: v for v in after["properties"]["subclass"]["oneOf"]}
    assert set(variants) == names_before | {"CreativeMemory", "HeadlineRuleMemory"}
    head = variants["HeadlineRuleMemory"]["properties"]["properties"]
    assert head["required"] == ["max_words"]
    assert head["properties"]["max_words"]["type"] == "integer"
    assert (head["properties"]["max_words"]["minimum"], head["properties"]["max_words"]["maximum"]) == (1, 30)
    assert head["properties"]["channels"] == {**head["properties"]["channels"], "type": "array"}
    assert head["properties"]["channels"]["items"]["enum"] == ["search", "social", "display"]
    assert "headline rule memory" in variants["HeadlineRuleMemory"]["description"]
    # and the handler accepts it end to end
    r = t.handle_tool_call("remember", {"label": "Short headlines", "content": "At most 8 words", "kind": "preference",
                                        "scope": "company", "importance": 4,
                                        "subclass": {"name": "HeadlineRuleMemory",
                                                     "properties": {"max_words": 8, "channels": ["search"]}}}, DANA)
    assert r["ok"], r
    assert r["memory"]["subclass"] == "HeadlineRuleMemory" and r["memory"]["properties"]["maxWords"] == 8


@pytest.mark.parametrize(
    ("arguments", "field", "constraint"),
    [
        ({"amount": -5}, "subclass.properties.amount", "minimum"),
        ({"amount": "-5.00"}, "subclass.properties.amount", "minimum"),
        ({"amount": "1e3"}, "subclass.properties.amount", "pattern"),
        ({"amount": "40,000"}, "subclass.properties.amount", "pattern"),
        ({"platform": "myspace"}, "subclass.properties.platform", "enum"),
        ({"currency": None}, "subclass.properties.currency", "type"),
        ({"period": None, "__drop__": "period"}, "subclass.properties.period", "required"),
    ],
)
def test_bad_subclass_argument_names_the_field(tenant, arguments, field, constraint):
    props = {"platform": "meta", "amount": 40000, "currency": "USD", "period": "Monthly"}
    drop = arguments.pop("__drop__", None)
    props.update(arguments)
    if drop:
        props.pop(drop)
    before = tenant.dump()
    r = tenant.handle_tool_call("remember", {"label": "Meta cap", "content": "Meta under $40k", "kind": "objective",
                                             "scope": "company", "importance": 5,
                                             "subclass": {"name": "BudgetConstraintMemory", "properties": props}},
                                DANA)
    assert r["ok"] is False
    assert (r["error"]["type"], r["error"]["field"], r["error"]["constraint"]) == ("invalid_input", field, constraint)
    assert field.rsplit(".", 1)[-1] in r["error"]["message"]
    assert tenant.dump() == before


@pytest.mark.parametrize(
    ("name", "arguments", "type_", "field"),
    [
        ("remember", {"label": "x", "content": "y", "kind": "opinion", "scope": "user", "importance": 3},
         "invalid_input", "kind"),
        ("remember", {"content": "y", "kind": "fact", "scope": "user", "importance": 3}, "invalid_input", "label"),
        ("remember", {"label": "x", "content": "y", "kind": "fact", "scope": "user", "importance": 9},
         "invalid_input", "importance"),
        ("remember", {"label": "x", "content": "y", "kind": "fact", "scope": "user", "importance": 3,
                      "subclass": {"name": "NoSuchMemory", "properties": {}}}, "invalid_input", "subclass.name"),
        ("remember", {"label": "x", "content": "y", "kind": "fact", "scope": "user", "importance": 3,
                      "colour": "red"}, "invalid_input", "colour"),
        ("remember", '{"label": "x", ', "invalid_json", "arguments"),
        ("search", {"query": "x", "k": 0}, "invalid_input", "k"),
        ("search", {}, "invalid_input", "query"),
        ("supersede", {"old_id": "not-an-id"}, "invalid_input", "old_id"),
        ("supersede", {"old_id": "0" * 32}, "invalid_input", "replacement"),
        ("get_context", {"budget_chars": 10}, "invalid_input", "budget_chars"),
        ("forget", {}, "unknown_tool", "name"),
    ],
)
def test_bad_calls_return_correctable_errors(tenant, name, arguments, type_, field):
    r = tenant.handle_tool_call(name, arguments, ANN)
    assert r["ok"] is False
    assert r["error"]["type"] == type_ and r["error"]["field"] == field
    assert r["error"]["message"]
    json.dumps(r)


def test_service_errors_are_mapped(tenant):
    member_company = {"label": "Company wide rule", "content": "No ads on Sundays", "kind": "fact",
                      "scope": "company", "importance": 4}
    r = tenant.handle_tool_call("remember", member_company, ANN)
    assert r["ok"] is False and r["error"]["type"] == "not_authorized"
    r = tenant.handle_tool_call("supersede", {"old_id": "0" * 32, "new_id": "1" * 32}, ANN)
    assert r["ok"] is False and r["error"]["type"] == "unknown_memory" and r["error"]["field"] == "old_id"
    # a user-scope memory owned by someone else (shape requires the owner to be a person):
    first = tenant.handle_tool_call("remember", {"label": "Weekly report on Friday", "content": "Send the weekly "
                                                 "report every Friday", "kind": "preference", "scope": "user",
                                                 "importance": 3}, ANN)
    assert first["ok"], first
    # the same report on another day: a replacement (issue 11: not merely similar words)
    again = tenant.handle_tool_call("remember", {"label": "Weekly report on Monday", "content": "Send the "
                                                 "weekly report every Monday", "kind": "preference",
                                                 "scope": "user", "importance": 3}, ANN)
    assert again["ok"] is False and again["error"]["type"] == "conflict_pending"
    assert again["error"]["candidates"] == [first["memory"]["id"]] and again["error"]["conflict_id"]
    confirmed = tenant.handle_tool_call("remember", {"label": "Weekly report on Monday", "content": "Send "
                                                     "the weekly report every Monday", "kind": "preference",
                                                     "scope": "user", "importance": 3,
                                                     "conflict_resolution": "replace",
                                                     "conflict_id": again["error"]["conflict_id"]}, ANN)
    assert confirmed["ok"], confirmed
    assert tenant.get(first["memory"]["id"]).superseded_by == [confirmed["memory"]["id"]]


def test_search_supersede_and_get_context_through_tools(tenant):
    r = tenant.handle_tool_call("remember", json.dumps({
        "label": "Prefers tables", "content": "Show comparisons as tables", "kind": "preference", "scope": "user",
        "importance": 3}), ANN)
    assert r["ok"], r
    mid = r["memory"]["id"]
    s = tenant.handle_tool_call("search", {"query": "comparisons tables"}, ANN)
    assert s["ok"] and [h["id"] for h in s["hits"]] == [mid]
    assert s["hits"][0]["importance"] == 3 and s["hits"][0]["score"] > 0
    sup = tenant.handle_tool_call("supersede", {"old_id": mid, "replacement": {
        "label": "Prefers charts", "content": "Show comparisons as charts", "kind": "preference", "scope": "user",
        "importance": 4}}, ANN)
    assert sup["ok"], sup
    new_id = sup["memory"]["id"]
    assert tenant.get(mid).superseded_by == [new_id]
    ctx = tenant.handle_tool_call("get_context", {"conversation": "charts please", "budget_chars": 2000}, ANN)
    assert ctx["ok"] and ctx["ids"] == [new_id] and len(ctx["text"]) <= 2000
    assert f"[{new_id}] Prefers charts" in ctx["text"]
    s2 = tenant.handle_tool_call("search", {"query": "comparisons", "importance": [2, 3, 4, 5]}, ANN)
    assert [h["id"] for h in s2["hits"]] == [new_id]
    json.dumps([r, s, sup, ctx, s2])
