"""CLI test helpers: run ``reckon`` in-process through ``reckon.cli.main`` (the real
exit-code mapping) with captured stdout / stderr, over a per-module data directory."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

EXAMPLES = REPO / "examples"


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(data_dir: Path, *args: str, stdin: str | None = None) -> Result:
    """``reckon --data-dir DATA_DIR ARGS...`` in-process; returns exit code and output."""
    from reckon.cli import main

    old_out, old_err, old_in = sys.stdout, sys.stderr, sys.stdin
    out, err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        code = main(["--data-dir", str(data_dir), *args])
    finally:
        sys.stdout, sys.stderr, sys.stdin = old_out, old_err, old_in
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session", autouse=True)
def _hashing_embedder() -> Iterator[None]:
    """The lexical embedder: these tests check the CLI, not the model (its import costs
    seconds per process)."""
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    yield
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory, _hashing_embedder: None) -> tuple[Path, dict[str, str]]:
    """A data directory with tenant ``acme`` onboarded from examples/acme.yaml;
    returns ``(data_dir, seed memory ids by key)``."""
    from reckon.api import Engine
    from reckon.onboarding import onboard

    d = tmp_path_factory.mktemp("cli")
    result = onboard(Engine(d), EXAMPLES / "acme.yaml")
    return d, result.memories
