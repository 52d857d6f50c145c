"""Project and conversation scopes (issue 15 item 4): beside user / team / company, with
the same authorization and precedence machinery -- personal > conversation > project >
team > company.

* a project-scope memory belongs to one project (``rk:project``); its members
  (``project rk:member person``, ``Tenant.add_project``) read and write it;
* a conversation-scope memory belongs to one conversation (``rk:conversation``); its
  participants -- asserted (``Tenant.add_participant``) or derived from who spoke in it
  (``ag:participant``, rules/agent.srl) -- read and write it;
* memberships are graph data: the facade resolves them for every call
  (``Tenant.principal_of``); removing a member removes their access;
* the bundle holds a project's (conversation's) live memories when the turn names it
  (``Tenant.context(..., project=, conversation_id=)``) and the principal belongs to it;
  precedence conflicts are judged by the tenant's conflict judge;
* REST, MCP (the get_context tool) and the CLI accept them.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from reckon import InvalidInput, NotAuthorized, Principal, ShapeViolation, UnknownMemory
from reckon.api import Engine

OPS = Principal.operator("dana")
ANN = Principal(person="ann", teams=["growth"])
BOB = Principal(person="bob", teams=["growth"])
NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    yield Engine(tmp_path_factory.mktemp("scopes"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


@pytest.fixture
def tenant(engine: Any) -> Any:
    t = engine.create_tenant(f"s{uuid.uuid4().hex[:8]}", company_name="Acme")
    t.tick(NOW)
    t.add_person("ann", teams=["growth"])
    t.add_person("bob", teams=["growth"])
    t.add_project("apollo", "Apollo", members=["ann"])
    t.add_participant("c1", "ann")
    return t


def fact(label: str, content: str, **kw: Any) -> dict[str, Any]:
    return dict(kind="fact", importance=4, source="agent_tool", label=label, content=content, **kw)


def test_members_read_and_write_their_project_others_see_nothing(tenant: Any) -> None:
    """If ann is a member of apollo and bob is not, then ann writes, reads, edits and
    supersedes apollo's memories; bob's get / update / supersede answer like an absent
    memory and his write is refused; after ann leaves the project she sees nothing."""
    m = tenant.remember(principal=ANN, scope="project", project="apollo",
                        **fact("Launch on Friday", "Apollo launches on Friday"))
    assert (m.scope, m.project, m.owner, m.teams) == ("project", "apollo", None, [])
    assert tenant.get(m.id, principal=ANN).label == "Launch on Friday"
    assert tenant.update(m.id, principal=ANN, importance=5).importance == 5
    for call in (lambda: tenant.get(m.id, principal=BOB),
                 lambda: tenant.update(m.id, principal=BOB, label="mine"),
                 lambda: tenant.supersede(m.id, dict(scope="user", **fact("x", "y")), principal=BOB)):
        with pytest.raises(UnknownMemory):
            call()
    with pytest.raises(NotAuthorized, match="members of the project"):
        tenant.remember(principal=BOB, scope="project", project="apollo", **fact("Bob's", "bob writes"))
    new = tenant.supersede(m.id, dict(scope="project", project="apollo",
                                      **fact("Launch on Monday", "Apollo launches on Monday")), principal=ANN)
    assert new.project == "apollo" and tenant.get(m.id).superseded_by == [new.id]
    tenant.add_project("apollo", members=["bob"])
    assert tenant.get(new.id, principal=BOB).id == new.id
    tenant.remove_project_member("apollo", "ann")
    with pytest.raises(UnknownMemory):
        tenant.get(new.id, principal=ANN)
    assert tenant.get(new.id, principal=OPS).project == "apollo"


def test_participants_by_assertion_or_by_speaking(tenant: Any) -> None:
    """If ann is asserted a participant of c1 and bob speaks in c2, then each reads and
    writes the memories of their conversation, not of the other's."""
    a = tenant.remember(principal=ANN, scope="conversation", conversation="c1",
                        **fact("Bullet lists here", "In this chat ann wants bullet lists"))
    tenant.record_turn("c2", "Let's plan the spring campaign", principal=BOB, speaker="bob")
    b = tenant.remember(principal=BOB, scope="conversation", conversation="c2",
                        **fact("Spring plan chat", "This chat plans the spring campaign"))
    assert tenant.get(a.id, principal=ANN).conversation == "c1"
    assert tenant.get(b.id, principal=BOB).conversation == "c2"
    assert "c2" in tenant.principal_of(BOB).conversations
    with pytest.raises(UnknownMemory):
        tenant.get(a.id, principal=BOB)
    with pytest.raises(UnknownMemory):
        tenant.get(b.id, principal=ANN)
    with pytest.raises(NotAuthorized):
        tenant.remember(principal=ANN, scope="conversation", conversation="c2", **fact("x", "y"))


