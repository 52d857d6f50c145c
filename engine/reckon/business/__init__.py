"""Business data below the facade: the typed inputs (:mod:`reckon.business.models`)
and the writers that turn them into the tenant's BUSINESS triples
(:mod:`reckon.business.writers`). Used by ``reckon.api`` (``Tenant.set_kpi`` ...) and by
``reckon.loaders``; imports only ``reckon.store`` and ``reckon.vocab``.
"""


from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reckon.business.models import (
        AccountInput,
        KpiInput,
        PersonInput,
        SpendInput,
        SubscriptionInput,
        TeamInput,
        parse_model,
    )

__all__ = [
    "AccountInput",
    "KpiInput",
    "PersonInput",
    "SpendInput",
    "SubscriptionInput",
    "TeamInput",
    "parse_model",
]


def __getattr__(name: str) -> Any:
    """The input models, imported on first use (PEP 562): ``reckon.business.writers``
    and a first memory write need no pydantic model of business data."""
    if name in __all__:
        from reckon.business import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
