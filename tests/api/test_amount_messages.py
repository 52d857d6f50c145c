"""A refused amount says what was wrong with it -- negative, out of range, not a
number, trailing text -- not only the shape's rule ("amount is required: ..."); a
decimal with trailing zeros is accepted and kept at its exact value (``Tenant.remember``,
``Tenant.set_spend``, the CLI)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from reckon import InvalidInput, ShapeViolation
from reckon.api import Engine, Principal

OPS = Principal.operator(person="dana")


def cap(amount: Any, label: str = "Meta cap", platform: str = "meta") -> dict[str, Any]:
    return dict(principal=OPS, kind="objective", scope="company", importance=4, source="operator", label=label,
                content=f"Keep {platform} under the cap", subclass="BudgetConstraintMemory",
                properties={"platform": platform, "amount": amount, "currency": "USD", "period": "monthly"})


@pytest.fixture
def tenant(tmp_path: Path) -> Any:
    return Engine(tmp_path, embedder="hashing").create_tenant("acme")


def test_a_refused_amount_says_what_was_wrong_and_nothing_is_written(tenant: Any) -> None:
    before = tenant.dump()
    for amount in ("-5", -5, "-0.01", Decimal("-40000.00")):
        with pytest.raises(ShapeViolation) as ei:
            tenant.remember(**cap(amount))
        v = ei.value.violations[0]
        assert v["field"] == "amount" and v["constraint"] == "sh:MinInclusiveConstraintComponent"
        words = v["message"].split(" ", 2)
        assert words[0] == "amount" and Decimal(words[1]) == Decimal(str(amount)), v["message"]
        assert words[2].startswith("is negative: it must be at least 0 (amount is required"), v["message"]
        assert "is negative" in str(ei.value)
    with pytest.raises(ShapeViolation) as ei:
        tenant.remember(**cap("1000000000000000"))
    assert "amount 1000000000000000 is out of range: it must be below" in ei.value.violations[0]["message"]
    for amount, why in (("abc", "is not an xsd:decimal"), ("5abc", "is not an xsd:decimal"),
                        ("40000 USD", "is not an xsd:decimal"), ("1e3", "no exponent"), ("", "is not an xsd:decimal"),
                        ("NaN", "is not an xsd:decimal"), (True, "must be a number")):
        with pytest.raises(InvalidInput) as e2:
            tenant.remember(**cap(amount))
        assert why in str(e2.value) and repr(amount) in str(e2.value), (amount, str(e2.value))
        assert "required" not in str(e2.value)
    with pytest.raises(ShapeViolation) as ei:
        tenant.set_spend("meta", "-5")
    assert "amount -5 is negative: it must be at least 0" in str(ei.value)
    with pytest.raises(InvalidInput, match="not a decimal number: '5x'"):
        tenant.set_spend("meta", "5x")
    assert tenant.dump() == before


def test_a_refused_business_value_names_the_field_not_the_model_class(tenant: Any, tmp_path: Path) -> None:
    """``set_spend`` / ``set_kpi`` said ``SpendInput: amount: Value error, not a decimal ...``:
    a class name and pydantic's prefix; now ``amount: not a decimal ...`` (the CLI too)."""
    from tests.cli.conftest import run_cli

    before = tenant.dump()
    for call, field in ((lambda: tenant.set_spend("meta", "1e3"), "amount"),
                        (lambda: tenant.set_spend("meta", "34000.10", as_of=datetime(2026, 3, 1, 9)), "as_of"),
                        (lambda: tenant.set_kpi("ROAS", "3.50x"), "value")):
        with pytest.raises(InvalidInput) as ei:
            call()
        text = str(ei.value)
        assert ei.value.field == field and text.startswith(f"{field}: "), text
        assert "Input" not in text and "Value error" not in text, text
    assert tenant.dump() == before
    tenant.close()
    r = run_cli(tmp_path, "spend", "set", "--tenant", "acme", "meta", "1e3")
    assert r.code == 2 and r.err.startswith("error: amount: not a decimal number: '1e3'"), r.err


def test_decimals_with_trailing_zeros_are_accepted_at_their_exact_value(tenant: Any) -> None:
    for platform, text in zip(("meta", "google", "tiktok", "bing"),
                              ("40000.00", "0.10", "12345678901234.123456789012345670", "7.000"), strict=True):
        m = tenant.remember(**cap(text, label=f"{platform} cap", platform=platform))
        assert m.properties["amount"] == Decimal(text)
        assert tenant.get(m.id, principal=OPS).properties["amount"] == Decimal(text)
    tenant.set_spend("meta", "34000.50")
    rows = tenant.sparql("SELECT ?a WHERE { ?s <https://reckon.dev/ns/marketing#observedAmount> ?a }")
    assert [Decimal(str(r["a"].value)) for r in rows] == [Decimal("34000.5")]
