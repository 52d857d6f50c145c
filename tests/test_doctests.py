"""Docstring examples run as tests (pyoxigraph's practice): every module listed here has
examples that must keep working as written (issue 10)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "reckon.vocab",
    "reckon.schema.templates",
    "reckon.schema.tenant",
    "reckon.schema.catalogue",
    "reckon.store.terms",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