def test_bad_links_are_refused_and_nothing_is_written(tenant: Any) -> None:
    """If a project memory names no project, a user memory names a project, or a
    conversation memory names a project, then InvalidInput names the field and the
    store is unchanged."""
    before = tenant.dump()
    for fields, name in ((dict(scope="project"), "project"),
                         (dict(scope="user", project="apollo"), "project"),
                         (dict(scope="conversation", project="apollo", conversation="c1"), "project"),
                         (dict(scope="conversation"), "conversation"),
                         (dict(scope="project", project="apollo", teams=["growth"]), "teams")):
        with pytest.raises(InvalidInput) as e:
            tenant.remember(principal=ANN, **fields, **fact("bad", "bad links"))
        assert e.value.field == name, (fields, e.value)
    with pytest.raises(InvalidInput):
        tenant.update(tenant.remember(principal=ANN, scope="user", **fact("u", "u")).id, principal=ANN,
                      project="apollo")
    assert tenant.dump() != before  # the one good write above
    assert [m.scope for m in tenant.memories()] == ["user"]


def test_bundle_precedence_personal_conversation_project_team_company(tenant: Any) -> None:
    """If the company, the team, the project, the conversation and ann herself each
    state another report day, then ann's bundle for (apollo, c1) holds all five and the
    judge makes each more specific one authoritative over every less specific one: the
    personal memory overrides all, the conversation one overrides project, team and
    company, and so on; without project and conversation only three remain."""
    days = {"company": "Friday", "team": "Thursday", "project": "Wednesday", "conversation": "Tuesday",
            "user": "Monday"}
    ids: dict[str, str] = {}
    for scope, day in days.items():
        extra: dict[str, Any] = {"company": {}, "team": {"teams": ["growth"]}, "project": {"project": "apollo"},
                                 "conversation": {"conversation": "c1"}, "user": {}}[scope]
        who = OPS if scope in ("company", "team") else ANN
        f = fact(f"Reports go out on {day}", f"Weekly reports go out on {day}", scope=scope, **extra)
        if who is OPS:
            f["source"] = "operator"
        ids[scope] = tenant.remember(principal=who, **f).id
    b = tenant.context(ANN, project="apollo", conversation_id="c1")
    assert set(b.ids()) == set(ids.values())
    order = ["user", "conversation", "project", "team", "company"]
    pairs = {(c.authoritative_scope, c.overridden_scope) for c in b.conflicts}
    assert pairs == {(order[i], order[j]) for i in range(5) for j in range(i + 1, 5)}
    for scope in order[1:]:
        assert b.item(ids[scope]).overridden_by == ids["user"], scope
    assert b.item(ids["user"]).overridden_by is None
    plain = tenant.context(ANN)
    assert set(plain.ids()) == {ids["user"], ids["team"], ids["company"]}
    # bob (same team, not in apollo or c1) never gets the project or conversation items
    assert set(tenant.context(BOB, project="apollo", conversation_id="c1").ids()) == {ids["team"], ids["company"]}
    # the header states the five-scope precedence; the live rules' bookkeeping
    # (rk:liveCandidateIn) is not a status of the memory, in the item or its line
    assert "personal over conversation over project over team over company" in b.text
    assert "liveCandidateIn" not in b.text
    for i in ids.values():
        assert "liveCandidateIn" not in tenant.get(i, principal=OPS).status


def test_members_must_be_a_list_of_person_ids(tenant: Any) -> None:
    """``members="lee"`` is one string, not the persons l, e, e: refused, nothing written."""
    with pytest.raises(InvalidInput, match="members"):
        tenant.add_project("p2", members="lee")
    assert "p2" not in tenant.principal_of(Principal(person="l")).projects


def test_project_live_context_is_capped_by_the_rule(tenant: Any) -> None:
    """If apollo has 4 High memories and the cap is 3, then the bundle holds the 3 newest
    (rule stakeholder-live-cap) and ``capped`` counts one project item."""
    tenant.set_setting("live_context_cap", 3)
    ms = [tenant.remember(principal=ANN, scope="project", project="apollo", **fact(f"p{i} {uuid.uuid4().hex}",
                                                                                  f"note {uuid.uuid4().hex}"))
          for i in range(4)]
    b = tenant.context(ANN, project="apollo")
    newest = sorted(ms, key=lambda m: (-m.created_at.timestamp(), m.iri))[:3]
    assert set(b.ids()) == {m.id for m in newest} and b.capped == {"project": 1}


