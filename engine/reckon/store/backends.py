"""Where a tenant's quads live, beneath :class:`~reckon.store.TenantStore`.

:class:`TenantStore` keeps what is the same for every backend -- the in-memory mirror,
the reasoner, the pending transaction, canonical terms, incarnations -- and asks its
:class:`StoreBackend` for the five things that differ (DESIGN.md, "The store"):

1. **writer** -- :meth:`StoreBackend.open_writer` / :meth:`~StoreBackend.close_writer`,
   called while this process holds the tenant's exclusive local lock. The embedded
   backend opens the read-write RocksDB store (one per path in any process); the remote
   backend (:mod:`reckon.store.remote`) takes the tenant's write lease in the server,
   so one Reckon node at a time writes a tenant.
2. **head** -- the committed generation and incarnation (:meth:`~StoreBackend.head`,
   :meth:`~StoreBackend.hint`).
3. **load** -- every stored quad of the tenant in its logical graphs (the mirror load).
4. **commit** -- ONE atomic, generation-conditional write (:meth:`~StoreBackend.commit`).
5. **journal** -- the update texts of recent commits, so that a mirror that is behind
   replays them instead of loading the whole store (:meth:`~StoreBackend.journal`).

Quads cross this interface in *logical* graph names (:mod:`reckon.store.graphs`); a
backend that shares one server between tenants maps them to the tenant's own graph
IRIs and back, and is the only code that knows those IRIs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from pyoxigraph import Quad, Store

from reckon._errors import StoreError
from reckon.store.graphs import GENERATION, INCARNATION, META, STORE_NODE

__all__ = ["BackendGone", "EmbeddedBackend", "StoreBackend", "WriteConflict"]

BlockWriter = Callable[[Iterable[Quad]], str]
"""``quads -> "GRAPH <g> { s p o . ... } ..."`` (:func:`reckon.store.sparql.quads_to_data_block`)."""


class BackendGone(StoreError):
    """The tenant's data is no longer where this store object found it (deleted,
    re-created under another incarnation, or moved to another endpoint)."""


class WriteConflict(StoreError):
    """A conditional commit found another generation or another lease holder: another
    node wrote (or took the lease) in between. Nothing of this commit was written."""


class StoreBackend(Protocol):
    """What :class:`~reckon.store.TenantStore` needs of the place its quads live.

    Every method is called by one thread at a time per store object, under the
    tenant's local lock (shared for reads, exclusive for the writer methods).
    """

    kind: str
    """``"embedded"`` or ``"sparql"``."""

    def open_writer(self) -> bool:
        """Become the tenant's single writer (idempotent); True when newly opened."""
        ...

    def close_writer(self) -> None:
        """Stop being the writer (the lease / read-write handle is given up)."""
        ...

    def head(self, *, writer: bool) -> tuple[int, str | None]:
        """``(generation, incarnation)`` as committed (``writer=True``: through the
        writer handle). :raises BackendGone: when the tenant's data is gone."""
        ...

    def hint(self) -> int | None:
        """The committed generation, cheaply (``None``: unknown, load in full)."""
        ...

    def load(self, *, writer: bool) -> tuple[int, str | None, list[Quad]]:
        """``(generation, incarnation, quads)``: one consistent read of every quad the
        mirror holds (logical graph names, including META's generation and
        incarnation)."""
        ...

    def commit(
        self, gen: int, new_gen: int, delete: Sequence[Quad], insert: Sequence[Quad], text: str,
        block: BlockWriter, *, release: bool = False,
    ) -> None:
        """Write ``delete`` / ``insert`` (logical quads, META's generation ``gen`` among
        the deleted and ``new_gen`` among the inserted) atomically, only if the stored
        generation is still ``gen``; ``text`` is the same change as SPARQL Update text in
        logical graph names (the journal record). ``release``: the caller gives up the
        writer right after (its lock is released); a backend may fold that into the
        commit (the remote one sends the lease release in the commit's request).

        :raises WriteConflict: the stored generation moved (nothing written).
        :raises StoreError: the write failed (nothing written).
        """
        ...

    def journal(self, first: int, last: int) -> list[str] | None:
        """Update texts of generations ``first..last`` in order, or None if one is missing."""
        ...

    def reset_journal(self) -> None:
        """Start a fresh journal (a reader found a gap)."""
        ...

    def close(self) -> None:
        """Give up every handle (file descriptors, connections); usable again after."""
        ...


