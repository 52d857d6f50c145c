"""rules/marketing.srl on the seed 003 §7 worked examples, directly on triples.

Each test names the rule it checks and restates it as If/then (OWL-RL style)."""

from __future__ import annotations

from decimal import Decimal

from .conftest import N, T, assert_same_as_scratch, dec, decimals, memory, objects

ROAS_TARGET = memory(
    "m:roas", "mk:PerformanceTargetMemory", extra='mk:metric mk:ROAS ; mk:targetValue "3.0"^^xsd:decimal'
)
ROAS_KPI = 'acme:company mk:currentKpi acme:kpi-roas .\nacme:kpi-roas a mk:KpiValue ; mk:metric mk:ROAS ; mk:value "{v}"^^xsd:decimal .\n'

META_CAP = memory(
    "m:meta-cap",
    "mk:BudgetConstraintMemory",
    extra='mk:platform mk:meta ; mk:amount "40000"^^xsd:decimal ; mk:currency "USD" ; mk:period mk:Monthly',
)
META_SPEND = (
    "acme:company mk:currentSpendRecord acme:spend-meta .\n"
    'acme:spend-meta a mk:SpendRecord ; mk:platform mk:meta ; mk:period mk:Monthly ; mk:currency "USD" ;'
    ' mk:amount "{v}"^^xsd:decimal ; mk:periodStart "2026-03-01"^^xsd:date .\n'
)


# -- target status --------------------------------------------------------------------


def test_target_status_below_higher(reason):
    """If a ROAS (higher is better) target of 3.0 meets a current KPI of 2.5, then below."""
    r = reason(ROAS_TARGET + ROAS_KPI.format(v="2.5"))
    inf = r.inferred()
    assert objects(inf, "m:roas", "mk:targetStatus") == {N("mk:Below")}
    assert decimals(inf, "m:roas", "mk:currentValue") == {Decimal("2.5")}
    assert objects(inf, "m:roas", "mk:comparedKpi") == {N("urn:reckon:acme:kpi-roas")}


def test_target_status_met_higher_after_kpi_refresh(reason, ruleset):
    """If the KPI refreshes to 3.2 (>= 3.0), then met, and below is retracted."""
    r = reason(ROAS_TARGET + ROAS_KPI.format(v="2.5"))
    kpi = "urn:reckon:acme:kpi-roas"
    delta = r.apply(insert=[T(kpi, "mk:value", dec("3.2"))], delete=[T(kpi, "mk:value", dec("2.5"))])
    assert T("m:roas", "mk:targetStatus", "mk:Met") in delta.added
    assert T("m:roas", "mk:targetStatus", "mk:Below") in delta.removed
    assert objects(r.inferred(), "m:roas", "mk:targetStatus") == {N("mk:Met")}
    assert_same_as_scratch(r, ruleset)


def test_target_status_boundary_is_met(reason):
    """If the current value equals the target, then met (>= for higher is better)."""
    r = reason(ROAS_TARGET + ROAS_KPI.format(v="3.0"))
    assert objects(r.inferred(), "m:roas", "mk:targetStatus") == {N("mk:Met")}


def test_target_status_lower_is_better_flips(reason, ruleset):
    """If CPA (lower is better) target is 40: a KPI of 35 is met, a KPI of 45 is below."""
    cpa = memory("m:cpa", "mk:PerformanceTargetMemory", extra='mk:metric mk:CPA ; mk:targetValue "40"^^xsd:decimal')
    kpi = 'acme:company mk:currentKpi acme:kpi-cpa .\nacme:kpi-cpa a mk:KpiValue ; mk:metric mk:CPA ; mk:value "35"^^xsd:decimal .\n'
    r = reason(cpa + kpi)
    assert objects(r.inferred(), "m:cpa", "mk:targetStatus") == {N("mk:Met")}
    node = "urn:reckon:acme:kpi-cpa"
    r.apply(insert=[T(node, "mk:value", dec("45"))], delete=[T(node, "mk:value", dec("35"))])
    assert objects(r.inferred(), "m:cpa", "mk:targetStatus") == {N("mk:Below")}
    assert_same_as_scratch(r, ruleset)


