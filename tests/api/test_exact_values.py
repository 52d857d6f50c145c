"""Defects a fresh user found, at the public API (issue 10 follow-up): xsd:decimal values
come back exact (``decimal.Decimal``), importance takes integers only, and ``sh:pattern``
follows XPath regex rules (``$`` is the end of the string, a trailing newline does not
pass). The store is left as it was by every refused write."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon._errors import InvalidInput, ShapeViolation
from reckon.api import Principal, Tenant
from reckon.recall import render

OPS = Principal.operator("dana")


def _budget(tenant: Tenant, amount: object, *, platform: str = "google", currency: str = "USD", **over: object):
    fields = dict(kind="objective", scope="company", importance=5, source="operator",
                  label=f"{platform} weekly cap", content=f"Keep {platform} under the cap each week.",
                  subclass="BudgetConstraintMemory",
                  properties={"platform": platform, "amount": amount, "currency": currency, "period": "weekly"})
    fields.update(over)
    return tenant.remember(principal=OPS, **fields)


# --------------------------------------------------------------------------- decimals
LONG = "12345678901234.123456789012345678"

#: amounts the store holds exactly: >= 0, below 1e15, at most 18 fractional digits
amounts = st.tuples(st.integers(0, 10**15 - 1), st.integers(0, 10**18 - 1), st.integers(0, 18)).map(
    lambda t: Decimal(t[0]) + (Decimal(t[1] % 10 ** t[2]).scaleb(-t[2]) if t[2] else Decimal(0)))


def test_a_long_decimal_comes_back_with_every_digit(tenant: Tenant) -> None:
    m = _budget(tenant, LONG)
    got = tenant.get(m.id).properties["amount"]
    assert isinstance(got, Decimal) and got == Decimal(LONG) and str(got) == LONG
    m = _budget(tenant, Decimal(LONG), platform="bing")
    assert tenant.get(m.id).properties["amount"] == Decimal(LONG)
    dumped = tenant.get(m.id).model_dump(mode="json")["properties"]["amount"]
    assert dumped == LONG  # JSON: the exact lexical form, as a string


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(d=amounts, as_text=st.booleans())
def test_any_amount_round_trips_exactly(tenant: Tenant, d: Decimal, as_text: bool) -> None:
    m = tenant.memories(subclass="BudgetConstraintMemory")
    if not m:
        first = _budget(tenant, "1")
        mid = first.id
    else:
        mid = m[0].id
    tenant.update(mid, principal=OPS, properties={"amount": format(d, "f") if as_text else d})
    got = tenant.get(mid).properties["amount"]
    assert isinstance(got, Decimal)
    assert got == d  # numerically equal: the oracle is the value given
    assert tenant.get(mid).model_dump(mode="json")["properties"]["amount"] == format(got, "f")


def test_statuses_are_decimals_and_the_bundle_renders_as_before(tenant: Tenant) -> None:
    cap = _budget(tenant, "40000.00", platform="meta", label="Meta weekly cap")
    tenant.set_spend("meta", "34000", period="weekly")
    m = tenant.get(cap.id)
    assert m.status["budgetStatus"] == "near_limit"
    assert isinstance(m.status["utilisation"], Decimal) and m.status["utilisation"] == Decimal("0.85")
    assert m.status["currentSpend"] == Decimal("34000")
    text = tenant.context(OPS).render()
    assert "near_limit — 85 % ($34,000 of $40,000 weekly)" in text
    # the render layer sees the same text whether the values are exact or floats
    templates = tenant.memory.schema.templates("statusTemplate")

    def lookup(prop: str, predicate: str) -> str | None:
        return None

    exact = render.status_line(m.status, m.properties, templates, lookup)
    floats = render.status_line({k: float(v) if isinstance(v, Decimal) else v for k, v in m.status.items()},
                                {k: float(v) if isinstance(v, Decimal) else v for k, v in m.properties.items()},
                                templates, lookup)
    assert exact == floats


@pytest.mark.parametrize("bad", ["1e3", "1E3", "4.0e4", "NaN", "INF", "-inf", "0x10", "40,000", "$40000", "", "1_000",
                                 "\u00a077", "\u200977", "77\u2028", "\u300077", "\u0664\u0660", "\x0b77"])
def test_decimal_text_must_be_in_the_xsd_decimal_lexical_space(tenant: Tenant, bad: str) -> None:
    before = tenant.dump()
    with pytest.raises(InvalidInput) as exc:
        _budget(tenant, bad, platform="tiktok")
    # a control character is refused by the RDF text check, naming its offset instead
    assert exc.value.field == "properties.amount" and (repr(bad) in str(exc.value) or "U+000B at character offset 0" in str(exc.value))
    assert tenant.dump() == before


@pytest.mark.parametrize(("text", "value"), [(" 40000.00 ", "40000"), ("+.5", "0.5"), ("7.", "7"), ("-0.0", "0"),
                                             ("\t77\n", "77"), ("42000\n", "42000"), ("\r\n 5 \r\n", "5")])
def test_every_decimal_lexical_form_is_taken(tenant: Tenant, text: str, value: str) -> None:
    m = _budget(tenant, text, platform="linkedin", label=f"linkedin cap {text!r}")
    assert tenant.get(m.id).properties["amount"] == Decimal(value)


def test_the_tool_schema_offers_a_decimal_as_number_or_exact_text(tenant: Tenant) -> None:
    import re

    remember = next(t for t in tenant.tool_definitions("anthropic") if t["name"] == "remember")
    budget = next(v for v in remember["input_schema"]["properties"]["subclass"]["oneOf"]
                  if v["title"] == "BudgetConstraintMemory")
    amount = budget["properties"]["properties"]["properties"]["amount"]
    assert amount["type"] == ["number", "string"]
    assert re.search(amount["pattern"], "40000.00") and not re.search(amount["pattern"], "1e3")
    r = tenant.handle_tool_call("remember", {
        "label": "Meta cap", "content": "Meta under the cap", "kind": "objective", "scope": "company",
        "importance": 5, "subclass": {"name": "BudgetConstraintMemory", "properties": {
            "platform": "meta", "amount": "40000.10", "currency": "USD", "period": "Monthly"}}}, OPS)
    assert r["ok"], r
    assert r["memory"]["properties"]["amount"] == "40000.1"  # the exact value, as text


@pytest.mark.parametrize("text", [" 40000.00 ", "\t77\n", "42000\n", "1e3", "\u00a077", "77\u2028", "\u0664\u0660",
                                  "40,000"])
def test_the_tool_and_python_take_the_same_decimal_texts(tenant: Tenant, text: str) -> None:
    """One rule for decimal text at every entry point: what ``Tenant.remember`` keeps,
    a tool call keeps (the same value); what it refuses, a tool call refuses."""
    try:
        kept = _budget(tenant, text, platform="twitter", label=f"twitter cap {text!r}")
    except InvalidInput:
        kept = None
    r = tenant.handle_tool_call("remember", {
        "label": f"bing tool cap {text!r}", "content": "Bing under the cap", "kind": "objective",
        "scope": "company", "importance": 5, "subclass": {"name": "BudgetConstraintMemory", "properties": {
            "platform": "bing", "amount": text, "currency": "USD", "period": "weekly"}}}, OPS)  # any case, as Python
    if kept is None:
        assert not r["ok"] and r["error"]["field"] == "subclass.properties.amount", r
    else:
        assert r["ok"], r
        assert Decimal(r["memory"]["properties"]["amount"]) == tenant.get(kept.id).properties["amount"]


# --------------------------------------------------------------------------- importance
@pytest.mark.parametrize("bad", ["5", "05", " 4", 5.0, 4.0, True, "high", [5], Decimal(5)])
def test_importance_takes_an_integer_only(tenant: Tenant, bad: object) -> None:
    before = tenant.dump()
    with pytest.raises(InvalidInput) as exc:
        tenant.remember(principal=OPS, kind="fact", scope="company", importance=bad, source="operator",
                        label="Office hours", content="The office opens at nine.")
    assert exc.value.field == "importance" and repr(bad) in str(exc.value)
    assert tenant.dump() == before
    m = tenant.remember(principal=OPS, kind="fact", scope="company", importance=3, source="operator",
                        label="Office hours", content="The office opens at nine.")
    before = tenant.dump()
    with pytest.raises(InvalidInput) as exc:
        tenant.update(m.id, principal=OPS, importance=bad)
    assert exc.value.field == "importance"
    assert tenant.dump() == before


# --------------------------------------------------------------------------- sh:pattern
@pytest.mark.parametrize("currency", ["USD\n", "USD\r\n", "\nUSD", "US\nD", "usd", "USDX"])
def test_a_pattern_does_not_let_a_newline_through(tenant: Tenant, currency: str) -> None:
    before = tenant.dump()
    with pytest.raises(ShapeViolation) as exc:
        _budget(tenant, "100", currency=currency)
    assert "currency" in str(exc.value)
    assert tenant.dump() == before


# --------------------------------------------------------------------------- ISO 4217
@pytest.mark.parametrize("code", ["XYZ", "ABC", "EURO", "usd", "U$D"])
def test_a_currency_must_be_an_iso4217_code(tenant: Tenant, code: str) -> None:
    before = tenant.dump()
    with pytest.raises(ShapeViolation) as exc:
        _budget(tenant, "100", currency=code)
    assert f"with value {code}" in str(exc.value) and "ISO 4217" in str(exc.value)
    with pytest.raises(ShapeViolation) as exc:
        tenant.set_spend("google", "100", currency=code)
    assert f"with value {code}" in str(exc.value)
    assert tenant.dump() == before


@pytest.mark.parametrize("code", ["EUR", "JPY", "CHF", "XAU"])
def test_real_codes_are_taken(tenant: Tenant, code: str) -> None:
    m = _budget(tenant, "100", currency=code, label=f"{code} cap")
    assert tenant.get(m.id).properties["currency"] == code
    tenant.set_spend("google", "10", currency=code)
