"""The spend history behind the current spend record (``mk:SpendObservation``): one point
per record and UTC day of ``as_of`` (default the in-graph clock), replaced by a later
refresh of the same day, never joined by the rules, valid against its shape; the daily
replay writes one per day, which the inspector's chart draws."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from reckon import InvalidInput

Q = """SELECT ?day ?amount ?at WHERE { ?o a mk:SpendObservation ; mk:spendRecord ?r ; mk:observedAmount ?amount ;
  mk:observedAt ?at . ?r mk:platform mk:meta . BIND(STR(?o) AS ?day) } ORDER BY ?at"""


@pytest.fixture
def tenant(tmp_path, monkeypatch):
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    from reckon.api import Engine

    return Engine(tmp_path).create_tenant("acme")


def _points(t):
    return [(r["day"].value.rsplit(":", 1)[1], Decimal(r["amount"].value), r["at"].value) for r in t.sparql(Q)]


def test_one_point_per_day_the_last_refresh_wins(tenant):
    utc = UTC
    tenant.set_spend("meta", 1000, as_of=datetime(2026, 3, 1, 9, tzinfo=utc))
    tenant.set_spend("meta", "1500.50", as_of=datetime(2026, 3, 1, 18, 30, 0, 123456, tzinfo=utc))
    tenant.set_spend("meta", 2600, as_of=datetime(2026, 3, 2, 1, tzinfo=timezone(timedelta(hours=5))))  # 1 March UTC
    with pytest.raises(InvalidInput, match="no time zone"):  # naive: refused, never guessed
        tenant.set_spend("meta", 4000, as_of=datetime(2026, 3, 3, 12))
    tenant.set_spend("meta", 4000, as_of=datetime(2026, 3, 3, 12, tzinfo=utc))
    pts = _points(tenant)
    assert [(d, a) for d, a, _ in pts] == [("2026-03-01", Decimal("2600")), ("2026-03-03", Decimal("4000"))]
    current = tenant.sparql("SELECT ?a WHERE { ?c mk:currentSpendRecord ?r . ?r mk:amount ?a }")
    assert [Decimal(r["a"].value) for r in current] == [Decimal("4000")]
    # the history has properties of its own: a query for amounts or platforms never meets it
    assert len(tenant.sparql("SELECT ?a WHERE { ?s mk:amount ?a }")) == 1
    assert len(tenant.sparql("SELECT ?s WHERE { ?s mk:platform mk:meta }")) == 1


def test_default_time_is_the_in_graph_clock(tenant):
    tenant.tick(datetime(2026, 3, 20, 23, 59, 59, tzinfo=UTC))
    tenant.set_spend("meta", 30000)
    assert [d for d, _, _ in _points(tenant)] == ["2026-03-20"]


def test_history_is_not_joined_by_the_rules_and_validates(tenant):
    from reckon.api import Principal
    from reckon.cli._tenant import validate_tenant

    cap = tenant.remember(principal=Principal.operator("dana"), kind="objective", scope="company", importance=5,
                          source="operator", label="Meta cap", content="Meta under $40k.",
                          subclass="BudgetConstraintMemory",
                          properties={"platform": "meta", "amount": "40000", "currency": "USD", "period": "monthly"})
    for day, amount in ((1, 39000), (2, 1000)):  # a high past point, then the current, low one
        tenant.set_spend("meta", amount, period_start=date(2026, 3, 1),
                         as_of=datetime(2026, 3, day, tzinfo=UTC))
    assert tenant.get(cap.id).status["budgetStatus"] == "within_budget"
    assert len(_points(tenant)) == 2
    report = validate_tenant(tenant)
    assert report["conforms"], report


def test_a_bad_as_of_is_refused_and_nothing_is_written(tenant):
    before = tenant.dump()
    with pytest.raises(InvalidInput) as e:
        tenant.set_spend("meta", 10, as_of="yesterday")
    assert e.value.field == "as_of"
    assert tenant.dump() == before


def test_the_daily_replay_writes_a_point_per_day(tenant):
    from reckon import loaders
    from reckon._resources import resource_dir

    daily = loaders.aggregate_daily(loaders.read_csv(resource_dir("examples") / "demo-spend-2026-03.csv"))
    loaders.replay_daily(tenant, daily, kpis=("ROAS",))
    pts = _points(tenant)
    assert [d for d, _, _ in pts] == [f"2026-03-{d:02d}" for d in range(1, 32)]
    assert all(b[1] >= a[1] for a, b in zip(pts, pts[1:]))  # month to date: never decreasing
    assert pts[-1][2] == "2026-03-31T23:59:59Z"
