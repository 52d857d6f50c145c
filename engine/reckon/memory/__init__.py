"""Memories: pydantic models, the validated and authorized write path, dedup, conflict
detection, supersession and lineage (seed §3–§5, §9; DESIGN.md "Memories").

Public API::

    MemoryService(store, judge=None, validator=None)   one tenant's memory operations
        .remember(...) .update(...) .supersede(...) .restore(...) .delete(...)
        .get(id) .memories(...) .history(id)
    Principal(person, teams, role)                      who is acting (re-exported by reckon.api)
    Memory, MemoryInput, MemoryPatch, HistoryEntry, Conflict
    ConflictJudge (protocol), LexicalJudge, Subject     pluggable conflict detection
"""

from reckon.memory.conflicts import ConflictJudge, LexicalJudge, Subject
from reckon.memory.models import (
    Conflict,
    HistoryEntry,
    Memory,
    MemoryInput,
    MemoryPatch,
    Principal,
    default_confidence,
    normalise_label,
)
from reckon.memory.service import MemoryService

__all__ = [
    "Conflict",
    "ConflictJudge",
    "HistoryEntry",
    "LexicalJudge",
    "Memory",
    "MemoryInput",
    "MemoryPatch",
    "MemoryService",
    "Principal",
    "Subject",
    "default_confidence",
    "normalise_label",
]
