"""rules/core.srl: subclass membership, supersession, active memories against the
in-graph clock, and the capped live context (seed 003 §7-§9).

Each test names the rule it checks and restates it as If/then (OWL-RL style)."""

from __future__ import annotations

import random

import pyoxigraph as ox

from reckon.datalog.evaluate import Reasoner
from reckon.datalog.loader import load_rules
from reckon.schema import load_schema

from .conftest import COMPANY, N, T, assert_same_as_scratch, dec, dt, memory, objects, ttl

RDFS_SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"


def members(r: Reasoner) -> set[str]:
    """Local names of the live-context members."""
    return {o.value.rsplit(":", 1)[-1] for o in objects(r.inferred(), "rk:liveContext", "rk:liveMember")}


def active(r: Reasoner, node: str) -> bool:
    return N("rk:ActiveMemory") in objects(r.inferred(), node, "a")


# -- subclass membership ----------------------------------------------------------------


def test_memory_membership(reason):
    """If ?m a mk:BudgetConstraintMemory and that class is a subclass of rk:Memory, then ?m a rk:Memory."""
    r = reason(memory("m:b", "mk:BudgetConstraintMemory"))
    assert N("rk:Memory") in objects(r.inferred(), "m:b", "a")


def test_memory_membership_three_levels_deep(tmp_path, schema_triples):
    """If a class sits three subClassOf steps below rk:Memory, then its instances are
    rk:Memory and members of every class in between (subclass-transitive +
    memory-class-membership), with no change to the rules."""
    (tmp_path / "seo.ttl").write_text(
        """@prefix ex: <https://example.org/seo#> . @prefix rk: <https://reckon.dev/ns/core#> .
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
        ex:Channel rdfs:subClassOf rk:Memory . ex:Search rdfs:subClassOf ex:Channel .
        ex:KeywordTarget rdfs:subClassOf ex:Search ."""
    )
    schema = load_schema(tmp_path / "seo.ttl")
    r = Reasoner(load_rules(*schema.rule_files))
    r.load(schema.triples() + ttl(COMPANY + memory("m:kw", "<https://example.org/seo#KeywordTarget>")))
    types = {o.value for o in objects(r.inferred(), "m:kw", "a")}
    assert {
        "https://reckon.dev/ns/core#Memory",
        "https://example.org/seo#Channel",
        "https://example.org/seo#Search",
        "https://reckon.dev/ns/core#ActiveMemory",
        "https://reckon.dev/ns/core#LiveCandidate",
    } <= types
    closure = ox.Triple(
        ox.NamedNode("https://example.org/seo#KeywordTarget"), ox.NamedNode(RDFS_SUBCLASS), N("rk:Memory")
    )
    assert closure in r.inferred()


def test_non_memory_instances_are_not_memories(reason):
    """If ?x is only a mk:KpiValue, then it is not a rk:Memory."""
    r = reason('acme:kpi a mk:KpiValue ; mk:metric mk:ROAS ; mk:value "1"^^xsd:decimal .')
    assert objects(r.inferred(), "urn:reckon:acme:kpi", "a") == set()


# -- supersession ------------------------------------------------------------------------


def test_supersedes_inverse_and_superseded_memory_is_inactive(reason, ruleset):
    """If ?old rk:supersededBy ?new, then ?new rk:supersedes ?old and ?old is not active."""
    r = reason(memory("m:old", "rk:Memory") + memory("m:new", "rk:Memory"))
    assert active(r, "m:old") and active(r, "m:new")
    r.apply(insert=[T("m:old", "rk:supersededBy", "m:new")])
    inf = r.inferred()
    assert objects(inf, "m:new", "rk:supersedes") == {N("m:old")}
    assert not active(r, "m:old") and active(r, "m:new")
    assert "old" not in members(r) and "new" in members(r)
    assert_same_as_scratch(r, ruleset)


