"""Content-addressed, append-only vector file: the embeddings of one tenant, kept
beside its store and safe against a killed process and against other processes.

A vector is stored under the digest of the exact text that was embedded (BLAKE2b-128
of ``embedder name + NUL + text``), never under a memory id. So the file can never
disagree with the store: a memory's vector is looked up by its current text; a stale
vector (the text changed) is simply never looked up again; a missing one is embedded
again. Nothing in it needs repair, whoever wrote it and whenever they were killed.

On disk (``<tenant>/recall/vectors-<embedder>.f32``), fixed-size records::

    magic   4 bytes  b"RKV1"
    key    16 bytes  BLAKE2b-128 digest of the embedded text (see :func:`text_key`)
    vector  4*dim    float32, little-endian, L2-normalised
    check   4 bytes  Fletcher-style checksum of key + vector as little-endian 32-bit
                     words w_1..w_m: (sum w_i + (sum i*w_i) * 65536) mod 2**32
                     (computed for every record at once with numpy)

Appends happen under an exclusive ``flock`` on ``vectors-<embedder>.lock``; an append
first cuts a torn tail (a record a killed writer left half-written) so that records
stay aligned. Readers need no lock: they read whole records up to the file size and
skip any whose magic or checksum does not match (a record still being written). Every
process reads the records other processes appended since its last look
(:meth:`VectorFile.refresh`), so a vector computed anywhere is reused everywhere and
nothing is embedded twice. When more than half of the records are no longer looked up,
:meth:`VectorFile.compact` rewrites the file (unique temporary name, fsync, rename).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from reckon.recall._shared import run_shared

__all__ = ["MAGIC", "MemoryVectors", "VectorFile", "row_dots", "text_key"]

log = logging.getLogger("reckon.recall")

MAGIC = b"RKV1"


def text_key(embedder: str, text: str) -> bytes:
    """16-byte key of ``text`` as embedded by the embedder named ``embedder``."""
    return hashlib.blake2b(embedder.encode() + b"\0" + text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


#: Rows per block of :func:`_checksums`: a block's ``(rows, m)`` uint32 product (1.5 MB at
#: dim 384) stays in cache; 1024 measured fastest against 512, 2048, 4096 and one block.
_CHECK_ROWS = 1024


def _checksums(body: np.ndarray) -> np.ndarray:
    """The check of each row of ``body``, as defined in the module docstring.

    Computed in uint32 (sums and products wrap around, which is the ``mod 2**32``),
    in blocks of :data:`_CHECK_ROWS` rows; ``tests/recall/test_vectors_props.py`` checks it
    bit for bit against the formula computed in 64-bit integers.

    :param body: uint32 ``(records, m)``, the key + vector words of each record (any
        strides, e.g. a column slice of the records' words).
    :returns: uint32 ``(records,)``.
    """
    n, m = body.shape
    i = np.arange(1, m + 1, dtype=np.uint32)
    out = np.empty(n, dtype=np.uint32)
    tmp = np.empty((min(n, _CHECK_ROWS), m), dtype=np.uint32)
    for a in range(0, n, _CHECK_ROWS):
        blk = body[a:a + _CHECK_ROWS]
        t = tmp[: len(blk)]
        np.multiply(blk, i, out=t)
        s2 = t.sum(axis=1, dtype=np.uint32)
        np.left_shift(s2, 16, out=s2)
        np.add(blk.sum(axis=1, dtype=np.uint32), s2, out=out[a:a + len(blk)])
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "embedder"


class VectorFile:
    """The append-only vector file of one embedder in ``directory``.

    :param directory: the folder (created if missing).
    :param embedder: the embedder's name (selects the file and salts the keys).
    :param dim: vector width.
    """

    def __init__(self, directory: str | os.PathLike[str], embedder: str, dim: int) -> None:
        self.directory = Path(directory)
        self.embedder = embedder
        self.dim = dim
        self.path = self.directory / f"vectors-{_slug(embedder)}.f32"
        self._lock_path = self.directory / f"vectors-{_slug(embedder)}.lock"
        self._rec = 4 + 16 + 4 * dim + 4
        # the key is raw bytes ("V16"): an "S16" field would drop trailing NUL bytes, and a
        # digest ending in 0x00 (1 in 256) would never match again
        self._dtype = np.dtype([("magic", "S4"), ("key", "V16"), ("vec", "<f4", (dim,)), ("crc", "<u4")])
        assert self._dtype.itemsize == self._rec
        self._words = (16 + 4 * dim) // 4  # key + vector as 32-bit words
        self._mu = threading.RLock()
        self._rows: dict[bytes, int] = {}
        self._mat = np.zeros((0, dim), dtype=np.float32)
        self._n = 0
        self._offset = 0  # bytes of the file read so far (whole records)
        self._inode: tuple[int, int] | None = None

    def key(self, text: str) -> bytes:
        """The key of ``text`` for this file's embedder."""
        return text_key(self.embedder, text)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def get(self, key: bytes) -> np.ndarray | None:
        """float32 ``(dim,)`` vector of ``key`` (a view; do not modify), or None."""
        with self._mu:
            r = self._rows.get(key)
            return None if r is None else self._mat[r]

    def get_many(self, keys: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors of the ``keys`` that have one."""
        with self._mu:
            return {k: self._mat[r] for k in keys if (r := self._rows.get(k)) is not None}

    #: At most this many keys are looked for by :meth:`lookup` without a :meth:`refresh`
    #: (each is one vectorised pass over the unread records' keys).
    LOOKUP_KEYS = 64

    def lookup(self, keys: Collection[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors of a few ``keys``, without reading the whole file into this
        process: the known ones as :meth:`get_many`, the others searched for in the
        records not read yet (the file memory-mapped read-only; only the keys are
        compared, and the checksum of a matching record checked: the first record of a
        key that checks wins, as in :meth:`refresh`). Nothing becomes known by it: a
        later :meth:`refresh` still reads those records. With more than
        :data:`LOOKUP_KEYS` unknown keys it is :meth:`refresh` + :meth:`get_many`.

        A fresh process opening a recall snapshot whose last documents have no vector
        yet looks up only theirs: 100k records (150 MB at dim 384) are ~0.3 s to read
        into memory, ~20 ms to search for a few keys.

        :returns: float32 ``(dim,)`` vectors by key (copies for the searched ones), for
            the keys that have one.
        """
        with self._mu:
            found = {k: self._mat[r] for k in keys if (r := self._rows.get(k)) is not None}
            want = [k for k in keys if k not in found and len(k) == 16]
            if not want:
                return found
            if len(want) > self.LOOKUP_KEYS:
                self.refresh()
                return {**found, **self.get_many(want)}
            try:
                st = os.stat(self.path)
            except OSError:
                return found
            start = self._offset if self._inode in (None, (st.st_dev, st.st_ino)) else 0
            count = (st.st_size - start) // self._rec if st.st_size > start else 0
            if count <= 0:
                return found
            try:
                recs = np.memmap(self.path, dtype=self._dtype, mode="r", offset=start, shape=(count,))
            except (OSError, ValueError) as exc:
                log.warning("cannot read %s: %s", self.path, exc)
                return found
            words = np.ndarray((count, 2), dtype="<u8", buffer=recs, offset=4, strides=(self._rec, 8))
            for k in want:
                a, b = np.frombuffer(k, dtype="<u8")
                for j in np.flatnonzero((words[:, 0] == a) & (words[:, 1] == b)).tolist():
                    rec = recs[j : j + 1]
                    body = np.frombuffer(rec.tobytes(), dtype="<u4")[1:1 + self._words].reshape(1, self._words)
                    if rec["magic"][0] == MAGIC and _checksums(body)[0] == rec["crc"][0]:
                        found[k] = np.array(rec["vec"][0], dtype=np.float32)
                        break
            del words, recs
            return found

    # ------------------------------------------------------------------ reading
    def refresh(self) -> int:
        """Read the records appended since the last call (by any process); returns how
        many new vectors became known. A replaced file (after :meth:`compact`) is read
        again from the start."""
        with self._mu:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                return 0
            except OSError as exc:
                log.warning("cannot read %s: %s", self.path, exc)
                return 0
            ino = (st.st_dev, st.st_ino)
            if self._inode is not None and ino != self._inode:
                self._rows, self._n, self._offset = {}, 0, 0
                self._mat = np.zeros((0, self.dim), dtype=np.float32)
            self._inode = ino
            whole = (st.st_size // self._rec) * self._rec
            if whole <= self._offset:
                return 0
            try:
                got, data = self._read(whole - self._offset)
            except OSError as exc:
                log.warning("cannot read %s: %s", self.path, exc)
                return 0
            count = got // self._rec
            data = data[: count * self._rec]
            recs = np.frombuffer(data, dtype=self._dtype, count=count)
            words = np.frombuffer(data, dtype="<u4").reshape(count, self._rec // 4)[:, 1:1 + self._words]
            ok = (recs["magic"] == MAGIC) & (_checksums(words) == recs["crc"])
            # a record that does not check may be one still being written: stop before the
            # first bad record that is in the last few (re-read next time); skip older ones
            good = np.nonzero(ok)[0]
            bad = np.nonzero(~ok)[0]
            stop = count
            if len(bad) and bad[-1] >= count - 4:
                tail = bad[bad >= count - 4]
                stop = int(tail[0])
                good = good[good < stop]
            new = 0
            if len(good):
                new = self._take(recs, good, stop)
            self._offset += stop * self._rec
            return new

    def _read(self, size: int) -> tuple[int, np.ndarray]:
        """Up to ``size`` bytes of the file from ``_offset``, read straight into one
        uint8 array (measured at 150 MB: about half the time of ``f.read``, which
        builds a ``bytes``). Returns how many bytes were read (fewer when the file was
        cut meanwhile) and the array ``(size,)``.

        :raises OSError: when the file cannot be opened or read.
        """
        buf = np.empty(size, dtype=np.uint8)
        view = buf.data  # a memoryview of buf
        got = 0
        with open(self.path, "rb", buffering=0) as f:
            f.seek(self._offset)
            while got < size and (r := f.readinto(view[got:])):
                got += r
        return got, buf

    def _take(self, recs: np.ndarray, good: np.ndarray, stop: int) -> int:
        """Make the keys of ``recs[good]`` known that are not known yet and copy their
        vectors into ``_mat`` (one numpy copy, no per-record row assignment); the first
        record of a key wins, later ones are ignored and take no row. Returns how many
        keys became known.

        :param recs: the records read (structured, ``self._dtype``).
        :param good: int ``(g,)``, increasing indices of the records that check, all
            below ``stop``.
        :param stop: how many records of ``recs`` this refresh consumes.
        """
        keys: list[bytes] = recs["key"][good].tolist()
        rows, base = self._rows, self._n
        fresh = dict(zip(keys, range(base, base + len(keys))))
        take = good
        if len(fresh) != len(keys) or not rows.keys().isdisjoint(fresh):
            # a key twice among these records, or known already: its first record only
            fresh = {}
            idx: list[int] = []
            for j, k in zip(good.tolist(), keys):
                if k not in rows and k not in fresh:
                    fresh[k] = base + len(idx)
                    idx.append(j)
            take = np.asarray(idx, dtype=np.intp)
        m = len(take)
        if not m:
            return 0
        if base + m > len(self._mat):
            grown = np.zeros((max(base + m, 2 * len(self._mat), 64), self.dim), dtype=np.float32)
            grown[:base] = self._mat[:base]
            self._mat = grown
        dst = self._mat[base:base + m]
        if m == stop:  # take is 0..stop-1: a slice
            dst[...] = recs["vec"][:stop]
        else:  # mode "clip" (the indices are valid): "raise" would copy through a buffer
            np.take(recs["vec"], take, axis=0, out=dst, mode="clip")
        rows.update(fresh)
        self._n = base + m
        return m

    # ------------------------------------------------------------------ writing
    def _sealed(self, recs: np.ndarray) -> bytes:
        """The records' bytes with their checksums filled in."""
        if len(recs):
            body = np.frombuffer(recs.tobytes(), dtype="<u4").reshape(len(recs), self._rec // 4)[:, 1:1 + self._words]
            recs["crc"] = _checksums(body)
        return bytes(recs.tobytes())

    def _locked(self) -> int:
        # the folder only, never its parents: a tenant deleted meanwhile must not come back
        self.directory.mkdir(exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def add(self, pairs: Iterable[tuple[bytes, np.ndarray]]) -> int:
        """Append the vectors whose key is not known yet; returns how many were written.

        :raises OSError: when the file cannot be written (the caller logs and goes on:
            a vector that was not written is computed again later).
        """
        with self._mu:
            self.refresh()
            todo: dict[bytes, np.ndarray] = {}
            for k, v in pairs:
                if k not in self._rows and k not in todo:
                    v = np.asarray(v, dtype=np.float32).reshape(self.dim)
                    todo[k] = v
            if not todo:
                return 0
            recs = np.zeros(len(todo), dtype=self._dtype)
            recs["magic"] = MAGIC
            recs["key"] = [np.void(k) for k in todo]
            recs["vec"] = np.stack(list(todo.values()))
            raw = self._sealed(recs)
            fd = self._locked()
            try:
                wfd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    size = os.fstat(wfd).st_size
                    whole = (size // self._rec) * self._rec
                    if whole != size:  # a writer was killed mid-record: cut its torn tail
                        os.ftruncate(wfd, whole)
                    os.pwrite(wfd, raw, whole)
                finally:
                    os.close(wfd)
            finally:
                os.close(fd)
            self.refresh()
            return len(todo)

    def compact(self, keep: Collection[bytes]) -> int:
        """Rewrite the file with only the vectors of ``keep`` (others are dropped);
        returns the number of records dropped. Atomic: a unique temporary file is
        written, flushed to disk and renamed over the old one under the lock."""
        with self._mu:
            fd = self._locked()
            try:
                self.refresh()
                keys = [k for k in self._rows if k in keep]
                dropped = len(self._rows) - len(keys)
                if dropped == 0:
                    return 0
                recs = np.zeros(len(keys), dtype=self._dtype)
                recs["magic"] = MAGIC
                if keys:
                    recs["key"] = [np.void(k) for k in keys]
                    recs["vec"] = self._mat[[self._rows[k] for k in keys]]
                raw = self._sealed(recs)
                tmp = self.directory / f".{self.path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
                try:
                    with open(tmp, "wb") as f:
                        f.write(raw)
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(tmp, self.path)
                finally:
                    tmp.unlink(missing_ok=True)
                self._rows, self._n, self._offset, self._inode = {}, 0, 0, None
                self._mat = np.zeros((0, self.dim), dtype=np.float32)
            finally:
                os.close(fd)
            self.refresh()
            return dropped


class MemoryVectors:
    """The same interface as :class:`VectorFile`, in memory only (an index without a
    directory): vectors by key, nothing persisted.

    :param embedder: the embedder's name (salts the keys).
    :param dim: vector width.
    """

    def __init__(self, embedder: str, dim: int) -> None:
        self.embedder = embedder
        self.dim = dim
        self.path = None
        self._d: dict[bytes, np.ndarray] = {}
        self._mu = threading.Lock()

    def key(self, text: str) -> bytes:
        """The key of ``text`` for this store's embedder."""
        return text_key(self.embedder, text)

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def refresh(self) -> int:
        """Nothing to read (no other process shares it): 0."""
        return 0

    def get(self, key: bytes) -> np.ndarray | None:
        """float32 ``(dim,)`` vector of ``key``, or None."""
        return self._d.get(key)

    def get_many(self, keys: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors of the ``keys`` that have one."""
        d = self._d
        return {k: v for k in keys if (v := d.get(k)) is not None}

    def lookup(self, keys: Collection[bytes]) -> dict[bytes, np.ndarray]:
        """:meth:`get_many` (nothing to search: all of it is in memory)."""
        return self.get_many(keys)

    def add(self, pairs: Iterable[tuple[bytes, np.ndarray]]) -> int:
        """Keep the vectors whose key is not known yet; returns how many were new."""
        n = 0
        with self._mu:
            for k, v in pairs:
                if k not in self._d:
                    self._d[k] = np.asarray(v, dtype=np.float32).reshape(self.dim)
                    n += 1
        return n


#: Rows per chunk of :func:`row_dots`: a multiple of 8, so that OpenBLAS's ``sgemv``
#: (which treats a matrix's last ``rows % 8`` rows with another kernel) gives every row
#: the bits it gives in one call over the whole matrix (``tests/recall/test_vectors.py``);
#: the last chunk has the remainder, from ``_CHUNK_ROWS`` to ``2 * _CHUNK_ROWS - 1`` rows.
_CHUNK_ROWS = 8192


_BLAS: list[list[Any]] = []  # numpy's BLAS libraries (threadpoolctl controllers), found once


def _openblas_one_thread() -> bool:
    """Whether numpy's BLAS is OpenBLAS limited to one thread (``limit_blas_threads``,
    done when MiniLM loads): then a chunk of rows gets the bits of one call over the
    whole matrix. A multi-threaded BLAS cuts the rows itself, elsewhere."""
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]  # ships no type information

            _BLAS.append([c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"])
        except Exception:  # noqa: BLE001 - no threadpoolctl, an unknown BLAS: one plain call
            _BLAS.append([])
    libs = _BLAS[0]
    try:
        return bool(libs) and all(c.internal_api == "openblas" and c.num_threads == 1 for c in libs)
    except Exception:  # noqa: BLE001 - as above
        return False


def row_dots(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` with the same bits, its rows cut into chunks of
    :data:`_CHUNK_ROWS` shared between the caller and up to 3 helper threads (numpy
    releases the GIL in ``sgemv``). A search's vector side at 100k documents reads a
    150 MB matrix: one core's memory bandwidth is its bound. The caller computes chunks
    itself until none is left and waits only for those a helper has started, so a busy
    machine (helpers not scheduled) costs no more than one thread.

    Only when numpy's BLAS is OpenBLAS on one thread (:func:`_openblas_one_thread`);
    otherwise, and for anything but a C-contiguous float32 matrix of at least two chunks
    and a float32 vector, it is one plain ``matrix @ vector``.

    :param matrix: float32 ``(n, d)``.
    :param vector: float32 ``(d,)``.
    :returns: float32 ``(n,)`` (the dtype of ``matrix @ vector`` otherwise).
    """
    if (matrix.dtype != np.float32 or vector.dtype != np.float32 or matrix.ndim != 2 or vector.ndim != 1
            or not matrix.flags.c_contiguous or len(matrix) < 2 * _CHUNK_ROWS or not _openblas_one_thread()):
        res: np.ndarray = matrix @ vector
        return res
    out = np.empty(len(matrix), dtype=np.float32)
    vec = np.ascontiguousarray(vector)
    # the last chunk takes the remainder (at least _CHUNK_ROWS rows): its tail rows are
    # the whole matrix's, handled by the same kernel as in one call
    starts = list(range(0, max(1, len(matrix) - _CHUNK_ROWS + 1), _CHUNK_ROWS)) + [len(matrix)]

    def chunk(a: int, b: int) -> Callable[[], None]:
        def dot() -> None:
            np.dot(matrix[a:b], vec, out=out[a:b])  # releases the GIL

        return dot

    run_shared([chunk(a, b) for a, b in zip(starts, starts[1:])])
    return out
