"""rules/notes.srl: which keyed notes are live against the in-graph clock, and what each
namespace holds (seed 000 Transit: TTL-based expiry, namespace-level listing).

Golden cases: each names the rule it checks, restates it as If/then, gives the premise
(Turtle) and the derived facts expected (and those that must not be derived); then the
same facts are checked again after incremental maintenance (a clock tick, a delete)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from .conftest import assert_same_as_scratch, dt, ttl

NT = "https://reckon.dev/ns/notes#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
P = "@prefix nt: <https://reckon.dev/ns/notes#> . @prefix n: <urn:reckon:acme:note:project/p/> .\n"


def note(local: str, *, expires: str | None = None, deleted: str | None = None, ns: str = "plan") -> str:
    extra = ""
    if expires:
        extra += f' ; nt:expiresAt "{expires}"^^xsd:dateTime'
    if deleted:
        extra += f' ; nt:deletedAt "{deleted}"^^xsd:dateTime'
    return (f'n:{local} a nt:Note ; nt:key "project/p/{ns}/{local}" ; nt:version 1 ; '
            f'nt:inNamespace <urn:reckon:acme:note-namespace:p/{ns}>{extra} .\n')


def N(local: str) -> ox.NamedNode:
    return ox.NamedNode(f"urn:reckon:acme:note:project/p/{local}")


def typed(cls: str, local: str) -> ox.Triple:
    return ox.Triple(N(local), ox.NamedNode(RDF_TYPE), ox.NamedNode(NT + cls))


def holds(ns: str, local: str) -> ox.Triple:
    return ox.Triple(ox.NamedNode(f"urn:reckon:acme:note-namespace:p/{ns}"), ox.NamedNode(NT + "holds"), N(local))


# (case id, premise, derived, not derived); the clock is 2026-03-23T06:00:00Z (conftest COMPANY)
CASES = [
    ("note-live-without-expiry", note("a"),
     {typed("LiveNote", "a")}, {typed("ExpiredNote", "a")}),
    ("note-live-without-expiry/deleted-is-not-live", note("a", deleted="2026-03-20T00:00:00Z"),
     set(), {typed("LiveNote", "a"), typed("ExpiredNote", "a")}),
    ("note-live-before-expiry", note("b", expires="2026-03-23T06:00:00.000001Z"),
     {typed("LiveNote", "b")}, {typed("ExpiredNote", "b")}),
    ("note-live-before-expiry/other-offset", note("b", expires="2026-03-23T08:00:01+02:00"),
     {typed("LiveNote", "b")}, {typed("ExpiredNote", "b")}),
    ("note-expired/at-the-clock", note("c", expires="2026-03-23T06:00:00Z"),
     {typed("ExpiredNote", "c")}, {typed("LiveNote", "c")}),
    ("note-expired/other-offset", note("c", expires="2026-03-23T07:59:59+02:00"),
     {typed("ExpiredNote", "c")}, {typed("LiveNote", "c")}),
    ("note-expired/deleted-is-not-expired", note("c", expires="2026-03-01T00:00:00Z", deleted="2026-03-02T00:00:00Z"),
     set(), {typed("ExpiredNote", "c"), typed("LiveNote", "c")}),
    ("namespace-holds", note("a") + note("b", ns="findings") + note("c", expires="2026-03-01T00:00:00Z"),
     {holds("plan", "a"), holds("findings", "b")}, {holds("plan", "c")}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_golden(reason, ruleset, case):
    _, premise, derived, absent = case
    r = reason(P + premise)
    inf = r.inferred()
    assert derived <= inf
    assert not (absent & inf)
    assert_same_as_scratch(r, ruleset)


def test_note_live_before_expiry_without_clock_is_not_live(reason):
    """If there is no rk:clock rk:now, then a note with an expiry is neither live nor
    expired (like rule:active-before-expiry); one without an expiry is live."""
    r = reason(P + note("a") + note("b", expires="2030-01-01T00:00:00Z"), company=False)
    inf = r.inferred()
    assert typed("LiveNote", "a") in inf
    assert typed("LiveNote", "b") not in inf and typed("ExpiredNote", "b") not in inf


def test_clock_tick_expires_incrementally(reason, ruleset):
    """If the clock moves past nt:expiresAt, then the note stops being live, becomes
    expired and leaves its namespace's nt:holds: maintained incrementally, equal to a
    fresh evaluation."""
    r = reason(P + note("b", expires="2026-03-23T07:00:00Z"))
    assert {typed("LiveNote", "b"), holds("plan", "b")} <= r.inferred()
    clock = ox.NamedNode("https://reckon.dev/ns/core#clock")
    now = ox.NamedNode("https://reckon.dev/ns/core#now")
    r.apply(delete=[ox.Triple(clock, now, dt("2026-03-23T06:00:00Z"))],
            insert=[ox.Triple(clock, now, dt("2026-03-23T07:00:00Z"))])
    inf = r.inferred()
    assert typed("ExpiredNote", "b") in inf
    assert typed("LiveNote", "b") not in inf and holds("plan", "b") not in inf
    assert_same_as_scratch(r, ruleset)


def test_delete_retracts_liveness_incrementally(reason, ruleset):
    """If nt:deletedAt is asserted on a live note, then it is no longer live and its
    namespace no longer holds it."""
    r = reason(P + note("a"))
    r.apply(insert=ttl(P + 'n:a nt:deletedAt "2026-03-23T06:00:00Z"^^xsd:dateTime .'))
    inf = r.inferred()
    assert typed("LiveNote", "a") not in inf and holds("plan", "a") not in inf
    assert_same_as_scratch(r, ruleset)
