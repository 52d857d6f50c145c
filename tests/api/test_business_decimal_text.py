"""Decimal text given to ``Tenant.set_spend`` / ``set_kpi`` follows the one rule
``Tenant.remember`` applies to a decimal property (``tests/api/test_exact_values.py``):
the ``xsd:decimal`` lexical space (XML Schema 1.1 Part 2 §3.3.3) after the ``collapse``
white space facet. Python's ``Decimal()`` also reads ``"1e3"``, ``"1_000"`` and
Unicode digits; those were written as 1000 and 40 while ``remember`` refused them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reckon._errors import InvalidInput
from reckon.api import Tenant
from reckon.business.models import SpendInput, parse_model
from reckon.store.terms import decimal_literal

REFUSED = ["1e3", "1E3", "4.0e4", "1_000", "\u0664\u0660", "\u00a077", "77\u2028", "0x10", "40,000", "$5", "Infinity"]


@pytest.mark.parametrize("text", REFUSED)
def test_set_spend_refuses_text_outside_the_decimal_lexical_space(tenant: Tenant, text: str) -> None:
    before = tenant.dump()
    with pytest.raises(InvalidInput) as exc:
        tenant.set_spend("meta", text)
    assert exc.value.field == "amount" and repr(text) in str(exc.value)
    assert tenant.dump() == before


@pytest.mark.parametrize("text", ["1e3", "1_000", "\u0664\u0660"])
def test_set_kpi_refuses_text_outside_the_decimal_lexical_space(tenant: Tenant, text: str) -> None:
    before = tenant.dump()
    with pytest.raises(InvalidInput) as exc:
        tenant.set_kpi("ROAS", text)
    assert exc.value.field == "value"
    assert tenant.dump() == before


@pytest.mark.parametrize(("text", "value"), [(" 34000.10 ", "34000.1"), ("\t77\n", "77"), ("+.5", "0.5"), ("7.", "7")])
def test_set_spend_keeps_every_lexical_form(tenant: Tenant, text: str, value: str) -> None:
    tenant.set_spend("meta", text)
    rows = tenant.sparql(f"SELECT ?a WHERE {{ <urn:reckon:{tenant.id}:spend:meta:monthly> mk:amount ?a }}")
    assert [Decimal(r["a"].value) for r in rows] == [Decimal(value)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789+-.eE_, \t\n\u00a0\u0664x"), max_size=8))
def test_spend_text_is_taken_exactly_when_a_memory_property_would_be(text: str) -> None:
    """Oracle: ``decimal_literal``, the rule of ``Tenant.remember`` and the tools."""
    try:
        expected: Decimal | None = Decimal(decimal_literal(text).value)
    except ValueError:
        expected = None
    if expected is not None and expected.copy_abs() >= Decimal("1e15"):
        expected = None
    try:
        got: Decimal | None = parse_model(SpendInput, platform="meta", amount=text).amount
    except InvalidInput:
        got = None
    assert got == expected