def test_target_platform_matches_only_that_platforms_kpi(reason):
    """If a target names platform meta, then it is compared with the meta KPI, not the
    company-wide one; a target without platform uses the company-wide KPI."""
    meta_target = memory(
        "m:roas-meta", "mk:PerformanceTargetMemory",
        extra='mk:metric mk:ROAS ; mk:targetValue "3.0"^^xsd:decimal ; mk:platform mk:meta',
    )
    kpis = (
        ROAS_KPI.format(v="2.5")
        + "acme:company mk:currentKpi acme:kpi-roas-meta .\n"
        + 'acme:kpi-roas-meta a mk:KpiValue ; mk:metric mk:ROAS ; mk:platform mk:meta ; mk:value "4.1"^^xsd:decimal .\n'
    )
    r = reason(ROAS_TARGET + meta_target + kpis)
    inf = r.inferred()
    assert objects(inf, "m:roas", "mk:targetStatus") == {N("mk:Below")}
    assert decimals(inf, "m:roas", "mk:currentValue") == {Decimal("2.5")}
    assert objects(inf, "m:roas-meta", "mk:targetStatus") == {N("mk:Met")}
    assert decimals(inf, "m:roas-meta", "mk:currentValue") == {Decimal("4.1")}


def test_target_without_current_kpi_has_no_status(reason):
    """If the KPI is not linked as current (history), then no status is derived."""
    history = 'acme:kpi-old a mk:KpiValue ; mk:metric mk:ROAS ; mk:value "9"^^xsd:decimal .\n'
    r = reason(ROAS_TARGET + history)
    assert objects(r.inferred(), "m:roas", "mk:targetStatus") == set()


# -- budget status ----------------------------------------------------------------------


def test_budget_status_near_limit(reason):
    """If Meta spend is 34000 against a 40000 cap (85 % >= 80 %), then near_limit."""
    r = reason(META_CAP + META_SPEND.format(v="34000"))
    inf = r.inferred()
    assert objects(inf, "m:meta-cap", "mk:budgetStatus") == {N("mk:NearLimit")}
    assert decimals(inf, "m:meta-cap", "mk:utilisation") == {Decimal("0.85")}
    assert decimals(inf, "m:meta-cap", "mk:currentSpend") == {Decimal("34000")}


def test_budget_status_over_and_within_after_spend_refresh(reason, ruleset):
    """If spend refreshes to 41000, then over_budget; if to 20000, then within_budget."""
    r = reason(META_CAP + META_SPEND.format(v="34000"))
    spend = "urn:reckon:acme:spend-meta"
    r.apply(insert=[T(spend, "mk:amount", dec("41000"))], delete=[T(spend, "mk:amount", dec("34000"))])
    inf = r.inferred()
    assert objects(inf, "m:meta-cap", "mk:budgetStatus") == {N("mk:OverBudget")}
    assert decimals(inf, "m:meta-cap", "mk:utilisation") == {Decimal("1.025")}
    assert_same_as_scratch(r, ruleset)
    r.apply(insert=[T(spend, "mk:amount", dec("20000"))], delete=[T(spend, "mk:amount", dec("41000"))])
    inf = r.inferred()
    assert objects(inf, "m:meta-cap", "mk:budgetStatus") == {N("mk:WithinBudget")}
    assert decimals(inf, "m:meta-cap", "mk:utilisation") == {Decimal("0.5")}
    assert_same_as_scratch(r, ruleset)


def test_budget_status_exactly_at_cap_is_near_limit(reason):
    """If spend equals the cap, then near_limit (over needs spend > cap)."""
    r = reason(META_CAP + META_SPEND.format(v="40000"))
    assert objects(r.inferred(), "m:meta-cap", "mk:budgetStatus") == {N("mk:NearLimit")}


def test_near_limit_threshold_is_data(reason, ruleset):
    """If rk:settings rk:nearLimitThreshold is changed to 0.9, then 85 % is within_budget."""
    r = reason(META_CAP + META_SPEND.format(v="34000"))
    r.apply(
        insert=[T("rk:settings", "rk:nearLimitThreshold", dec("0.9"))],
        delete=[T("rk:settings", "rk:nearLimitThreshold", dec("0.8"))],
    )
    assert objects(r.inferred(), "m:meta-cap", "mk:budgetStatus") == {N("mk:WithinBudget")}
    assert_same_as_scratch(r, ruleset)


