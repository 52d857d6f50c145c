"""Regression: a writer could assert a rule-derived property (mk:budgetStatus,
mk:utilisation) through ``properties``; SPARQL then returned both the asserted and the
derived status for the same cap. Derived predicates (rule heads) are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from reckon import InvalidInput, Principal

OPS = Principal(person="dana", role="operator")
CAP = dict(kind="objective", scope="company", importance=5, source="operator",
           label="Meta cap", content="Meta under 40k", subclass="BudgetConstraintMemory")
PROPS = {"platform": "meta", "amount": "40000", "currency": "USD", "period": "monthly"}


@pytest.fixture()
def tenant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    from reckon import Engine

    return Engine(tmp_path).create_tenant("acme")


@pytest.mark.parametrize("prop, value", [("budgetStatus", "within_budget"), ("utilisation", "0.1")])
def test_remember_refuses_a_derived_property(tenant, prop: str, value: str) -> None:  # type: ignore[no-untyped-def]
    before = tenant.dump()
    with pytest.raises(InvalidInput) as ei:
        tenant.remember(**CAP, properties={**PROPS, prop: value}, principal=OPS)
    assert ei.value.field == f"properties.{prop}"
    assert tenant.dump() == before


def test_update_refuses_a_derived_property(tenant) -> None:  # type: ignore[no-untyped-def]
    m = tenant.remember(**CAP, properties=PROPS, principal=OPS)
    tenant.set_spend("meta", 45000)
    before = tenant.dump()
    with pytest.raises(InvalidInput):
        tenant.update(m.id, principal=OPS, properties={"budgetStatus": "within_budget"})
    assert tenant.dump() == before
    assert tenant.get(m.id).status["budgetStatus"] == "over_budget"
