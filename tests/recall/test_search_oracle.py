"""Properties: search's eligibility and top-k equal brute-force oracles.

* ``Tenant.search`` over any history of writes (remember in every scope, supersede,
  delete, an importance change) returns exactly the ranking of the eligible memories
  computed another way: eligibility restated in plain Python from what the test wrote
  (active -- not superseded, not deleted --, importance in the tiers asked for, of the
  kinds and scopes asked for, and company, or team of one of the principal's teams, or
  user owned by the principal; seed 003 §4 / §6), given to the index as ``allowed_ids``
  (its per-document path, not the column masks) and ranked with a top-k by a stable full
  sort of every row (not the partition over the eligible rows): same ids, same order,
  same scores.
* ``RecallIndex.filter_mask`` (team membership as a column, kept through add, update,
  swap-remove and a bulk load) equals the per-record rule.
* ``rank.ranks_from_scores`` equals a stable full sort, ties and NaN included.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reckon.recall.index as index_module
from reckon.api import Engine, Principal
from reckon.recall.embed import HashingEmbedder
from reckon.recall.index import RecallIndex
from reckon.recall.rank import ranks_from_scores
from tests.conftest import embedder_env

OPS = Principal.operator(person="dana")
PEOPLE = {"ann": ["t1"], "bob": ["t1", "t2"], "cat": []}
NOW = datetime(2026, 3, 23, 6, 14, 7, 829040, tzinfo=UTC)
EXAMPLES = int(os.environ.get("RECKON_PROPERTY_EXAMPLES", "8"))
WORDS = ["budget", "meta", "campaign", "roas", "launch", "spring", "cap", "spend", "report", "weekly"]


def full_sort_ranks(scores: np.ndarray, eligible: np.ndarray, depth: int) -> dict[int, int]:
    """The brute-force top-k: every row, ineligible and unscored ones at -inf, one stable
    sort by descending score (ties: lower position first)."""
    s = np.where(eligible & ~np.isnan(scores), scores, -np.inf)
    s = np.where(s > 0, s, -np.inf)
    take = min(depth, int(np.isfinite(s).sum()))
    return {int(p): r + 1 for r, p in enumerate(np.argsort(-s, kind="stable")[:take])}


# ------------------------------------------------------------------ ranks_from_scores

@settings(max_examples=300, deadline=None)
@given(vals=st.lists(st.sampled_from([np.nan, -1.0, 0.0, 0.5, 1.0, 1.0, 2.0, 2.5, 3.0]), min_size=0, max_size=300),
       seed=st.integers(0, 2**32 - 1), depth=st.integers(0, 40), dtype=st.sampled_from([np.float32, np.float64]))
def test_ranks_from_scores_is_a_stable_full_sort(vals: list[float], seed: int, depth: int, dtype: Any) -> None:
    rng = np.random.default_rng(seed)
    scores = np.array(vals, dtype=dtype)
    eligible = rng.random(len(vals)) < 0.7
    assert ranks_from_scores(scores, eligible, depth) == full_sort_ranks(scores, eligible, depth)


# ------------------------------------------------------------------ filter_mask

def rule(rec: Any, person: str, teams: list[str], tiers: set[int], kinds: set[str] | None,
         scopes: set[str] | None) -> bool:
    """The per-record rule filter_mask computes in columns."""
    vis = (rec.scope == "company" or (rec.scope == "user" and rec.owner == person)
           or (rec.scope == "team" and bool(set(rec.teams) & set(teams))))
    return (vis and rec.importance in tiers and (kinds is None or rec.kind in kinds)
            and (scopes is None or rec.scope in scopes))


DOC = st.tuples(st.sampled_from(["company", "team", "user", "project", None]),
                st.sampled_from([(), ("t1",), ("t2",), ("t1", "t2"), ("t2", "t3"), ("t3",)]),
                st.sampled_from(["ann", "bob", "cat", None]), st.integers(1, 5),
                st.sampled_from(["fact", "preference", None]))
OP = st.one_of(st.tuples(st.just("add"), DOC), st.tuples(st.just("remove"), st.integers(0, 60)),
               st.tuples(st.just("update"), st.integers(0, 60), DOC))


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(OP, min_size=1, max_size=60),
       person=st.sampled_from(sorted(PEOPLE) + ["zed"]),
       teams=st.sampled_from([[], ["t1"], ["t2"], ["t1", "t2"], ["t3", "t1"], ["t9"]]),
       tiers=st.sampled_from([{2, 3}, {2, 3, 4, 5}, {5}]),
       kinds=st.sampled_from([None, {"fact"}, {"preference", "fact"}]),
       scopes=st.sampled_from([None, {"team"}, {"company", "user"}, {"company", "team", "user"}]))
def test_filter_mask_is_the_per_record_rule(ops: list[Any], person: str, teams: list[str], tiers: set[int],
                                            kinds: set[str] | None, scopes: set[str] | None) -> None:
    idx = RecallIndex(None, embedder=HashingEmbedder(), autosave=False)
    ids: list[str] = []

    def fields(d: Any) -> dict[str, Any]:
        scope, tms, owner, imp, kind = d
        return dict(text=f"doc {len(ids)}", time=NOW, scope=scope, teams=tms, owner=owner, importance=imp, kind=kind)

    for op in ops:
        live = [i for i in ids if i in idx]
        if op[0] == "add":
            ids.append(f"m{len(ids)}")
            idx.add_many([dict(id=ids[-1], **fields(op[1]))], embed=False)
        elif op[0] == "remove" and live:
            idx.remove(live[op[1] % len(live)])
        elif op[0] == "update" and live:
            idx.update(live[op[1] % len(live)], **fields(op[2]))
    loaded = RecallIndex(None, embedder=HashingEmbedder(), autosave=False)
    live = idx.ids()
    loaded.load_records([idx.get(i) for i in live], None, None)
    for ix in (idx, loaded):
        mask = ix.filter_mask(importance=tiers, kinds=kinds, scopes=scopes, visible_to=(person, teams))
        rows = ix._row_ids  # noqa: SLF001 - the rows the mask is laid over
        got = {rows[r] for r in np.flatnonzero(mask)}
        assert mask.shape == (len(live),)
        assert got == {i for i in live if rule(ix.get(i), person, teams, tiers, kinds, scopes)}


# ------------------------------------------------------------------ Tenant.search

@pytest.fixture(scope="module")
def engine(tmp_path_factory):  # type: ignore[no-untyped-def]
    with embedder_env("hashing"):
        yield Engine(tmp_path_factory.mktemp("search-oracle"))


WHERE = st.sampled_from(["user:ann", "user:bob", "user:cat", "team:t1", "team:t2", "team:t1+t2", "team:t3",
                         "company"])
TEXT = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
STEP = st.one_of(
    st.tuples(st.just("add"), WHERE, st.integers(1, 5), st.sampled_from(["fact", "preference"]), TEXT),
    st.tuples(st.just("add"), WHERE, st.integers(1, 5), st.sampled_from(["fact", "preference"]), TEXT),
    st.tuples(st.just("supersede"), st.integers(0, 50), st.integers(2, 5), TEXT),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("importance"), st.integers(0, 50), st.integers(1, 5)),
)
QUERY = st.tuples(st.sampled_from(sorted(PEOPLE)), TEXT, st.integers(1, 12),
                  st.sampled_from([(2, 3), "all", (4, 5), [3]]),
                  st.sampled_from([None, ["fact"], ["preference"]]),
                  st.sampled_from([None, ["team"], ["company", "user"]]))
_n = iter(range(100_000))


def _who(scope: str, owner: str | None) -> tuple[Principal, str]:
    return (Principal(person=owner or ""), "agent_tool") if scope == "user" else (OPS, "operator")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(STEP, min_size=3, max_size=18), queries=st.lists(QUERY, min_size=1, max_size=4))
def test_tenant_search_is_the_brute_force_top_k_of_the_eligible(engine, steps, queries):  # type: ignore[no-untyped-def]
    t = engine.create_tenant(f"so{next(_n)}")
    t.tick(NOW)
    for p, teams in PEOPLE.items():
        t.add_person(p, teams=teams)
    t.add_team("t3")  # a team nobody is in: its memories are eligible for no one here
    ms: dict[str, dict[str, Any]] = {}  # id -> what the test wrote

    def put(m: Any, importance: int, kind: str) -> None:
        ms[m.id] = dict(scope=m.scope, owner=m.owner, teams=list(m.teams), importance=importance, kind=kind,
                        gone=False)

    try:
        for s in steps:
            live = [i for i, m in ms.items() if not m["gone"]]
            if s[0] == "add":
                _, where, imp, kind, text = s
                scope, _, who = where.partition(":")
                owner = who if scope == "user" else None
                p, source = _who(scope, owner)
                extra = {"teams": who.split("+")} if scope == "team" else {}
                # a unique label: no two memories are duplicates or conflicts of each other
                m = t.remember(principal=p, source=source, kind=kind, scope=scope, importance=imp,
                               label=f"{text} {uuid.uuid4().hex[:10]}", content=f"{text} notes", **extra)
                put(m, imp, kind)
            elif s[0] == "supersede" and live:
                mid = live[s[1] % len(live)]
                old = ms[mid]
                p, source = _who(old["scope"], old["owner"])
                f: dict[str, Any] = dict(kind=old["kind"], scope=old["scope"], importance=s[2], source=source,
                                         label=f"{s[3]} {uuid.uuid4().hex[:10]}", content=f"{s[3]} revised")
                if old["scope"] == "team":
                    f["teams"] = old["teams"]
                new = t.supersede(mid, f, principal=p)
                old["gone"] = True
                put(new, s[2], old["kind"])
            elif s[0] == "delete" and live:
                mid = live[s[1] % len(live)]
                t.delete(mid, principal=OPS)
                ms[mid]["gone"] = True
            elif s[0] == "importance" and live:
                mid = live[s[1] % len(live)]
                t.update(mid, principal=OPS, importance=s[2])
                ms[mid]["importance"] = s[2]
        t.search("warm up", principal=OPS, record_access=False)
        assert t.recall.wait(60)
        for person, text, k, importance, kinds, scopes in queries:
            who = Principal(person=person, teams=PEOPLE[person])
            tiers = ({2, 3, 4, 5} if importance == "all" else set(range(importance[0], importance[1] + 1))
                     if isinstance(importance, tuple) else set(importance))
            eligible = {i for i, m in ms.items()
                        if not m["gone"] and m["importance"] in tiers
                        and (kinds is None or m["kind"] in kinds) and (scopes is None or m["scope"] in scopes)
                        and (m["scope"] == "company" or (m["scope"] == "user" and m["owner"] == person)
                             or (m["scope"] == "team" and bool(set(m["teams"]) & set(who.teams))))}
            hits = t.search(text, principal=who, k=k, importance=importance, kinds=kinds, scopes=scopes,
                            now=NOW, record_access=False)
            got = [(h.memory.id, h.score) for h in hits]
            assert {i for i, _ in got} <= eligible
            assert len(got) == min(k, len(eligible))  # every eligible memory has a vector: ranked
            ix = t.recall.index
            qv = ix.query_vector(text)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(index_module, "ranks_from_scores", full_sort_ranks)
                want = [(h.id, h.score) for h in ix.index.search(text, limit=k, allowed_ids=eligible, now=NOW,
                                                                 query_vector=qv)]
            assert [i for i, _ in got] == [i for i, _ in want], (person, text, k, importance, kinds, scopes)
            assert np.allclose([s for _, s in got], [s for _, s in want], rtol=1e-9, atol=0.0)
            assert all(a >= b for (_, a), (_, b) in zip(got, got[1:]))
    finally:
        t.engine.delete_tenant(t.id)


def test_team_column_follows_a_swap_remove() -> None:
    """The last row moves into a removed row's slot: its team code moves with it."""
    idx = RecallIndex(None, embedder=HashingEmbedder(), autosave=False)
    idx.add_many([dict(id="a", text="a", time=NOW, scope="team", teams=("t1",)),
                  dict(id="b", text="b", time=NOW, scope="team", teams=("t2",)),
                  dict(id="c", text="c", time=NOW - timedelta(days=1), scope="team", teams=("t2", "t3"))],
                 embed=False)
    idx.remove("a")  # c moves to row 0
    rows = idx._row_ids  # noqa: SLF001
    for teams, want in ((["t1"], set()), (["t2"], {"b", "c"}), (["t3"], {"c"})):
        mask = idx.filter_mask(visible_to=("x", teams))
        assert {rows[r] for r in np.flatnonzero(mask)} == want
