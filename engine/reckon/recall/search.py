"""On-demand search of one tenant's memories (seed 003 §6 "the long tail"):
eligibility from the store's snapshot, ranking by the recall index's hybrid pipeline.
:func:`search` is :meth:`reckon.recall.bundle.TenantRecall.search`; see also the
:mod:`reckon.recall.bundle` module docstring ("Search").
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pyoxigraph import NamedNode

from reckon import vocab as V
from reckon._config import MAX_SEARCH_K
from reckon._errors import InvalidInput
from reckon.memory import authz
from reckon.memory.models import KINDS, SCOPES, Memory, Principal
from reckon.recall.models import SearchHit

if TYPE_CHECKING:
    from reckon.recall.bundle import TenantRecall

__all__ = ["search"]

_P_PROJECT = V.rk("project")
_P_CONVERSATION = V.rk("conversation")
_P_PART_OF = NamedNode(V.TY + "partOf")
EXPAND_PER_HIT = 5
"""Most neighbours one direct hit brings with ``expand="graph"`` (ours)."""


def _q_class(cls: NamedNode) -> str:
    return ("SELECT ?m WHERE { ?m a " + str(NamedNode(cls.value)) + " . GRAPH " + str(V.INFERRED)
            + " { ?m a " + str(V.rk("ActiveMemory")) + " } }")


def search(
    recall: TenantRecall,
    query: str,
    *,
    principal: Principal,
    k: int = 10,
    kinds: Collection[str] | None = None,
    scopes: Collection[str] | None = None,
    subclasses: Collection[str] | None = None,
    importance: tuple[int, int] | Collection[int] | str = (2, 3),
    explain: bool = False,
    now: datetime | None = None,
    record_access: bool = True,
    expand: str | None = None,
) -> list[SearchHit]:
    """Hybrid search over the ACTIVE memories visible to ``principal`` (company, their
    teams', their own), by default the long tail (importance 2-3, seed §6).

    :param recall: the tenant's :class:`~reckon.recall.bundle.TenantRecall` (this is its
        ``search`` method).
    :param query: free text (non-empty).
    :param k: number of hits, 1..100.
    :param kinds: restrict to kinds (``"fact"`` ...); ``scopes``: to scopes.
    :param subclasses: restrict to memory classes (name, CURIE or IRI; instances of
        classes below them match too).
    :param importance: ``(lo, hi)`` inclusive, a collection of tiers, or ``"all"``
        (2-5). Importance 1 (Disabled) is never returned.
    :param explain: attach each hit's score components.
    :param expand: ``"graph"``: after the ``k`` direct hits, add their neighbours at
        depth 1 over the links between memories (``ty:partOf`` both ways: a chunk's
        document, a document's chunks; supersession lineage ``rk:supersededBy`` /
        ``rk:supersedes``, superseded memories included; ``rk:derivedFrom``: memories
        extracted from the same turn), at most :data:`EXPAND_PER_HIT` per hit, each once,
        none that is a direct hit. An expansion has ``expanded_from`` (the hit's id),
        ``via`` (the edge) and score 0.0; it passes the same read policy and audience
        as a direct hit (``authz.can_read_memory``, ``authz.in_audience_memory``, the
        scopes asked for; never importance 1 or a deleted memory), so a neighbour the
        principal may not read is absent. ``None``: no expansion.
    :returns: hits, best first, each with ``.memory`` and ``.score``; expansions after
        every direct hit (they never displace one).
    :raises InvalidInput: for a bad query, k, kind, scope, subclass, importance or expand.
    """
    if not isinstance(principal, Principal):
        raise InvalidInput("principal: a reckon Principal is required", field="principal")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query: a non-empty string is required", field="query")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_K:
        raise InvalidInput(f"k: an integer 1-{MAX_SEARCH_K} is required, got {k!r}", field="k")
    if expand not in (None, "graph"):
        raise InvalidInput(f"expand: 'graph' or None, not {expand!r}", field="expand")
    tiers = _tiers(importance)
    for name, vals, allowed in (("kinds", kinds, KINDS), ("scopes", scopes, SCOPES)):
        if vals is not None:
            if isinstance(vals, str):
                raise InvalidInput(f"{name}: give a list, e.g. [{vals!r}]", field=name)
            bad = [v for v in vals if v not in allowed]
            if bad:
                raise InvalidInput(f"{name}: unknown value {bad[0]!r}; allowed: {', '.join(allowed)}", field=name)
    want_scopes = set(scopes) if scopes is not None else set(SCOPES)
    want_kinds = set(kinds) if kinds is not None else None
    if subclasses is not None and isinstance(subclasses, str):
        raise InvalidInput(f"subclasses: give a list, e.g. [{subclasses!r}]", field="subclasses")
    classes = []
    for name in subclasses or ():
        try:
            classes.append(recall.memory.schema.resolve_class(name))
        except InvalidInput as exc:
            raise InvalidInput(str(exc), field="subclasses") from None
    me, my_teams = principal.person, set(principal.teams)

    def visible(m: Memory) -> bool:
        # the read policy, then the audience (what speaks to this principal)
        return m.scope in want_scopes and authz.can_read_memory(principal, m) and authz.in_audience_memory(
            principal, m)

    idx = recall.index
    idx.sync()
    recall._apply_usage(idx)  # access and feedback counts (reckon.recall.usage) into ranking
    with recall.store.snapshot() as view:
        of_class: set[str] | None = None
        if classes:
            of_class = set()
            for cls in classes:
                of_class |= {r["m"].value.rsplit(":", 1)[-1] for r in view.query(_q_class(cls))}

        # project and conversation memories of the principal's projects and conversations
        # (the index's columns know owners and teams only): by id
        shared: set[str] = set()
        for link, ids_, iri_of in ((_P_PROJECT, principal.projects, V.project_iri),
                                   (_P_CONVERSATION, principal.conversations, V.conversation_iri)):
            for x in ids_:
                shared |= {s.value.rsplit(":", 1)[-1] for s in view.subjects(link, iri_of(recall.tenant, x), V.MEMORIES)
                           if isinstance(s, NamedNode)}

        def candidates(ix: Any) -> np.ndarray:  # index metadata: a pre-filter; the store decides below
            mask = ix.filter_mask(importance=tiers, kinds=want_kinds, scopes=want_scopes,
                                  visible_to=(me, my_teams))
            if shared:
                mask |= ix.row_mask(shared) & ix.filter_mask(importance=tiers, kinds=want_kinds, scopes=want_scopes)
            if of_class is not None:
                mask &= ix.row_mask(of_class)
            if rejected:
                mask &= ix.row_mask(rejected, value=False)
            return mask  # type: ignore[no-any-return]

        hits: list[SearchHit] = []
        rejected: set[str] = set()
        limit = k
        for _ in range(4):
            found = idx.search(query, limit=limit, mask_fn=candidates, now=now, explain=explain)
            fresh = [h for h in found if h.id not in {x.memory.id for x in hits}]
            mems = {m.id: m for m in recall._memories(view, [V.memory_iri(recall.tenant, h.id) for h in fresh])}
            for h in fresh:
                m = mems.get(h.id)
                # eligibility from the store: active, visible, in the tiers, of the kind
                if (m is not None and m.active and m.importance in tiers and visible(m)
                        and (want_kinds is None or m.kind in want_kinds)):
                    hits.append(SearchHit(memory=m, score=h.score, explanation=h.explanation))
                else:
                    rejected.add(h.id)
            if len(hits) >= k or len(found) < limit:
                break
            limit *= 4
        hits.sort(key=lambda h: -h.score)
        hits = hits[:k]
        if expand == "graph":
            hits += _neighbours(recall, view, hits, visible)
        recall._cite(view, hits)  # chunk hits name their document and position (reckon.knowledge)
    if record_access:
        recall.record_access([h.memory.id for h in hits])
    return hits


def _neighbours(recall: TenantRecall, view: Any, hits: list[SearchHit],
                visible: Any) -> list[SearchHit]:
    """The depth-1 graph neighbours of ``hits`` (see :func:`search` ``expand``)."""
    tenant = recall.tenant
    seen = {h.memory.id for h in hits}
    out: list[SearchHit] = []
    for h in hits:
        m = h.memory
        links: list[tuple[str, str]] = []  # (memory id, edge)
        doc = m.status.get("partOf")
        if doc:
            links.append((str(doc), "partOf"))
        me = V.memory_iri(tenant, m.id)
        links += sorted((q.subject.value.rsplit(":", 1)[-1], "hasPart")
                        for q in view.quads(None, _P_PART_OF, me, V.INFERRED))
        links += [(x, "supersededBy") for x in m.superseded_by] + [(x, "supersedes") for x in m.supersedes]
        for turn in m.derived_from:
            links += sorted((q.subject.value.rsplit(":", 1)[-1], "derivedFrom")
                            for q in view.quads(None, V.rk("derivedFrom"), NamedNode(turn), V.MEMORIES))
        links = [(x, e) for x, e in dict.fromkeys(links) if x not in seen]
        if not links:
            continue
        mems = {n.id: n for n in recall._memories(view, [V.memory_iri(tenant, x) for x, _ in links])}
        # a document's chunks in document order (ty:chunkPosition)
        links.sort(key=lambda le: (le[1] == "hasPart", _position(mems.get(le[0])) if le[1] == "hasPart" else 0))
        taken = 0
        for x, edge in links:
            n = mems.get(x)
            lineage = edge in ("supersededBy", "supersedes")
            if (n is None or x in seen or n.importance < 2 or not visible(n)
                    or not (n.active or lineage) or n.status.get("deleted")):
                continue
            seen.add(x)
            out.append(SearchHit(memory=n, score=0.0, expanded_from=m.id, via=edge))
            taken += 1
            if taken >= EXPAND_PER_HIT:
                break
    return out


def _position(m: Memory | None) -> int:
    try:
        return int((m.properties if m is not None else {}).get("chunkPosition", 0))
    except (TypeError, ValueError):
        return 0


def _tiers(importance: Any) -> set[int]:
    if importance == "all":
        return {2, 3, 4, 5}
    try:
        if isinstance(importance, tuple) and len(importance) == 2 and all(isinstance(x, int) for x in importance):
            lo, hi = importance
            tiers = set(range(lo, hi + 1))
        elif isinstance(importance, int) and not isinstance(importance, bool):
            tiers = {importance}
        else:
            tiers = {int(x) for x in importance if not isinstance(x, bool)}
    except (TypeError, ValueError):
        raise InvalidInput(f"importance: a (lo, hi) pair, a list of tiers or 'all' is required, got {importance!r}",
                           field="importance") from None
    if not tiers or any(t < 1 or t > 5 for t in tiers):
        raise InvalidInput(f"importance: tiers must be within 1-5, got {importance!r}", field="importance")
    tiers.discard(1)  # Disabled memories are never recalled (seed §3)
    if not tiers:
        raise InvalidInput("importance: tier 1 (Disabled) is never recalled", field="importance")
    return tiers

