"""The transcript index embeds off the write path (issue 11 "Bulk import", issue 12 item
1): ``record_turns`` returns before any turn is embedded, the turns are found by keyword
at once and by vector once the background thread caught up, every turn line is embedded
once (a turn's vector mixes its own line with the previous one's), and a process killed
between the commit and the embeddings leaves nothing lost: the next process embeds.

Real stores and child processes; the hashing embedder (the model is not under test)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

from reckon import Principal
from reckon.api import Engine
from reckon.recall import HashingEmbedder
from reckon.transcripts.search import TURN_CONTEXT_WEIGHT

CHILD = Path(__file__).resolve().parents[1] / "recall" / "recall_child.py"
OPS = Principal.operator("ops")
ENV = dict(os.environ, RECKON_EMBEDDER="hashing")


class GatedHashing(HashingEmbedder):
    """Hashing, except that document batches wait for ``gate`` (single texts starting
    with ``q:`` -- queries -- do not); records every document text it embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.texts: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        if not (len(texts) == 1 and texts[0].startswith("q:")):
            assert self.gate.wait(60), "gate never opened"
            self.texts.extend(texts)
        return super().encode(texts)


def _turns(n: int) -> list[dict]:
    topics = ["the warehouse closes at six", "the spring launch moved to May", "invoices go out on Fridays",
              "Biscuit the office dog", "the printer on floor three jams"]
    return [dict(conversation="c1", text=f"{topics[i % len(topics)]} ({i})", speaker="ann", role="user")
            for i in range(n)]


def _vector_rank(t, query: str, iri: str):  # type: ignore[no-untyped-def]
    ti = t.turn_index.tenant_index
    hits = ti.search(query, limit=10, explain=True)
    h = next(h for h in hits if h.id == iri)
    return h.explanation.vector_rank, h.explanation.bm25_rank


def test_record_turns_returns_before_embedding_keyword_now_vector_later(tmp_path: Path) -> None:
    emb = GatedHashing()
    t = Engine(tmp_path, embedder=emb, jobs=False).create_tenant("acme")
    got = t.record_turns(_turns(12), principal=OPS)
    assert len(got) == 12 and emb.texts == []  # returned while every embedding was blocked
    assert t.turn_index.pending() == 12
    hits = t.search_turns("q: printer floor three", principal=OPS, k=3)
    assert hits[0].turn.id == "c1/4"  # by keyword, at once
    vr, br = _vector_rank(t, "q: printer floor three", got[4].iri)
    assert vr is None and br == 1
    emb.gate.set()
    assert t.turn_index.wait(30) and t.turn_index.pending() == 0
    # each turn line embedded exactly once, though 11 of them are also a context
    lines = [f"ann: {x['text']}" for x in _turns(12)]
    assert sorted(emb.texts) == sorted(lines)
    # the vector of turn 4 = normalise(v(line 4) + w * v(line 3))
    h = HashingEmbedder()
    want = h.encode([lines[4]])[0] + TURN_CONTEXT_WEIGHT * h.encode([lines[3]])[0]
    want /= np.linalg.norm(want)
    got_v = t.turn_index.index.embedding(got[4].iri)
    assert got_v is not None and np.allclose(got_v, want, atol=1e-6)
    first = t.turn_index.index.embedding(got[0].iri)  # no previous turn: its own line
    assert np.allclose(first, h.encode([lines[0]])[0], atol=1e-6)
    vr, _ = _vector_rank(t, "q: printer floor three", got[4].iri)
    assert vr is not None
    # persisted: a fresh engine embeds nothing and has every vector
    emb2 = GatedHashing()
    t2 = Engine(tmp_path, embedder=emb2, jobs=False).tenant("acme")
    assert t2.turn_index.pending() == 0 and t2.turn_index.index.embedded_count() == 12
    assert t2.search_turns("q: office dog", principal=OPS, k=1)[0].turn.id in {"c1/3", "c1/8"}
    assert emb2.texts == []


def test_sigkill_between_turn_commit_and_embedding_loses_no_vector(tmp_path: Path) -> None:
    Engine(tmp_path, embedder="hashing", jobs=False).create_tenant("acme").store.release()
    p = subprocess.Popen([sys.executable, str(CHILD), str(tmp_path), "acme", "record-stuck", "c9", "40"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.strip() == "committed 40", p.stderr.read() if p.stderr else line
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    fresh = Engine(tmp_path, embedder="hashing", jobs=False).tenant("acme")
    assert len(fresh.turns("c9")) == 40  # acknowledged: kept
    hits = fresh.search_turns("turn 17 spring launch", principal=OPS, k=40)
    assert "c9/17" in {h.turn.id for h in hits}
    assert fresh.turn_index.wait(30)
    ix = fresh.turn_index.index
    assert len(ix) == 40 and ix.embedded_count() == 40  # every vector computed by this process


def test_index_of_the_earlier_format_is_replaced_not_read(tmp_path: Path) -> None:
    e = Engine(tmp_path, embedder="hashing", jobs=False)
    t = e.create_tenant("acme")
    t.record_turns(_turns(5), principal=OPS)
    t.turn_index.close()
    d = t.store.path / "recall-turns"
    # what the index before the derived one wrote: meta.json + an embeddings file
    (d / "meta.json").write_text('{"version": 1, "docs": [{"id": "bogus"}]}')
    (d / "embeddings-1-abc.npy").write_bytes(b"\x93NUMPY junk")
    t2 = Engine(tmp_path, embedder="hashing", jobs=False).tenant("acme")
    assert t2.search_turns("warehouse closes", principal=OPS, k=1)[0].turn.id in {"c1/0"}
    assert not (d / "meta.json").exists() and not list(d.glob("embeddings*.npy"))
    assert len(t2.turn_index.index) == 5