def test_restoring_a_superseded_memory(reason, ruleset):
    """If the supersededBy triple is deleted, then the old memory is active again and the
    derived forward pointer is gone."""
    r = reason(memory("m:old", "rk:Memory", extra="rk:supersededBy m:new") + memory("m:new", "rk:Memory"))
    assert not active(r, "m:old")
    r.apply(delete=[T("m:old", "rk:supersededBy", "m:new")])
    assert active(r, "m:old")
    assert objects(r.inferred(), "m:new", "rk:supersedes") == set()
    assert_same_as_scratch(r, ruleset)


def test_superseded_by_persists_when_newer_memory_is_deleted(reason):
    """If the newer memory's triples are deleted, the old memory stays superseded (the
    asserted pointer lives on the old node); if the old memory is deleted, the derived
    forward pointer vanishes with it (seed 003 §9)."""
    r = reason(memory("m:old", "rk:Memory", extra="rk:supersededBy m:new") + memory("m:new", "rk:Memory"))
    r.apply(delete=[t for t in r.base() if t.subject == N("m:new")])
    assert not active(r, "m:old")
    r = reason(memory("m:old", "rk:Memory", extra="rk:supersededBy m:new") + memory("m:new", "rk:Memory"))
    assert objects(r.inferred(), "m:new", "rk:supersedes") == {N("m:old")}
    r.apply(delete=[t for t in r.base() if t.subject == N("m:old")])
    assert objects(r.inferred(), "m:new", "rk:supersedes") == set()
    assert active(r, "m:new")


# -- expiry against the clock ------------------------------------------------------------


def test_active_before_expiry_and_clock_tick(reason, ruleset):
    """If rk:expiresAt is later than rk:clock rk:now, then active; once the clock ticks
    past it, not active (and out of the live context)."""
    r = reason(memory("m:promo", "rk:Memory", extra='rk:expiresAt "2026-04-01T00:00:00Z"^^xsd:dateTime'))
    assert active(r, "m:promo") and "promo" in members(r)
    r.apply(
        insert=[T("rk:clock", "rk:now", dt("2026-04-02T06:00:00Z"))],
        delete=[T("rk:clock", "rk:now", dt("2026-03-23T06:00:00Z"))],
    )
    assert not active(r, "m:promo") and "promo" not in members(r)
    assert_same_as_scratch(r, ruleset)


def test_expiry_equal_to_now_is_expired(reason):
    """If rk:expiresAt equals rk:now, then the memory is no longer active (expiresAt > now)."""
    r = reason(memory("m:x", "rk:Memory", extra='rk:expiresAt "2026-03-23T06:00:00Z"^^xsd:dateTime'))
    assert not active(r, "m:x")


def test_without_a_clock_expiring_memories_are_inactive(reason):
    """If there is no rk:clock rk:now, then a memory with an expiry is not active; one
    without expiry still is."""
    r = reason(
        "acme:company a rk:Company .\n"
        + memory("m:exp", "rk:Memory", extra='rk:expiresAt "2030-01-01T00:00:00Z"^^xsd:dateTime')
        + memory("m:forever", "rk:Memory"),
        company=False,
    )
    assert not active(r, "m:exp") and active(r, "m:forever")


# -- live context ---------------------------------------------------------------------------


def test_live_candidate_filters(reason):
    """If a memory is active, company-scoped, importance >= 4 and confidence >= 0.5, then
    it is in the live context; user scope, importance 3 or confidence 0.4 keep it out."""
    r = reason(
        memory("m:ok", "rk:Memory", importance=4)
        + memory("m:user", "rk:Memory", scope="rk:UserScope")
        + memory("m:medium", "rk:Memory", importance=3)
        + memory("m:unsure", "rk:Memory", confidence="0.4")
        + memory("m:floor", "rk:Memory", confidence="0.5")
    )
    assert members(r) == {"ok", "floor"}
    assert objects(r.inferred(), "m:user", "a") >= {N("rk:ActiveMemory")}


