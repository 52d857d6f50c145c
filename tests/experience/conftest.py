"""Fixtures for the experience tests (hashing embedder; the ranking test loads MiniLM itself): one Engine (shipped program) per module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from reckon.api import Engine

    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"  # lexical unless a test asks for the model
    yield Engine(tmp_path_factory.mktemp("experience"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old
