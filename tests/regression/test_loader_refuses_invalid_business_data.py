"""Regression: ``reckon load`` wrote negative / overflowing spend and read short rows as 0,
which ``Tenant.set_spend`` refuses; the tenant was left non-conformant."""

from __future__ import annotations

from pathlib import Path

import pytest

from reckon import InvalidInput
from reckon.loaders import read_csv


@pytest.mark.parametrize(
    "row, field",
    [
        ("2026-03-01,meta,-100", "spend"),
        ("2026-03-01,meta,1e309", "spend"),
        ("2026-03-01,meta,1e15", "spend"),
        ("2026-03-01,meta", "path"),
    ],
)
def test_bad_rows_are_refused_with_file_and_line(tmp_path: Path, row: str, field: str) -> None:
    f = tmp_path / "spend.csv"
    f.write_text(f"date,platform,spend\n2026-02-28,meta,10\n{row}\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as ei:
        read_csv(f)
    assert ei.value.field == field
    assert f"{f}:3" in str(ei.value)


def test_blank_cell_is_zero_but_valid_rows_load(tmp_path: Path) -> None:
    f = tmp_path / "spend.csv"
    f.write_text("date,platform,spend\n2026-03-01,meta,\n2026-03-02,meta,12.5\n", encoding="utf-8")
    recs = read_csv(f)
    assert [str(r.spend) for r in recs] == ["0", "12.5"]
