"""Evaluate untrusted read-only queries in worker processes: a deadline that frees the
core, a crash that takes down one worker and not the server, and no network.

Why processes: pyoxigraph evaluates a query in native code that a Python thread cannot
interrupt (a 4-pattern cartesian ``COUNT(*)`` runs until it is done), its parser and
evaluator recurse over the query (a deep enough text overflows the stack: SIGSEGV), and
``SERVICE`` makes HTTP requests with pyoxigraph's own client, which nothing turns off.
A worker (``python -m reckon.store._query_worker``) therefore

* installs a seccomp filter denying Internet sockets before it imports pyoxigraph
  (:mod:`reckon.store._sandbox`): whatever the lexer of
  :mod:`reckon.store.query_guard` decided, no request can leave the worker;
* is killed when its resident memory passes :attr:`QueryLimits.max_memory_bytes`
  (checked every 50 ms while it evaluates; ``RLIMIT_AS`` 4 GiB above that is the
  backstop) and evaluates on a 256 MiB-stack thread;
* keeps in-memory mirrors of the tenants it served (at most 8) and brings one up to
  date with the update texts of the commits it missed, which the calling process hands
  over with the request (:meth:`TenantStore.sync_texts`), or else by reading the store
  under the tenant's shared lock (released before evaluation: a long query never
  blocks a writer); for a tenant on a SPARQL server (:mod:`reckon.store.remote`), which
  the worker cannot reach, the caller hands over its whole mirror as N-Quads instead;
* stops at :attr:`QueryLimits.max_rows` / ``max_result_bytes`` while it reads the
  result and sends back SPARQL JSON results (SELECT), N-Triples (CONSTRUCT / DESCRIBE)
  or a boolean (ASK): data, never pickles.

The caller waits at most :attr:`QueryLimits.timeout` seconds; then the worker is killed
(``SIGKILL``: the core is free at once) and replaced at the next query. Measured on
this machine (2 cores, pyoxigraph 0.5.13): a worker starts in ~0.15 s (once per engine
and after each kill); a point query costs ~0.3-0.6 ms more than in-process evaluation
(two pipe messages and a JSON decode); see ``bench/query_pool.py``.

Wire protocol (stdin / stdout of the worker): frames of ``>II`` (header length, body
length), a JSON header, then the body bytes.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from reckon._errors import (
    InvalidInput,
    QueryLimitExceeded,
    ReadOnlyQuery,
    StoreError,
    TenantGone,
)
from reckon.store.query_guard import QueryLimits, QueryPlan

__all__ = ["QueryOutcome", "QueryPool"]

_HEADER_SIZE = 8
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MEMORY_POLL = 0.05
"""Seconds between checks of a busy worker's resident memory."""


class _OverMemory(Exception):
    def __init__(self, rss: int) -> None:
        self.rss = rss


@dataclass(frozen=True)
class QueryOutcome:
    """A query's result as the worker sent it.

    :ivar form: ``"select"``, ``"ask"`` or ``"graph"`` (CONSTRUCT / DESCRIBE).
    :ivar variables: projected variable names (SELECT), in order.
    :ivar boolean: the ASK answer.
    :ivar body: SPARQL 1.1 Query Results JSON (SELECT) or N-Triples (graph) bytes.
    """

    form: str
    variables: tuple[str, ...] = ()
    boolean: bool = False
    body: bytes = b""

    def to_python(self) -> Any:
        """SELECT: list of dicts (variable -> pyoxigraph term, unbound absent); ASK:
        bool; CONSTRUCT / DESCRIBE: list of ``Triple``."""
        from pyoxigraph import (
            QueryResultsFormat,
            QuerySolutions,
            RdfFormat,
            Triple,
            parse,
            parse_query_results,
        )

        if self.form == "ask":
            return self.boolean
        if self.form == "graph":
            return [Triple(q.subject, q.predicate, q.object) for q in parse(self.body, format=RdfFormat.N_TRIPLES)]
        rows = []
        names = list(self.variables)
        parsed = parse_query_results(self.body, format=QueryResultsFormat.JSON)
        assert isinstance(parsed, QuerySolutions)
        for sol in parsed:
            row = {}
            for n in names:
                t = sol[n]
                if t is not None:
                    row[n] = t
            rows.append(row)
        return rows