def test_search_finds_project_memories_for_members_only(tenant: Any) -> None:
    m = tenant.remember(principal=ANN, scope="project", project="apollo",
                        **dict(fact("Apollo vendor", "Apollo uses Acme Rockets as its vendor"), importance=3))
    assert m.id in {h.memory.id for h in tenant.search("Apollo vendor rockets", principal=ANN)}
    assert m.id not in {h.memory.id for h in tenant.search("Apollo vendor rockets", principal=BOB)}
    assert m.id in {h.memory.id for h in tenant.search("Apollo vendor rockets", principal=ANN, scopes=["project"])}
    assert not tenant.search("Apollo vendor rockets", principal=ANN, scopes=["team"])


def test_tools_rest_and_cli_accept_the_scopes(tenant: Any, tmp_path: Any) -> None:
    """If the LLM tool, REST and the CLI write and read project / conversation memories,
    then they land with their links and the bundle routes take project and conversation."""
    from fastapi.testclient import TestClient

    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    r = tenant.handle_tool_call("remember", {"label": "Tool note", "content": "Apollo tool note", "kind": "fact",
                                             "scope": "project", "project": "apollo", "importance": 4}, ANN)
    assert r["ok"], r
    assert r["memory"]["project"] == "apollo"
    ctx = tenant.handle_tool_call("get_context", {"project": "apollo"}, ANN)
    assert r["memory"]["id"] in ctx["ids"]
    assert r["memory"]["id"] not in tenant.handle_tool_call("get_context", {}, ANN)["ids"]
    schema = json.dumps(tenant.tool_definitions())
    assert '"conversation"' in schema and '"project"' in schema
    token = TokenStore(tenant.engine.data_dir).create(tenant.id, person="ann", teams=["growth"])[1]
    with TestClient(create_app(tenant.engine, rate_limit=None)) as client:
        h = {"Authorization": f"Bearer {token}"}
        resp = client.post(f"/tenants/{tenant.id}/memories", headers=h, json={
            "kind": "fact", "scope": "conversation", "conversation": "c1", "importance": 4,
            "label": "REST chat note", "content": "Written over REST for c1"})
        assert resp.status_code in (200, 201), resp.text
        mid = resp.json()["id"]
        assert resp.json()["conversation"] == "c1"
        b = client.get(f"/tenants/{tenant.id}/bundle", headers={**h, "Accept": "application/json"},
                       params={"conversation_id": "c1"})
        assert b.status_code == 200 and mid in {i["id"] for blk in b.json()["blocks"] for i in blk["items"]}
        b = client.get(f"/tenants/{tenant.id}/bundle", headers={**h, "Accept": "application/json"})
        assert mid not in {i["id"] for blk in b.json()["blocks"] for i in blk["items"]}
        listed = client.get(f"/tenants/{tenant.id}/memories", headers=h, params={"scope": "conversation"})
        assert listed.status_code == 200 and [m["id"] for m in listed.json()] == [mid]
        bob = TokenStore(tenant.engine.data_dir).create(tenant.id, person="bob", teams=["growth"])[1]
        listed = client.get(f"/tenants/{tenant.id}/memories", headers={"Authorization": f"Bearer {bob}"},
                            params={"scope": "conversation"})
        assert listed.status_code == 200 and listed.json() == []


def test_cli_remember_and_bundle_with_project(tenant: Any) -> None:
    """If ann remembers a project memory with ``reckon remember --scope project
    --project apollo``, then ``reckon bundle --project apollo`` shows it to her, not to bob."""
    from tests.cli.conftest import run_cli

    tenant.store.release()
    d = tenant.engine.data_dir
    r = run_cli(d, "remember", "--tenant", tenant.id, "--as", "ann", "--label", "CLI apollo note",
                "--content", "Apollo note from the CLI", "--kind", "fact", "--scope", "project",
                "--project", "apollo", "--importance", "4", "--json")
    assert r.code == 0, r.out + r.err
    mid = json.loads(r.out)["id"]
    r = run_cli(d, "bundle", "--tenant", tenant.id, "--as", "ann", "--project", "apollo", "--json")
    assert r.code == 0, r.out + r.err
    assert mid in {i["id"] for blk in json.loads(r.out)["blocks"] for i in blk["items"]}
    r = run_cli(d, "bundle", "--tenant", tenant.id, "--as", "bob", "--project", "apollo", "--json")
    assert r.code == 0, r.out + r.err
    assert mid not in {i["id"] for blk in json.loads(r.out)["blocks"] for i in blk["items"]}