def test_budget_compares_same_platform_period_and_currency_only(reason):
    """If the current spend record differs in platform, period or currency, then no status."""
    other = (
        "acme:company mk:currentSpendRecord acme:s1 , acme:s2 , acme:s3 .\n"
        'acme:s1 a mk:SpendRecord ; mk:platform mk:google ; mk:period mk:Monthly ; mk:currency "USD" ; mk:amount "39000"^^xsd:decimal .\n'
        'acme:s2 a mk:SpendRecord ; mk:platform mk:meta ; mk:period mk:Weekly ; mk:currency "USD" ; mk:amount "39000"^^xsd:decimal .\n'
        'acme:s3 a mk:SpendRecord ; mk:platform mk:meta ; mk:period mk:Monthly ; mk:currency "EUR" ; mk:amount "39000"^^xsd:decimal .\n'
    )
    r = reason(META_CAP + other)
    inf = r.inferred()
    assert objects(inf, "m:meta-cap", "mk:budgetStatus") == set()
    assert objects(inf, "m:meta-cap", "mk:comparedSpendRecord") == set()


def test_zero_cap_has_status_but_no_utilisation(reason):
    """If the cap is 0 and spend 0, then near_limit and no utilisation (no division by 0);
    any spend is over_budget."""
    cap = memory(
        "m:tiktok-none", "mk:BudgetConstraintMemory",
        extra='mk:platform mk:tiktok ; mk:amount "0"^^xsd:decimal ; mk:currency "USD" ; mk:period mk:Monthly',
    )
    spend = (
        "acme:company mk:currentSpendRecord acme:spend-tt .\n"
        'acme:spend-tt a mk:SpendRecord ; mk:platform mk:tiktok ; mk:period mk:Monthly ; mk:currency "USD" ; mk:amount "0"^^xsd:decimal .\n'
    )
    r = reason(cap + spend)
    inf = r.inferred()
    assert objects(inf, "m:tiktok-none", "mk:budgetStatus") == {N("mk:NearLimit")}
    assert objects(inf, "m:tiktok-none", "mk:utilisation") == set()
    r.apply(insert=[T("urn:reckon:acme:spend-tt", "mk:amount", dec("5"))],
            delete=[T("urn:reckon:acme:spend-tt", "mk:amount", dec("0"))])
    assert objects(r.inferred(), "m:tiktok-none", "mk:budgetStatus") == {N("mk:OverBudget")}


def test_status_only_for_active_memories(reason, ruleset):
    """If the budget memory is superseded, then its status, spend and utilisation go away."""
    r = reason(META_CAP + META_SPEND.format(v="34000") + memory("m:meta-cap-2", "rk:Memory"))
    r.apply(insert=[T("m:meta-cap", "rk:supersededBy", "m:meta-cap-2")])
    inf = r.inferred()
    for p in ("mk:budgetStatus", "mk:utilisation", "mk:currentSpend", "mk:comparedSpendRecord"):
        assert objects(inf, "m:meta-cap", p) == set(), p
    assert_same_as_scratch(r, ruleset)


def test_explain_near_limit_names_the_rule(reason):
    """explain(near_limit) cites rule budget-status-near-limit and the spend record."""
    r = reason(META_CAP + META_SPEND.format(v="34000"))
    text = r.explain(T("m:meta-cap", "mk:budgetStatus", "mk:NearLimit")).render()
    assert "budget-status-near-limit" in text
    assert "34000" in text


# -- live context: business snapshot ----------------------------------------------------


def test_live_context_kpis_accounts_subscription(reason):
    """If the company has current KPIs, connected accounts and a subscription, then the
    live context links each of them."""
    data = (
        ROAS_KPI.format(v="2.5")
        + "acme:company mk:connectedAccount acme:acct-meta ; mk:subscription acme:sub .\n"
        + 'acme:acct-meta a mk:AdAccount ; mk:onPlatform mk:meta ; mk:accountId "1234" .\n'
        + 'acme:sub a mk:Subscription ; mk:plan "growth" ; mk:subscriptionStatus mk:Active .\n'
        + 'acme:kpi-old a mk:KpiValue ; mk:metric mk:CPA ; mk:value "50"^^xsd:decimal .\n'
    )
    inf = reason(data).inferred()
    assert objects(inf, "rk:liveContext", "mk:liveKpi") == {N("urn:reckon:acme:kpi-roas")}
    assert objects(inf, "rk:liveContext", "mk:liveAccount") == {N("urn:reckon:acme:acct-meta")}
    assert objects(inf, "rk:liveContext", "mk:liveSubscription") == {N("urn:reckon:acme:sub")}
