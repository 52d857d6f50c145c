"""One SHACL validation per written node: ``Tenant.remember`` checks a new memory before
anything else is decided about it (so a bad write is refused before conflict detection),
and the store's write check (``TenantSchema.check_delta``, every asserted write) checks
every node the write changes at commit. The memory layer builds the very graph the
store's check builds for the memory (``TenantSchema.node_graph``), and a graph that
conformed once is not evaluated again, so the memory is evaluated once -- while every
node only the store's check looks at (a person the write creates) is still checked and
a violation there still refuses the write with the store unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon._errors import ShapeViolation
from reckon.api import Engine, Principal
from reckon.memory import _rdf as R
from reckon.schema._fastshacl import FastShapes
from reckon.schema.tenant import TenantSchema

OPS = Principal.operator(person="dana")
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
NAMED_PEOPLE = (  # a module shape: every person needs a name (no memory shape says so)
    "@prefix rk: <https://reckon.dev/ns/core#> . @prefix sh: <http://www.w3.org/ns/shacl#> .\n"
    "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    "<urn:ex:NamedPeople> a sh:NodeShape ; sh:targetClass rk:Person ;\n"
    "  sh:property [ sh:path rdfs:label ; sh:minCount 1 ; sh:message \"a person needs a name\" ] .\n"
)


def fact(**kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = dict(kind="fact", scope="company", importance=3, source="operator", principal=OPS,
                             label="Fiscal year", content="The fiscal year starts in April")
    d.update(kw)
    return d


class Spy:
    """Records every ``TenantSchema.validate`` call (focus, graph) and every evaluation
    of the compiled fast path (focus)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.validated: list[tuple[Any, frozenset[Triple]]] = []
        self.evaluated: list[Any] = []
        validate, conforms = TenantSchema.validate, FastShapes.conforms

        def spy_validate(schema: TenantSchema, focus: NamedNode, triples: Any) -> None:
            triples = list(triples)
            self.validated.append((focus, frozenset(triples)))
            validate(schema, focus, triples)

        def spy_conforms(fast: FastShapes, focus: NamedNode, triples: Any) -> bool | None:
            self.evaluated.append(focus)
            return conforms(fast, focus, triples)

        monkeypatch.setattr(TenantSchema, "validate", spy_validate)
        monkeypatch.setattr(FastShapes, "conforms", spy_conforms)


