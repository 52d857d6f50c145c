"""The typed event graph (seed 000 "MAGMA", seed 004 "Graph Memory"): see
:mod:`reckon.events.service`."""

from reckon.events.service import (
    EDGE_TYPES,
    Entity,
    Event,
    EventGraph,
    Related,
    normalize_label,
)

__all__ = ["EDGE_TYPES", "Entity", "Event", "EventGraph", "Related", "normalize_label"]