def _candidates() -> str:
    # importance desc, then createdAt desc, then IRI asc:
    #   c5 (5, 03-05), c4 (5, 03-01), [c3a, c3b] (4, 03-09, tie -> IRI order), c2 (4, 03-02)
    return (
        memory("m:c2", "rk:Memory", importance=4, created="2026-03-02T00:00:00Z")
        + memory("m:c3b", "rk:Memory", importance=4, created="2026-03-09T00:00:00Z")
        + memory("m:c3a", "rk:Memory", importance=4, created="2026-03-09T00:00:00Z")
        + memory("m:c4", "rk:Memory", importance=5, created="2026-03-01T00:00:00Z")
        + memory("m:c5", "rk:Memory", importance=5, created="2026-03-05T00:00:00Z")
    )



def test_live_context_cap_is_deterministic(reason, ruleset):
    """If more candidates than rk:liveContextCap exist, then the live context keeps the
    first cap of them by (importance desc, createdAt desc, IRI asc)."""
    r = reason(_candidates())
    assert members(r) == {"c2", "c3a", "c3b", "c4", "c5"}  # default cap 50
    expected = {
        1: {"c5"},
        2: {"c5", "c4"},
        3: {"c5", "c4", "c3a"},
        4: {"c5", "c4", "c3a", "c3b"},
        0: set(),
    }
    current = ox.Literal("50", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
    for cap, want in expected.items():
        lit = ox.Literal(str(cap), datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
        r.apply(insert=[T("rk:settings", "rk:liveContextCap", lit)], delete=[T("rk:settings", "rk:liveContextCap", current)])
        current = lit
        assert members(r) == want, cap
        assert_same_as_scratch(r, ruleset)


def test_live_context_cap_ignores_insertion_order(ruleset, schema_triples):
    """If the same triples are loaded in any order, then the capped live context is the same."""
    cap3 = ox.Literal("3", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
    cap50 = ox.Literal("50", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
    base = [t for t in schema_triples if t != T("rk:settings", "rk:liveContextCap", cap50)]
    base += [T("rk:settings", "rk:liveContextCap", cap3)] + ttl(COMPANY + _candidates())
    seen = set()
    rnd = random.Random(7)
    for _ in range(3):
        rnd.shuffle(base)
        r = Reasoner(ruleset)
        r.load(base)
        seen.add(frozenset(members(r)))
    assert seen == {frozenset({"c5", "c4", "c3a"})}


def test_new_higher_priority_candidate_pushes_out_the_last(reason, ruleset):
    """If a new Critical memory arrives at the cap, then it enters and the lowest-ranked
    member leaves."""
    cap50 = ox.Literal("50", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
    cap3 = ox.Literal("3", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))
    r = reason(_candidates())
    r.apply(insert=[T("rk:settings", "rk:liveContextCap", cap3)], delete=[T("rk:settings", "rk:liveContextCap", cap50)])
    assert members(r) == {"c5", "c4", "c3a"}
    delta = r.apply(insert=ttl(memory("m:c6", "rk:Memory", importance=5, created="2026-03-20T00:00:00Z")))
    assert members(r) == {"c6", "c5", "c4"}
    assert T("rk:liveContext", "rk:liveMember", "m:c3a") in delta.removed
    assert_same_as_scratch(r, ruleset)


def test_confidence_floor_is_data(reason, ruleset):
    """If rk:confidenceFloor is raised to 0.9, then a 0.8-confidence memory leaves the live context."""
    r = reason(memory("m:fairly-sure", "rk:Memory", confidence="0.8"))
    assert members(r) == {"fairly-sure"}
    r.apply(
        insert=[T("rk:settings", "rk:confidenceFloor", dec("0.9"))],
        delete=[T("rk:settings", "rk:confidenceFloor", dec("0.5"))],
    )
    assert members(r) == set()
    assert_same_as_scratch(r, ruleset)
