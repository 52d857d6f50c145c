"""Lifecycle maintenance of a tenant's memories (issue 15 item 5; seed 000 Evolving Memory
"corpus maintenance": deduplication above ``pruneThreshold``, relevance decay by a daily
multiplier, capacity enforcement evicting low-relevance records first, a quality floor
protecting frequently accessed, highly rated records; seed 001 "salience decay"; seed 004
``pruneExpired()``).

:func:`maintain` runs these steps, in this order, over one tenant:

1. **Purge expired working memory**: a ``ty:WorkingMemory`` whose ``rk:expiresAt`` has
   passed on the in-graph clock, not superseded, written by an agent's tool or by
   extraction, is deleted (a tombstone with ``deleted_reason``).
2. **Purge expired notes** (:meth:`reckon.notes.service.Notes.purge_expired`: their values
   go, the key's tombstone and version stay).
3. **Deduplicate auto-captured memories**: active memories of source ``extraction`` of
   the same scope, owner (or teams), kind and class whose embeddings (the recall index's)
   have cosine >= the ``dedup_threshold`` setting (0.97) are duplicates; the less salient
   one is **superseded** by the more salient (never deleted: supersession keeps it, and
   ``history()`` shows ``superseded_by``).
4. **Capacity**: beyond ``capacity_per_scope_kind`` (10,000) active auto-captured
   memories of one scope (and owner or team set) and kind, the least salient are deleted
   (tombstone with ``deleted_reason``), except those over the quality floor: accessed at
   least ``protected_access_count`` (5) times, or with positive net feedback.

**Salience** (seed 001 "salience decay", seed 000 "relevance decay"):
``importance / 5 x confidence x d ** days_since_last_use x access_boost x feedback_boost``
with ``d`` = the ``salience_decay_per_day`` setting (0.95), the last use the later of the
memory's last update and its last access, and the boosts of :mod:`reckon.recall.rank`
over the counts of :mod:`reckon.recall.usage`. It is computed when maintenance runs (from
the in-graph clock), so decay needs no write per memory per day.

**Never touched**: a human-entered memory (source ``operator``, ``onboarding``,
``import``: :data:`reckon.memory.models.HUMAN_SOURCES`) and one an agent wrote through its
tool on the user's word (``agent_tool``), except an expired *working* memory of the latter
(it asked for its own expiry). Every action is attributed to the person
:data:`MAINTAINER` and appears in ``history()``; :class:`MaintenanceReport` lists them.
``dry_run`` computes the same report and writes nothing.

The job engine runs it as the huey task ``reckon.maintain`` (:mod:`reckon.jobs`: daily at
03:00 UTC for every tenant, or queued by ``reckon maintain --queue``); ``reckon maintain
--tenant T [--dry-run]`` runs it at once.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from reckon import vocab as V
from reckon.memory.models import Memory, Principal
from reckon.recall.rank import RankConfig, access_boost, feedback_boost

__all__ = ["AUTO_SOURCES", "MAINTAINER", "MaintenanceAction", "MaintenanceReport", "maintain", "salience"]

#: Sources maintenance may merge and evict: auto-captured (a background extractor).
AUTO_SOURCES: frozenset[str] = frozenset({"extraction"})
#: Sources whose expired working memories are purged.
WORKING_SOURCES: frozenset[str] = frozenset({"extraction", "agent_tool"})
#: The person maintenance acts as (``deleted_by`` of its tombstones).
MAINTAINER = "reckon-maintenance"

_WORKING = V.TY + "WorkingMemory"
_NOTE_KEY = V.nt("key")
_Q_EXPIRED_NOTES = (f"PREFIX nt: <{V.NT}>\n"
                    f"SELECT ?n WHERE {{ GRAPH <{V.INFERRED.value}> {{ ?n a nt:ExpiredNote }} }}")
_ACCESS_WEIGHT = RankConfig().access_weight  # the ranking's weights, so salience and search agree
_FEEDBACK_WEIGHT = RankConfig().feedback_weight


class MaintenanceAction(BaseModel):
    """One thing maintenance did (or, in a dry run, would do).

    :ivar action: ``purge_expired`` (a working memory deleted), ``purge_note``,
        ``dedup`` (superseded by ``into``), ``evict`` (deleted over capacity).
    :ivar memory: the memory id (``None`` for a note); ``key`` the note's key.
    :ivar reason: the rule and the numbers behind it, as ``history()`` shows it.
    """

    action: Literal["purge_expired", "purge_note", "dedup", "evict"]
    memory: str | None = None
    into: str | None = None
    key: str | None = None
    reason: str


class MaintenanceReport(BaseModel):
    """What one :func:`maintain` run did.

    :ivar scanned: memories looked at; ``auto`` of them auto-captured and active.
    :ivar protected: auto-captured memories over the quality floor.
    """

    tenant: str
    dry_run: bool
    clock: datetime
    scanned: int
    auto: int
    protected: int
    actions: list[MaintenanceAction] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Actions by kind."""
        out: dict[str, int] = defaultdict(int)
        for a in self.actions:
            out[a.action] += 1
        return dict(out)


