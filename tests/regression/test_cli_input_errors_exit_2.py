"""Regression: bad user input must exit 2 (usage / input error), never 3 (internal error).

Found by a fresh-user run: a non-UTF-8 rule file, a missing rule file, an unwritable
output path and an empty ``--as`` each ended in "internal error" with exit 3.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import run_cli


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    binary = tmp_path / "bin.srl"
    binary.write_bytes(b"\xff\xfe not text")
    data = tmp_path / "d.nt"
    data.write_text("<http://a/x> <http://a/p> <http://a/y> .\n", encoding="utf-8")
    return {"binary": binary, "data": data}


def test_non_utf8_rule_file_is_an_input_error(tmp_path: Path, files: dict[str, Path]) -> None:
    r = run_cli(tmp_path, "rules", "check", str(files["binary"]))
    assert r.code == 2, r.err
    assert "UTF-8" in r.err


def test_missing_rule_file_for_infer_is_an_input_error(tmp_path: Path, files: dict[str, Path]) -> None:
    r = run_cli(tmp_path, "infer", "--rules", str(tmp_path / "nope.srl"), str(files["data"]))
    assert r.code == 2, r.err
    assert "nope.srl" in r.err


def test_unwritable_output_is_an_input_error(tmp_path: Path, files: dict[str, Path]) -> None:
    out = tmp_path / "missing-dir" / "x.nt"
    r = run_cli(tmp_path, "infer", "--rules", "rdfs.srl", str(files["data"]), "-o", str(out))
    assert r.code == 2, r.err
    assert "missing-dir" in r.err


def test_empty_person_is_an_input_error(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "tenant", "create", "acme").code == 0
    r = run_cli(tmp_path, "remember", "--tenant", "acme", "--as", "", "--kind", "fact",
                "--label", "X", "--content", "Y")
    assert r.code == 2, r.err
    assert "internal error" not in r.err
