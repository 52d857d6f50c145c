"""An unknown team over HTTP and MCP: a write naming a team the tenant does not have (or
a token whose teams it does not have) is a 422 ``unknown_team`` / a tool error
``unknown_team`` naming it and the tenant's teams, and the store is unchanged."""

from __future__ import annotations

import anyio

from tests.server.conftest import World

TEAM_FACT = {"kind": "fact", "scope": "team", "importance": 3, "source": "operator",
             "label": "Growth standup", "content": "The growth team meets at 09:30 CET on Mondays."}


def _unknown(r, field: str, teams: list[str]) -> dict:  # type: ignore[no-untyped-def]
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert (err["type"], err["field"], err["constraint"]) == ("unknown_team", field, "exists")
    assert err["teams"] == teams and err["known"] == ["growth"]
    return err  # type: ignore[no-any-return]


def test_http_remember_update_supersede_with_an_unknown_team_are_422(world: World) -> None:
    acme = world.engine.tenant("acme")
    ok = world.client.post("/tenants/acme/memories", json={**TEAM_FACT, "teams": ["growth"]}, headers=world.h("acme_ops"))
    assert ok.status_code == 201 and ok.json()["teams"] == ["growth"]
    mid = ok.json()["id"]
    before = acme.dump()
    r = world.client.post("/tenants/acme/memories", json={**TEAM_FACT, "label": "Typo", "teams": ["Growth"]},
                          headers=world.h("acme_ops"))
    err = _unknown(r, "teams", ["Growth"])
    assert "'Growth' (did you mean 'growth'?)" in err["message"]
    r = world.client.patch(f"/tenants/acme/memories/{mid}", json={"teams": ["growth", "sales"]},
                           headers=world.h("acme_ops"))
    _unknown(r, "teams", ["sales"])
    r = world.client.post(f"/tenants/acme/memories/{mid}/supersede",
                          json={"replacement": {**TEAM_FACT, "teams": ["grwoth"]}}, headers=world.h("acme_ops"))
    _unknown(r, "teams", ["grwoth"])
    tool_args = {k: v for k, v in TEAM_FACT.items() if k != "source"}  # the tool writes source agent_tool
    r = world.client.post("/tenants/acme/tools/remember", json={**tool_args, "label": "Tool typo",
                                                                "teams": ["marketing"]}, headers=world.h("acme_ops"))
    body = r.json()
    assert body["ok"] is False and body["error"]["type"] == "unknown_team" and body["error"]["teams"] == ["marketing"]
    assert acme.dump() == before
    assert acme.teams() == ["growth"]


def test_http_a_token_naming_an_unknown_team_is_refused_on_reads(world: World) -> None:
    from reckon.server.auth import TokenStore

    acme = world.engine.tenant("acme")
    _, token = TokenStore(world.data_dir).create("acme", person="sam", teams=["grwoth"])
    before = acme.dump()
    h = {"Authorization": f"Bearer {token}"}
    _unknown(world.client.get("/tenants/acme/search", params={"q": "standup"}, headers=h), "principal.teams",
             ["grwoth"])
    _unknown(world.client.get("/tenants/acme/bundle", headers=h), "principal.teams", ["grwoth"])
    assert acme.dump() == before


def test_mcp_remember_with_an_unknown_team_is_a_tool_error(world: World) -> None:
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    acme = world.engine.tenant("acme")
    server = build_server(acme, Principal.operator("dana", teams=["growth"]))
    before = acme.dump()
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(120):
            async with Client(server) as c:
                out["r"] = await c.call_tool("remember", {**{k: v for k, v in TEAM_FACT.items() if k != "source"},
                                                          "label": "MCP typo", "teams": ["growht"]})

    anyio.run(session)
    r = out["r"]
    assert r.is_error is True  # type: ignore[attr-defined]
    err = r.structured_content["error"]  # type: ignore[attr-defined]
    assert (err["type"], err["field"], err["teams"], err["known"]) == ("unknown_team", "teams", ["growht"], ["growth"])
    assert acme.dump() == before
