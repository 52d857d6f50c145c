"""rules/events.srl: temporal order from the times, causal / entity / episode inverses,
and the transitive impact closure (seed 000 MAGMA, seed 004 Graph Memory).

Golden cases: each names the rule it checks, restates it as If/then, gives the premise
(Turtle) and the derived facts expected (and some that must not be derived); each is
also checked equal to a fresh evaluation after incremental maintenance."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from .conftest import assert_same_as_scratch, ttl

EV = "https://reckon.dev/ns/events#"
P = ("@prefix ev: <https://reckon.dev/ns/events#> . @prefix e: <urn:reckon:acme:event:> .\n"
     "@prefix x: <urn:reckon:acme:entity:> . @prefix tl: <urn:reckon:acme:timeline:> .\n")


def event(local: str, at: str, timeline: str = "run", extra: str = "") -> str:
    return (f'e:{local} a ev:Event ; rdfs:label "{local}" ; ev:at "{at}"^^xsd:dateTime ; '
            f"ev:timeline tl:{timeline} {extra} .\n")


def N(curie: str) -> ox.NamedNode:
    prefix, _, local = curie.partition(":")
    base = {"e": "urn:reckon:acme:event:", "x": "urn:reckon:acme:entity:"}[prefix]
    return ox.NamedNode(base + local)


def E(s: str, p: str, o: str) -> ox.Triple:
    return ox.Triple(N(s), ox.NamedNode(EV + p), N(o))


THREE = (event("a", "2026-03-01T09:00:00Z") + event("b", "2026-03-01T11:00:00.000001+02:00")
         + event("c", "2026-03-01T09:00:01Z"))  # b is 09:00:00.000001 UTC: a < b < c

CASES = [
    ("event-before", THREE,
     {E("e:a", "before", "e:b"), E("e:b", "before", "e:c"), E("e:a", "before", "e:c")},
     {E("e:b", "before", "e:a"), E("e:c", "before", "e:a")}),
    ("event-before/other-timeline-is-unordered", event("a", "2026-03-01T09:00:00Z")
     + event("z", "2026-03-02T09:00:00Z", timeline="other"),
     set(), {E("e:a", "before", "e:z"), E("e:z", "after", "e:a")}),
    ("event-before/same-instant-is-unordered", event("a", "2026-03-01T09:00:00Z")
     + event("b", "2026-03-01T10:00:00+01:00"),
     set(), {E("e:a", "before", "e:b"), E("e:b", "before", "e:a")}),
    ("event-after", THREE, {E("e:b", "after", "e:a"), E("e:c", "after", "e:a")}, {E("e:a", "after", "e:b")}),
    ("event-next", THREE, {E("e:a", "next", "e:b"), E("e:b", "next", "e:c")}, {E("e:a", "next", "e:c")}),
    ("event-next/ties-fan-out", event("a", "2026-03-01T09:00:00Z") + event("b1", "2026-03-01T10:00:00Z")
     + event("b2", "2026-03-01T10:00:00Z") + event("c", "2026-03-01T11:00:00Z"),
     {E("e:a", "next", "e:b1"), E("e:a", "next", "e:b2"), E("e:b1", "next", "e:c"), E("e:b2", "next", "e:c")},
     {E("e:a", "next", "e:c"), E("e:b1", "next", "e:b2")}),
    ("event-previous", THREE, {E("e:b", "previous", "e:a"), E("e:c", "previous", "e:b")},
     {E("e:c", "previous", "e:a")}),
    ("event-led-to", event("a", "2026-03-01T09:00:00Z") + event("b", "2026-03-01T10:00:00Z", extra="; ev:causedBy e:a"),
     {E("e:a", "ledTo", "e:b")}, {E("e:b", "ledTo", "e:a")}),
    ("entity-mentioned-in", event("a", "2026-03-01T09:00:00Z", extra="; ev:mentions x:person:caroline")
     + event("b", "2026-03-02T09:00:00Z", extra="; ev:mentions x:person:caroline"),
     {E("x:person:caroline", "mentionedIn", "e:a"), E("x:person:caroline", "mentionedIn", "e:b")}, set()),
    ("episode-contains", event("s", "2026-03-01T09:00:00Z", extra="; a ev:Episode")
     + event("a", "2026-03-01T09:00:00Z", extra="; ev:episode e:s"),
     {E("e:s", "contains", "e:a")}, {E("e:a", "contains", "e:s")}),
    ("affects-caused", event("a", "2026-03-01T09:00:00Z") + event("b", "2026-03-01T10:00:00Z", extra="; ev:causedBy e:a"),
     {E("e:a", "affects", "e:b")}, {E("e:b", "affects", "e:a")}),
    ("affects-dependent", "x:service:userservice a ev:Entity ; ev:dependsOn x:service:auth .\n",
     {E("x:service:auth", "affects", "x:service:userservice")}, {E("x:service:userservice", "affects", "x:service:auth")}),
    ("affects-transitive", "x:service:userservice a ev:Entity ; ev:dependsOn x:service:auth .\n"
     "x:service:billing a ev:Entity ; ev:dependsOn x:service:userservice .\n"
     + event("a", "2026-03-01T09:00:00Z") + event("b", "2026-03-01T10:00:00Z", extra="; ev:causedBy e:a")
     + event("c", "2026-03-01T11:00:00Z", extra="; ev:causedBy e:b"),
     {E("x:service:auth", "affects", "x:service:billing"), E("e:a", "affects", "e:c")},
     {E("x:service:billing", "affects", "x:service:auth"), E("e:c", "affects", "e:a")}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_golden(reason, ruleset, case):
    _, premise, derived, absent = case
    r = reason(P + premise)
    inf = r.inferred()
    assert derived <= inf, derived - inf
    assert not (absent & inf), absent & inf
    assert_same_as_scratch(r, ruleset)


def test_an_event_in_between_retracts_next_incrementally(reason, ruleset):
    """If an event at a time between ?a and ?b is added, then ?a ev:next ?b is retracted
    (the negation re-evaluates) and next runs through the new event; removing it again
    restores the edge. Equal to a fresh evaluation after each step."""
    r = reason(P + event("a", "2026-03-01T09:00:00Z") + event("c", "2026-03-01T11:00:00Z"))
    assert E("e:a", "next", "e:c") in r.inferred()
    middle = ttl(P + event("b", "2026-03-01T10:00:00Z"))
    r.apply(insert=middle)
    inf = r.inferred()
    assert E("e:a", "next", "e:c") not in inf and {E("e:a", "next", "e:b"), E("e:b", "next", "e:c")} <= inf
    assert_same_as_scratch(r, ruleset)
    r.apply(delete=middle)
    assert E("e:a", "next", "e:c") in r.inferred() and E("e:a", "next", "e:b") not in r.inferred()
    assert_same_as_scratch(r, ruleset)


def test_removing_a_cause_shrinks_the_impact_closure(reason, ruleset):
    """If the middle ev:causedBy of a chain a <- b <- c is retracted, then a no longer
    affects b or c (DRed removes the transitive facts it supported)."""
    chain = (event("a", "2026-03-01T09:00:00Z") + event("b", "2026-03-01T10:00:00Z")
             + event("c", "2026-03-01T11:00:00Z", extra="; ev:causedBy e:b"))
    r = reason(P + chain + 'e:b ev:causedBy e:a .')
    assert E("e:a", "affects", "e:c") in r.inferred()
    r.apply(delete=[ox.Triple(N("e:b"), ox.NamedNode(EV + "causedBy"), N("e:a"))])
    inf = r.inferred()
    assert E("e:a", "affects", "e:c") not in inf and E("e:a", "affects", "e:b") not in inf
    assert E("e:b", "affects", "e:c") in inf
    assert_same_as_scratch(r, ruleset)
