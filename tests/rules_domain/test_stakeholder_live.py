"""rule: live-candidate-user, live-candidate-team, stakeholder-rank-key and
stakeholder-live-cap (rules/core.srl, seed 003 §4, §8).

If/then: every stakeholder ?s (an owner person, a team) has ``?s rk:liveMember ?m`` for
exactly the first rk:liveContextCap of its candidates -- active memories of its scope
linked to it (rk:owner, rk:team), importance and confidence at the floors -- by
(importance desc, createdAt desc in UTC, IRI asc), the company rule's order. The expected
sets are computed here in Python from the generated values, independently of the rule's
string keys; incremental maintenance equals evaluation from scratch.
"""

from __future__ import annotations

import random

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon.datalog.evaluate import Reasoner

from .conftest import COMPANY, RK, T, assert_same_as_scratch, ttl
from .test_live_cap import EPOCH, OFFSETS, fmt  # noqa: F401 - shared instant formatting

XSD_INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
MEM = "urn:reckon:acme:memory:"
ACME = "urn:reckon:acme:"
# stakeholder IRIs where one is a prefix of another (the key partition must hold them apart)
PEOPLE = ["person:a", "person:ab", "person:b"]
TEAMS = ["team:x", "team:xy", "team:z"]
LIVE = ox.NamedNode(RK + "liveMember")


def population(n: int, seed: int) -> tuple[str, dict[str, dict]]:
    """Turtle for ``n`` memories of user / team / company scope with random importance,
    confidence, instants, owners and teams; and their facts by IRI."""
    rnd = random.Random(seed)
    base = 1_773_000_000_000_000
    instants = [base + rnd.randrange(0, 20 * 86_400) * 1_000_000 + rnd.choice([0, 500_000, 1])
                for _ in range(max(1, n // 3))]
    text = ["".join(f"acme:{p.replace(':', '-')} a rk:Person .\n" for p in PEOPLE)]
    facts: dict[str, dict] = {}
    for i in range(n):
        name = f"s{rnd.getrandbits(20):05x}-{i}"
        scope = rnd.choice(["user", "user", "team", "company"])
        imp = rnd.choice([2, 3, 4, 5, 5])
        conf = rnd.choice(["0.4", "0.5", "0.90", "1.0"])
        at = rnd.choice(instants)
        owner = rnd.choice(PEOPLE)
        teams = sorted(set(rnd.sample(TEAMS, rnd.randint(1, 2))))
        facts[MEM + name] = dict(scope=scope, imp=imp, conf=float(conf), at=at, owner=owner, teams=teams)
        links = f"rk:owner <{ACME}{owner}> ; " + "".join(f"rk:team <{ACME}{t}> ; " for t in teams)
        sc = {"user": "rk:UserScope", "team": "rk:TeamScope", "company": "rk:CompanyScope"}[scope]
        text.append(f"""m:{name} a rk:Memory ; rdfs:label "{name}" ; rk:kind rk:Fact ; rk:scope {sc} ;
    rk:importance {imp} ; rk:source rk:AgentTool ; rk:confidence "{conf}"^^xsd:decimal ;
    {links} rk:createdAt "{fmt(at, rnd.choice(OFFSETS), rnd)}"^^xsd:dateTime .
""")
    return "".join(text), facts


def expected(facts: dict[str, dict], cap: int, *, gone: set[str] = frozenset(),  # type: ignore[assignment]
             floor_imp: int = 4, floor_conf: float = 0.5) -> dict[str, set[str]]:
    """The oracle: per stakeholder IRI, the first ``cap`` candidates by the ranking."""
    groups: dict[str, list[str]] = {}
    for iri, f in facts.items():
        if iri in gone or f["imp"] < floor_imp or f["conf"] < floor_conf:
            continue
        if f["scope"] == "user":
            groups.setdefault(ACME + f["owner"], []).append(iri)
        elif f["scope"] == "team":
            for t in f["teams"]:
                groups.setdefault(ACME + t, []).append(iri)
    return {s: set(sorted(ms, key=lambda i: (-facts[i]["imp"], -facts[i]["at"], i))[:cap])
            for s, ms in groups.items() if cap > 0}


def members(r: Reasoner) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for t in r.inferred():
        if t.predicate == LIVE and t.subject.value != RK + "liveContext":
            out.setdefault(t.subject.value, set()).add(t.object.value)
    return out


@pytest.fixture(scope="module")
def empty(ruleset, schema_triples):
    """The schema and the company, without rk:liveContextCap (each example sets it)."""
    r = Reasoner(ruleset)
    r.load([t for t in schema_triples if t.predicate != ox.NamedNode(RK + "liveContextCap")] + ttl(COMPANY))
    return r


def _cap(n: int) -> ox.Triple:
    return T("rk:settings", "rk:liveContextCap", ox.Literal(str(n), datatype=XSD_INTEGER))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), cap=st.integers(0, 5), cap2=st.integers(0, 5))
def test_each_stakeholder_gets_its_top_cap(empty, ruleset, seed, n, cap, cap2):
    """If user, team and company memories and a cap are inserted, then each owner and
    each team has as live members the first cap of its candidates (a team memory counts
    for each of its teams; stakeholder IRIs that are prefixes of others stay apart);
    then after deleting some memories and changing the cap, the same holds, and each
    state equals a fresh evaluation."""
    text, facts = population(n, seed)
    added = ttl(text) + [_cap(cap)]
    rnd = random.Random(seed + 1)
    try:
        empty.apply(insert=added)
        assert members(empty) == {s: v for s, v in expected(facts, cap).items() if v}
        assert_same_as_scratch(empty, ruleset)
        gone = {i for i in facts if rnd.random() < 0.3}
        empty.apply(delete=[t for t in added if t.subject.value in gone])
        empty.apply(delete=[_cap(cap)], insert=[_cap(cap2)])
        assert members(empty) == {s: v for s, v in expected(facts, cap2, gone=gone).items() if v}
        assert_same_as_scratch(empty, ruleset)
    finally:
        empty.apply(delete=[t for t in empty.base() if t.subject.value.startswith(MEM)] + [_cap(cap), _cap(cap2)])
    assert members(empty) == {}


def test_stakeholder_rank_is_apart_from_the_company_context(reason):
    """If a user-scope Critical memory of dana exists, then dana has it as a live member
    and the company live context does not; its rank node is not the company one."""
    r = reason("""
m:mine a rk:Memory ; rdfs:label "mine" ; rk:kind rk:Fact ; rk:scope rk:UserScope ; rk:importance 5 ;
    rk:source rk:AgentTool ; rk:confidence "0.9"^^xsd:decimal ; rk:owner acme:person-dana ;
    rk:createdAt "2026-03-02T09:15:00Z"^^xsd:dateTime .
""")
    inf = r.inferred()
    assert T(ACME + "person-dana", "rk:liveMember", "m:mine") in inf
    assert T("rk:liveContext", "rk:liveMember", "m:mine") not in inf
    assert not any(t.predicate.value == RK + "liveRankKey" for t in inf)
