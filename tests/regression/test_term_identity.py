"""Regression (issue "Derived state is always true", item 1): the reasoner received the
raw text of a literal on insert and the store's canonical text on delete, so an old clock
value ``…34.829040Z`` (stored as ``…34.82904Z``) was never retracted and an expired
memory stayed active. Fixed by giving every term the store's identity
(``reckon.store.terms``): the transaction, the reasoner and the builders agree."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from pyoxigraph import Literal, NamedNode, Quad

from reckon.api import Engine, Principal
from reckon.cli._tenant import validate_tenant
from reckon.store import BUSINESS, MEMORIES

XSD = "http://www.w3.org/2001/XMLSchema#"
OPS = Principal(person="dana", role="operator")


def test_clock_with_trailing_zero_microseconds_expires_memories(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = Engine(tmp_path).create_tenant("acme")
    t0 = datetime(2026, 3, 1, 10, 0, 34, 829040, tzinfo=UTC)  # isoformat ends in a zero
    t.tick(t0)
    m = t.remember(kind="fact", scope="company", importance=3, source="operator", label="promo",
                   content="spring promo runs", expires_at=t0 + timedelta(days=2), principal=OPS)
    assert t.get(m.id).active
    t.tick(t0 + timedelta(days=3))
    assert not t.get(m.id).active
    report = validate_tenant(t)
    assert report["conforms"], report


def test_non_canonical_spellings_written_directly_are_one_term(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Quads written through a raw transaction in non-canonical spellings: the reasoner
    sees the stored term, a remove in another spelling finds it, and a derived
    utilisation computed by the rules is the store's term."""
    t = Engine(tmp_path).create_tenant("acme")
    cap = t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                     label="Meta cap", content="Meta spend under 40k", subclass="BudgetConstraintMemory",
                     properties={"platform": "meta", "amount": "40000.00", "currency": "USD",
                                 "period": "monthly"})
    t.set_spend("meta", "34000.10")
    assert t.get(cap.id).status["budgetStatus"] == "near_limit"  # 34000.1 / 40000 >= 0.8
    # remove the clock value in a different spelling than it was written
    now = Literal("2026-03-01T10:00:00.500000+00:00", datatype=NamedNode(XSD + "dateTime"))
    clock = NamedNode("https://reckon.dev/ns/core#clock")
    p_now = NamedNode("https://reckon.dev/ns/core#now")
    with t.store.transaction() as txn:
        txn.add(Quad(clock, p_now, now, BUSINESS))
    assert [q.object.value for q in t.store.asserted() if q.predicate == p_now] == ["2026-03-01T10:00:00.5Z"]
    with t.store.transaction() as txn:
        txn.remove(Quad(clock, p_now, Literal("2026-03-01T10:00:00.50Z", datatype=NamedNode(XSD + "dateTime")),
                        BUSINESS))
    assert [q for q in t.store.asserted() if q.predicate == p_now] == []
    # importance written as "0005"^^xsd:int is the store's "5"^^xsd:integer everywhere
    m = NamedNode(cap.iri)
    imp = NamedNode("https://reckon.dev/ns/core#importance")
    with t.store.transaction() as txn:
        txn.remove(Quad(m, imp, Literal("5", datatype=NamedNode(XSD + "integer")), MEMORIES))
        txn.add(Quad(m, imp, Literal("0005", datatype=NamedNode(XSD + "int")), MEMORIES))
    assert t.store.rebuild_inferred() is None  # the incremental result equals from-scratch
    assert validate_tenant(t)["conforms"]
    rows = t.sparql(f"SELECT ?u WHERE {{ <{cap.iri}> mk:utilisation ?u }}")
    assert [r["u"] for r in rows] == [Literal(str(Decimal("34000.1") / Decimal(40000)),
                                              datatype=NamedNode(XSD + "decimal"))]
