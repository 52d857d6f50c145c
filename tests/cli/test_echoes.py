"""What the CLI prints back is what the store holds: ``spend set`` / ``kpi set`` echo the
canonical ``xsd:decimal`` a query reads, a refused business value is ``invalid data`` (not
``invalid memory``), and ``get`` prints date-times in ISO 8601 as ``--json`` does."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from reckon.cli._memory import shown_value
from tests.cli.conftest import run_cli

T = ("--tenant", "acme")


def _tenant(tmp_path: Path) -> Path:
    d = tmp_path / "d"
    assert run_cli(d, "tenant", "create", "acme").code == 0
    return d


def test_spend_and_kpi_echo_the_canonical_decimal_the_store_holds(tmp_path: Path) -> None:
    d = _tenant(tmp_path)
    for given_text, canonical in (("40000.500", "40000.5"), ("0.10", "0.1"), ("007", "7")):
        r = run_cli(d, "spend", "set", "meta", given_text, *T)
        assert r.code == 0, r.err
        assert r.out.strip() == f"spend meta monthly = {canonical} USD", (given_text, r.out)
        assert Decimal(canonical) == Decimal(given_text)
    r = run_cli(d, "kpi", "set", "ROAS", "2.50", *T)
    assert r.code == 0 and r.out.strip() == "KPI ROAS = 2.5", (r.out, r.err)


def test_a_refused_spend_is_invalid_data_not_an_invalid_memory(tmp_path: Path) -> None:
    d = _tenant(tmp_path)
    before = run_cli(d, "tenant", "export", "acme", "-o", str(tmp_path / "before.trig"))
    assert before.code == 0
    r = run_cli(d, "spend", "set", "meta", "-5", *T)
    assert r.code == 1, r.err
    first = r.err.strip().splitlines()[0]
    assert first.startswith("invalid data: "), first
    assert "memory" not in first
    assert "amount" in r.err and "-5" in r.err
    assert run_cli(d, "tenant", "export", "acme", "-o", str(tmp_path / "after.trig")).code == 0

    def body(name: str) -> list[str]:  # the export less its header comments (they hold the time of export)
        return [x for x in (tmp_path / name).read_text().splitlines() if not x.startswith("#")]

    assert body("before.trig") == body("after.trig")


_JSON = TypeAdapter(datetime)


@settings(max_examples=200, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                                               timezone(timedelta(hours=-8)), timezone(timedelta(0))])))
def test_get_prints_a_date_time_as_iso_8601_like_json(v: datetime) -> None:
    text = shown_value(v)
    assert text == _JSON.dump_python(v, mode="json")  # what --json and REST give
    assert "T" in text and " " not in text
    back = datetime.fromisoformat(text)
    assert back == v and back.utcoffset() == v.utcoffset()  # the same instant and offset, every microsecond


def test_get_prints_dates_and_lists_of_them_in_iso_8601() -> None:
    assert shown_value(date(2026, 3, 1)) == "2026-03-01"
    at = datetime(2026, 12, 31, 14, 59, 59, 999999, tzinfo=UTC)
    assert shown_value([at, Decimal("1.50")]) == "[2026-12-31T14:59:59.999999Z, 1.50]"
