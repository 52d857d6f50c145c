"""Work shared between the calling thread and a few helper threads, for calls that
release the GIL (numpy's ``sgemv`` in :func:`reckon.recall.vectors.row_dots`, a MiniLM
forward pass in :func:`reckon.recall._minilm.encode_batched`).

The caller claims tasks one at a time and so do the helpers it offers the job to; the
caller runs tasks itself until none is left and then waits only for those a helper has
started. A busy machine (helpers not scheduled) therefore costs no more than running the
tasks on the caller alone, and no call ever waits for a thread that has not started.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence

__all__ = ["run_shared"]


class _Job:
    """One :func:`run_shared` call: its tasks, the next unclaimed one, how many run."""

    def __init__(self, tasks: Sequence[Callable[[], None]]) -> None:
        self.tasks = tasks
        self.next = 0
        self.running = 0
        self.error: BaseException | None = None
        self.cv = threading.Condition(threading.Lock())

    def run(self) -> None:
        while True:
            with self.cv:
                if self.next >= len(self.tasks) or self.error is not None:
                    return
                task = self.tasks[self.next]
                self.next += 1
                self.running += 1
            try:
                task()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                self.error = exc
            finally:
                with self.cv:
                    self.running -= 1
                    self.cv.notify_all()

    def finish(self) -> None:
        self.run()
        with self.cv:
            while self.running:
                self.cv.wait()
        if self.error is not None:
            raise self.error


class _Helpers:
    """Daemon threads that take part in :func:`run_shared` (restarted after a fork)."""

    def __init__(self) -> None:
        self.pid = -1
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.count = 0
        self.mu = threading.Lock()

    def offer(self, job: _Job, most: int) -> None:
        with self.mu:
            if self.pid != os.getpid():
                self.pid = os.getpid()
                self.jobs = queue.SimpleQueue()
                self.count = 0
                for k in range(helper_threads()):
                    try:
                        threading.Thread(target=self._loop, args=(self.jobs,), name=f"reckon-helper-{k}",
                                         daemon=True).start()
                    except RuntimeError:  # the interpreter is shutting down: the caller runs the rest
                        break
                    self.count += 1
            jobs, count = self.jobs, self.count
        for _ in range(min(count, most)):
            jobs.put(job)

    @staticmethod
    def _loop(jobs: queue.SimpleQueue[_Job]) -> None:
        while True:
            jobs.get().run()


_HELPERS = _Helpers()


def helper_threads() -> int:
    """``$RECKON_DOT_THREADS`` (default: the cores this process may run on, at most 4)
    minus the caller's own; 0 = the caller alone."""
    try:
        n = int(os.environ.get("RECKON_DOT_THREADS", "0"))
    except ValueError:
        n = 0
    if n <= 0:
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n = os.cpu_count() or 1
        n = min(n, 4)
    return max(0, n - 1)


def run_shared(tasks: Sequence[Callable[[], None]], helpers: int | None = None) -> None:
    """Run every task, on the calling thread and up to ``helpers`` helper threads
    (default and at most: :func:`helper_threads`, and never more than ``len(tasks) - 1``).

    :raises BaseException: the first exception a task raised (the tasks not yet claimed
        then do not run).
    """
    job = _Job(tasks)
    most = len(tasks) - 1 if helpers is None else min(helpers, len(tasks) - 1)
    if most > 0:
        _HELPERS.offer(job, most)
    job.finish()
