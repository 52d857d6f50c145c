from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No MiniLM in these tests (ranking quality is measured by bench/recall_locomo.py)."""
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    monkeypatch.setenv("RECKON_JOBS_URL", "off")
    yield


@pytest.fixture()
def tenant(tmp_path):
    from reckon.api import Engine

    return Engine(tmp_path / "data").create_tenant("acme")
