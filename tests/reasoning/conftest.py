"""Fixtures for the reasoning suites: shipped rule files, closure helper, LUBM(1) data.

The LUBM loader lives in ``bench/lubm.py`` (one module shared with ``bench/reasoning.py``);
the repository root is put on ``sys.path`` so that ``from bench.lubm import ...`` works.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from pyoxigraph import Triple

from tests.conftest import REPO, shared_path

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RULES_DIR = REPO / "rules"


def load_shipped(*names: str):  # -> RuleSet
    """Parse shipped rule files from ``rules/`` (by file name) and merge them."""
    from reckon.datalog.srl import parse_srl

    sets = [parse_srl((RULES_DIR / n).read_text(encoding="utf-8"), file=str(RULES_DIR / n)) for n in names]
    out = sets[0]
    for s in sets[1:]:
        out = out + s
    return out


def closure(ruleset, triples: Iterable[Triple]) -> set[Triple]:
    """Base triples plus everything the rule set infers from them (Reasoner.load)."""
    from reckon.datalog.evaluate import Reasoner

    r = Reasoner(ruleset)
    r.load(triples)
    return set(r.base()) | set(r.inferred())


@pytest.fixture(scope="session")
def lubm_dir() -> Path:
    """``../shared/data/lubm`` (fails in CI, skips elsewhere when missing)."""
    return shared_path("data", "lubm")