def _utc(t: datetime | None) -> datetime | None:
    if t is None:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def salience(m: Memory, usage: Any, now: datetime, decay_per_day: float) -> float:
    """The memory's salience in (0, ~1.3] (module docstring); ``usage`` is a
    :class:`reckon.recall.usage.Usage` or ``None``."""
    access, fb, last_access = (usage[0], usage[1], usage[2]) if usage is not None else (0, 0, None)
    last = _utc(m.updated_at or m.created_at) or now
    if last_access:
        try:
            last = max(last, _utc(datetime.fromisoformat(last_access)) or last)
        except ValueError:
            pass
    days = max(0.0, (now - last).total_seconds() / 86400.0)
    return float((m.importance / 5.0) * float(m.confidence) * decay_per_day ** days) * access_boost(
        access, _ACCESS_WEIGHT) * feedback_boost(fb, _FEEDBACK_WEIGHT)


def _group(m: Memory, *, with_class: bool) -> tuple[Any, ...]:
    key: tuple[Any, ...] = (m.scope, m.owner if m.scope == "user" else None,
                            tuple(sorted(m.teams)) if m.scope == "team" else (), m.kind)
    return key + ((m.subclass_iri,) if with_class else ())


def _actor(m: Memory) -> Principal:
    """Who may supersede ``m``: its owner for a personal memory, else an operator."""
    if m.scope == "user" and m.owner:
        return Principal(person=m.owner)
    return Principal.operator(person=MAINTAINER)


