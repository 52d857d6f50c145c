"""Over HTTP and MCP (the tool handler the MCP server serves): an xsd:decimal keeps every
digit both ways -- JSON outputs carry it as the string of its exact lexical form, inputs
take a JSON number (parsed exactly) or such a string; importance takes an integer only."""

from __future__ import annotations

import json
from decimal import Decimal

from reckon.api import Principal
from tests.server.conftest import BUDGET

LONG = "12345678901234.123456789012345678"


def _cap(platform: str, amount: object) -> dict[str, object]:
    return {**BUDGET, "label": f"{platform} weekly cap", "content": f"Keep {platform} spend under the weekly cap.",
            "properties": {**BUDGET["properties"], "platform": platform, "amount": amount, "period": "weekly"}}


def test_http_a_long_decimal_keeps_every_digit_as_number_or_string(world) -> None:
    # a JSON number with 32 significant digits, sent as raw text
    body = json.dumps(_cap("tiktok", 0)).replace('"amount": 0', f'"amount": {LONG}')
    assert LONG in body
    r = world.client.post("/tenants/acme/memories", content=body,
                          headers=world.h("acme_ops", **{"content-type": "application/json"}))
    assert r.status_code == 201, r.text
    assert r.json()["properties"]["amount"] == LONG
    mid = r.json()["id"]
    assert world.engine.tenant("acme").get(mid).properties["amount"] == Decimal(LONG)
    g = world.client.get(f"/tenants/acme/memories/{mid}", headers=world.h("acme_ops"))
    assert g.status_code == 200 and g.json()["properties"]["amount"] == LONG
    # the same value as a string
    r = world.client.post("/tenants/acme/memories", json=_cap("linkedin", LONG), headers=world.h("acme_ops"))
    assert r.status_code == 201, r.text
    assert r.json()["properties"]["amount"] == LONG
    # an ordinary amount: the canonical text
    r = world.client.post("/tenants/acme/memories", json=_cap("twitter", 40000.50), headers=world.h("acme_ops"))
    assert r.status_code == 201, r.text
    assert r.json()["properties"]["amount"] == "40000.5"


def test_http_importance_must_be_an_integer(world) -> None:
    before = world.engine.tenant("acme").dump()
    for bad in ("5", 5.0, "high", True):
        body = {"kind": "fact", "scope": "user", "importance": bad, "label": "Coffee", "content": "Sam likes coffee."}
        r = world.client.post("/tenants/acme/memories", json=body, headers=world.h("acme_sam"))
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["error"]["field"] == "importance"
    assert world.engine.tenant("acme").dump() == before


def test_mcp_tool_results_keep_every_digit_and_take_decimal_strings(world) -> None:
    tenant = world.engine.tenant("acme")
    ops = Principal.operator("dana", teams=["growth"])
    args = {"kind": "objective", "scope": "company", "importance": 5, "label": "bing weekly cap",
            "content": "Keep bing spend under the weekly cap.",
            "subclass": {"name": "BudgetConstraintMemory",
                         "properties": {"platform": "bing", "amount": LONG, "currency": "EUR", "period": "Weekly"}}}
    out = tenant.handle_tool_call("remember", args, ops)
    assert out["ok"], out
    text = json.dumps(out)  # what the MCP server sends (text content and structured content)
    assert json.loads(text)["memory"]["properties"]["amount"] == LONG
    assert tenant.get(out["memory"]["id"]).properties["amount"] == Decimal(LONG)
    # the schema's number check still applies to a string: a negative amount is refused
    bad = json.loads(json.dumps(args))
    bad["label"] = "negative cap"
    bad["subclass"]["properties"].update(platform="google", amount="-1")
    out = tenant.handle_tool_call("remember", bad, ops)
    assert not out["ok"] and "amount" in (out["error"]["field"] or "")
    schema = {d["name"]: d for d in tenant.tool_definitions(format="anthropic")}["remember"]["input_schema"]
    budget = {v["title"]: v for v in schema["properties"]["subclass"]["oneOf"]}["BudgetConstraintMemory"]
    amount = budget["properties"]["properties"]["properties"]["amount"]
    assert amount["type"] == ["number", "string"] and "string" in amount["description"]
    # importance: an integer only
    for bad_imp in ("5", 5.0):
        out = tenant.handle_tool_call("remember", {**args, "label": "x", "importance": bad_imp}, ops)
        assert not out["ok"] and out["error"]["field"] == "importance", out
