"""Precedence in the bundle (seed 003 §4): personal over team over company. Which
pairs of items of different scopes conflict, and whether an override looks deliberate.

Two items conflict when they are the same subclass with equal identifying properties
(:attr:`reckon.schema.catalogue.PropertySpec.identifying`), or two plain memories whose
word-count cosine (:func:`reckon.memory.conflicts.cosine_matrix`, the lexical judge's
measure) reaches :data:`reckon.memory.conflicts.SIMILARITY_THRESHOLD`.
"""

from __future__ import annotations

import re
from typing import Any
from typing import Literal as TLiteral

from reckon.memory.conflicts import SIMILARITY_THRESHOLD
from reckon.recall.models import BundleItem

__all__ = ["OVERRIDE_WORDS", "SCOPE_RANK", "conflict_key", "deliberate"]

SCOPE_RANK = {"user": 2, "team": 1, "company": 0}
"""The more specific scope ranks higher and is authoritative."""

#: Words in a personal / team memory's label or content that mark an override as
#: deliberate (case-insensitive, word-prefix match).
OVERRIDE_WORDS = re.compile(
    r"\b(overrid\w*|instead of|rather than|regardless|despite|exception|unlike|supersed\w*)\b",
    re.IGNORECASE,
)


def conflict_key(spec: BundleItem, gen: BundleItem, keys: dict[str, dict[str, Any]],
                  similar: Any) -> str | None:
    if spec.subclass and gen.subclass == spec.subclass:
        a, b = keys.get(spec.id, {}), keys.get(gen.id, {})
        shared = sorted(set(a) & set(b))
        if shared:
            if all(a[s] == b[s] for s in shared):
                return f"{spec.subclass} " + ", ".join(f"{s}={a[s]}" for s in shared)
            return None
        if not a and not b:  # a subclass without identifying properties: compare text
            c = similar(spec, gen)
            return f"{spec.subclass}, similar text (cosine {c:.2f})" if c >= SIMILARITY_THRESHOLD else None
        return None
    if not spec.subclass and not gen.subclass:
        c = similar(spec, gen)
        return f"similar text (cosine {c:.2f})" if c >= SIMILARITY_THRESHOLD else None
    return None


def deliberate(spec: BundleItem, gen: BundleItem) -> tuple[TLiteral["deliberate", "accidental"], str]:
    m = OVERRIDE_WORDS.search(f"{spec.label} {spec.content}")
    if m:
        return "deliberate", f"the {spec.scope} memory says {m.group(0)!r}"
    if (spec.author and spec.author == gen.author and spec.created_at and gen.created_at
            and spec.created_at > gen.created_at):
        return "deliberate", f"created later by {spec.author}, who also set the {gen.scope} memory"
    return "accidental", "no sign the override was intended"


