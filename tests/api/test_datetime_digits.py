"""A date-time given as text keeps every digit it has, or is refused: ``xsd:dateTime``
allows any number of fractional-second digits, the store keeps six, and pydantic /
``datetime.fromisoformat`` cut a seventh silently (``12:00:00.1234567+05:30`` was stored
as ``06:30:00.123456Z``). Property-based at ``Tenant.remember``, the oracle being exact
integer arithmetic on the text (not ``datetime``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import InvalidInput
from reckon.api import Engine
from reckon.memory.models import Principal

OPS = Principal.operator()


def _oracle(day: datetime, digits: str, offset_min: int) -> datetime | None:
    """The exact instant in UTC, or None when it needs more than microseconds."""
    frac = int(digits) * 10 ** (9 - len(digits))  # nanoseconds, exact
    if frac % 1000:
        return None
    return (day - timedelta(minutes=offset_min)).replace(tzinfo=UTC) + timedelta(microseconds=frac // 1000)


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    t = Engine(Path(tmp_path_factory.mktemp("dt")), embedder="hashing").create_tenant("acme")
    yield t
    t.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    day=st.datetimes(min_value=datetime(2030, 1, 1), max_value=datetime(2090, 1, 1)).map(lambda d: d.replace(microsecond=0)),
    digits=st.text("0123456789", min_size=1, max_size=9),
    offset_min=st.integers(-14 * 60, 14 * 60),
)
def test_expires_at_text_keeps_every_digit_or_is_refused(tenant, day: datetime, digits: str, offset_min: int) -> None:  # type: ignore[no-untyped-def]
    sign = "+" if offset_min >= 0 else "-"
    off = f"{sign}{abs(offset_min) // 60:02d}:{abs(offset_min) % 60:02d}"
    text = f"{day:%Y-%m-%dT%H:%M:%S}.{digits}{off}"
    want = _oracle(day, digits, offset_min)
    before = tenant.store.generation
    kw = dict(kind="fact", scope="company", importance=3, source="operator", principal=OPS,
              label=f"expiry {text}", content=f"expires at {text}")
    if want is None:
        with pytest.raises(InvalidInput, match="fractional-second digits"):
            tenant.remember(**kw, expires_at=text)
        assert tenant.store.generation == before  # nothing written
    else:
        r = tenant.remember(**kw, expires_at=text)
        assert tenant.get(r.id, principal=OPS).expires_at == want


def test_zeros_after_the_sixth_digit_change_nothing_and_a_comma_is_a_decimal_mark() -> None:
    from reckon.store.terms import check_datetime_text, parse_datetime_text

    assert parse_datetime_text("2026-03-01T12:00:00.1234560000Z") == datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert check_datetime_text("2026-03-01T12:00:00,5+01:00") == "2026-03-01T12:00:00,5+01:00"
    with pytest.raises(ValueError, match="10 fractional-second digits"):
        parse_datetime_text("2026-03-01T12:00:00,1234567891Z")


_CASES = dict(
    day=st.datetimes(min_value=datetime(2030, 1, 1), max_value=datetime(2090, 1, 1)).map(lambda d: d.replace(microsecond=0)),
    digits=st.text("0123456789", min_size=1, max_size=9),
    offset_min=st.integers(-14 * 60, 14 * 60),
)


def _text(day: datetime, digits: str, offset_min: int) -> str:
    sign = "+" if offset_min >= 0 else "-"
    return f"{day:%Y-%m-%dT%H:%M:%S}.{digits}{sign}{abs(offset_min) // 60:02d}:{abs(offset_min) % 60:02d}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**_CASES)
def test_record_turn_tool_at_keeps_every_digit_or_is_refused(tenant, day: datetime, digits: str, offset_min: int) -> None:  # type: ignore[no-untyped-def]
    """The MCP ``record_turn`` tool (``handle_turn_tool``): the text went through
    ``datetime.fromisoformat``, which cut a seventh digit silently."""
    from reckon.api._turn_tools import handle_turn_tool

    text = _text(day, digits, offset_min)
    want = _oracle(day, digits, offset_min)
    conv = f"c{abs(hash(text))}"
    r = handle_turn_tool(tenant, "record_turn", {"conversation": conv, "text": "hello", "role": "user",
                                                "speaker": "ann", "at": text}, OPS)
    if want is None:
        assert r["ok"] is False and "fractional-second digits" in r["error"]["message"], r
        assert tenant.turns(conv) == []
    else:
        assert r["ok"] is True, r
        assert tenant.turns(conv)[0].at == want


@settings(max_examples=60, deadline=None)
@given(**_CASES)
def test_cli_time_options_keep_every_digit_or_are_refused(day: datetime, digits: str, offset_min: int) -> None:
    """``reckon remember --expires`` / ``history --since`` (``parse_when``): same rule, exit 2."""
    from reckon.cli._memory import parse_when

    text = _text(day, digits, offset_min)
    want = _oracle(day, digits, offset_min)
    if want is None:
        with pytest.raises(Exception) as err:  # noqa: PT011 - the CLI's exit (message printed to stderr)
            parse_when(text, "--expires")
        assert getattr(err.value, "exit_code", None) == 2
    else:
        assert parse_when(text, "--expires") == want
    for edge in ("2026-12-31T23:59:59.999999Z", "2026-01-01T00:00:00.000000-00:00", "2026-06-30T23:59:59.9999990+05:30"):
        assert parse_when(edge, "--expires") is not None
