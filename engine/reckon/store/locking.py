"""Per-tenant serialization across threads and processes, with lingering.

:class:`TenantLock` pairs a :class:`threading.RLock` (one operation at a time in this
process) with ``fcntl.flock`` on the tenant's ``lock`` file (other processes): writers
hold it exclusively, snapshot readers shared.

Opening the on-disk store costs 30-150 ms on this machine (RocksDB writes and syncs a
new MANIFEST / OPTIONS file on every open), so after an operation the process may keep
("linger on") its flock -- and the store open -- for up to ``linger`` seconds, as long
as no other process is waiting. Waiting is announced on a second file, ``lock.wait``:
a process takes ``LOCK_SH`` on it before it blocks on ``lock`` and drops it once it has
the lock. The holder probes ``lock.wait`` with a non-blocking ``LOCK_EX``: if that fails
someone is waiting and the holder lets go -- at the end of an operation once
``min_hold`` seconds have passed since its first operation under this lock ended, and from a background thread as soon as it has been
idle for ``poll`` seconds. A busy writer therefore hands over after a burst of at most
about ``min_hold`` seconds (amortizing the store open over many writes), an idle one
within ``poll`` seconds; waiters queue in the kernel, so every process makes progress.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reckon._errors import StoreError, TenantClosed

__all__ = ["TenantLock"]

_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)


class TenantLock:
    """Reader/writer lock on one tenant (see the module docstring).

    Re-entrant in the operating thread: inside an exclusive hold, shared and exclusive
    holds nest freely; inside a shared hold an exclusive one raises
    :class:`~reckon._errors.StoreError` (an upgrade could deadlock).

    :param path: the lock file (created if missing; its parent must exist).
    :param timeout: seconds to wait for another process before raising StoreError;
        ``None`` waits as long as it takes (a holder that dies releases its lock).
    :param linger: seconds an idle process keeps its flock while nobody waits (0: release
        at the end of every operation).
    :param poll: seconds between waiter probes while lingering.
    :param min_hold: seconds a busy holder keeps the lock before yielding to a waiter,
        counted from the end of its first operation (which paid for opening the store).
    :param on_release: called (under the thread lock) just before the flock is dropped,
        e.g. to close the read-write store.
    :param on_acquire: called with the locked file descriptor right after the flock is
        taken (not when a lingering hold is reused), e.g. to check that the tenant
        directory is still the one this lock belongs to; if it raises, the flock is
        dropped and the exception propagates.
    """

    def __init__(
        self,
        path: Path,
        *,
        timeout: float | None = None,
        linger: float = 1.0,
        poll: float = 0.005,
        min_hold: float = 0.1,
        on_release: Callable[[], None] | None = None,
        on_acquire: Callable[[int], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.wait_path = self.path.with_name(self.path.name + ".wait")
        self.timeout = timeout
        self.linger = linger
        self.poll = poll
        self.min_hold = min_hold
        self._first_done: float | None = None
        self.on_release = on_release
        self.on_acquire = on_acquire
        self._mutex = threading.RLock()
        self._fd: int | None = None
        self._wfd: int | None = None
        self._mode = 0  # flock mode this process holds: 0, LOCK_SH or LOCK_EX
        self._depth = 0
        self._idle_since = 0.0
        self._reaper: threading.Thread | None = None
        self._closed = False

    # ------------------------------------------------------------------ state
    @property
    def mode(self) -> str:
        """``"none"``, ``"shared"`` or ``"exclusive"``: what this process holds now."""
        return {0: "none", fcntl.LOCK_SH: "shared", fcntl.LOCK_EX: "exclusive"}[self._mode]

    # ------------------------------------------------------------------ holding
    @contextmanager
    def hold(self, *, exclusive: bool) -> Iterator[None]:
        """Hold the lock for the ``with`` block.

        :raises StoreError: on timeout, on a shared->exclusive upgrade inside a shared
            hold, or on an I/O error.
        """
        with self._mutex:
            if self._closed:
                name = self.path.parent.name
                raise TenantClosed(f"tenant {name!r} is closed: this Tenant object was closed (Tenant.close() or "
                                   f"Engine.close()); engine.tenant({name!r}) opens it again")
            want = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            if self._depth > 0:
                if want == fcntl.LOCK_EX and self._mode != fcntl.LOCK_EX:
                    raise StoreError(f"cannot upgrade a shared tenant lock to exclusive: {self.path}")
            elif self._mode == 0 or (want == fcntl.LOCK_EX and self._mode == fcntl.LOCK_SH):
                if self._mode:
                    self._release()
                self._acquire(want)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    now = time.monotonic()
                    if self._first_done is None:
                        self._first_done = now
                    held = now - self._first_done
                    if self.linger <= 0 or (held >= self.min_hold and self._waiters()):
                        self._release()
                    else:
                        self._idle_since = time.monotonic()
                        self._start_reaper()

    def releases_after_hold(self) -> bool:
        """True inside an outermost hold of a lock that does not linger: the flock goes
        when this hold ends."""
        return self._depth == 1 and self.linger <= 0

    def release(self) -> None:
        """Drop a lingering flock now (no-op inside an operation or when not held)."""
        with self._mutex:
            if self._depth == 0 and self._mode:
                self._release()

    def close(self) -> None:
        """Release and close the lock files."""
        with self._mutex:
            if self._mode:
                self._release()
            for fd in (self._fd, self._wfd):
                if fd is not None:
                    os.close(fd)
            self._fd = self._wfd = None
            self._closed = True

    def close_files(self) -> None:
        """Release and close the lock files, leaving the lock usable: the next hold
        reopens them (an idle tenant then costs no file descriptor)."""
        with self._mutex:
            if self._depth:
                return
            if self._mode:
                self._release()
            for fd in (self._fd, self._wfd):
                if fd is not None:
                    os.close(fd)
            self._fd = self._wfd = None

    def __del__(self) -> None:
        # A lock object nobody can reach any more (its TenantStore was dropped without
        # close()) must not keep its two file descriptors: a process that opens many
        # tenants would run out of them (and select() refuses fds past 1024).
        for fd in (getattr(self, "_fd", None), getattr(self, "_wfd", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except Exception:  # noqa: BLE001 - interpreter shutdown, already closed
                    pass

    # ------------------------------------------------------------------ internals
    def _open(self) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        if self._fd is None:
            self._fd = os.open(self.path, flags, 0o600)
        if self._wfd is None:
            self._wfd = os.open(self.wait_path, flags, 0o600)

    def _acquire(self, mode: int) -> None:
        try:
            self._open()
            assert self._fd is not None and self._wfd is not None
            try:
                fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in _BUSY:
                    raise
                # announce that we wait, then block (or poll until the timeout)
                fcntl.flock(self._wfd, fcntl.LOCK_SH)
                try:
                    self._wait_for(mode)
                finally:
                    fcntl.flock(self._wfd, fcntl.LOCK_UN)
        except StoreError:
            raise
        except OSError as e:
            raise StoreError(f"cannot lock {self.path}: {e}") from e
        if self.on_acquire is not None:
            try:
                self.on_acquire(self._fd)
            except BaseException:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                raise
        self._mode = mode
        self._first_done = None

    def _wait_for(self, mode: int) -> None:
        assert self._fd is not None
        if self.timeout is None:
            fcntl.flock(self._fd, mode)
            return
        deadline = time.monotonic() + self.timeout
        delay = 0.0005
        while True:
            try:
                fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
                return
            except OSError as e:
                if e.errno not in _BUSY:
                    raise
            if time.monotonic() >= deadline:
                raise StoreError(f"timed out after {self.timeout} s waiting for the tenant lock {self.path}")
            time.sleep(delay)
            delay = min(delay * 2, 0.005)

    def _waiters(self) -> bool:
        """True when another process announced that it waits for the lock."""
        if self._wfd is None:
            return False
        try:
            fcntl.flock(self._wfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in _BUSY:
                return True
            raise StoreError(f"cannot probe {self.wait_path}: {e}") from e
        fcntl.flock(self._wfd, fcntl.LOCK_UN)
        return False

    def _release(self) -> None:
        try:
            if self.on_release is not None:
                self.on_release()
        finally:
            self._mode = 0
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _start_reaper(self) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return
        t = threading.Thread(target=self._reap, name=f"reckon-lock-{self.path.parent.name}", daemon=True)
        self._reaper = t
        t.start()

    def _reap(self) -> None:
        while True:
            time.sleep(self.poll)
            if not self._mutex.acquire(blocking=False):
                continue  # an operation is running; it decides at its end
            try:
                if self._mode == 0 or self._closed:
                    self._reaper = None
                    return
                idle = time.monotonic() - self._idle_since
                if self._depth == 0 and (idle >= self.linger or (idle >= self.poll and self._waiters())):
                    self._release()
                    self._reaper = None
                    return
            finally:
                self._mutex.release()
