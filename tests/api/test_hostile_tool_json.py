"""Tool-call arguments (``Tenant.handle_tool_call``: the MCP server's and the agent
adapters' door) are parsed as strict JSON (``reckon._json``): too deep, NaN, a non-finite
number, an over-long integer, a duplicate key or a lone surrogate is an ``invalid_json``
error object naming it, for JSON text and for an already-decoded dict alike, and nothing
is written. Before, a nesting of 100 000 raised a bare RecursionError out of the call and
NaN / duplicate keys / ``\\ud800`` went on into the store's validation."""

from __future__ import annotations

import pytest

from reckon.api import Principal

ANN = Principal(person="ann", teams=["growth"])
GOOD = '{"label": "Short headlines", "content": "At most 8 words", "kind": "preference", "scope": "personal", '

CASES = [
    ('{"label": ' + "[" * 100_000 + "]" * 100_000 + "}", "max_depth", "64 levels"),
    (GOOD + '"importance": 3, "extra": 1e999999}', "finite_number", "1e999999"),
    (GOOD + '"importance": ' + "3" * 50_000 + "}", "max_int_digits", "50000 digits"),
    (GOOD + '"importance": NaN}', "finite_number", "NaN"),
    (GOOD + '"importance": 3, "importance": 4}', "unique_keys", "'importance'"),
    ('{"label": "x\\udfff", "content": "y"}', "unicode_scalar", "U+DFFF at character 1"),
]


@pytest.mark.parametrize("text,constraint,named", CASES, ids=[c for _, c, _ in CASES])
def test_hostile_tool_arguments_text_are_refused_by_name(tenant, text, constraint, named):
    tenant.add_person("ann", "Ann", teams=["growth"])
    r = tenant.handle_tool_call("remember", text, ANN)
    assert r["ok"] is False, r
    err = r["error"]
    assert err["type"] == "invalid_json" and err["constraint"] == constraint and named in err["message"], err
    assert list(tenant.memories(active_only=False)) == []


def test_hostile_decoded_arguments_are_refused_by_name(tenant):
    tenant.add_person("ann", "Ann", teams=["growth"])
    nested: object = "x"
    for _ in range(100):
        nested = [nested]
    for args, constraint in (({"label": "a\ud800", "content": "b", "kind": "fact", "scope": "personal",
                               "importance": 3}, "unicode_scalar"),
                              ({"label": nested, "content": "b"}, "max_depth"),
                              ({"label": "a", "content": "b", "importance": float("nan")}, "finite_number")):
        r = tenant.handle_tool_call("remember", args, ANN)
        assert r["ok"] is False and r["error"]["constraint"] == constraint, r
    assert list(tenant.memories(active_only=False)) == []
    for name in ("record_turn", "note_put"):
        r = tenant.handle_tool_call(name, '{"text": "a", "text": "b"}', ANN)
        assert r["ok"] is False and "duplicate key 'text'" in r["error"]["message"], (name, r)
