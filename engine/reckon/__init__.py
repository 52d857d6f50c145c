"""Reckon: a knowledge-graph reasoning engine for AI-agent memory."""

from reckon._errors import (
    ConflictPending,
    EvaluationLimitExceeded,
    ExplainError,
    InvalidInput,
    InvalidTenantId,
    NotAuthorized,
    ReadOnlyQuery,
    ReckonError,
    RestoreRefused,
    RuleError,
    RuleSetInvalid,
    RuleSyntaxError,
    SchemaError,
    ShapeViolation,
    StoreError,
    TenantExists,
    UnknownMemory,
    UnknownTenant,
)

__version__ = "0.1.0"

__all__ = sorted(
    [
        "ConflictPending",
        "EvaluationLimitExceeded",
        "ExplainError",
        "InvalidInput",
        "InvalidTenantId",
        "NotAuthorized",
        "ReadOnlyQuery",
        "ReckonError",
        "RestoreRefused",
        "RuleError",
        "RuleSetInvalid",
        "RuleSyntaxError",
        "SchemaError",
        "ShapeViolation",
        "StoreError",
        "TenantExists",
        "UnknownMemory",
        "UnknownTenant",
        "__version__",
    ]
)
