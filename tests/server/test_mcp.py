"""MCP server: an MCP client (the ``mcp`` SDK) launches ``python -m reckon.cli mcp`` over
stdio, lists the tools (schemas = ``Tenant.tool_definitions``), and calls remember,
search, supersede and get_context; refused calls come back as tool results the model
can correct (``isError`` + type, field, constraint), not protocol errors."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from reckon.api._neighbour_tools import NEIGHBOUR_TOOL_NAMES
from reckon.api._tools import TOOL_NAMES
from tests.conftest import REPO

TIMEOUT = 120  # seconds for a whole session (process start, imports, first reasoner load)


@pytest.fixture(scope="module")
def mcp_tenant(tmp_path_factory: pytest.TempPathFactory, _hashing_embedder: None):
    from reckon.api import Engine

    d = tmp_path_factory.mktemp("mcp")
    eng = Engine(d)
    t = eng.create_tenant("acme", company_name="Acme")
    t.add_person("dana", "Dana", teams=["growth"])
    return d, eng


def _params(data_dir: Path, *extra: str):
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "engine"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["RECKON_EMBEDDER"] = "hashing"
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "reckon.cli", "--data-dir", str(data_dir), "mcp", "--tenant", "acme", *extra],
        env=env, cwd=str(REPO),
    )


def test_stdio_client_lists_tools_and_calls_them(mcp_tenant):
    from mcp import Client

    data_dir, eng = mcp_tenant
    tenant = eng.tenant("acme")
    expected_schemas = {d["name"]: d["input_schema"] for d in tenant.tool_definitions(format="anthropic")}
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(_params(data_dir, "--as", "dana", "--member-of", "growth", "--operator"),
                              read_timeout_seconds=TIMEOUT) as c:
                tools = (await c.list_tools()).tools
                out["names"] = [t.name for t in tools]
                out["schemas"] = {t.name: t.input_schema for t in tools}
                r = await c.call_tool("remember", {
                    "label": "Ideal customer profile", "kind": "fact", "scope": "company", "importance": 3,
                    "content": "We sell to small businesses with ten to fifty employees."})
                out["remember"] = r
                r = await c.call_tool("remember", {
                    "label": "Meta monthly spend cap", "kind": "objective", "scope": "company", "importance": 5,
                    "content": "Don't let Meta spend go over $40k this month.",
                    "subclass": {"name": "BudgetConstraintMemory", "properties": {
                        "platform": "meta", "amount": 40000, "currency": "USD", "period": "Monthly"}}})
                out["budget"] = r
                out["search"] = await c.call_tool("search", {"query": "small businesses employees"})
                out["context"] = await c.call_tool("get_context", {"conversation": "how much can we spend on meta?"})
                out["bad"] = await c.call_tool("remember", {"label": "x", "content": "y", "kind": "fact",
                                                            "scope": "company", "importance": 9})
                out["bad_subclass"] = await c.call_tool("remember", {
                    "label": "Google cap", "content": "cap google", "kind": "objective", "scope": "company",
                    "importance": 4, "subclass": {"name": "BudgetConstraintMemory", "properties": {
                        "platform": "google", "amount": -5, "currency": "USD", "period": "Monthly"}}})

    anyio.run(session)

    assert out["names"] == list(TOOL_NAMES) + ["record_turn", "search_turns"] + list(NEIGHBOUR_TOOL_NAMES)
    # generated from the tenant's catalogue
    assert {k: v for k, v in out["schemas"].items() if k in TOOL_NAMES} == expected_schemas  # type: ignore[union-attr]

    rem = out["remember"]
    assert rem.is_error is False and rem.structured_content["ok"] is True  # type: ignore[attr-defined]
    icp_id = rem.structured_content["memory"]["id"]  # type: ignore[attr-defined]
    # written by the server process, visible here through the store
    assert tenant.get(icp_id).label == "Ideal customer profile" and tenant.get(icp_id).author == "dana"

    budget = out["budget"].structured_content  # type: ignore[attr-defined]
    assert budget["ok"] is True and budget["memory"]["subclass"] == "BudgetConstraintMemory", budget
    assert tenant.get(budget["memory"]["id"]).properties["amount"] == 40000

    hits = out["search"].structured_content["hits"]  # type: ignore[attr-defined]
    assert hits and hits[0]["id"] == icp_id and hits[0]["score"] > 0

    ctx = out["context"].structured_content  # type: ignore[attr-defined]
    assert ctx["ok"] is True and budget["memory"]["id"] in ctx["ids"]
    assert "Meta monthly spend cap" in ctx["text"] and icp_id not in ctx["ids"]  # Medium: search, not bundle
    assert out["context"].content[0].text  # type: ignore[attr-defined]

    bad = out["bad"]
    assert bad.is_error is True  # type: ignore[attr-defined]
    err = bad.structured_content["error"]  # type: ignore[attr-defined]
    assert err["type"] == "invalid_input" and err["field"] == "importance" and err["constraint"] == "maximum"
    bad = out["bad_subclass"]
    assert bad.is_error is True  # type: ignore[attr-defined]
    err = bad.structured_content["error"]  # type: ignore[attr-defined]
    assert err["field"] and "amount" in err["field"] and err["constraint"]
    assert [m.label for m in tenant.memories()].count("Google cap") == 0


def test_member_principal_is_enforced_in_process(mcp_tenant):
    """The in-process client (same server object, no subprocess): a member may not write
    company memories, supersede is checked against ownership, and both come back as
    correctable tool results."""
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    tenant = eng.tenant("acme")
    server = build_server(tenant, Principal(person="sam", teams=["growth"]))
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                out["company"] = await c.call_tool("remember", {"label": "No ads on Sunday", "content": "Never",
                                                                "kind": "fact", "scope": "company", "importance": 4})
                mine = await c.call_tool("remember", {"label": "Short answers", "content": "Bullet points please",
                                                      "kind": "preference", "scope": "user", "importance": 4})
                out["mine"] = mine
                old = mine.structured_content["memory"]["id"]
                out["supersede"] = await c.call_tool("supersede", {"old_id": old, "replacement": {
                    "label": "Very short answers", "content": "One line answers please", "kind": "preference",
                    "scope": "user", "importance": 4}})
                out["unknown"] = await c.call_tool("forget_everything", {})

    anyio.run(session)
    err = out["company"].structured_content["error"]  # type: ignore[attr-defined]
    assert out["company"].is_error and err["type"] == "not_authorized"  # type: ignore[attr-defined]
    mine = out["mine"].structured_content["memory"]  # type: ignore[attr-defined]
    assert mine["owner"] == "sam"
    sup = out["supersede"].structured_content  # type: ignore[attr-defined]
    assert sup["ok"] and sup["superseded"] == mine["id"]
    assert tenant.get(mine["id"]).superseded_by == [sup["memory"]["id"]]
    unknown = out["unknown"]
    assert unknown.is_error and unknown.structured_content["error"]["type"] == "unknown_tool"  # type: ignore[attr-defined]
    # the correction names every tool this server serves (18), not only the four memory tools
    message = unknown.structured_content["error"]["message"]  # type: ignore[attr-defined]
    served = message.split("; tools: ", 1)[1].split(", ")
    assert served == list(TOOL_NAMES) + ["record_turn", "search_turns"] + list(NEIGHBOUR_TOOL_NAMES)
    assert unknown.structured_content["error"]["field"] == "name"  # type: ignore[attr-defined]


def test_subclass_added_in_turtle_appears_in_the_mcp_tools(tmp_path, _hashing_embedder):
    """A memory class added as a Turtle module (ontology + SHACL shape, no code) is listed
    in the MCP remember tool's schema and accepted by a call."""
    from mcp import Client

    from reckon.api import Engine, Principal
    from reckon.server.mcp import build_server
    from tests.api.test_tools import MODULE

    mod = tmp_path / "creative.ttl"
    mod.write_text(MODULE)
    tenant = Engine(tmp_path / "data", modules=[mod]).create_tenant("creative")
    tenant.add_person("dana", "Dana")
    server = build_server(tenant, Principal.operator("dana"))
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                tools = {t.name: t for t in (await c.list_tools()).tools}
                out["variants"] = [v["title"] for v in
                                   tools["remember"].input_schema["properties"]["subclass"]["oneOf"]]
                out["call"] = await c.call_tool("remember", {
                    "label": "Short headlines", "content": "At most 8 words", "kind": "preference",
                    "scope": "company", "importance": 4,
                    "subclass": {"name": "HeadlineRuleMemory", "properties": {"max_words": 8, "channels": ["search"]}}})

    anyio.run(session)
    assert "HeadlineRuleMemory" in out["variants"]  # type: ignore[operator]
    res = out["call"].structured_content  # type: ignore[attr-defined]
    assert res["ok"] is True, res
    assert tenant.get(res["memory"]["id"]).properties["maxWords"] == 8


