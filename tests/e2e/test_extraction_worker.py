"""End to end (issue 11): a conversation is recorded, `reckon worker` (a real process)
extracts it with the model extractor against a fake OpenAI-compatible server on
127.0.0.1, the typed memory appears in the next bundle with its derived status; the
worker SIGKILLed in the middle of the job and restarted writes each memory exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from reckon import Principal
from reckon.api import Engine
from tests.capture.fake_llm import FakeLLM
from tests.conftest import REPO

LEE = Principal(person="lee")
CAP = {"memories": [{
    "kind": "objective", "label": "Meta monthly spend cap", "content": "Don't let Meta spend go over $40k this month.",
    "importance": 5, "confidence": 0.9, "turns": [0],
    "subclass": {"name": "BudgetConstraintMemory",
                 "properties": {"platform": "meta", "amount": 40000, "currency": "USD", "period": "monthly"}}}]}


def _worker(data_dir, llm_url: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(PYTHONPATH=str(REPO / "engine"), RECKON_EMBEDDER="hashing", RECKON_EXTRACTOR="model",
               RECKON_LLM_BASE_URL=llm_url, RECKON_LLM_MODEL="fake", RECKON_LLM_TIMEOUT="30",
               RECKON_EXTRACT_EVERY="2")
    return subprocess.Popen([sys.executable, "-m", "reckon.cli", "--data-dir", str(data_dir), "worker"],
                            env=env, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _stop(p: subprocess.Popen[bytes], sig: int) -> None:
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)


def _wait(cond, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.2)
    return cond()


def test_worker_extracts_and_a_killed_job_writes_exactly_once(tmp_path, monkeypatch):
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    monkeypatch.setenv("RECKON_EXTRACT_EVERY", "2")
    monkeypatch.delenv("RECKON_JOBS_URL", raising=False)
    data = tmp_path / "data"
    engine = Engine(data)
    t = engine.create_tenant("acme")
    t.record_turns([
        dict(conversation="chat-1", text="Don't let Meta spend go over $40k this month.", speaker="lee"),
        dict(conversation="chat-1", text="Understood, I'll keep Meta under $40k.", role="assistant"),
    ], principal=LEE)
    assert engine.jobs.huey.pending_count() == 1 and t.memories() == []  # queued, not run

    with FakeLLM() as llm:
        llm.block(120)  # the first call hangs: the worker is killed in the middle of the job
        w = _worker(data, llm.url)
        try:
            assert llm.arrived.wait(90), (w.poll(), w.stderr.read() if w.poll() is not None else b"")
            w.send_signal(signal.SIGKILL)
            w.wait(timeout=30)
        finally:
            _stop(w, signal.SIGKILL)
        assert t.memories() == [] and t.conversations()[0].extracted_through == -1  # nothing half-written

        llm.default = ("reply", json.dumps(CAP))
        w = _worker(data, llm.url)  # the startup sweep re-queues the unprocessed conversation
        try:
            assert _wait(lambda: len(t.memories()) >= 1, 90), w.stderr.read() if w.poll() is not None else ""
            assert _wait(lambda: t.conversations()[0].extracted_through == 1, 30)
        finally:
            _stop(w, signal.SIGTERM)
        # a third worker start finds nothing to do
        w = _worker(data, llm.url)
        try:
            time.sleep(3)
        finally:
            _stop(w, signal.SIGTERM)
        calls = len(llm.requests)

    assert calls == 2  # the killed call and the one that wrote; no call after the watermark
    mems = t.memories(active_only=False)
    assert [m.label for m in mems] == ["Meta monthly spend cap"]  # exactly once
    [m] = mems
    assert (m.source, m.owner, m.subclass) == ("extraction", "lee", "BudgetConstraintMemory")
    assert m.derived_from == [t.turn("chat-1/0").iri]
    t.set_spend("meta", 34000)
    b = t.context(LEE, conversation="can we add budget to the Meta campaign?")
    assert m.id in b.ids()
    assert b.item(m.id).status["budgetStatus"] == "near_limit" and "near_limit" in b.render()
