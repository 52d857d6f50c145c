"""Knowledge indexing over REST (``POST /tenants/{id}/documents``, search hits with
``document`` and ``citation``) and MCP (``document_index``, then ``search``) (issue 15
item 7)."""

from __future__ import annotations

from pathlib import Path

import anyio

from reckon.api import Principal
from tests.server.test_mcp import TIMEOUT, mcp_tenant  # noqa: F401  (fixture)

README = Path(__file__).resolve().parents[2] / "README.md"
ANN = Principal(person="ann", teams=["growth"])


def test_documents_over_rest_and_mcp(world, mcp_tenant):  # noqa: F811
    c, h = world.client, world.h
    body = {"text": README.read_text(encoding="utf-8"), "location": "README.md", "title": "README"}
    r = c.post("/tenants/acme/documents", json=body, headers=h("acme_sam"))
    assert r.status_code == 201, r.text
    doc = r.json()
    assert doc["written"] and len(doc["chunks"]) >= 5 and doc["chunks"][2]["position"] == 2
    assert c.post("/tenants/acme/documents", json=body, headers=h("acme_sam")).status_code == 200
    assert c.post("/tenants/acme/documents", json={"text": "x"}, headers=h("acme_sam")).status_code == 422
    chunk = doc["chunks"][3]
    q = " ".join(chunk["text"].split()[:25])
    hits = c.get("/tenants/acme/search", params={"q": q}, headers=h("acme_sam")).json()["hits"]
    top = next(x for x in hits if x["memory"]["id"] == chunk["id"])
    assert top["document"] == doc["document"]["id"] and top["citation"].startswith("README.md, chunk 4 of ")

    from mcp import Client

    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    t = eng.create_tenant("kmcp")
    t.add_team("growth")
    server = build_server(t, ANN, wall_clock=False)
    out: dict[str, object] = {}
    policy = "Refunds are issued within 14 days of a return.\n\nShipping is free above 50 CHF."

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as cl:
                out["index"] = await cl.call_tool("document_index", {"text": policy, "location": "policy.txt"})
                out["search"] = await cl.call_tool("search", {"query": "when are refunds issued"})

    anyio.run(session)
    idx = out["index"].structured_content  # type: ignore[attr-defined]
    assert idx["ok"] and idx["written"] and idx["chunks"] == 1
    [hit] = [x for x in out["search"].structured_content["hits"] if "citation" in x]  # type: ignore[attr-defined]
    assert hit["citation"] == f"policy.txt, chunk 1 of 1, characters 0-{len(policy)}" and hit["document"] == idx["document"]
