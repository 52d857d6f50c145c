"""CI runs the static checks before the tests and fails on an error (issue 10): ``.ci/run``
stops at the first failing command (``set -e``) and runs ``ruff check .`` and ``mypy``
(strict, configured in pyproject.toml) before ``pytest``; both tools exit non-zero on a
finding, shown here on a file with one error of each kind."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def test_ci_runs_ruff_and_mypy_before_the_tests_and_stops_on_failure() -> None:
    lines = [ln.strip() for ln in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "set -euo pipefail" in lines
    ruff, mypy = lines.index("ruff check ."), lines.index("mypy")
    tests = next(i for i, ln in enumerate(lines) if ln.endswith("python -m pytest -q"))
    assert ruff < tests and mypy < tests


def test_the_tools_fail_on_an_error_with_the_committed_configuration(tmp_path: Path) -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.skip("ruff is not installed here (it is in the test extra)")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    pkg = tmp_path / "engine" / "reckon"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""x"""\n')
    (pkg / "bad.py").write_text('import os\n\n\ndef f(x: int) -> str:\n    return x\n')
    r = subprocess.run([ruff, "check", "."], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0 and "F401" in r.stdout
    m = subprocess.run([sys.executable, "-m", "mypy"], cwd=tmp_path, capture_output=True, text=True)
    assert m.returncode != 0 and "Incompatible return value type" in m.stdout
