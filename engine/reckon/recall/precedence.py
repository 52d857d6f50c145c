"""Precedence in the bundle (seed 003 §4): the more specific scope is authoritative --
personal (user) > conversation > project > team > company. Which pairs of items of
different scopes conflict, and whether an override looks deliberate.

Whether two memories conflict is the tenant's one conflict policy, its
:class:`~reckon.memory.conflicts.ConflictJudge` (the write path's judge: by default
:class:`~reckon.memory.conflicts.ContradictionJudge`, whatever ``Tenant.set_judge`` /
``Engine(judge=...)`` installed): a more specific item conflicts with a more general one
exactly when the judge says the specific one *would replace* the general one were they
in one scope -- same subclass with equal identifying properties (two targets on the
same metric, two budgets on the same platform and period), or two plain memories that
state a different value for one subject (:func:`reckon.memory.conflicts.contradiction`).
The bundle has no similarity test of its own.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from typing import Literal as TLiteral

from pyoxigraph import NamedNode

from reckon import vocab as R
from reckon.memory.conflicts import ConflictJudge, Subject, tokens
from reckon.recall.models import BundleConflict, BundleItem

__all__ = ["OVERRIDE_WORDS", "SCOPE_RANK", "conflicts", "deliberate"]

log = logging.getLogger("reckon.recall")

SCOPE_RANK = {"user": 4, "conversation": 3, "project": 2, "team": 1, "company": 0}
"""The more specific scope ranks higher and is authoritative: personal > conversation >
project > team > company."""

#: Words in a more specific memory's label or content that mark an override as
#: deliberate (case-insensitive, word-prefix match).
OVERRIDE_WORDS = re.compile(
    r"\b(overrid\w*|instead of|rather than|regardless|despite|exception|unlike|supersed\w*)\b",
    re.IGNORECASE,
)


def _keys(item: BundleItem, schema: Any) -> dict[str, str]:
    """Identifying properties of a subclass item: property IRI -> value (as text)."""
    if not item.subclass_iri:
        return {}
    out: dict[str, str] = {}
    for spec in schema.properties(NamedNode(item.subclass_iri)).values():
        if spec.identifying:
            v = item.properties.get(R.local_name(spec.iri))
            if v is not None and not isinstance(v, list):
                out[spec.iri] = str(v)
    return out


def _subject(item: BundleItem, keys: dict[str, str]) -> Subject:
    return Subject(id=item.id, label=item.label, content=item.content, subclass=item.subclass_iri,
                   keys=keys, kind=item.kind, source=None)


_CACHE_SIZE = 64
_caches: weakref.WeakKeyDictionary[Any, OrderedDict[Any, dict[str, dict[str, str]]]] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


_PAIRS_MAX = 200_000
_pairs: weakref.WeakKeyDictionary[Any, dict[tuple[Any, Any], str | None]] = weakref.WeakKeyDictionary()


def _pair_memo(judge: ConflictJudge) -> dict[tuple[Any, Any], str | None] | None:
    """``(specific subject key, general subject key) -> reason or None`` of a pairwise
    judge (``ConflictJudge`` ``pairwise``): a new item set asks the judge only about its
    new pairs (a write of one live memory re-judges that memory's pairs, not all)."""
    with _cache_lock:
        try:
            return _pairs.setdefault(judge, {})
        except TypeError:  # a judge that cannot be weakly referenced: no memo
            return None


_key_ids: dict[tuple[Any, ...], int] = {}


def _key_id(key: tuple[Any, ...]) -> int:
    """A small number for a subject key (pair memo keys hash two ints, not two texts)."""
    with _cache_lock:
        got = _key_ids.get(key)
        if got is None:
            if len(_key_ids) >= _PAIRS_MAX:  # numbers are never reused: the pair memos go too
                _key_ids.clear()
                for memo in list(_pairs.values()):
                    memo.clear()
            got = _key_ids[key] = _next_id[0]
            _next_id[0] += 1
        return got


_next_id = [0]


def _key(s: Subject, scope: str) -> tuple[Any, ...]:
    return (scope, s.id, s.label, s.content, s.subclass, tuple(sorted(s.keys.items())), s.kind)


def _reasons(judge: ConflictJudge, new: Subject, cands: Sequence[Subject],
             toks: dict[str, frozenset[str]]) -> dict[str, str]:
    """Ids of ``cands`` the judge says ``new`` would replace, each with a reason (the
    judge's own when it gives verdicts). A judge that declares ``needs_shared_word`` is
    offered only the candidates sharing a word token with ``new`` (as on the write path)."""
    if bool(getattr(judge, "needs_shared_word", False)):
        mine = toks[new.id]
        cands = [c for c in cands if mine & toks[c.id]]
        if not cands:
            return {}
    verdicts = getattr(judge, "verdicts", None)
    if callable(verdicts):
        return {v.id: v.reason for v in verdicts(new, cands)}
    return {i: f"judged the same subject ({type(judge).__name__})" for i in judge.judge(new, cands)}


def _judged(items: list[BundleItem], judge: ConflictJudge, keys: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """For each more specific item, the less specific items (same class) the judge says
    it would replace, with reasons: ``{specific id: {general id: reason}}``. Memoised per
    judge for the same items (the bundle asks again on every turn until a write changes
    them; the 64 latest item sets).

    :raises Exception: whatever the judge raises.
    """
    subjects = {it.id: _subject(it, keys[it.id]) for it in items}
    memo_key = tuple(sorted(_key(subjects[it.id], it.scope) for it in items))
    with _cache_lock:
        try:
            cache: OrderedDict[Any, dict[str, dict[str, str]]] | None = _caches.setdefault(judge, OrderedDict())
        except TypeError:  # a judge that cannot be weakly referenced: no memo
            cache = None
        if cache is not None and memo_key in cache:
            cache.move_to_end(memo_key)
            return cache[memo_key]
    toks = {it.id: frozenset(tokens(f"{it.label} {it.content}")) for it in items}
    pairs = _pair_memo(judge) if bool(getattr(judge, "pairwise", False)) else None
    skey = {it.id: _key_id(_key(subjects[it.id], it.scope)) for it in items} if pairs is not None else {}
    # the write path's candidates: the same class (a subclass item), plain memories (a
    # plain one); here of the less specific scopes
    by_class: dict[tuple[str | None, int], list[BundleItem]] = {}
    for it in sorted(items, key=lambda g: g.id):
        by_class.setdefault((it.subclass_iri, SCOPE_RANK.get(it.scope, 0)), []).append(it)
    below: dict[tuple[str | None, int], list[BundleItem]] = {}  # (class, rank) -> items of lower ranks, by id
    out: dict[str, dict[str, str]] = {}
    for spec in items:
        rank = SCOPE_RANK.get(spec.scope, 0)
        cands = below.get((spec.subclass_iri, rank))
        if cands is None:
            cands = below[(spec.subclass_iri, rank)] = sorted(
                (g for r in range(rank) for g in by_class.get((spec.subclass_iri, r), ())), key=lambda g: g.id)
        if not cands:
            continue
        if pairs is None:
            picked = _reasons(judge, subjects[spec.id], [subjects[g.id] for g in cands], toks)
        else:  # a pairwise judge: ask only about the pairs not judged before
            mine = skey[spec.id]
            todo = [g for g in cands if (mine, skey[g.id]) not in pairs]
            if todo:
                got = _reasons(judge, subjects[spec.id], [subjects[g.id] for g in todo], toks)
                with _cache_lock:
                    if len(pairs) + len(todo) > _PAIRS_MAX:
                        pairs.clear()
                    for g in todo:
                        pairs[(mine, skey[g.id])] = got.get(g.id)
            picked = {}
            for g in cands:
                why = pairs.get((mine, skey[g.id]))
                if why is not None:
                    picked[g.id] = why
        if picked:
            out[spec.id] = picked
    if cache is not None:
        with _cache_lock:
            cache[memo_key] = out
            while len(cache) > _CACHE_SIZE:
                cache.popitem(last=False)
    return out


def conflicts(items: list[BundleItem], judge: ConflictJudge, schema: Any) -> list[BundleConflict]:
    """Cross-scope conflicts among ``items`` (see the module docstring); marks each
    overridden item's ``overridden_by`` (the most specific authoritative one) and each
    authoritative item's ``overrides``.

    :param judge: the tenant's conflict judge (``MemoryService.judge``).
    :param schema: the tenant's :class:`~reckon.schema.TenantSchema` (identifying
        properties of each subclass).
    :returns: one :class:`BundleConflict` per (authoritative, overridden) pair, the most
        specific authoritative items first. A judge that fails flags no conflict (logged).
    """
    keys = {it.id: _keys(it, schema) for it in items}
    try:
        judged = _judged(items, judge, keys)
    except Exception as exc:  # noqa: BLE001 - a failing judge never breaks the bundle
        log.warning("bundle precedence: the conflict judge failed (%s); no conflicts flagged", exc)
        return []
    by_id = {it.id: it for it in items}
    out: list[BundleConflict] = []
    for spec in sorted(items, key=lambda i: (-SCOPE_RANK.get(i.scope, 0), i.id)):
        picked = judged.get(spec.id, {})
        for gid in sorted(picked):
            gen = by_id[gid]
            shared = sorted(set(keys[spec.id]) & set(keys[gid]))
            if shared:
                key = f"{spec.subclass} " + ", ".join(f"{R.local_name(s)}={keys[spec.id][s]}" for s in shared)
            else:
                key = (f"{spec.subclass}, " if spec.subclass else "") + picked[gid]
            kind, reason = deliberate(spec, gen)
            out.append(BundleConflict(
                authoritative=spec.id, overridden=gid, authoritative_scope=spec.scope,
                overridden_scope=gen.scope, key=key, kind=kind, reason=reason,
            ))
    for c in out:
        gen = by_id[c.overridden]
        if gen.overridden_by is None or SCOPE_RANK.get(by_id[c.authoritative].scope, 0) > SCOPE_RANK.get(
                by_id[gen.overridden_by].scope, 0):
            gen.overridden_by = c.authoritative
        by_id[c.authoritative].overrides.append(c.overridden)
    return out


def deliberate(spec: BundleItem, gen: BundleItem) -> tuple[TLiteral["deliberate", "accidental"], str]:
    """Whether the more specific ``spec`` overriding ``gen`` looks intended: its text says
    so (:data:`OVERRIDE_WORDS`), or it was created after ``gen`` by ``gen``'s own author."""
    m = OVERRIDE_WORDS.search(f"{spec.label} {spec.content}")
    if m:
        return "deliberate", f"the {spec.scope} memory says {m.group(0)!r}"
    if (spec.author and spec.author == gen.author and spec.created_at and gen.created_at
            and spec.created_at > gen.created_at):
        return "deliberate", f"created later by {spec.author}, who also set the {gen.scope} memory"
    return "accidental", "no sign the override was intended"