def test_shapes_refuse_a_project_scope_memory_without_its_project(tenant: Any) -> None:
    """If a project-scoped memory without rk:project reaches the store (bypassing the
    model), then the shape rk:ProjectScopeProjectShape refuses it."""
    from pyoxigraph import Literal, NamedNode, Quad

    from reckon import vocab as V

    m = V.memory_iri(tenant.id, uuid.uuid4().hex)
    quads = [Quad(m, V.A, V.MEMORY, V.MEMORIES), Quad(m, V.LABEL, Literal("x"), V.MEMORIES),
             Quad(m, V.rk("kind"), V.rk("Fact"), V.MEMORIES), Quad(m, V.rk("scope"), V.rk("ProjectScope"), V.MEMORIES),
             Quad(m, V.rk("importance"), Literal("3", datatype=NamedNode(V.XSD + "integer")), V.MEMORIES),
             Quad(m, V.rk("source"), V.rk("Operator"), V.MEMORIES),
             Quad(m, V.rk("confidence"), Literal("1", datatype=NamedNode(V.XSD + "decimal")), V.MEMORIES),
             Quad(m, V.rk("createdAt"), Literal("2026-03-02T09:00:00Z", datatype=NamedNode(V.XSD + "dateTime")),
                  V.MEMORIES)]
    with pytest.raises(ShapeViolation, match="project"):
        with tenant.store.transaction() as txn:
            for q in quads:
                txn.add(q)


def unclocked(dump: bytes) -> list[bytes]:
    """A tenant dump without its in-graph clock line."""
    return [line for line in dump.splitlines() if b"core#clock> <https://reckon.dev/ns/core#now>" not in line]


def test_an_unknown_project_is_named_for_operators_and_members_on_every_path(tenant: Any) -> None:
    """If a project-scope memory names a project the tenant does not have (projects are
    made by ``Tenant.add_project``), then an operator and a member alike get InvalidInput
    naming it (field ``project``) -- never "not authorized" for a typo -- on
    ``remember``, ``remember_many``, the LLM tool, REST and the CLI, and the store is
    unchanged; removing a member from an unknown project is refused the same way."""
    from fastapi.testclient import TestClient

    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app
    from tests.cli.conftest import run_cli

    before = tenant.dump()
    for who in (OPS, ANN, BOB):
        with pytest.raises(InvalidInput, match="no project 'nosuch'") as e:
            tenant.remember(principal=who, scope="project", project="nosuch", **fact("typo", "a typo'd project"))
        assert e.value.field == "project"
        with pytest.raises(InvalidInput, match="no project 'nosuch'"):
            tenant.remember_many([dict(scope="user", **fact("ok", "a good one")),
                                  dict(scope="project", project="nosuch", **fact("typo", "a typo'd one"))],
                                 principal=who)
    r = tenant.handle_tool_call("remember", {"label": "Tool typo", "content": "typo", "kind": "fact",
                                             "scope": "project", "project": "nosuch", "importance": 4}, ANN)
    assert not r["ok"] and "no project 'nosuch'" in json.dumps(r), r
    assert tenant.dump() == before
    token = TokenStore(tenant.engine.data_dir).create(tenant.id, person="ann", teams=["growth"])[1]
    with TestClient(create_app(tenant.engine, rate_limit=None)) as client:
        resp = client.post(f"/tenants/{tenant.id}/memories", headers={"Authorization": f"Bearer {token}"},
                           json={"kind": "fact", "scope": "project", "project": "nosuch", "importance": 4,
                                 "label": "REST typo", "content": "typo"})
        assert resp.status_code in (400, 422) and "no project 'nosuch'" in resp.text, resp.text
    assert unclocked(tenant.dump()) == unclocked(before)  # (the server ticks the in-graph clock)
    with pytest.raises(InvalidInput, match="no project 'nosuch'"):
        tenant.remove_project_member("nosuch", "ann")
    assert unclocked(tenant.dump()) == unclocked(before)
    tenant.store.release()
    for who in (("--as", "dana", "--operator"), ("--as", "ann"), ("--as", "bob")):
        r = run_cli(tenant.engine.data_dir, "remember", "--tenant", tenant.id, *who, "--label", "CLI typo",
                    "--kind", "fact", "--scope", "project", "--project", "nope")
        assert r.code == 2 and "no project 'nope'" in r.err and "not authorized" not in r.err, (who, r.err)
    assert unclocked(tenant.dump()) == unclocked(before)
    # the project that exists still works, for its member and an operator
    assert tenant.remember(principal=ANN, scope="project", project="apollo", **fact("ok", "Apollo ok")).project \
        == "apollo"
