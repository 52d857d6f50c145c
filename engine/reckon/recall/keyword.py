"""Keyword ranking: Okapi BM25 over a mutable document set, maintained incrementally.

BM25 (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and
Beyond"), Lucene variant (Kamphuis et al. 2020), with the same arithmetic as ``bm25s``
(Lù 2024) ``method="lucene"`` so scores equal a ``bm25s`` index built from scratch on the
current documents.

:class:`KeywordIndex` keeps its own inverted index (term -> {document: term
frequency}, document lengths, N, avgdl), updated in O(len(document)) on every add /
update / remove; a query reads only the postings of its terms. The owner persists it
(:meth:`KeywordIndex.export` -> arrays; :meth:`KeywordIndex.load` on open: the postings
arrive as arrays, each term's turned into a dict only when a write touches it, so
opening costs O(ids + terms) in Python plus a few numpy passes over the postings). The postings
are the only copy of a loaded document's tokens: a write that needs them (re-indexing or
removing the document) derives them from the loaded arrays.

Tokenisation (:func:`tokenize`): lowercase word tokens ``[a-z0-9]+`` (an apostrophe
suffix such as ``'s`` is dropped), no stemming, English stopwords removed.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["STOPWORDS", "FrozenKeywords", "KeywordIndex", "postings_match_tokens", "tokenize"]

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


_FP_MOD = (1 << 31) - 1  # a prime: fingerprints are sums mod it (int64 products never overflow)
_FP_POS = 16  # byte positions in a token told apart (later ones share the last)
_FP_TABLES = np.random.default_rng(0x5EC0).integers(1, _FP_MOD, size=(2, 256, _FP_POS), dtype=np.int64).astype(np.int32)
_FP_TABLES[:, 32, :] = 0  # the space between tokens counts for nothing


def _fp_positions(blob: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """int32 ``(len(blob),)``: per byte, its row in a fingerprint table -- by its value and
    its position in its token (``starts`` marks each token's first byte)."""
    idx = np.arange(len(blob), dtype=np.int32)  # a snapshot's blobs stay below 2**31 bytes
    first = np.where(starts, idx, 0)
    np.maximum.accumulate(first, out=first)
    np.subtract(idx, first, out=idx)
    np.minimum(idx, _FP_POS - 1, out=idx)
    idx += blob.astype(np.int32) * _FP_POS
    return idx


def _fp_segments(values: np.ndarray, off: np.ndarray) -> np.ndarray:
    """int64: the sums of ``values`` (each < 2**31) over ``off[i]:off[i+1]`` (``off[0] == 0``,
    ``off[-1] == len(values)``, non-decreasing), mod the prime."""
    out = np.zeros(len(off) - 1, dtype=np.int64)
    full = off[1:] > off[:-1]
    if full.any():  # the non-empty segments tile ``values``: reduce at their starts
        out[full] = np.add.reduceat(values, off[:-1][full], dtype=np.int64)
    res: np.ndarray = out % _FP_MOD
    return res


def _strictly_increasing_per_term(doc: np.ndarray, off: np.ndarray) -> bool:
    """Whether each term's postings ``doc[off[j]:off[j+1]]`` are strictly increasing
    (then no document is in them twice). O(postings), one pass."""
    if len(doc) < 2:
        return True
    up = doc[1:] > doc[:-1]
    inner = off[1:-1]
    inner = inner[(inner > 0) & (inner < len(doc))]
    up[inner - 1] = True  # a term's first posting follows the previous term's last
    return bool(up.all())


_I32_MAX = (1 << 31) - 1  # export writes ``tf`` and ``dl`` as int32
#: derivations of loaded documents' tokens by a scan of all postings before a per-document
#: index of them is built instead (at 1.3M postings a scan takes ~0.35 ms, the build ~30 ms:
#: ski rental, so many derivations cost at most ~2x what the best choice in hindsight would)
_SCANS_BEFORE_INDEX = 64


def _order_by_doc(doc: np.ndarray) -> np.ndarray:
    """int64: the stable permutation sorting ``doc`` (int64, values in ``[0, 2**32)``):
    two 16-bit radix passes (numpy sorts 16-bit keys by radix, ~2.5x an int64 argsort)."""
    lo = np.argsort((doc & 0xFFFF).astype(np.uint16), kind="stable")
    if not len(doc) or int(doc.max()) < 1 << 16:
        return lo
    hi = (doc[lo] >> 16).astype(np.uint16)
    res: np.ndarray = lo[np.argsort(hi, kind="stable")]
    return res


def _group_by_doc(doc: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The positions of ``doc`` (int64, values in ``[0, n)``) grouped by value, int64
    ``(len(doc),)`` (increasing within a group), and the groups' bounds, int64 ``(n + 1,)``:
    value ``s`` is at ``order[bounds[s]:bounds[s+1]]``."""
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc, minlength=n), out=bounds[1:])
    return _order_by_doc(doc), bounds


def _ints(a: object, what: str) -> np.ndarray:
    """``a`` as an int64 array; ValueError unless it holds integers (an empty array may
    have any dtype)."""
    arr = np.asarray(a)
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"keyword index array {what} holds {arr.dtype}, not integers")
    return arr.astype(np.int64)  # a copy: the caller's array is never kept


def _checked_postings(n: int, terms: Sequence[str], off: object, doc: object,
                      tf: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(off, doc, tf, dl)`` as int64 copies (the postings sorted by document within
    each term if they were not), ``dl`` float64 ``(n,)`` the lengths the postings give
    (``max(1, sum of tf)``); ValueError unless they fit together as
    :meth:`KeywordIndex.load` states."""
    off, doc, tf = _ints(off, "off"), _ints(doc, "doc"), _ints(tf, "tf")
    if off.shape != (len(terms) + 1,) or off[0] != 0 or off[-1] != len(doc):
        raise ValueError(f"keyword term offsets {off.shape} do not span {len(doc)} postings of {len(terms)} terms")
    if doc.ndim != 1 or tf.shape != doc.shape:
        raise ValueError(f"keyword postings: doc {doc.shape}, tf {tf.shape}")
    if np.any(off[1:] <= off[:-1]):
        raise ValueError("a keyword term without postings (offsets not increasing)")
    if len(doc) and (int(doc.min()) < 0 or int(doc.max()) >= n):
        raise ValueError(f"a keyword posting names a document outside [0, {n})")
    if len(tf) and (int(tf.min()) < 1 or int(tf.max()) > _I32_MAX):
        raise ValueError("a keyword term frequency outside [1, 2**31)")
    if not _strictly_increasing_per_term(doc, off):  # an older writer's order, or a document twice
        keys = np.repeat(np.arange(len(terms), dtype=np.int64), np.diff(off)) * max(n, 1) + doc
        by = np.argsort(keys, kind="stable")
        doc, tf = doc[by], tf[by]
        if not _strictly_increasing_per_term(doc, off):
            raise ValueError("a document twice in one keyword term's postings")
    dl = np.maximum(np.bincount(doc, weights=tf, minlength=n).astype(np.float64, copy=False), 1.0)
    if n and dl.max() > _I32_MAX:
        raise ValueError("a keyword document length of 2**31 or more")
    return off, doc, tf, dl


class _LoadedTokens:
    """The tokens of the documents as :meth:`KeywordIndex.load` got them, derived from the
    loaded postings (which never change: a write moves a term's postings into a dict and
    leaves these arrays alone). Document ``slot``'s postings are the positions ``p`` with
    ``doc[p] == slot``; its term is the ``j`` with ``off[j] <= p < off[j+1]``.

    :param terms: the loaded terms by number; ``off`` int64 ``(terms + 1,)``, ``doc`` int64
        and ``tf`` float64 ``(postings,)``, already validated by :meth:`KeywordIndex.load`.
    """

    def __init__(self, terms: list[str], off: np.ndarray, doc: np.ndarray, tf: np.ndarray, n: int) -> None:
        self.terms, self.off, self.doc, self.tf, self.n = terms, off, doc, tf, n
        self._scans = 0
        # (positions grouped by document, int64 (postings,); group bounds, int64 (n + 1,))
        self._by_doc: tuple[np.ndarray, np.ndarray] | None = None

    def of(self, slot: int) -> list[str]:
        """Document ``slot``'s tokens: each of its terms (in sorted order) repeated tf
        times. One O(postings) numpy scan, or O(its postings) once
        :data:`_SCANS_BEFORE_INDEX` scans have paid for a per-document index."""
        if self._by_doc is None and self._scans < _SCANS_BEFORE_INDEX:
            self._scans += 1
            pos = np.flatnonzero(self.doc == slot)
        else:
            if self._by_doc is None:
                self._by_doc = _group_by_doc(self.doc, self.n)
            order, bounds = self._by_doc
            pos = order[bounds[slot]:bounds[slot + 1]]
        j = np.searchsorted(self.off, pos, side="right") - 1
        terms = self.terms
        pairs = sorted(zip([terms[k] for k in j.tolist()], self.tf[pos].astype(np.int64).tolist()))
        return [t for t, f in pairs for _ in range(f)]

    def joined(self, slots: Sequence[int]) -> list[str]:
        """Per slot of ``slots``, :meth:`of` joined by single spaces; O(postings) numpy,
        then O(their postings) Python. Writes nothing shared (a frozen view calls it
        without the index's lock)."""
        order, bounds = self._by_doc or _group_by_doc(self.doc, self.n)
        term_no = np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.off))[order].tolist()
        freq = self.tf[order].astype(np.int64).tolist()
        b = bounds.tolist()
        terms = self.terms
        out = []
        for s in slots:
            a, e = b[s], b[s + 1]
            pairs = sorted(zip([terms[k] for k in term_no[a:e]], freq[a:e]))
            out.append(" ".join(t for t, f in pairs for _ in range(f)))
        return out


