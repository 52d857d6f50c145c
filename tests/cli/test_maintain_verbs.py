"""`reckon maintain --tenant T [--dry-run] [--queue]` and `reckon feedback ID VOTE` (issue
15 item 5): the same report as ``Tenant.maintain``; `--queue` puts the job on the job
engine (huey, SQLite in the data directory) and `reckon worker --once` runs it."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

from reckon.api import Engine, Principal
from tests.cli.conftest import run_cli

ANN = Principal(person="ann")


def _tenant(d, name):
    t = Engine(d, jobs=False).create_tenant(name)
    t.tick(datetime(2026, 3, 1, 8, 30, 0, 250000, tzinfo=UTC))
    rng = random.Random(3)
    words = " ".join(f"w{rng.randrange(10**9):x}" for _ in range(40))
    a = t.remember(kind="context", scope="user", importance=3, source="extraction", principal=ANN,
                   label="ann's setup notes", content=words)
    b = t.remember(kind="context", scope="user", importance=3, source="extraction", principal=ANN,
                   label="ann's setup notes again", content=words + " also")
    w = t.remember(kind="context", scope="user", importance=3, source="agent_tool", principal=ANN,
                   label="scratch", content="step 1 of 3", subclass="WorkingMemory",
                   expires_at=datetime(2026, 3, 1, 9, tzinfo=UTC))
    t.tick(datetime(2026, 3, 2, tzinfo=UTC))
    return t, a, b, w


def test_maintain_dry_run_then_run(tmp_path):
    d = tmp_path / "d"
    t, a, b, w = _tenant(d, "lc")
    r = run_cli(d, "maintain", "--tenant", "lc", "--dry-run", "--json")
    assert r.code == 0, r.err
    rep = json.loads(r.out)
    assert rep["dry_run"] is True
    assert sorted((x["action"], x["memory"]) for x in rep["actions"]) == sorted(
        [("dedup", b.id), ("purge_expired", w.id)])
    assert Engine(d, jobs=False).tenant("lc").get(b.id).active  # nothing written
    r = run_cli(d, "maintain", "--tenant", "lc")
    assert r.code == 0, r.err
    assert "2 action(s) (dedup 1, purge_expired 1)" in r.out and f"dedup {b.id} -> {a.id}" in r.out
    t2 = Engine(d, jobs=False).tenant("lc")
    assert t2.history(b.id)[-1].superseded_by == [a.id] or t2.get(b.id).superseded_by == [a.id]
    assert t2.history(w.id)[0].deleted_reason.startswith("lifecycle: expired working memory")
    r = run_cli(d, "maintain", "--tenant", "lc")
    assert r.code == 0 and "0 action(s) (nothing to do)" in r.out
    assert run_cli(d, "maintain", "--tenant", "nope").code == 2


def test_maintain_on_the_job_queue(tmp_path, monkeypatch):
    monkeypatch.delenv("RECKON_JOBS_URL", raising=False)
    d = tmp_path / "d"
    t, a, b, w = _tenant(d, "lq")
    r = run_cli(d, "maintain", "--tenant", "lq", "--queue")
    assert r.code == 0 and "queued maintenance of lq" in r.out, r.err
    r = run_cli(d, "worker", "--once")
    assert r.code == 0, r.err
    r = run_cli(d, "jobs", "list", "--json")
    [rec] = [x for x in json.loads(r.out)["jobs"] if x.get("task") == "maintain"]
    assert rec["state"] == "done" and rec["tenant"] == "lq"
    t2 = Engine(d, jobs=False).tenant("lq")
    assert t2.get(b.id).superseded_by == [a.id] and not t2.get(b.id).active


def test_feedback_verb(tmp_path):
    d = tmp_path / "d"
    t, a, _, _ = _tenant(d, "lf")
    r = run_cli(d, "feedback", a.id, "1", "--tenant", "lf", "--as", "ann")
    assert r.code == 0 and "+1" in r.out, r.err
    r = run_cli(d, "feedback", a.id, "3", "--tenant", "lf", "--as", "ann")
    assert r.code == 2 and "vote" in r.err
    r = run_cli(d, "feedback", a.id, "1", "--tenant", "lf", "--as", "lee")  # not lee's: absent
    assert r.code == 2
    assert Engine(d, jobs=False).tenant("lf").usage(a.id)["feedback"] == 1
