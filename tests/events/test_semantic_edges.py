"""Semantic edges (``ev:similarTo``) of the event graph: written in the background after
embedding, never on the write path; symmetric; followed by ``related(...,
edge_types=["semantic"])``; drawn by Mermaid; gone with either event; the threshold a
validated tenant setting. The LoCoMo case checks every edge against an oracle computed
from the MiniLM vectors alone, for every conversation of the dev file."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from decimal import Decimal

import numpy as np
import pytest
from pyoxigraph import NamedNode

from reckon import ShapeViolation, UnknownMemory
from reckon.events.service import EventGraph
from reckon.recall.embed import HashingEmbedder
from tests.conftest import shared_path

EV = "https://reckon.dev/ns/events#"
T0 = datetime(2024, 5, 8, 13, 56, 0, 417003, tzinfo=UTC)
A = "Caroline joins a mentorship program for LGBTQ youth"
B = "Caroline joins a mentorship program for LGBTQ youth groups"
C = "Melanie paints a sunrise over the lake with her kids"


class Gated(HashingEmbedder):
    """The hashing embedder, held until ``gate`` is set: the write path must not wait."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.calls = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        assert self.gate.wait(30)
        return super().encode(texts)


@pytest.fixture
def tenant(engine, request):
    """A tenant of its own per test: similarity is compared across the whole tenant."""
    return engine.create_tenant("sem-" + request.node.name.removeprefix("test_")[:40].replace("_", "-"))


def _edges(tenant) -> set[tuple[str, str]]:
    with tenant.store.snapshot() as view:
        return {(q.subject.value.rsplit(":", 1)[-1], q.object.value.rsplit(":", 1)[-1])
                for q in view.quads(None, NamedNode(f"{EV}similarTo"), None, None)}


def _about(tenant, iri: str) -> list[object]:
    node = NamedNode(iri)
    with tenant.store.snapshot() as view:
        return list(view.quads(node, None, None, None)) + list(view.quads(None, None, node, None))


def test_the_write_returns_before_the_edge_then_the_edge_appears(tenant):
    gated = Gated()
    g = EventGraph(tenant.store, tenant.memory, embedder=gated)
    g.record([{"id": "w-a", "label": A, "at": T0, "timeline": "w"},
              {"id": "w-b", "label": B, "at": T0, "timeline": "w"},
              {"id": "w-c", "label": C, "at": T0, "timeline": "w"}])
    assert g.related("w-a", edge_types=["semantic"]) == []        # acknowledged, not yet embedded
    assert g.similarity.pending() >= 1
    gated.gate.set()
    assert g.wait(30)
    assert [(r.node.id, r.edge, r.via) for r in g.related("w-a", edge_types=["semantic"])] == [
        ("w-b", "similarTo", "w-a")]
    assert [r.node.id for r in g.related("w-b", edge_types="semantic")] == ["w-a"]   # symmetric
    assert g.related("w-c", edge_types=["semantic"]) == []
    assert {("w-a", "w-b"), ("w-b", "w-a")} <= _edges(tenant)


def test_an_event_deleted_before_its_embedding_never_gets_an_edge(tenant):
    gated = Gated()
    g = EventGraph(tenant.store, tenant.memory, embedder=gated)
    g.record([{"id": "r-a", "label": A + " in May", "at": T0, "timeline": "r"},
              {"id": "r-b", "label": A + " in May!", "at": T0, "timeline": "r"}])
    g.delete("r-b")
    gated.gate.set()
    assert g.wait(30)
    assert not any("r-b" in (a, b) for a, b in _edges(tenant))
    assert _about(tenant, g.event_iri("r-b").value) == []           # nothing asserted or inferred is left


def test_through_the_tenant_related_mermaid_delete(tenant):
    g = tenant.events
    g.record([{"id": "t-a", "label": A, "at": T0, "timeline": "t"},
              {"id": "t-b", "label": B, "at": T0, "timeline": "t"},
              {"id": "t-c", "label": C, "at": T0, "timeline": "t"},
              {"id": "t-s", "kind": "episode", "label": A, "at": T0, "timeline": "t"}])   # episodes: not compared
    assert g.wait(30)
    assert [r.node.id for r in g.related("t-a", edge_types=["semantic"])] == ["t-b"]
    assert g.related("t-s", edge_types=["semantic"]) == []
    text = g.mermaid("t-a", edge_types=["semantic"])
    assert text == (f'flowchart LR\n    n0["{A}"]\n    n1["{B}"]\n    n0 ---|similarTo| n1\n')
    assert "similarTo" in g.mermaid()                                  # the whole graph too
    gone = g.delete("t-b")
    assert gone.id == "t-b" and gone.label == B
    assert g.related("t-a", edge_types=["semantic"]) == []
    assert not any("t-b" in (a, b) for a, b in _edges(tenant))
    assert _about(tenant, gone.iri) == []
    with pytest.raises(UnknownMemory):
        g.get("t-b")
    with pytest.raises(UnknownMemory):
        g.delete("t-b")