def test_a_new_memory_is_evaluated_once_in_the_graph_the_store_checks(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    t = Engine(tmp_path / "d").create_tenant("acme")
    t.add_team("growth")
    t.remember(**fact(label="warm", content="the operator's person node exists now"))
    spy = Spy(monkeypatch)
    for kw in (fact(), fact(scope="user", source="agent_tool", principal=Principal(person="ann"), label="Tea",
                    content="Ann drinks tea"),
               fact(scope="team", teams=["growth"], label="Standup", content="Growth meets at nine")):
        m = t.remember(**kw)
        focus = NamedNode(m.iri)
        calls = [g for f, g in spy.validated if f == focus]
        # the memory layer's check, then the store's check at commit: the same graph ...
        assert len(calls) == 2 and calls[0] == calls[1]
        graph = calls[0]
        # ... holding the memory's own triples and the types of what it links to
        assert {x for x in graph if x.subject == focus} == {
            Triple(focus, q.predicate, q.object) for q in t.store.asserted() if q.subject == focus}
        assert Triple(focus, R.P_KIND, R.KIND_IRI["fact"]) in graph
        author = next(x.object for x in graph if x.subject == focus and x.predicate == R.P_AUTHOR)
        assert Triple(author, R.A, R.PERSON) in graph
        assert all(x.predicate == R.A for x in graph if x.subject != focus)
        # ... evaluated once
        assert spy.evaluated.count(focus) == 1
        spy.validated.clear()
        spy.evaluated.clear()


def test_a_violation_only_the_store_check_sees_still_refuses_the_write(tmp_path: Path) -> None:
    t = Engine(tmp_path / "d").create_tenant("acme")
    shape = tmp_path / "named-people.ttl"
    shape.write_text(NAMED_PEOPLE)
    t.install_module(shape)
    dana = R.person_iri(t.id, "dana")
    with t.store.transaction() as txn:  # a named person (checked by the store's write check too)
        txn.add(Quad(dana, R.A, R.PERSON, R.MEMORIES))
        txn.add(Quad(dana, NamedNode(RDFS_LABEL), Literal("Dana"), R.MEMORIES))
    m = t.remember(**fact())
    assert [x.id for x in t.memories()] == [m.id]
    before = t.dump()
    # the memory itself conforms; the person node the write creates for its owner does not
    with pytest.raises(ShapeViolation, match="a person needs a name") as ei:
        t.remember(**fact(scope="user", source="agent_tool", principal=Principal(person="newcomer"), label="Coffee",
                          content="The newcomer drinks coffee"))
    assert str(ei.value.violations[0]["focus_node"]).endswith(":person:newcomer")
    assert t.dump() == before
    assert [x.id for x in t.memories()] == [m.id]
    with pytest.raises(ShapeViolation, match="a person needs a name"):  # and again: nothing was remembered
        t.remember(**fact(scope="user", source="agent_tool", principal=Principal(person="newcomer"), label="Coffee",
                          content="The newcomer drinks coffee"))
    assert t.dump() == before


def test_a_violating_graph_is_refused_every_time(tmp_path: Path) -> None:
    t = Engine(tmp_path / "d").create_tenant("acme")
    before = t.dump()
    bad = fact(kind="objective", subclass="BudgetConstraintMemory",
               properties={"platform": "meta", "amount": "-5", "currency": "USD", "period": "monthly"})
    for _ in range(3):  # only conforming graphs are remembered
        with pytest.raises(ShapeViolation) as ei:
            t.remember(**bad)
        assert ei.value.violations[0]["constraint"] == "sh:MinInclusiveConstraintComponent"
        assert t.dump() == before


def test_an_updated_memory_is_evaluated_once_in_the_graph_the_store_checks(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    t = Engine(tmp_path / "d").create_tenant("acme")
    t.add_team("growth")
    t.add_team("brand")
    plain = t.remember(**fact())
    team = t.remember(**fact(scope="team", teams=["growth"], label="Standup", content="Growth meets at nine"))
    budget = t.remember(**fact(kind="objective", subclass="BudgetConstraintMemory", label="Meta cap",
                               content="Keep Meta under $40k a month",
                               properties={"platform": "meta", "amount": "40000.00", "currency": "USD",
                                           "period": "monthly"}))
    spy = Spy(monkeypatch)
    for mid, change in ((plain.id, {"content": "The fiscal year starts in May"}),
                        (team.id, {"teams": ["growth", "brand"]}),
                        (budget.id, {"properties": {"amount": "45000.50"}, "importance": 4})):
        m = t.update(mid, principal=OPS, **change)
        focus = NamedNode(m.iri)
        calls = [g for f, g in spy.validated if f == focus]
        # the memory layer's check, then the store's check at commit: the same graph, evaluated once
        assert len(calls) == 2 and calls[0] == calls[1]
        assert {x for x in calls[0] if x.subject == focus} == {
            Triple(focus, q.predicate, q.object) for q in t.store.asserted() if q.subject == focus}
        assert spy.evaluated.count(focus) == 1
        spy.validated.clear()
        spy.evaluated.clear()
    # a patch that breaks a shape is still refused, with the same report, the store unchanged
    before = t.dump()
    for _ in range(2):
        with pytest.raises(ShapeViolation) as ei:
            t.update(budget.id, principal=OPS, properties={"amount": "-5"})
        assert ei.value.violations[0]["constraint"] == "sh:MinInclusiveConstraintComponent"
        assert t.dump() == before
