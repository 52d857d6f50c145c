"""The LoCoMo benchmark's data handling and API pipeline (bench/recall_locomo.py) on the
real file: turns recorded with Tenant.record_turns, questions asked with search_turns."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime

from reckon import Principal
from reckon.api import Engine

from ..conftest import REPO, shared_path


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("recall_locomo", REPO / "bench" / "recall_locomo.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_session_dates_and_malformed_evidence_ids() -> None:
    b = _bench()
    assert b.parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert b.parse_session_time("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    data = json.loads(shared_path("data", "locomo", "locomo_dev.json").read_text())
    conv = data[0]
    qs = dict(b.questions_of(conv))
    # "D8:6; D9:17" holds two dialog ids in one evidence entry
    multi = [ev for ev in qs.values() if {"D8:6", "D9:17"} <= ev]
    assert multi
    turns = b.turns_of(conv)
    assert len(turns) == 419 and turns[0]["dia_id"] == "D1:1"
    assert turns[0]["time"] == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    ids = {b.dia_key(t["dia_id"]) for t in turns}
    assert all(ev <= ids for ev in qs.values())  # every evidence id names a real turn
    total = sum(len(b.questions_of(c)) for c in data)
    assert total == 760  # 762 category 1-4 questions, 2 without any evidence id


def test_bench_pipeline_through_the_api_with_hashing_embedder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    b = _bench()
    data = json.loads(shared_path("data", "locomo", "locomo_dev.json").read_text())
    conv = data[0]
    turns = b.turns_of(conv)
    t = Engine(tmp_path / "d", jobs=False).create_tenant("loco")
    ops = Principal.operator("importer")
    recorded = t.record_turns(b.record_payload("conv-26", turns), principal=ops)
    assert len(recorded) == 419 and recorded[1].external_id == "D1:2" and recorded[1].speaker == "melanie"
    with_photo = next(x for x, raw in zip(recorded, turns) if raw.get("blip_caption"))
    assert with_photo.caption
    # the preceding turn of the same conversation is the embedding context of the index document
    doc = t.turn_index.index.get(recorded[1].iri)
    assert doc.context and doc.context.startswith("caroline: Hey Mel!")
    q, ev = b.questions_of(conv)[0]  # "When did Caroline go to the LGBTQ support group?"
    hits = [h.turn.external_id for h in t.search_turns(q, principal=ops, k=10)]
    assert ev <= set(hits)


def test_cross_validation_chooses_on_the_other_conversations_only() -> None:
    """bench/recall_locomo.py --cv: each held-out conversation is scored with the setting
    that is best on the others (the shipped one on a tie), never with its own best."""
    b = _bench()
    ship, other = b.CV_SHIPPED, "other"
    scores = {
        "a": {ship: [1.0, 0.0], other: [1.0, 1.0]},  # other is better on a and b ...
        "b": {ship: [0.5], other: [1.0]},
        "c": {ship: [1.0], other: [0.0]},  # ... and much worse on c
    }
    folds = {f[0]: f for f in b.cross_validate(scores)}
    # held out a: b + c questions -> ship 0.75 vs other 0.5 -> ship, scored 50 on a
    assert folds["a"][2] == ship and folds["a"][3] == 50.0 and folds["a"][4] == 100.0
    # held out b: a + c -> ship 2/3 vs other 2/3 (tie) -> the shipped setting
    assert folds["b"][2] == ship and folds["b"][3] == 50.0
    # held out c: a + b -> other (1.0 vs 0.5) -> scored 0 on c, though ship gets 100 there
    assert folds["c"][2] == other and folds["c"][3] == 0.0 and folds["c"][1] == 100.0
