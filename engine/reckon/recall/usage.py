"""Access and feedback counts of a tenant's memories: what ranking learns from use (issue
15 item 5; seed 000 Evolving Memory: "feedback quality + access-count boost"; seed 002:
"exact duplicates increment accessCount").

Every search hit returned and every bundle item shown counts one access; a +1 / -1 vote
(``Tenant.feedback``) moves the net feedback. The counts live beside the recall index in
one SQLite file (``<tenant>/recall/usage.sqlite``, Python's ``sqlite3``: atomic,
shared by the processes of a data directory), not in the graph: a search must not be a
graph write. The file is in write-ahead-log mode with ``synchronous=NORMAL``
(https://www.sqlite.org/wal.html): recording the accesses of a read costs no ``fsync``
(a rollback-journal commit cost 25-40 ms on a busy disk, more than the bundle's whole
budget); a killed process loses nothing committed, a power loss at most the last
commits, and the file is never corrupted. The recall index reads them before it ranks
(:func:`reckon.recall.rank.access_boost`, :func:`~reckon.recall.rank.feedback_boost`),
and lifecycle maintenance (:mod:`reckon.lifecycle`) protects frequently used, well-rated
memories with them. Deleting the file forgets the counts and nothing else.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["Usage", "UsageLog"]


class Usage(tuple[int, int, str | None]):
    """``(access_count, net_feedback, last_access ISO 8601 or None)`` of one memory."""

    @property
    def access(self) -> int:
        return self[0]

    @property
    def feedback(self) -> int:
        return self[1]


class UsageLog:
    """The access and feedback counts of one tenant.

    :param path: the SQLite file (created on first write); ``None`` keeps counts in
        memory (an index without a directory).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _db(self, create: bool = True) -> sqlite3.Connection | None:
        """The connection; ``None`` when the file does not exist and ``create`` is False
        (a read never creates it; once it exists, SQLite keeps its ``-wal`` and ``-shm``
        files beside it)."""
        if self._conn is None:
            if self.path is not None:
                if not create and not self.path.exists():
                    return None
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path) if self.path is not None else ":memory:", timeout=30,
                                   check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")  # persistent in the file
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS usage (id TEXT PRIMARY KEY, access INTEGER NOT NULL DEFAULT 0, "
                         "feedback INTEGER NOT NULL DEFAULT 0, last_access TEXT)")
            self._conn = conn
        return self._conn

    def record_access(self, ids: Iterable[str], *, at: datetime | None = None) -> None:
        """One access for each id (one transaction)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return
        when = (at or datetime.now(UTC)).isoformat()
        with self._lock:
            db = self._db()
            assert db is not None
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT INTO usage (id, access, last_access) VALUES (?, 1, ?) ON CONFLICT(id) DO "
                               "UPDATE SET access = access + 1, last_access = excluded.last_access",
                               [(i, when) for i in ids])
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def feedback(self, memory_id: str, vote: int) -> int:
        """Add a +1 / -1 vote; returns the net feedback."""
        with self._lock:
            db = self._db()
            assert db is not None
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT INTO usage (id, feedback) VALUES (?, ?) ON CONFLICT(id) DO "
                           "UPDATE SET feedback = feedback + excluded.feedback", (memory_id, vote))
                row = db.execute("SELECT feedback FROM usage WHERE id = ?", (memory_id,)).fetchone()
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return int(row[0])

    def version(self) -> int:
        """Changes since this connection opened by any process (``PRAGMA data_version``
        plus this connection's own total changes): equal values, equal counts."""
        with self._lock:
            db = self._db(create=False)
            if db is None:
                return 0
            return int(db.execute("PRAGMA data_version").fetchone()[0]) * 1_000_003 + db.total_changes

    def counts(self) -> dict[str, Usage]:
        """Every memory's counts (memories never used are absent)."""
        with self._lock:
            db = self._db(create=False)
            if db is None:
                return {}
            rows = db.execute("SELECT id, access, feedback, last_access FROM usage").fetchall()
        return {r[0]: Usage((int(r[1]), int(r[2]), r[3])) for r in rows}

    def get(self, memory_id: str) -> Usage:
        with self._lock:
            db = self._db(create=False)
            r = db.execute("SELECT access, feedback, last_access FROM usage WHERE id = ?",
                           (memory_id,)).fetchone() if db is not None else None
        return Usage((int(r[0]), int(r[1]), r[2])) if r else Usage((0, 0, None))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
