"""The LoCoMo benchmark's data handling (bench/recall_locomo.py) on the real file."""

from __future__ import annotations

import importlib.util
import json
from datetime import datetime

from reckon.recall import HashingEmbedder, RankConfig

from ..conftest import REPO, shared_path


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("recall_locomo", REPO / "bench" / "recall_locomo.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_session_dates_and_malformed_evidence_ids() -> None:
    b = _bench()
    assert b.parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert b.parse_session_time("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9)
    data = json.loads(shared_path("data", "locomo", "locomo_dev.json").read_text())
    conv = data[0]
    qs = dict(b.questions_of(conv))
    # "D8:6; D9:17" holds two dialog ids in one evidence entry
    multi = [ev for ev in qs.values() if {"D8:6", "D9:17"} <= ev]
    assert multi
    turns = b.turns_of(conv)
    assert len(turns) == 419 and turns[0]["dia_id"] == "D1:1"
    assert turns[0]["time"] == datetime(2023, 5, 8, 13, 56)
    ids = {b.dia_key(t["dia_id"]) for t in turns}
    assert all(ev <= ids for ev in qs.values())  # every evidence id names a real turn
    total = sum(len(b.questions_of(c)) for c in data)
    assert total == 760  # 762 category 1-4 questions, 2 without any evidence id


def test_bench_pipeline_on_one_conversation_with_hashing_embedder() -> None:
    b = _bench()
    data = json.loads(shared_path("data", "locomo", "locomo_dev.json").read_text())
    conv = data[0]
    turns = b.turns_of(conv)
    ix = b.build(turns, HashingEmbedder(), reckon=True)
    assert len(ix) == len(turns)
    # the preceding turn of the same session is the embedding context
    assert ix.get("D1:2").context == b.turn_text(turns[0], True) and ix.get("D1:1").context is None
    q, ev = b.questions_of(conv)[0]  # "When did Caroline go to the LGBTQ support group?"
    hits = [h.id for h in ix.search(q, limit=10, config=b.RECKON)]
    assert ev <= set(hits)
    plain = [h.id for h in ix.search(q, limit=10, config=RankConfig(use_vector=False, depth=100, half_life_days=None))]
    assert ev <= set(plain)
