"""Keyword ranking: Okapi BM25 over a mutable document set, maintained incrementally.

BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and
Beyond"), Lucene variant (Kamphuis et al. 2020), with the same arithmetic as ``bm25s``
(Lù 2024) ``method="lucene"`` so scores equal a ``bm25s`` index built from scratch on the
current documents.

:class:`KeywordIndex` keeps its own inverted index (term -> {document: term
frequency}, document lengths, N, avgdl), updated in O(len(document)) on every add /
update / remove; a query reads only the postings of its terms. Nothing is persisted: the
owner re-adds its documents on open.

Tokenisation (:func:`tokenize`): lowercase word tokens ``[a-z0-9]+`` (an apostrophe
suffix such as ``'s`` is dropped), no stemming, English stopwords removed.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["STOPWORDS", "KeywordIndex", "tokenize"]

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

#: English stopwords: bm25s's list plus common function words and pronouns.
STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the
    their then there these they this to was will with i me my myself we our ours you your
    yours he him his she her hers its them what which who whom those am were been being
    have has had having do does did doing would should could can may might must shall
    from up down out off over under again further once here when where why how all any
    both each few more most other some own same so than too very just about above after
    before below between during through until while s t don now also us let get got
    ll re ve d m o y ain isn aren wasn weren hasn haven hadn doesn didn won wouldn
    shouldn couldn mustn needn""".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens of ``text`` without stopwords (no stemming).

    >>> tokenize("Caroline's new painting of the Sunrise!")
    ['caroline', 'new', 'painting', 'sunrise']
    """
    out = []
    for m in _TOKEN.findall(text.lower()):
        w = m.split("'", 1)[0]
        if w and w not in STOPWORDS:
            out.append(w)
    return out


class KeywordIndex:
    """Okapi BM25 over documents keyed by string id, maintained incrementally.

    An inverted index (term -> {slot: term frequency}), the document lengths, the
    document count N and the total length (hence avgdl) are updated on every
    :meth:`add` / :meth:`remove` in O(len(document)); a query reads only the postings of
    its own terms, so writes never trigger a rebuild.

    Scoring is the Lucene variant of BM25 (Kamphuis et al. 2020, ECIR, "Which BM25 Do
    You Mean?"), exactly as ``bm25s`` (checked against 0.3.16) computes it with
    ``method="lucene"`` (its default), so scores are bit-identical to ``bm25s`` rebuilt
    on the current corpus (``tests/recall/test_keyword_bm25s.py`` checks this)::

        idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))          (stored as float32)
        s(t, d)     = idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl)) (float64, then float32)
        score(q, d) = sum over query tokens t (repeats counted) of s(t, d)  (float32)

    A document with no token counts as length 1 in avgdl (``bm25s`` cannot index an
    empty document; the former wrapper gave it one placeholder token).

    :param k1: BM25 term-frequency saturation (default 1.2; Robertson & Zaragoza's
        recommended range 1.2-2.0).
    :param b: BM25 length normalisation in [0, 1] (default 0.75).

    Attribute ``generation`` counts the changes of the ids layout returned by
    :meth:`scores` (bumped at the first query after a new id or a removal; an update in
    place keeps it): callers may cache an id -> position map keyed on it.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._lock = threading.RLock()
        self._tokens: dict[str, list[str]] = {}
        self._slot: dict[str, int] = {}  # id -> slot (dense 0..N-1)
        self._ids: list[str] = []  # slot -> id
        self._dl = np.zeros(16, dtype=np.float64)  # slot -> document length (>= 1)
        self._total = 0  # sum of document lengths
        self._postings: dict[str, dict[int, int]] = {}  # term -> {slot: tf}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # term -> (slots, tf)
        # term -> (slots, float32 BM25 contributions), valid until the next write
        self._scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._scored_params = (k1, b)
        self._layout_dirty = True
        self.generation = 0

    @property
    def rebuilds(self) -> int:
        """Former name of :attr:`generation` (no index is rebuilt any more)."""
        return self.generation

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot

    # ------------------------------------------------------------------ writes
    def add(self, doc_id: str, text: str) -> None:
        """Index (or re-index) ``text`` under ``doc_id``; O(tokens of old + new text)."""
        self.add_many([(doc_id, text)])

    def add_many(self, items: Iterable[tuple[str, str]]) -> None:
        """Index several ``(doc_id, text)`` pairs (each as :meth:`add`)."""
        self.add_tokens((doc_id, tokenize(text)) for doc_id, text in items)

    def add_tokens(self, items: Iterable[tuple[str, list[str]]]) -> None:
        """Index several ``(doc_id, tokens)`` pairs, the tokens already :func:`tokenize`d
        (a persisted snapshot reopens without tokenising every document again)."""
        with self._lock:
            self._scored.clear()  # N / avgdl / df change: every contribution is stale
            for doc_id, toks in items:
                slot = self._slot.get(doc_id)
                if slot is None:
                    slot = len(self._ids)
                    if slot == len(self._dl):
                        grown = np.zeros(2 * len(self._dl), dtype=np.float64)
                        grown[:slot] = self._dl
                        self._dl = grown
                    self._slot[doc_id] = slot
                    self._ids.append(doc_id)
                    self._layout_dirty = True
                else:
                    self._unpost(slot, self._tokens[doc_id])
                    self._total -= int(self._dl[slot])
                self._tokens[doc_id] = toks
                self._post(slot, toks)
                self._dl[slot] = max(1, len(toks))
                self._total += int(self._dl[slot])

    def remove(self, doc_id: str) -> None:
        """Forget ``doc_id`` (no error if absent); the last slot moves into its place."""
        with self._lock:
            slot = self._slot.pop(doc_id, None)
            if slot is None:
                return
            self._scored.clear()
            self._unpost(slot, self._tokens.pop(doc_id))
            self._total -= int(self._dl[slot])
            last = len(self._ids) - 1
            if slot != last:
                moved = self._ids[last]
                mtoks = self._tokens[moved]
                self._unpost(last, mtoks)
                self._post(slot, mtoks)
                self._ids[slot] = moved
                self._slot[moved] = slot
                self._dl[slot] = self._dl[last]
            self._ids.pop()
            self._dl[last] = 0.0
            self._layout_dirty = True

    def _post(self, slot: int, toks: list[str]) -> None:
        # callers clear ``_scored`` (N / avgdl / df changed: every contribution is stale)
        tf: dict[str, int] = {}
        for t in toks:
            tf[t] = tf.get(t, 0) + 1
        postings, arrays = self._postings, self._arrays
        for t, n in tf.items():
            p = postings.get(t)
            if p is None:
                postings[t] = {slot: n}
            else:
                p[slot] = n
            if arrays:
                arrays.pop(t, None)

    def _unpost(self, slot: int, toks: list[str]) -> None:
        self._scored.clear()
        for t in set(toks):
            p = self._postings[t]
            del p[slot]
            if not p:
                del self._postings[t]
            self._arrays.pop(t, None)

    # ------------------------------------------------------------------ reads
    def _term_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        arr = self._arrays.get(term)
        if arr is None:
            p = self._postings.get(term)
            if not p:
                return None
            arr = (
                np.fromiter(p.keys(), dtype=np.int64, count=len(p)),
                np.fromiter(p.values(), dtype=np.float64, count=len(p)),
            )
            self._arrays[term] = arr
        return arr

    def scores(self, query: str | Sequence[str]) -> tuple[list[str], np.ndarray]:
        """BM25 score of every indexed document for ``query``.

        Cost: O(N) to allocate the result plus O(df) per query token; no rebuild. A
        term's float32 contributions are memoised until the next write (or a change of
        :attr:`k1` / :attr:`b`).

        :param query: text (tokenised with :func:`tokenize`) or a token list (a token
            given twice counts twice).
        :returns: ``(ids, scores)``; ``scores`` is float32 ``(len(ids),)``, 0 for
            documents sharing no term with the query. The order of ``ids`` is stable
            while :attr:`generation` is unchanged.
        """
        toks = tokenize(query) if isinstance(query, str) else list(query)
        with self._lock:
            if self._layout_dirty:
                self.generation += 1
                self._layout_dirty = False
            n = len(self._ids)
            out = np.zeros(n, dtype=np.float32)
            if n == 0:
                return [], out
            avgdl = self._total / n
            k1, b = self.k1, self.b
            if self._scored_params != (k1, b):
                self._scored.clear()
                self._scored_params = (k1, b)
            for t in toks:
                hit = self._scored.get(t)
                if hit is None:
                    arr = self._term_arrays(t)
                    if arr is None:
                        continue
                    slots, tf = arr
                    df = len(slots)
                    idf = float(np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5))))
                    dl = self._dl[slots]
                    s = idf * (tf / (k1 * ((1 - b) + b * dl / avgdl) + tf))
                    hit = self._scored[t] = (slots, s.astype(np.float32))
                out[hit[0]] += hit[1]
            return list(self._ids), out

    def document_frequencies(self, tokens: Iterable[str]) -> dict[str, int]:
        """Number of indexed documents containing each token."""
        with self._lock:
            return {t: len(self._postings.get(t, ())) for t in tokens}

    def tokens(self, doc_id: str) -> list[str]:
        """The indexed tokens of ``doc_id`` (empty list if unknown)."""
        return list(self._tokens.get(doc_id, ()))