def test_the_threshold_is_a_validated_setting(engine):
    tenant = engine.create_tenant("semantic-setting")
    assert tenant.settings()["event_similarity_threshold"] == Decimal("0.7")
    gen = tenant.store.generation()
    for bad in ("1.5", "-0.1"):
        with pytest.raises(ShapeViolation, match="event_similarity_threshold"):
            tenant.set_setting("event_similarity_threshold", bad)
    assert tenant.store.generation() == gen and tenant.settings()["event_similarity_threshold"] == Decimal("0.7")
    g = tenant.events
    g.record([{"id": "s-a", "label": A, "at": T0}, {"id": "s-b", "label": B, "at": T0}])
    assert g.wait(30) and len(g.related("s-a", edge_types=["semantic"])) == 1
    tenant.set_setting("event_similarity_threshold", "0.999")
    assert g.similarity.rebuild() == 0 and _edges(tenant) == set()
    tenant.set_setting("event_similarity_threshold", "0.10")
    assert g.similarity.rebuild() == 1 and _edges(tenant) == {("s-a", "s-b"), ("s-b", "s-a")}


def _locomo_events(sample: dict) -> list[dict]:
    out = []
    for key, summary in sample["event_summary"].items():
        i = key.rsplit("_", 1)[-1]
        for speaker, texts in summary.items():
            if not isinstance(texts, list):
                continue
            for k, text in enumerate(texts):
                if text.strip():
                    out.append({"id": f"{sample['sample_id']}-s{i}-{speaker}-{k}", "label": text, "at": T0,
                                "timeline": sample["sample_id"]})
    return out


def test_locomo_edges_match_a_minilm_oracle(tmp_path):
    """Every conversation of LoCoMo's dev file, the real MiniLM model through a Tenant:
    the edges are exactly the pairs of events whose vectors' cosine is >= 0.7."""
    from reckon.api import Engine
    from reckon.recall.embed import MiniLMEmbedder

    data = json.loads(shared_path("data", "locomo", "locomo_dev.json").read_text(encoding="utf-8"))
    model = MiniLMEmbedder()
    engine = Engine(tmp_path, embedder=model)
    total = 0
    for sample in data:
        tenant = engine.create_tenant(sample["sample_id"].replace("-", ""))
        items = _locomo_events(sample)
        tenant.events.record(items)
        assert tenant.events.wait(120)
        labels = [e["label"] for e in items]
        x = model.encode(labels)
        sims = x @ x.T
        oracle = {(items[i]["id"], items[j]["id"]) for i in range(len(items)) for j in range(len(items))
                  if i != j and sims[i, j] >= 0.7}
        assert _edges(tenant) == oracle
        total += len(oracle) // 2
    assert total > 100                                               # 211 measured (module docstring)


class Broken(HashingEmbedder):
    """An embedder that fails, as a process killed before its queue drained leaves it."""

    def encode(self, texts: list[str]) -> np.ndarray:
        from reckon.recall.embed import EmbeddingUnavailable

        raise EmbeddingUnavailable("model gone")


def test_a_graph_opened_again_catches_up_on_missing_edges_and_a_new_threshold(tenant):
    lost = EventGraph(tenant.store, tenant.memory, embedder=Broken())
    lost.record([{"id": "c-a", "label": A, "at": T0}, {"id": "c-b", "label": B, "at": T0},
                 {"id": "c-c", "label": C, "at": T0}])
    assert lost.wait(30) and _edges(tenant) == set()                  # acknowledged; no edge yet
    again = EventGraph(tenant.store, tenant.memory, embedder=HashingEmbedder())   # the next process
    assert again.wait(30) and _edges(tenant) == {("c-a", "c-b"), ("c-b", "c-a")}
    gen = tenant.store.generation()
    third = EventGraph(tenant.store, tenant.memory, embedder=HashingEmbedder())
    assert third.wait(30) and tenant.store.generation() == gen      # right already: nothing written
    strict = EventGraph(tenant.store, tenant.memory, embedder=HashingEmbedder(), similarity_threshold=lambda: 0.999)
    assert strict.wait(30) and _edges(tenant) == set()
