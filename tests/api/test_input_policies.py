"""Input policies (issue "Derived state is always true", item 5): each smaller case gets a
clear ReckonError that leaves the store as it was, or a documented, tested behaviour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from reckon import InvalidInput, ShapeViolation, UnknownMemory
from reckon.api import Engine, Principal, Tenant
from reckon.cli._tenant import validate_tenant

OPS = Principal(person="dana", role="operator")
LEE = Principal(person="lee")
UTC = UTC


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return Engine(tmp_path_factory.mktemp("policies"))


_n = iter(range(10**6))


@pytest.fixture()
def tenant(engine: Engine) -> Tenant:
    return engine.create_tenant(f"p{next(_n)}")


def _pref(t: Tenant, label: str, content: str, who: Principal = LEE, **kw):  # type: ignore[no-untyped-def]
    return t.remember(kind="preference", scope="user", importance=3, source="agent_tool", label=label,
                      content=content, principal=who, **kw)


def test_supersede_then_delete_leaves_a_tombstone_not_a_dangling_pointer(tenant: Tenant) -> None:
    a = _pref(tenant, "Lunch", "Likes sushi")
    b = tenant.supersede(a.id, {"kind": "preference", "scope": "user", "importance": 3, "source": "agent_tool",
                                "label": "Lunch v2", "content": "Likes ramen"}, principal=LEE)
    tenant.delete(b.id, principal=OPS)
    assert validate_tenant(tenant)["conforms"]  # was: dangling rk:supersededBy reported
    with pytest.raises(UnknownMemory, match="was deleted"):
        tenant.get(b.id)
    h = tenant.history(b.id)  # was: UnknownMemory
    assert [(e.id, e.event) for e in h] == [(a.id, "superseded"), (b.id, "deleted")]
    assert h[1].deleted_by == "dana" and h[1].label is None and h[1].content is None
    assert tenant.get(a.id).superseded_by == [b.id] and not tenant.get(a.id).active
    assert tenant.restore(a.id, principal=OPS).active  # the tombstone is not active: restore is allowed
    assert validate_tenant(tenant)["conforms"]
    with pytest.raises(UnknownMemory):
        tenant.delete(b.id, principal=OPS)  # a tombstone is not deleted twice


def test_clock_never_moves_backwards_silently(tenant: Tenant) -> None:
    t0 = datetime(2026, 3, 10, 12, 0, 0, 500000, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    tenant.tick(t0)
    before = tenant.dump()
    with pytest.raises(InvalidInput, match="backwards") as ei:
        tenant.tick(t0 - timedelta(microseconds=1))
    assert ei.value.field == "now" and tenant.dump() == before
    assert tenant.tick(t0.astimezone(UTC)) is None  # the same instant in another offset: no change
    tenant.tick(t0 - timedelta(days=1), allow_backwards=True)
    now = tenant.sparql("SELECT ?n WHERE { rk:clock rk:now ?n }")[0]["n"]  # type: ignore[index]
    assert now.value == "2026-03-09T06:30:00.5Z"


@pytest.mark.parametrize("call", ["tick", "kpi", "remember", "update"])
def test_naive_datetimes_are_refused(tenant: Tenant, call: str) -> None:
    m = _pref(tenant, "Seat", "Window seat")
    naive = datetime(2026, 4, 1, 9, 30)
    before = tenant.dump()
    with pytest.raises(InvalidInput, match="no time zone"):
        if call == "tick":
            tenant.tick(naive)
        elif call == "kpi":
            tenant.set_kpi("ROAS", "2.5", as_of=naive)
        elif call == "remember":
            _pref(tenant, "Aisle", "Aisle seat", expires_at=naive)
        else:
            tenant.update(m.id, principal=LEE, expires_at=naive)
    assert tenant.dump() == before


def test_restore_of_a_memory_that_is_not_superseded_is_refused(tenant: Tenant) -> None:
    m = _pref(tenant, "Tea", "Green tea")
    before = tenant.dump()
    with pytest.raises(InvalidInput, match="not superseded"):
        tenant.restore(m.id, principal=OPS)
    assert tenant.dump() == before


@pytest.mark.parametrize("amount", ["1e-19", "0.0000000000000000001", "1.7e20", "1e15", "-5", "NaN", "Infinity"])
def test_budget_amounts_outside_the_documented_range_are_refused(tenant: Tenant, amount: str) -> None:
    """Caps and spend: 0 <= amount < 1e15, at most 18 fractional digits (what the store
    holds exactly; never rounded)."""
    before = tenant.dump()
    with pytest.raises((InvalidInput, ShapeViolation)):
        tenant.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                        label="Meta cap", content="Meta under the cap", subclass="BudgetConstraintMemory",
                        properties={"platform": "meta", "amount": amount, "currency": "USD", "period": "monthly"})
    with pytest.raises(InvalidInput):
        tenant.set_spend("meta", amount)
    assert tenant.dump() == before


def test_amounts_in_range_keep_their_value_in_canonical_form(tenant: Tenant) -> None:
    cap = tenant.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                          label="Meta cap", content="Meta under the cap", subclass="BudgetConstraintMemory",
                          properties={"platform": "meta", "amount": "999999999999999.999999",
                                      "currency": "USD", "period": "monthly"})
    tenant.set_spend("meta", Decimal("0.000000000000000001"))
    m = tenant.get(cap.id)
    assert m.properties["amount"] == Decimal("999999999999999.999999")  # exact: a Decimal
    assert m.status["budgetStatus"] == "within_budget"
    assert validate_tenant(tenant)["conforms"]


def test_dedup_overwrite_keeps_the_prior_label_and_content_in_history(tenant: Tenant) -> None:
    a = _pref(tenant, "Chinese food", "Likes Chinese food")
    b = _pref(tenant, "chinese  FOOD", "Dislikes Chinese food")
    assert b.id == a.id and b.content == "Dislikes Chinese food"  # dedup: one node
    (entry,) = tenant.history(a.id)
    assert entry.event == "updated" and (entry.label, entry.content) == ("chinese  FOOD", "Dislikes Chinese food")
    assert [(r.label, r.content, r.revised_by) for r in entry.revisions] == [
        ("Chinese food", "Likes Chinese food", "lee")]
    tenant.update(a.id, principal=LEE, content="Loves dim sum")
    (entry,) = tenant.history(a.id)
    assert [r.content for r in entry.revisions] == ["Likes Chinese food", "Dislikes Chinese food"]
    assert validate_tenant(tenant)["conforms"]
    tenant.delete(a.id, principal=OPS)  # deleting removes the revisions too (only the tombstone stays)
    assert tenant.sparql("ASK { ?r a rk:Revision }") is False


def test_explicit_supersede_with_the_same_label_supersedes(tenant: Tenant) -> None:
    old = _pref(tenant, "Report format", "PDF reports")
    new = tenant.supersede(old.id, {"kind": "preference", "scope": "user", "importance": 3, "source": "agent_tool",
                                    "label": "Report format", "content": "Slides instead of PDF"}, principal=LEE)
    assert new.id != old.id and new.supersedes == [old.id]
    o = tenant.get(old.id)
    assert o.superseded_by == [new.id] and not o.active and o.content == "PDF reports"  # old content kept
    assert [e.event for e in tenant.history(new.id)] == ["superseded", "current"]
    assert validate_tenant(tenant)["conforms"]
