"""The SHACL fast path agrees with pySHACL (reckon.schema.validate) on conforming and
violating memory nodes; it is only trusted to say "conforms"."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal, NamedNode, Triple

from reckon.memory import _rdf as R
from reckon.schema import schema_from_graph, validate
from reckon.schema._fastshacl import FastShapes
from tests.memory.conftest import schema_quads

MK = "https://reckon.dev/ns/marketing#"
M = NamedNode("urn:reckon:acme:memory:" + "a" * 32)
P = NamedNode("urn:reckon:acme:person:ann")
T = NamedNode("urn:reckon:acme:team:growth")
DEC, INT = R.X_DECIMAL, R.X_INTEGER


def base(klass=R.MEMORY, scope="company"):
    ts = [
        Triple(M, R.A, klass), Triple(M, R.LABEL, Literal("x")), Triple(M, R.P_CONTENT, Literal("y")),
        Triple(M, R.P_KIND, R.KIND_IRI["fact"]), Triple(M, R.P_SCOPE, R.SCOPE_IRI[scope]),
        Triple(M, R.P_IMPORTANCE, Literal("3", datatype=INT)), Triple(M, R.P_SOURCE, R.SOURCE_IRI["operator"]),
        Triple(M, R.P_CONFIDENCE, Literal("1", datatype=DEC)),
        Triple(M, R.P_CREATED, Literal("2026-03-01T00:00:00Z", datatype=R.X_DATETIME)),
        Triple(M, R.P_AUTHOR, P), Triple(P, R.A, R.PERSON),
    ]
    if scope == "user":
        ts.append(Triple(M, R.P_OWNER, P))
    if scope == "team":
        ts += [Triple(M, R.P_TEAM, T), Triple(T, R.A, R.TEAM)]
    return ts


def budget(**over):
    props = {"platform": NamedNode(MK + "meta"), "amount": Literal("40000", datatype=DEC),
             "currency": Literal("USD"), "period": NamedNode(MK + "Monthly")}
    props.update(over)
    return base(NamedNode(MK + "BudgetConstraintMemory")) + [
        Triple(M, NamedNode(MK + k), v) for k, v in props.items() if v is not None]


def without(ts, pred):
    return [t for t in ts if t.predicate != pred]


CASES = {
    "plain company": base(),
    "user with owner": base(scope="user"),
    "team with team": base(scope="team"),
    "budget": budget(),
    "target": base(NamedNode(MK + "PerformanceTargetMemory")) + [
        Triple(M, NamedNode(MK + "metric"), NamedNode(MK + "ROAS")),
        Triple(M, NamedNode(MK + "targetValue"), Literal("3", datatype=DEC))],
    # violations
    "user without owner": without(base(scope="user"), R.P_OWNER),
    "team without team": without(base(scope="team"), R.P_TEAM),
    "no label": without(base(), R.LABEL),
    "two labels": base() + [Triple(M, R.LABEL, Literal("z"))],
    "importance 9": without(base(), R.P_IMPORTANCE) + [Triple(M, R.P_IMPORTANCE, Literal("9", datatype=INT))],
    "importance decimal": without(base(), R.P_IMPORTANCE) + [Triple(M, R.P_IMPORTANCE, Literal("3", datatype=DEC))],
    "confidence 2": without(base(), R.P_CONFIDENCE) + [Triple(M, R.P_CONFIDENCE, Literal("2", datatype=DEC))],
    "kind not a kind": without(base(), R.P_KIND) + [Triple(M, R.P_KIND, R.SCOPE_IRI["user"])],
    "owner not a person": base(scope="user") + [Triple(M, R.P_AUTHOR, T)],
    "naive datetime": without(base(), R.P_CREATED) + [
        Triple(M, R.P_CREATED, Literal("2026-03-01T00:00:00", datatype=R.X_DATETIME))],
    "budget lower-case currency": budget(currency=Literal("usd")),
    "budget negative": budget(amount=Literal("-1", datatype=DEC)),
    "budget integer amount": budget(amount=Literal("5", datatype=INT)),
    "budget no platform": budget(platform=None),
    "budget platform not a platform": budget(platform=NamedNode(MK + "Monthly")),
    "budget period literal": budget(period=Literal("monthly")),
}


@pytest.fixture(scope="module")
def shapes():
    triples = [Triple(q.subject, q.predicate, q.object) for q in schema_quads()]
    return FastShapes(triples), schema_from_graph(triples)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_path_agrees_with_pyshacl(shapes, name):
    fast, schema = shapes
    triples = CASES[name]
    full = [v for v in validate(triples, [M], schema=schema) if v["severity"] == "Violation"]
    verdict = fast.conforms(M, triples)
    assert verdict is not None, "the shipped shapes are inside the fast path's subset"
    assert verdict == (not full), (name, full)


def test_unknown_class_is_left_to_pyshacl(shapes):
    fast, _ = shapes
    ts = base(NamedNode("https://example.org/NoSuchClass"))
    assert fast.conforms(M, ts) is None
