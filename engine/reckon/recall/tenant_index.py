"""The recall index of one tenant, derived from its store: never a source of truth,
never an error to repair, right across processes, embedding off the write path.

DESIGN.md "Recall" (embeddings rank, never decide eligibility; a memory whose embedding
fails is still found by keyword) and "The store" (a crash loses nothing acknowledged).

What it holds, and where each part comes from:

* **documents** (text, importance, scope, kind, owner, teams, time of every active
  memory) in an in-memory :class:`~reckon.recall.index.RecallIndex` (BM25 + vectors).
  They follow the store's **commits**, not the callers' arguments: :meth:`sync` asks the
  store for the commits since the generation the index last saw
  (:meth:`TenantStore.changes <reckon.store.TenantStore.changes>`: this process's own,
  and other processes' from the store's journal), and re-reads every memory a commit
  touched (asserted triples of the memory, or an inferred triple about it: supersession,
  expiry, restore). A memory demoted from importance 5 to 3 in one process is therefore
  in the long tail of every other process's next search. When the commits are not known
  any more (the journal was emptied) or the schema changed, the documents are rebuilt
  from the store's active memories.
* **vectors** in a :class:`~reckon.recall.vectors.VectorFile` beside the store
  (``<tenant>/recall/vectors-<embedder>.f32``), keyed by the digest of the embedded
  text: append-only, shared by every process, never re-embedded on open.
* a **snapshot** of the documents (``<tenant>/recall/docs.npz``) at a store
  generation, so a fresh process does not re-read every memory: it loads the snapshot
  and applies the commits since. A numpy ``.npz`` archive (no pickles) of columns:
  ``meta`` (UTF-8 JSON: version 4, tenant, incarnation, generation, embedder, dim, the
  extra keys, ``digest``), per string column ``<name>.blob`` (UTF-8 bytes) +
  ``<name>.off`` (int64 offsets) + ``<name>.none`` (bool) for id, text, context and
  ``x.<key>`` (a JSON list per extra key); the filter columns as the index keeps them:
  ``scope.code`` / ``kind.code`` / ``owner.code`` / ``teams.code`` int32 with their
  vocabularies ``<name>.vocab`` (string columns; a team tuple joined by U+001F);
  ``importance`` int8, ``time`` int64 microseconds since the epoch (UTC), ``vectors``
  float32 ``(n + spare, dim)`` with ``has`` bool ``(n,)`` (a document's vector, used
  when the embedder and width match; no vector-file read on open; memory-mapped
  copy-on-write, not copied: the spare zero rows, n/8 and at least 16, take the next
  documents' vectors); the BM25 postings
  (:meth:`KeywordIndex.export <reckon.recall.keyword.KeywordIndex.export>`, documents
  numbered by their row, no tokens column: the postings are the only copy):
  ``kw.terms.blob`` / ``kw.terms.off`` (the terms, sorted), ``kw.off`` int64 (each
  term's postings), ``kw.doc`` int32 and ``kw.tf`` int32. So opening tokenises, hashes
  and embeds nothing, builds no posting list and makes no record per document (the
  index makes a document's :class:`~reckon.recall.index.DocRecord` from the columns
  when one is asked for: :class:`~reckon.recall.index.DocColumns`): its cost is reading
  the columns plus the id maps. Written under a unique temporary name and renamed (a
  process killed mid-write leaves the previous snapshot); unreadable (torn, a bad zip
  CRC), malformed (arrays that do not fit together: lengths, offsets, codes outside
  their vocabulary, a document twice in a term's postings), rewritten by anything but
  the writer (``digest``: BLAKE2b-128 of the ids, texts, terms and postings, ~40 ms at
  100k documents -- the version 3 check of the postings against a tokens column cost
  ~0.7 s), of another tenant or ahead of the store = ignored (rebuilt from the store);
  behind the store = caught up from the commits since
  (:meth:`TenantStore.changes <reckon.store.TenantStore.changes>`). Version 3 (a tokens
  column checked against the postings: :func:`reckon.recall.keyword.postings_match_tokens`;
  filter columns as strings) and version 2 (no BM25 arrays) snapshots are still read and
  then rewritten; so is the version 1 snapshot (``docs.json``, documents as JSON).

**Embedding off the critical path.** A document whose text has no vector yet is indexed
by keyword at once and queued; a background thread embeds the queue in batches, appends
the vectors to the file and attaches them (searchable by vector moments later). A
process killed before its queue drained loses no vector for good: the next process to
open the index finds those documents without a vector and embeds them.
:meth:`wait` blocks until the queue is empty (tests, benchmarks, ``serve`` warm-up).
Query embeddings are cached (LRU, 1024 texts).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import json
import logging
import os
import struct
import threading
import time
import uuid
import weakref
import zipfile
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from reckon.recall.embed import Embedder, EmbeddingUnavailable, QueryCache
from reckon.recall.index import DocColumns, RecallIndex, StringColumn
from reckon.recall.keyword import postings_match_tokens
from reckon.recall.rank import Hit, RankConfig
from reckon.recall.vectors import MemoryVectors, VectorFile

__all__ = ["DocReader", "Parts", "TenantIndex", "single_part"]

log = logging.getLogger("reckon.recall")

SNAPSHOT = "docs.npz"
LEGACY_SNAPSHOT = "docs.json"  # version 1 (read, then replaced by a version 4 snapshot)
_SNAPSHOT_VERSION = 4
_SEP = "\x1f"  # between the teams of a document in the snapshot
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_SNAPSHOT_EVERY = 200  # generations between background snapshots
_IDLE_S = 5.0  # seconds with an empty queue before the embedding thread writes a snapshot and ends
_DRAIN_SHARE = 64
"""A drained queue writes a snapshot at once only when the vectors attached since the
last one are at least 1/64 of the documents (a snapshot costs O(documents): at 100k,
hundreds of ms of copying and writing that competed with every search after every
single write); smaller changes are written when the embedding thread goes idle, every
:data:`_SNAPSHOT_EVERY` generations, or at :meth:`TenantIndex.close`."""
_QUIET_S = 0.1
"""The embedding thread waits until no document was queued for this long (or a full
batch is queued) before it embeds: a burst of writes is not slowed by an encode
competing for the two cores and the GIL between its commits."""
_BATCH = 256  # texts per background encode (sorted by length inside: less padding than 64)
_FIRST_RANK_BACKLOG = 32
"""A first ranking in a process embeds a backlog up to this size before it ranks."""
_COMPACT_FACTOR = 2.0
_COMPACT_SLACK = 1024
"""The vector file is compacted once it holds more than 2x the live documents' vectors
plus 1024 records (checked when a snapshot is written)."""
_RETRY_S = 30.0  # a failing embedder (model missing, endpoint down) is retried after this

DocReader = Callable[[Any, "Collection[str] | None"], dict[str, "dict[str, Any] | None"]]
"""``read(view, ids)``: the index documents of the memories ``ids`` as of the snapshot
``view`` (``None`` for a memory that is not an active memory any more); ``ids=None``:
every active memory. A document is a dict of :meth:`RecallIndex.add` keywords plus
``id``."""

_BASE = frozenset(("id", "text", "time", "importance", "scope", "kind", "owner", "teams", "context"))
"""Document keys that are :class:`~reckon.recall.index.DocRecord` fields; any other key
of a document is kept in ``DocRecord.extra`` (memories: subclass, confidence, created;
turns: conversation)."""


def _doc_from_json(d: dict[str, Any]) -> dict[str, Any]:
    out = dict(d)
    t = datetime.fromisoformat(out["time"])
    out["time"] = t if t.tzinfo else t.replace(tzinfo=UTC)
    out["teams"] = list(out.get("teams") or ())
    return out


_DIGESTED = ("id.blob", "id.off", "text.blob", "text.off", "kw.terms.blob", "kw.terms.off", "kw.off", "kw.doc",
             "kw.tf")


def _digest(cols: Mapping[str, np.ndarray]) -> str:
    """BLAKE2b-128 (hex) of the snapshot columns that the BM25 postings are read with:
    the ids, the texts, the terms and the postings, each with its dtype and shape.

    :raises KeyError: when a column is missing.
    """
    h = hashlib.blake2b(digest_size=16)
    for name in _DIGESTED:
        a = np.ascontiguousarray(cols[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.reshape(-1).view(np.uint8).data)
    return h.hexdigest()


def _mapped_member(path: Path, name: str) -> np.ndarray | None:
    """The array ``name`` of the ``.npz`` archive at ``path``, memory-mapped
    copy-on-write (``MAP_PRIVATE``: writes stay in this process's memory, the file is
    never changed; the zip stores members uncompressed, so the ``.npy`` bytes lie in the
    file as they are), or None when it is compressed, not a plain C-order array or the
    headers do not fit (then the caller reads it through the zip). Pages are read when
    first touched, from the page cache: reading through the zip instead fills fresh
    memory, checks the CRC and copies. The member's CRC is not checked: a flipped bit in
    a vector changes a ranking, never eligibility (the filter and text columns are read
    through the zip, CRC checked). The mapping keeps the file's data alive after the file
    is replaced or removed. PKWARE APPNOTE 4.3.7 (local file header); numpy ``.npy``
    format (NEP 1)."""
    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(f"{name}.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        with open(path, "rb") as f:
            f.seek(info.header_offset)
            head = f.read(30)
            if len(head) != 30 or head[:4] != b"PK\x03\x04":
                return None
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            start = info.header_offset + 30 + name_len + extra_len
            f.seek(start)
            major, _ = np.lib.format.read_magic(f)
            shape, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if major == 1
                                     else np.lib.format.read_array_header_2_0(f))
            offset = f.tell()
        size = int(np.prod(shape)) * dtype.itemsize
        if dtype.hasobject or fortran or offset - start + size > info.file_size:
            return None
        if size == 0:
            return np.zeros(shape, dtype=dtype)
        mapped: np.ndarray = np.memmap(path, dtype=dtype, mode="c", shape=shape, offset=offset).view(np.ndarray)
        return mapped
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, struct.error):
        return None


def _coded(values: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """``(vocabulary, codes)``: the distinct values in first-seen order, and int32 ``(n,)``
    each value's position in it."""
    vocab: dict[Any, int] = {}
    codes = np.fromiter((vocab.setdefault(v, len(vocab)) for v in values), dtype=np.int32, count=len(values))
    return list(vocab), codes


