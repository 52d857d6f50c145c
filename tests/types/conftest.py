"""Fixtures for the memory-types tests: one Engine (shipped program) per module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from reckon.api import Engine

    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"  # these tests do not rank
    yield Engine(tmp_path_factory.mktemp("types"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old
