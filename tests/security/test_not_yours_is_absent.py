"""Every read route answers the same for "another person's private memory" as for "no
such memory" (issue 10 §3): status, error type and message, with the id masked. Routes:
REST GET / PATCH / DELETE / supersede / restore / history and remember(supersedes=...),
the MCP memory resource and the supersede tool (in-process MCP client), and the Python
facade (``Tenant.get`` / ``history`` / ``update`` / ``supersede``).

The read policy is ``reckon.memory.authz.can_read``: members read company memories,
their teams', their projects' (``project rk:member person``), their conversations'
(``rk:participant`` / ``ag:participant``) and their own; a memory outside that is reported exactly as an absent one
(404 / ``UnknownMemory`` / MCP "not found"), so neither its existence nor its owner
leaks -- before, PATCH / DELETE answered 403 naming the owner.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from reckon import Principal, UnknownMemory

OPS = Principal.operator("dana", teams=["growth"])
SAM = Principal(person="sam", teams=["growth"])
LEE = Principal(person="lee", teams=["sales"])
REPLACEMENT = {"kind": "preference", "scope": "user", "importance": 3, "source": "agent_tool",
               "label": "Short answers v2", "content": "One-line answers please."}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from fastapi.testclient import TestClient

    from reckon.api import Engine
    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    d = tmp_path_factory.mktemp("absent")
    eng = Engine(d)
    t = eng.create_tenant("acme", company_name="Acme")
    for who, teams in (("dana", ["growth"]), ("sam", ["growth"]), ("lee", ["sales"])):
        t.add_person(who, who.title(), teams=teams)
    secret = t.remember(principal=LEE, kind="preference", scope="user", importance=4, source="agent_tool",
                        label="Lee's private note", content="Lee is looking for another job.")
    sales = t.remember(principal=OPS, kind="fact", scope="team", teams=["sales"], importance=4, source="operator",
                       label="Sales pipeline", content="The sales team's pipeline review is on Fridays.")
    # a project lee is a member of and a conversation lee takes part in (graph data; sam is in neither)
    t.add_project("apollo", "Apollo", members=["lee"])
    t.add_participant("lee-chat", "lee")
    project = t.remember(principal=LEE, kind="fact", scope="project", project="apollo", importance=4,
                         source="agent_tool", label="Apollo launch date", content="Apollo launches on Friday.")
    chat = t.remember(principal=LEE, kind="preference", scope="conversation", conversation="lee-chat", importance=4,
                      source="agent_tool", label="Tone in this chat", content="Lee wants a casual tone here.")
    mine = t.remember(principal=SAM, kind="preference", scope="user", importance=3, source="agent_tool",
                      label="Short answers", content="Sam prefers short answers.")
    token = TokenStore(d).create("acme", person="sam", teams=["growth"])[1]
    with TestClient(create_app(eng, rate_limit=None)) as client:
        yield {"engine": eng, "tenant": t, "client": client, "h": {"Authorization": f"Bearer {token}"},
               "secret": secret.id, "sales": sales.id, "project": project.id, "conversation": chat.id,
               "mine": mine.id}
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


def _mask(text: str, memory_id: str) -> str:
    return text.replace(memory_id, "<ID>")


def _absent() -> str:
    return uuid.uuid4().hex


REST: dict[str, Callable[[Any, dict[str, str], str, str], Any]] = {
    "GET memory": lambda c, h, mid, mine: c.get(f"/tenants/acme/memories/{mid}", headers=h),
    "GET history": lambda c, h, mid, mine: c.get(f"/tenants/acme/memories/{mid}/history", headers=h),
    "PATCH memory": lambda c, h, mid, mine: c.patch(f"/tenants/acme/memories/{mid}", headers=h,
                                                    json={"label": "mine now"}),
    "DELETE memory": lambda c, h, mid, mine: c.delete(f"/tenants/acme/memories/{mid}", headers=h),
    "POST restore": lambda c, h, mid, mine: c.post(f"/tenants/acme/memories/{mid}/restore", headers=h),
    "POST supersede (old)": lambda c, h, mid, mine: c.post(f"/tenants/acme/memories/{mid}/supersede", headers=h,
                                                           json={"replacement": REPLACEMENT}),
    "POST supersede (new_id)": lambda c, h, mid, mine: c.post(f"/tenants/acme/memories/{mine}/supersede",
                                                              headers=h, json={"new_id": mid}),
    "POST remember(supersedes)": lambda c, h, mid, mine: c.post("/tenants/acme/memories", headers=h,
                                                                json={**REPLACEMENT, "supersedes": [mid]}),
}


@pytest.mark.parametrize("route", sorted(REST))
@pytest.mark.parametrize("which", ["secret", "sales", "project", "conversation"])
def test_rest_route_answers_not_yours_like_absent(world: dict[str, Any], route: str, which: str) -> None:
    c, h = world["client"], world["h"]
    theirs, absent = world[which], _absent()
    before = world["tenant"].get(theirs).model_dump()
    r1 = REST[route](c, h, theirs, world["mine"])
    r2 = REST[route](c, h, absent, world["mine"])
    assert r1.status_code == r2.status_code, (route, r1.text, r2.text)
    assert r1.status_code in (403, 404)
    assert _mask(r1.text, theirs) == _mask(r2.text, absent)
    assert "lee" not in r1.text.lower() and "sales" not in r1.text.lower() and "apollo" not in r1.text.lower()
    assert world["tenant"].get(theirs).model_dump() == before  # the refused call changed nothing


PY: dict[str, Callable[[Any, str, str], Any]] = {
    "get": lambda t, mid, mine: t.get(mid, principal=SAM),
    "history": lambda t, mid, mine: t.history(mid, principal=SAM),
    "update": lambda t, mid, mine: t.update(mid, principal=SAM, label="mine now"),
    "supersede (old)": lambda t, mid, mine: t.supersede(mid, dict(REPLACEMENT), principal=SAM),
    "supersede (new id)": lambda t, mid, mine: t.supersede(mine, mid, principal=SAM),
    "remember(supersedes)": lambda t, mid, mine: t.remember(principal=SAM, supersedes=[mid], **REPLACEMENT),
}


@pytest.mark.parametrize("call", sorted(PY))
@pytest.mark.parametrize("which", ["secret", "sales", "project", "conversation"])
def test_python_call_answers_not_yours_like_absent(world: dict[str, Any], call: str, which: str) -> None:
    t = world["tenant"]
    theirs, absent = world[which], _absent()
    errors = []
    for mid in (theirs, absent):
        with pytest.raises(UnknownMemory) as e:
            PY[call](t, mid, world["mine"])
        errors.append(_mask(str(e.value), mid))
    assert errors[0] == errors[1]
    assert "lee" not in errors[0] and "apollo" not in errors[0]


def test_python_reads_without_a_principal_and_by_an_operator_still_see_it(world: dict[str, Any]) -> None:
    t = world["tenant"]
    assert t.get(world["secret"]).owner == "lee"  # the tenant's own code: no read policy
    assert t.get(world["secret"], principal=OPS).owner == "lee"
    assert t.get(world["secret"], principal=LEE).label == "Lee's private note"
    assert t.get(world["sales"], principal=LEE).teams == ["sales"]
    # lee reads the project and conversation memories by graph membership alone (no claim)
    assert t.get(world["project"], principal=LEE).project == "apollo"
    assert t.get(world["conversation"], principal=LEE).conversation == "lee-chat"
    assert [e.id for e in t.history(world["secret"], principal=LEE)] == [world["secret"]]


def test_search_and_bundle_never_show_it(world: dict[str, Any]) -> None:
    t = world["tenant"]
    hits = t.search("Lee looking for another job; sales pipeline Fridays", principal=SAM,
                    importance=[1, 2, 3, 4, 5], k=50)
    assert {h.memory.id for h in hits} & {world["secret"], world["sales"]} == set()
    hits = t.search("Apollo launches on Friday; casual tone", principal=SAM, importance=[1, 2, 3, 4, 5], k=50)
    assert {h.memory.id for h in hits} & {world["project"], world["conversation"]} == set()
    text = t.context(SAM, conversation="Is Lee looking for a job? What about the sales pipeline?").render()
    assert "Lee's private note" not in text and "Sales pipeline" not in text
    # naming the project or the conversation does not let a non-member in
    text = t.context(SAM, project="apollo", conversation_id="lee-chat").render()
    assert "Apollo launch date" not in text and "Tone in this chat" not in text
    lee = t.context(LEE, project="apollo", conversation_id="lee-chat")
    assert {world["project"], world["conversation"]} <= set(lee.ids())
    assert "Lee's private note" in t.context(LEE).render()


@pytest.mark.parametrize("which", ["secret", "project", "conversation"])
def test_mcp_resource_and_tool_answer_not_yours_like_absent(world: dict[str, Any], which: str) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from reckon.server.mcp import build_server

    t = world["tenant"]
    server = build_server(t, SAM)
    theirs, absent = world[which], _absent()
    out: dict[str, Any] = {}

    async def session() -> None:
        with anyio.fail_after(120):
            async with Client(server) as c:
                for key, mid in (("theirs", theirs), ("absent", absent)):
                    try:
                        await c.read_resource(f"reckon://acme/memories/{mid}")
                        out[key + "_resource"] = None
                    except MCPError as e:
                        out[key + "_resource"] = _mask(str(e), mid)
                    r = await c.call_tool("supersede", {"old_id": mid, "replacement": {
                        k: v for k, v in REPLACEMENT.items() if k != "source"}})
                    out[key + "_tool"] = (r.is_error, _mask(json.dumps(r.structured_content, sort_keys=True), mid))

    anyio.run(session)
    assert out["theirs_resource"] is not None and out["theirs_resource"] == out["absent_resource"]
    assert "not found" in out["theirs_resource"].lower() or "no memory" in out["theirs_resource"].lower()
    assert out["theirs_tool"] == out["absent_tool"] and out["theirs_tool"][0] is True
    assert "lee" not in out["theirs_tool"][1]


def test_search_expand_graph_never_brings_a_neighbour_not_yours(world: dict[str, Any]) -> None:
    """``expand="graph"``: memories extracted from the same turn as sam's hit, of lee's
    user scope, the sales team, lee's project and lee's conversation, are absent for sam
    (Python and REST) and present for lee; the direct hits are unchanged."""
    t, c, h = world["tenant"], world["client"], world["h"]
    turn = t.record_turn("standup-x", "Sam saw a wombat; Lee is interviewing elsewhere.", principal=OPS)
    base = {"kind": "fact", "importance": 3, "source": "extraction", "derived_from": [turn.iri]}
    mine = t.remember(principal=SAM, scope="user", label="Wombat", content="Sam saw a wombat at the office.", **base)
    theirs = [
        t.remember(principal=LEE, scope="user", label="Interviewing", content="Lee interviews at Initech.", **base),
        t.remember(principal=OPS, scope="team", teams=["sales"], label="Sales quota", content="Quota is 2.5M.", **base),
        t.remember(principal=LEE, scope="project", project="apollo", label="Apollo risk", content="Apollo slips.",
                   **base),
        t.remember(principal=LEE, scope="conversation", conversation="lee-chat", label="Chat aside",
                   content="Lee is tired.", **base),
    ]
    t.recall.index.wait()
    got = t.search("wombat office", principal=SAM, k=5, expand="graph")
    assert [x.memory.id for x in got if x.expanded_from is None] == [x.memory.id for x in t.search(
        "wombat office", principal=SAM, k=5)]
    assert mine.id in {x.memory.id for x in got}
    assert {x.memory.id for x in got} & {m.id for m in theirs} == set()
    r = c.get("/tenants/acme/search", params={"q": "wombat office", "k": 5, "expand": "graph"}, headers=h)
    assert r.status_code == 200 and mine.id in r.text
    assert not any(m.id in r.text for m in theirs) and "Initech" not in r.text and "Quota" not in r.text
    lee = t.search("Lee interviews Initech", principal=LEE, k=1, expand="graph")
    assert lee[0].memory.id == theirs[0].id
    assert {x.memory.id for x in lee[1:]} == {m.id for m in theirs[1:]}        # lee is in sales; not sam's
