"""The optional model conflict judge (through the OpenAI-compatible client) plugged into
the facade; a model outage falls back to the deterministic judge."""

from __future__ import annotations

import json

import pytest

from reckon import ConflictPending, Principal
from reckon.api import Engine
from reckon.capture.judge import ModelJudge
from reckon.capture.llm import ChatClient
from tests.capture.fake_llm import FakeLLM

ANN = Principal(person="ann")


def pref(label, content):
    return dict(kind="preference", scope="user", importance=3, source="agent_tool", label=label, content=content)


def test_model_judge_decides_paraphrased_contradictions(tmp_path):
    with FakeLLM() as llm:
        judge = ModelJudge(ChatClient(base_url=llm.url, model="m"))
        t = Engine(tmp_path / "d", jobs=False, judge=judge).create_tenant("acme")
        a = t.remember(principal=ANN, **pref("Email length", "Keep emails short"))
        llm.reply(json.dumps({"replace": [a.iri, "urn:reckon:acme:memory:" + "0" * 32]}))
        with pytest.raises(ConflictPending) as ei:
            t.remember(principal=ANN, **pref("Depth", "I'd like emails to be thorough and go into depth"))
        assert ei.value.candidates == [a.id]  # the invented id is ignored
        sent = json.loads(llm.requests[-1]["messages"][1]["content"])
        assert sent["existing"][0]["content"] == "Keep emails short"
        llm.reply(json.dumps({"replace": []}))
        t.remember(principal=ANN, **pref("Friendly", "Keep emails friendly"))  # the model says: keep both
        assert len(t.memories()) == 2


def test_model_outage_falls_back_to_the_deterministic_judge(tmp_path):
    with FakeLLM() as llm:
        judge = ModelJudge(ChatClient(base_url=llm.url, model="m", timeout=1))
        t = Engine(tmp_path / "d", jobs=False).create_tenant("acme")
        t.set_judge(judge)
        t.remember(principal=ANN, **pref("Email length", "Keep emails short"))
        llm.status(503).status(503)
        with pytest.raises(ConflictPending):
            t.remember(principal=ANN, **pref("Long", "Write long, detailed emails"))  # antonym: still caught
        t.remember(principal=ANN, **pref("Friendly", "Keep emails friendly"))
    assert judge.failures == 2 and len(t.memories()) == 2
