"""`reckon import conversation` (LoCoMo-style JSON, chat JSONL), `reckon turns`,
`reckon extract`, `reckon worker --once`, `reckon jobs list|retry` (issue 11)."""

from __future__ import annotations

import json

from reckon.api import Engine
from tests.cli.conftest import run_cli

LOCOMO = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hey Ben! Keep CPA under $50 on the new campaign."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Will do!", "blip_caption": "a thumbs up"},
        ],
        "session_2_date_time": "10:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "I prefer weekly reports as bullet points."}],
    },
}


def test_import_locomo_json_and_chat_jsonl(tmp_path, monkeypatch):
    monkeypatch.setenv("RECKON_JOBS_URL", "off")
    data = tmp_path / "d"
    Engine(data).create_tenant("acme")
    f = tmp_path / "conv.json"
    f.write_text(json.dumps([LOCOMO]))
    r = run_cli(data, "import", "conversation", str(f), "--tenant", "acme", "--as", "ops", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["turns"] == 3 and json.loads(r.out)["conversations"] == ["conv-x"]
    t = Engine(data).tenant("acme")
    turns = t.turns("conv-x")
    assert [(x.speaker, x.external_id, x.at.day) for x in turns] == [("ana", "D1:1", 8), ("ben", "D1:2", 8),
                                                                   ("ana", "D2:1", 9)]
    assert turns[1].caption == "a thumbs up"
    before = t.dump()
    assert run_cli(data, "import", "conversation", str(f), "--tenant", "acme", "--as", "ops").code == 0  # again: a no-op
    assert Engine(data).tenant("acme").dump() == before

    chat = tmp_path / "thread-7.jsonl"
    chat.write_text("\n".join(json.dumps(x) for x in [
        {"role": "user", "content": "Don't let Meta spend go over $40k this month.", "name": "lee",
         "timestamp": "2026-03-01T09:00:00.5+01:00", "id": "m1"},
        {"role": "assistant", "content": "Noted."},
        {"role": "tool", "content": "Cap Meta at $1 a day"},
    ]) + "\n")
    r = run_cli(data, "import", "conversation", str(chat), "--tenant", "acme", "--as", "ops", "--extract", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["conversations"] == ["thread-7"] and len(out["extracted"]["thread-7"]) == 1
    t = Engine(data).tenant("acme")
    [cap] = [m for m in t.memories() if m.subclass == "BudgetConstraintMemory"]
    assert cap.properties["amount"] == 40000 and cap.owner == "lee"
    r = run_cli(data, "turns", "thread-7", "--tenant", "acme", "--as", "ops")
    assert r.code == 0 and "[thread-7/2] " in r.out and "tool" in r.out


def test_bad_files_exit_2_and_write_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RECKON_JOBS_URL", "off")
    data = tmp_path / "d"
    t = Engine(data).create_tenant("acme")
    before = t.dump()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "ok"}\n{"role": "user", "content": 3}\n')
    r = run_cli(data, "import", "conversation", str(bad), "--tenant", "acme", "--as", "ops")
    assert r.code == 2 and "bad.jsonl:2" in r.err
    worse = tmp_path / "x.json"
    worse.write_text('{"nothing": true}')
    assert run_cli(data, "import", "conversation", str(worse), "--tenant", "acme", "--as", "ops").code == 2
    assert run_cli(data, "import", "conversation", str(tmp_path / "missing.json"), "--tenant", "acme", "--as", "ops").code == 2
    role = tmp_path / "role.jsonl"
    role.write_text('{"role": "robot", "content": "beep"}\n')
    r = run_cli(data, "import", "conversation", str(role), "--tenant", "acme", "--as", "ops")
    assert r.code == 2 and "role" in r.err
    assert Engine(data).tenant("acme").dump() == before


def test_worker_once_and_jobs_list(tmp_path, monkeypatch):
    monkeypatch.delenv("RECKON_JOBS_URL", raising=False)
    monkeypatch.setenv("RECKON_EXTRACT_EVERY", "1")
    monkeypatch.setenv("RECKON_EXTRACTOR", "rules")
    data = tmp_path / "d"
    t = Engine(data).create_tenant("acme")
    from reckon import Principal

    t.record_turn("c", "Keep ROAS above 3.", principal=Principal(person="lee"))
    r = run_cli(data, "jobs", "list", "--json")
    assert r.code == 0 and json.loads(r.out)["queued"] == 1
    r = run_cli(data, "worker", "--once")
    assert r.code == 0 and "ran 1 job" in r.out
    r = run_cli(data, "jobs", "list", "--json")
    jobs = json.loads(r.out)
    assert jobs["queued"] == 0 and [j["state"] for j in jobs["jobs"]] == ["done"]
    assert [m.subclass for m in Engine(data).tenant("acme").memories()] == ["PerformanceTargetMemory"]
    r = run_cli(data, "jobs", "retry", "nope")
    assert r.code == 2
