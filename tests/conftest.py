"""Shared test fixtures: where ``../shared`` is, and the CI rule for missing data.

A suite that needs ``../shared/`` fails in CI (``CI=true``) when the data is missing
and skips elsewhere (with the reason printed).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RECKON_SHARED", REPO.parent / "shared")).resolve()


def shared_path(*parts: str) -> Path:
    """Path under ``../shared``; fails in CI and skips elsewhere when it is missing."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        msg = f"shared data missing: {p} (set RECKON_SHARED or place ../shared beside the repo)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return p


def shared_path_or_fail_at_collection(*parts: str) -> Path | None:
    """For parametrized suites built at collection time: returns None if missing outside CI,
    raises in CI so that the run is red, never silently empty."""
    p = SHARED.joinpath(*parts)
    if p.exists():
        return p
    if os.environ.get("CI", "").lower() == "true":
        raise RuntimeError(f"shared data missing in CI: {p}")
    return None


@pytest.fixture(scope="session", autouse=True)
def _cache_outside_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ONNX graph cache (``$RECKON_CACHE_DIR``, :mod:`reckon.recall._minilm_ort`) of
    the whole session, and of every process a test starts, is a temporary directory:
    tests never write into the user's ``~/.cache/reckon``."""
    old = os.environ.get("RECKON_CACHE_DIR")
    path = tmp_path_factory.mktemp("reckon-cache")
    os.environ["RECKON_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("RECKON_CACHE_DIR", None)
    else:
        os.environ["RECKON_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def sparql_servers() -> Iterator[dict[str, Any]]:
    """The session's SPARQL servers on loopback by kind (``oxigraph``, ``virtuoso``),
    started on first use by ``tests.store.servers.server_for`` and stopped by pid here."""
    servers: dict[str, Any] = {}
    yield servers
    for s in servers.values():
        s.stop()


@contextlib.contextmanager
def embedder_env(name: str) -> Iterator[None]:
    """``RECKON_EMBEDDER`` set to ``name`` inside the block, restored after (module-scoped
    engines cannot use ``monkeypatch``)."""
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("RECKON_EMBEDDER", None)
        else:
            os.environ["RECKON_EMBEDDER"] = old