def _indexable(d: dict[str, Any] | None) -> bool:
    """A document the index can hold: a memory whose stored values break the shapes
    (say, importance 9 planted by hand) is left out, not fatal (``tenant validate``'s
    SHACL part reports it)."""
    if d is None:
        return False
    imp = d.get("importance", 3)
    ok = (isinstance(d.get("id"), str) and bool(d["id"]) and isinstance(d.get("text"), str)
          and isinstance(d.get("time"), datetime) and isinstance(imp, int) and 1 <= imp <= 5)
    if not ok:
        log.warning("recall index: memory %s has values outside the shapes; not indexed", d.get("id"))
    return ok


def _same(rec: Any, d: dict[str, Any]) -> bool:
    t = d["time"]
    t = t if t.tzinfo else t.replace(tzinfo=UTC)
    extra = {k: v for k, v in d.items() if k not in _BASE}
    return bool(rec.text == d["text"] and rec.importance == int(d.get("importance", 3)) and rec.scope == d.get("scope")
            and rec.kind == d.get("kind") and rec.owner == d.get("owner")
            and rec.teams == tuple(d.get("teams") or ()) and rec.time == t and rec.context == d.get("context")
            and rec.extra == extra)


def single_part(text: str, context: str | None) -> tuple[tuple[str, float], ...]:
    """The default :data:`Parts`: a document's vector is the embedding of its text."""
    return ((text, 1.0),)


Parts = Callable[[str, "str | None"], "tuple[tuple[str, float], ...]"]
"""``parts(text, context)``: the texts whose embeddings make a document's vector, with
their weights; the vector is ``normalise(sum weight_i * embedding(text_i))`` (one part of
weight 1: the embedding itself). Every part is embedded and stored once under its own
key, so a text shared by several documents (a turn and the context of the next one) is
embedded once."""


