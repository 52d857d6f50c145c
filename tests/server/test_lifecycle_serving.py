"""Lifecycle maintenance and feedback over REST and MCP (issue 15 item 5): an operator
runs ``POST /tenants/{id}/maintenance``; a member may not; feedback and the access a
search or bundle records are visible at ``GET .../usage``; MCP ``memory_feedback`` and
``search`` record the same counts."""

from __future__ import annotations

import anyio

from tests.server.test_mcp import TIMEOUT, mcp_tenant  # noqa: F401  (fixture)


def test_maintenance_and_feedback_over_rest(world):
    c, h = world.client, world.h
    r = c.post("/tenants/acme/maintenance", params={"dry_run": True}, headers=h("acme_ops"))
    assert r.status_code == 200, r.text
    assert r.json()["dry_run"] is True and r.json()["tenant"] == "acme"
    assert c.post("/tenants/acme/maintenance", headers=h("acme_sam")).status_code == 403
    r = c.post("/tenants/acme/maintenance", headers=h("acme_ops"))
    assert r.status_code == 200 and r.json()["dry_run"] is False
    mid = world.ids["sam_pref"]
    before = c.get(f"/tenants/acme/memories/{mid}/usage", headers=h("acme_sam")).json()
    r = c.post(f"/tenants/acme/memories/{mid}/feedback", json={"vote": 1}, headers=h("acme_sam"))
    assert r.status_code == 200 and r.json() == {"id": mid, "feedback": before["feedback"] + 1}
    assert c.post(f"/tenants/acme/memories/{mid}/feedback", json={"vote": 2}, headers=h("acme_sam")).status_code == 422
    assert c.post(f"/tenants/acme/memories/{mid}/feedback", json={"vote": 1},
                  headers=h("beta_ops")).status_code in (403, 404)
    label = world.engine.tenant("acme").get(mid).label
    hits = c.get("/tenants/acme/search", params={"q": label, "importance": [2, 3, 4, 5]}, headers=h("acme_sam"))
    assert mid in [x["memory"]["id"] for x in hits.json()["hits"]]
    after = c.get(f"/tenants/acme/memories/{mid}/usage", headers=h("acme_sam")).json()
    assert after["access_count"] == before["access_count"] + 1 and after["feedback"] == before["feedback"] + 1


def test_memory_feedback_and_access_over_mcp(mcp_tenant):  # noqa: F811
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    tenant = eng.create_tenant("lifecycle")
    ann = Principal(person="ann")
    m = tenant.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=ann,
                        label="chart style", content="bar charts, never pie charts")
    server = build_server(tenant, ann, wall_clock=False)
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                out["search"] = await c.call_tool("search", {"query": "pie charts"})
                out["vote"] = await c.call_tool("memory_feedback", {"id": m.id, "vote": -1})
                out["bad"] = await c.call_tool("memory_feedback", {"id": m.id, "vote": 0})

    anyio.run(session)
    assert m.id in [h["id"] for h in out["search"].structured_content["hits"]]  # type: ignore[attr-defined]
    assert out["vote"].structured_content == {"ok": True, "id": m.id, "feedback": -1}  # type: ignore[attr-defined]
    assert out["bad"].is_error  # type: ignore[attr-defined]
    assert tenant.usage(m.id) == {**tenant.usage(m.id), "access_count": 1, "feedback": -1}
