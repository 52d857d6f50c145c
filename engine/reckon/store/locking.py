"""Per-tenant write serialization across threads and processes.

:class:`TenantLock` pairs a :class:`threading.RLock` (threads of this process) with
``fcntl.flock`` on the tenant's ``lock`` file (other processes). Writers take the lock
exclusively; snapshot readers take it shared. ``flock`` locks belong to an open file
description, so the thread lock is always taken first and guards every flock call.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from reckon._errors import StoreError

__all__ = ["TenantLock"]


class TenantLock:
    """Reader/writer lock on one tenant: exclusive for writers, shared for readers.

    Re-entrant in the holding thread: an exclusive holder may take it again (shared or
    exclusive) without blocking; a shared holder cannot upgrade (raises
    :class:`~reckon._errors.StoreError`, because an upgrade can deadlock).

    :param path: the lock file (created if missing; its parent must exist).
    :param timeout: seconds to wait for another process before raising
        :class:`~reckon._errors.StoreError`; ``None`` (default) blocks in ``flock`` until the
        holder releases (the kernel wakes waiters, so every process makes progress; a
        holder that dies releases its lock).
    """

    def __init__(self, path: Path, *, timeout: float | None = None) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._fd: int | None = None
        self._mode: int = 0  # 0 none, fcntl.LOCK_SH or fcntl.LOCK_EX
        self._depth = 0

    @property
    def exclusive_held(self) -> bool:
        """True when this process holds the lock exclusively (in the current thread)."""
        return self._mode == fcntl.LOCK_EX and self._depth > 0

    @contextmanager
    def hold(self, *, exclusive: bool) -> Iterator[None]:
        """Hold the lock for the ``with`` block.

        :raises StoreError: on timeout, on a shared->exclusive upgrade, or an I/O error.
        """
        self._thread_lock.acquire()
        try:
            want = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            if self._depth > 0:
                if want == fcntl.LOCK_EX and self._mode != fcntl.LOCK_EX:
                    raise StoreError(f"cannot upgrade a shared tenant lock to exclusive: {self.path}")
            else:
                self._acquire(want)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()
        finally:
            self._thread_lock.release()

    def _acquire(self, mode: int) -> None:
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            if self.timeout is None:
                fcntl.flock(self._fd, mode)
            else:
                deadline = time.monotonic() + self.timeout
                delay = 0.0005
                while True:
                    try:
                        fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
                        break
                    except OSError as e:
                        if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                            raise
                        if time.monotonic() >= deadline:
                            raise StoreError(
                                f"timed out after {self.timeout} s waiting for the tenant lock {self.path}"
                            ) from None
                        time.sleep(delay)
                        delay = min(delay * 2, 0.005)
        except StoreError:
            raise
        except OSError as e:
            raise StoreError(f"cannot lock {self.path}: {e}") from e
        self._mode = mode

    def _release(self) -> None:
        self._mode = 0
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            except OSError as e:  # pragma: no cover - the kernel does not fail LOCK_UN on a valid fd
                raise StoreError(f"cannot unlock {self.path}: {e}") from e

    def close(self) -> None:
        """Close the lock file descriptor (releases any lock this object holds)."""
        with self._thread_lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
                self._mode = 0
                self._depth = 0
