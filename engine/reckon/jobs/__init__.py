"""Background extraction on a durable job queue: huey (https://huey.readthedocs.io).

**Why huey.** Extraction must run off the reply's path, survive a restart, retry with
backoff, and need nothing but the data directory on one machine. huey (maintained since
2011, no dependencies) has an embedded SQLite broker (``SqliteHuey``: one file, no server
to start), task retries with exponential backoff, periodic tasks for the idle sweep, and
the same task code runs on Redis (``RedisHuey``) or PostgreSQL (``PostgresHuey``) with
several workers on several machines when users outgrow one. (procrastinate needs
PostgreSQL, dramatiq and rq need Redis or RabbitMQ, taskiq has no durable embedded
broker, persist-queue is a queue without workers, retries or schedules.)

Broker: ``RECKON_JOBS_URL`` -- ``sqlite:///PATH`` (default ``DATA_DIR/jobs/huey.db``),
``redis://HOST:PORT/DB`` or ``postgresql://...``; ``off`` disables queueing.

Jobs (task names are stable):

* ``reckon.extract(data_dir, tenant, conversation)`` -- one extraction run
  (:func:`reckon.capture.extract.extract_conversation`). Queued by
  :meth:`Jobs.turns_recorded` once a conversation has ``RECKON_EXTRACT_EVERY`` (default 6)
  unprocessed turns, never on the ``record_turn`` path itself. Retries: 5, after 2, 4, 8,
  16, 32 s (a 429 waits the server's ``Retry-After``); an error that re-running cannot fix
  (HTTP 400, a broken extractor) is not retried and stays listed as failed until
  ``reckon jobs retry``.
* ``reckon.maintain(data_dir, tenant, dry_run)`` -- lifecycle maintenance of one tenant
  (:func:`reckon.lifecycle.maintain`); queued by ``reckon maintain --queue`` and, for
  every tenant, by the periodic ``reckon.maintain-daily`` at 03:00 UTC. Idempotent: a
  run lost with a killed worker is simply the next day's run.
* ``reckon.sweep(data_dir)`` -- every minute, and once when a worker starts: queues
  extraction for every conversation with unprocessed turns that is idle for
  ``RECKON_EXTRACT_IDLE`` seconds (default 300) or has ``RECKON_EXTRACT_EVERY`` of them.

Exactly once: huey hands a task to one worker and forgets it (a worker killed mid-job
loses the task), so durability comes from the store: the watermark
(``ag:extractedThrough``) commits in the same transaction as the memories, and the sweep
at start re-queues every conversation whose tail is unprocessed. A re-run after a crash
writes the tail once; a re-run after the commit writes nothing.

Job records (``reckon jobs list``) are kept in the broker's key-value store under
``reckon:job:<id>`` by huey signal handlers: state (queued, running, retrying, failed,
done), attempts, last error, what was written.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["Jobs", "make_extractor"]

log = logging.getLogger("reckon.jobs")

_ENGINES: dict[str, Any] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(data_dir: str) -> Any:
    """One Engine per data directory per worker process (jobs off: a worker never queues)."""
    with _ENGINES_LOCK:
        e = _ENGINES.get(data_dir)
        if e is None:
            from reckon.api import Engine

            e = _ENGINES[data_dir] = Engine(data_dir, jobs=False)
        return e


def make_extractor(name: str | None = None) -> Any:
    """The extractor a worker uses: ``RECKON_EXTRACTOR`` = ``rules`` (deterministic),
    ``model`` (``RECKON_LLM_*``) or ``rules+model``; default ``model`` when
    ``RECKON_LLM_BASE_URL`` is set, else ``rules``.

    :raises InvalidInput: for an unknown name or a model extractor without a model.
    """
    from reckon._errors import InvalidInput
    from reckon.capture.rules import RuleExtractor

    name = (name or os.environ.get("RECKON_EXTRACTOR") or
            ("model" if os.environ.get("RECKON_LLM_BASE_URL") else "rules")).strip().lower()
    if name == "rules":
        return RuleExtractor()
    from reckon.capture.model import ModelExtractor

    if name == "model":
        return ModelExtractor()
    if name == "rules+model":
        return _Both(RuleExtractor(), ModelExtractor())
    raise InvalidInput(f"RECKON_EXTRACTOR: unknown extractor {name!r}; use rules, model or rules+model",
                       field="extractor")


class _Both:
    """Rules first, then the model; a model proposal with a label already proposed is dropped."""

    name = "rules+model"

    def __init__(self, *extractors: Any) -> None:
        self.extractors = extractors

    def extract(self, tail: Any, known: Any, tool_schema: Any) -> list[Any]:
        out: list[Any] = []
        seen: set[str] = set()
        for ex in self.extractors:
            for c in ex.extract(tail, known, tool_schema):
                key = " ".join(c.label.casefold().split())
                if key not in seen:
                    seen.add(key)
                    out.append(c)
        return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Jobs:
    """The job queue of one data directory.

    :param data_dir: the engine's data directory (workers open the tenants there).
    :param url: broker URL (see the module docstring); default ``RECKON_JOBS_URL`` or
        the SQLite file ``data_dir/jobs/huey.db``.
    :param extract_every: queue extraction at this many unprocessed turns.
    :param idle_seconds: the sweep queues a conversation idle this long.
    :param extractor: extractor used by workers of this object (default
        :func:`make_extractor`).
    :param retry_delay: first retry delay, seconds (doubles each retry).
    """

    def __init__(self, data_dir: str | Path, *, url: str | None = None, extract_every: int | None = None,
                 idle_seconds: float | None = None, extractor: Any = None, retries: int = 5,
                 retry_delay: float = 2.0) -> None:
        from huey import crontab  # type: ignore[import-untyped]

        self.data_dir = str(Path(data_dir).resolve())
        self.url = url or os.environ.get("RECKON_JOBS_URL") or \
            f"sqlite:///{Path(self.data_dir) / 'jobs' / 'huey.db'}"
        self.extract_every = int(extract_every if extract_every is not None
                                 else os.environ.get("RECKON_EXTRACT_EVERY", "6"))
        self.idle_seconds = float(idle_seconds if idle_seconds is not None
                                  else os.environ.get("RECKON_EXTRACT_IDLE", "300"))
        self._extractor = extractor
        self.huey = _make_huey(self.url)
        h = self.huey
        jobs = self

        @h.task(name="reckon.extract", retries=retries, retry_delay=retry_delay, retry_backoff=2,  # type: ignore[untyped-decorator]
                context=True)
        def extract(data_dir: str, tenant: str, conversation: str, task: Any = None) -> dict[str, Any]:
            return jobs._run_extract(data_dir, tenant, conversation, task)

        @h.periodic_task(crontab(minute="*"), name="reckon.sweep")  # type: ignore[untyped-decorator]
        def sweep() -> int:
            return jobs.sweep()

        @h.task(name="reckon.maintain", retries=2, retry_delay=retry_delay, retry_backoff=2)  # type: ignore[untyped-decorator]
        def maintain_task(data_dir: str, tenant: str, dry_run: bool = False) -> dict[str, Any]:
            return jobs._run_maintain(data_dir, tenant, dry_run)

        @h.periodic_task(crontab(minute="0", hour="3"), name="reckon.maintain-daily")  # type: ignore[untyped-decorator]
        def maintain_daily() -> int:
            return jobs.maintain_all()

        self.extract = extract
        self.periodic_sweep = sweep
        self.maintain_task = maintain_task
        self.periodic_maintain = maintain_daily

        @h.signal()  # type: ignore[untyped-decorator]
        def _record(signal: str, task: Any, exc: Any = None) -> None:
            jobs._on_signal(signal, task, exc)

    @classmethod
    def for_engine(cls, engine: Any) -> Jobs | bool:
        """The engine's queue, or ``False`` when ``RECKON_JOBS_URL=off``."""
        if (os.environ.get("RECKON_JOBS_URL") or "").strip().lower() in ("off", "none", "0", "false"):
            return False
        return cls(engine.data_dir)

    @property
    def extractor(self) -> Any:
        if self._extractor is None:
            self._extractor = make_extractor()
        return self._extractor

    # ------------------------------------------------------------------ producers
    def enqueue(self, tenant: str, conversation: str) -> str | None:
        """Queue one extraction (at most one queued per conversation); returns the job
        id, or ``None`` when one is already queued."""
        key = f"reckon:queued:{tenant}:{conversation}"
        if not self.huey.put_if_empty(key, _now()):
            return None
        res = self.extract(self.data_dir, tenant, conversation)
        self._put(res.id, {"id": res.id, "tenant": tenant, "conversation": conversation, "state": "queued",
                           "attempts": 0, "queued_at": _now()})
        return str(res.id)

    def turns_recorded(self, tenant: Any, turns: Any) -> None:
        """After ``record_turns``: queue extraction for conversations with at least
        ``extract_every`` unprocessed turns (cheap: the watermark and the highest order,
        ``TranscriptService.unprocessed``, whatever the conversation's length)."""
        for conv in sorted({t.conversation for t in turns}):
            if tenant.transcripts.unprocessed(conv) >= self.extract_every:
                self.enqueue(tenant.id, conv)

    def sweep(self, *, force: bool = False) -> int:
        """Queue extraction for conversations with unprocessed turns that are idle for
        ``idle_seconds`` or have ``extract_every`` of them (``force``: any unprocessed);
        returns how many were queued."""
        engine = _engine(self.data_dir)
        n = 0
        now = datetime.now(UTC)
        for tid in engine.list_tenants():
            t = engine.tenant(tid)
            try:
                convs = t.transcripts.conversations()
            except Exception:  # noqa: BLE001 - one broken tenant never stops the sweep
                log.warning("sweep: cannot read conversations of %s", tid, exc_info=True)
                continue
            for c in convs:
                if c.unprocessed <= 0:
                    continue
                idle = c.last_at is not None and (now - c.last_at).total_seconds() >= self.idle_seconds
                if force or idle or c.unprocessed >= self.extract_every:
                    if self.enqueue(tid, c.id) is not None:
                        n += 1
        return n

    def enqueue_maintenance(self, tenant: str, *, dry_run: bool = False) -> str:
        """Queue lifecycle maintenance of one tenant (:mod:`reckon.lifecycle`); returns
        the job id (its record: ``reckon jobs list``)."""
        res = self.maintain_task(self.data_dir, tenant, dry_run)
        self._put(res.id, {"id": res.id, "task": "maintain", "tenant": tenant, "conversation": None,
                           "state": "queued", "attempts": 0, "queued_at": _now()})
        return str(res.id)

    def maintain_all(self) -> int:
        """Queue maintenance of every tenant (the daily periodic task, 03:00 UTC);
        returns how many were queued."""
        engine = _engine(self.data_dir)
        n = 0
        for tid in engine.list_tenants():
            self.enqueue_maintenance(tid)
            n += 1
        return n

    def _run_maintain(self, data_dir: str, tenant: str, dry_run: bool) -> dict[str, Any]:
        t = _engine(data_dir).tenant(tenant)
        return dict(t.maintain(dry_run=dry_run).model_dump(mode="json"))

    # ------------------------------------------------------------------ the job
    def _run_extract(self, data_dir: str, tenant: str, conversation: str, task: Any) -> dict[str, Any]:
        from huey.exceptions import CancelExecution, RetryTask  # type: ignore[import-untyped]

        from reckon._errors import ReckonError, UnknownMemory, UnknownTenant
        from reckon.capture.extract import extract_conversation
        from reckon.capture.llm import LLMError

        self.huey.delete(f"reckon:queued:{tenant}:{conversation}")  # a new turn may queue the next run
        try:
            t = _engine(data_dir).tenant(tenant)
            result = extract_conversation(t, conversation, self.extractor)
        except LLMError as exc:
            if not exc.retryable:
                self._note(task, exc)
                raise CancelExecution(retry=False) from exc
            if exc.retry_after is not None:
                raise RetryTask(str(exc), delay=max(1.0, float(exc.retry_after))) from exc
            raise
        except (UnknownTenant, UnknownMemory) as exc:
            self._note(task, exc)
            raise CancelExecution(retry=False) from exc
        except ReckonError:
            raise
        return result.model_dump(mode="json")

    # ------------------------------------------------------------------ records
    def _note(self, task: Any, exc: BaseException) -> None:
        if task is None:
            return
        rec = self.record(str(task.id)) or {"id": str(task.id)}
        rec["error"] = f"{type(exc).__name__}: {exc}"
        self._put(task.id, rec)

    def _key(self, job_id: str) -> str:
        return f"reckon:job:{job_id}"

    def _put(self, job_id: Any, record: dict[str, Any]) -> None:
        self.huey.storage.put_data(self._key(str(job_id)), json.dumps(record).encode())

    def record(self, job_id: str) -> dict[str, Any] | None:
        """The record of one job, or ``None``."""
        raw = self.huey.storage.peek_data(self._key(job_id))
        from huey.constants import EmptyData  # type: ignore[import-untyped]

        if raw is EmptyData or raw is None:
            return None
        return json.loads(raw)  # type: ignore[no-any-return]

    def _on_signal(self, signal: str, task: Any, exc: Any) -> None:
        from huey import signals as S

        name = getattr(task, "name", "")
        if name not in ("reckon.extract", "reckon.maintain"):
            return
        rec = self.record(str(task.id)) or {}
        args: tuple[Any, ...] = tuple(task.args or ())
        rec.update(id=str(task.id), tenant=args[1] if len(args) > 1 else None,
                   conversation=args[2] if len(args) > 2 and name == "reckon.extract" else None, updated_at=_now())
        if name == "reckon.maintain":
            rec["task"] = "maintain"
        if signal == S.SIGNAL_EXECUTING:
            rec["state"] = "running"
            rec["attempts"] = int(rec.get("attempts", 0)) + 1
        elif signal == S.SIGNAL_COMPLETE:
            rec["state"] = "done"
            rec["error"] = None
        elif signal == S.SIGNAL_RETRYING:
            rec["state"] = "retrying"
        elif signal in (S.SIGNAL_ERROR, S.SIGNAL_CANCELED):
            rec["error"] = f"{type(exc).__name__}: {exc}" if exc is not None else (rec.get("error") or "cancelled")
            if exc is not None and exc.__cause__ is not None:
                rec["error"] = f"{type(exc.__cause__).__name__}: {exc.__cause__}"
            rec["state"] = "failed" if (signal == S.SIGNAL_CANCELED or not task.retries) else "retrying"
        else:
            return
        self._put(task.id, rec)

    def records(self) -> list[dict[str, Any]]:
        """Every job record, newest first."""
        out = []
        try:
            items = self.huey.storage.result_items()
        except NotImplementedError:  # pragma: no cover - a storage without enumeration
            items = {}
        for k, v in items.items():
            if isinstance(k, bytes):
                k = k.decode()
            if str(k).startswith("reckon:job:"):
                try:
                    out.append(json.loads(v))
                except (TypeError, ValueError):
                    continue
        out.sort(key=lambda r: r.get("updated_at") or r.get("queued_at") or "", reverse=True)
        return out

    def retry(self, job_id: str | None = None) -> list[str]:
        """Queue again the failed job ``job_id`` (or every failed job); returns new ids.

        :raises InvalidInput: when ``job_id`` is not a known job.
        """
        from reckon._errors import InvalidInput

        recs = self.records()
        if job_id is not None:
            recs = [r for r in recs if r.get("id") == job_id]
            if not recs:
                raise InvalidInput(f"no job {job_id!r}", field="job_id")
        else:
            recs = [r for r in recs if r.get("state") == "failed"]
        out = []
        for r in recs:
            if r.get("task") == "maintain":
                new: str | None = self.enqueue_maintenance(r["tenant"])
            else:
                self.huey.delete(f"reckon:queued:{r['tenant']}:{r['conversation']}")
                new = self.enqueue(r["tenant"], r["conversation"])
            if new is not None:
                r["state"] = "requeued"
                r["requeued_as"] = new
                self._put(r["id"], r)
                out.append(new)
        return out

    def run_worker(self, *, workers: int = 1, once: bool = False, timeout: float | None = None) -> int:
        """Run the workers (the ``reckon worker`` command): a startup sweep re-queues
        every unprocessed conversation (recovery after a crash), then the huey consumer
        runs until SIGINT / SIGTERM. ``once``: process the queue until it is empty and
        return (tests, cron). Returns the number of jobs run in ``once`` mode."""
        queued = self.sweep(force=True)
        log.info("worker: startup sweep queued %d conversation(s)", queued)
        if once:
            n = 0
            deadline = time.monotonic() + (timeout or 3600)
            while time.monotonic() < deadline:
                task = self.huey.dequeue()
                if task is None:
                    if not self.huey.scheduled_count():
                        break
                    for t in self.huey.read_schedule(datetime.now(UTC).replace(tzinfo=None)):
                        self.huey.enqueue(t)
                    time.sleep(0.2)
                    continue
                self.huey.execute(task)
                n += 1
            return n
        consumer = self.huey.create_consumer(workers=workers, worker_type="thread", periodic=True,
                                             check_worker_health=True)
        consumer.run()
        return 0


def _make_huey(url: str) -> Any:
    """A huey instance for a broker URL."""
    from huey import SqliteHuey

    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///"):])
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteHuey("reckon", filename=str(path), utc=True)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from huey import RedisHuey

        return RedisHuey("reckon", url=url, utc=True)
    if url.startswith(("postgres://", "postgresql://")):
        from huey import PostgresHuey

        return PostgresHuey("reckon", dsn=url, utc=True)
    from reckon._errors import InvalidInput

    raise InvalidInput(f"RECKON_JOBS_URL: unsupported broker {url!r}; use sqlite:///, redis:// or postgresql://",
                       field="RECKON_JOBS_URL")
