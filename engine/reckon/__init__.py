"""Reckon: a knowledge-graph reasoning engine for AI-agent memory."""

from reckon._errors import (
    ConflictPending,
    EvaluationLimitExceeded,
    ExplainError,
    InconsistentGraph,
    InvalidInput,
    InvalidTenantId,
    NotAuthorized,
    ProgramMismatch,
    QueryLimitExceeded,
    ReadOnlyQuery,
    ReckonError,
    ResourceLimit,
    RestoreRefused,
    RuleError,
    RuleSetInvalid,
    RuleSyntaxError,
    SchemaError,
    ShapeViolation,
    StoreError,
    TenantClosed,
    TenantExists,
    TenantGone,
    UnknownMemory,
    UnknownTeam,
    UnknownTenant,
)

__version__ = "0.1.0"

# The facade is imported lazily (PEP 562) so that ``import reckon`` stays light and lower
# layers (``reckon.datalog``, ``reckon.store`` ...) never import the facade through it.
_LAZY = {
    "Engine": "reckon.api",
    "Tenant": "reckon.api",
    "Principal": "reckon.api",
    # the result types the facade returns (documented classes users annotate with)
    "BundleItem": "reckon.recall.bundle",
    "Commit": "reckon.store",
    "ContextBundle": "reckon.recall.bundle",
    "HistoryEntry": "reckon.memory.models",
    "Memory": "reckon.memory.models",
    "SearchHit": "reckon.recall.bundle",
    "UNSET": "reckon.api",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reckon' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
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
