"""Property: the bundle's personal, team, project and conversation items are exactly the
live members the rules derive per stakeholder (rules/core.srl live-candidate-user,
live-candidate-team, live-candidate-project, live-candidate-conversation,
stakeholder-live-cap), kept right by incremental maintenance through any history of
``Tenant.*`` writes: remember, supersede, delete (retire), expiry by the clock, an
importance change, a change of the ``live_context_cap`` setting, and a change of who
takes part: a participant added, a turn recorded (its speaker takes part), a project
member added or removed.

The oracle restates the rules in plain Python from what the test wrote: for a principal,
the company's first ``cap`` candidates, their own first ``cap`` user-scope candidates and,
for each of their teams, that team's first ``cap`` team-scope candidates (a candidate is
active -- not superseded, not deleted, not expired -- with importance >= 4 and confidence
>= 0.5; the order is importance desc, createdAt desc, IRI asc), plus the turn's project's
when they are a member and the turn's conversation's when they take part. Two principals
are checked after every step, each for several turns (project and conversation given,
one of them, neither, and a conversation nobody took part in at first): ``ann`` (team
t1, member of p1, participant of c2) and ``bob`` (teams t1, t2, member of p2, participant
of c1), who share t1. The bundle keeps its parts across turns and generations
(``TenantRecall._prepared_for``); the oracle keeps nothing.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reckon.api import Engine, Principal

OPS = Principal.operator(person="dana")
ANN = Principal(person="ann", teams=["t1"])
BOB = Principal(person="bob", teams=["t1", "t2"])
NOW = datetime(2026, 3, 23, 6, tzinfo=UTC)
EXAMPLES = int(os.environ.get("RECKON_PROPERTY_EXAMPLES", "8"))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):  # type: ignore[no-untyped-def]
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    yield Engine(tmp_path_factory.mktemp("live-scopes"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


def _label() -> str:
    # unique tokens: the lexical conflict judge never pairs two of them
    return f"{uuid.uuid4().hex[:12]} {uuid.uuid4().hex[:12]}"


@dataclass
class OM:
    scope: str
    owner: str | None
    teams: list[str]
    link: str | None
    importance: int
    confidence: float
    created: datetime
    iri: str
    expires: datetime | None = None
    gone: bool = False  # superseded or deleted


@dataclass
class Oracle:
    clock: datetime = NOW
    cap: int = 50
    ms: dict[str, OM] = field(default_factory=dict)
    projects: dict[str, set[str]] = field(default_factory=lambda: {"ann": {"p1"}, "bob": {"p2"}})
    convs: dict[str, set[str]] = field(default_factory=lambda: {"ann": {"c2"}, "bob": {"c1"}})

    def candidate(self, m: OM) -> bool:
        return (not m.gone and (m.expires is None or m.expires > self.clock)
                and m.importance >= 4 and m.confidence >= 0.5)

    def top(self, pred: Any) -> set[str]:
        cands = [i for i, m in self.ms.items() if self.candidate(m) and pred(m)]
        cands.sort(key=lambda i: (-self.ms[i].importance, -self.ms[i].created.timestamp(), self.ms[i].iri))
        return set(cands[:self.cap])

    def bundle(self, p: Principal, project: str | None, conversation: str | None) -> set[str]:
        out = self.top(lambda m: m.scope == "company")
        out |= self.top(lambda m: m.scope == "user" and m.owner == p.person)
        for t in p.teams:
            out |= self.top(lambda m, t=t: m.scope == "team" and t in m.teams)
        if project in self.projects[p.person]:
            out |= self.top(lambda m: m.scope == "project" and m.link == project)
        if conversation in self.convs[p.person]:
            out |= self.top(lambda m: m.scope == "conversation" and m.link == conversation)
        return out


# the turns every principal is checked for after each step: c3 has no participant at first
TURNS = [("p1", "c1"), (None, None), ("p2", "c2"), (None, "c3"), ("p1", None), (None, "c1")]


WHERE = st.sampled_from(["user:ann", "user:bob", "team:t1", "team:t2", "team:t1+t2", "company",
                         "project:p1", "project:p2", "conversation:c1", "conversation:c2", "conversation:c3"])
WHO = st.sampled_from(["ann", "bob"])
ADD = st.tuples(st.just("add"), WHERE, st.integers(2, 5), st.sampled_from([0.3, 0.5, 0.9, 1.0]),
                st.sampled_from([None, None, 2, 5]))
step = st.one_of(
    ADD, ADD, ADD, ADD,  # a write in about every third step: most histories hold every scope's candidates
    st.tuples(st.just("supersede"), st.integers(0, 50), st.integers(2, 5)),
    st.tuples(st.just("retire"), st.integers(0, 50)),
    st.tuples(st.just("importance"), st.integers(0, 50), st.integers(1, 5)),
    st.tuples(st.just("tick"), st.integers(1, 4)),
    st.tuples(st.just("cap"), st.integers(0, 4)),
    st.tuples(st.just("participant"), WHO, st.sampled_from(["c1", "c2", "c3"])),
    st.tuples(st.just("turn"), WHO, st.sampled_from(["c1", "c2", "c3"])),
    st.tuples(st.just("member"), WHO, st.sampled_from(["p1", "p2"])),
    st.tuples(st.just("unmember"), WHO, st.sampled_from(["p1", "p2"])),
)


def _who(m: OM) -> Principal:
    if m.scope == "user":
        return Principal(person=m.owner or "", teams=[])
    return OPS


_n = iter(range(100_000))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(step, min_size=4, max_size=16))
# every scope's candidates, then who takes part changes under bundles kept across turns
@example(steps=[("add", "project:p1", 5, 1.0, None), ("add", "conversation:c3", 4, 0.9, None),
                ("add", "conversation:c1", 5, 1.0, 5), ("add", "project:p2", 4, 0.5, None),
                ("turn", "ann", "c3"), ("member", "bob", "p1"), ("participant", "bob", "c3"),
                ("unmember", "ann", "p1"), ("add", "project:p1", 4, 1.0, None), ("member", "ann", "p2"),
                ("tick", 3), ("cap", 0), ("cap", 2), ("add", "team:t1", 5, 1.0, None)])
def test_personal_and_team_live_members_follow_every_write(engine, steps):  # type: ignore[no-untyped-def]
    t = engine.create_tenant(f"ls{next(_n)}")
    t.tick(NOW)
    t.add_person("ann", teams=["t1"])
    t.add_person("bob", teams=["t1", "t2"])
    t.add_project("p1", members=["ann"])
    t.add_project("p2", members=["bob"])  # bob's other project: never in a p1 bundle
    t.add_participant("c1", "bob")
    t.add_participant("c2", "ann")
    o = Oracle()
    ids: list[str] = []

    def write(where: str, importance: int, confidence: float, days: int | None) -> None:
        scope, _, who = where.partition(":")
        fields: dict[str, Any] = dict(kind="fact", scope=scope, importance=importance, label=_label(),
                                      content=_label(), confidence=confidence)
        if days is not None:
            fields["expires_at"] = o.clock + timedelta(days=days, microseconds=829040)
        if scope == "user":
            m = t.remember(principal=Principal(person=who), source="agent_tool", **fields)
        elif scope in ("project", "conversation"):
            m = t.remember(principal=OPS, source="operator", **{scope: who}, **fields)
        else:
            teams = who.split("+") if scope == "team" else []
            m = t.remember(principal=OPS, source="operator", teams=teams or None, **fields)
        o.ms[m.id] = OM(scope, m.owner, list(m.teams), m.project or m.conversation, importance, confidence,
                        m.created_at, m.iri, fields.get("expires_at"))  # type: ignore[arg-type]
        ids.append(m.id)

    try:
        for i, s in enumerate(steps):
            kind = s[0]
            live = [x for x in ids if not o.ms[x].gone]
            if kind == "add":
                write(*s[1:])
            elif kind == "supersede" and live:
                old = o.ms[live[s[1] % len(live)]]
                mid = live[s[1] % len(live)]
                fields = dict(kind="fact", scope=old.scope, importance=s[2], label=_label(), content=_label(),
                              source="agent_tool" if old.scope == "user" else "operator")
                if old.scope == "team":
                    fields["teams"] = old.teams
                if old.scope in ("project", "conversation"):
                    fields[old.scope] = old.link
                new = t.supersede(mid, fields, principal=_who(old))
                old.gone = True
                o.ms[new.id] = OM(old.scope, new.owner, list(new.teams), old.link, s[2], float(new.confidence),
                                  new.created_at, new.iri)  # type: ignore[arg-type]
                ids.append(new.id)
            elif kind == "retire" and live:
                mid = live[s[1] % len(live)]
                t.delete(mid, principal=OPS)
                o.ms[mid].gone = True
            elif kind == "importance" and live:
                mid = live[s[1] % len(live)]
                t.update(mid, principal=OPS, importance=s[2])
                o.ms[mid].importance = s[2]
            elif kind == "tick":
                o.clock = o.clock + timedelta(days=s[1])
                t.tick(o.clock)
            elif kind == "cap":
                t.set_setting("live_context_cap", s[1])
                o.cap = s[1]
            elif kind == "participant":
                t.add_participant(s[2], s[1])
                o.convs[s[1]].add(s[2])
            elif kind == "turn":  # the speaker takes part (ag:participant)
                t.record_turn(s[2], f"turn {i}: {_label()}", principal=Principal(person=s[1]))
                o.convs[s[1]].add(s[2])
            elif kind == "member":
                t.add_project(s[2], members=[s[1]])
                o.projects[s[1]].add(s[2])
            elif kind == "unmember" and s[2] in o.projects[s[1]]:
                t.remove_project_member(s[2], s[1])
                o.projects[s[1]].discard(s[2])
            for p in (ANN, BOB):
                for project, conversation in TURNS:
                    b = t.context(p, budget_chars=100_000, project=project, conversation_id=conversation)
                    assert set(b.ids()) == o.bundle(p, project, conversation), (i, s, p.person, project, conversation)
    finally:
        t.engine.delete_tenant(t.id)


def test_capped_counts_per_scope(engine):  # type: ignore[no-untyped-def]
    """If ann has 4 eligible personal memories and t1 has 3 team memories under a cap of 2,
    then ann's bundle holds 2 of each, newest first, and ``capped`` says 2 user and 1
    team item were left out; bob (also in t1) sees the same 2 team items and none of
    ann's."""
    t = engine.create_tenant(f"ls{next(_n)}")
    t.tick(NOW)
    t.add_person("ann", teams=["t1"])
    t.add_person("bob", teams=["t1", "t2"])
    t.set_setting("live_context_cap", 2)
    mine = [t.remember(principal=ANN, source="agent_tool", kind="fact", scope="user", importance=4,
                       label=_label(), content=_label()) for _ in range(4)]
    team = [t.remember(principal=OPS, source="operator", kind="fact", scope="team", teams=["t1"],
                       importance=5, label=_label(), content=_label()) for _ in range(3)]
    b = t.context(ANN, budget_chars=100_000)
    newest = sorted(mine, key=lambda m: (-m.created_at.timestamp(), m.iri))[:2]
    newest_team = sorted(team, key=lambda m: (-m.created_at.timestamp(), m.iri))[:2]
    assert set(b.ids()) == {m.id for m in newest + newest_team}
    assert b.capped == {"user": 2, "team": 1}
    bb = t.context(BOB, budget_chars=100_000)
    assert set(bb.ids()) == {m.id for m in newest_team}
    assert bb.capped == {"team": 1}
    t.engine.delete_tenant(t.id)
