"""Regression: ``reckon load`` dropped every comma of a CSV number, so a decimal comma
was read as a wrong amount without a word (``1,5`` -> 15, ``1.234,56`` -> 1.23456,
``12,34,5`` -> 12345), and it took ``1e3``, ``1_000`` and Unicode digits that every other
entry point refuses. Commas now group thousands only in groups of three."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from reckon import InvalidInput
from reckon.loaders import read_csv


@pytest.mark.parametrize("cell", ['"1,5"', '"1.234,56"', '"12,34,5"', '"1,2345"', '",500"', "1e3", "1_000",
                                  "\u0661\u0662\u0663", "\u00a05", "0x10"])
def test_a_number_outside_the_decimal_form_is_refused_with_file_and_line(tmp_path: Path, cell: str) -> None:
    f = tmp_path / "spend.csv"
    f.write_text(f"date,platform,spend\n2026-02-28,meta,10\n2026-03-01,meta,{cell}\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as ei:
        read_csv(f)
    assert ei.value.field == "spend"
    assert f"{f}:3" in str(ei.value)


@pytest.mark.parametrize(("cell", "value"), [('"1,234.50"', "1234.5"), ('"1,000"', "1000"), ('"12,345,678"', "12345678"),
                                             ("12.5", "12.5"), (" 7 ", "7"), ("-0", "0")])
def test_thousands_separators_and_plain_decimals_load(tmp_path: Path, cell: str, value: str) -> None:
    f = tmp_path / "spend.csv"
    f.write_text(f"date,platform,spend,revenue\n2026-03-01,meta,10,{cell}\n", encoding="utf-8")
    [rec] = read_csv(f)
    assert rec.revenue == Decimal(value)