def postings_match_tokens(terms_blob: np.ndarray, terms_off: np.ndarray, tokens_blob: np.ndarray,
                          tokens_off: np.ndarray, off: np.ndarray, doc: np.ndarray, tf: np.ndarray,
                          dl: np.ndarray) -> bool:
    """Whether the BM25 postings of a persisted index (the arrays of
    :meth:`KeywordIndex.export`) are those of its documents' tokens: per document, the
    multiset of (term, frequency) the postings give equals the document's tokens, and
    its length is their number (at least 1). O(bytes + postings) in numpy, no token is
    split or looked up: each side's per-document fingerprint is a sum, mod a prime, of
    random values per (byte, position in the token) -- two independent ones, so a
    mismatch passes with probability ~2**-62.

    :param terms_blob: uint8, the sorted terms concatenated (UTF-8); ``terms_off`` int
        ``(terms + 1,)`` their offsets.
    :param tokens_blob: uint8, per document its tokens joined by single spaces,
        concatenated; ``tokens_off`` int ``(documents + 1,)`` their offsets.
    :param off: int ``(terms + 1,)``; ``doc``, ``tf`` ``(postings,)``; ``dl``
        ``(documents,)``: as :meth:`KeywordIndex.load` takes them, already checked to
        fit together (offsets in range, document numbers below the document count).
    """
    terms_off = np.asarray(terms_off, dtype=np.int64)
    tokens_off = np.asarray(tokens_off, dtype=np.int64)
    off = np.asarray(off, dtype=np.int64)
    n = len(tokens_off) - 1
    for o, blob in ((terms_off, terms_blob), (tokens_off, tokens_blob)):
        if len(o) == 0 or o[0] != 0 or o[-1] != len(blob) or np.any(np.diff(o) < 0):
            return False
    starts = np.zeros(len(terms_blob), dtype=bool)
    starts[terms_off[:-1][terms_off[:-1] < len(terms_blob)]] = True
    term_rows = _fp_positions(terms_blob, starts)
    starts = np.zeros(len(tokens_blob), dtype=bool)
    starts[1:] = tokens_blob[:-1] == 32
    starts[tokens_off[:-1][tokens_off[:-1] < len(tokens_blob)]] = True
    token_rows = _fp_positions(tokens_blob, starts)
    counts = _fp_segments(starts.view(np.uint8), tokens_off)  # tokens per document
    tf64 = np.asarray(tf, dtype=np.int64)
    doc = np.asarray(doc, dtype=np.int64)
    if not np.array_equal(np.bincount(doc, weights=tf64, minlength=n).astype(np.int64), counts):
        return False
    if not np.array_equal(np.asarray(dl, dtype=np.int64), np.maximum(counts, 1)):
        return False
    reps = np.diff(off)
    if not _strictly_increasing_per_term(doc, off):  # what export writes: no document twice, no sort
        keys = np.repeat(np.arange(len(reps), dtype=np.int64), reps) * max(n, 1) + doc
        keys.sort()  # postings in another order (a snapshot of an older writer)
        if np.any(keys[1:] == keys[:-1]):
            return False  # a document twice in one term's postings
    for k in range(len(_FP_TABLES)):
        table = _FP_TABLES[k].ravel()
        per_term = _fp_segments(np.take(table, term_rows), terms_off)
        w = (np.repeat(per_term, reps) * tf64) % _FP_MOD  # < 2**31 each: float64 sums stay exact
        got = np.bincount(doc, weights=w.astype(np.float64), minlength=n).astype(np.int64) % _FP_MOD
        if not np.array_equal(got, _fp_segments(np.take(table, token_rows), tokens_off)):
            return False
    return True