# ------------------------------------------------------------------------ embedded
class EmbeddedBackend:
    """The tenant's on-disk pyoxigraph (RocksDB) store at ``<tenant>/store/``, with the
    ``journal`` and ``generation`` hint files beside it (see :mod:`reckon.store.tenant_store`)."""

    kind = "embedded"

    def __init__(self, path: Path, tenant_id: str) -> None:
        self.path = Path(path)
        self.tenant_id = tenant_id
        self._rw: Store | None = None

    @staticmethod
    def create_at(tmp: Path, quads: Sequence[Quad]) -> None:
        """Write ``quads`` (logical graphs, META included) into a new store at ``tmp/store``."""
        store = Store(str(tmp / "store"))
        store.extend(list(quads))
        del store  # closes RocksDB (the write-ahead log already holds the data)
        gen = next((int(q.object.value) for q in quads if q.predicate == GENERATION), 1)  # type: ignore[union-attr]
        (tmp / "generation").write_text(str(gen))

    def open_writer(self) -> bool:
        if self._rw is not None:
            return False
        try:
            self._rw = Store(str(self.path / "store"))
        except OSError as e:
            raise StoreError(f"cannot open the store of tenant {self.tenant_id!r}: {e}") from e
        return True

    def close_writer(self) -> None:
        self._rw = None  # the last reference: RocksDB closes and unlocks the store now

    def head(self, *, writer: bool) -> tuple[int, str | None]:
        assert writer and self._rw is not None
        return gen_of(self._rw), incarnation_of(self._rw)

    def hint(self) -> int | None:
        return read_hint(self.path)

    def load(self, *, writer: bool) -> tuple[int, str | None, list[Quad]]:
        if writer:
            assert self._rw is not None
            return gen_of(self._rw), incarnation_of(self._rw), list(self._rw)
        try:
            ro = Store.read_only(str(self.path / "store"))
        except OSError as e:
            raise StoreError(f"cannot open the store of tenant {self.tenant_id!r}: {e}") from e
        try:
            return gen_of(ro), incarnation_of(ro), list(ro)
        finally:
            del ro

    def commit(
        self, gen: int, new_gen: int, delete: Sequence[Quad], insert: Sequence[Quad], text: str,
        block: BlockWriter, *, release: bool = False,
    ) -> None:
        # the flock makes this process the only writer: the generation cannot have moved
        assert self._rw is not None
        try:
            self._rw.update(text)
        except (OSError, SyntaxError) as e:
            raise StoreError(f"write to tenant {self.tenant_id!r} failed: {e}") from e
        append_journal(self.path, new_gen, text)
        write_hint(self.path, new_gen)

    def journal(self, first: int, last: int) -> list[str] | None:
        return read_journal(self.path, first, last)

    def reset_journal(self) -> None:
        try:
            os.truncate(self.path / "journal", 0)
        except OSError:
            pass

    def close(self) -> None:
        self._rw = None


# ------------------------------------------------------------------------ helpers
def gen_of(store: Store) -> int:
    for q in store.quads_for_pattern(STORE_NODE, GENERATION, None, META):
        return int(q.object.value)  # type: ignore[union-attr]
    raise StoreError("tenant store has no generation counter (not a Reckon tenant store?)")


def incarnation_of(store: Store) -> str | None:
    for q in store.quads_for_pattern(STORE_NODE, INCARNATION, None, META):
        return str(q.object.value)  # type: ignore[union-attr]
    return None


JOURNAL_MAX_BYTES = 8 << 20
"""The journal is emptied when it would grow past this; readers then reload in full."""


def append_journal(path: Path, gen: int, text: str) -> None:
    """Append ``gen``'s update text to ``<tenant>/journal`` (under the exclusive lock,
    after the store committed). Records: ``b"%020d %020d\\n" % (gen, n)`` then ``n`` bytes.
    A missing or torn record only makes readers reload the whole store."""
    data = text.encode()
    record = f"{gen:020d} {len(data):020d}\n".encode() + data
    try:
        fd = os.open(path / "journal", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size + len(record) > JOURNAL_MAX_BYTES:
                os.ftruncate(fd, 0)
                size = 0
            os.pwrite(fd, record, size)
        finally:
            os.close(fd)
    except OSError:
        pass


def read_journal(path: Path, first: int, last: int) -> list[str] | None:
    """Update texts of generations ``first..last`` in order, or None if one is missing."""
    try:
        data = (path / "journal").read_bytes()
    except OSError:
        return None
    found: dict[int, str] = {}
    i = 0
    while i + 42 <= len(data):
        try:
            gen = int(data[i:i + 20])
            n = int(data[i + 21:i + 41])
        except ValueError:
            break
        body = data[i + 42:i + 42 + n]
        if len(body) != n or data[i + 41:i + 42] != b"\n":
            break
        if first <= gen <= last:
            found[gen] = body.decode()
        i += 42 + n
    if any(g not in found for g in range(first, last + 1)):
        return None
    return [found[g] for g in range(first, last + 1)]


def read_hint(path: Path) -> int | None:
    try:
        return int((path / "generation").read_text().strip())
    except (OSError, ValueError):
        return None


def write_hint(path: Path, gen: int) -> None:
    """Overwrite the hint in place (fixed width, no rename: a rename costs ~5 ms under
    load). Called under the exclusive lock, so no reader sees a half-written hint; a
    crash mid-write leaves text that does not parse, which readers treat as "reload"."""
    try:
        fd = os.open(path / "generation", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.pwrite(fd, f"{gen:020d}\n".encode(), 0)
        finally:
            os.close(fd)
    except OSError:  # a stale hint only costs readers a reload
        pass
