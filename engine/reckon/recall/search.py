"""On-demand search of one tenant's memories (seed 003 §6 "the long tail"):
eligibility from the store's snapshot, ranking by the recall index's hybrid pipeline.
:meth:`reckon.recall.bundle.TenantRecall.search` delegates here; see its docstring
and the :mod:`reckon.recall.bundle` module docstring ("Search").
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pyoxigraph import NamedNode

from reckon import vocab as V
from reckon._errors import InvalidInput
from reckon.memory import authz
from reckon.memory.models import KINDS, SCOPES, Principal
from reckon.recall.models import SearchHit

if TYPE_CHECKING:
    from reckon.recall.bundle import TenantRecall

__all__ = ["search"]


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
) -> list[SearchHit]:
    """:meth:`TenantRecall.search <reckon.recall.bundle.TenantRecall.search>` (documented there)."""
    if not isinstance(principal, Principal):
        raise InvalidInput("principal: a reckon Principal is required", field="principal")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query: a non-empty string is required", field="query")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
        raise InvalidInput(f"k: an integer 1-100 is required, got {k!r}", field="k")
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

    def visible(scope: str | None, owner: str | None, teams: Collection[str]) -> bool:
        # the read policy, then the audience (what speaks to this principal)
        return (scope in want_scopes and authz.can_read(principal, scope=scope, owner=owner, teams=teams)
                and authz.in_audience(principal, scope=scope, owner=owner, teams=teams))

    idx = recall.index
    idx.sync()
    with recall.store.snapshot() as view:
        of_class: set[str] | None = None
        if classes:
            of_class = set()
            for cls in classes:
                of_class |= {r["m"].value.rsplit(":", 1)[-1] for r in view.query(_q_class(cls))}

        def candidates(ix: Any) -> np.ndarray:  # index metadata: a pre-filter; the store decides below
            mask = ix.filter_mask(importance=tiers, kinds=want_kinds, scopes=want_scopes,
                                  visible_to=(me, my_teams))
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
                if (m is not None and m.active and m.importance in tiers and visible(m.scope, m.owner, m.teams)
                        and (want_kinds is None or m.kind in want_kinds)):
                    hits.append(SearchHit(memory=m, score=h.score, explanation=h.explanation))
                else:
                    rejected.add(h.id)
            if len(hits) >= k or len(found) < limit:
                break
            limit *= 4
        hits.sort(key=lambda h: -h.score)
        return hits[:k]


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