class _Proc:
    def __init__(self, limits: QueryLimits) -> None:
        env = dict(os.environ)
        env["RUST_BACKTRACE"] = "0"  # an aborted query prints one line, not a backtrace
        if limits.max_memory_bytes is not None:
            # the hard backstop on address space: generous, because reserved but unused
            # address space (thread stacks, malloc arenas, RocksDB) is ~1 GiB at rest;
            # resident memory is watched by the caller at max_memory_bytes
            env["RECKON_QUERY_WORKER_MAX_MEMORY"] = str(limits.max_memory_bytes + (4 << 30))
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "reckon.store._query_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env, close_fds=True,
        )
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.stdin = self.popen.stdin
        self.fd = self.popen.stdout.fileno()
        self.gens: dict[tuple[str, str], int] = {}  # (tenant path, incarnation) -> mirror generation
        self.max_rss = limits.max_memory_bytes
        self.hello: dict[str, Any] | None = None

    def kill(self) -> None:
        try:
            self.popen.kill()
        except OSError:
            pass
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        for f in (self.popen.stdin, self.popen.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass

    def send(self, header: dict[str, Any], body: bytes = b"") -> None:
        h = json.dumps(header).encode()
        self.stdin.write(len(h).to_bytes(4, "big") + len(body).to_bytes(4, "big") + h + body)
        self.stdin.flush()

    def rss(self) -> int | None:
        """Resident memory of the worker, bytes (``/proc/<pid>/statm``), or None."""
        try:
            with open(f"/proc/{self.popen.pid}/statm", "rb") as f:
                return int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            return None

    def read_exact(self, n: int, deadline: float | None) -> bytes:
        chunks: list[bytes] = []
        got = 0
        while got < n:
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError
                wait = _MEMORY_POLL if left is None else min(left, _MEMORY_POLL)
                # poll, not select: select() refuses a descriptor >= FD_SETSIZE (1024),
                # which a process with many tenants (or many engines) open reaches
                poller = select.poll()
                poller.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
                ready = poller.poll(max(0.0, wait) * 1000.0)
                if ready:
                    break
                if self.max_rss is not None:
                    rss = self.rss()
                    if rss is not None and rss > self.max_rss:
                        raise _OverMemory(rss)
            chunk = os.read(self.fd, min(n - got, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def receive(self, deadline: float | None) -> tuple[dict[str, Any], bytes]:
        raw = self.read_exact(_HEADER_SIZE, deadline)
        hl, bl = int.from_bytes(raw[:4], "big"), int.from_bytes(raw[4:], "big")
        header = json.loads(self.read_exact(hl, deadline))
        body = self.read_exact(bl, deadline) if bl else b""
        return header, body


class QueryPool:
    """Worker processes evaluating read-only queries under :class:`QueryLimits`.

    Thread-safe; workers start on first use (:meth:`start` starts them now).

    :param limits: the limits; ``limits.workers`` processes at most.
    """

    def __init__(self, limits: QueryLimits | None = None) -> None:
        self.limits = limits or QueryLimits()
        self._idle: list[_Proc] = []
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self.sandboxed: bool | None = None
        """Whether the last started worker denied itself Internet sockets (``None``
        before the first start)."""
        self.kills = 0
        """Workers killed at their deadline or found dead, since creation."""
        _POOLS.add(self)
        # a pool that is garbage-collected (its engine is gone) stops its idle workers
        self._finalizer = weakref.finalize(self, _kill_all, self._idle)

    # ------------------------------------------------------------------ workers
    def start(self) -> None:
        """Start every worker now (a server does this at start-up)."""
        procs = []
        for _ in range(self.limits.workers):
            try:
                procs.append(self._checkout(None))
            except QueryLimitExceeded:
                break
        for p in procs:
            self._checkin(p)

    def _spawn(self) -> _Proc:
        p = _Proc(self.limits)
        try:
            header, _ = p.receive(time.monotonic() + 60)
        except (TimeoutError, EOFError, ValueError) as e:
            p.kill()
            raise StoreError(f"cannot start a query worker process: {type(e).__name__}") from e
        p.hello = header
        self.sandboxed = bool(header.get("sandboxed"))
        if not self.sandboxed:
            import logging

            logging.getLogger("reckon.store").warning(
                "query worker runs without its network sandbox (%s); SERVICE is still refused by the query check",
                header.get("why_not"))
        return p

    def _checkout(self, deadline: float | None) -> _Proc:
        with self._cond:
            while True:
                if self._closed:
                    raise StoreError("the query pool is closed")
                while self._idle:
                    p = self._idle.pop()
                    if p.popen.poll() is None:
                        return p
                    p.kill()  # died while idle (killed from outside): replace it
                    self._count -= 1
                if self._count < self.limits.workers:
                    self._count += 1
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise QueryLimitExceeded(
                        f"no query worker became free within {self.limits.timeout} s (all "
                        f"{self.limits.workers} are busy); try again later",
                        limit="busy", value=self.limits.workers,
                    )
                self._cond.wait(left)
        try:
            return self._spawn()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _checkin(self, p: _Proc | None) -> None:
        with self._cond:
            if p is None or self._closed:
                self._count -= 1
                if p is not None:
                    p.kill()
            else:
                self._idle.append(p)
            self._cond.notify()

    def close(self) -> None:
        """Stop every worker (idle ones now, busy ones when their query ends)."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for p in idle:
            p.kill()

    # ------------------------------------------------------------------ queries
    def run(self, store: Any, plan: QueryPlan, *, union: bool = True) -> QueryOutcome:
        """Evaluate ``plan`` (from :func:`~reckon.store.query_guard.inspect_query`) on the
        committed state of ``store`` (a :class:`~reckon.store.TenantStore`) in a worker.

        :raises QueryLimitExceeded: at the deadline (the worker is killed), over the
            row / byte limits, when no worker is free in time, or when the worker died
            (memory or stack exhausted: ``limit="resources"``).
        :raises InvalidInput: when the query does not parse or fails.
        :raises TenantGone: when the tenant was deleted.
        """
        limits = self.limits
        start = time.monotonic()
        deadline = None if limits.timeout is None else start + limits.timeout
        key = (str(store.path), store.incarnation)
        p = self._checkout(deadline)
        try:
            since = p.gens.get(key)
            target, texts = store.sync_texts(since)
            body = b""
            if texts is None and store.backend.kind != "embedded":
                # the worker cannot reach the server (no Internet sockets): it is handed
                # this process's mirror, an exact copy of the tenant's graphs
                target, body = store.mirror_nquads()
            req = {
                "op": "query", "path": key[0], "incarnation": key[1], "text": plan.text, "form": plan.form,
                "from_graphs": list(plan.from_graphs), "from_named": list(plan.from_named),
                "has_dataset": plan.has_dataset, "union": union, "since": since, "texts": texts,
                "target": target, "max_rows": limits.max_rows, "max_result_bytes": limits.max_result_bytes,
                "mirror": bool(body),
            }
            try:
                p.send(req, body)
                header, body = p.receive(deadline)
            except _OverMemory as exc:
                self.kills += 1
                p.kill()
                p = None  # type: ignore[assignment]
                raise QueryLimitExceeded(
                    f"the query needed more than {limits.max_memory_bytes} bytes of memory (its worker reached "
                    f"{exc.rss} bytes) and was stopped", limit="resources", value=limits.max_memory_bytes,
                ) from None
            except TimeoutError:
                self.kills += 1
                p.kill()
                p = None  # type: ignore[assignment]
                raise QueryLimitExceeded(
                    f"the query ran longer than {limits.timeout} s and was cancelled (add LIMIT, or make it "
                    "more selective)", limit="deadline", value=limits.timeout,
                ) from None
            except (EOFError, BrokenPipeError, OSError, ValueError):
                self.kills += 1
                rc = p.popen.poll()
                p.kill()
                p = None  # type: ignore[assignment]
                how = f"signal {signal.Signals(-rc).name}" if rc is not None and rc < 0 else f"exit {rc}"
                raise QueryLimitExceeded(
                    f"the query exhausted the evaluator's resources (memory or stack) and was stopped ({how})",
                    limit="resources", value=limits.max_memory_bytes,
                ) from None
            if header.get("gen") is not None:
                p.gens[key] = int(header["gen"])
        finally:
            self._checkin(p)
        if not header.get("ok"):
            raise _error_from(header)
        return QueryOutcome(form=header["form"], variables=tuple(header.get("vars") or ()),
                            boolean=bool(header.get("boolean")), body=body)


def _error_from(h: dict[str, Any]) -> Exception:
    name, msg = h.get("error"), str(h.get("message"))
    if name == "QueryLimitExceeded":
        return QueryLimitExceeded(msg, limit=str(h.get("limit")), value=h.get("value"))
    if name in ("InvalidInput",):
        return InvalidInput(msg, field="query")
    if name == "ReadOnlyQuery":
        return ReadOnlyQuery(msg)
    if name in ("TenantGone", "UnknownTenant"):
        return TenantGone(msg)
    return StoreError(msg)


def _kill_all(procs: list[_Proc]) -> None:
    while procs:
        procs.pop().kill()


_POOLS: weakref.WeakSet[QueryPool] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:  # pragma: no cover - interpreter exit
    for pool in list(_POOLS):
        pool.close()
