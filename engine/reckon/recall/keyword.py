"""Keyword ranking: Okapi BM25 over a mutable document set, via ``bm25s``.

BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and
Beyond"), Lucene variant of the IDF as implemented by ``bm25s`` (Lù 2024).

``bm25s`` builds a static sparse index; this wrapper keeps the token lists per id and
rebuilds the index lazily on the first query after a change (``dirty`` flag). A rebuild
of 10 000 short documents costs a few hundred milliseconds (see ``bench/``), so bulk
writes followed by one query cost one rebuild.

Tokenisation (:func:`tokenize`): lowercase word tokens ``[a-z0-9]+`` (an apostrophe
suffix such as ``'s`` is dropped), no stemming, English stopwords removed.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
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
    """BM25 over documents keyed by string id; add / remove at any time.

    :param k1: BM25 term-frequency saturation (default 1.2; Robertson & Zaragoza's
        recommended range 1.2-2.0).
    :param b: BM25 length normalisation in [0, 1] (default 0.75).
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._tokens: dict[str, list[str]] = {}
        self._df: Counter[str] = Counter()
        self._lock = threading.RLock()
        self._dirty = True
        self._bm25: object | None = None
        self._order: list[str] = []
        self._vocab: dict[str, int] = {}
        self.rebuilds = 0

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._tokens

    def add(self, doc_id: str, text: str) -> None:
        """Index (or re-index) ``text`` under ``doc_id``."""
        self.add_many([(doc_id, text)])

    def add_many(self, items: Iterable[tuple[str, str]]) -> None:
        """Index several ``(doc_id, text)`` pairs; one rebuild at the next query."""
        with self._lock:
            for doc_id, text in items:
                old = self._tokens.get(doc_id)
                if old is not None:
                    self._df.subtract(set(old))
                toks = tokenize(text)
                self._tokens[doc_id] = toks
                self._df.update(set(toks))
            self._dirty = True

    def remove(self, doc_id: str) -> None:
        """Forget ``doc_id`` (no error if absent)."""
        with self._lock:
            old = self._tokens.pop(doc_id, None)
            if old is not None:
                self._df.subtract(set(old))
                self._dirty = True

    def _rebuild(self) -> None:
        import bm25s

        self._order = list(self._tokens)
        corpus = [self._tokens[i] or ["\x00empty"] for i in self._order]
        if not corpus:
            self._bm25, self._vocab = None, {}
        else:
            model = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
            model.index(corpus, show_progress=False)
            self._bm25 = model
            self._vocab = dict(model.vocab_dict)
        self._dirty = False
        self.rebuilds += 1

    def scores(self, query: str | Sequence[str]) -> tuple[list[str], np.ndarray]:
        """BM25 score of every indexed document for ``query``.

        :param query: text (tokenised with :func:`tokenize`) or a token list.
        :returns: ``(ids, scores)``; ``scores`` is float32 ``(len(ids),)``, 0 for
            documents sharing no term with the query.
        """
        toks = tokenize(query) if isinstance(query, str) else list(query)
        with self._lock:
            if self._dirty:
                self._rebuild()
            ids = list(self._order)
            known = [t for t in toks if t in self._vocab]
            if self._bm25 is None or not known:
                return ids, np.zeros(len(ids), dtype=np.float32)
            s = self._bm25.get_scores(known)  # type: ignore[attr-defined]
        return ids, np.asarray(s, dtype=np.float32)

    def document_frequencies(self, tokens: Iterable[str]) -> dict[str, int]:
        """Number of indexed documents containing each token."""
        with self._lock:
            return {t: max(0, self._df.get(t, 0)) for t in tokens}

    def tokens(self, doc_id: str) -> list[str]:
        """The indexed tokens of ``doc_id`` (empty list if unknown)."""
        return list(self._tokens.get(doc_id, ()))
