"""MCP tools of the event graph (seed 000 MAGMA, seed 004 Graph Memory): an agent records
an episode and events with causes and entity mentions, then traverses, asks for the
impact closure and a Mermaid diagram; bad calls come back as tool results."""

from __future__ import annotations

import anyio

from tests.server.test_mcp import TIMEOUT, mcp_tenant  # noqa: F401  (fixture)


def test_agent_builds_and_walks_the_event_graph(mcp_tenant):  # noqa: F811
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    tenant = eng.tenant("acme")
    server = build_server(tenant, Principal(person="agent-g"))
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                out["names"] = [t.name for t in (await c.list_tools()).tools]
                out["ep"] = await c.call_tool("event_record", {"id": "mcp-s1", "kind": "episode", "label": "triage",
                                                               "at": "2026-03-02T08:00:00+00:00", "timeline": "mcp"})
                await c.call_tool("event_record", {"id": "mcp-cause", "label": "CDN certificate expired",
                                                   "at": "2026-03-02T08:01:00Z", "timeline": "mcp", "episode": "mcp-s1",
                                                   "mentions": [{"label": "CDN", "type": "service"}]})
                out["effect"] = await c.call_tool("event_record", {
                    "id": "mcp-effect", "label": "Checkout page down", "at": "2026-03-02T08:03:00.5+00:00",
                    "timeline": "mcp", "episode": "mcp-s1", "caused_by": ["mcp-cause"],
                    "mentions": [{"label": "cdn", "type": "service"}, {"label": "Checkout", "type": "service"}]})
                out["related"] = await c.call_tool("graph_related", {"entity": {"label": "CDN", "type": "service"},
                                                                     "edge_types": ["entity"]})
                out["impact"] = await c.call_tool("graph_impact", {"node": "mcp-cause"})
                out["mermaid"] = await c.call_tool("graph_mermaid", {"node": "mcp-s1", "depth": 2})
                out["missing"] = await c.call_tool("graph_impact", {"node": "nope"})
                out["both"] = await c.call_tool("graph_related", {"node": "mcp-cause",
                                                                  "entity": {"label": "CDN", "type": "service"}})
                out["naive"] = await c.call_tool("event_record", {"label": "x", "at": "2026-03-02T08:00:00"})

    anyio.run(session)
    assert {"event_record", "graph_related", "graph_impact", "graph_mermaid"} <= set(out["names"])  # type: ignore[arg-type]
    assert out["ep"].structured_content["event"]["kind"] == "episode"  # type: ignore[attr-defined]
    assert out["effect"].structured_content["event"]["mentions"] == ["service:cdn", "service:checkout"]  # type: ignore[attr-defined]
    rel = out["related"].structured_content["related"]  # type: ignore[attr-defined]
    assert sorted(r["node"]["id"] for r in rel) == ["mcp-cause", "mcp-effect"]
    assert [n["id"] for n in out["impact"].structured_content["nodes"]] == ["mcp-effect"]  # type: ignore[attr-defined]
    text = out["mermaid"].structured_content["mermaid"]  # type: ignore[attr-defined]
    assert text.startswith("flowchart LR\n") and "-->|causedBy|" in text and '(("CDN (service)"))' in text
    assert out["missing"].is_error and out["missing"].structured_content["error"]["type"] == "not_found"  # type: ignore[attr-defined]
    assert out["both"].structured_content["error"]["field"] == "node"  # type: ignore[attr-defined]
    assert out["naive"].structured_content["error"]["field"] == "at"  # type: ignore[attr-defined]
    assert [e.id for e in tenant.events.timeline("mcp")] == ["mcp-s1", "mcp-cause", "mcp-effect"]
