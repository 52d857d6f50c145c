"""The Python facade: :class:`Engine` (tenants, rule program) and :class:`Tenant`
(SPARQL, business data, clock, export, memory operations). Thin by design: the work
is done in ``reckon.store``, ``reckon.memory`` and ``reckon.datalog``."""

from typing import TYPE_CHECKING, Any

from reckon.api._engine import DEFAULT_RULES, Engine
from reckon.api._tenant import UNSET, Tenant, Unset
from reckon.memory.models import Principal

if TYPE_CHECKING:  # pragma: no cover
    from reckon.business.models import AccountInput, KpiInput, PersonInput, SpendInput, SubscriptionInput, TeamInput

_LAZY = frozenset(("AccountInput", "KpiInput", "PersonInput", "SpendInput", "SubscriptionInput", "TeamInput"))

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


def __getattr__(name: str) -> Any:
    """The business-data input models, imported on first use (PEP 562): a process
    whose first call is ``remember`` / ``search`` / ``context`` does not build them."""
    if name in _LAZY:
        from reckon.business import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
