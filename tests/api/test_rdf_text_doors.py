"""Every door that takes text refuses a character no RDF literal or IRI can hold (outside
XML 1.0 ``Char``: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF])
with one check (``reckon.store.terms.text_fault``): an ``InvalidInput`` naming the field,
the character (U+XXXX) and its offset (or file:line:column), the store unchanged. Before,
notes accepted ``"\\x01"`` and ``"\\uffff"`` in values, a transcript turn, a spend CSV cell, an
onboarding YAML escape, a Turtle escape and a rule constant went in unchecked, and the
event and experience services had their own narrower copy (U+0000 and surrogates only)."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import InvalidInput, RuleSyntaxError
from reckon.api import Principal

OPS = Principal(person="ann", teams=["growth"], role="operator")
_N = itertools.count()
#: (the character, how the message names it); U+0001 and U+FFFF were accepted by notes
BAD = [("\x01", "control character U+0001"), ("\uffff", "noncharacter U+FFFF"),
       ("\ud800", "lone surrogate U+D800"), ("\x00", "the NUL character U+0000")]
IDS = ["U+0001", "U+FFFF", "U+D800", "U+0000"]


def _xml_char(c: str) -> bool:
    o = ord(c)
    return (o in (0x9, 0xA, 0xD) or 0x20 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF)


def _refused(call, named: str, offset: int | None = None, field: str | None = None) -> InvalidInput:
    with pytest.raises(InvalidInput) as e:
        call()
    msg = str(e.value)
    assert named in msg, msg
    if offset is not None:
        assert f"at character offset {offset} " in msg, msg
    if field is not None:
        assert e.value.field == field, (e.value.field, msg)
    return e.value


@pytest.mark.parametrize("bad,named", BAD, ids=IDS)
def test_notes_refuse_the_character_in_key_value_and_prefix(tenant, bad, named):
    n = tenant.notes
    n.put("project/p/ns/ok", {"a": 1}, principal=OPS)
    before = tenant.dump()
    _refused(lambda: n.put("project/p/ns/x" + bad, 1, principal=OPS), named, 14, "key")
    _refused(lambda: n.put("project/p/ns/a", "ab" + bad, principal=OPS), named, 2, "value")
    _refused(lambda: n.put("project/p/ns/a", {"k": ["x", bad]}, principal=OPS), named, 0, "value.k")
    _refused(lambda: n.put("project/p/ns/a", {bad: 1}, principal=OPS), named, 0, "value")
    _refused(lambda: n.cas("project/p/ns/ok", bad, expected_version=1, principal=OPS), named, 0, "value")
    _refused(lambda: n.list("project/" + bad), named, 8, "prefix")
    assert tenant.dump() == before
    assert n.get("project/p/ns/ok").value == {"a": 1}


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(st.characters(blacklist_categories=()), max_size=12))
def test_a_note_value_is_refused_iff_a_character_is_outside_xml_char(engine, text):
    """Oracle: refused exactly when some character is not an XML 1.0 Char; otherwise the
    value comes back as written."""
    tenant = engine.create_tenant(f"hypnote{next(_N)}")
    before = tenant.dump()
    if all(_xml_char(c) for c in text):
        assert tenant.notes.put("project/p/ns/k", text, principal=OPS).value == text
        assert tenant.notes.get("project/p/ns/k").value == text
    else:
        first = next(i for i, c in enumerate(text) if not _xml_char(c))
        _refused(lambda: tenant.notes.put("project/p/ns/k", text, principal=OPS), f"U+{ord(text[first]):04X}",
                 first, "value")
        assert tenant.dump() == before


@pytest.mark.parametrize("bad,named", BAD, ids=IDS)
def test_a_transcript_turn_refuses_the_character_in_text_and_speaker(tenant, bad, named):
    tenant.add_person("ann", "Ann", teams=["growth"])
    tenant.record_turn("c1", "hello", principal=OPS)
    before = tenant.dump()
    _refused(lambda: tenant.record_turn("c1", "hi " + bad, principal=OPS), named, 3, "text")
    _refused(lambda: tenant.record_turn("c1", "hi", principal=OPS, speaker="a" + bad), named, 1, "speaker")
    _refused(lambda: tenant.record_turns([{"conversation": "c1", "text": "ok"},
                                          {"conversation": "c" + bad, "text": "x"}], principal=OPS),
             named, 1, "turns[1].conversation")
    assert tenant.dump() == before


@pytest.mark.parametrize("bad,named", BAD[:2], ids=IDS[:2])
def test_events_and_experience_use_the_one_check(tenant, bad, named):
    """Their own copies refused only U+0000 and lone surrogates: U+0001 / U+FFFF went in."""
    before = tenant.dump()
    _refused(lambda: tenant.events.record_event("deploy" + bad, at="2026-03-01T10:00:00Z"), named, 6, "label")
    _refused(lambda: tenant.events.record_event("deploy", at="2026-03-01T10:00:00Z",
                                                mentions=[("Auth" + bad, "service")]), named, 4, "mentions[0]")
    _refused(lambda: tenant.experience.record("fix the build" + bad, "success", principal=OPS), named, 13, "task")
    assert tenant.dump() == before


@pytest.mark.parametrize("bad,named", BAD[:2], ids=IDS[:2])
def test_spend_csv_json_and_turtle_files_refuse_the_character(tenant, tmp_path, bad, named):
    from reckon import loaders

    csv = tmp_path / "spend.csv"
    csv.write_text(f"date,platform,spend\n2026-03-01,meta,10\n2026-03-02,me{bad}ta,5\n", encoding="utf-8")
    e = _refused(lambda: loaders.read_csv(csv), named, 2)
    assert f"{csv}:3: column 'platform'" in str(e)
    js = tmp_path / "spend.json"
    js.write_text(json.dumps([{"date": "2026-03-01", "platform": "meta", "spend": 1, "note": "a" + bad}]),
                  encoding="utf-8")
    e = _refused(lambda: loaders.read_json(js), named, 1)
    assert f"{js}[0].note" in str(e)
    before = tenant.dump()
    esc = "\\u0001" if bad == "\x01" else "\\uFFFF"
    ttl = tmp_path / "esc.ttl"
    ttl.write_text(f'<urn:x:a> <urn:x:label> "ok{esc}" .\n', encoding="utf-8")
    e = _refused(lambda: loaders.load_turtle(tenant, ttl), named, 2)
    assert str(ttl) in str(e) and "<urn:x:a> <urn:x:label>" in str(e)
    raw = tmp_path / "raw.ttl"
    raw.write_text(f'<urn:x:a> <urn:x:label> "ok" .\n<urn:x:b> <urn:x:label> "o{bad}k" .\n', encoding="utf-8")
    e = _refused(lambda: loaders.load_turtle(tenant, raw), named)
    assert f"{raw}:2:27:" in str(e)
    assert tenant.dump() == before


@pytest.mark.parametrize("bad,named", BAD[:2], ids=IDS[:2])
def test_onboarding_yaml_escapes_are_refused_naming_the_path(engine, tmp_path, bad, named):
    from reckon.onboarding import onboard

    esc = "\\x01" if bad == "\x01" else "\\uFFFF"
    f = tmp_path / "onb.yaml"
    f.write_text(f'tenant: onb{next(_N)}\npeople: [{{id: dana, name: "Da{esc}na"}}]\n'
                 "objective: {label: Grow}\nfact: {label: Sky}\npreference: {label: Short}\n", encoding="utf-8")
    before = set(engine.list_tenants())
    e = _refused(lambda: onboard(engine, f), named, 2, "people[0].name")
    assert str(f) in str(e)
    assert set(engine.list_tenants()) == before


@pytest.mark.parametrize("bad,named", BAD[:2], ids=IDS[:2])
def test_module_files_refuse_the_character_with_file_line_column(tenant, tmp_path, bad, named):
    before = tenant.dump()
    srl = tmp_path / "r.srl"
    srl.write_text(f'PREFIX : <urn:x:>\nRULE {{ ?x :p "a{bad}" }} WHERE {{ ?x :q ?y }}\n', encoding="utf-8")
    e = _refused(lambda: tenant.install_module(srl), named, field="modules")
    assert f"{srl}:2:16:" in str(e)
    esc = "\\u0001" if bad == "\x01" else "\\uFFFF"
    ttl = tmp_path / "m.ttl"
    ttl.write_text(f'<urn:x:C> <http://www.w3.org/2000/01/rdf-schema#label> "C{esc}" .\n', encoding="utf-8")
    e = _refused(lambda: tenant.install_module(ttl), named, 1, "modules")
    assert "m.ttl" in str(e)
    srl.write_text(f'PREFIX : <urn:x:>\nRULE {{ ?x :p "a{esc}" }} WHERE {{ ?x :q ?y }}\n', encoding="utf-8")
    with pytest.raises(RuleSyntaxError) as r:
        tenant.install_module(srl)
    assert "r.srl:2:14: SRL013 escape" in str(r.value) and named in str(r.value), str(r.value)
    assert tenant.dump() == before


def test_a_raw_character_in_rule_text_is_a_syntax_error_at_its_position():
    from reckon.datalog.loader import parse_rules

    with pytest.raises(RuleSyntaxError) as e:
        parse_rules('PREFIX : <urn:x:>\nRULE { ?x :p "a\uffff" } WHERE { ?x :q ?y }', file="r.srl")
    assert str(e.value).startswith("r.srl:2:16: SRL013 noncharacter U+FFFF"), str(e.value)


def test_a_setting_value_with_the_character_is_refused_by_name(tenant):
    before = tenant.settings()
    _refused(lambda: tenant.set_setting("near_limit_threshold", "0.5\x01"), "control character U+0001", 3,
             "near_limit_threshold")
    assert tenant.settings() == before


def test_the_cli_refuses_a_csv_cell_and_an_onboarding_value_with_exit_2(tmp_path):
    from tests.cli.conftest import run_cli

    d = tmp_path / "d"
    assert run_cli(d, "tenant", "create", "acme").code == 0
    csv = tmp_path / "spend.csv"
    csv.write_text("date,platform,spend\n2026-03-01,meta,10\n2026-03-02,meta,5\x07\n", encoding="utf-8")
    before = run_cli(d, "sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "-t", "acme").out
    r = run_cli(d, "load", str(csv), "-t", "acme")
    assert r.code == 2 and f"{csv}:3: column 'spend': control character U+0007 at character offset 1" in r.err, r.err
    assert run_cli(d, "sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "-t", "acme").out == before
    onb = tmp_path / "onb.yaml"
    onb.write_text('tenant: fresh\nobjective: {label: "Grow\\x1b"}\nfact: {label: Sky}\npreference: {label: Short}\n',
                   encoding="utf-8")
    r = run_cli(d, "onboard", str(onb))
    assert r.code == 2 and "objective.label: control character U+001B at character offset 4" in r.err, r.err
    assert "fresh" not in run_cli(d, "tenant", "list").out