@dataclass(frozen=True)
class FrozenKeywords:
    """A :class:`KeywordIndex` as it was when :meth:`KeywordIndex.frozen` took it: its
    own copies of the id, slot, token and length tables and of the term dicts; the
    postings dicts and loaded arrays are shared, never written while the view is open.
    A document missing from ``tokens`` is a loaded one still at its loaded slot: its
    tokens are those ``loaded`` derives from the loaded postings."""

    ids: list[str]
    slot: dict[str, int]
    tokens: dict[str, list[str] | str]
    dl: np.ndarray
    postings: dict[str, dict[int, int]]
    arrays: dict[str, tuple[np.ndarray, np.ndarray]]
    base: dict[str, int]
    base_off: np.ndarray
    base_doc: np.ndarray
    base_tf: np.ndarray
    loaded: _LoadedTokens | None = None

    def _term_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        arr = self.arrays.get(term)
        if arr is None:
            p = self.postings[term]
            arr = (np.fromiter(p.keys(), dtype=np.int64, count=len(p)),
                   np.fromiter(p.values(), dtype=np.float64, count=len(p)))
        return arr

    def export(self, order: Sequence[str], *, tokens: bool = True) -> dict[str, np.ndarray | list[str]]:
        """:meth:`KeywordIndex.export` of the view (same arrays, same errors); holds no lock."""
        if len(order) != len(self.ids) or len(set(order)) != len(order):
            raise ValueError(f"order lists {len(order)} ids for {len(self.ids)} documents")
        slot_of = self.slot
        pos = np.empty(len(self.ids), dtype=np.int64)  # slot -> position in order
        for k, i in enumerate(order):
            pos[slot_of[i]] = k
        terms = sorted({*self.postings, *self.base})
        # a term still as loaded is a slice of the loaded arrays: all of them are copied
        # by one gather; only the terms a write touched are made from their dicts
        src = np.fromiter((self.base.get(t, -1) for t in terms), dtype=np.int64, count=len(terms))
        lens = np.zeros(len(terms), dtype=np.int64)
        loaded = src >= 0
        lens[loaded] = self.base_off[src[loaded] + 1] - self.base_off[src[loaded]]
        touched: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for j in np.flatnonzero(~loaded).tolist():
            arr = self._term_arrays(terms[j])
            touched[j] = arr
            lens[j] = len(arr[0])
        off = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        slots = np.empty(int(off[-1]), dtype=np.int64)
        tf64 = np.empty(int(off[-1]), dtype=np.float64)
        dst_start = off[:-1][loaded]
        src_start = self.base_off[src[loaded]]
        ln = lens[loaded]
        shift = np.repeat(src_start - dst_start, ln)  # destination index + shift = source index
        dst = np.repeat(dst_start, ln) + (np.arange(int(ln.sum()), dtype=np.int64)
                                          - np.repeat(np.cumsum(ln) - ln, ln))
        slots[dst] = self.base_doc[dst + shift]
        tf64[dst] = self.base_tf[dst + shift]
        for j, (sl, f) in touched.items():
            slots[off[j]:off[j + 1]] = sl
            tf64[off[j]:off[j + 1]] = f
        cat_doc = pos[slots].astype(np.int32)
        cat_tf = tf64.astype(np.int32)
        if not _strictly_increasing_per_term(cat_doc, off):  # document order: the check on open sorts nothing
            by = np.lexsort((cat_doc, np.repeat(np.arange(len(terms), dtype=np.int64), np.diff(off))))
            cat_doc, cat_tf = cat_doc[by], cat_tf[by]
        dl = self.dl[[slot_of[i] for i in order]].astype(np.int32)
        out: dict[str, np.ndarray | list[str]] = {"terms": terms, "off": off, "doc": cat_doc, "tf": cat_tf, "dl": dl}
        if tokens:
            out["tokens"] = self._joined_tokens(order)
        return out

    def _joined_tokens(self, order: Sequence[str]) -> list[str]:
        """Per id of ``order``, its tokens joined by spaces (derived in one pass for the
        loaded documents whose tokens were never needed)."""
        got = self.tokens
        derive = [k for k, i in enumerate(order) if i not in got]
        toks: list[str] = []
        for i in order:
            tk = got.get(i)
            toks.append("" if tk is None else tk if isinstance(tk, str) else " ".join(tk))
        if derive:
            assert self.loaded is not None  # only a loaded document has no tokens stored
            for k, joined in zip(derive, self.loaded.joined([self.slot[order[k]] for k in derive])):
                toks[k] = joined
        return toks


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
        # id -> tokens (a str: the tokens joined by spaces, as loaded; split when needed);
        # a loaded document missing here is still at its loaded slot, its tokens those
        # ``_loaded`` derives from the loaded postings (stored here when first needed)
        self._tokens: dict[str, list[str] | str] = {}
        self._slot: dict[str, int] = {}  # id -> slot (dense 0..N-1)
        self._ids: list[str] = []  # slot -> id
        self._dl = np.zeros(16, dtype=np.float64)  # slot -> document length (>= 1)
        self._total = 0  # sum of document lengths
        self._postings: dict[str, dict[int, int]] = {}  # term -> {slot: tf}
        # term -> (slots, tf) as loaded (:meth:`load`); moved into ``_postings`` on a write
        self._base: dict[str, int] = {}  # term -> its number in the loaded arrays below
        self._base_off = np.zeros(1, dtype=np.int64)
        self._base_doc = np.zeros(0, dtype=np.int64)
        self._base_tf = np.zeros(0, dtype=np.float64)
        self._loaded: _LoadedTokens | None = None
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # term -> (slots, tf)
        # term -> (slots, float32 BM25 contributions), valid until the next write
        self._scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._scored_params = (k1, b)
        self._layout_dirty = True
        self.generation = 0
        # terms whose postings dict a :meth:`frozen` view shares (copied before a write)
        self._cow: set[str] | None = None

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
                    self._unpost(slot, self._toks(doc_id, slot))
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
            self._unpost(slot, self._toks(doc_id, slot))
            del self._tokens[doc_id]
            self._total -= int(self._dl[slot])
            last = len(self._ids) - 1
            if slot != last:
                moved = self._ids[last]
                mtoks = self._toks(moved, last)  # stored: its slot no longer is the loaded one
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
        postings, arrays, cow = self._postings, self._arrays, self._cow
        for t, n in tf.items():
            p = postings.get(t)
            if p is None and t in self._base:
                p = self._plist(t)
            elif p is not None and cow is not None and t in cow:
                p = self._unshare(t)
            if p is None:
                postings[t] = {slot: n}
            else:
                p[slot] = n
            if arrays:
                arrays.pop(t, None)

    def _unpost(self, slot: int, toks: list[str]) -> None:
        self._scored.clear()
        cow = self._cow
        for t in set(toks):
            p = self._unshare(t) if cow is not None and t in cow else self._plist(t)
            del p[slot]
            if not p:
                del self._postings[t]
            self._arrays.pop(t, None)

    def _unshare(self, term: str) -> dict[int, int]:
        """The postings dict of ``term``, copied first if a frozen view shares it."""
        assert self._cow is not None
        self._cow.discard(term)
        p = self._postings[term] = dict(self._postings[term])
        return p

    def _toks(self, doc_id: str, slot: int) -> list[str]:
        """The tokens of ``doc_id`` (at ``slot``), stored in ``_tokens`` from now on."""
        t = self._tokens.get(doc_id)
        if t is None:
            assert self._loaded is not None, doc_id  # only a loaded document has none stored
            t = self._tokens[doc_id] = self._loaded.of(slot)
        elif isinstance(t, str):
            t = self._tokens[doc_id] = t.split(" ") if t else []
        return t

    def _base_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``(slots, tf)`` of ``term`` as loaded (views), or None (not loaded, or moved
        into ``_postings`` by a write)."""
        j = self._base.get(term)
        if j is None:
            return None
        a, b = int(self._base_off[j]), int(self._base_off[j + 1])
        return self._base_doc[a:b], self._base_tf[a:b]

    def _plist(self, term: str) -> dict[int, int]:
        """The postings dict of ``term`` (made from the loaded arrays on first write)."""
        p = self._postings.get(term)
        if p is None:
            base = self._base_arrays(term)
            self._base.pop(term, None)
            p = self._postings[term] = {} if base is None else dict(zip(base[0].tolist(), base[1].tolist()))
        return p

    # ------------------------------------------------------------------ persistence
    def export(self, order: Sequence[str], *, tokens: bool = True) -> dict[str, np.ndarray | list[str]]:
        """The index as arrays, documents numbered by their position in ``order`` (every
        indexed id once): ``terms`` (list of str, sorted), ``off`` int64 ``(terms + 1,)``
        (term ``j``'s postings are ``off[j]:off[j+1]``, in increasing document number), ``doc`` int32 and ``tf`` int32
        ``(postings,)``, ``dl`` int32 ``(len(order),)`` (document lengths, >= 1) and, with
        ``tokens``, ``tokens`` (per document of ``order``, its tokens joined by spaces: a
        second copy of what the postings hold, which :meth:`load` no longer needs).

        Holds the index's lock throughout; :meth:`frozen` exports without holding it.

        :param tokens: whether to add the ``tokens`` column. Without it no loaded
            document's tokens are derived: the cost is numpy over the postings plus
            O(documents + written terms) Python for ``order``, ``dl`` and the postings dicts.

        :raises KeyError: when ``order`` names an id that is not indexed.
        :raises ValueError: when ``order`` does not list every indexed id once.
        """
        with self._lock, self.frozen() as view:
            return view.export(order, tokens=tokens)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[FrozenKeywords]:
        """``with index.frozen() as view``: the index as it is now, for
        :meth:`FrozenKeywords.export` outside the index's lock while writes go on.

        Taking the view costs O(documents + terms) dict and array copies under the lock
        (no postings are copied). Copy-on-write: until the ``with`` block ends, a write
        that changes a term's postings dict gives the index a copy of it, so the view's
        dicts never change. One view at a time (the caller serialises exports).

        :raises RuntimeError: when another view is still open.
        """
        with self._lock:
            if self._cow is not None:
                raise RuntimeError("a frozen view of this keyword index is already open")
            n = len(self._ids)
            view = FrozenKeywords(
                ids=list(self._ids), slot=dict(self._slot), tokens=dict(self._tokens),
                dl=self._dl[:n].copy(), postings=dict(self._postings), arrays=dict(self._arrays),
                base=dict(self._base), base_off=self._base_off, base_doc=self._base_doc, base_tf=self._base_tf,
                loaded=self._loaded)
            self._cow = set(self._postings)
        try:
            yield view
        finally:
            with self._lock:
                self._cow = None

    def load(self, ids: Sequence[str], tokens: Sequence[str] | None, dl: np.ndarray | None, terms: Sequence[str],
             off: np.ndarray, doc: np.ndarray, tf: np.ndarray) -> None:
        """Fill an empty index with what :meth:`export` wrote (``ids`` in its ``order``).

        The postings are the only copy of the documents' tokens the index needs: with
        ``tokens=None`` none is stored, and a write that needs a loaded document's tokens
        (re-indexing or removing it, or moving it into a removed one's slot) derives them
        from the loaded arrays (:meth:`tokens`). The arrays are checked to be
        self-consistent, so no later write can find postings missing: O(postings) numpy,
        plus a sort when some term's postings are not in increasing document number (an
        older writer's), and O(ids + terms) Python for the id and term tables.

        :param ids: ``(documents,)`` distinct ids, document ``k`` being ``ids[k]``.
        :param tokens: None, or per document its tokens joined by single spaces (the
            former format: stored as given; that they are the postings' is the caller's
            to check, e.g. with :func:`postings_match_tokens`).
        :param dl: None (derived), or int ``(documents,)`` document lengths: must equal
            ``max(1, sum of tf over the document's postings)``.
        :param terms: ``(terms,)`` distinct terms (any order).
        :param off: int ``(terms + 1,)``: term ``j``'s postings are ``off[j]:off[j+1]``;
            ``off[0] == 0``, ``off[-1] == len(doc)``, every term at least one posting.
        :param doc: int ``(postings,)`` document numbers in ``[0, documents)``, no
            document twice in one term's postings (in any order within a term).
        :param tf: int ``(postings,)`` term frequencies in ``[1, 2**31)``.
        :raises ValueError: when the index is not empty or the arrays do not fit together
            (any condition above, or document lengths of 2**31 or more): the index is
            left empty.
        """
        n = len(ids)
        with self._lock:
            if self._ids:
                raise ValueError("load into a non-empty keyword index")
            off, doc, tf_i, length = _checked_postings(n, terms, off, doc, tf)
            if dl is not None:
                given = np.asarray(dl, dtype=np.float64)
                if given.shape != (n,) or not np.array_equal(given, length):
                    raise ValueError("keyword index document lengths are not those of the postings")
            if tokens is not None and len(tokens) != n:
                raise ValueError(f"{len(tokens)} token lists for {n} documents")
            if len(set(terms)) != len(terms):
                raise ValueError("a term twice in the keyword index arrays")
            if len(set(ids)) != n:
                raise ValueError("an id twice in the keyword index arrays")
            tf = tf_i.astype(np.float64)
            for a in (off, doc, tf):
                a.flags.writeable = False  # the only copy of the loaded documents' tokens
            self._dl = np.zeros(max(16, n), dtype=np.float64)
            self._dl[:n] = length
            self._total = int(length.sum())
            self._ids = list(ids)
            self._slot = {i: k for k, i in enumerate(self._ids)}
            self._tokens = {} if tokens is None else dict(zip(self._ids, tokens))
            terms = list(terms)
            self._base = dict(zip(terms, range(len(terms))))
            self._base_off, self._base_doc, self._base_tf = off, doc, tf
            self._loaded = _LoadedTokens(terms, off, doc, tf, n) if tokens is None else None
            self._postings, self._arrays, self._scored = {}, {}, {}
            self._layout_dirty = True

    # ------------------------------------------------------------------ reads
    def _term_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        arr = self._arrays.get(term)
        if arr is None:
            base = self._base_arrays(term)
            if base is not None:
                return base
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
            out: dict[str, int] = {}
            for t in tokens:
                base = self._base_arrays(t)
                out[t] = len(self._postings[t]) if t in self._postings else len(base[0]) if base is not None else 0
            return out

    def tokens(self, doc_id: str) -> list[str]:
        """The indexed tokens of ``doc_id`` (empty list if unknown): as given for a
        document added or loaded with its tokens; for one loaded without
        (:meth:`load` with ``tokens=None``), derived from the postings -- its terms in
        sorted order, each repeated by its frequency (O(postings) numpy, the first time)."""
        with self._lock:
            slot = self._slot.get(doc_id)
            return [] if slot is None else list(self._toks(doc_id, slot))