def maintain(tenant: Any, *, dry_run: bool = False, wait: float = 300.0) -> MaintenanceReport:
    """Run lifecycle maintenance over ``tenant`` (a :class:`reckon.api.Tenant`; module
    docstring). Idempotent: a second run right after the first does nothing.

    :param dry_run: report what would be done; write nothing.
    :param wait: seconds to wait for the recall index to embed every memory before
        deduplicating (memories still without a vector are not deduplicated this run).
    :returns: :class:`MaintenanceReport`.
    """
    settings = tenant.settings()
    threshold = float(settings.get("dedup_threshold", 0.97))
    decay = float(settings.get("salience_decay_per_day", 0.95))
    capacity = int(settings.get("capacity_per_scope_kind", 10_000))
    protect_at = int(settings.get("protected_access_count", 5))
    now = _utc(tenant.clock()) or datetime.now(UTC)
    ops = Principal.operator(person=MAINTAINER)
    mems: list[Memory] = tenant.memories(active_only=False)
    usage = tenant.recall.usage.counts()
    actions: list[MaintenanceAction] = []

    # 1. expired working memory
    for m in mems:
        exp = _utc(m.expires_at)
        if (m.subclass_iri == _WORKING and m.source in WORKING_SOURCES and exp is not None and exp <= now
                and not m.superseded_by and not m.active):
            reason = (f"lifecycle: expired working memory (expires_at {exp.isoformat()} <= clock "
                      f"{now.isoformat()}; source {m.source})")
            actions.append(MaintenanceAction(action="purge_expired", memory=m.id, reason=reason))
            if not dry_run:
                tenant.delete(m.id, principal=ops, reason=reason)

    # 2. expired notes
    notes = tenant.notes
    if dry_run:
        from reckon.store.graphs import NOTES

        with tenant.store.snapshot() as view:
            keys = sorted(k.value for r in view.query(_Q_EXPIRED_NOTES)
                          for k in view.objects(r["n"], _NOTE_KEY, NOTES)[:1])
    else:
        keys = notes.purge_expired()
    actions += [MaintenanceAction(action="purge_note", key=k, reason="lifecycle: expired note (its TTL passed on "
                                  "the in-graph clock)") for k in keys]

    # 3. dedup of auto-captured memories, by embedding cosine
    auto = [m for m in mems if m.active and m.source in AUTO_SOURCES]
    sal = {m.id: salience(m, usage.get(m.id), now, decay) for m in auto}

    def protected(mid: str) -> bool:
        u = usage.get(mid)
        return u is not None and (u.access >= protect_at or u.feedback > 0)

    gone: set[str] = set()
    if len(auto) > 1:
        idx = tenant.recall.index
        idx.sync()
        idx.wait(wait)
        ix = idx.index
        groups: dict[tuple[Any, ...], list[Memory]] = defaultdict(list)
        for m in auto:
            groups[_group(m, with_class=True)].append(m)
        for members in groups.values():
            if len(members) < 2:
                continue
            # most salient first; ties: the older one stays (it was there first), then id
            members.sort(key=lambda m: (-sal[m.id], (_utc(m.created_at) or now).timestamp(), m.id))
            kept: list[tuple[Memory, np.ndarray]] = []
            for m in members:
                v = ix.embedding(m.id) if m.id in ix else None
                if v is None or not np.any(v):
                    continue
                v = v / (np.linalg.norm(v) or 1.0)
                if kept:
                    mat = np.stack([k[1] for k in kept])
                    cos = mat @ v
                    j = int(np.argmax(cos))
                    if float(cos[j]) >= threshold:
                        into = kept[j][0]
                        reason = (f"lifecycle: duplicate of {into.id} (cosine {float(cos[j]):.3f} >= dedup_threshold "
                                  f"{threshold}; salience {sal[m.id]:.3f} <= {sal[into.id]:.3f})")
                        actions.append(MaintenanceAction(action="dedup", memory=m.id, into=into.id, reason=reason))
                        gone.add(m.id)
                        if not dry_run:
                            tenant.supersede(m.id, into.id, principal=_actor(m))
                        continue
                kept.append((m, v))

    # 4. capacity per scope and kind, least salient first, over the quality floor kept
    by_group: dict[tuple[Any, ...], list[Memory]] = defaultdict(list)
    for m in auto:
        if m.id not in gone:
            by_group[_group(m, with_class=False)].append(m)
    for key, members in sorted(by_group.items(), key=lambda kv: str(kv[0])):
        over = len(members) - capacity
        if over <= 0:
            continue
        evictable = sorted((m for m in members if not protected(m.id)),
                           key=lambda m: (sal[m.id], (_utc(m.created_at) or now).timestamp(), m.id))
        for m in evictable[:over]:
            reason = (f"lifecycle: over capacity ({len(members)} active auto-captured {key[3]} memories in scope "
                      f"{key[0]} > capacity_per_scope_kind {capacity}); least salient ({sal[m.id]:.3f}), "
                      f"below the quality floor (protected_access_count {protect_at})")
            actions.append(MaintenanceAction(action="evict", memory=m.id, reason=reason))
            if not dry_run:
                tenant.delete(m.id, principal=ops, reason=reason)

    return MaintenanceReport(tenant=tenant.id, dry_run=dry_run, clock=now, scanned=len(mems), auto=len(auto),
                             protected=sum(1 for m in auto if protected(m.id)), actions=actions)
