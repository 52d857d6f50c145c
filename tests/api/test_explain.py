"""Tenant.explain: why a status derived from business data holds (the rule and the
supporting facts), through the facade's in-memory reasoner."""

from __future__ import annotations

import pytest
from pyoxigraph import Literal

from reckon._errors import ExplainError, InvalidInput
from reckon.api import Tenant
from tests.api.conftest import mk, write_budget_memory


def test_explain_a_budget_status(tenant: Tenant) -> None:
    m = write_budget_memory(tenant, "cap", amount="40000")
    tenant.set_spend("meta", 34000)
    e = tenant.explain(m.value, mk("budgetStatus").value, mk("NearLimit"))
    assert e.triple.object == mk("NearLimit")
    # rule: budget-status-near-limit (rules/marketing.srl), threshold held as data (0.8)
    assert e.rule.endswith("#budget-status-near-limit>")
    assert e.binding("m") == m
    assert e.binding("spend").value == "34000" and e.binding("cap").value == "40000"
    assert e.binding("threshold").value == "0.8"
    text = e.render()
    assert "34000" in text and "40000" in text


def test_explain_refuses_what_is_not_inferred(tenant: Tenant) -> None:
    m = write_budget_memory(tenant, "cap2", amount="40000")
    with pytest.raises(ExplainError):
        tenant.explain(m.value, mk("budgetStatus").value, mk("OverBudget"))
    with pytest.raises(InvalidInput):
        tenant.explain(m.value, mk("budgetStatus").value, "OverBudget")
    with pytest.raises(ExplainError):
        tenant.explain(m.value, mk("amount").value, Literal("40000"))
