"""The names ``reckon`` exports (httpx practice: a sorted ``__all__`` pinned by a test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import reckon

EXPECTED = [
    "BundleItem",
    "Commit",
    "ConflictPending",
    "ContextBundle",
    "Engine",
    "EvaluationLimitExceeded",
    "ExplainError",
    "HistoryEntry",
    "InconsistentGraph",
    "InvalidInput",
    "InvalidTenantId",
    "Memory",
    "NotAuthorized",
    "Principal",
    "ProgramMismatch",
    "QueryLimitExceeded",
    "ReadOnlyQuery",
    "ReckonError",
    "ResourceLimit",
    "RestoreRefused",
    "RuleError",
    "RuleSetInvalid",
    "RuleSyntaxError",
    "SchemaError",
    "SearchHit",
    "ShapeViolation",
    "StoreError",
    "Tenant",
    "TenantClosed",
    "TenantExists",
    "TenantGone",
    "UNSET",
    "UnknownMemory",
    "UnknownTeam",
    "UnknownTenant",
    "__version__",
]


def test_all_is_sorted_and_pinned() -> None:
    assert reckon.__all__ == sorted(reckon.__all__)
    assert reckon.__all__ == EXPECTED


def test_every_exported_name_resolves() -> None:
    for name in reckon.__all__:
        assert getattr(reckon, name) is not None
    from reckon.api import Engine, Principal, Tenant

    assert reckon.Engine is Engine and reckon.Tenant is Tenant and reckon.Principal is Principal
    assert issubclass(reckon.InvalidTenantId, reckon.ReckonError)
    assert issubclass(reckon.ShapeViolation, reckon.InvalidInput)
    # the result types the facade returns are the exported classes
    from reckon.memory.models import HistoryEntry, Memory
    from reckon.recall.bundle import BundleItem, ContextBundle, SearchHit
    from reckon.store import Commit

    assert (reckon.Memory, reckon.HistoryEntry, reckon.ContextBundle, reckon.SearchHit, reckon.BundleItem,
            reckon.Commit) == (Memory, HistoryEntry, ContextBundle, SearchHit, BundleItem, Commit)
    import typing

    hints = typing.get_type_hints(Tenant.remember)
    assert hints["return"] is Memory and "kind" in hints and "fields" not in hints
    assert typing.get_type_hints(Tenant.get)["return"] is Memory


def test_unknown_attribute_raises_attribute_error() -> None:
    try:
        reckon.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert "NoSuchThing" in str(e)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_importing_reckon_does_not_import_the_facade() -> None:
    code = "import sys, reckon; print('reckon.api' in sys.modules, 'reckon.store' in sys.modules)"
    engine_dir = Path(__file__).resolve().parents[1] / "engine"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(engine_dir), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.split() == ["False", "False"]
