"""Input models of business data (the data pipeline's KPIs, spend, accounts,
subscription, people and teams). The models parse and
normalise the pipeline's values (types, decimals the store holds exactly, aware times)
before any triple is built (DESIGN.md, Architecture: "model (pydantic: parse, normalise,
clear errors)"); what a value must be -- spend >= 0, an ISO 4217 currency, seats >= 0 --
is the shapes' to say (``shapes/marketing.ttl``), checked on the write by the tenant
schema (:meth:`reckon.schema.TenantSchema.check_delta`), never copied here.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reckon._errors import InvalidInput
from reckon.store.terms import check_text

__all__ = [
    "AccountInput",
    "KpiInput",
    "ParticipantInput",
    "PersonInput",
    "ProjectInput",
    "SpendInput",
    "SubscriptionInput",
    "TeamInput",
    "parse_model",
]

AMOUNT_LIMIT = Decimal("1e15")
"""Spend amounts, budget caps and KPI values must be below this in magnitude (in the
record's unit or currency): larger values are never real ad-platform figures and
loaders refuse them too (``reckon.loaders``)."""


def _decimal(value: Any) -> Decimal:
    """A finite decimal below :data:`AMOUNT_LIMIT` that the store holds exactly (at most
    18 fractional digits: ``reckon.store.terms.decimal_literal``)."""
    from reckon.store.terms import decimal_literal

    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, str):
        # Text takes the one rule every entry point applies (Tenant.remember, the tools):
        # the xsd:decimal lexical space, so "1e3", "1_000" or Unicode digits are refused
        # here too instead of being read by Python's looser Decimal().
        try:
            value = Decimal(decimal_literal(value).value)
        except ValueError as e:
            raise ValueError(f"not a decimal number: {value!r} ({e})") from None
    try:
        d = value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else str(value))
    except (InvalidOperation, ValueError) as e:
        raise ValueError(f"not a decimal number: {value!r}") from e
    if not d.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    if d.copy_abs() >= AMOUNT_LIMIT:
        raise ValueError(f"{value!r} is out of range: amounts and values must be below 1e15 in magnitude")
    try:
        decimal_literal(d)
    except ValueError as e:
        raise ValueError(f"{value!r} {e}") from None
    return d


MAX_MAGNITUDE = AMOUNT_LIMIT
"""KPI values and spend amounts must be below this in magnitude (as in ``reckon.loaders``):
past it a float rendering (bundle, JSON) loses every cent long before it overflows."""


def _utc(value: datetime) -> datetime:
    """Aware date-times are returned in UTC; a naive one is refused (as in the memory
    layer: no time zone is ever guessed)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{value.isoformat()} has no time zone; give an aware datetime (e.g. with tzinfo=timezone.utc)"
        )
    return value.astimezone(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _rdf_text(cls, data: Any) -> Any:
        """Every string given (ids, names, nested lists) holds only characters RDF text
        can hold (:func:`reckon.store.terms.check_text`: no lone surrogate, no U+0000)."""
        if isinstance(data, dict):
            for k, v in data.items():
                check_text(v, str(k))
        return data


class KpiInput(_Model):
    """A current KPI value: ``metric`` (e.g. ``"ROAS"``; any mk:Metric by label or local
    name), ``value`` (decimal, in the metric's unit), optional ``platform`` (company-wide
    when absent), optional ``period`` (an mk:Period: daily, weekly, monthly, quarterly,
    yearly) and ``as_of`` (UTC; default: now)."""

    metric: str = Field(min_length=1)
    value: Decimal
    platform: str | None = None
    period: str | None = None
    as_of: datetime | None = None

    _v = field_validator("value", mode="before")(lambda cls, v: _decimal(v))
    _t = field_validator("as_of")(lambda cls, v: None if v is None else _utc(v))


class SpendInput(_Model):
    """Current spend on one ``platform`` for one ``period`` (default monthly):
    ``amount`` >= 0 in ``currency`` (ISO 4217, default USD) from ``period_start``, observed
    ``as_of`` (UTC; default: the in-graph clock, else now)."""

    platform: str = Field(min_length=1)
    amount: Decimal
    period: str = "monthly"
    period_start: date | None = None
    currency: str = "USD"
    as_of: datetime | None = None

    _v = field_validator("amount", mode="before")(lambda cls, v: _decimal(v))
    _t = field_validator("as_of")(lambda cls, v: None if v is None else _utc(v))


class AccountInput(_Model):
    """A connected ad account: ``platform``, the platform's ``account_id``, optional ``name``."""

    platform: str = Field(min_length=1)
    account_id: str = Field(min_length=1, max_length=256)
    name: str | None = Field(default=None, min_length=1)


class SubscriptionInput(_Model):
    """The company's subscription: ``plan`` name, ``status`` (an mk:SubscriptionStatus:
    active, trial, past_due, cancelled) and optional ``seats`` >= 0."""

    plan: str = Field(min_length=1)
    status: str = "active"
    seats: int | None = None


class PersonInput(_Model):
    """A person of the tenant: id (slug), optional display ``name`` and team ids."""

    person_id: str = Field(min_length=1, max_length=256)
    name: str | None = Field(default=None, min_length=1)
    teams: list[str] = Field(default_factory=list)


class TeamInput(_Model):
    """A team of the tenant: id (slug) and optional display ``name``."""

    team_id: str = Field(min_length=1, max_length=256)
    name: str | None = Field(default=None, min_length=1)


class ProjectInput(_Model):
    """A project of the tenant: id (slug), optional display ``name`` and member person ids."""

    project_id: str = Field(min_length=1, max_length=256)
    name: str | None = Field(default=None, min_length=1)
    members: list[str] = Field(default_factory=list)


class ParticipantInput(_Model):
    """A person taking part in a conversation: conversation id and person id."""

    conversation: str = Field(min_length=1, max_length=256)
    person_id: str = Field(min_length=1, max_length=256)


def parse_model(model: type[_Model], **data: Any) -> Any:
    """Build ``model`` from keyword data, turning pydantic errors into InvalidInput.

    :raises InvalidInput: naming the first offending field.
    """
    try:
        return model(**data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err.get("loc", ())) or None
        # the field and what was wrong, as every other refusal says it: not the model's class
        # name ("SpendInput: amount: ...") nor pydantic's "Value error, " prefix
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        raise InvalidInput(f"{field or 'input'}: {msg}", field=field) from None
