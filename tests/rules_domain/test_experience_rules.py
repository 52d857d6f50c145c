"""rules/experience.srl: a strategy's success count and its promotion to a strategy card
at the tenant setting strategy_promotion_threshold (seed 000 Evolving Memory,
promotionAccessThreshold default 5).

Golden cases: premise (Turtle) -> the derived count and promotion; each also checked
equal to a fresh evaluation after incremental changes (a new success, a setting change,
a deleted success)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from .conftest import assert_same_as_scratch, ttl

XP = "https://reckon.dev/ns/experience#"
RK = "https://reckon.dev/ns/core#"
P = "@prefix xp: <https://reckon.dev/ns/experience#> . @prefix s: <urn:reckon:acme:strategy:> . @prefix x: <urn:reckon:acme:experience:> .\n"
XSD_INT = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
XSD_BOOL = ox.NamedNode("http://www.w3.org/2001/XMLSchema#boolean")


def strategy(local: str) -> str:
    return f's:{local} a xp:Strategy ; rdfs:label "{local}" ; xp:approachKey "{local}" .\n'


def runs(local: str, n: int, outcome: str = "xp:Success", start: int = 0) -> str:
    return "".join(f"x:{local}{i} a xp:Experience ; xp:task \"t{i}\" ; xp:outcome {outcome} ; "
                   f"xp:usedStrategy s:{local} .\n" for i in range(start, start + n))


def S(local: str) -> ox.NamedNode:
    return ox.NamedNode(f"urn:reckon:acme:strategy:{local}")


def count(local: str, n: int) -> ox.Triple:
    return ox.Triple(S(local), ox.NamedNode(XP + "successCount"), ox.Literal(str(n), datatype=XSD_INT))


def promoted(local: str) -> ox.Triple:
    return ox.Triple(S(local), ox.NamedNode(XP + "promoted"), ox.Literal("true", datatype=XSD_BOOL))


CASES = [
    ("strategy-success-count/none", strategy("a"), {count("a", 0)}, {promoted("a")}),
    ("strategy-success-count/failures-and-partials-do-not-count",
     strategy("a") + runs("a", 3) + runs("a", 4, "xp:Failure", start=3) + runs("a", 2, "xp:Partial", start=7),
     {count("a", 3)}, {count("a", 9), promoted("a")}),
    ("strategy-success-count/per-strategy", strategy("a") + strategy("b") + runs("a", 2) + runs("b", 1),
     {count("a", 2), count("b", 1)}, set()),
    ("strategy-promoted/below-threshold", strategy("a") + runs("a", 4), {count("a", 4)}, {promoted("a")}),
    ("strategy-promoted/at-threshold-5", strategy("a") + runs("a", 5), {count("a", 5), promoted("a")}, set()),
    ("strategy-promoted/above-threshold", strategy("a") + runs("a", 7), {count("a", 7), promoted("a")}, set()),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_golden(reason, ruleset, case):
    _, premise, derived, absent = case
    r = reason(P + premise)
    inf = r.inferred()
    assert derived <= inf, derived - inf
    assert not (absent & inf)
    assert_same_as_scratch(r, ruleset)


def test_promotion_follows_successes_and_the_setting_incrementally(reason, ruleset):
    """If a fifth success is added the strategy is promoted; if the threshold is raised
    to 6 it is not; lowered to 2 it is; if successes are deleted below it, it is not.
    Each step equals a fresh evaluation."""
    r = reason(P + strategy("a") + runs("a", 4))
    assert promoted("a") not in r.inferred()
    r.apply(insert=ttl(P + runs("a", 1, start=4)))
    assert {count("a", 5), promoted("a")} <= r.inferred()
    assert_same_as_scratch(r, ruleset)
    settings, threshold = ox.NamedNode(RK + "settings"), ox.NamedNode(XP + "promotionThreshold")
    five = [t for t in r.base() if t.subject == settings and t.predicate == threshold]
    assert [t.object.value for t in five] == ["5"]                       # the shipped default
    r.apply(delete=five, insert=[ox.Triple(settings, threshold, ox.Literal("6", datatype=XSD_INT))])
    assert promoted("a") not in r.inferred()
    assert_same_as_scratch(r, ruleset)
    r.apply(delete=[ox.Triple(settings, threshold, ox.Literal("6", datatype=XSD_INT))],
            insert=[ox.Triple(settings, threshold, ox.Literal("2", datatype=XSD_INT))])
    assert promoted("a") in r.inferred()
    gone = [t for t in ttl(P + runs("a", 4)) if True]
    r.apply(delete=gone)
    assert count("a", 1) in r.inferred() and promoted("a") not in r.inferred()
    assert_same_as_scratch(r, ruleset)
