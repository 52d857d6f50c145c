"""Business data below the facade: the typed inputs (:mod:`reckon.business.models`)
and the writers that turn them into the tenant's BUSINESS triples
(:mod:`reckon.business.writers`). Used by ``reckon.api`` (``Tenant.set_kpi`` ...) and by
``reckon.loaders``; imports only ``reckon.store`` and ``reckon.vocab``.
"""

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
