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
from collections.abc import Collection, Iterable
from pathlib import Path

import numpy as np

__all__ = ["MAGIC", "MemoryVectors", "VectorFile", "text_key"]

log = logging.getLogger("reckon.recall")

MAGIC = b"RKV1"


def text_key(embedder: str, text: str) -> bytes:
    """16-byte key of ``text`` as embedded by the embedder named ``embedder``."""
    return hashlib.blake2b(embedder.encode() + b"\0" + text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _checksums(body: np.ndarray) -> np.ndarray:
    """uint32 check of each row of ``body`` (uint32 words ``(records, m)``)."""
    w = body.astype(np.uint64)
    i = np.arange(1, body.shape[1] + 1, dtype=np.uint64)
    s1 = w.sum(axis=1) & 0xFFFFFFFF
    s2 = (w * i).sum(axis=1) & 0xFFFFFFFF
    return ((s1 + (s2 << np.uint64(16))) & 0xFFFFFFFF).astype(np.uint32)  # type: ignore[no-any-return]


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
                with open(self.path, "rb") as f:
                    f.seek(self._offset)
                    data = f.read(whole - self._offset)
            except OSError as exc:
                log.warning("cannot read %s: %s", self.path, exc)
                return 0
            count = len(data) // self._rec
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
                keys = recs["key"][good]
                vecs = recs["vec"][good]
                need = self._n + len(good)
                if need > len(self._mat):
                    grown = np.zeros((max(need, 2 * len(self._mat), 64), self.dim), dtype=np.float32)
                    grown[: self._n] = self._mat[: self._n]
                    self._mat = grown
                for k, v in zip(keys.tolist(), vecs):
                    if k not in self._rows:
                        self._rows[k] = self._n
                        self._mat[self._n] = v
                        self._n += 1
                        new += 1
            self._offset += stop * self._rec
            return new

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

    def add(self, pairs: Iterable[tuple[bytes, np.ndarray]]) -> int:
        """Keep the vectors whose key is not known yet; returns how many were new."""
        n = 0
        with self._mu:
            for k, v in pairs:
                if k not in self._d:
                    self._d[k] = np.asarray(v, dtype=np.float32).reshape(self.dim)
                    n += 1
        return n
