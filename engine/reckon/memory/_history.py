"""History and lineage of memories: the supersession chain in both directions, in-place
revisions and deletion tombstones (seed 003 §9 "history").
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from typing import Literal as TLiteral

from pyoxigraph import NamedNode

from reckon._errors import UnknownMemory
from reckon.memory import _codec as C
from reckon.memory import _rdf as R
from reckon.memory.models import HistoryEntry, Principal, Revision

if TYPE_CHECKING:
    from reckon.memory.service import MemoryService

__all__ = ["history", "history_entry", "older"]


def history(svc: MemoryService, memory_id: str, *, principal: Principal | None = None) -> list[HistoryEntry]:
    """:meth:`reckon.memory.service.MemoryService.history` (documented there)."""
    if principal is not None and not principal.is_operator:
        svc._load_for(memory_id, principal)
    start = history_entry(svc, memory_id)
    if start is None:
        raise svc._absent(memory_id)
    seen: dict[str, HistoryEntry] = {start.id: start}
    todo = [start]
    while todo:
        cur = todo.pop()
        for nid in [*cur.superseded_by, *cur.supersedes]:
            if nid in seen:
                continue
            entry = history_entry(svc, nid)
            if entry is None:  # pragma: no cover - a pointer to nothing (tenants before tombstones)
                continue
            seen[nid] = entry
            todo.append(entry)
    out = list(seen.values())
    if principal is not None and not principal.is_operator:
        out = [e for e in out if e.id == start.id or svc.readable(e.id, principal)]
    far = datetime.min.replace(tzinfo=UTC)
    out.sort(key=lambda e: (e.created_at or e.deleted_at or far, e.id))
    return out


def history_entry(svc: MemoryService, memory_id: str) -> HistoryEntry | None:
    """The history entry of a memory or of a deleted memory's tombstone."""
    try:
        m = svc.iri(memory_id)
    except UnknownMemory:
        return None
    asserted, inferred = svc._node(m)
    hex_id = m.value.rsplit(":", 1)[-1]
    olds = older(svc, m.value)
    with svc._view() as v:
        revs = []
        for r in v.subjects(R.P_REVISION_OF, m, R.MEMORIES):
            d: dict[Any, list[Any]] = defaultdict(list)
            for q in v.quads(r, None, None, R.MEMORIES):
                d[q.predicate].append(q.object)
            by = d.get(R.P_REVISED_BY)
            revs.append(Revision(
                label=d[R.LABEL][0].value if d.get(R.LABEL) else "",
                content=d[R.P_CONTENT][0].value if d.get(R.P_CONTENT) else None,
                revised_at=R.python_value(d[R.P_REVISED_AT][0]) if d.get(R.P_REVISED_AT) else None,
                revised_by=R.slug_of(by[0].value) if by else None,
            ))
    far = datetime.min.replace(tzinfo=UTC)
    revs.sort(key=lambda r: (r.revised_at or far, r.label))
    superseded_by = sorted(o.value.rsplit(":", 1)[-1] for o in asserted.get(R.P_SUPERSEDED_BY, []))
    if R.P_KIND not in asserted:
        if R.DELETED not in asserted.get(R.A, []):
            return None
        by = asserted.get(R.P_DELETED_BY)
        return HistoryEntry(
            id=hex_id, label=None, content=None, source=None, author=None, created_at=None, updated_at=None,
            superseded_by=superseded_by, supersedes=olds, active=False, event="deleted",
            deleted_at=R.python_value(asserted[R.P_DELETED_AT][0]) if asserted.get(R.P_DELETED_AT) else None,
            deleted_by=R.slug_of(by[0].value) if by else None,
        )
    mem = C.to_memory(svc, m, asserted, inferred)
    event: TLiteral["created", "updated", "superseded", "current", "deleted"]
    if mem.superseded_by:
        event = "superseded"
    elif revs or (mem.updated_at and mem.created_at and mem.updated_at > mem.created_at):
        event = "updated"
    else:
        event = "current" if mem.active else "created"
    return HistoryEntry(
        id=mem.id, label=mem.label, content=mem.content, source=mem.source, author=mem.author,
        created_at=mem.created_at, updated_at=mem.updated_at,
        superseded_by=mem.superseded_by,
        supersedes=sorted(set(mem.supersedes) | set(olds)),
        active=mem.active, event=event, revisions=revs,
    )


def older(svc: MemoryService, iri: str) -> list[str]:
    """Ids of the memories ``rk:supersededBy`` memory ``iri`` (sorted)."""
    with svc._view() as v:
        olds = v.subjects(R.P_SUPERSEDED_BY, NamedNode(iri), R.MEMORIES)
    return sorted(o.value.rsplit(":", 1)[-1] for o in olds)
