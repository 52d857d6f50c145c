"""Semantic conflict detection for new memories (seed §9, mechanism 2).

On a substantive new memory, a *judge* is shown the existing same-scope active memories
(the candidates, chosen by the service) and says which of them the newcomer would
replace. The judge is pluggable (:class:`ConflictJudge`); the default
:class:`LexicalJudge` needs no model:

* **same subclass with identifying properties** — when the newcomer has a subclass and
  both it and a candidate carry identifying properties (single-valued IRI properties,
  e.g. a budget's platform and period, a target's metric), the candidate conflicts
  exactly when every such property they both carry has the same value. Literal values
  (the amount, the goal, free text) are what a replacement changes, so they do not count. Two
  ``BudgetConstraintMemory`` on the same platform and period conflict regardless of text.
* **otherwise** — cosine similarity of word-count vectors over label + content
  (case-folded word tokens, stop words removed) at or above ``threshold``
  (default 0.5).

An embedding-based judge (the recall layer) implements the same protocol.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "ConflictJudge",
    "LexicalJudge",
    "Subject",
    "conflict_digest",
    "cosine",
    "jaccard",
    "tokens",
]

_WORD = re.compile(r"\d+(?:[.,]\d+)*|\w+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or so that the this to was "
    "we were will with our us i you your my me".split()
)


@dataclass(frozen=True)
class Subject:
    """What a judge sees of a memory.

    :ivar id: memory id (hex); empty for the newcomer.
    :ivar label: label text.
    :ivar content: content text.
    :ivar subclass: subclass IRI or ``None``.
    :ivar keys: identifying properties: property IRI -> the value's IRI.
    """

    id: str
    label: str
    content: str
    subclass: str | None = None
    keys: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class ConflictJudge(Protocol):
    """Decides which candidates a new memory would replace."""

    def judge(self, new: Subject, candidates: Sequence[Subject]) -> list[str]:
        """Ids of the candidates ``new`` would replace (a subset of ``candidates``)."""
        ...


def tokens(text: str) -> list[str]:
    """Case-folded NFKC word tokens without stop words; decimals (``2.5``, ``40,000``) stay one token."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return [w for w in _WORD.findall(t) if w not in _STOP]


def jaccard(a: str, b: str) -> float:
    """Token-set Jaccard similarity in [0, 1]."""
    sa, sb = set(tokens(a)), set(tokens(b))
    if not sa and not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def cosine(a: str, b: str) -> float:
    """Cosine similarity of word-count vectors in [0, 1]."""
    ca, cb = Counter(tokens(a)), Counter(tokens(b))
    if not ca or not cb:
        return 0.0
    dot = sum(v * cb.get(k, 0) for k, v in ca.items())
    return dot / (math.sqrt(sum(v * v for v in ca.values())) * math.sqrt(sum(v * v for v in cb.values())))


class LexicalJudge:
    """Default judge: identifying properties for subclass memories, word-count cosine
    over label + content otherwise (see module docstring).

    :param threshold: cosine similarity at or above which two memories conflict.
    """

    def __init__(self, threshold: float = 0.5, *, cache_size: int = 100_000) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        self.threshold = threshold
        self._cache: dict[str, tuple[Counter[str], float]] = {}
        self._cache_size = cache_size

    def _vector(self, text: str) -> tuple[Counter[str], float]:
        """Word counts and their norm, memoised by text (candidates recur on every write)."""
        hit = self._cache.get(text)
        if hit is None:
            c = Counter(tokens(text))
            hit = (c, math.sqrt(sum(v * v for v in c.values())))
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[text] = hit
        return hit

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of word-count vectors (same as :func:`cosine`, memoised)."""
        ca, na = self._vector(a)
        cb, nb = self._vector(b)
        if not na or not nb:
            return 0.0
        if len(ca) > len(cb):
            ca, cb = cb, ca
        return sum(v * cb.get(k, 0) for k, v in ca.items()) / (na * nb)

    def judge(self, new: Subject, candidates: Sequence[Subject]) -> list[str]:
        out: list[str] = []
        new_text = f"{new.label} {new.content}"
        for c in candidates:
            if new.subclass is not None and c.subclass == new.subclass:
                shared = set(new.keys) & set(c.keys)
                if shared:
                    if all(new.keys[k] == c.keys[k] for k in shared):
                        out.append(c.id)
                    continue
            if self.similarity(new_text, f"{c.label} {c.content}") >= self.threshold:
                out.append(c.id)
        return out


def conflict_digest(new_key: str, candidate_ids: Sequence[str]) -> str:
    """Stable conflict id: SHA-256 over the newcomer's canonical key and the sorted
    candidate ids, first 24 hex digits. The same write against the same candidates
    always yields the same id, in any process."""
    h = hashlib.sha256()
    h.update(new_key.encode("utf-8", "surrogatepass"))
    for cid in sorted(candidate_ids):
        h.update(b"\x00")
        h.update(cid.encode())
    return h.hexdigest()[:24]
