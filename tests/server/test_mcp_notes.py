"""MCP tools of the keyed shared notes (seed 000 Transit): two agents (two MCP servers
on one tenant, two principals) coordinate through note_put / note_get / note_list /
note_delete; a lost compare-and-set and a bad key come back as tool results."""

from __future__ import annotations

import anyio

from tests.server.test_mcp import TIMEOUT, mcp_tenant  # noqa: F401  (fixture)


def test_two_agents_coordinate_through_notes(mcp_tenant):  # noqa: F811
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    tenant = eng.tenant("acme")
    a = build_server(tenant, Principal(person="agent-a"))
    b = build_server(tenant, Principal(person="agent-b"))
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(a) as ca, Client(b) as cb:
                out["names"] = [t.name for t in (await ca.list_tools()).tools]
                out["claim_a"] = await ca.call_tool("note_put", {
                    "key": "project/mcp/claims/job-7", "value": {"owner": "agent-a"}, "expected_version": 0,
                    "ttl": 600})
                out["claim_b"] = await cb.call_tool("note_put", {
                    "key": "project/mcp/claims/job-7", "value": {"owner": "agent-b"}, "expected_version": 0})
                out["read_b"] = await cb.call_tool("note_get", {"key": "project/mcp/claims/job-7"})
                await cb.call_tool("note_put", {"key": "project/mcp/findings/job-6", "value": "done"})
                out["list"] = await ca.call_tool("note_list", {"prefix": "project/mcp/"})
                out["delete"] = await ca.call_tool("note_delete", {"key": "project/mcp/claims/job-7",
                                                                  "expected_version": 1})
                out["gone"] = await cb.call_tool("note_get", {"key": "project/mcp/claims/job-7"})
                out["bad"] = await ca.call_tool("note_put", {"key": "project/mcp/x", "value": 1})
                out["unknown"] = await ca.call_tool("note_get", {"key": "project/mcp/a/b", "nope": 1})

    anyio.run(session)
    assert {"note_put", "note_get", "note_list", "note_delete"} <= set(out["names"])  # type: ignore[arg-type]
    claim_a = out["claim_a"].structured_content  # type: ignore[attr-defined]
    assert claim_a["ok"] and claim_a["note"]["version"] == 1 and claim_a["note"]["author"] == "agent-a"
    claim_b = out["claim_b"]
    assert claim_b.is_error and claim_b.structured_content["error"]["type"] == "version_mismatch"  # type: ignore[attr-defined]
    assert claim_b.structured_content["version"] == 1  # type: ignore[attr-defined]
    assert out["read_b"].structured_content["note"]["value"] == {"owner": "agent-a"}  # type: ignore[attr-defined]
    assert [n["key"] for n in out["list"].structured_content["notes"]] == [  # type: ignore[attr-defined]
        "project/mcp/claims/job-7", "project/mcp/findings/job-6"]
    assert out["delete"].structured_content == {"ok": True, "deleted": True}  # type: ignore[attr-defined]
    assert out["gone"].structured_content == {"ok": True, "note": None}  # type: ignore[attr-defined]
    bad = out["bad"]
    assert bad.is_error and bad.structured_content["error"]["field"] == "key"  # type: ignore[attr-defined]
    assert out["unknown"].structured_content["error"]["field"] == "nope"  # type: ignore[attr-defined]
    assert tenant.notes.get("project/mcp/findings/job-6").author == "agent-b"
