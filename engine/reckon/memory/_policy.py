"""The dedup / conflict policy of the write path (seed 003 §9).

* **dedup** (:func:`same_label`, :func:`restates`, :func:`dedup_update`): an active memory
  with the same normalised label, scope, stakeholder and class is updated in place when
  the write restates it; otherwise it becomes a conflict candidate (ask before overwrite).
* **conflicts** (:func:`replaced`): the judge (:mod:`reckon.memory.conflicts`) names the
  peers the newcomer would replace; auto-captured context over auto-captured context
  resolves silently, anything else raises :class:`~reckon._errors.ConflictPending` until
  retried with ``conflict_resolution`` and the ``conflict_id``.
* :func:`check_supersedable`: who may supersede what.

Peers come from the service's :class:`~reckon.memory._peers.PeerCache`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyoxigraph import Literal, NamedNode, Triple

from reckon._errors import ConflictPending, InvalidInput
from reckon.memory import _codec as C
from reckon.memory import _lifecycle as L
from reckon.memory import _rdf as R
from reckon.memory import authz
from reckon.memory.conflicts import Subject, conflict_digest
from reckon.memory.models import Conflict, MemoryInput, Principal, normalise_label

if TYPE_CHECKING:
    from reckon.memory._peers import _PeerIndex
    from reckon.memory.service import MemoryService

__all__ = [
    "authorize_supersede",
    "canonical",
    "check_supersedable",
    "dedup_update",
    "judge",
    "replaced",
    "restates",
    "same_label",
    "subject",
]

Peers = dict[NamedNode, tuple[dict[Any, list[Any]], None]]
Group = tuple["_PeerIndex", tuple[Any, ...]]


def same_label(
    svc: MemoryService, data: MemoryInput, klass: NamedNode, owner: str | None, teams: list[str],
    supersedes: Sequence[str] | None,
) -> tuple[Group | None, Peers | None, list[NamedNode]]:
    """The peer group (index and key; ``None``: peers read by query), the peers read by
    query, and the active same-label memories of class ``klass`` a new memory would dedup
    against. An explicit replacement (``supersedes=[ids]``, e.g. ``supersede(old, new)``
    with the same label) is never turned into an in-place update: the caller asked for a
    new memory that supersedes the old one (seed §9 "explicit replacement")."""
    key = normalise_label(data.label)
    group = None if supersedes else svc.peers.group(data.scope, owner, teams)
    peers: Peers | None = None
    same: list[NamedNode] = []
    if supersedes:
        pass
    elif group is None:
        peers = svc.peers.peers(data.scope, owner, teams, klass)
        same = _same_in(peers, key, klass)
    else:
        idx, gkey = group
        same = [
            pid for pid in sorted(idx.by_label.get(gkey, {}).get(key, ()), key=lambda n: n.value)
            if klass in idx.entries[pid].a.get(R.A, [])
        ]
        if same and svc.peers.confirmed(group, same, key) is None:
            # the index lists a memory the store does not (it was dropped): the group read from the store
            peers = svc.peers.peers(data.scope, owner, teams, klass)
            return None, peers, _same_in(peers, key, klass)
    return group, peers, same


def _same_in(peers: Peers, key: str, klass: NamedNode) -> list[NamedNode]:
    """The memories of ``peers`` (read by query) with label key ``key`` and class ``klass``."""
    return [pid for pid, (a, _) in sorted(peers.items(), key=lambda kv: kv[0].value)
            if normalise_label(a[R.LABEL][0].value) == key and klass in a.get(R.A, [])]


def replaced(
    svc: MemoryService,
    m: NamedNode,
    klass: NamedNode,
    data: MemoryInput,
    triples: list[Triple],
    owner: str | None,
    teams: list[str],
    principal: Principal,
    group: Group | None,
    peers: Peers | None,
    forced: list[NamedNode],
    conflict_resolution: str | None,
    conflict_id: str | None,
) -> list[NamedNode]:
    """The memories new memory ``m`` replaces: those the judge names plus the same-label
    memories it does not restate (``forced``), once confirmed.

    :raises ConflictPending: confirmation needed (nothing is written).
    :raises NotAuthorized: ``principal`` may not supersede one of them.
    """
    listed = None if peers is not None else svc.peers.candidates(group, data, klass) if group is not None else None
    if listed is None and peers is None:  # the index disagreed with the store: dropped, the group read again
        peers = svc.peers.peers(data.scope, owner, teams, klass)
    if peers is not None:
        candidates = {pid: v for pid, v in peers.items() if klass == R.MEMORY or klass in v[0].get(R.A, [])}
    else:
        assert listed is not None
        candidates = listed
    hits = judge(svc, m, klass, data, triples, candidates)
    if forced:
        candidates = dict(candidates)  # never mutate the peer index's mapping
        for pid in forced:
            candidates.setdefault(pid, (svc._node(pid)[0], None))
        hits = sorted(set(hits) | set(forced), key=lambda n: n.value)
    if not hits:
        return []
    # auto-captured context resolves silently, but never over a memory a human
    # wrote or imported (seed 003 §9: "we never silently clobber a human's memory")
    silent = data.source == "extraction" and data.kind == "context" and all(
        candidates[h][0].get(R.P_SOURCE, [None])[0] == R.SOURCE_IRI["extraction"] for h in hits)
    cid = conflict_digest(canonical(data, owner, teams), [h.value for h in hits])
    if not silent and (conflict_resolution is None or conflict_id != cid):
        labels = [candidates[h][0][R.LABEL][0].value for h in hits]
        ids = [h.value.rsplit(":", 1)[-1] for h in hits]
        conflict = Conflict(
            conflict_id=cid,
            label=data.label,
            candidates=ids,
            candidate_labels=labels,
            reason="stale conflict_id; candidates changed"
            if conflict_id is not None and conflict_id != cid
            else "the new memory would replace these",
        )
        exc = ConflictPending(
            f"memory {data.label!r} would replace {len(ids)} existing memory(ies) "
            f"{', '.join(f'{i} ({lb!r})' for i, lb in zip(ids, labels))}; retry with "
            f"conflict_resolution='replace' or 'keep_both' and conflict_id={cid!r}",
            cid,
            ids,
        )
        exc.conflict = conflict  # type: ignore[attr-defined]
        raise exc
    if silent or conflict_resolution == "replace":
        for h in hits:
            check_supersedable(principal, h, svc._node(h)[0])
        return hits
    return []


def canonical(data: MemoryInput, owner: str | None, teams: list[str]) -> str:
    """The new memory as the conflict id digests it (JSON, sorted keys)."""
    d = data.model_dump(mode="json")
    d["owner"], d["teams"] = owner, teams
    return json.dumps(d, sort_keys=True, default=str)


def subject(
    svc: MemoryService, m: NamedNode, klass: NamedNode, label: str, content: str, triples: dict[Any, list[Any]]
) -> Subject:
    """What the judge sees of memory ``m`` (its identifying properties from ``triples``)."""
    keys: dict[str, str] = {}
    if klass != R.MEMORY:
        specs = svc.schema.properties(klass)
        for p, objs in triples.items():
            spec = specs.get(p.value)
            if spec is not None and spec.identifying and len(objs) == 1:
                keys[p.value] = str(objs[0])
    kind = triples.get(R.P_KIND)
    source = triples.get(R.P_SOURCE)
    return Subject(
        id=m.value, label=label, content=content,
        subclass=klass.value if klass != R.MEMORY else None, keys=keys,
        kind=R.IRI_KIND.get(kind[0]) if kind else None,
        source=R.IRI_SOURCE.get(source[0]) if source else None,
    )


def judge(
    svc: MemoryService,
    m: NamedNode,
    klass: NamedNode,
    data: MemoryInput,
    triples: list[Triple],
    candidates: dict[NamedNode, tuple[dict[Any, list[Any]], None]],
) -> list[NamedNode]:
    """The candidates the judge says new memory ``m`` would replace, by IRI."""
    if not candidates:
        return []
    mine: dict[Any, list[Any]] = defaultdict(list)
    for t in triples:
        mine[t.predicate].append(t.object)
    new = subject(svc, m, klass, data.label, data.content, mine)
    subs = []
    for cid, (a, _) in candidates.items():
        types = [t for t in a.get(R.A, []) if isinstance(t, NamedNode)]
        ck = types[0] if types else R.MEMORY
        content = a.get(R.P_CONTENT)
        subs.append(subject(svc, cid, ck, a[R.LABEL][0].value, content[0].value if content else "", a))
    picked = set(svc.judge.judge(new, subs))
    return sorted((c for c in candidates if c.value in picked), key=lambda n: n.value)


def authorize_supersede(principal: Principal, m: NamedNode, asserted: dict[Any, list[Any]]) -> None:
    """:raises NotAuthorized: ``principal`` may not supersede memory ``m`` (or, as a
    replacement, gain its ``rk:supersedes`` pointer: :func:`reckon.memory.authz.check_supersede`)."""
    owner = asserted.get(R.P_OWNER)
    authz.check_supersede(
        principal,
        memory_id=m.value.rsplit(":", 1)[-1],
        scope=R.IRI_SCOPE[asserted[R.P_SCOPE][0]],
        owner=R.slug_of(owner[0].value) if owner else None,
        **R.links_of(asserted),
    )


def check_supersedable(principal: Principal, old: NamedNode, asserted: dict[Any, list[Any]]) -> None:
    """:raises NotAuthorized: ``principal`` may not supersede ``old``.
    :raises InvalidInput: ``old`` is already superseded."""
    authorize_supersede(principal, old, asserted)
    if asserted.get(R.P_SUPERSEDED_BY):
        raise InvalidInput(
            f"supersedes: memory {old.value.rsplit(':', 1)[-1]} is already superseded by "
            f"{asserted[R.P_SUPERSEDED_BY][0].value.rsplit(':', 1)[-1]}",
            field="supersedes",
        )


def restates(svc: MemoryService, current: dict[Any, list[Any]], data: MemoryInput, principal: Principal) -> bool:
    """Whether writing ``data`` over the same-label memory ``current`` is a restatement
    (updated in place, dedup) rather than a possible overwrite (a conflict).

    A restatement: the same text (whitespace and case aside); or its author or owner
    writing from the same source; or auto-captured (extraction) over auto-captured.
    """
    def norm(text: str) -> str:
        return " ".join(text.split()).casefold()

    old_content = current.get(R.P_CONTENT, [Literal("")])[0].value
    if norm(old_content) == norm(data.content):
        return True
    old_source = current.get(R.P_SOURCE, [None])[0]
    same_source = old_source == R.SOURCE_IRI[data.source]
    if same_source and data.source == "extraction":
        return True
    me = svc._person(principal.person)
    author = current.get(R.P_AUTHOR, [None])[0]
    owner = current.get(R.P_OWNER, [None])[0]
    return same_source and me in (author, owner)


def dedup_update(
    svc: MemoryService, txn: Any, m: NamedNode, asserted: dict[Any, list[Any]], data: MemoryInput, principal: Principal,
) -> dict[Any, list[Any]]:
    """Restate ``data`` over same-label memory ``m`` in place (its new asserted triples).

    :raises NotAuthorized: ``principal`` may not edit ``m``.
    """
    owner = asserted.get(R.P_OWNER)
    authz.check_update(
        principal, memory_id=m.value.rsplit(":", 1)[-1],
        scope=data.scope, owner=R.slug_of(owner[0].value) if owner else None, **R.links_of(asserted),
    )
    changes: dict[str, Any] = {
        "label": data.label, "content": data.content, "importance": data.importance,
        "kind": data.kind, "confidence": data.resolved_confidence(),
    }
    if data.expires_at is not None:
        changes["expires_at"] = data.expires_at
    if data.properties:
        changes["properties"] = data.properties
    if data.derived_from:  # a restatement from another conversation adds its turns
        changes["derived_from"] = sorted(
            set(asserted.get(R.P_DERIVED_FROM, [])) | set(C.turns(svc.tenant, data.derived_from)), key=str)
    return L.apply_patch(svc, txn, m, asserted, changes, principal)
