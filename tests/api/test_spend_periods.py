"""A spend record counts for its period only (rules/marketing.srl rule:spend-period-elapsed):
March's spend is not compared with a monthly cap once the in-graph clock is in April, and
a refresh in the new period brings the status back. ``period_end`` is checked against an
independent oracle (walking day by day to the next period boundary)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reckon.api import Engine, Principal
from reckon.business.writers import period_end

OPS = Principal(person="dana", role="operator")
UTC = UTC


@pytest.fixture
def tenant(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    return Engine(tmp_path).create_tenant("acme")


def _cap(t, period: str = "monthly"):  # type: ignore[no-untyped-def]
    return t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                      label=f"Meta {period} cap", content=f"Meta {period} spend under 40k",
                      subclass="BudgetConstraintMemory",
                      properties={"platform": "meta", "amount": "40000", "currency": "USD", "period": period})


def _budget(t, mid):  # type: ignore[no-untyped-def]
    return t.get(mid).status.get("budgetStatus")


@pytest.mark.parametrize("start", [date(2026, 3, 1), None])
def test_last_months_spend_is_not_this_months(tenant, start) -> None:  # type: ignore[no-untyped-def]
    tenant.tick(datetime(2026, 3, 31, 18, 0, 0, 250001, tzinfo=UTC))
    cap = _cap(tenant)
    tenant.set_spend("meta", "39000.00", period_start=start)
    assert _budget(tenant, cap.id) == "near_limit"
    tenant.tick(datetime(2026, 3, 31, 23, 59, 59, 999999, tzinfo=UTC))
    assert _budget(tenant, cap.id) == "near_limit"  # still March
    tenant.tick(datetime(2026, 4, 1, 0, 0, tzinfo=UTC))
    assert _budget(tenant, cap.id) is None  # March's spend is not April's
    assert "currentSpend" not in tenant.get(cap.id).status
    tenant.tick(datetime(2026, 12, 1, 9, tzinfo=timezone(timedelta(hours=-5))))
    assert _budget(tenant, cap.id) is None
    tenant.set_spend("meta", 1200, period_start=date(2026, 12, 1) if start else None)
    assert _budget(tenant, cap.id) == "within_budget"


def test_a_period_start_mid_month_runs_one_month_from_it(tenant) -> None:  # type: ignore[no-untyped-def]
    tenant.tick(datetime(2026, 3, 20, tzinfo=UTC))
    cap = _cap(tenant)
    tenant.set_spend("meta", 41000, period_start=date(2026, 3, 15))
    assert _budget(tenant, cap.id) == "over_budget"
    tenant.tick(datetime(2026, 4, 14, 23, tzinfo=UTC))
    assert _budget(tenant, cap.id) == "over_budget"
    tenant.tick(datetime(2026, 4, 15, 0, 0, 0, 1, tzinfo=UTC))
    assert _budget(tenant, cap.id) is None


def test_a_weekly_cap_and_a_tenant_without_a_clock(tenant) -> None:  # type: ignore[no-untyped-def]
    cap = _cap(tenant, "weekly")
    tenant.set_spend("meta", 100, period="weekly", as_of=datetime(2026, 3, 4, 12, tzinfo=UTC))  # a Wednesday
    assert _budget(tenant, cap.id) == "within_budget"  # no clock: nothing has elapsed
    tenant.tick(datetime(2026, 3, 8, 23, tzinfo=UTC))  # Sunday
    assert _budget(tenant, cap.id) == "within_budget"
    tenant.tick(datetime(2026, 3, 9, 0, tzinfo=UTC))  # Monday: the next ISO week
    assert _budget(tenant, cap.id) is None


def _oracle(period: str, day: date, anchored: bool) -> date:
    """Walk forward one day at a time until the period that holds ``day`` is left."""
    def key(d: date) -> tuple[int, ...]:
        if anchored:  # periods counted from ``day`` itself
            months = {"monthly": 1, "quarterly": 3, "yearly": 12}.get(period)
            if period == "daily":
                return ((d - day).days,)
            if period == "weekly":
                return ((d - day).days // 7,)
            assert months is not None
            n = (d.year - day.year) * 12 + d.month - day.month - (d.day < day.day and not _clamped(day, d))
            return (n // months,)
        if period == "daily":
            return (d.toordinal(),)
        if period == "weekly":
            return d.isocalendar()[:2]
        if period == "monthly":
            return (d.year, d.month)
        if period == "quarterly":
            return (d.year, (d.month - 1) // 3)
        return (d.year,)

    d = day
    while key(d) == key(day):
        d += timedelta(days=1)
    return d


def _clamped(start: date, d: date) -> bool:
    """``d`` is the last day of a month shorter than ``start``'s day (31 Jan + 1 month = 28 Feb)."""
    return d.day < start.day and (d + timedelta(days=1)).month != d.month


@settings(max_examples=300, deadline=None)
@given(st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31)),
       st.sampled_from(["daily", "weekly", "monthly", "quarterly", "yearly"]), st.booleans())
def test_period_end_matches_a_day_by_day_walk(day: date, period: str, anchored: bool) -> None:
    assert period_end(period, day, anchored=anchored) == _oracle(period, day, anchored)
