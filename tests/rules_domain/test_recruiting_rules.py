"""rules/recruiting.srl: time-to-fill status of hiring criteria (seed 003 §11)."""

from __future__ import annotations

import pyoxigraph as ox

from .conftest import N, T, assert_same_as_scratch, memory, objects

XSD_INT = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")

CRITERIA = memory(
    "m:sre-hiring", "rc:HiringCriteriaMemory",
    extra='rc:role acme:role-sre ; rc:targetDaysToFill 30 ; rc:requiredSkill "Kubernetes"',
)


def role(days: int, status: str = "rc:Open") -> str:
    return f'acme:role-sre a rc:Role ; rdfs:label "SRE" ; rc:daysOpen {days} ; rc:roleStatus {status} .\n'


def test_time_to_fill_overdue(reason):
    """If the role has been open 35 days against a 30-day target, then overdue."""
    inf = reason(CRITERIA + role(35)).inferred()
    assert objects(inf, "m:sre-hiring", "rc:timeToFillStatus") == {N("rc:Overdue")}
    assert {int(o.value) for o in objects(inf, "m:sre-hiring", "rc:currentDaysOpen")} == {35}


def test_time_to_fill_on_track_and_refresh(reason, ruleset):
    """If the role has been open 30 days (<= 30), then on track; when the pipeline moves it
    to 31, overdue."""
    r = reason(CRITERIA + role(30))
    assert objects(r.inferred(), "m:sre-hiring", "rc:timeToFillStatus") == {N("rc:OnTrack")}
    node = "urn:reckon:acme:role-sre"
    r.apply(insert=[T(node, "rc:daysOpen", ox.Literal("31", datatype=XSD_INT))],
            delete=[T(node, "rc:daysOpen", ox.Literal("30", datatype=XSD_INT))])
    assert objects(r.inferred(), "m:sre-hiring", "rc:timeToFillStatus") == {N("rc:Overdue")}
    assert_same_as_scratch(r, ruleset)


def test_filled_role_has_no_time_to_fill_status(reason):
    """If the role is filled, then no time-to-fill status is derived."""
    inf = reason(CRITERIA + role(90, "rc:Filled")).inferred()
    assert objects(inf, "m:sre-hiring", "rc:timeToFillStatus") == set()


def test_recruiting_memories_are_memories(reason):
    """If ?m a rc:CandidateAssessmentMemory, then ?m a rk:Memory and (company, Critical) live."""
    r = reason(memory("m:ada", "rc:CandidateAssessmentMemory", extra="rc:candidate acme:ada ; rc:rating 5"))
    inf = r.inferred()
    assert {N("rk:Memory"), N("rk:ActiveMemory")} <= objects(inf, "m:ada", "a")
    assert N("m:ada") in objects(inf, "rk:liveContext", "rk:liveMember")
