"""Background extraction jobs on huey (SQLite broker in the data directory): queued after
N unprocessed turns (never run on the record_turn path), retries with backoff, failed
jobs listed and retried, idempotent re-runs, the startup sweep."""

from __future__ import annotations

import json

import pytest

from reckon import Principal
from reckon.api import Engine
from reckon.capture.llm import ChatClient
from reckon.capture.model import ModelExtractor
from reckon.jobs import Jobs
from tests.capture.fake_llm import FakeLLM

LEE = Principal(person="lee")
GOOD = json.dumps({"memories": [{"kind": "preference", "label": "Report format",
                                 "content": "Weekly reports as bullet points.", "confidence": 0.9, "turns": [0]}]})


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    monkeypatch.delenv("RECKON_JOBS_URL", raising=False)
    monkeypatch.setenv("RECKON_EXTRACT_EVERY", "3")
    engine = Engine(tmp_path / "d")
    return engine, engine.create_tenant("acme")


def jobs_for(engine, llm, **kw):
    return Jobs(engine.data_dir, extractor=ModelExtractor(ChatClient(base_url=llm.url, model="m", timeout=2)),
                retry_delay=0.1, **kw)


def turns(n, start=0):
    return [dict(conversation="c", text=f"I prefer weekly reports as bullet points, item {i}.", speaker="lee")
            for i in range(start, start + n)]


def test_a_job_is_queued_after_n_turns_not_run(env):
    engine, t = env
    t.record_turns(turns(2), principal=LEE)
    j = engine.jobs
    assert j.huey.pending_count() == 0
    t.record_turns(turns(1, 2), principal=LEE)
    assert j.huey.pending_count() == 1 and t.memories() == []  # queued, nothing extracted yet
    t.record_turns(turns(1, 3), principal=LEE)
    assert j.huey.pending_count() == 1  # one queued job per conversation
    [rec] = j.records()
    assert (rec["state"], rec["tenant"], rec["conversation"]) == ("queued", "acme", "c")


def test_worker_runs_retries_with_backoff_and_records(env):
    engine, t = env
    t.record_turns(turns(3), principal=LEE)
    with FakeLLM() as llm:
        llm.status(429, retry_after=0.01).status(503).reply(GOOD)
        j = jobs_for(engine, llm)
        ran = j.run_worker(once=True, timeout=60)
        assert len(llm.requests) == 3
    assert ran == 3  # first try + two retries
    [rec] = [r for r in j.records() if r["state"] == "done"]
    assert rec["attempts"] == 3 and rec["error"] is None
    [m] = t.memories()
    assert (m.label, m.source, m.owner) == ("Report format", "extraction", "lee")
    assert t.conversations()[0].extracted_through == 2


def test_a_failure_retrying_cannot_fix_is_failed_then_retried_by_hand(env):
    engine, t = env
    t.record_turns(turns(3), principal=LEE)
    with FakeLLM() as llm:
        llm.status(400)
        j = jobs_for(engine, llm)
        j.run_worker(once=True, timeout=30)
        assert len(llm.requests) == 1  # not retried
        [rec] = j.records()
        assert rec["state"] == "failed" and "400" in rec["error"]
        assert t.memories() == []
        llm.reply(GOOD)
        [new] = j.retry()
        j.run_worker(once=True, timeout=30)
    states = {r["id"]: r["state"] for r in j.records()}
    assert states[rec["id"]] == "requeued" and states[new] == "done"
    assert [m.label for m in t.memories()] == ["Report format"]


def test_a_rerun_writes_nothing_twice(env):
    engine, t = env
    t.record_turns(turns(3), principal=LEE)
    with FakeLLM() as llm:
        llm.default = ("reply", GOOD)
        j = jobs_for(engine, llm)
        first = j._run_extract(j.data_dir, "acme", "c", None)  # noqa: SLF001 - the task body
        second = j._run_extract(j.data_dir, "acme", "c", None)  # noqa: SLF001
        assert len(llm.requests) == 1  # nothing after the watermark: no model call
    assert len(first["written"]) == 1 and second["written"] == []
    assert len(t.memories()) == 1


def test_startup_sweep_queues_every_unprocessed_conversation(env, monkeypatch):
    engine, t = env
    monkeypatch.setenv("RECKON_JOBS_URL", "off")  # record without queueing (as if the queue were lost)
    t2 = Engine(engine.data_dir).tenant("acme")
    t2.record_turns(turns(1), principal=LEE)
    t2.record_turns([dict(conversation="d", text="Never send reports on weekends.", speaker="lee")], principal=LEE)
    monkeypatch.delenv("RECKON_JOBS_URL")
    with FakeLLM() as llm:
        llm.default = ("reply", json.dumps({"memories": []}))
        j = jobs_for(engine, llm)
        assert j.sweep() == 0  # not idle, fewer than N turns
        assert j.sweep(force=True) == 2
        assert j.sweep(force=True) == 0  # already queued
        j.run_worker(once=True, timeout=30)
    assert {c.id: c.extracted_through for c in t.conversations()} == {"c": 0, "d": 0}


def test_broker_url_is_checked(tmp_path):
    from reckon import InvalidInput

    with pytest.raises(InvalidInput, match="RECKON_JOBS_URL"):
        Jobs(tmp_path, url="amqp://nope")