def test_stdio_client_reads_resources_and_gets_the_start_prompt(mcp_tenant):
    """Resources and prompts over a real stdio session (``reckon mcp`` subprocess, the
    ``mcp`` SDK's client): the bundle, a memory by id, the ontology, the
    ``start_conversation`` prompt; another person's private memory and an unknown URI
    are JSON-RPC errors that say "not found" / "unknown" alike."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from reckon.api import Principal

    data_dir, eng = mcp_tenant
    tenant = eng.tenant("acme")
    ops = Principal.operator("dana", teams=["growth"])
    cap = tenant.remember(principal=ops, kind="objective", scope="company", importance=5, source="operator",
                          label="TikTok monthly cap", content="Keep TikTok under $5k a month.",
                          subclass="BudgetConstraintMemory",
                          properties={"platform": "tiktok", "amount": "5000", "currency": "USD", "period": "monthly"})
    tenant.set_spend("tiktok", 4500)
    private = tenant.remember(principal=Principal(person="lee"), kind="preference", scope="user", importance=4,
                              source="agent_tool", label="Lee's private note", content="Lee is job hunting.")
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(_params(data_dir, "--as", "sam", "--member-of", "growth"),
                              read_timeout_seconds=TIMEOUT) as c:
                out["resources"] = (await c.list_resources()).resources
                out["templates"] = (await c.list_resource_templates()).resource_templates
                out["bundle"] = await c.read_resource("reckon://acme/bundle")
                out["bundle_conv"] = await c.read_resource("reckon://acme/bundle?conversation=tiktok%20budget")
                out["memory"] = await c.read_resource(f"reckon://acme/memories/{cap.id}")
                out["ontology"] = await c.read_resource("reckon://acme/ontology")
                for key, uri in (("private", f"reckon://acme/memories/{private.id}"),
                                 ("absent", f"reckon://acme/memories/{'0' * 32}"),
                                 ("other_tenant", "reckon://beta/bundle"), ("unknown", "reckon://acme/secrets")):
                    try:
                        await c.read_resource(uri)
                        out[key] = None
                    except MCPError as e:
                        out[key] = e
                out["prompts"] = (await c.list_prompts()).prompts
                out["prompt"] = await c.get_prompt("start_conversation", {"message": "Can we spend more on TikTok?"})
                try:
                    await c.get_prompt("make_coffee", {})
                    out["bad_prompt"] = None
                except MCPError as e:
                    out["bad_prompt"] = e

    anyio.run(session)
    sam = Principal(person="sam", teams=["growth"])
    by_uri = {r.uri: r for r in out["resources"]}  # type: ignore[attr-defined]
    assert set(by_uri) == {"reckon://acme/bundle", "reckon://acme/ontology"}
    assert by_uri["reckon://acme/bundle"].mime_type == "text/markdown"
    assert {t.uri_template for t in out["templates"]} == {  # type: ignore[attr-defined]
        "reckon://acme/bundle{?conversation}", "reckon://acme/memories/{id}"}
    text = out["bundle"].contents[0].text  # type: ignore[attr-defined]
    assert text == tenant.context(sam).render()
    assert f"[{cap.id}] TikTok monthly cap" in text and "near_limit — 90 %" in text
    assert out["bundle_conv"].contents[0].text == tenant.context(sam, conversation="tiktok budget").render()  # type: ignore[attr-defined]
    mem = json.loads(out["memory"].contents[0].text)  # type: ignore[attr-defined]
    assert mem["id"] == cap.id and mem["status"]["budgetStatus"] == "near_limit"
    assert out["memory"].contents[0].mime_type == "application/json"  # type: ignore[attr-defined]
    onto = out["ontology"].contents[0].text  # type: ignore[attr-defined]
    assert "mk:BudgetConstraintMemory" in onto and "sh:NodeShape" in onto
    from pyoxigraph import RdfFormat, parse

    assert len(list(parse(input=onto.encode(), format=RdfFormat.TURTLE))) > 500
    priv, absent = out["private"], out["absent"]
    assert isinstance(priv, MCPError) and isinstance(absent, MCPError)
    assert priv.code == absent.code == -32602
    assert priv.message.replace(private.id, "X") == absent.message.replace("0" * 32, "X")
    assert "job hunting" not in priv.message
    for key in ("other_tenant", "unknown"):
        assert isinstance(out[key], MCPError) and "unknown resource" in out[key].message  # type: ignore[union-attr]
    assert [p.name for p in out["prompts"]] == ["start_conversation"]  # type: ignore[attr-defined]
    msgs = out["prompt"].messages  # type: ignore[attr-defined]
    assert msgs[0].content.type == "resource"
    assert msgs[0].content.resource.text == tenant.context(sam, conversation="Can we spend more on TikTok?").render()
    assert msgs[0].content.resource.uri.startswith("reckon://acme/bundle?conversation=")
    assert msgs[1].content.type == "text" and "search" in msgs[1].content.text
    assert msgs[1].content.text.endswith("Can we spend more on TikTok?")
    assert isinstance(out["bad_prompt"], MCPError) and "unknown prompt" in out["bad_prompt"].message  # type: ignore[union-attr]


def test_record_turn_and_search_turns_tools(mcp_tenant):
    """The host records turns over MCP (post-turn persistence): a member only as
    themselves; tool output is stored and searchable; refused calls are tool results."""
    from mcp import Client

    from reckon.api import Principal
    from reckon.server.mcp import build_server

    _, eng = mcp_tenant
    tenant = eng.tenant("acme")
    server = build_server(tenant, Principal(person="sam", teams=["growth"]))
    out: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(server) as c:
                out["user"] = await c.call_tool("record_turn", {
                    "conversation": "mcp-1", "text": "Please keep weekly reports short.",
                    "at": "2026-03-01T09:15:00.123456+02:00", "external_id": "m-1"})
                out["again"] = await c.call_tool("record_turn", {
                    "conversation": "mcp-1", "text": "Please keep weekly reports short.", "external_id": "m-1"})
                out["tool"] = await c.call_tool("record_turn", {
                    "conversation": "mcp-1", "role": "tool", "text": "weekly report: spend 34000 USD"})
                out["forged"] = await c.call_tool("record_turn", {
                    "conversation": "mcp-1", "text": "I am the boss", "speaker": "dana"})
                out["bad"] = await c.call_tool("record_turn", {"conversation": "mcp-1", "text": "x", "role": "robot"})
                out["search"] = await c.call_tool("search_turns", {"query": "weekly reports"})

    anyio.run(session)
    user = out["user"].structured_content  # type: ignore[attr-defined]
    assert user["ok"] and user["turn"]["id"] == "mcp-1/0" and user["turn"]["speaker"] == "sam"
    assert user["turn"]["at"].startswith("2026-03-01T07:15:00.123456")  # UTC, microseconds kept
    assert out["again"].structured_content["turn"]["id"] == "mcp-1/0"  # type: ignore[attr-defined]
    assert out["tool"].structured_content["turn"]["role"] == "tool"  # type: ignore[attr-defined]
    forged = out["forged"]
    assert forged.is_error and forged.structured_content["error"]["type"] == "not_authorized"  # type: ignore[attr-defined]
    bad = out["bad"]
    assert bad.is_error and bad.structured_content["error"]["field"] == "role"  # type: ignore[attr-defined]
    hits = out["search"].structured_content["hits"]  # type: ignore[attr-defined]
    assert {h["turn"]["id"] for h in hits} == {"mcp-1/0", "mcp-1/1"}
    assert [t.id for t in tenant.turns("mcp-1")] == ["mcp-1/0", "mcp-1/1"]
