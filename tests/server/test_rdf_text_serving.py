"""Over HTTP and MCP, text no RDF term can hold (outside XML 1.0 ``Char``) is refused by
the one check (``reckon.store.terms.text_fault``) with the field, the character and its
offset, and nothing is written: a SPARQL query (GET and POST), a note, a transcript turn.
Before, a note value with U+0001 or U+FFFF and a turn with a control character were
stored."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import anyio
import pytest

TIMEOUT = 120


def _error(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text)
    return r.json()["error"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("bad,named", [("\x01", "control character U+0001"), ("\uffff", "noncharacter U+FFFF"),
                                       ("\x7f\x0b", "control character U+000B")])
def test_sparql_over_http_names_the_character_and_offset(world, bad, named):
    q = f"SELECT * WHERE {{ ?s ?p 'a{bad}' }}"
    offset = q.index(bad[-1])
    h = world.h("acme_ops")
    r = world.client.get(f"/tenants/acme/sparql?query={quote(q)}", headers=h)
    err = _error(r, 400)
    assert err["field"] == "query" and named in err["message"] and f"offset {offset} " in err["message"], err
    r = world.client.post("/tenants/acme/sparql", content=q.encode("utf-8"),
                          headers={**h, "content-type": "application/sparql-query"})
    err = _error(r, 400)
    assert err["field"] == "query" and f"offset {offset} " in err["message"], err


def test_notes_and_turns_over_http_refuse_the_character(world):
    h = world.h("acme_ops")
    before = world.client.get("/tenants/acme/notes", headers=h).json()
    r = world.client.put("/tenants/acme/notes/project/p/ns/a", json={"value": "ok\uffff"}, headers=h)
    err = _error(r, 422)
    assert err["field"] == "value" and "noncharacter U+FFFF at character offset 2" in err["message"], err
    r = world.client.put("/tenants/acme/notes/project/p/ns/a", json={"value": {"k": "\x01"}}, headers=h)
    err = _error(r, 422)
    assert err["field"] == "value.k" and "U+0001 at character offset 0" in err["message"], err
    assert world.client.get("/tenants/acme/notes", headers=h).json() == before
    r = world.client.post("/tenants/acme/turns", json={"conversation": "c-x", "text": "hi\x02"}, headers=h)
    err = _error(r, 422)
    assert err["field"] == "text" and "U+0002 at character offset 2" in err["message"], err
    assert world.client.get("/tenants/acme/conversations/c-x/turns", headers=h).status_code == 404


def test_mcp_note_put_and_record_turn_refuse_the_character(tmp_path, _hashing_embedder):
    from mcp import Client

    from reckon.api import Engine, Principal
    from reckon.server.mcp import build_server

    eng = Engine(tmp_path)
    tenant = eng.create_tenant("acme")
    tenant.add_person("dana", "Dana", teams=["growth"])
    server = build_server(tenant, Principal(person="dana", teams=["growth"]), wall_clock=False)
    before = tenant.dump()
    out: dict[str, Any] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                out["note"] = await c.call_tool("note_put", {"key": "project/p/ns/a", "value": "v\x01"})
                out["nonchar"] = await c.call_tool("note_put", {"key": "project/p/ns/a", "value": ["\uffff"]})
                out["turn"] = await c.call_tool("record_turn", {"conversation": "m-1", "text": "say \x1b[31m"})

    anyio.run(session)
    for name, field, what in (("note", "value", "U+0001 at character offset 1"),
                              ("nonchar", "value", "U+FFFF at character offset 0"),
                              ("turn", "text", "U+001B at character offset 4")):
        res = out[name]
        err = res.structured_content["error"]
        assert res.is_error and err["type"] == "invalid_input" and err["field"] == field, (name, err)
        assert what in err["message"], (name, err)
    assert tenant.dump() == before
