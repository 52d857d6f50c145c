"""Per-tenant recall index: BM25 + embeddings + usage signals, persisted in a directory.

The index is independent of the store: the memory layer adds, updates and removes
documents (one per memory) and decides eligibility; the index ranks. Supersession or
deletion is expressed by :meth:`RecallIndex.remove` (or by passing ``allowed_ids`` to
:meth:`RecallIndex.search`): embeddings rank, they never decide eligibility (DESIGN.md
"Recall", seed 003 §6).

On disk (``directory``, only when one is given; a tenant's index lives in
:mod:`reckon.recall.tenant_index` instead, derived from the store)::

    meta.json            {"version", "embedder", "dim", "embeddings": file name,
                          "docs": [{id, text, context, time, importance, scope, kind,
                          owner, teams, extra, access_count, feedback, embedded}, ...]}
    embeddings-<u>.npy   float32 (n, dim), L2-normalised rows (row i = docs[i]); a zero
                         row = no embedding

A save writes a new embeddings file under a unique name, then replaces ``meta.json``
(unique temporary name, then an atomic rename: the commit point), then deletes the old
embeddings file: a reader or a killed writer never pairs one save's documents with
another's vectors. An older index whose two files disagree (written by an earlier
version) is recovered by re-embedding its documents, not refused. Writes are serialised
by a lock (one writer; readers may run concurrently with ``search``).

Besides the documents the index keeps per-row columns (importance, scope, kind, owner,
teams) so that :meth:`RecallIndex.filter_mask` computes an eligibility mask in numpy,
without a Python call per document.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from reckon._errors import InvalidInput, StoreError, UnknownMemory
from reckon.recall.embed import DIM, Embedder, EmbeddingUnavailable, HashingEmbedder, default_embedder
from reckon.recall.keyword import KeywordIndex, tokenize
from reckon.recall.rank import (
    Hit,
    RankConfig,
    ScoreExplanation,
    mmr_select,
    ranks_from_scores,
)
from reckon.recall.vectors import row_dots

__all__ = ["DocColumns", "DocRecord", "RecallIndex", "StringColumn"]

log = logging.getLogger("reckon.recall")

_FORMAT_VERSION = 1


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _lookup(column: np.ndarray, codes: Collection[int], size: int) -> np.ndarray:
    """bool ``column.shape``: whether each entry of ``column`` (integer codes in
    ``[0, size)``) is one of ``codes`` -- ``np.isin`` as one gather from a table of
    ``size`` booleans (no sort of the column)."""
    table = np.zeros(max(size, 1), dtype=bool)
    table[[c for c in codes if 0 <= c < size]] = True
    res: np.ndarray = table[column]
    return res


@dataclass
class DocRecord:
    """What the index keeps about one document (memory)."""

    id: str
    text: str
    time: datetime
    importance: int = 3
    scope: str | None = None
    kind: str | None = None
    owner: str | None = None
    teams: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    context: str | None = None
    access_count: int = 0
    feedback: int = 0
    embedded: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "text": self.text, "context": self.context,
            "time": self.time.isoformat(), "importance": self.importance,
            "scope": self.scope, "kind": self.kind, "owner": self.owner,
            "teams": list(self.teams), "extra": self.extra,
            "access_count": self.access_count, "feedback": self.feedback,
            "embedded": self.embedded,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DocRecord:
        return cls(
            id=d["id"], text=d["text"], context=d.get("context"),
            time=_utc(datetime.fromisoformat(d["time"])), importance=int(d["importance"]),
            scope=d.get("scope"), kind=d.get("kind"), owner=d.get("owner"),
            teams=tuple(d.get("teams") or ()), extra=dict(d.get("extra") or {}),
            access_count=int(d.get("access_count", 0)), feedback=int(d.get("feedback", 0)),
            embedded=bool(d.get("embedded", False)),
        )

    def embed_text(self) -> str:
        """Text given to the embedder: ``context`` (e.g. the preceding turn) then ``text``."""
        return f"{self.context}\n{self.text}" if self.context else self.text


_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def _by_code(codes: dict[Any, int]) -> list[Any]:
    """The keys of a value -> code map (codes ``0..len-1``), listed by code."""
    out: list[Any] = [None] * len(codes)
    for v, c in codes.items():
        out[c] = v
    return out


class StringColumn:
    """Strings (or None) stored as one UTF-8 blob and offsets, read one at a time.

    :param blob: the strings' UTF-8 bytes concatenated (``surrogatepass``).
    :param off: int ``(n + 1,)``: string ``r`` is ``blob[off[r]:off[r+1]]``.
    :param none: bool ``(n,)``: entries that are None.
    :raises ValueError: when the offsets do not fit the blob (not starting at 0, not
        ending at its length, decreasing, inside a UTF-8 character) or the lengths differ.
    :raises UnicodeDecodeError: when the blob is not UTF-8 (``surrogatepass``).

    The blob is decoded once, here; an entry is a slice of that string (character
    offsets: each byte offset less the UTF-8 continuation bytes before it).
    """

    __slots__ = ("_blob", "_coff", "_none", "_off", "_text")

    def __init__(self, blob: bytes, off: np.ndarray, none: np.ndarray) -> None:
        off = np.asarray(off, dtype=np.int64)
        none = np.asarray(none, dtype=bool)
        if (off.ndim != 1 or none.shape != (len(off) - 1,) or (len(off) and int(off[0]) != 0)
                or int(off[-1]) != len(blob) or bool(np.any(np.diff(off) < 0))):
            raise ValueError(f"string column: {len(off) - 1} offsets, {len(none)} flags, {len(blob)} bytes")
        self._blob = blob
        self._off = off
        self._none = none
        # one decode serves every slice: ASCII, byte offsets are character offsets; else
        # each offset less the UTF-8 continuation bytes (10xxxxxx) before it
        if blob.isascii():
            self._text: str = blob.decode("ascii")
            self._coff = off
        else:
            self._text = blob.decode("utf-8", "surrogatepass")
            b = np.frombuffer(blob, dtype=np.uint8)
            cont = (b & 0xC0) == 0x80
            inner = off[off < len(b)]
            if bool(np.any(cont[inner])):
                raise ValueError("string column: an offset inside a UTF-8 character")
            self._coff = off - np.searchsorted(np.flatnonzero(cont), off)

    def __len__(self) -> int:
        return len(self._none)

    def __getitem__(self, r: int) -> str | None:
        if self._none[r]:
            return None
        return self._text[int(self._coff[r]):int(self._coff[r + 1])]

    def raw(self, r: int) -> bytes:
        """The UTF-8 bytes of entry ``r`` (``b""`` for None)."""
        return self._blob[int(self._off[r]):int(self._off[r + 1])]

    def lengths(self) -> np.ndarray:
        """int64 ``(n,)``: the byte length of each entry."""
        return np.diff(self._off)

    @property
    def none(self) -> np.ndarray:
        """bool ``(n,)``: the None entries (do not modify)."""
        return self._none

    def to_list(self) -> list[str | None]:
        """Every entry (O(n) strings)."""
        ends = self._coff[1:].tolist()
        starts = self._coff[:-1].tolist()
        text = self._text
        if not self._none.any():
            return [text[a:b] for a, b in zip(starts, ends)]
        return [None if z else text[a:b] for a, b, z in zip(starts, ends, self._none.tolist())]


@dataclass(frozen=True)
class DocColumns:
    """Documents as columns, ``n`` rows (a persisted snapshot): the index makes a row's
    :class:`DocRecord` only when something asks for it, and takes the filter columns
    as they are.

    ``ids`` (n distinct non-empty strings), ``text`` and ``context``
    (:class:`StringColumn`, no text None), ``importance`` int ``(n,)`` in 1-5, ``time_us``
    int64 ``(n,)`` microseconds since the epoch (UTC), ``vocab`` (per filter column
    ``scope`` / ``kind`` / ``owner``: the values by code, distinct), ``codes`` (per
    filter column int ``(n,)``, each below its vocabulary's length), ``team_vocab`` (the
    team tuples by code, distinct), ``team_codes`` int ``(n,)``, ``extra`` (per extra
    key the n values).
    """

    ids: list[str]
    text: StringColumn
    context: StringColumn
    importance: np.ndarray
    time_us: np.ndarray
    vocab: dict[str, list[str | None]]
    codes: dict[str, np.ndarray]
    team_vocab: list[tuple[str, ...]]
    team_codes: np.ndarray
    extra: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def check(self) -> None:
        """:raises ValueError: when the columns do not fit together (lengths, codes out
        of range, a value twice in a vocabulary, an empty or repeated id, a text None,
        importance outside 1-5); O(n) numpy plus one set of the ids."""
        n = len(self.ids)
        if len(self.text) != n or len(self.context) != n:
            raise ValueError(f"text / context columns of {len(self.text)} / {len(self.context)} for {n} documents")
        for name, arr in (("importance", self.importance), ("time", self.time_us), ("teams", self.team_codes),
                          *self.codes.items()):
            if np.shape(arr) != (n,):
                raise ValueError(f"{name}: shape {np.shape(arr)} for {n} documents")
        if set(self.codes) != {"scope", "kind", "owner"} or set(self.vocab) != set(self.codes):
            raise ValueError(f"filter columns {sorted(self.codes)}, vocabularies {sorted(self.vocab)}")
        coded: list[tuple[str, Sequence[Any], np.ndarray]] = [
            *((k, self.vocab[k], self.codes[k]) for k in self.codes), ("teams", self.team_vocab, self.team_codes)]
        for name, vals, codes in coded:
            if len(set(vals)) != len(vals):
                raise ValueError(f"{name}: a value twice in the vocabulary")
            if n and (int(codes.min()) < 0 or int(codes.max()) >= len(vals)):
                raise ValueError(f"{name}: a code outside the vocabulary of {len(vals)}")
        if n and (int(self.importance.min()) < 1 or int(self.importance.max()) > 5):
            raise ValueError("importance outside 1-5")
        if bool(self.text.none.any()):
            raise ValueError("a document without text")
        distinct = set(self.ids)
        if len(distinct) != n or "" in distinct or None in distinct:  # (a StringColumn's: str or None)
            raise ValueError("an empty or repeated document id")
        if any(len(v) != n for v in self.extra.values()):
            raise ValueError("extra column lengths differ")

    def record(self, r: int, *, embedded: bool = False) -> DocRecord:
        """The :class:`DocRecord` of row ``r`` (a new object each call)."""
        return DocRecord(
            id=self.ids[r], text=self.text[r] or "", time=_EPOCH_UTC + int(self.time_us[r]) * _US,
            importance=int(self.importance[r]), scope=self.vocab["scope"][self.codes["scope"][r]],
            kind=self.vocab["kind"][self.codes["kind"][r]], owner=self.vocab["owner"][self.codes["owner"][r]],
            teams=self.team_vocab[self.team_codes[r]], context=self.context[r],
            extra={k: col[r] for k, col in self.extra.items()}, embedded=embedded)


class _Records(MutableMapping[str, DocRecord]):
    """id -> :class:`DocRecord` over :class:`DocColumns`: a row's record is made on first
    access and kept (so its mutable fields -- ``embedded``, ``access_count``,
    ``feedback`` -- stick); records set or made later live in a plain dict. Iteration
    order is a dict's: the loaded ids in row order (a replaced one keeps its place),
    then the others in insertion order.

    :param embedded: ``embedded(doc_id)`` -> the flag a record made now gets.
    """

    def __init__(self, cols: DocColumns, embedded: Callable[[str], bool]) -> None:
        self.cols = cols
        self._pos: dict[str, int] = dict(zip(cols.ids, range(len(cols.ids))))  # loaded ids still here
        self._made: dict[str, DocRecord] = {}
        self._extra = 0  # keys of _made not in _pos
        self._embedded = embedded

    def __getitem__(self, doc_id: str) -> DocRecord:
        rec = self._made.get(doc_id)
        if rec is None:
            r = self._pos[doc_id]  # KeyError: not here
            # setdefault: two threads making the same record keep one of them
            rec = self._made.setdefault(doc_id, self.cols.record(r, embedded=self._embedded(doc_id)))
        return rec

    def get(self, doc_id: str, default: Any = None) -> Any:  # the hot path: no exception
        rec = self._made.get(doc_id)
        if rec is None:
            if doc_id not in self._pos:
                return default
            return self[doc_id]
        return rec

    def __setitem__(self, doc_id: str, rec: DocRecord) -> None:
        if doc_id not in self._made and doc_id not in self._pos:
            self._extra += 1
        self._made[doc_id] = rec

    def __delitem__(self, doc_id: str) -> None:
        loaded = self._pos.pop(doc_id, None) is not None
        made = self._made.pop(doc_id, None) is not None
        if not loaded and not made:
            raise KeyError(doc_id)
        if made and not loaded:
            self._extra -= 1

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._pos or doc_id in self._made

    def __len__(self) -> int:
        return len(self._pos) + self._extra

    def __iter__(self) -> Iterator[str]:
        yield from list(self._pos)
        pos = self._pos
        yield from [k for k in list(self._made) if k not in pos]

    def loaded_row(self, doc_id: str) -> int | None:
        """The column row of ``doc_id`` when its record was never made nor replaced
        (then the columns are all there is of it), else None."""
        if doc_id in self._made:
            return None
        return self._pos.get(doc_id)


class RecallIndex:
    """Hybrid (BM25 + vector) recall over one tenant's documents.

    :param directory: where to persist (created if missing); None = in memory only.
    :param embedder: an :class:`~reckon.recall.embed.Embedder`; default
        :func:`~reckon.recall.embed.default_embedder` (MiniLM if installed, else the
        hashing fallback, with a warning). If MiniLM chosen with runtime ``auto`` fails
        to load, the index switches to the hashing embedder, logs one warning with the
        cause and says so, with the cause, in :attr:`embedder_name` (``reckon tenant
        status``); an embedder whose ``explicit`` is true (``RECKON_MINILM_RUNTIME=onnx``,
        ``minilm-torch``) is never replaced: its ``EmbeddingUnavailable`` (the load
        failure's cause) propagates from the write or search that needed it.
    :param config: default :class:`~reckon.recall.rank.RankConfig` for :meth:`search`.
    :param autosave: persist after every write (use :meth:`batch` to group writes).
    :raises StoreError: when the directory holds an unreadable index.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        config: RankConfig | None = None,
        autosave: bool = True,
    ) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.config = config or RankConfig()
        self._embedder: Embedder = embedder if embedder is not None else default_embedder()
        self._dim = int(getattr(self._embedder, "dim", DIM) or DIM)
        self._fallback_reason: str | None = None
        self._docs: MutableMapping[str, DocRecord] = {}
        self._row: dict[str, int] = {}
        self._row_ids: list[str] = []
        self._emb = np.zeros((0, self._dim), dtype=np.float32)
        self._has = np.zeros(0, dtype=bool)  # row has an embedding
        # per-row filter columns (see filter_mask); codes index the vocabularies below
        self._col_imp = np.zeros(0, dtype=np.int16)
        self._col_scope = np.zeros(0, dtype=np.int32)
        self._col_kind = np.zeros(0, dtype=np.int32)
        self._col_owner = np.zeros(0, dtype=np.int32)
        self._col_teams = np.zeros(0, dtype=np.int32)  # code of the row's team tuple
        self._codes: dict[str, dict[str | None, int]] = {"scope": {None: 0}, "kind": {None: 0}, "owner": {None: 0}}
        self._team_codes: dict[tuple[str, ...], int] = {(): 0}
        self._team_sets: dict[str, list[int]] = {}  # team -> codes of the tuples naming it
        self._mutations = 0  # bumped on every add / remove (invalidates row maps)
        self._kw_rows: dict[int, tuple[tuple[int, int], np.ndarray]] = {}
        self._n = 0
        self._kw = KeywordIndex(k1=self.config.bm25_k1, b=self.config.bm25_b)
        # BM25 over context + text, only for documents that have a context
        self._kw_ctx = KeywordIndex(k1=self.config.bm25_k1, b=self.config.bm25_b)
        self._ctx_ready = False
        self._lock = threading.RLock()
        self._autosave = autosave
        self._batch_depth = 0
        if self.directory is not None and (self.directory / "meta.json").exists():
            self._load()

    # ------------------------------------------------------------------ properties
    @property
    def embedder_name(self) -> str:
        """Name of the embedder in use; names the fallback and why, if one happened."""
        if self._fallback_reason:
            return f"{self._embedder.name} (fallback: {self._fallback_reason})"
        return self._embedder.name

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def get(self, doc_id: str) -> DocRecord:
        """The record of ``doc_id``. :raises UnknownMemory: when it is not indexed."""
        try:
            return self._docs[doc_id]
        except KeyError:
            raise UnknownMemory(f"no document {doc_id!r} in the recall index") from None

    def ids(self) -> list[str]:
        """All indexed ids, in insertion order."""
        return list(self._docs)

    def embedding(self, doc_id: str) -> np.ndarray | None:
        """float32 ``(dim,)`` embedding of ``doc_id``, or None if it has none."""
        rec = self.get(doc_id)
        return self._emb[self._row[doc_id]].copy() if rec.embedded else None

    @property
    def embedder(self) -> Embedder:
        """The embedder in use (the hashing fallback after a load failure)."""
        return self._embedder

    @property
    def dim(self) -> int:
        """Width of the stored vectors."""
        return self._dim

    def embedded_count(self) -> int:
        """Number of documents that have an embedding."""
        return int(self._has[: self._n].sum())

    # ------------------------------------------------------------------ embedding
    def _encode(self, texts: list[str]) -> np.ndarray | None:
        """Encode or return None (logged) if the embedder is unavailable."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        try:
            out = self._embedder.encode(texts)
        except EmbeddingUnavailable as exc:
            if exc.load_failed and getattr(self._embedder, "explicit", False):
                raise  # an explicitly chosen runtime is never replaced: the caller sees the cause
            if exc.load_failed and not isinstance(self._embedder, HashingEmbedder):
                self._switch_to_fallback(str(exc))
                return self._encode(texts)
            log.warning("embedding failed, document(s) indexed by keyword only: %s", exc)
            return None
        out = np.asarray(out, dtype=np.float32)
        if out.ndim == 2 and out.shape[0] == len(texts) and out.shape[1] != self._dim:
            with self._lock:
                if not self._has[: self._n].any():  # an endpoint's width, learnt on first use
                    self._resize(int(out.shape[1]))
        if out.shape != (len(texts), self._dim):
            log.warning("embedder returned shape %s, expected %s", out.shape, (len(texts), self._dim))
            return None
        return out

    def encode_query(self, text: str) -> np.ndarray | None:
        """float32 ``(dim,)`` embedding of a query, or None when the embedder fails."""
        enc = self._encode([text])
        return None if enc is None else enc[0]

    def _resize(self, dim: int) -> None:
        """New vector width: every row loses its embedding (callers re-embed)."""
        self._dim = dim
        self._emb = np.zeros((len(self._emb), dim), dtype=np.float32)
        self._has[:] = False
        for d in self._docs.values():
            d.embedded = False

    def _switch_to_fallback(self, reason: str) -> None:
        with self._lock:
            self._switch_to_fallback_locked(reason)

    def _switch_to_fallback_locked(self, reason: str) -> None:
        log.warning("recall embedder %s unavailable, using hashing fallback: %s", self._embedder.name, reason)
        self._fallback_reason = f"{self._embedder.name} unavailable: {reason}"
        self._embedder = HashingEmbedder()
        if self._dim != self._embedder.dim:
            self._resize(self._embedder.dim)
        self._reembed_all()

    def _reembed_all(self) -> None:
        ids = list(self._row_ids[: self._n])
        if not ids:
            return
        vecs = self._encode([self._docs[i].embed_text() for i in ids])
        for k, i in enumerate(ids):
            r = self._row[i]
            if vecs is None:
                self._emb[r] = 0.0
                self._has[r] = False
                self._docs[i].embedded = False
            else:
                self._emb[r] = vecs[k]
                self._has[r] = True
                self._docs[i].embedded = True

    # ------------------------------------------------------------------ writes
    @contextlib.contextmanager
    def batch(self) -> Iterator[RecallIndex]:
        """Group writes: one save at the end (and one BM25 rebuild at the next query)."""
        with self._lock:
            self._batch_depth += 1
            try:
                yield self
            finally:
                self._batch_depth -= 1
                if self._batch_depth == 0:
                    self._maybe_save()

    def _maybe_save(self) -> None:
        if self._autosave and self._batch_depth == 0 and self.directory is not None:
            self.save()

    def _code(self, col: str, value: str | None) -> int:
        codes = self._codes[col]
        c = codes.get(value)
        if c is None:
            c = codes[value] = len(codes)
        return c

    def _teams_code(self, teams: tuple[str, ...]) -> int:
        c = self._team_codes.get(teams)
        if c is None:
            c = self._team_codes[teams] = len(self._team_codes)
            for t in set(teams):
                self._team_sets.setdefault(t, []).append(c)
        return c

    def _grow(self) -> None:
        size = max(16, 2 * len(self._emb))

        def grow(a: np.ndarray) -> np.ndarray:
            out = np.zeros((size,) + a.shape[1:], dtype=a.dtype)
            out[: self._n] = a[: self._n]
            return out

        self._emb = grow(self._emb)
        self._has = grow(self._has)
        self._col_imp = grow(self._col_imp)
        self._col_scope = grow(self._col_scope)
        self._col_kind = grow(self._col_kind)
        self._col_owner = grow(self._col_owner)
        self._col_teams = grow(self._col_teams)

    def _place(self, rec: DocRecord, vec: np.ndarray | None) -> None:
        old = self._docs.get(rec.id)
        if old is not None:
            r = self._row[rec.id]
        else:
            if self._n == len(self._emb):
                self._grow()
            r = self._n
            self._n += 1
            self._row[rec.id] = r
            self._row_ids.append(rec.id)
            self._mutations += 1
        self._emb[r] = vec if vec is not None else 0.0
        self._has[r] = rec.embedded = vec is not None
        self._col_imp[r] = rec.importance
        self._col_scope[r] = self._code("scope", rec.scope)
        self._col_kind[r] = self._code("kind", rec.kind)
        self._col_owner[r] = self._code("owner", rec.owner)
        self._col_teams[r] = self._teams_code(rec.teams)
        self._docs[rec.id] = rec

    def add(
        self,
        doc_id: str,
        text: str,
        *,
        time: datetime,
        importance: int = 3,
        scope: str | None = None,
        kind: str | None = None,
        owner: str | None = None,
        teams: Iterable[str] = (),
        context: str | None = None,
        **extra: Any,
    ) -> DocRecord:
        """Index a document (replaces an existing one with the same id, keeping its
        access count and feedback).

        :param doc_id: the memory id (any non-empty string).
        :param text: the searchable text (label + content).
        :param time: creation / update time (naive = UTC); drives recency decay.
        :param importance: 1-5.
        :param context: extra text embedded (not keyword-indexed) before ``text``, e.g.
            the preceding conversation turn.
        :param extra: further filterable attributes (JSON-serialisable).
        :raises InvalidInput: for an empty id, non-string text or importance outside 1-5.
        """
        return self.add_many([dict(id=doc_id, text=text, time=time, importance=importance,
                                   scope=scope, kind=kind, owner=owner, teams=teams,
                                   context=context, **extra)])[0]

    def _records(self, docs: Iterable[dict[str, Any]]) -> list[DocRecord]:
        recs: list[DocRecord] = []
        for d in docs:
            d = dict(d)
            doc_id = d.pop("id")
            text = d.pop("text")
            if not isinstance(doc_id, str) or not doc_id:
                raise InvalidInput("document id must be a non-empty string", field="id")
            if not isinstance(text, str):
                raise InvalidInput(f"text of {doc_id!r} must be a string", field="text")
            t = d.pop("time")
            if not isinstance(t, datetime):
                raise InvalidInput(f"time of {doc_id!r} must be a datetime", field="time")
            imp = int(d.pop("importance", 3))
            if not 1 <= imp <= 5:
                raise InvalidInput(f"importance of {doc_id!r} must be 1-5, got {imp}", field="importance")
            old = self._docs.get(doc_id)
            recs.append(DocRecord(
                id=doc_id, text=text, time=_utc(t), importance=imp,
                scope=d.pop("scope", None), kind=d.pop("kind", None), owner=d.pop("owner", None),
                teams=tuple(d.pop("teams", ()) or ()), context=d.pop("context", None),
                access_count=old.access_count if old else 0, feedback=old.feedback if old else 0,
                extra=d,
            ))
        return recs

    def add_many(
        self,
        docs: Iterable[dict[str, Any]],
        *,
        vectors: Sequence[np.ndarray | None] | None = None,
        embed: bool = True,
        tokens: Sequence[list[str]] | None = None,
    ) -> list[DocRecord]:
        """Index several documents (dicts with the keyword arguments of :meth:`add` plus
        ``id``); embeds them in one batch.

        :param vectors: their embeddings, already computed (``None`` entries: none yet);
            nothing is encoded then.
        :param embed: False = keyword-only for now (attach vectors later with
            :meth:`set_vector`); a write need not wait for the embedder.
        :param tokens: the texts' BM25 tokens, already computed (a snapshot's); default:
            :func:`~reckon.recall.keyword.tokenize` of each text.
        """
        recs = self._records(docs)
        vecs: Sequence[np.ndarray | None] | np.ndarray | None
        if vectors is not None:
            if len(vectors) != len(recs):
                raise InvalidInput(f"{len(vectors)} vectors for {len(recs)} documents", field="vectors")
            vecs = vectors
        elif embed:
            vecs = self._encode([r.embed_text() for r in recs])
        else:
            vecs = None
        with self._lock:
            for k, r in enumerate(recs):
                v = None if vecs is None else vecs[k]
                if v is not None and np.shape(v) != (self._dim,):
                    v = None
                self._place(r, v)
            self._index_keywords(recs, tokens)
            self._maybe_save()
        return recs

    def load_records(self, recs: Sequence[DocRecord], vectors: np.ndarray | None, has: np.ndarray | None,
                     keyword: dict[str, Any] | None = None, tokens: Sequence[list[str]] | None = None) -> None:
        """Fill an empty index at once (a persisted snapshot): no per-document embedding,
        tokenising or array growth.

        :param recs: the records, valid (the caller read them from its own snapshot).
        :param vectors: float32 ``(len(recs), dim)`` or None; row ``r`` is used when
            ``has[r]``.
        :param keyword: the BM25 index as :meth:`KeywordIndex.export
            <reckon.recall.keyword.KeywordIndex.export>` wrote it for ``recs``' order
            (None: built from ``tokens``, or by tokenising the texts).
        :raises ValueError: when the index is not empty or the arrays do not fit (the
            index is left empty).
        """
        n = len(recs)
        with self._lock:
            if self._n or self._docs:
                raise ValueError("load_records into a non-empty recall index")
            if vectors is not None and (has is None or vectors.shape != (n, self._dim) or has.shape != (n,)):
                raise ValueError(f"vectors {getattr(vectors, 'shape', None)} for {n} documents")
            ids = [r.id for r in recs]
            if keyword is not None:
                self._kw.load(ids, keyword["tokens"], keyword["dl"], keyword["terms"], keyword["off"],
                              keyword["doc"], keyword["tf"])
            size = max(16, n + n // 8)  # room for the next writes before the first growth
            self._emb = np.empty((size, self._dim), dtype=np.float32)
            self._emb[n:] = 0.0
            self._has = np.zeros(size, dtype=bool)
            if vectors is not None and has is not None:
                self._has[:n] = has
                self._emb[:n] = vectors  # a plain copy; a masked one is 100x slower
                if not has.all():
                    self._emb[:n][~has] = 0.0
            else:
                self._emb[:n] = 0.0
            flags = self._has[:n].tolist()
            for r, f in zip(recs, flags):
                r.embedded = f
            self._col_imp = np.zeros(size, dtype=np.int16)
            self._col_imp[:n] = [r.importance for r in recs]
            for name, col in (("scope", "_col_scope"), ("kind", "_col_kind"), ("owner", "_col_owner")):
                arr = np.zeros(size, dtype=np.int32)
                code = self._code
                arr[:n] = [code(name, getattr(r, name)) for r in recs]
                setattr(self, col, arr)
            self._col_teams = np.zeros(size, dtype=np.int32)
            tcode = self._teams_code
            self._col_teams[:n] = [tcode(r.teams) for r in recs]
            self._docs = dict(zip(ids, recs))
            self._row = {i: k for k, i in enumerate(ids)}
            self._row_ids = ids
            self._n = n
            self._mutations += 1
            if keyword is None:
                self._index_keywords(recs, tokens)

    def load_columns(self, cols: DocColumns, vectors: np.ndarray | None, has: np.ndarray | None,
                     keyword: dict[str, Any] | None = None) -> None:
        """Fill an empty index with documents given as columns (a persisted snapshot):
        the filter columns and vocabularies are taken as they are and no
        :class:`DocRecord` is made until something asks for one, so the cost is a few
        array copies plus the id maps, not a Python object per document.

        :param cols: the documents, already :meth:`DocColumns.check`-ed.
        :param vectors: float32 ``(rows, dim)``, ``rows >= len(cols)``, or None; row ``r``
            is used when ``has[r]``. A writable C-order array with rows to spare (a mapped
            snapshot's) becomes the index's own storage, not copied: the next documents'
            vectors go into the spare rows, whatever they hold.
        :param keyword: the BM25 index as :meth:`KeywordIndex.export
            <reckon.recall.keyword.KeywordIndex.export>` wrote it for ``cols.ids``' order
            (``"tokens"`` and ``"dl"`` may be absent: derived from the postings); None:
            built by tokenising every text.
        :raises ValueError: when the index is not empty or the arrays do not fit (the
            index is left empty).
        """
        n = len(cols)
        with self._lock:
            if self._n or self._docs:
                raise ValueError("load_columns into a non-empty recall index")
            if vectors is not None and (has is None or vectors.ndim != 2 or vectors.shape[0] < n
                                        or vectors.shape[1] != self._dim or has.shape != (n,)):
                raise ValueError(f"vectors {getattr(vectors, 'shape', None)} for {n} documents")
            ids = list(cols.ids)
            if keyword is not None:
                self._kw.load(ids, keyword.get("tokens"), keyword.get("dl"), keyword["terms"], keyword["off"],
                              keyword["doc"], keyword["tf"])
            in_place = (vectors is not None and has is not None and vectors.shape[0] > n
                        and vectors.dtype == np.float32 and vectors.flags.writeable and vectors.flags.c_contiguous)
            if in_place:  # the caller's (mapped) array, with rows to spare: not copied
                assert vectors is not None and has is not None
                size = len(vectors)
                self._emb = vectors
                self._has = np.zeros(size, dtype=bool)
                self._has[:n] = has
                if not has.all():
                    self._emb[:n][~has] = 0.0
            else:
                size = max(16, n + n // 8)  # room for the next writes before the first growth
                self._emb = np.empty((size, self._dim), dtype=np.float32)
                self._emb[n:] = 0.0
                self._has = np.zeros(size, dtype=bool)
                if vectors is not None and has is not None:
                    self._has[:n] = has
                    self._emb[:n] = vectors[:n]  # a plain copy; a masked one is 100x slower
                    if not has.all():
                        self._emb[:n][~has] = 0.0
                else:
                    self._emb[:n] = 0.0
            self._col_imp = np.zeros(size, dtype=np.int16)
            self._col_imp[:n] = cols.importance
            for name in ("scope", "kind", "owner"):
                arr = np.zeros(size, dtype=np.int32)
                arr[:n] = cols.codes[name]
                setattr(self, f"_col_{name}", arr)
                self._codes[name] = {v: c for c, v in enumerate(cols.vocab[name])}
            self._col_teams = np.zeros(size, dtype=np.int32)
            self._col_teams[:n] = cols.team_codes
            self._team_codes = {t: c for c, t in enumerate(cols.team_vocab)}
            self._team_sets = {}
            for c, t in enumerate(cols.team_vocab):
                for team in set(t):
                    self._team_sets.setdefault(team, []).append(c)
            self._docs = _Records(cols, self._row_has_vector)
            self._row = dict(zip(ids, range(n)))
            self._row_ids = ids
            self._n = n
            self._mutations += 1
            if keyword is None:
                self._kw.add_many(zip(ids, (t or "" for t in cols.text.to_list())))

    def snapshot_entries(self) -> tuple[list[DocRecord | int], DocColumns | None]:
        """For a persisted snapshot, per row (the order of the filter columns): the
        document's record, or -- a document loaded by :meth:`load_columns` whose record
        was never made -- its row in those columns (returned second; None when the index
        was not loaded from columns). Records are not copied: take this under the
        index's lock and read only the immutable fields."""
        with self._lock:
            ids = self._row_ids[: self._n]
            docs = self._docs
            if not isinstance(docs, _Records):
                return [docs[i] for i in ids], None
            out: list[DocRecord | int] = []
            for i in ids:
                r = docs.loaded_row(i)
                out.append(docs[i] if r is None else r)
            return out, docs.cols

    def filter_columns(self) -> dict[str, Any]:
        """Copies of the filter columns in row order: ``importance`` int ``(n,)``;
        ``<name>.code`` int32 ``(n,)`` and ``<name>.vocab`` (the values by code) for
        ``scope``, ``kind``, ``owner``; ``teams.code`` and ``teams.vocab`` (team tuples)."""
        with self._lock:
            n = self._n
            out: dict[str, Any] = {"importance": self._col_imp[:n].copy()}
            for name in ("scope", "kind", "owner"):
                out[f"{name}.code"] = getattr(self, f"_col_{name}")[:n].copy()
                out[f"{name}.vocab"] = _by_code(self._codes[name])
            out["teams.code"] = self._col_teams[:n].copy()
            out["teams.vocab"] = _by_code(self._team_codes)
            return out

    def _row_has_vector(self, doc_id: str) -> bool:
        r = self._row.get(doc_id)
        return r is not None and bool(self._has[r])

    def set_vector(self, doc_id: str, vec: np.ndarray | None) -> bool:
        """Attach (or, with None, drop) the embedding of an indexed document; False when
        ``doc_id`` is not indexed or the width is wrong."""
        with self._lock:
            r = self._row.get(doc_id)
            if r is None:
                return False
            if vec is None:
                self._emb[r] = 0.0
                self._has[r] = self._docs[doc_id].embedded = False
                return True
            if np.shape(vec) != (self._dim,):
                return False
            self._emb[r] = vec
            self._has[r] = self._docs[doc_id].embedded = True
            return True

    def _index_keywords(self, recs: Iterable[DocRecord], tokens: Sequence[list[str]] | None = None) -> None:
        recs = list(recs)
        if tokens is not None and len(tokens) == len(recs):
            self._kw.add_tokens(zip((r.id for r in recs), tokens))
        else:
            self._kw.add_many((r.id, r.text) for r in recs)
        if self._ctx_ready:
            self._kw_ctx.add_many((r.id, r.embed_text()) for r in recs)

    def _context_index(self) -> KeywordIndex:
        """BM25 over context + text, built on first use (only rankings that weigh it)."""
        with self._lock:
            if not self._ctx_ready:
                self._kw_ctx.add_many((i, self._docs[i].embed_text()) for i in self._row_ids[: self._n])
                self._ctx_ready = True
            return self._kw_ctx

    def update(self, doc_id: str, **changes: Any) -> DocRecord:
        """Change fields of an indexed document (same keywords as :meth:`add`); keeps
        access count and feedback; re-embeds only when ``text`` or ``context`` changes.

        :raises UnknownMemory: when ``doc_id`` is not indexed.
        :raises InvalidInput: as :meth:`add`.
        """
        rec = self.get(doc_id)
        d: dict[str, Any] = dict(rec.extra)
        d.update(id=doc_id, text=rec.text, time=rec.time, importance=rec.importance,
                 scope=rec.scope, kind=rec.kind, owner=rec.owner, teams=rec.teams,
                 context=rec.context)
        d.update(changes)
        if "text" in changes or "context" in changes or not rec.embedded:
            return self.add_many([d])[0]
        with self._lock:
            vec = self._emb[self._row[doc_id]].copy()
            new = self._records([d])[0]
            self._place(new, vec)
            self._index_keywords([new])
            self._maybe_save()
        return new

    def remove(self, doc_id: str) -> None:
        """Remove ``doc_id`` from search (superseded / deleted). No error if absent."""
        with self._lock:
            if doc_id not in self._docs:
                return
            r = self._row.pop(doc_id)
            last = self._n - 1
            cols = (self._emb, self._has, self._col_imp, self._col_scope, self._col_kind, self._col_owner,
                    self._col_teams)
            if r != last:
                moved = self._row_ids[last]
                for c in cols:
                    c[r] = c[last]
                self._row_ids[r] = moved
                self._row[moved] = r
            for c in cols:
                c[last] = 0
            self._mutations += 1
            self._row_ids.pop()
            self._n -= 1
            del self._docs[doc_id]
            self._kw.remove(doc_id)
            if self._ctx_ready:
                self._kw_ctx.remove(doc_id)
            self._maybe_save()

    def record_access(self, doc_id: str, count: int = 1) -> int:
        """Count a retrieval of ``doc_id`` that was used; returns the new count.
        :raises UnknownMemory: when ``doc_id`` is not indexed."""
        with self._lock:
            rec = self.get(doc_id)
            rec.access_count += count
            self._maybe_save()
            return rec.access_count

    def feedback(self, doc_id: str, vote: int) -> int:
        """Record a +1 / -1 rating; returns the net feedback.
        :raises InvalidInput: when ``vote`` is not +1 or -1.
        :raises UnknownMemory: when ``doc_id`` is not indexed."""
        if vote not in (1, -1):
            raise InvalidInput(f"feedback vote must be +1 or -1, got {vote!r}", field="vote")
        with self._lock:
            rec = self.get(doc_id)
            rec.feedback += vote
            self._maybe_save()
            return rec.feedback

    # ------------------------------------------------------------------ persistence
    def save(self) -> None:
        """Persist the index (see the module docstring: new embeddings file under a
        unique name, then ``meta.json`` replaced atomically, then the old file removed).

        :raises StoreError: on I/O failure or when the index has no directory."""
        if self.directory is None:
            raise StoreError("this recall index has no directory to save to")
        with self._lock:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                ids = self._row_ids[: self._n]
                tag = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
                emb_name = f"embeddings-{tag}.npy"
                meta = {
                    "version": _FORMAT_VERSION,
                    "embedder": self._embedder.name,
                    "dim": self._dim,
                    "embeddings": emb_name,
                    "docs": [self._docs[i].to_json() for i in ids],
                }
                with open(self.directory / emb_name, "wb") as f:
                    np.save(f, self._emb[: self._n])
                tmp_m = self.directory / f".meta.json.{tag}.tmp"
                tmp_m.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
                os.replace(tmp_m, self.directory / "meta.json")  # the commit point
                for old in self.directory.glob("embeddings*.npy"):
                    if old.name != emb_name:
                        old.unlink(missing_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot save recall index to {self.directory}: {exc}") from exc

    def _load(self) -> None:
        assert self.directory is not None
        try:
            meta = json.loads((self.directory / "meta.json").read_text(encoding="utf-8"))
            docs = [DocRecord.from_json(d) for d in meta["docs"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"cannot read recall index in {self.directory}: {exc}") from exc
        emb: np.ndarray | None
        try:
            emb = np.load(self.directory / str(meta.get("embeddings", "embeddings.npy")))
        except (OSError, ValueError):
            emb = None
        reembed = meta.get("embedder") != self._embedder.name
        if emb is None or emb.ndim != 2 or emb.shape[0] != len(docs) or emb.shape[1] != self._dim:
            # an index written by an earlier version whose two files disagree (a writer
            # killed between its two renames): the texts are here, embed them again
            log.warning("recall index in %s: %d docs but embeddings %s; re-embedding", self.directory,
                        len(docs), None if emb is None else emb.shape)
            emb = np.zeros((len(docs), self._dim), dtype=np.float32)
            reembed = True
        with self._lock:
            for r, d in enumerate(docs):
                self._place(d, np.array(emb[r], dtype=np.float32) if d.embedded and not reembed else None)
            self._index_keywords(docs)
        if reembed:
            log.info("recall index embedder %s -> %s: re-embedding %d docs",
                     meta.get("embedder"), self._embedder.name, len(docs))
            self._reembed_all()

    # ------------------------------------------------------------------ reads
    def filter_mask(
        self,
        *,
        importance: Collection[int] | None = None,
        kinds: Collection[str] | None = None,
        visible_to: tuple[str, Collection[str]] | None = None,
        scopes: Collection[str] | None = None,
    ) -> np.ndarray:
        """Eligibility over the rows, computed on the filter columns (numpy, no Python
        call per document): bool ``(len(self),)`` in row order, for ``search(mask=...)``.

        :param importance: tiers kept.
        :param kinds: kinds kept.
        :param visible_to: ``(person, teams)``: company documents, team documents of one
            of ``teams``, and user documents owned by ``person``.
        :param scopes: scopes kept.
        """
        with self._lock:
            n = self._n
            ok = np.ones(n, dtype=bool)
            if importance is not None:
                ok &= _lookup(self._col_imp[:n], [int(v) for v in importance if 0 <= int(v) <= 5], 6)
            if kinds is not None:
                vocab = self._codes["kind"]
                ok &= _lookup(self._col_kind[:n], [c for k, c in vocab.items() if k in set(kinds)], len(vocab))
            if scopes is not None:
                vocab = self._codes["scope"]
                ok &= _lookup(self._col_scope[:n], [c for k, c in vocab.items() if k in set(scopes)], len(vocab))
            if visible_to is not None:
                person, teams = visible_to
                sc = self._codes["scope"]
                vis = self._col_scope[:n] == sc.get("company", -1)
                me = self._codes["owner"].get(person)
                if me is not None:
                    vis |= (self._col_scope[:n] == sc.get("user", -1)) & (self._col_owner[:n] == me)
                # the codes of the team tuples naming one of ``teams`` (few; no per-row Python)
                tcodes = sorted({c for t in set(teams) for c in self._team_sets.get(t, ())})
                if tcodes:
                    tm = _lookup(self._col_teams[:n], tcodes, len(self._team_codes))
                    vis |= tm & (self._col_scope[:n] == sc.get("team", -1))
                ok &= vis
            return ok

    def row_mask(self, ids: Iterable[str], value: bool = True) -> np.ndarray:
        """bool ``(len(self),)``: True (or ``value``) at the rows of ``ids`` (unknown ids
        ignored), the opposite elsewhere."""
        with self._lock:
            out = np.full(self._n, not value, dtype=bool)
            rows = [self._row[i] for i in ids if i in self._row]
            if rows:
                out[rows] = value
            return out

    def _eligible(
        self,
        allowed_ids: Collection[str] | None,
        kinds: Collection[str] | None,
        scopes: Collection[str] | None,
        owner: str | None,
        min_importance: int | None,
        max_importance: int | None,
        where: Callable[[DocRecord], bool] | None,
    ) -> np.ndarray:
        ok = np.zeros(self._n, dtype=bool)
        allowed = set(allowed_ids) if allowed_ids is not None else None
        if all(x is None for x in (kinds, scopes, owner, min_importance, max_importance, where)):
            if allowed is None:
                ok[:] = True
            else:
                rows = [self._row[i] for i in allowed if i in self._row]
                ok[rows] = True
            return ok
        for r in range(self._n):
            d = self._docs[self._row_ids[r]]
            if allowed is not None and d.id not in allowed:
                continue
            if kinds is not None and d.kind not in kinds:
                continue
            if scopes is not None and d.scope not in scopes:
                continue
            if owner is not None and d.owner != owner:
                continue
            if min_importance is not None and d.importance < min_importance:
                continue
            if max_importance is not None and d.importance > max_importance:
                continue
            if where is not None and not where(d):
                continue
            ok[r] = True
        return ok

    def _bm25_by_row(self, query: str | list[str], kw: KeywordIndex | None = None) -> np.ndarray:
        kw = kw or self._kw
        ids, s = kw.scores(query)
        if len(ids) == self._n and ids == self._row_ids:
            return s  # same layout (both append new ids and swap-remove): no remap
        key = (kw.generation, self._mutations)
        cached = self._kw_rows.get(id(kw))
        if cached is None or cached[0] != key:
            rows = np.fromiter((self._row[i] for i in ids), dtype=np.int64, count=len(ids))
            self._kw_rows[id(kw)] = (key, rows)
        else:
            rows = cached[1]
        out = np.zeros(self._n, dtype=np.float32)
        out[rows] = s
        return out

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        allowed_ids: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        scopes: Collection[str] | None = None,
        owner: str | None = None,
        min_importance: int | None = None,
        max_importance: int | None = None,
        where: Callable[[DocRecord], bool] | None = None,
        now: datetime | None = None,
        config: RankConfig | None = None,
        explain: bool = False,
        mask: np.ndarray | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[Hit]:
        """Hybrid search (see :mod:`reckon.recall.rank` for the formulae).

        Only documents passing every given filter are ranked (``allowed_ids`` is the
        caller's eligibility set). If the query cannot be embedded, ranking degrades to
        BM25 alone.

        :param limit: maximum number of hits.
        :param now: reference time for recency decay (default: current UTC time).
        :param config: overrides the index's :class:`RankConfig` for this call (BM25
            ``k1``/``b`` are fixed at construction).
        :param explain: attach a :class:`ScoreExplanation` to each hit.
        :param mask: bool ``(len(self),)`` in row order (:meth:`filter_mask`), combined
            with the other filters.
        :param query_vector: the query's embedding, already computed (e.g. cached);
            otherwise the query is encoded here.
        :returns: hits with ``.id`` and ``.score``, scores non-increasing.
        """
        cfg = config or self.config
        now = _utc(now) if now is not None else datetime.now(UTC)
        with self._lock:
            n = self._n
            if n == 0 or limit <= 0:
                return []
            elig = self._eligible(allowed_ids, kinds, scopes, owner, min_importance, max_importance, where)
            if mask is not None:
                if mask.shape != (n,):
                    raise InvalidInput(f"mask: shape {mask.shape}, expected ({n},)", field="mask")
                elig &= mask
            if not elig.any():
                return []
            emb = self._emb[:n]
            has = self._has[:n]
            bm = self._bm25_by_row(query) if cfg.use_keyword else np.zeros(n, dtype=np.float32)
            cos = np.full(n, np.nan, dtype=np.float32)
            qv = None
            if cfg.use_vector and has.any():
                qv = query_vector if query_vector is not None and np.shape(query_vector) == (self._dim,) \
                    else self.encode_query(query)
                if qv is not None:
                    cos = np.where(has, row_dots(emb, qv), np.nan).astype(np.float32)

            depth = max(cfg.depth, limit)
            use_ctx = cfg.use_keyword and cfg.context_keyword_weight > 0
            bmc = self._bm25_by_row(query, self._context_index()) if use_ctx else np.zeros(n, dtype=np.float32)
            cr = ranks_from_scores(bmc, elig, depth) if use_ctx else {}

            def fuse(bm: np.ndarray, cos: np.ndarray) -> tuple[dict[int, int], dict[int, int], dict[int, float]]:
                kr = ranks_from_scores(bm, elig, depth) if cfg.use_keyword else {}
                # cosine may be <= 0 for relevant-ish docs: shift so every embedded doc is rankable
                vr = ranks_from_scores(cos + 2.0, elig, depth) if qv is not None else {}
                fused: dict[int, float] = {}
                for p, r in kr.items():
                    fused[p] = fused.get(p, 0.0) + cfg.keyword_weight / (cfg.rrf_k + r)
                for p, r in vr.items():
                    fused[p] = fused.get(p, 0.0) + cfg.vector_weight / (cfg.rrf_k + r)
                for p, r in cr.items():
                    fused[p] = fused.get(p, 0.0) + cfg.context_keyword_weight / (cfg.rrf_k + r)
                return kr, vr, fused

            kr, vr, fused = fuse(bm, cos)
            if cfg.prf_docs > 0 and fused:
                top = sorted(fused, key=lambda p: -fused[p])[: cfg.prf_docs]
                bm, cos = self._feedback(query, top, bm, cos, qv, emb, has, cfg)
                kr, vr, fused = fuse(bm, cos)
            if not fused:
                return []
            pos = np.array(sorted(fused, key=lambda p: (-fused[p], p)), dtype=np.int64)
            rrf = np.array([fused[int(p)] for p in pos], dtype=np.float64)
            docs = [self._docs[self._row_ids[int(p)]] for p in pos]
            # vectorised forms of rank.recency_factor / access_boost / feedback_boost
            if cfg.half_life_days is None:
                rec = np.ones(len(docs))
            else:
                age = np.array([(now - d.time).total_seconds() for d in docs]) / 86400.0
                rec = 0.5 ** (np.maximum(age, 0.0) / cfg.half_life_days)
            acc = 1.0 + cfg.access_weight * np.log1p(np.array([max(0, d.access_count) for d in docs], dtype=np.float64))
            fbs = np.array([d.feedback for d in docs], dtype=np.float64)
            fb = 1.0 + cfg.feedback_weight * fbs / (1.0 + np.abs(fbs))
            rel = rrf * rec * acc * fb
            lam = cfg.mmr_lambda if cfg.mmr_lambda is not None and cfg.mmr_lambda < 1.0 else None
            if lam is not None:
                order, finals, sims = mmr_select(rel, emb[pos].astype(np.float64), lam, limit)
            else:
                order = list(np.argsort(-rel, kind="stable")[:limit])
                finals = [float(rel[j]) for j in order]
                sims = [0.0] * len(order)
            hits: list[Hit] = []
            for j, fin, sim in zip(order, finals, sims):
                p = int(pos[j])
                ex = None
                if explain:
                    ex = ScoreExplanation(
                        bm25_rank=kr.get(p), bm25_score=float(bm[p]) if p in kr else None,
                        vector_rank=vr.get(p), context_bm25_rank=cr.get(p),
                        cosine=None if math.isnan(float(cos[p])) else float(cos[p]),
                        rrf=float(rrf[j]), recency=float(rec[j]), access_boost=float(acc[j]),
                        feedback_boost=float(fb[j]), relevance=float(rel[j]), mmr_lambda=lam,
                        mmr_similarity=float(sim), mmr_penalty=(1.0 - lam) * float(sim) if lam else 0.0,
                        final=float(fin),
                    )
                hits.append(Hit(id=docs[j].id, score=float(fin), explanation=ex))
            return hits

    def _feedback(
        self, query: str, top: list[int], bm: np.ndarray, cos: np.ndarray, qv: np.ndarray | None,
        emb: np.ndarray, has: np.ndarray, cfg: RankConfig,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pseudo-relevance feedback from the first-pass fused top documents.

        Keyword side (RM3-like, Lavrenko & Croft 2001; Abdul-Jaleel et al. 2004): the
        ``prf_terms`` terms with the highest ``tf_in_feedback_docs * idf`` not already
        in the query are scored as a second BM25 query whose scores are added with
        weight ``prf_keyword_weight``. Vector side (Rocchio 1971): the query vector
        becomes ``normalise(q + prf_vector_weight * mean(top embeddings))``.
        """
        qtok = set(tokenize(query))
        if cfg.use_keyword and cfg.prf_keyword_weight > 0:
            tf: Counter[str] = Counter()
            for p in top:
                for t in set(self._kw.tokens(self._row_ids[p])):
                    if t not in qtok:
                        tf[t] += 1
            n = max(1, self._n)
            df = self._kw.document_frequencies(tf)
            weighted = {t: c * math.log(1 + n / (1 + df.get(t, 0))) for t, c in tf.items() if c >= 2}
            terms = [t for t, _ in sorted(weighted.items(), key=lambda kv: (-kv[1], kv[0]))[: cfg.prf_terms]]
            if terms:
                extra = self._bm25_by_row(terms)
                bm = bm + cfg.prf_keyword_weight * extra
        if qv is not None and cfg.prf_vector_weight > 0:
            sel = [p for p in top if has[p]]
            if sel:
                q2 = qv + cfg.prf_vector_weight * emb[sel].mean(axis=0)
                q2 = q2 / max(1e-12, float(np.linalg.norm(q2)))
                cos = np.where(has, row_dots(emb, q2), np.nan).astype(np.float32)
        return bm, cos

    def rank_by_similarity(self, query_text: str, ids: Iterable[str],
                           query_vector: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Order ``ids`` by cosine similarity to ``query_text`` (for items inside bundle
        blocks; eligibility is decided by the caller).

        Ids without an embedding (or all ids, if the query cannot be embedded) get
        cosine 0.0 and keep their given relative order after the positive ones. Unknown
        ids are ignored.

        :returns: ``[(id, cosine), ...]`` sorted by cosine, descending (stable).
        """
        known = [i for i in ids if i in self._docs]
        if not known:
            return []
        qv = query_vector if query_vector is not None and np.shape(query_vector) == (self._dim,) \
            else self.encode_query(query_text)
        with self._lock:
            out = []
            for i in known:
                rec = self._docs[i]
                c = float(self._emb[self._row[i]] @ qv) if qv is not None and rec.embedded else 0.0
                out.append((i, c))
        return sorted(out, key=lambda t: -t[1])
