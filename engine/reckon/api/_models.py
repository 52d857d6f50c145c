"""Input models of the facade: who is acting (:class:`Principal`, the memory layer's one
class) and business data (:mod:`reckon.business.models`), re-exported."""

from reckon.business.models import (
    AMOUNT_LIMIT,
    MAX_MAGNITUDE,
    AccountInput,
    KpiInput,
    ParticipantInput,
    PersonInput,
    ProjectInput,
    SpendInput,
    SubscriptionInput,
    TeamInput,
    parse_model,
)
from reckon.memory.models import Principal

__all__ = [
    "AMOUNT_LIMIT",
    "MAX_MAGNITUDE",
    "AccountInput",
    "KpiInput",
    "ParticipantInput",
    "PersonInput",
    "Principal",
    "ProjectInput",
    "SpendInput",
    "SubscriptionInput",
    "TeamInput",
    "parse_model",
]
