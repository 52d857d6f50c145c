"""MCP tools experience_record / experience_recall (seed 000 Evolving Memory: "Evolve"
after a run, "Search" before the next)."""

from __future__ import annotations

import anyio

from tests.server.test_mcp import TIMEOUT, mcp_tenant  # noqa: F401  (fixture)


def test_agent_learns_a_strategy_card(mcp_tenant):  # noqa: F811
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    tenant = eng.tenant("acme")
    server = build_server(tenant, Principal(person="agent-x"))
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                for i in range(5):
                    out[f"r{i}"] = await c.call_tool("experience_record", {
                        "task": f"Summarise the weekly spend report {i}", "outcome": "success",
                        "strategy": "Group spend by platform first", "tools": ["sparql"]})
                out["recall"] = await c.call_tool("experience_recall", {"task": "summarise weekly spend", "k": 2})
                out["bad"] = await c.call_tool("experience_record", {"task": "x", "outcome": "meh"})

    anyio.run(session)
    assert out["r4"].structured_content["experience"]["author"] == "agent-x"  # type: ignore[attr-defined]
    recall = out["recall"].structured_content  # type: ignore[attr-defined]
    assert recall["cards"][0]["approach"] == "Group spend by platform first" and recall["cards"][0]["promoted"]
    assert len(recall["experiences"]) == 2
    assert out["bad"].is_error and out["bad"].structured_content["error"]["field"] == "outcome"  # type: ignore[attr-defined]
