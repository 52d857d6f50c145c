"""rule: live-rank-key and rule: live-context-cap (rules/core.srl, seed 003 §8) at scale.

Ranking (documented in core.srl): higher rk:importance first; then more recent
rk:createdAt first (instants compared in UTC, whatever the time-zone offset); then the
lexically smaller IRI first. The expected order here is computed in Python from the
generated instants (integer microseconds since the epoch), independently of the rule's
string key and of any xsd:dateTime parsing.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon.datalog.evaluate import Reasoner

from .conftest import COMPANY, RK, T, assert_same_as_scratch, memory, objects, ttl

XSD_INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
MEM = "urn:reckon:acme:memory:"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
OFFSETS = [0, 60, -300, 330, 840, -720, 120]  # minutes


def fmt(micros: int, offset_min: int, rnd: random.Random) -> str:
    """The instant ``micros`` (since the epoch, UTC) written in ``offset_min``, with a
    randomly chosen (but value-preserving) fraction form."""
    local = EPOCH + timedelta(microseconds=micros) + timedelta(minutes=offset_min)
    frac = ""
    if local.microsecond:
        frac = "." + f"{local.microsecond:06d}".rstrip("0") + "0" * rnd.randint(0, 2)
    elif rnd.random() < 0.3:
        frac = "." + "0" * rnd.randint(1, 3)
    if offset_min == 0 and rnd.random() < 0.5:
        tz = "Z"
    else:
        sign = "-" if offset_min < 0 else "+"
        tz = f"{sign}{abs(offset_min) // 60:02d}:{abs(offset_min) % 60:02d}"
    return local.strftime("%Y-%m-%dT%H:%M:%S") + frac + tz


def members(r: Reasoner) -> set[str]:
    return {o.value for o in objects(r.inferred(), "rk:liveContext", "rk:liveMember")}


def ranked(cands: dict[str, tuple[int, int]]) -> list[str]:
    """IRIs by (importance desc, createdAt desc, IRI asc)."""
    return sorted(cands, key=lambda iri: (-cands[iri][0], -cands[iri][1], iri))


def population(n: int, seed: int) -> tuple[str, dict[str, tuple[int, int]]]:
    """Turtle for ``n`` live candidates (plus non-candidates) and their (importance,
    instant) by IRI. Instants repeat (written in other offsets) and importance ties."""
    rnd = random.Random(seed)
    base = 1_773_000_000_000_000  # 2026-03
    instants = [base + rnd.randrange(0, 30 * 86_400) * 1_000_000 + rnd.choice([0, 0, 500_000, 250_000, 1])
                for _ in range(max(1, n // 4))]
    text = []
    cands: dict[str, tuple[int, int]] = {}
    for i in range(n):
        name = f"c{rnd.getrandbits(24):06x}-{i}"
        imp = rnd.choice([4, 5, 5])
        at = rnd.choice(instants)
        cands[MEM + name] = (imp, at)
        text.append(memory(f"m:{name}", "rk:Memory", importance=imp, created=fmt(at, rnd.choice(OFFSETS), rnd)))
    for i in range(n // 10):  # never candidates: importance 3 or user scope
        at = fmt(rnd.choice(instants), 0, rnd)
        text.append(memory(f"m:low{i}", "rk:Memory", importance=3, created=at))
        text.append(memory(f"m:user{i}", "rk:Memory", scope="rk:UserScope", created=at))
    return "".join(text), cands


@pytest.fixture(scope="module")
def big(ruleset, schema_triples):
    text, cands = population(2000, seed=11)
    r = Reasoner(ruleset)
    r.load(schema_triples + ttl(COMPANY + text))
    return r, cands


def test_live_context_is_the_top_50_of_2000_candidates(big):
    """If 2,000 memories are live candidates and rk:liveContextCap is 50, then the live
    context is exactly the first 50 by (importance desc, createdAt desc in UTC, IRI asc)."""
    r, cands = big
    assert len(ranked(cands)) == 2000
    assert members(r) == set(ranked(cands)[:50])
    assert len(objects(r.inferred(), "rk:liveContext", "rk:liveMember")) == 50


def test_rank_keys_sort_in_ranking_order(big):
    """If every candidate has a rank node with an rk:liveRankKey, then sorting the keys as
    strings gives the documented ranking of all 2,000 candidates."""
    r, cands = big
    inferred = r.inferred()
    node_of = {t.object.value: t.subject for t in inferred  # company rank nodes (not stakeholder ones)
               if t.predicate.value == RK + "rankOf" and t.object.value in cands}
    key_of = {t.subject: t.object.value for t in inferred if t.predicate.value == RK + "liveRankKey"}
    keys = {m: key_of[node] for m, node in node_of.items()}
    assert len(key_of) == len(node_of) == 2000
    # the key is not a property of the memory (its derived status stays as it was)
    assert not any(t.predicate.value == RK + "liveRankKey" and t.subject.value in cands for t in inferred)
    assert set(keys) == set(cands)
    assert sorted(keys, key=keys.__getitem__) == ranked(cands)


def test_critical_insert_and_member_delete_at_2000(ruleset, schema_triples):
    """If a new Critical memory arrives, then it enters and the 50th member leaves; if a
    member is deleted, then the 51st candidate enters; both equal a fresh evaluation."""
    text, cands = population(2000, seed=5)
    r = Reasoner(ruleset)
    r.load(schema_triples + ttl(COMPANY + text))
    order = ranked(cands)
    newest = max(at for _, at in cands.values()) + 1
    delta = r.apply(insert=ttl(memory("m:critical", "rk:Memory", importance=5, created=fmt(newest, 330, random.Random(1)))))
    assert members(r) == {MEM + "critical"} | set(order[:49])
    assert T("rk:liveContext", "rk:liveMember", "m:critical") in delta.added
    assert ox.Triple(ox.NamedNode(RK + "liveContext"), ox.NamedNode(RK + "liveMember"), ox.NamedNode(order[49])) in delta.removed
    assert_same_as_scratch(r, ruleset)
    gone = order[0]
    r.apply(delete=[t for t in r.base() if t.subject == ox.NamedNode(gone)])
    assert members(r) == {MEM + "critical"} | set(order[1:50])
    assert_same_as_scratch(r, ruleset)


@pytest.fixture(scope="module")
def empty(ruleset, schema_triples):
    """A reasoner over the schema and the company, without rk:liveContextCap."""
    r = Reasoner(ruleset)
    r.load([t for t in schema_triples if t.predicate != ox.NamedNode(RK + "liveContextCap")] + ttl(COMPANY))
    return r


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), cap=st.integers(0, 8))
def test_small_populations_rank_as_documented(empty, ruleset, seed, n, cap):
    """If n candidates (ties in importance and instant, mixed offsets and fraction
    forms) and a cap are inserted, then the live context is the first cap of them by
    the ranking, and equals a fresh evaluation; deleting them empties it again."""
    text, cands = population(n, seed)
    added = ttl(text) + [T("rk:settings", "rk:liveContextCap", ox.Literal(str(cap), datatype=XSD_INTEGER))]
    try:
        empty.apply(insert=added)
        assert members(empty) == set(ranked(cands)[:cap])
        assert_same_as_scratch(empty, ruleset)
    finally:
        empty.apply(delete=added)
    assert members(empty) == set()
