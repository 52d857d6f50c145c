"""Small user-facing fixes found by a new-user check (one test per finding):

* a wrong keyword to a public service method (``t.events.record(..., at=...)``,
  ``t.notes.get(key, who=...)``) raised a bare ``TypeError``: now ``InvalidInput`` naming
  the unknown argument and the accepted ones; ``t.notes.get(key, principal=...)`` is
  accepted (notes are shared; the principal is checked);
* a module setting whose shape names it ``max_churn`` came back as ``maxChurn`` in the
  install / remove report;
* ``reckon forget`` had no ``--reason`` though ``Tenant.delete`` keeps one;
* the LLM / MCP ``search`` tool capped ``k`` at 50 where ``Tenant.search`` allows 100;
* ``FILTER NOT EXISTS`` in a rule said ``unknown function 'NOT'``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reckon import InvalidInput, RuleError
from reckon.api import Engine, Principal

OPS = Principal(person="dana", teams=["growth"], role="operator")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    yield Engine(tmp_path_factory.mktemp("newuser"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


def test_a_wrong_keyword_names_the_argument_and_the_accepted_ones(engine):
    t = engine.create_tenant("kw")
    with pytest.raises(InvalidInput) as e:
        t.events.record("deploy", at="2026-03-01T10:00:00Z")
    assert e.value.field == "at"
    assert str(e.value).startswith("record(): unknown argument 'at'; record() takes events; "), str(e.value)
    assert "record_event(label, at=...)" in str(e.value)
    assert t.notes.get("project/p/ns/k", principal=OPS) is None  # accepted: notes are shared
    t.notes.put("project/p/ns/k", 1, principal=OPS)
    assert t.notes.get("project/p/ns/k", principal=OPS).value == 1
    assert [n.key for n in t.notes.list("project/p/", principal=OPS)] == ["project/p/ns/k"]
    with pytest.raises(InvalidInput) as e:
        t.notes.get("project/p/ns/k", principal="dana")
    assert e.value.field == "principal"
    with pytest.raises(InvalidInput) as e:
        t.notes.get("project/p/ns/k", who=OPS)
    assert e.value.field == "who" and str(e.value) == "get(): unknown argument 'who'; get() takes key, principal="
    with pytest.raises(InvalidInput) as e:  # the misspelt name, not the missing one it stands for
        t.record_turn("c1", "hello", principl=OPS)
    assert e.value.field == "principl" and "record_turn() takes conversation, text, principal=" in str(e.value)
    with pytest.raises(InvalidInput) as e:
        t.experience.record("fix the build", "success")
    assert e.value.field == "principal" and "missing required argument: 'principal'" in str(e.value)


def test_a_module_setting_keeps_its_shape_name_in_the_report(engine, tmp_path: Path):
    mod = tmp_path / "churn.ttl"
    mod.write_text(
        "@prefix rk: <https://reckon.dev/ns/core#> . @prefix ex: <urn:ex:churn#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> . @prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "ex:maxChurn a owl:DatatypeProperty ; rdfs:domain rk:Settings ; rdfs:range xsd:decimal .\n"
        "ex:ChurnShape a sh:NodeShape ; sh:targetClass rk:Settings ; sh:property [ sh:path ex:maxChurn ;\n"
        "  sh:name \"max_churn\" ; sh:maxCount 1 ; sh:datatype xsd:decimal ] .\n"
        "rk:settings ex:maxChurn 0.05 .\n", encoding="utf-8")
    t = engine.create_tenant("churn")
    r = t.install_module(mod)
    assert r.settings == {"max_churn": [None, "0.05"]}
    assert t.set_setting("max_churn", "0.1")["name"] == "max_churn"
    assert "max_churn" in t.settings() and "maxChurn" not in t.settings()
    assert t.remove_module("churn").settings == {"max_churn": ["0.1", None]}


def test_forget_reason_is_kept_and_shown_by_history(tmp_path: Path):
    from tests.cli.conftest import run_cli

    d = tmp_path / "d"
    eng = Engine(d)
    t = eng.create_tenant("acme")
    t.add_person("dana", "Dana", teams=["growth"])
    m = t.remember(principal=OPS, kind="fact", scope="company", importance=3, source="operator",
                   label="Old office address", content="12 Elm St")
    t.close()
    r = run_cli(d, "forget", m.id, "--tenant", "acme", "--as", "dana", "--operator", "--reason", "moved in May")
    assert r.code == 0, r.err
    assert f"deleted {m.id} (moved in May)" in r.out
    hist = json.loads(run_cli(d, "history", m.id, "--tenant", "acme", "--json").out)
    assert hist[-1]["event"] == "deleted" and hist[-1]["deleted_reason"] == "moved in May"
    assert "(by dana: moved in May)" in run_cli(d, "history", m.id, "--tenant", "acme").out


def test_the_search_tool_allows_as_many_hits_as_python(engine):
    from reckon._config import MAX_SEARCH_K

    t = engine.create_tenant("k")
    t.add_person("dana", "Dana", teams=["growth"])
    schema = next(d for d in t.tool_definitions(format="anthropic") if d["name"] == "search")["input_schema"]
    assert schema["properties"]["k"]["maximum"] == MAX_SEARCH_K == 100
    ok = t.handle_tool_call("search", {"query": "budget", "k": 100}, OPS)
    assert ok["ok"], ok
    too_many = t.handle_tool_call("search", {"query": "budget", "k": 101}, OPS)
    assert not too_many["ok"] and too_many["error"]["field"] == "k", too_many
    with pytest.raises(InvalidInput):
        t.search("budget", principal=OPS, k=101)
    assert t.search("budget", principal=OPS, k=100) == []


@pytest.mark.parametrize("body,message", [
    ("?x :q ?y FILTER NOT EXISTS { ?x :r ?y }",
     "r.srl:2:43: SRL011 FILTER NOT EXISTS is not supported in rule bodies; write NOT { ... } (stratified negation) "
     "in the body instead"),
    ("?x :q ?y FILTER(NOT EXISTS { ?x :r ?y })",
     "r.srl:2:43: SRL011 FILTER NOT EXISTS is not supported in rule bodies; write NOT { ... } (stratified negation) "
     "in the body instead"),
    ("?x :q ?y FILTER EXISTS { ?x :r ?y }",
     "r.srl:2:43: SRL011 FILTER EXISTS is not supported in rule bodies; write its patterns in the body instead"),
])
def test_filter_exists_in_a_rule_says_what_to_write_instead(body, message):
    from reckon.datalog.loader import parse_rules

    with pytest.raises(RuleError) as e:
        parse_rules(f"PREFIX : <http://e/>\nRULE {{ ?x :p ?y }} WHERE {{ {body} }}", file="r.srl")
    assert str(e.value) == message
