"""``Engine.close`` / ``Tenant.close``: the recall snapshot is written, the embedding
thread stops (a batch in progress finishes and keeps its vectors), the engine reopens
on demand and a ``with`` block closes it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from reckon.api import Engine, Principal
from reckon.recall.embed import HashingEmbedder

OPS = Principal.operator(person="ops")


class SlowHashing(HashingEmbedder):
    """The hashing embedder, 0.5 s per call: the background thread is busy when closed."""

    name = "slow-hashing-384"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.documents = threading.Event()  # set when a batch of more than one text starts

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if len(texts) > 1:
            self.documents.set()
        time.sleep(0.5)
        return super().encode(texts)


def _embed_threads(tenant_id: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"reckon-embed-{tenant_id}" and t.is_alive()]


def test_close_stops_the_embedding_thread_and_keeps_its_vectors(tmp_path: Path) -> None:
    emb = SlowHashing()
    engine = Engine(tmp_path, embedder=emb)
    t = engine.create_tenant("closing", company_name="Acme Inc.")
    t.search("warm up the ranking", principal=OPS)  # this process ranks: embedding runs in the background
    topics = ["weekly report", "invoice currency", "meeting time", "support tone", "launch city"]
    ids = [t.remember(kind="preference", scope="company", importance=3, source="agent_tool", principal=OPS,
                      label=f"{topic} table", content=f"the {topic} goes in a table").id
           for topic in topics]
    assert emb.documents.wait(timeout=30), "the background thread never embedded the documents"
    assert _embed_threads("closing"), "the background embedding thread is not running"
    engine.close()  # while the batch is being embedded
    assert _embed_threads("closing") == []
    assert (tmp_path / "tenants" / "closing" / "recall" / "docs.npz").is_file(), "close wrote no recall snapshot"

    # reopened: every memory is found, and nothing is re-embedded that the closed thread embedded
    with Engine(tmp_path, embedder=emb) as again:
        t2 = again.tenant("closing")
        opened = emb.calls
        assert t2.recall.wait(timeout=30)
        assert t2.recall.index.pending() == 0
        assert emb.calls == opened, "the batch in progress at close lost its vectors: embedded again"
        hits = {h.memory.id for h in t2.search("table", principal=OPS, k=10)}
        assert set(ids) <= hits
        assert emb.calls - opened == 1  # the query; no document re-embedded
    assert _embed_threads("closing") == []


def test_a_closed_engine_reopens_its_tenants(tmp_path: Path) -> None:
    with Engine(tmp_path) as engine:
        t = engine.create_tenant("again", company_name="Acme Inc.")
        m = t.remember(kind="preference", scope="company", importance=3, source="agent_tool", principal=OPS,
                       label="reply in French", content="the customer writes in French")
    t2 = engine.tenant("again")  # the engine is usable after close
    assert t2 is not t
    assert t2.memory.get(m.id).label == "reply in French"
    engine.close()


def test_a_tenant_used_after_engine_close_raises_tenant_closed_and_the_engine_reopens_it(tmp_path: Path) -> None:
    """A :class:`Tenant` fetched before ``Engine.close()`` (or closed itself) refuses every
    call with :class:`reckon.TenantClosed` naming the tenant, writes nothing; the engine's
    ``tenant()`` opens a new one that sees everything."""
    import pytest

    from reckon import ReckonError, StoreError, TenantClosed

    engine = Engine(tmp_path, embedder="hashing")
    t = engine.create_tenant("acme")
    m = t.remember(kind="fact", scope="company", importance=3, source="operator", principal=OPS,
                   label="Fiscal year", content="The fiscal year starts in April")
    t.search("fiscal", principal=OPS)
    engine.close()
    calls = {
        "remember": lambda: t.remember(kind="fact", scope="company", importance=3, source="operator",
                                       principal=OPS, label="Standup", content="We meet at nine"),
        "search": lambda: t.search("fiscal", principal=OPS),
        "get": lambda: t.get(m.id, principal=OPS),
        "update": lambda: t.update(m.id, principal=OPS, content="The fiscal year starts in May"),
        "context": lambda: t.context(principal=OPS),
        "sparql": lambda: t.sparql("SELECT * WHERE { ?s ?p ?o } LIMIT 1"),
        "dump": lambda: t.dump(),
        "add_team": lambda: t.add_team("growth"),
    }
    for name, call in calls.items():
        with pytest.raises(TenantClosed, match=r"tenant 'acme' is closed.*engine\.tenant\('acme'\)") as ei:
            call()
        assert isinstance(ei.value, StoreError) and isinstance(ei.value, ReckonError), name
    again = engine.tenant("acme")
    assert again is not t
    assert [x.id for x in again.memories()] == [m.id]
    assert again.get(m.id, principal=OPS).content == "The fiscal year starts in April"
    again.close()  # Tenant.close() too
    with pytest.raises(TenantClosed):
        again.get(m.id, principal=OPS)
    assert engine.tenant("acme").get(m.id, principal=OPS).label == "Fiscal year"
    engine.close()


_EXIT_CHILD = """
import sys
from reckon.api import Engine, Principal
from tests.api.test_close import SlowHashing
ops = Principal.operator(person="ops")
emb = SlowHashing()
t = Engine(sys.argv[1], embedder=emb).create_tenant("exiting", company_name="Acme Inc.")
import uuid
t.remember_many([dict(kind="fact", scope="company", importance=3, source="agent_tool",
                      label=f"u{uuid.uuid4().hex} table", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex} table")
                 for i in range(100)], principal=ops)  # unrelated memories (no conflict between them)
t.search("table", principal=ops)  # starts the background embedding (100 pending: more than a first search waits for)
assert emb.documents.wait(timeout=60), "no batch started"
print("exiting mid-batch", flush=True)
sys.exit(0)  # no close()
"""


def test_a_process_exiting_without_close_keeps_the_vectors_it_computed(tmp_path: Path) -> None:
    """If a process (``reckon search``, a script) exits without closing its tenant while
    its embedding thread is mid-batch, then the batch finishes and its vectors are in the
    tenant's vector file the next process opens: nothing is embedded again. Before, the work was
    thrown away, so a CLI-only tenant with a backlog above the first search's wait
    never got vectors."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "engine"), str(root)]))
    r = subprocess.run([sys.executable, "-c", _EXIT_CHILD, str(tmp_path)], cwd=root, env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and "exiting mid-batch" in r.stdout, r.stderr
    emb = SlowHashing()
    with Engine(tmp_path, embedder=emb) as again:
        recall = again.tenant("exiting").recall
        assert recall.wait(timeout=60)
        assert len(recall.index) == 100 and recall.index.index.embedded_count() == 100
        assert emb.calls == 0, "the exiting process's vectors were lost: they were embedded again"
