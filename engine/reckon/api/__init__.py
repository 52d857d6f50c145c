"""The Python facade: :class:`Engine` (tenants, rule program) and :class:`Tenant`
(SPARQL, business data, clock, export, memory operations). Thin by design: the work
is done in ``reckon.store``, ``reckon.memory`` and ``reckon.datalog``."""

from reckon.api._engine import DEFAULT_RULES, Engine
from reckon.api._models import (
    AccountInput,
    KpiInput,
    PersonInput,
    Principal,
    SpendInput,
    SubscriptionInput,
    TeamInput,
)
from reckon.api._tenant import UNSET, Tenant, Unset

__all__ = [
    "AccountInput",
    "DEFAULT_RULES",
    "Engine",
    "KpiInput",
    "PersonInput",
    "Principal",
    "SpendInput",
    "SubscriptionInput",
    "TeamInput",
    "Tenant",
    "UNSET",
    "Unset",
]
