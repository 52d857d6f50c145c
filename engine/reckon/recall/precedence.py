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
from collections.abc import Sequence
from typing import Any
from typing import Literal as TLiteral

from pyoxigraph import NamedNode

from reckon import vocab as R
from reckon.memory.conflicts import ConflictJudge, Subject
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


def _reasons(judge: ConflictJudge, new: Subject, cands: Sequence[Subject]) -> dict[str, str]:
    """Ids of ``cands`` the judge says ``new`` would replace, each with a reason (the
    judge's own when it gives verdicts)."""
    verdicts = getattr(judge, "verdicts", None)
    if callable(verdicts):
        return {v.id: v.reason for v in verdicts(new, cands)}
    return {i: f"judged the same subject ({type(judge).__name__})" for i in judge.judge(new, cands)}


def conflicts(items: list[BundleItem], judge: ConflictJudge, schema: Any) -> list[BundleConflict]:
    """Cross-scope conflicts among ``items`` (see the module docstring); marks each
    overridden item's ``overridden_by`` (the most specific authoritative one) and each
    authoritative item's ``overrides``.

    :param judge: the tenant's conflict judge (``MemoryService.judge``).
    :param schema: the tenant's :class:`~reckon.schema.TenantSchema` (identifying
        properties of each subclass).
    :returns: one :class:`BundleConflict` per (authoritative, overridden) pair, the most
        specific authoritative items first.
    """
    keys = {it.id: _keys(it, schema) for it in items}
    subjects = {it.id: _subject(it, keys[it.id]) for it in items}
    out: list[BundleConflict] = []
    for spec in sorted(items, key=lambda i: (-SCOPE_RANK.get(i.scope, 0), i.id)):
        rank = SCOPE_RANK.get(spec.scope, 0)
        # the write path's candidates: the same class (a subclass item), plain memories (a
        # plain one); here of the less specific scopes
        cands = sorted((g for g in items if SCOPE_RANK.get(g.scope, 0) < rank and g.subclass_iri == spec.subclass_iri),
                       key=lambda g: g.id)
        if not cands:
            continue
        try:
            picked = _reasons(judge, subjects[spec.id], [subjects[g.id] for g in cands])
        except Exception as exc:  # noqa: BLE001 - a failing judge never breaks the bundle
            log.warning("bundle precedence: the conflict judge failed (%s); no conflicts flagged", exc)
            return []
        for gen in cands:
            if gen.id not in picked:
                continue
            shared = sorted(set(keys[spec.id]) & set(keys[gen.id]))
            if shared:
                key = f"{spec.subclass} " + ", ".join(f"{R.local_name(s)}={keys[spec.id][s]}" for s in shared)
            else:
                key = (f"{spec.subclass}, " if spec.subclass else "") + picked[gen.id]
            kind, reason = deliberate(spec, gen)
            out.append(BundleConflict(
                authoritative=spec.id, overridden=gen.id, authoritative_scope=spec.scope,
                overridden_scope=gen.scope, key=key, kind=kind, reason=reason,
            ))
    by_id = {it.id: it for it in items}
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
