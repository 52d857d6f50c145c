"""Lifecycle maintenance through ``Tenant.maintain`` (issue 15 item 5; seed 000 "corpus
maintenance", seed 001 "salience decay", seed 004 ``pruneExpired``), and access and
feedback recorded by search and the bundle so that ranking uses them.

The 1,000-memory case: distinct memories (human-entered and auto-captured, personal and
company, four kinds) plus planted near-duplicates of some auto-captured ones; the job
runs twice; the oracle is what the test wrote: every human memory and every memory that
is not a planted duplicate stays active and retrievable, exactly the planted duplicates
are superseded (by their original), every removal is explained in ``history()``, and the
second run does nothing.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from reckon._errors import InvalidInput, UnknownMemory
from reckon.api import Engine, Principal
from tests.conftest import embedder_env

OPS = Principal.operator(person="dana", teams=["growth"])
ANN = Principal(person="ann", teams=["growth"])
ANN_OPS = Principal.operator(person="ann", teams=["growth"])  # a person typing their own memory
T0 = datetime(2026, 3, 2, 9, 15, 7, 123456, tzinfo=UTC)
KINDS = ["fact", "preference", "context", "objective"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with embedder_env("hashing"):
        yield Engine(tmp_path_factory.mktemp("maintain"), jobs=False)


_n = iter(range(10_000))


@pytest.fixture
def tenant(engine):
    t = engine.create_tenant(f"m{next(_n)}")
    t.add_team("growth")  # OPS's and ANN's team
    t.tick(T0)
    return t


def _words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(10**9):x}" for _ in range(n))


def test_a_thousand_memories_two_runs(tenant):
    rng = random.Random(15)
    items, human, auto = [], [], []
    for i in range(1000):
        is_human = i % 3 == 0
        user = i % 2 == 0
        d = dict(kind=KINDS[i % 4], scope="user" if user else "company", importance=rng.choice([2, 3, 4]),
                 source=("operator" if is_human else "extraction"),
                 label=f"memory {i} {_words(rng, 2)}", content=_words(rng, 40))
        items.append((d, (ANN_OPS if is_human else ANN) if user else OPS, is_human))
    written = []
    for chunk in range(0, len(items), 250):
        part = items[chunk:chunk + 250]
        ms = tenant.remember_many([d for d, _, _ in part], principal=[p for _, p, _ in part], conflicts="keep_both")
        written += [(m, h) for m, (_, _, h) in zip(ms, part)]
    assert all(m is not None for m, _ in written) and len({m.id for m, _ in written}) == 1000
    human = [m for m, h in written if h]
    auto = [m for m, h in written if not h]
    # near-duplicates of 40 auto-captured memories (a word more in the label and in the
    # content of 40: cosine ~0.98; the same label would be a restatement, merged at write
    # time), and human near-duplicates of 10 human memories (never touched)
    originals = auto[:40]
    dups = tenant.remember_many(
        [dict(kind=m.kind, scope=m.scope, importance=m.importance, source="extraction",
              label=m.label + " again", content=m.content + " also") for m in originals],
        principal=[ANN if m.scope == "user" else OPS for m in originals], conflicts="keep_both")
    human_twins = tenant.remember_many(
        [dict(kind=m.kind, scope=m.scope, importance=m.importance, source="operator",
              label=m.label + " again", content=m.content + " also") for m in human[:10]],
        principal=[ANN_OPS if m.scope == "user" else OPS for m in human[:10]], conflicts="keep_both")
    dup_of = {d.id: o.id for d, o in zip(dups, originals)}
    assert len(dup_of) == 40
    tenant.tick(T0 + timedelta(days=3))

    dry = tenant.maintain(dry_run=True)
    assert {a.memory for a in dry.actions if a.action == "dedup"} == set(dup_of)
    assert all(tenant.get(i).active for i in dup_of)  # a dry run writes nothing

    first = tenant.maintain()
    second = tenant.maintain()
    assert first.counts() == {"dedup": 40}
    assert {(a.memory, a.into) for a in first.actions} == set(dup_of.items())
    assert second.actions == []
    for d, o in dup_of.items():  # superseded by its original, explained in history
        h = {e.id: e for e in tenant.history(d)}
        assert h[d].superseded_by == [o] and h[o].event == "current", h
    keep = [m.id for m in human] + [m.id for m in auto] + [m.id for m in human_twins]
    assert len(keep) == 1010
    for mid in keep:
        assert tenant.get(mid).active, mid
    for m in rng.sample(human + auto, 25):  # retrievable by search
        who = ANN if m.scope == "user" else OPS
        hits = tenant.search(m.content, principal=who, k=5, importance="all")
        assert m.id in [h.memory.id for h in hits], m.label


def test_expired_working_memory_and_notes_are_purged_with_a_reason(tenant):
    exp = T0 + timedelta(hours=1)
    w = tenant.remember(kind="context", scope="user", importance=3, source="agent_tool", principal=ANN,
                        label="scratch: step 2", content="halfway through the import", subclass="WorkingMemory",
                        expires_at=exp)
    human_w = tenant.remember(kind="context", scope="company", importance=3, source="operator", principal=OPS,
                              label="ops scratch", content="typed by dana", subclass="WorkingMemory", expires_at=exp)
    live_w = tenant.remember(kind="context", scope="user", importance=3, source="agent_tool", principal=ANN,
                             label="scratch: next step", content="still going", subclass="WorkingMemory",
                             expires_at=T0 + timedelta(days=9))
    plain = tenant.remember(kind="fact", scope="user", importance=3, source="extraction", principal=ANN,
                            label="an expired fact", content="not working memory", expires_at=exp)
    tenant.notes.put("project/p/claims/job-1", {"by": "a"}, principal=ANN, ttl=60)
    tenant.tick(T0 + timedelta(days=1))
    r = tenant.maintain()
    assert r.counts() == {"purge_expired": 1, "purge_note": 1}
    [entry] = tenant.history(w.id)
    assert entry.event == "deleted" and entry.deleted_by == "reckon-maintenance"
    assert entry.deleted_reason.startswith("lifecycle: expired working memory")
    assert tenant.get(human_w.id).source == "operator"  # a human's, expired: kept
    assert tenant.get(live_w.id).active and tenant.get(plain.id) is not None
    assert tenant.notes.get("project/p/claims/job-1") is None
    assert tenant.maintain().actions == []


def test_capacity_evicts_the_least_salient_auto_captured_and_keeps_the_quality_floor(tenant):
    tenant.set_setting("capacity_per_scope_kind", 5)
    rng = random.Random(7)
    ms = [tenant.remember(kind="fact", scope="user", importance=3, source="extraction", principal=ANN,
                          label=f"fact {i} {_words(rng, 2)}", content=_words(rng, 12)) for i in range(8)]
    humans = [tenant.remember(kind="fact", scope="user", importance=2, source="operator", principal=ANN_OPS,
                              label=f"typed {i} {_words(rng, 2)}", content=_words(rng, 12)) for i in range(3)]
    # the two oldest are used: one searched five times (the quality floor), one rated +1
    for _ in range(5):
        assert [h.memory.id for h in tenant.search(ms[0].content, principal=ANN, importance="all", k=1)] == [ms[0].id]
    assert tenant.usage(ms[0].id)["access_count"] >= 5
    assert tenant.feedback(ms[1].id, 1, principal=ANN) == 1
    tenant.tick(T0 + timedelta(days=30))
    r = tenant.maintain()
    evicted = [a.memory for a in r.actions if a.action == "evict"]
    assert len(evicted) == 3 and not {ms[0].id, ms[1].id} & set(evicted)
    assert not {h.id for h in humans} & set(evicted)
    for mid in evicted:
        [e] = tenant.history(mid)
        assert e.event == "deleted" and "over capacity" in e.deleted_reason and "capacity_per_scope_kind 5" in (
            e.deleted_reason)
    assert len([m for m in tenant.memories() if m.source == "extraction"]) == 5
    assert tenant.maintain().actions == []


def test_search_and_bundle_record_access_and_feedback_moves_ranking(tenant):
    a = tenant.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=ANN,
                        label="report layout", content="weekly report as a table")
    b = tenant.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=ANN,
                        label="report format", content="weekly report as a table please")
    crit = tenant.remember(kind="fact", scope="user", importance=5, source="agent_tool", principal=ANN,
                           label="never email the board", content="board contact goes through dana")
    tenant.context(ANN)
    assert tenant.usage(crit.id)["access_count"] == 1
    before = [h.memory.id for h in tenant.search("weekly report table", principal=ANN, explain=True)]
    assert set(before[:2]) == {a.id, b.id}
    low = before[1]
    for _ in range(3):
        tenant.feedback(low, 1, principal=ANN)
    hits = tenant.search("weekly report table", principal=ANN, explain=True)
    assert hits[0].memory.id == low
    assert hits[0].explanation.feedback_boost > 1.0
    with pytest.raises(InvalidInput) as e:
        tenant.feedback(a.id, 2, principal=ANN)
    assert e.value.field == "vote"
    with pytest.raises(UnknownMemory):  # not Lee's to rate: absent
        tenant.feedback(a.id, 1, principal=Principal(person="lee"))
    with pytest.raises(UnknownMemory):
        tenant.feedback(uuid.uuid4().hex, 1, principal=ANN)