class TenantIndex:
    """Hybrid recall over one tenant's active memories, kept equal to the store.

    :param store: the tenant's :class:`~reckon.store.TenantStore` (``snapshot()``,
        ``changes()``, ``tenant_id``).
    :param read: the :data:`DocReader` (the memory layer's reader).
    :param memory_prefix: IRI prefix of the tenant's documents (commits touching other
        subjects are ignored).
    :param embedder: the embedder (shared by the process's tenants).
    :param directory: ``<tenant>/recall`` (None: nothing persisted).
    :param config: ranking defaults.
    :param background: embed in a background thread (False: on the calling thread at
        the next :meth:`sync`, for tests that need determinism).
    :param full_ids: document ids are the subjects' whole IRIs (default: the part after
        ``memory_prefix``).
    :param parts: the :data:`Parts` of a document's vector (default: its text).
    """

    def __init__(
        self,
        store: Any,
        read: DocReader,
        *,
        memory_prefix: str,
        embedder: Embedder,
        directory: str | os.PathLike[str] | None,
        config: RankConfig | None = None,
        background: bool = True,
        full_ids: bool = False,
        parts: Parts | None = None,
    ) -> None:
        self.store = store
        self._read = read
        self._prefix = memory_prefix
        self._full_ids = full_ids
        self._parts: Parts = parts or single_part
        self.directory = Path(directory) if directory is not None else None
        self.index = RecallIndex(None, embedder=embedder, config=config, autosave=False)
        self._vectors: VectorFile | MemoryVectors | None = None
        self._gen: int | None = None  # store generation the documents equal
        self._snap_gen: int | None = None
        self._snap_vecs = -1  # documents with a vector in the last snapshot
        self._lock = threading.RLock()  # documents and generation
        self._save_lock = threading.Lock()  # serialises snapshot writes (taken before _lock)
        self._qcache = QueryCache()
        self._pending: dict[bytes, tuple[str, set[str]]] = {}  # key -> (text, doc ids)
        self._keys: dict[str, tuple[bytes, ...]] = {}  # doc id -> keys of its current parts
        self._cv = threading.Condition()
        self._busy = False
        self._last_enqueue = 0.0
        self._worker: threading.Thread | None = None
        self._exit_hook = False  # _close_at_exit registered (once the embedding thread first starts)
        self._idle_writers: set[threading.Thread] = set()  # finished workers writing their idle snapshot
        # (a set: a new worker started by the next write can go idle while an older one still writes)
        self._background = background
        self._closed = False
        self._ranking = False  # embedding starts once this process ranks (not in `tenant validate`)
        self._retry_at = 0.0  # monotonic time before which a failing embedder is not retried
        self.rebuilds = 0  # full reads of the store's active memories (observability, tests)
        self._open()

    # ------------------------------------------------------------------ properties
    @property
    def embedder(self) -> Embedder:
        return self.index.embedder

    @property
    def embedder_name(self) -> str:
        return self.index.embedder_name

    @property
    def generation(self) -> int | None:
        """The store generation the documents were last brought to."""
        return self._gen

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.index

    def __len__(self) -> int:
        return len(self.index)

    def pending(self) -> int:
        """Documents waiting for their embedding."""
        with self._cv:
            if all(len(ids) == 1 for _, ids in self._pending.values()):
                return len({next(iter(ids)) for _, ids in self._pending.values()})
            return len(set().union(*(ids for _, ids in self._pending.values())))

    # ------------------------------------------------------------------ open / snapshot
    def _vector_file(self) -> VectorFile | MemoryVectors:
        name = self.index.embedder.name
        dim = self.index.dim
        vf = self._vectors
        if vf is None or vf.embedder != name or vf.dim != dim:
            # not read here: a snapshot carries its documents' vectors, and the callers
            # that look vectors up refresh first (a full read is O(file))
            vf = self._vectors = (VectorFile(self.directory, name, dim) if self.directory is not None
                                  else MemoryVectors(name, dim))
        return vf

    def _part_keys(self, vf: Any, text: str, context: str | None) -> tuple[tuple[tuple[str, float], ...],
                                                                         tuple[bytes, ...]]:
        parts = self._parts(text, context)
        return parts, tuple(vf.key(t) for t, _ in parts)

    @staticmethod
    def _combine(parts: Sequence[tuple[str, float]], keys: Sequence[bytes],
                 known: dict[bytes, np.ndarray]) -> np.ndarray | None:
        """The document vector from its parts' vectors (None while one is missing)."""
        if len(keys) == 1:
            return known.get(keys[0])
        acc: np.ndarray | None = None
        for (_, w), k in zip(parts, keys):
            v = known.get(k)
            if v is None:
                return None
            acc = w * v if acc is None else acc + w * v
        assert acc is not None
        n = float(np.linalg.norm(acc))
        return (acc / n).astype(np.float32) if n > 0 else acc.astype(np.float32)

    def _doc_id(self, subject: str) -> str | None:
        if not subject.startswith(self._prefix):
            return None
        return subject if self._full_ids else subject[len(self._prefix):]

    def _doc_keys(self, doc_id: str) -> tuple[bytes, ...] | None:
        """The vector-file keys of an indexed document's current parts (computed on
        first use: a snapshot opens without hashing every text); None when not indexed."""
        keys = self._keys.get(doc_id)
        if keys is None and doc_id in self.index:
            rec = self.index.get(doc_id)
            _, keys = self._part_keys(self._vector_file(), rec.text, rec.context)
            self._keys[doc_id] = keys
        return keys

    def _open(self) -> None:
        snap = self._load_snapshot()  # versions 2 to 4; a version 1 snapshot has no vectors nor tokens
        legacy = False
        with self._lock:
            if snap is not None:
                gen, cols, vec_m, has, keyword, version = snap
                try:
                    self._apply_snapshot(cols, vec_m, has, keyword)
                except ValueError as exc:  # arrays that do not fit together: rebuild
                    log.warning("recall snapshot in %s malformed (%s): rebuilding from the store",
                                self.directory, exc)
                    self.index = RecallIndex(None, embedder=self.index.embedder, config=self.index.config,
                                             autosave=False)
                    self._keys = {}
                    snap = None
                else:
                    self._gen = self._snap_gen = gen
                    self._snap_vecs = self.index.embedded_count()
                    legacy = version != _SNAPSHOT_VERSION  # write it again in this version
            if snap is None:
                old = self._load_snapshot_v1()
                if old is not None:
                    self._apply_docs(old[1], replace=True)
                    self._gen = self._snap_gen = old[0]
                    self._snap_vecs = self.index.embedded_count()
                    legacy = True
            if legacy:
                self._snap_gen = None  # write it again in this version
        self.sync()
        if legacy and self.save_snapshot() and self.directory is not None:
            (self.directory / LEGACY_SNAPSHOT).unlink(missing_ok=True)

    def _apply_snapshot(self, cols: DocColumns, vec_m: np.ndarray | None, has: np.ndarray | None,
                        keyword: dict[str, Any] | None) -> None:
        """Load a snapshot into the empty index: the documents with their vectors and
        BM25 postings as written (nothing embedded, tokenised, hashed or read from the
        vector file unless a document has no vector).

        :raises ValueError: when the arrays do not fit together.
        """
        self.index.load_columns(cols, vec_m, has, keyword=keyword)
        n = len(cols)
        rows = np.arange(n) if has is None else np.flatnonzero(~np.asarray(has, dtype=bool))
        if not len(rows):
            return
        vf = self._vector_file()
        todo: list[tuple[tuple[tuple[str, float], ...], tuple[bytes, ...], str]] = []
        for r in rows.tolist():
            i = cols.ids[r]
            parts, keys = self._part_keys(vf, cols.text[r] or "", cols.context[r])
            self._keys[i] = keys
            todo.append((parts, keys, i))
        # embedded meanwhile by another process, or queued: a few documents' vectors are
        # searched for in the file, not the whole file read (the embedding thread reads it)
        known = vf.lookup({k for _, keys, _ in todo for k in keys})
        left: list[tuple[bytes, str, str]] = []
        for parts, keys, i in todo:
            w = self._combine(parts, keys, known)
            if w is not None:
                self.index.set_vector(i, w)
            else:
                left.extend((k, t, i) for (t, _), k in zip(parts, keys) if k not in known)
        if left:
            self._enqueue(left)

    def _load_snapshot(self) -> tuple[int, DocColumns, np.ndarray | None, np.ndarray | None,
                                      dict[str, Any] | None, int] | None:
        """The version 2, 3 or 4 snapshot: ``(generation, columns, vectors, has, keyword,
        version)`` -- ``keyword`` the BM25 arrays (versions 3 and 4; None for version 2,
        whose texts are tokenised again) -- or None (no snapshot, or one to ignore:
        logged)."""
        if self.directory is None:
            return None
        path = self.directory / SNAPSHOT
        try:
            with np.load(path, allow_pickle=False) as z:
                # the vectors (most of the bytes) are mapped in place, not read through the zip
                mapped = _mapped_member(path, "vectors") if "vectors" in z.files else None
                cols = {k: z[k] for k in z.files if not (k == "vectors" and mapped is not None)}
                if mapped is not None:
                    cols["vectors"] = mapped
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # torn, not an archive, a pickle
            log.warning("recall snapshot %s unreadable (%s): rebuilding from the store", path, exc)
            return None
        try:
            meta = json.loads(cols["meta"].tobytes().decode("utf-8"))
            version = meta.get("version")
            if version not in (2, 3, _SNAPSHOT_VERSION) or meta.get("tenant") != self.store.tenant_id:
                return None
            inc = getattr(self.store, "incarnation", None)
            if inc is not None and meta.get("incarnation") not in (None, inc):
                return None  # written for a deleted tenant of the same id
            gen = int(meta["generation"])
            n = int(meta["n"])

            def strings(name: str) -> StringColumn:
                col = StringColumn(cols[f"{name}.blob"].tobytes(), cols[f"{name}.off"], cols[f"{name}.none"])
                if len(col) != n and not name.endswith(".vocab"):
                    raise ValueError(f"{name}: {len(col)} entries for {n} documents")
                return col

            if version == _SNAPSHOT_VERSION and meta.get("digest") != _digest(cols):
                # arrays changed by anything but the writer, CRCs recomputed: the postings
                # may not be the texts' any more (the only copy of them: no tokens column)
                raise ValueError("the columns do not match the digest the writer recorded")
            ids = strings("id").to_list()
            extras = {k: json.loads(cols[f"x.{k}"].tobytes().decode("utf-8")) for k in meta.get("extra", [])}
            if version == _SNAPSHOT_VERSION:
                vocab = {name: strings(f"{name}.vocab").to_list() for name in ("scope", "kind", "owner")}
                codes = {name: np.asarray(cols[f"{name}.code"]) for name in ("scope", "kind", "owner")}
                team_vocab = [tuple(t.split(_SEP)) if t else () for t in strings("teams.vocab").to_list()]
                team_codes = np.asarray(cols["teams.code"])
            else:  # versions 2 and 3: the filter columns as strings, coded here
                vocab, codes = {}, {}
                for name in ("scope", "kind", "owner"):
                    vocab[name], codes[name] = _coded(strings(name).to_list())
                team_vocab, team_codes = _coded([tuple(t.split(_SEP)) if t else ()
                                                 for t in strings("teams").to_list()])
            docs = DocColumns(ids=ids, text=strings("text"), context=strings("context"),  # type: ignore[arg-type]
                              importance=np.asarray(cols["importance"]), time_us=np.asarray(cols["time"]),
                              vocab=vocab, codes=codes, team_vocab=team_vocab,
                              team_codes=team_codes, extra=extras)
            docs.check()
            same_emb = meta.get("embedder") == self.index.embedder.name and int(meta.get("dim", -1)) == self.index.dim
            vec_m = cols["vectors"] if same_emb else None
            has = cols["has"].astype(bool) if same_emb else None
            if vec_m is not None and (vec_m.ndim != 2 or vec_m.shape[0] < n or vec_m.shape[1] != self.index.dim
                                      or has is None or has.shape != (n,)):
                raise ValueError(f"vectors {vec_m.shape} for {n} documents")
            keyword: dict[str, Any] | None = None
            if version != 2:
                toff = np.asarray(cols["kw.terms.off"])
                terms = StringColumn(cols["kw.terms.blob"].tobytes(), toff,
                                     np.zeros(max(len(toff) - 1, 0), dtype=bool)).to_list()
                keyword = {"terms": terms, "off": cols["kw.off"], "doc": cols["kw.doc"], "tf": cols["kw.tf"]}
                if version == 3:  # it kept the tokens too: they must be the postings'
                    tokens = strings("tokens")
                    kw_off, kw_doc = np.asarray(cols["kw.off"]), np.asarray(cols["kw.doc"])
                    if (kw_off.shape != (len(terms) + 1,) or kw_doc.shape != cols["kw.tf"].shape
                            or cols["kw.dl"].shape != (n,) or (len(kw_off) and int(kw_off[-1]) != len(kw_doc))
                            or (len(kw_doc) and (int(kw_doc.min()) < 0 or int(kw_doc.max()) >= n))):
                        raise ValueError("keyword index arrays do not fit together")
                    if not postings_match_tokens(cols["kw.terms.blob"], cols["kw.terms.off"], cols["tokens.blob"],
                                                 cols["tokens.off"], kw_off, kw_doc, cols["kw.tf"], cols["kw.dl"]):
                        raise ValueError("the BM25 postings disagree with the documents' tokens")
                    keyword["tokens"] = [t or "" for t in tokens.to_list()]
                    keyword["dl"] = cols["kw.dl"]
        except (KeyError, TypeError, ValueError, UnicodeDecodeError, OverflowError) as exc:
            log.warning("recall snapshot %s malformed (%s): rebuilding from the store", path, exc)
            return None
        return gen, docs, vec_m, has, keyword, int(version)

    def _load_snapshot_v1(self) -> tuple[int, list[dict[str, Any]]] | None:
        """The version 1 snapshot (``docs.json``), or None."""
        if self.directory is None:
            return None
        path = self.directory / LEGACY_SNAPSHOT
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("recall snapshot %s unreadable (%s): rebuilding from the store", path, exc)
            return None
        try:
            if raw.get("version") != 1 or raw.get("tenant") != self.store.tenant_id:
                return None
            inc = getattr(self.store, "incarnation", None)
            if inc is not None and raw.get("incarnation") not in (None, inc):
                return None  # written for a deleted tenant of the same id
            gen = int(raw["generation"])
            docs = [_doc_from_json(d) for d in raw["docs"]]
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("recall snapshot %s malformed (%s): rebuilding from the store", path, exc)
            return None
        return gen, docs

    def save_snapshot(self) -> bool:
        """Write the documents at their generation (unique temporary name, atomic
        rename). Returns False when there is nothing to write or on an I/O error (a
        missing snapshot only costs the next process a rebuild)."""
        if self.directory is None:
            return False
        with self._save_lock:  # one export at a time; a search never waits for one
            return self._save_snapshot(self.directory)

    def _save_snapshot(self, directory: Path) -> bool:
        with contextlib.ExitStack() as stack:
            with self._lock:
                gen = self._gen
                embedded = self.index.embedded_count()
                if gen is None or (gen == self._snap_gen and embedded == self._snap_vecs):
                    return False
                ix = self.index
                n = len(ix)
                # what is needed of each document, taken under the lock: its record, or --
                # never made from the columns it was loaded from -- its row in them
                entries, base = ix.snapshot_entries()
                # rows to spare after the documents' (zeros): a process maps the vectors
                # and writes its next documents' into them, never copying the rest
                vectors = np.zeros((n + max(16, n // 8), ix.dim), dtype="<f4")
                vectors[:n] = ix._emb[:n]  # noqa: SLF001 (same package)
                has = np.array(ix._has[:n], dtype=bool)  # noqa: SLF001
                filters = ix.filter_columns()
                # the BM25 postings as they are now, exported below without the lock (a
                # write meanwhile copies what it changes, and lands in the next snapshot)
                frozen = stack.enter_context(ix._kw.frozen())  # noqa: SLF001
                name, dim = ix.embedder.name, ix.dim
                order = list(ix._row_ids[:n])  # noqa: SLF001
            if not self._current():
                return False
            kw = frozen.export(order, tokens=False)
        cols: dict[str, np.ndarray] = {}

        def put(col: str, parts: Sequence[bytes], none: Sequence[bool]) -> None:
            off = np.zeros(len(parts) + 1, dtype=np.int64)
            np.cumsum([len(x) for x in parts], out=off[1:])
            cols[f"{col}.blob"] = np.frombuffer(b"".join(parts), dtype=np.uint8)
            cols[f"{col}.off"] = off
            cols[f"{col}.none"] = np.array(none, dtype=bool)

        def put_strings(col: str, values: Sequence[str | None]) -> None:
            put(col, [v.encode("utf-8", "surrogatepass") if v is not None else b"" for v in values],
                [v is None for v in values])

        def text_column(field: str) -> None:
            src = getattr(base, field) if base is not None else None
            parts: list[bytes] = []
            none: list[bool] = []
            for e in entries:
                if isinstance(e, int):
                    assert src is not None  # a row number only comes with its columns
                    parts.append(src.raw(e))
                    none.append(bool(src.none[e]))
                else:
                    v = getattr(e, field)
                    parts.append(v.encode("utf-8", "surrogatepass") if v is not None else b"")
                    none.append(v is None)
            put(field, parts, none)

        put_strings("id", order)
        text_column("text")
        text_column("context")
        us = np.empty(n, dtype=np.int64)
        rows = np.fromiter((e if isinstance(e, int) else -1 for e in entries), dtype=np.int64, count=n)
        loaded = rows >= 0
        if base is not None and loaded.any():
            us[loaded] = base.time_us[rows[loaded]]
        for j in np.flatnonzero(~loaded).tolist():
            e = entries[j]
            us[j] = (e.time - _EPOCH_UTC) // timedelta(microseconds=1)  # type: ignore[union-attr]
        cols["time"] = us
        cols["importance"] = filters["importance"].astype(np.int8)
        for col in ("scope", "kind", "owner"):
            put_strings(f"{col}.vocab", filters[f"{col}.vocab"])
            cols[f"{col}.code"] = filters[f"{col}.code"].astype(np.int32)
        put_strings("teams.vocab", [_SEP.join(t) for t in filters["teams.vocab"]])
        cols["teams.code"] = filters["teams.code"].astype(np.int32)
        extra_keys = sorted({*(base.extra if base is not None and loaded.any() else ()),
                             *(k for e in entries if not isinstance(e, int) for k in e.extra)})
        for k in extra_keys:
            src_x = base.extra.get(k) if base is not None else None
            vals = [(src_x[e] if src_x is not None else None) if isinstance(e, int) else e.extra.get(k)
                    for e in entries]
            cols[f"x.{k}"] = np.frombuffer(json.dumps(vals, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
        terms = [t.encode("utf-8", "surrogatepass") for t in kw["terms"]]
        toff = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in terms], out=toff[1:])
        cols["kw.terms.blob"] = np.frombuffer(b"".join(terms), dtype=np.uint8)
        cols["kw.terms.off"] = toff
        for k in ("off", "doc", "tf"):
            cols[f"kw.{k}"] = np.asarray(kw[k])
        cols["vectors"] = vectors
        cols["has"] = has
        meta = {"version": _SNAPSHOT_VERSION, "tenant": self.store.tenant_id, "generation": gen,
                "incarnation": getattr(self.store, "incarnation", None), "n": n, "embedder": name,
                "dim": dim, "extra": extra_keys, "digest": _digest(cols)}
        cols["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
        tmp = directory / f".{SNAPSHOT}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"
        try:
            directory.mkdir(exist_ok=True)  # not its parents: the tenant may have been deleted
            with open(tmp, "wb") as f:
                np.savez(f, **cols)  # type: ignore[arg-type]
            os.replace(tmp, directory / SNAPSHOT)
        except OSError as exc:
            log.warning("cannot write recall snapshot in %s: %s", directory, exc)
            tmp.unlink(missing_ok=True)
            return False
        with self._lock:
            self._snap_gen = gen
            self._snap_vecs = embedded
        return True

    # ------------------------------------------------------------------ sync
    def sync(self) -> None:
        """Bring the documents to the store's committed generation (see the module
        docstring); cheap when nothing changed (one generation check)."""
        if self._closed:
            return
        # lock order everywhere: the store's lock, then this index's (a bundle syncs
        # inside its own snapshot)
        with self.store.snapshot() as view, self._lock:
            cur = view.generation
            if cur == self._gen:
                return
            touched: set[str] | None = None
            if self._gen is not None and cur > self._gen:
                commits = self.store.changes(self._gen, cur)
                if commits is not None:
                    touched = self._touched(commits)
            rebuilt = touched is None
            if touched is None:
                docs = self._read(view, None)
                self.rebuilds += 1
                self._apply_docs([d for d in docs.values() if d is not None and _indexable(d)], replace=True)
            elif touched:
                docs = self._read(view, touched)
                live = [d for d in docs.values() if d is not None and _indexable(d)]
                gone = [i for i in touched if not _indexable(docs.get(i))]
                for i in gone:
                    self.index.remove(i)
                    self._keys.pop(i, None)
                self._apply_docs(live, replace=False)
            self._gen = cur
        if rebuilt and self.directory is not None:  # the costly path: spare the next process
            self.save_snapshot()  # O(documents), a fraction of the rebuild it saves
        self._after_sync()

    def _touched(self, commits: Sequence[Any]) -> set[str] | None:
        """Memory ids whose document a commit may have changed; None = unknown (schema)."""
        from reckon.store.graphs import SCHEMA

        out: set[str] = set()
        for c in commits:
            for q in (*c.added, *c.removed):
                if q.graph_name == SCHEMA:
                    return None  # labels / property specs may have changed: rebuild
                i = self._doc_id(getattr(q.subject, "value", ""))
                if i is not None:
                    out.add(i)
            for t in (*c.inferred_added, *c.inferred_removed):
                i = self._doc_id(getattr(t.subject, "value", ""))
                if i is not None:
                    out.add(i)
        return out

    def _apply_docs(self, docs: Iterable[dict[str, Any]], *, replace: bool) -> None:
        """Upsert documents (attach the vectors already known, queue the others); with
        ``replace``, documents not given are removed."""
        docs = list(docs)
        idx = self.index
        vf = self._vector_file()
        if replace:
            vf.refresh()
        # (a few documents of a commit: no read of the vector file on the write path; the
        # embedding thread reads what other processes appended before it embeds anything)
        if replace:
            keep = {d["id"] for d in docs}
            for i in [i for i in idx.ids() if i not in keep]:
                idx.remove(i)
                self._keys.pop(i, None)
        changed = [d for d in docs if d["id"] not in idx or not _same(idx.get(d["id"]), d)]
        if not changed:
            return
        plan = [self._part_keys(vf, d["text"], d.get("context")) for d in changed]
        known = vf.get_many({k for _, keys in plan for k in keys})
        vecs: list[np.ndarray | None] = []
        todo: list[tuple[bytes, str, str]] = []
        for d, (parts, keys) in zip(changed, plan):
            v = self._combine(parts, keys, known)
            if v is None and self._doc_keys(d["id"]) == keys:
                # same texts as before (only metadata changed): keep the vector it has
                v = idx.embedding(d["id"]) if d["id"] in idx else None
            vecs.append(v)
            self._keys[d["id"]] = keys
            if v is None:
                todo.extend((k, t, d["id"]) for (t, _), k in zip(parts, keys) if k not in known)
        idx.add_many([dict(d) for d in changed], vectors=vecs)
        if todo:
            self._enqueue(todo)

    # ------------------------------------------------------------------ embedding
    def _enqueue(self, items: Iterable[tuple[bytes, str, str]]) -> None:
        with self._cv:
            self._last_enqueue = time.monotonic()
            for k, text, doc_id in items:
                entry = self._pending.get(k)
                if entry is None:
                    self._pending[k] = (text, {doc_id})
                else:
                    entry[1].add(doc_id)
            self._cv.notify_all()
        if self._background and self._ranking:
            self._start_worker()

    def start_embedding(self) -> None:
        """Embed the queue in the background from now on (as after a first ranking): a
        bulk write whose documents should become searchable by vector soon calls it."""
        self._wants_ranking()

    def _wants_ranking(self) -> None:
        """This process ranks: from now on the queue is embedded in the background."""
        if not self._ranking:
            self._ranking = True
            if self._background and self._pending:
                self._start_worker()

    def _start_worker(self) -> None:
        if not self._exit_hook:
            self._exit_hook = True
            atexit.register(_close_at_exit, weakref.ref(self))
        with self._cv:
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(target=self._work, name=f"reckon-embed-{self.store.tenant_id}",
                                            daemon=True)
            self._worker.start()

    def _work(self) -> None:
        from reckon.recall._minilm import mark_background_thread

        mark_background_thread()  # its encodes stay on this thread: the other cores serve requests
        idle_since = time.monotonic()
        idle = False
        while not self._closed:
            with self._cv:
                backoff = self._retry_at - time.monotonic()
                if backoff > 0:
                    self._cv.wait(timeout=min(backoff, 1.0))
                    continue
                if not self._pending:
                    self._cv.notify_all()
                    self._cv.wait(timeout=1.0)
                    if not self._pending:
                        if time.monotonic() - idle_since > _IDLE_S:
                            # restarted by the next enqueue; close() still waits for the
                            # idle snapshot this thread writes on its way out
                            self._worker = None
                            self._idle_writers.add(threading.current_thread())
                            idle = True
                            break
                        continue
                quiet = _QUIET_S - (time.monotonic() - self._last_enqueue)
                if quiet > 0 and len(self._pending) < _BATCH:
                    self._cv.wait(timeout=quiet)  # writes are still arriving
                    continue
                batch = list(itertools.islice(self._pending.items(), _BATCH))
                self._busy = True
            try:
                self._embed_batch(batch)
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()
            idle_since = time.monotonic()
            self._maybe_snapshot()
        if idle:
            try:
                if not self._closed:
                    self._maybe_snapshot(idle=True)  # quiet for _IDLE_S: write what the drains left
            finally:
                with self._cv:
                    self._idle_writers.discard(threading.current_thread())

    def _embed_batch(self, batch: list[tuple[bytes, tuple[str, set[str]]]]) -> None:
        vf = self._vector_file()
        vf.refresh()  # another process may have embedded some of them meanwhile
        have = vf.get_many([k for k, _ in batch])
        need = [(k, t) for k, (t, _) in batch if k not in have]
        new: dict[bytes, np.ndarray] = {}
        if need:
            try:
                enc = self.index._encode([t for _, t in need])  # noqa: SLF001 (fallback logic lives there)
            except Exception as exc:  # noqa: BLE001 - an embedder bug must not kill the thread
                log.warning("embedding failed: %s", exc)
                enc = None
            if enc is None:
                # keyword-only for now; the queue is kept and retried later (and by the
                # next process to open the index, if this one ends first)
                with self._cv:
                    self._retry_at = time.monotonic() + _RETRY_S
                    self._cv.notify_all()
                return
            self._retry_at = 0.0
            if self.index.embedder.name != vf.embedder:
                self._rekey()  # switched to the fallback, which re-embedded every document
                return
            new = {k: enc[j] for j, (k, _) in enumerate(need)}
            if self._current():  # never into a re-created tenant's folder
                try:
                    vf.add(new.items())
                except OSError as exc:
                    log.warning("cannot append vectors to %s: %s", vf.path, exc)
        vecs = {**have, **new}
        with self._lock:
            for k, (_, ids) in batch:
                for i in ids:
                    keys = self._keys.get(i)
                    if keys is None or k not in keys or i not in self.index:
                        continue
                    if len(keys) == 1:
                        v = vecs.get(k)
                    else:
                        rec = self.index.get(i)
                        known = {**vf.get_many(keys), **{kk: vecs[kk] for kk in keys if kk in vecs}}
                        v = self._combine(self._parts(rec.text, rec.context), keys, known)
                    if v is not None:
                        self.index.set_vector(i, v)
        with self._cv:
            for k, (_, ids) in batch:
                cur = self._pending.get(k)
                if cur is not None and cur[1] <= ids:
                    del self._pending[k]

    def _current(self) -> bool:
        """False once the tenant this index was opened on was deleted (its folder may hold
        a new tenant of the same id by now). A closed index is still current: the
        batch in progress at :meth:`close` keeps its vectors and close writes the
        snapshot (both were silently dropped when this also tested ``_closed``)."""
        check = getattr(self.store, "is_current", None)
        return bool(check()) if callable(check) else True

    def _rekey(self) -> None:
        """After a switch of embedder (the hashing fallback, which re-embedded every
        document in memory): keys of the new embedder, its vector file, empty queue."""
        todo: list[tuple[bytes, str, str]] = []
        with self._lock:
            vf = self._vector_file()
            self._keys = {}
            pairs = []
            for i in self.index.ids():
                rec = self.index.get(i)
                parts, keys = self._part_keys(vf, rec.text, rec.context)
                self._keys[i] = keys
                if len(parts) == 1 and rec.context is None and parts[0][0] == rec.text:
                    v = self.index.embedding(i)  # the fallback embedded exactly this text
                    if v is not None:
                        pairs.append((keys[0], v))
                        continue
                self.index.set_vector(i, None)
                todo.extend((k, t, i) for (t, _), k in zip(parts, keys))
            try:
                vf.add(pairs)
            except OSError as exc:
                log.warning("cannot append vectors to %s: %s", vf.path, exc)
        with self._cv:
            self._pending.clear()
            self._cv.notify_all()
        if todo:
            self._enqueue(todo)

    def _after_sync(self) -> None:
        if not self._background and self._ranking and self._pending:
            while time.monotonic() >= self._retry_at:
                with self._cv:
                    batch = list(itertools.islice(self._pending.items(), _BATCH))
                if not batch:
                    break
                self._embed_batch(batch)

    def _maybe_snapshot(self, *, idle: bool = False) -> None:
        gen, snap = self._gen, self._snap_gen
        if gen is None:
            return
        new_vecs = abs(self.index.embedded_count() - self._snap_vecs)
        drained = not self._pending and new_vecs > 0 and (idle or new_vecs * _DRAIN_SHARE >= len(self.index))
        if snap is None or gen - snap >= _SNAPSHOT_EVERY or drained or (idle and gen != snap):
            self.save_snapshot()  # the queue drained: the next process opens with the vectors
            self.maybe_compact()

    def maybe_compact(self, *, factor: float = _COMPACT_FACTOR, slack: int = _COMPACT_SLACK) -> int:
        """Compact the vector file when it holds more than ``factor`` x the records the
        current documents use, plus ``slack`` (superseded, edited and retired memories'
        vectors: the file is append-only); returns the records dropped. Crash-safe
        (:meth:`VectorFile.compact <reckon.recall.vectors.VectorFile.compact>`: a new
        file renamed over the old one under its lock). A vector another process appended
        for a document this one has not synced yet may go with the rest; that process
        keeps it in memory and the next one to open embeds it again -- nothing is lost
        for good."""
        vf = self._vectors
        if not isinstance(vf, VectorFile):
            return 0
        try:
            records = vf.path.stat().st_size // vf._rec  # noqa: SLF001 - no O(file) read to decide
        except OSError:
            return 0
        with self._lock:
            live = {k for i in self.index.ids() for k in (self._doc_keys(i) or ())}
        if records <= factor * len(live) + slack:
            return 0
        try:
            return vf.compact(live)
        except OSError as exc:
            log.warning("recall index: vector file compaction failed: %s", exc)
            return 0

    def wait(self, timeout: float | None = 60.0) -> bool:
        """Block until every queued document has its vector; returns False on timeout
        or, at once, while the embedder is failing (its queue is retried later)."""
        self._wants_ranking()
        if not self._background:
            self._after_sync()
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cv:
                if not self._pending and not self._busy:
                    return True
                if not self._busy and self._retry_at > time.monotonic():
                    return False
                alive = self._worker is not None and self._worker.is_alive()
            if not alive:
                self._start_worker()
            with self._cv:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(timeout=0.2 if left is None else min(0.2, left))

    def load_model(self) -> None:
        """Load the embedding model now (``serve`` / ``mcp`` at start) and embed one
        text, so the first request does not pay for it."""
        self._wants_ranking()
        emb = self.index.embedder
        load = getattr(emb, "load", None)
        try:
            if callable(load):
                load()
            self.query_vector("warm up")
        except EmbeddingUnavailable as exc:
            log.warning("embedding model unavailable: %s", exc)

    # ------------------------------------------------------------------ reads
    def query_vector(self, text: str) -> np.ndarray | None:
        """The embedding of a query text (cached), or None when the embedder fails."""
        name = self.index.embedder.name
        v = self._qcache.get(name, text)
        if v is None:
            v = self.index.encode_query(text)
            if v is not None:
                self._qcache.put(name, text, v)
        return v

    def query_vectors(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """:meth:`query_vector` of each text, the ones not cached encoded in one batch
        (two short texts cost about one: the model's weights are read once)."""
        name = self.index.embedder.name
        out = [self._qcache.get(name, t) for t in texts]
        todo = list(dict.fromkeys(t for t, v in zip(texts, out) if v is None))
        if todo:
            enc = self.index._encode(todo)  # noqa: SLF001 - the index's one guarded encode
            got: dict[str, np.ndarray] = {}
            if enc is not None:
                for t, v in zip(todo, enc):
                    got[t] = v
                    self._qcache.put(name, t, v)
            out = [v if v is not None else got.get(t) for t, v in zip(texts, out)]
        return out

    def cached_query_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The query cache's vectors of ``texts`` (by text; the ones not cached are left
        out). Nothing is encoded."""
        name = self.index.embedder.name
        return {t: v for t in dict.fromkeys(texts) if (v := self._qcache.get(name, t)) is not None}

    def remember_query_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Put embeddings of texts computed by this index's embedder elsewhere (another
        index of the tenant sharing the embedder: :meth:`stored_vectors`) into the query
        cache, so :meth:`query_vectors` does not encode them again."""
        name = self.index.embedder.name
        for t, v in vectors.items():
            self._qcache.put(name, t, np.asarray(v, dtype=np.float32))

    def stored_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors the index's vector file holds for exactly ``texts`` (parts of its
        documents, embedded by its embedder), by text; the file is refreshed first (another
        process may have appended). Nothing is encoded; ``{}`` while the file is another
        embedder's."""
        if not texts:
            return {}
        vf = self._vector_file()
        if vf.embedder != self.index.embedder.name:
            return {}
        try:
            vf.refresh()
        except OSError as exc:  # unreadable: the caller encodes
            log.warning("cannot read %s: %s", getattr(vf, "path", "vectors"), exc)
            return {}
        keys = {vf.key(t): t for t in texts}
        return {keys[k]: np.array(v, dtype=np.float32) for k, v in vf.get_many(keys).items()}

    def offer_vectors(self, vectors: Mapping[str, np.ndarray]) -> int:
        """Keep embeddings of texts this index has queued, computed elsewhere by the same
        embedder (a bundle ranked by a turn just recorded encodes its line before the
        turn index's thread gets to it): they go into the vector file, where the thread's
        next batch finds them instead of encoding them again. Texts not queued here are
        ignored; returns how many were kept."""
        if not vectors:
            return 0
        vf = self._vector_file()
        if vf.embedder != self.index.embedder.name or not self._current():
            return 0
        with self._cv:
            pairs = [(k, np.asarray(v, dtype=np.float32)) for t, v in vectors.items()
                     if (k := vf.key(t)) in self._pending and v is not None and np.shape(v) == (vf.dim,)]
        if not pairs:
            return 0
        try:
            return int(vf.add(pairs))
        except OSError as exc:
            log.warning("cannot append vectors to %s: %s", getattr(vf, "path", "vectors"), exc)
            return 0

    def search(self, query: str, *, limit: int, mask_fn: Callable[[RecallIndex], np.ndarray] | None = None,
               **kw: Any) -> list[Hit]:
        """:meth:`RecallIndex.search` on the synced documents, with the cached query
        vector; ``mask_fn(index)`` builds the eligibility mask under the index lock.

        The first ranking in a process waits (up to 30 seconds) for a backlog of at most
        :data:`_FIRST_RANK_BACKLOG` documents: a one-shot process (``reckon search`` after
        ``reckon remember``) would otherwise rank by keyword only and exit before the
        background embedding ran, so a CLI-only tenant would never get vectors. Later
        searches never wait (a write is searchable by keyword at once, by vector moments
        later)."""
        first = not self._ranking
        self._wants_ranking()
        self.sync()
        if first and self.index.config.use_vector and 0 < self.pending() <= _FIRST_RANK_BACKLOG:
            self.wait(timeout=30.0)
        # an explicitly chosen embedder is asked even before a vector exists, so a runtime
        # that cannot load is an error here (EmbeddingUnavailable), not a silent keyword-only search
        vector = self.index.config.use_vector and (
            self.index.embedded_count() > 0 or getattr(self.index.embedder, "explicit", False))
        qv = self.query_vector(query) if vector else None
        with self.index._lock:  # noqa: SLF001 - mask and search on the same rows
            mask = mask_fn(self.index) if mask_fn is not None else None
            return self.index.search(query, limit=limit, mask=mask, query_vector=qv, **kw)

    def candidates(self, **filters: Any) -> list[Any]:
        """The documents (:class:`~reckon.recall.index.DocRecord`) passing
        :meth:`RecallIndex.filter_mask` ``filters`` -- a pre-filter: the caller checks
        what it keeps against the store."""
        self.sync()
        with self.index._lock:  # noqa: SLF001
            mask = self.index.filter_mask(**filters)
            docs = self.index._docs  # noqa: SLF001
            ids = self.index._row_ids  # noqa: SLF001
            return [docs[ids[r]] for r in np.nonzero(mask)[0]]

    def embed_now(self, ids: Iterable[str]) -> int:
        """Embed the given documents that have no vector yet on the calling thread (the
        bundle does this for the few items it ranks, so a memory written a moment ago is
        ranked at once); returns how many got one."""
        with self._lock:
            todo = [i for i in ids if i in self.index and self.index.embedding(i) is None]
            batch: dict[bytes, tuple[str, set[str]]] = {}
            vf = self._vector_file()
            for i in todo:
                rec = self.index.get(i)
                parts, keys = self._part_keys(vf, rec.text, rec.context)
                for (t, _), k in zip(parts, keys):
                    batch.setdefault(k, (t, set()))[1].add(i)
        if not batch:
            return 0
        self._embed_batch(list(batch.items()))
        return sum(1 for i in todo if self.index.embedding(i) is not None)

    def rank_by_similarity(self, text: str, ids: Iterable[str], *, embed_missing: int = 32,
                           vector: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Cosine of each memory's vector to ``text`` (0.0 without a vector).

        :param embed_missing: up to this many of ``ids`` still without a vector are
            embedded first (:meth:`embed_now`).
        :param vector: the query's unit vector, already computed (``float32 (dim,)``,
            e.g. a conversation's turns combined); ``text`` is then not embedded.
        """
        self._wants_ranking()
        self.sync()
        ids = list(ids)
        if embed_missing > 0 and time.monotonic() >= self._retry_at:
            missing = [i for i in ids if i in self.index and self.index.embedding(i) is None]
            if missing:
                self.embed_now(missing[:embed_missing])
        if not any(self.index.embedding(i) is not None for i in ids if i in self.index):
            return [(i, 0.0) for i in ids if i in self.index]
        qv = vector if vector is not None else self.query_vector(text)
        if qv is None:
            return [(i, 0.0) for i in ids if i in self.index]
        return self.index.rank_by_similarity(text, ids, query_vector=qv)

    # ------------------------------------------------------------------ checks
    def check(self, *, repair: bool = True) -> dict[str, Any]:
        """Compare the index with a rebuild from the store (``tenant validate``).

        :param repair: on a difference, replace the documents by the rebuild and write a
            new snapshot (what was found is still reported).
        :returns: ``{"documents", "vectors", "pending", "missing", "extra", "stale",
            "generation", "embedder", "repaired", "conforms"}``: ``missing`` active
            memories not indexed, ``extra`` indexed ids that are not active memories,
            ``stale`` documents whose text or metadata differ from the store (ids, sorted).
        """
        self.sync()
        with self.store.snapshot() as view, self._lock:
            truth = {i: d for i, d in self._read(view, None).items() if d is not None and _indexable(d)}
            gen = view.generation
            if gen != self._gen:  # a write landed between sync and this snapshot
                return self.check()
            ids = set(self.index.ids())
            missing = sorted(set(truth) - ids)
            extra = sorted(ids - set(truth))
            stale = sorted(i for i in set(truth) & ids if not _same(self.index.get(i), truth[i]))
            embedded = self.index.embedded_count()
            bad = bool(missing or extra or stale)
            if bad and repair:
                log.warning("recall index of %s differed from the store (%d missing, %d extra, %d stale): rebuilt",
                            self.store.tenant_id, len(missing), len(extra), len(stale))
                self._apply_docs(truth.values(), replace=True)
                self._snap_gen = None
        if bad and repair:
            self.save_snapshot()
        return {"documents": len(ids), "vectors": embedded, "pending": self.pending(), "missing": missing,
                "extra": extra, "stale": stale, "generation": gen, "embedder": self.embedder_name,
                "repaired": bad and repair, "conforms": not bad}

    def close(self, *, save: bool = True, wait: float = 0.0) -> None:
        """Stop the background thread (pending documents are embedded by the next
        process that opens the index) and, with ``save``, write a snapshot.

        :param wait: seconds to wait for the thread to finish a batch in progress (its
            vectors are then kept); 0 = do not wait.
        """
        self._closed = True
        with self._cv:
            self._cv.notify_all()
            threads = [w for w in (self._worker, *self._idle_writers) if w is not None]
        if wait > 0:
            until = time.monotonic() + wait
            for w in threads:  # a batch in progress (its vectors go into the snapshot below), an idle snapshot
                if w is not threading.current_thread():
                    w.join(timeout=max(0.0, until - time.monotonic()))
        if save:
            self.save_snapshot()


_EXIT_WAIT_S = 5.0
"""Seconds an exiting process waits for a batch in progress (:func:`_close_at_exit`)."""


def _close_at_exit(ref: weakref.ref[TenantIndex]) -> None:
    """A process that exits without closing its tenant (``reckon search``, a script)
    keeps the vectors its embedding thread computed: the index is closed as
    :meth:`TenantIndex.close` does: the batch in progress finishes (up to
    :data:`_EXIT_WAIT_S` seconds) and its vectors go to the tenant's vector file, and the
    snapshot is written when it changed. Without
    this, a CLI-only tenant whose backlog exceeds :data:`_FIRST_RANK_BACKLOG` never got
    vectors: every process embedded part of it and threw the work away. Never raises."""
    idx = ref()
    if idx is None or idx._closed:  # noqa: SLF001
        return
    try:
        idx.close(save=True, wait=_EXIT_WAIT_S)
    except Exception:  # noqa: BLE001 - an optimisation must never fail an exit
        log.debug("recall index close at exit failed", exc_info=True)
