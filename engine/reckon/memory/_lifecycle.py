"""The memory lifecycle: in-place edits (with revisions), supersession, restore and
delete (tombstones) — seed 003 §5, §9. Called by
:class:`~reckon.memory.service.MemoryService`, which owns the transaction helpers.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput, RestoreRefused
from reckon.memory import _codec as C
from reckon.memory import _policy as P
from reckon.memory import _rdf as R
from reckon.memory import authz
from reckon.memory.models import Memory, Principal
from reckon.store.terms import check_text

if TYPE_CHECKING:
    from reckon.memory.service import MemoryService

__all__ = ["apply_patch", "delete", "restore", "supersede"]


def apply_patch(
    svc: MemoryService, txn: Any, m: NamedNode, asserted: dict[Any, list[Any]], given: dict[str, Any], principal: Principal
) -> dict[Any, list[Any]]:
    """Apply ``given`` (field -> value; ``None`` removes) to memory ``m`` inside ``txn``:
    validated, ``rk:updatedAt`` / ``rk:author`` set, and a ``rk:Revision`` keeping the
    label and content it overwrites. Returns the node's new asserted triples.

    :raises InvalidInput: for a bad team or property change.
    :raises UnknownTeam: ``teams`` names a team the tenant does not have.
    :raises ShapeViolation: the edited node no longer conforms.
    """
    new: dict[Any, list[Any]] = {p: list(v) for p, v in asserted.items()}
    scope = R.IRI_SCOPE[asserted[R.P_SCOPE][0]]
    simple: dict[str, tuple[NamedNode, Callable[[Any], Any]]] = {
        "label": (R.LABEL, lambda v: Literal(v)),
        "content": (R.P_CONTENT, lambda v: Literal(v)),
        "kind": (R.P_KIND, lambda v: R.KIND_IRI[v]),
        "importance": (R.P_IMPORTANCE, lambda v: Literal(str(v), datatype=R.X_INTEGER)),
        "confidence": (R.P_CONFIDENCE, R.decimal_literal),
        "expires_at": (R.P_EXPIRES, R.dt_literal),
    }
    for name, value in given.items():
        if name in simple:
            pred, conv = simple[name]
            new[pred] = [] if value is None else [conv(value)]
        elif name == "derived_from":  # internal: set by a restatement (dedup), not by update()
            new[R.P_DERIVED_FROM] = list(value)
        elif name == "teams":
            if scope != "team":
                if value:
                    raise InvalidInput(f"teams: a {scope}-scope memory has no team links", field="teams")
                continue
            if not value:
                raise InvalidInput("teams: a team-scope memory needs at least one team", field="teams")
            C.check_teams(svc, value)
            new[R.P_TEAM] = [svc._team(t) for t in value]
        elif name == "properties":
            klass = next((t for t in asserted.get(R.A, []) if t != R.MEMORY), None)
            if klass is None:
                if value:
                    raise InvalidInput("properties: only a subclass memory carries properties", field="properties")
                continue
            specs = svc.schema.properties(klass)
            if value is None:
                for p in list(new):
                    if p.value in specs:
                        new[p] = []
                continue
            derived = C.derived_predicates(svc)
            for pname, pval in value.items():
                spec = C.property_spec(svc, klass, pname, derived)
                p = NamedNode(spec.iri)
                new[p] = [] if pval is None else svc.schema.to_terms(spec, pval)
    now = R.dt_literal(svc._clock())
    new[R.P_UPDATED] = [now]
    new[R.P_AUTHOR] = [svc._person(principal.person)]
    old_set = {Triple(m, p, o) for p, objs in asserted.items() for o in objs}
    new_set = {Triple(m, p, o) for p, objs in new.items() for o in objs}
    ctx, create = C.linked_types(svc, new_set)
    _validate_patched(svc, txn, m, old_set, new_set, ctx, create)
    for q in create:
        txn.add(q)
    if new.get(R.LABEL) != asserted.get(R.LABEL) or new.get(R.P_CONTENT) != asserted.get(R.P_CONTENT):
        # history keeps what an in-place update overwrites (a rk:Revision node)
        r = R.revision_iri(svc.tenant, uuid.uuid4().hex)
        txn.add(Quad(r, R.A, R.REVISION, R.MEMORIES))
        txn.add(Quad(r, R.P_REVISION_OF, m, R.MEMORIES))
        for o in asserted.get(R.LABEL, []):
            txn.add(Quad(r, R.LABEL, o, R.MEMORIES))
        for o in asserted.get(R.P_CONTENT, []):
            txn.add(Quad(r, R.P_CONTENT, o, R.MEMORIES))
        txn.add(Quad(r, R.P_REVISED_AT, now, R.MEMORIES))
        txn.add(Quad(r, R.P_REVISED_BY, svc._person(principal.person), R.MEMORIES))
    for t in old_set - new_set:
        txn.remove(Quad(t.subject, t.predicate, t.object, R.MEMORIES))
    for t in new_set - old_set:
        txn.add(Quad(t.subject, t.predicate, t.object, R.MEMORIES))
    return {p: v for p, v in new.items() if v}


def _validate_patched(svc: MemoryService, txn: Any, m: NamedNode, old_set: set[Triple], new_set: set[Triple],
                      ctx: list[Triple], create: list[Quad]) -> None:
    """Validate the patched node ``m`` once: with the tenant's shapes, in the very graph
    the store's write check builds for it at commit (:meth:`reckon.schema.TenantSchema.node_graph`
    over the transaction's view, less what the patch removes, plus what it adds and the
    person / conversation nodes it creates), so that check finds the graph validated already;
    with a custom ``validator``, in the node's new triples plus the types of what it links to.

    :raises ShapeViolation: the patched node does not conform; nothing is written.
    """
    view = getattr(txn, "view", None)
    if svc._validator is None and view is not None:
        added: dict[Any, list[Quad]] = defaultdict(list)
        for t in new_set - old_set:
            added[m].append(Quad(t.subject, t.predicate, t.object, R.MEMORIES))
        for q in create:
            added[q.subject].append(q)
        gone = {Quad(t.subject, t.predicate, t.object, R.MEMORIES) for t in old_set - new_set}
        graph = svc.schema.node_graph(m, view, added, gone)
        if graph is not None:
            svc.schema.validate(m, graph)
        return
    validate_set = [t for t in new_set if t.predicate != R.P_SUPERSEDED_BY]  # derived, never validated
    svc._validate(m, sorted(validate_set, key=str) + ctx)


def supersede(svc: MemoryService, old_id: str, new: dict[str, Any] | str, *, principal: Principal) -> Memory:
    """:meth:`reckon.memory.service.MemoryService.supersede` (documented there)."""
    if isinstance(new, dict):
        fields = dict(new)
        fields.pop("principal", None)
        return svc.remember(principal=principal, supersedes=[old_id], **fields)
    with svc._transaction() as txn:
        old, oa, _ = svc._load_for(old_id, principal)
        target, ta, _ = svc._load_for(new, principal)
        if old == target:
            raise InvalidInput("supersedes: a memory cannot supersede itself", field="supersedes")
        P.check_supersedable(principal, old, oa)
        # the replacement gains the (derived) supersedes pointer and is returned to the
        # caller: it must be a memory the principal could supersede too (own it, or be an
        # operator for team/company memories) — never someone else's private memory
        P.authorize_supersede(principal, target, ta)
        # refuse cycles: walk the newer memory's chain
        cur, seen = ta.get(R.P_SUPERSEDED_BY, []), set()
        while cur:
            nxt = cur[0]
            if nxt == old:
                raise InvalidInput(
                    f"supersedes: {new} is already (transitively) superseded by {old_id}; "
                    f"the chain would form a cycle",
                    field="supersedes",
                )
            if nxt in seen:
                break
            seen.add(nxt)
            cur = svc._node(nxt)[0].get(R.P_SUPERSEDED_BY, [])
        if ta.get(R.P_SUPERSEDED_BY):
            raise InvalidInput(
                f"supersede: the replacement {target.value.rsplit(':', 1)[-1]} is itself superseded by "
                f"{ta[R.P_SUPERSEDED_BY][0].value.rsplit(':', 1)[-1]}; nothing would stay live "
                "(supersede with the live memory instead)",
                field="new",
            )
        txn.add(Quad(old, R.P_SUPERSEDED_BY, target, R.MEMORIES))
    return svc.get(target.value)


def restore(svc: MemoryService, memory_id: str, *, principal: Principal) -> Memory:
    """:meth:`reckon.memory.service.MemoryService.restore` (documented there)."""
    authz.check_restore(principal, memory_id=str(memory_id))
    with svc._transaction() as txn:
        m, a, _ = svc._load(memory_id)
        by = a.get(R.P_SUPERSEDED_BY, [])
        if not by:
            raise InvalidInput(
                f"restore: memory {m.value.rsplit(':', 1)[-1]} ({a[R.LABEL][0].value!r}) is not superseded; "
                f"there is nothing to restore"
                + (" (it is inactive because it expired: update its expires_at instead)"
                   if a.get(R.P_EXPIRES) else ""),
                field="memory_id",
            )
        for newer in by:
            with svc._view() as v:
                newer_active = v.contains(Quad(newer, R.A, R.ACTIVE, R.INFERRED))
            if newer_active:
                raise RestoreRefused(
                    f"cannot restore memory {m.value.rsplit(':', 1)[-1]} ({a[R.LABEL][0].value!r}): "
                    f"the memory that superseded it, {newer.value.rsplit(':', 1)[-1]}, is still active; "
                    f"supersede or delete that one first"
                )
        scope = R.IRI_SCOPE[a[R.P_SCOPE][0]]
        owner = a.get(R.P_OWNER)
        klass = next((t for t in a.get(R.A, []) if t != R.MEMORY), R.MEMORY)
        peers = svc.peers.peers(scope, R.slug_of(owner[0].value) if owner else None,
                            sorted(R.slug_of(t.value) for t in a.get(R.P_TEAM, [])), klass)
        peers.pop(m, None)
        klass = next((t for t in a.get(R.A, []) if t != R.MEMORY), R.MEMORY)
        cands = {pid: v for pid, v in peers.items() if klass == R.MEMORY or klass in v[0].get(R.A, [])}
        me = P.subject(svc, m, klass, a[R.LABEL][0].value, a.get(R.P_CONTENT, [Literal("")])[0].value, a)
        subs = []
        for cid, (ca, _) in cands.items():
            ck = next((t for t in ca.get(R.A, []) if t != R.MEMORY), R.MEMORY)
            subs.append(P.subject(svc, cid, ck, ca[R.LABEL][0].value, ca.get(R.P_CONTENT, [Literal("")])[0].value, ca))
        hits = sorted(svc.judge.judge(me, subs))
        if hits:
            raise RestoreRefused(
                f"cannot restore memory {m.value.rsplit(':', 1)[-1]} ({a[R.LABEL][0].value!r}): it would "
                f"contradict active memory(ies) {', '.join(h.rsplit(':', 1)[-1] for h in hits)}"
            )
        for newer in by:
            txn.remove(Quad(m, R.P_SUPERSEDED_BY, newer, R.MEMORIES))
        now = R.dt_literal(svc._clock())
        for o in a.get(R.P_UPDATED, []):
            txn.remove(Quad(m, R.P_UPDATED, o, R.MEMORIES))
        txn.add(Quad(m, R.P_UPDATED, now, R.MEMORIES))
        for o in a.get(R.P_AUTHOR, []):
            txn.remove(Quad(m, R.P_AUTHOR, o, R.MEMORIES))
        txn.add(Quad(m, R.P_AUTHOR, svc._person(principal.person), R.MEMORIES))
    return svc.get(m.value)


def delete(svc: MemoryService, memory_id: str, *, principal: Principal, reason: str | None = None) -> None:
    """:meth:`reckon.memory.service.MemoryService.delete` (documented there)."""
    authz.check_delete(principal, memory_id=str(memory_id))
    if reason is not None and (not isinstance(reason, str) or not reason.strip() or len(reason) > 2000):
        raise InvalidInput("reason: a non-empty string of at most 2,000 characters is required", field="reason")
    check_text(reason, "reason")
    with svc._transaction() as txn:
        m, a, _ = svc._load(memory_id)
        for p, objs in a.items():
            for o in objs:
                txn.remove(Quad(m, p, o, R.MEMORIES))
        with svc._view() as v:
            for r in v.subjects(R.P_REVISION_OF, m, R.MEMORIES):
                txn.remove_pattern(r, None, None, R.MEMORIES)
        who = svc._person(principal.person)
        if not svc._exists(who, R.PERSON):
            txn.add(Quad(who, R.A, R.PERSON, R.MEMORIES))
        txn.add(Quad(m, R.A, R.DELETED, R.MEMORIES))
        txn.add(Quad(m, R.P_DELETED_AT, R.dt_literal(svc._clock()), R.MEMORIES))
        txn.add(Quad(m, R.P_DELETED_BY, who, R.MEMORIES))
        if reason is not None:
            txn.add(Quad(m, R.rk("deletionReason"), Literal(reason), R.MEMORIES))
        for o in a.get(R.P_SUPERSEDED_BY, []):
            txn.add(Quad(m, R.P_SUPERSEDED_BY, o, R.MEMORIES))
