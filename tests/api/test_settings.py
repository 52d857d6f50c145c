"""Settings as data, one value each (issue "Derived state is always true", item 3)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode

from reckon import InvalidInput, ShapeViolation
from reckon.api import Engine, Principal, Tenant
from reckon.cli._tenant import validate_tenant

OPS = Principal(person="dana", role="operator")
RK = "https://reckon.dev/ns/core#"
XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture()
def tenant(tmp_path: Path) -> Tenant:
    return Engine(tmp_path / "d").create_tenant("acme")


def _cap(t: Tenant, amount: str = "40000"):  # type: ignore[no-untyped-def]
    return t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                      label="Meta cap", content="Meta under the cap", subclass="BudgetConstraintMemory",
                      properties={"platform": "meta", "amount": amount, "currency": "USD", "period": "monthly"})


def test_defaults_are_typed_and_one_value_each(tenant: Tenant) -> None:
    assert tenant.settings() == {
        "near_limit_threshold": Decimal("0.8"),
        "live_context_cap": 50,
        "confidence_floor": Decimal("0.5"),
        "live_importance_floor": 4,
        "refuse_inconsistent": False,
        "event_graph_max_nodes": 10000,  # module events (seed 004 graph.maxNodes)
        "event_similarity_threshold": Decimal("0.7"),  # module events (measured on LoCoMo, reckon.events.similarity)
        "strategy_promotion_threshold": 5,  # module experience (seed 000 promotionAccessThreshold)
        # module types, lifecycle maintenance (reckon.lifecycle)
        "dedup_threshold": Decimal("0.97"),  # seed 000 pruneThreshold
        "salience_decay_per_day": Decimal("0.95"),  # seed 000 daily multiplier, seed 004 decayRate
        "capacity_per_scope_kind": 10000,  # seed 004 maxNodes
        "protected_access_count": 5,  # seed 000 promotionAccessThreshold
    }


def test_set_threshold_rederives_budget_status_incrementally(tenant: Tenant) -> None:
    cap = _cap(tenant)
    tenant.set_spend("meta", "30000.00")  # 75 %
    assert tenant.get(cap.id).status["budgetStatus"] == "within_budget"
    change = tenant.set_setting("near_limit_threshold", "0.750")  # trailing zero: the store's 0.75
    assert (change["before"], change["after"]) == (Decimal("0.8"), Decimal("0.75"))
    commit = tenant.store.last_commit
    assert commit is not None
    # only the budget status moved (incremental: nothing else was re-derived)
    assert {t.predicate.value.rsplit("#", 1)[-1] for t in commit.inferred_added | commit.inferred_removed} == {
        "budgetStatus"}
    assert tenant.get(cap.id).status["budgetStatus"] == "near_limit"
    values = [r["v"] for r in tenant.sparql("SELECT ?v WHERE { rk:settings rk:nearLimitThreshold ?v }")]  # type: ignore[index]
    assert values == [Literal("0.75", datatype=NamedNode(XSD + "decimal"))]  # one value, never two
    assert tenant.set_setting("nearLimitThreshold", Decimal("0.75"))["generation"] is None  # same value: no write
    assert tenant.store.rebuild_inferred() is None
    assert validate_tenant(tenant)["conforms"]


def test_live_context_cap_and_floors(tenant: Tenant) -> None:
    texts = [("Office city", "Headquarters are in Lisbon"), ("Fiscal year", "Books close every March"),
             ("Brand colour", "Logos use teal and sand")]
    ms = [tenant.remember(kind="fact", scope="company", importance=5, source="operator", principal=OPS,
                          label=label, content=content) for label, content in texts]
    live = "SELECT ?m WHERE { rk:liveContext rk:liveMember ?m }"
    assert len(tenant.sparql(live)) == 3  # type: ignore[arg-type]
    tenant.set_setting("live_context_cap", 2)
    assert len(tenant.sparql(live)) == 2  # type: ignore[arg-type]
    tenant.set_setting("live-importance-floor", "5")
    tenant.update(ms[0].id, principal=OPS, importance=4)
    assert {r["m"].value for r in tenant.sparql(live)} == {ms[1].iri, ms[2].iri}  # type: ignore[union-attr, index]
    tenant.set_setting("confidence_floor", 1)
    assert tenant.settings()["confidence_floor"] == Decimal("1")
    assert tenant.store.rebuild_inferred() is None


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("near_limit_threshold", "1.5", ShapeViolation),
        ("near_limit_threshold", "-0.1", ShapeViolation),
        ("near_limit_threshold", "abc", InvalidInput),
        ("near_limit_threshold", "0.0000000000000000001", InvalidInput),  # more than 18 places
        ("live_context_cap", -1, ShapeViolation),
        ("live_context_cap", "2.5", InvalidInput),
        ("live_context_cap", True, InvalidInput),
        ("live_importance_floor", 6, ShapeViolation),
        ("no_such_setting", 1, InvalidInput),
        ("", 1, InvalidInput),
    ],
)
def test_bad_settings_are_refused_and_change_nothing(tenant: Tenant, name: str, value: object, error: type) -> None:
    before = tenant.dump()
    with pytest.raises(error):
        tenant.set_setting(name, value)
    assert tenant.dump() == before


def test_a_tenant_with_two_values_is_reported_and_repaired(tenant: Tenant) -> None:
    """A damaged tenant (two values written by a raw transaction) does not conform; setting
    the value retracts both."""
    from pyoxigraph import Quad

    from reckon.store import SCHEMA

    with tenant.store.transaction() as txn:
        txn.add(Quad(NamedNode(RK + "settings"), NamedNode(RK + "nearLimitThreshold"),
                     Literal("0.6", datatype=NamedNode(XSD + "decimal")), SCHEMA))
    assert tenant.settings()["near_limit_threshold"] == [Decimal("0.6"), Decimal("0.8")]
    report = validate_tenant(tenant)
    assert not report["conforms"]
    assert any(v["constraint"] == "sh:MaxCountConstraintComponent" for v in report["violations"])
    tenant.set_setting("near_limit_threshold", "0.7")
    assert tenant.settings()["near_limit_threshold"] == Decimal("0.7")
    assert validate_tenant(tenant)["conforms"]
