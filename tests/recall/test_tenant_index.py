"""The tenant's recall index is derived from the store: it follows the commits of every
process and write path, embeds off the write path, and reopens after a SIGKILL with no
repair (issue "Fast where users touch it" and "Derived state is always true", item 4).

Real stores, real child processes, the hashing embedder (the model is not under test
here; ``test_embed.py`` holds the MiniLM runtimes to each other).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC
from pathlib import Path

import numpy as np
import pytest

from reckon import ConflictPending
from reckon.api import Engine, Principal
from reckon.recall import HashingEmbedder
from reckon.recall.keyword import tokenize
from reckon.recall.tenant_index import SNAPSHOT, _digest

CHILD = Path(__file__).with_name("recall_child.py")
OPS = Principal.operator(person="dana")
ANN = Principal(person="ann")
ENV = dict(os.environ, RECKON_EMBEDDER="hashing")


def fact(label: str, content: str, importance: int = 3, **kw):  # type: ignore[no-untyped-def]
    return dict(kind="fact", scope="company", importance=importance, source="operator", label=label,
                content=content, principal=OPS, **kw)


def child(data_dir: Path, tenant: str, *args: str, timeout: float = 120) -> str:
    p = subprocess.run([sys.executable, str(CHILD), str(data_dir), tenant, *args],
                       capture_output=True, text=True, timeout=timeout, env=ENV)
    assert p.returncode == 0, p.stderr
    return p.stdout


class GatedHashing(HashingEmbedder):
    """The hashing embedder, except that document encodes wait for ``gate`` (queries,
    one text starting with ``q:``, do not); counts finished document encodes."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.done = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        if not (len(texts) == 1 and texts[0].startswith("q:")):
            assert self.gate.wait(60), "gate never opened"
            self.done += len(texts)
        return super().encode(texts)


def _vector_rank(hits, mid):  # type: ignore[no-untyped-def]
    h = next(h for h in hits if h.memory.id == mid)
    assert h.explanation is not None
    return h.explanation.vector_rank


def test_write_returns_before_its_embedding_keyword_at_once_vector_later(tmp_path: Path) -> None:
    emb = GatedHashing()
    t = Engine(tmp_path, embedder=emb).create_tenant("acme")
    t.search("q: open", principal=OPS)  # the index is open in this process
    m = t.remember(**fact("Warehouse closing time", "the warehouse closes at six pm"))
    assert emb.done == 0  # the write returned while its embedding was still blocked
    hits = t.search("q: warehouse closes", principal=OPS, explain=True)
    assert [h.memory.id for h in hits] == [m.id]  # by keyword, at once
    assert _vector_rank(hits, m.id) is None and hits[0].explanation.bm25_rank == 1  # type: ignore[union-attr]
    assert t.recall.index.pending() == 1
    emb.gate.set()
    assert t.recall.wait(30)
    assert emb.done == 1 and t.recall.index.pending() == 0
    hits = t.search("q: warehouse closes", principal=OPS, explain=True)
    assert _vector_rank(hits, m.id) == 1  # by vector too, once the index caught up
    # persisted: a fresh process (here: a fresh engine) reuses the vector, embeds nothing
    emb2 = GatedHashing()
    t2 = Engine(tmp_path, embedder=emb2).tenant("acme")
    hits = t2.search("q: warehouse closes", principal=OPS, explain=True)
    assert _vector_rank(hits, m.id) == 1 and emb2.done == 0 and t2.recall.index.pending() == 0


def test_sigkill_between_commit_and_embedding_loses_no_vector(tmp_path: Path) -> None:
    e = Engine(tmp_path, embedder="hashing")
    t = e.create_tenant("acme")
    before = t.remember(**fact("Office dog", "the office dog is called Biscuit"))
    t.store.release()
    p = subprocess.Popen([sys.executable, str(CHILD), str(tmp_path), "acme", "remember-stuck", "Printer floor"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.startswith("committed "), p.stderr.read() if p.stderr else line
        mid = line.split()[1]
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    # the memory was acknowledged, its vector never computed; this process reopens with no repair
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    assert fresh.get(mid).label == "Printer floor"
    hits = fresh.search("printer floor content", principal=OPS, explain=True)
    assert hits[0].memory.id == mid  # the first ranking in this process embedded the small backlog first
    assert fresh.recall.wait(30)
    hits = fresh.search("printer floor content", principal=OPS, explain=True)
    assert _vector_rank(hits, mid) == 1
    assert {before.id, mid} <= set(fresh.context(OPS, "where is the printer?").ids()) | {before.id, mid}
    report = fresh.recall.check()
    assert report["conforms"] and report["documents"] == 2 and report["vectors"] == 2


def _killed_child(data: Path, command: list[str], rng: random.Random, *, want: tuple[int, int],
                  pause: float) -> list[str]:
    """Run ``recall_child.py DATA acme COMMAND...``, read between ``want`` acknowledged
    writes (``acked <id>`` lines), SIGKILL it up to ``pause`` seconds later, and return
    every id it acknowledged (those printed before it died included)."""
    p = subprocess.Popen([sys.executable, str(CHILD), str(data), "acme", *command],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert p.stdout is not None
    n = rng.randint(*want)
    got: list[str] = []
    deadline = time.monotonic() + 120
    while len(got) < n and time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        got.append(line.split()[1])
    time.sleep(rng.random() * pause)
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    rest = p.stdout.read().split()
    got += [rest[i + 1] for i in range(len(rest) - 1) if rest[i] == "acked"]
    assert got, p.stderr.read() if p.stderr else "child printed nothing"
    return got


def test_sigkill_during_remember_reopens_with_nothing_acknowledged_lost(tmp_path: Path) -> None:
    """Kill a writer (index open, searching after each write) at random moments; after
    each kill the tenant opens, search and bundle work, every acknowledged memory is
    there and found, and the recall index equals a rebuild from the store."""
    e = Engine(tmp_path, embedder="hashing")
    e.create_tenant("acme").store.close()
    rng = random.Random(8)
    acked: list[str] = []
    for _ in range(4):
        # killed somewhere inside the next write
        acked += _killed_child(tmp_path, ["loop", "200"], rng, want=(2, 12), pause=0.05)
        t = Engine(tmp_path, embedder="hashing").tenant("acme")
        ids = {m.id for m in t.memories()}
        assert set(acked) <= ids
        for mid in rng.sample(acked, min(3, len(acked))):
            label = t.get(mid).label
            assert mid in [h.memory.id for h in t.search(label, principal=OPS, k=20)]
        t.context(OPS, "what do we know?")
        report = t.recall.check()
        assert report["conforms"], report
        assert report["documents"] == len(ids)
        t.store.close()


def test_demotion_in_another_process_reaches_this_process_search(tmp_path: Path) -> None:
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    m = t.remember(**fact("Invoice terms", "invoices are due in thirty days", importance=5))
    assert t.search("invoices due thirty days", principal=ANN) == []  # importance 5: preloaded, not long tail
    t.store.release()
    child(tmp_path, "acme", "update", m.id, "3")
    assert [h.memory.id for h in t.search("invoices due thirty days", principal=ANN)] == [m.id]
    t.store.release()
    child(tmp_path, "acme", "update", m.id, "5")
    assert t.search("invoices due thirty days", principal=ANN) == []
    t.store.release()
    new = child(tmp_path, "acme", "remember", "Parking rules", "visitors park on level two").strip()
    assert [h.memory.id for h in t.search("visitors park level", principal=ANN)] == [new]
    assert t.recall.index.rebuilds == 1  # followed the other process's commits, no rebuild


def test_replaced_memory_leaves_the_index(tmp_path: Path) -> None:
    """The index follows the commit's delta, not the caller's arguments: after
    ``conflict_resolution="replace"`` the superseded memory is gone from search."""
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    t.search("open", principal=OPS)
    old = t.remember(**fact("Report format", "weekly performance reports by platform"))
    lee = Principal(person="lee", role="operator")
    again = dict(fact("Report format", "monthly performance reports by platform"), principal=lee)
    with pytest.raises(ConflictPending) as c:
        t.remember(**again)
    new = t.remember(**again, conflict_resolution="replace", conflict_id=c.value.conflict_id)
    assert not t.get(old.id).active
    assert old.id not in t.recall.index and new.id in t.recall.index
    ids = [h.memory.id for h in t.search("performance reports platform", principal=OPS, importance="all")]
    assert ids == [new.id]
    assert t.recall.check()["conforms"]


def test_torn_vector_file_and_bad_snapshot_reopen_without_repair(tmp_path: Path) -> None:
    e = Engine(tmp_path, embedder="hashing")
    t = e.create_tenant("acme")
    ms = [t.remember(**fact(f"Topic {w}", f"notes about {w} and more")) for w in ("alpha", "bravo", "charlie")]
    assert t.recall.wait(30)
    t.recall.index.close()
    d = t.store.path / "recall"
    vec = next(d.glob("vectors-*.f32"))
    with open(vec, "ab") as f:  # a writer killed in the middle of a record
        f.write(b"RKV1" + os.urandom(100))
    (d / SNAPSHOT).write_text('{"version": 1, "tenant": "acme", "generation": 3, "docs": [')  # torn
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    hits = fresh.search("notes about bravo", principal=OPS, explain=True)
    assert hits[0].memory.id == ms[1].id and _vector_rank(hits, ms[1].id) == 1
    assert fresh.recall.index.pending() == 0  # every vector was still readable
    assert fresh.recall.check()["conforms"]
    # the next append cuts the torn tail and stays aligned
    m4 = fresh.remember(**fact("Topic delta", "notes about delta and more"))
    assert fresh.recall.wait(30)
    again = Engine(tmp_path, embedder="hashing").tenant("acme")
    hits = again.search("notes about delta", principal=OPS, explain=True)
    assert hits[0].memory.id == m4.id and _vector_rank(hits, m4.id) == 1
    assert again.recall.index.pending() == 0


def test_snapshot_and_commits_open_without_rereading_every_memory(tmp_path: Path) -> None:
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    for w in ("alpha", "bravo", "charlie", "delta"):
        t.remember(**fact(f"Topic {w}", f"notes about {w}"))
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    t.recall.index.close()  # writes the snapshot
    with np.load(t.store.path / "recall" / SNAPSHOT, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes())
        assert int(z["has"].sum()) == 4  # the vectors travel with the snapshot
    assert meta["generation"] == t.store.generation() and meta["n"] == 4 and meta["version"] == 4
    t.store.release()
    child(tmp_path, "acme", "update", t.memories()[0].id, "2")
    new = child(tmp_path, "acme", "remember", "Topic echo", "notes about echo").strip()
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    assert fresh.recall.wait(30)
    assert [h.memory.id for h in fresh.search("notes about echo", principal=OPS)][0] == new
    assert fresh.recall.index.rebuilds == 0  # snapshot + the two commits from the journal
    assert fresh.recall.check()["conforms"]


def test_check_reports_a_document_that_disagrees_with_the_store(tmp_path: Path) -> None:
    """The check is a real comparison with a rebuild: a document dropped or changed behind
    the index's back (a bug) is reported."""
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    a = t.remember(**fact("Topic alpha", "notes about alpha"))
    b = t.remember(**fact("Topic bravo", "notes about bravo"))
    idx = t.recall.index
    idx.sync()
    idx.index.remove(a.id)
    idx.index.update(b.id, importance=4)
    r = t.recall.check()
    assert not r["conforms"] and r["missing"] == [a.id] and r["stale"] == [b.id] and r["extra"] == []
    assert r["repaired"] and t.recall.check()["conforms"]  # rebuilt from the store: nothing to do by hand


def test_expiry_by_the_clock_leaves_the_index(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    t0 = datetime(2026, 3, 2, 9, 0, 0, 123456, tzinfo=UTC)
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    t.tick(t0)
    m = t.remember(**fact("Promo code", "spring promo code SPRING26", expires_at=t0 + timedelta(days=2)))
    assert [h.memory.id for h in t.search("spring promo code", principal=OPS)] == [m.id]
    t.tick(t0 + timedelta(days=3))
    assert t.search("spring promo code", principal=OPS) == []
    assert m.id not in t.recall.index


def test_deleting_a_tenant_while_its_index_embeds_leaves_no_directory(tmp_path: Path) -> None:
    """The embedding thread of a deleted tenant must not recreate its folder (a zombie
    folder would make `create_tenant` of the same id fail with TenantExists)."""
    emb = GatedHashing()
    e = Engine(tmp_path, embedder=emb)
    t = e.create_tenant("acme")
    t.search("q: open", principal=OPS)
    t.remember(**fact("Warehouse closing time", "the warehouse closes at six pm"))
    e.delete_tenant("acme")
    emb.gate.set()  # the thread finishes its batch after the deletion
    time.sleep(0.5)
    assert not (tmp_path / "tenants" / "acme").exists()
    again = e.create_tenant("acme")
    assert again.memories() == []


# --------------------------------------------------------------------------- property
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_OPS = st.lists(
    st.tuples(st.sampled_from(["remember", "update", "supersede", "delete", "read"]),
              st.integers(0, 1),  # which of two engines (two mirrors, two indexes) acts
              st.integers(0, 30),  # which memory (modulo the ones written)
              st.integers(2, 5)),  # importance
    min_size=3, max_size=14)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_two_engines_indexes_equal_an_oracle_after_every_step(tmp_path_factory, ops) -> None:  # type: ignore[no-untyped-def]
    """Random writes through two engines on one tenant (each with its own store mirror and
    recall index, so each learns the other's commits from the journal): after every step
    the acting engine's index holds exactly the active memories, with their importance,
    as an oracle kept in plain Python says."""
    import uuid

    d = tmp_path_factory.mktemp("prop")
    Engine(d, embedder="hashing").create_tenant("acme").store.close()
    ts = [Engine(d, embedder="hashing").tenant("acme") for _ in range(2)]
    for t in ts:
        t.search("open", principal=OPS)
    oracle: dict[str, dict[str, object]] = {}  # id -> {"importance", "active"}
    order: list[str] = []
    for op, who, k, imp in ops:
        t = ts[who]
        live = [i for i in order if oracle[i]["active"]]
        if op == "remember" or not live:
            w = uuid.uuid4().hex
            m = t.remember(**fact(f"w{w[:10]}", f"c{w[10:20]} d{w[20:]}", importance=imp))
            oracle[m.id] = {"importance": imp, "active": True}
            order.append(m.id)
        elif op == "update":
            mid = live[k % len(live)]
            t.update(mid, principal=OPS, importance=imp)
            oracle[mid]["importance"] = imp
        elif op == "supersede":
            mid = live[k % len(live)]
            w = uuid.uuid4().hex
            new = t.supersede(mid, {"kind": "fact", "scope": "company", "importance": imp, "source": "operator",
                                    "label": f"w{w[:10]}", "content": f"c{w[10:20]} d{w[20:]}"}, principal=OPS)
            oracle[mid]["active"] = False
            oracle[new.id] = {"importance": imp, "active": True}
            order.append(new.id)
        elif op == "delete":
            mid = live[k % len(live)]
            t.delete(mid, principal=OPS)
            oracle[mid]["active"] = False
        t.store.release()
        idx = t.recall.index
        idx.sync()
        want = {i: o["importance"] for i, o in oracle.items() if o["active"]}
        assert {i: idx.index.get(i).importance for i in idx.index.ids()} == want
    # one rebuild: the first open (the second engine opened from its snapshot); every
    # other step followed the commits, the other engine's from the journal
    assert sum(t.recall.index.rebuilds for t in ts) == 1
    for t in ts:
        r = t.recall.index.check(repair=False)
        assert r["conforms"], r
        t.store.close()


def test_snapshot_reopens_with_documents_vectors_and_tokens_and_no_vector_file_read(tmp_path: Path) -> None:
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    ids = [t.remember(**fact(f"Topic {w}", f"notes about {w} \u00e9t\u00e9 caf\u00e9 don't", importance=2 + i % 2)).id
           for i, w in enumerate(("alpha", "bravo", "charlie"))]
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    before = {i: t.recall.index.index.embedding(i) for i in ids}
    t.recall.index.close()
    t.store.release()
    files = list((t.store.path / "recall").glob("vectors-*.f32"))
    assert len(files) == 1
    files[0].unlink()  # the snapshot alone must carry them
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    ix = fresh.recall.index
    assert ix.rebuilds == 0 and ix.pending() == 0
    for i in ids:
        assert np.array_equal(ix.index.embedding(i), before[i])
    assert [h.memory.id for h in fresh.search("bravo notes", principal=OPS)][0] == ids[1]
    assert fresh.recall.check()["conforms"]  # text, time, metadata and extras equal the store


def test_version_1_snapshot_is_read_then_replaced(tmp_path: Path) -> None:
    from reckon.recall.tenant_index import LEGACY_SNAPSHOT

    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    m = t.remember(**fact("Topic alpha", "notes about alpha"))
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    t.recall.index.close()
    t.store.release()
    d = t.store.path / "recall"
    (d / SNAPSHOT).unlink()
    doc = t.recall.document(t.get(m.id))
    v1 = {"version": 1, "tenant": "acme", "generation": t.store.generation(), "incarnation": None,
          "docs": [{**doc, "time": doc["time"].isoformat()}]}
    (d / LEGACY_SNAPSHOT).write_text(json.dumps(v1))
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    assert fresh.recall.index.rebuilds == 0  # read, not rebuilt
    assert [h.memory.id for h in fresh.search("alpha notes", principal=OPS)] == [m.id]
    assert (d / SNAPSHOT).exists() and not (d / LEGACY_SNAPSHOT).exists()
    assert fresh.recall.check()["conforms"]


def test_vector_file_is_compacted_and_live_vectors_survive(tmp_path: Path) -> None:
    """Superseded and deleted memories' vectors leave the append-only file once it
    holds more than twice what the live documents use (plus a slack); every live
    document keeps its vector, in this process and in a fresh one (nothing re-embedded)."""
    eng = Engine(tmp_path, embedder="hashing")
    t = eng.create_tenant("acme")
    t.search("open", principal=OPS)
    words = ("aspen birch cedar dahlia elm fern gorse hazel iris juniper kelp larch").split()
    made = [t.remember(**fact(f"{w} report", f"{w} {w}s grow near the {w} observation post")) for w in words]
    t.recall.wait(timeout=60)
    for m in made[:9]:
        t.delete(m.id, principal=OPS)
    keep = made[9:]
    ix = t.recall.index
    ix.sync()
    vf = ix._vector_file()  # noqa: SLF001
    before = vf.path.stat().st_size
    assert ix.maybe_compact() == 0  # under the threshold (2x live + 1024 records)
    dropped = ix.maybe_compact(factor=2.0, slack=0)
    assert dropped == 9
    assert vf.path.stat().st_size < before
    hits = t.search("observation post", principal=OPS, importance="all")
    assert {h.memory.id for h in hits} == {m.id for m in keep}
    assert all(ix.index.embedding(m.id) is not None for m in keep)
    t.store.close()
    t2 = Engine(tmp_path, embedder="hashing").tenant("acme")
    ix2 = t2.recall.index
    assert all(ix2.index.embedding(m.id) is not None for m in keep)
    assert ix2.pending() == 0


def _bm25_from_scratch(ix, query: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """BM25 of every document of ``ix`` (a TenantIndex), from a keyword index built anew
    on its current texts (the oracle for a loaded one)."""
    from reckon.recall.keyword import KeywordIndex

    kw = KeywordIndex(k1=ix.index.config.bm25_k1, b=ix.index.config.bm25_b)
    kw.add_many((i, ix.index.get(i).text) for i in ix.index.ids())
    ids, s = kw.scores(query)
    return dict(zip(ids, s.tolist(), strict=True))


def _bm25(ix, query: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    ids, s = ix.index._kw.scores(query)  # noqa: SLF001
    return dict(zip(ids, s.tolist(), strict=True))


def test_bm25_arrays_reopen_and_follow_commits_of_other_processes(tmp_path: Path) -> None:
    """The snapshot carries the BM25 postings: a fresh process opens without tokenising,
    follows the commits another process made since (an update, a new memory, a delete)
    and scores exactly as an index built from scratch on the current documents."""
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    ms = [t.remember(**fact(f"Topic {w}", f"notes about {w} and the spring launch {w}")) for w in
          ("alpha", "bravo", "charlie", "delta", "echo")]
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    t.recall.index.close()
    t.store.release()
    with np.load(t.store.path / "recall" / SNAPSHOT, allow_pickle=False) as z:
        assert {"kw.terms.blob", "kw.off", "kw.doc", "kw.tf"} <= set(z.files)
        assert "tokens.blob" not in z.files and "kw.dl" not in z.files  # the postings are the only copy
        tb, to = z["text.blob"].tobytes(), z["text.off"].tolist()
        # every token of every document posted once
        assert int(z["kw.tf"].sum()) == sum(len(tokenize(tb[a:b].decode())) for a, b in zip(to, to[1:]))
    child(tmp_path, "acme", "update", ms[0].id, "2")
    new = child(tmp_path, "acme", "remember", "Topic foxtrot", "notes about foxtrot launch").strip()
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    fresh.delete(ms[2].id, principal=OPS)  # a removal in this process moves a loaded slot
    fresh.remember(**fact("Topic golf", "spring notes about golf"))
    ix = fresh.recall.index
    ix.sync()
    assert ix.rebuilds == 0
    for q in ("notes about", "spring launch", "foxtrot", "alpha", "charlie", "golf spring"):
        assert _bm25(ix, q) == _bm25_from_scratch(ix, q), q
    hits = [h.memory.id for h in fresh.search("foxtrot launch", principal=OPS)]
    assert hits[0] == new and ms[2].id not in hits
    assert ix.index.get(ms[0].id).importance == 2
    assert fresh.recall.check()["conforms"]


def test_version_2_snapshot_is_read_then_rewritten_with_the_bm25_arrays(tmp_path: Path) -> None:
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    m = t.remember(**fact("Topic alpha", "notes about alpha"))
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    t.recall.index.close()
    t.store.release()
    path = t.store.path / "recall" / SNAPSHOT
    with np.load(path, allow_pickle=False) as z:
        cols = {k: v for k, v in _as_version_3({k: z[k] for k in z.files}).items() if not k.startswith("kw.")}
    meta = json.loads(cols["meta"].tobytes())
    cols["meta"] = np.frombuffer(json.dumps({**meta, "version": 2}).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **cols)
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    assert fresh.recall.index.rebuilds == 0  # read, not rebuilt
    assert [h.memory.id for h in fresh.search("alpha notes", principal=OPS)] == [m.id]
    with np.load(path, allow_pickle=False) as z:
        assert json.loads(z["meta"].tobytes())["version"] == 4 and "kw.doc" in z.files


def test_sigkill_while_the_snapshot_is_written_never_serves_a_wrong_index(tmp_path: Path) -> None:
    """Kill a process that rewrites the snapshot after every write, at random moments
    (often mid-write): the next process opens from the last whole snapshot (or rebuilds),
    catches up from the journal and equals a rebuild; every acknowledged memory is found."""
    e = Engine(tmp_path, embedder="hashing")
    e.create_tenant("acme").store.close()
    rng = random.Random(12)
    acked: list[str] = []
    for _ in range(3):
        # killed inside the next snapshot write, or the write after it
        acked += _killed_child(tmp_path, ["snapshot-loop", "300"], rng, want=(3, 15), pause=0.03)
        t = Engine(tmp_path, embedder="hashing").tenant("acme")
        ix = t.recall.index
        for mid in rng.sample(acked, min(4, len(acked))):
            assert mid in [h.memory.id for h in t.search(t.get(mid).label, principal=OPS, k=20)]
        assert _bm25(ix, "snap") == _bm25_from_scratch(ix, "snap")
        report = ix.check(repair=False)
        assert report["conforms"], report
        ids = {m.id for m in t.memories()}
        assert set(acked) <= ids and report["documents"] == len(ids)
        t.store.close()


def _snapshotted(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A tenant of three memories whose index was closed (snapshot written): the tenant,
    the memories and the snapshot's path."""
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    ms = [t.remember(**fact(f"Topic {w}", f"notes about {w} river stone {x}"))
          for w, x in (("alpha", "granite"), ("bravo", "basalt basalt"), ("charlie", "granite marble"))]
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    t.recall.index.close()
    t.store.release()
    return t, ms, t.store.path / "recall" / SNAPSHOT


def _strings(cols: dict[str, np.ndarray], name: str) -> list[str | None]:
    blob, off, none = cols[f"{name}.blob"].tobytes(), cols[f"{name}.off"].tolist(), cols[f"{name}.none"].tolist()
    return [None if z else blob[a:b].decode("utf-8", "surrogatepass") for a, b, z in zip(off, off[1:], none)]


def _put_strings(cols: dict[str, np.ndarray], name: str, values: list[str | None]) -> None:
    parts = [v.encode("utf-8", "surrogatepass") if v is not None else b"" for v in values]
    cols[f"{name}.blob"] = np.frombuffer(b"".join(parts), dtype=np.uint8)
    cols[f"{name}.off"] = np.concatenate([[0], np.cumsum([len(x) for x in parts], dtype=np.int64)]).astype(np.int64)
    cols[f"{name}.none"] = np.array([v is None for v in values], dtype=bool)


def _as_version_3(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The columns of a version 4 snapshot as a version 3 writer wrote them: filter
    columns as strings, a ``tokens`` column (each text's tokens joined by spaces), the
    document lengths ``kw.dl``, no digest."""
    meta = json.loads(cols["meta"].tobytes())
    n = int(meta["n"])
    out = {k: v for k, v in cols.items() if ".vocab." not in k and not k.endswith(".code")}
    for name in ("scope", "kind", "owner", "teams"):
        vocab = _strings(cols, f"{name}.vocab")
        _put_strings(out, name, [vocab[c] for c in cols[f"{name}.code"].tolist()])
    _put_strings(out, "tokens", [" ".join(tokenize(t or "")) for t in _strings(cols, "text")])
    dl = np.bincount(cols["kw.doc"], weights=cols["kw.tf"], minlength=n)
    out["kw.dl"] = np.maximum(dl, 1).astype(np.int32)
    meta = {k: v for k, v in meta.items() if k != "digest"}
    out["meta"] = np.frombuffer(json.dumps({**meta, "version": 3}).encode(), dtype=np.uint8)
    return out


def _rewrite(path: Path, cols: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:
        np.savez(f, **cols)


def _damage_snapshot(path: Path, damage: str, version: int = 4) -> None:
    """Rewrite the snapshot at ``path`` (as the writer of ``version`` wrote it) with one
    kind of ``damage``."""
    if damage == "flip":  # a byte of the stored (uncompressed) text column: the zip CRC
        raw = bytearray(path.read_bytes())
        at = raw.find(b"notes about bravo")
        assert at > 0
        raw[at] ^= 0x20
        path.write_bytes(bytes(raw))
        return
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return
    if damage == "pickle":
        with open(path, "wb") as f:
            np.savez(f, meta=np.array([{"version": 2}], dtype=object))
        return
    with np.load(path, allow_pickle=False) as z:
        cols = {k: z[k].copy() for k in z.files}
    if version == 3:
        cols = {k: np.array(v) for k, v in _as_version_3(cols).items()}
    tb, to = cols["kw.terms.blob"].tobytes(), cols["kw.terms.off"].tolist()
    terms = [tb[a:b].decode() for a, b in zip(to, to[1:])]
    off, doc, tf = cols["kw.off"], cols["kw.doc"], cols["kw.tf"]

    def postings(term: str) -> range:
        j = terms.index(term)
        return range(int(off[j]), int(off[j + 1]))

    a, b = postings("alpha")[0], postings("bravo")[0]
    if damage == "bad-importance":
        cols["importance"][1] = 9
    elif damage == "bad-postings":
        doc[0] = 99  # a document number past the end
    elif damage == "swap-docs":  # alpha's document and bravo's exchanged
        doc[a], doc[b] = doc[b], doc[a]
    elif damage == "move-posting":  # charlie's marble moved to alpha's document
        doc[postings("marble")[0]] = doc[a]
    elif damage == "tf":
        tf[postings("basalt")[0]] = 1  # bravo says basalt twice
    elif damage == "dl":
        cols["kw.dl"][int(doc[a])] += 1
    elif damage == "bad-code":  # a scope code past its vocabulary
        cols["scope.code"][0] = len(_strings(cols, "scope.vocab"))
    elif damage == "vocab-twice":  # two codes for one kind: a filter on it would miss rows
        _put_strings(cols, "kind.vocab", [*_strings(cols, "kind.vocab"), "fact"])
        cols["kind.code"][0] = len(_strings(cols, "kind.vocab")) - 1
    elif damage == "digest":  # every array as written, the writer's digest not
        meta = json.loads(cols["meta"].tobytes())
        cols["meta"] = np.frombuffer(json.dumps({**meta, "digest": "0" * 32}).encode(), dtype=np.uint8)
    elif damage == "anagram-term":  # "alpha" renamed "ahpla" (same bytes, other order)
        j = terms.index("alpha")
        blob = bytearray(tb)
        blob[to[j]:to[j + 1]] = b"ahpla"
        cols["kw.terms.blob"] = np.frombuffer(bytes(blob), dtype=np.uint8)
    elif damage in ("duplicate-doc", "duplicate-doc-unsorted"):  # granite's two postings name one document
        g0, g1 = postings("granite")
        doc[g1] = doc[g0]
        if damage == "duplicate-doc-unsorted":  # ... and another term out of document order
            n0, n1 = postings("notes")[:2]
            doc[n0], doc[n1], tf[n0], tf[n1] = doc[n1], doc[n0], tf[n1], tf[n0]
    else:
        raise AssertionError(damage)
    with open(path, "wb") as f:
        np.savez(f, **cols)


_DAMAGES = ["flip", "truncate", "pickle", "bad-postings", "bad-importance", "swap-docs", "move-posting", "tf",
            "anagram-term", "duplicate-doc", "duplicate-doc-unsorted"]


@pytest.mark.parametrize(("version", "damage"), [
    *((4, d) for d in [*_DAMAGES, "bad-code", "vocab-twice", "digest"]),
    *((3, d) for d in [*_DAMAGES, "dl"] if d not in ("flip", "truncate", "pickle"))])
def test_damaged_snapshot_is_rebuilt_from_the_store_never_served(tmp_path: Path, version: int, damage: str) -> None:
    """A snapshot whose bytes were damaged (a flipped byte: the zip CRC; cut short), that
    holds a pickle, whose arrays do not fit together (a code outside its vocabulary, a
    value twice in one), or whose postings fit together (every number in range) but are
    not the ones the writer wrote -- two documents exchanged, a posting moved, a
    frequency changed, a term renamed to an anagram, a document listed twice in a term
    (postings in document order or not): version 4 by its digest, version 3 by its
    tokens column (and a length changed) -- is not served: the index is rebuilt from
    the store, scores as one built anew, and a good snapshot is written again."""
    t, ms, path = _snapshotted(tmp_path)
    _damage_snapshot(path, damage, version)
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    ix = fresh.recall.index
    assert ix.rebuilds == 1
    for q in ("alpha river", "basalt", "granite marble", "bravo stone"):
        assert _bm25(ix, q) == _bm25_from_scratch(ix, q), q
    assert [h.memory.id for h in fresh.search("alpha", principal=OPS)][0] == ms[0].id
    assert [h.memory.id for h in fresh.search("notes about bravo", principal=OPS)][0] == ms[1].id
    assert fresh.recall.check()["conforms"]
    ix.close()
    with np.load(path, allow_pickle=False) as z:
        assert json.loads(z["meta"].tobytes())["generation"] == fresh.store.generation()


def test_snapshot_of_an_older_writer_with_postings_out_of_document_order_is_served(tmp_path: Path) -> None:
    """Postings written in another order than increasing document number (a version 3
    snapshot of an older writer, whose postings followed the order of writes) are still the
    documents' tokens: the snapshot is read, not rebuilt, and scores as an index built anew;
    the next snapshot lists every term's postings in document order."""
    t, ms, path = _snapshotted(tmp_path)
    with np.load(path, allow_pickle=False) as z:
        cols = {k: np.array(v) for k, v in _as_version_3({k: z[k].copy() for k in z.files}).items()}
    off = cols["kw.off"]
    for a, b in zip(off[:-1].tolist(), off[1:].tolist()):
        cols["kw.doc"][a:b] = cols["kw.doc"][a:b][::-1].copy()
        cols["kw.tf"][a:b] = cols["kw.tf"][a:b][::-1].copy()
    assert any(b - a > 1 for a, b in zip(off.tolist(), off[1:].tolist()))  # some term's order did change
    with open(path, "wb") as f:
        np.savez(f, **cols)
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    ix = fresh.recall.index
    assert ix.rebuilds == 0  # read, not rebuilt
    for q in ("alpha river", "basalt", "granite marble", "bravo stone", "notes"):
        assert _bm25(ix, q) == _bm25_from_scratch(ix, q), q
    assert [h.memory.id for h in fresh.search("granite marble", principal=OPS)][0] == ms[2].id
    fresh.remember(**fact("Topic delta", "notes about delta river granite"))  # a write: a new snapshot
    ix.sync()
    ix.close()
    with np.load(path, allow_pickle=False) as z:
        off, doc = z["kw.off"], z["kw.doc"]
        for a, b in zip(off[:-1].tolist(), off[1:].tolist()):
            assert np.all(np.diff(doc[a:b]) > 0)


def test_version_3_snapshot_is_served_then_rewritten_as_version_4(tmp_path: Path) -> None:
    """A version 3 snapshot (filter columns as strings, a tokens column) is read, not
    rebuilt, scores and filters as the version 4 one it was made from, and the next
    snapshot is version 4."""
    t, ms, path = _snapshotted(tmp_path)
    before = Engine(tmp_path, embedder="hashing").tenant("acme")
    want = {q: [h.memory.id for h in before.search(q, principal=OPS)] for q in ("granite", "basalt river", "notes")}
    before.recall.index.close(save=False)
    before.store.close()
    with np.load(path, allow_pickle=False) as z:
        _rewrite(path, _as_version_3({k: z[k] for k in z.files}))
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    ix = fresh.recall.index
    assert ix.rebuilds == 0
    assert {q: [h.memory.id for h in fresh.search(q, principal=OPS)] for q in want} == want
    for q in ("alpha river", "basalt", "granite marble"):
        assert _bm25(ix, q) == _bm25_from_scratch(ix, q), q
    assert fresh.recall.check()["conforms"]
    ix.close()
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes())
        assert meta["version"] == 4 and meta["digest"] == _digest({k: z[k] for k in z.files})


def test_a_fresh_process_makes_records_only_for_what_it_reads(tmp_path: Path) -> None:
    """Opening from a snapshot makes no record per document: a search makes the records
    of its hits (and the documents its ranking reads), the rest stay columns; the records
    made equal the store's memories (text with accents, context, teams, extras, time),
    and the next snapshot carries the documents never made exactly as loaded."""
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    ms = [t.remember(**fact(f"Sujet {i} \u00e9t\u00e9", f"notes caf\u00e9 {w} \u2603 d\u00e9j\u00e0 vu",
                            importance=2 + i % 3))
          for i, w in enumerate(("alpha", "bravo", "charlie", "delta", "echo", "foxtrot"))]
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    t.recall.index.close()
    t.store.release()
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    ix = fresh.recall.index
    docs = ix.index._docs  # noqa: SLF001
    assert len(docs) == len(ms) and len(docs._made) == 0  # noqa: SLF001
    hits = [h.memory.id for h in fresh.search("charlie", principal=OPS, k=1)]
    assert len(hits) == 1 and hits[0] in {m.id for m in ms}
    assert 1 <= len(docs._made) < len(ms)  # noqa: SLF001
    assert fresh.recall.index.check(repair=False)["conforms"]  # every record made now equals the store
    ix._snap_gen = None  # noqa: SLF001 - write the snapshot again from the records and columns as they are
    assert ix.save_snapshot()
    again = Engine(tmp_path, embedder="hashing").tenant("acme")
    assert again.recall.index.rebuilds == 0
    for m in ms:
        a, b = again.recall.index.index.get(m.id), fresh.recall.index.index.get(m.id)
        assert (a.text, a.context, a.time, a.importance, a.scope, a.kind, a.owner, a.teams, a.extra) == \
            (b.text, b.context, b.time, b.importance, b.scope, b.kind, b.owner, b.teams, b.extra)
    assert again.recall.index.check(repair=False)["conforms"]


def test_close_waits_for_the_idle_snapshot_in_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedding thread, idle, writes a snapshot on its way out: ``Tenant.close(wait=...)``
    waits for that write (a slow disk simulated by a slow write), as for a batch in progress --
    for every such write, including an older thread's still writing when a newer one (started
    by the next write) goes idle too (CI caught close waiting only for the newest)."""
    from reckon.recall import tenant_index as TI

    monkeypatch.setattr(TI, "_IDLE_S", 0.1)
    started: list[int] = []
    log: list[str] = []
    active: list[int] = []  # idle writes in progress
    original = TI.TenantIndex._maybe_snapshot

    mine: list[object] = []  # this test's index: another test's index left open in this
    # process (its daemon thread still running) also goes idle under the patched _IDLE_S

    def slow(self, *, idle: bool = False) -> None:  # type: ignore[no-untyped-def]
        if not idle or self not in mine:
            original(self, idle=idle)
            return
        active.append(1)
        started.append(1)
        try:
            time.sleep(3.0 if len(started) == 1 else 0.3)  # a slow disk; the first write slowest
            original(self, idle=idle)
        finally:
            active.pop()
            log.append("idle snapshot written")

    monkeypatch.setattr(TI.TenantIndex, "_maybe_snapshot", slow)
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    t.search("warm", principal=OPS)  # this process ranks: the queue is embedded in the background
    mine.append(t._recall.index)  # noqa: SLF001
    t.remember(**fact("Warehouse closing time", "the warehouse closes at six pm"))
    deadline = time.monotonic() + 60
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started, "the embedding thread never went idle"
    t.remember(**fact("Loading dock hours", "the loading dock opens at seven am"))  # a new thread
    while len(started) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(started) >= 2, "the second embedding thread never went idle"
    t.close(wait=30)
    assert active == [], "close returned while an idle snapshot was being written"
    assert len(log) >= 2 and set(log) == {"idle snapshot written"}


def test_search_returns_while_a_snapshot_export_is_in_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The BM25 export of a snapshot runs outside the index's lock: a search (whose sync
    takes that lock) and a write both return while an export is held at a gate. The
    snapshot written is the generation the export started from; the write made during
    it lands in the next snapshot, and a fresh process opens both, nothing lost."""
    from reckon.recall import keyword

    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    first = [t.remember(**fact(f"Topic {w}", f"notes about {w} river stone")) for w in ("alpha", "bravo", "charlie")]
    t.search("alpha", principal=OPS)
    assert t.recall.wait(30)
    ti = t.recall.index
    gen0 = t.store.generation()
    entered, release = threading.Event(), threading.Event()
    real = keyword.FrozenKeywords.export

    def gated(self: keyword.FrozenKeywords, order: list[str], **kw: bool) -> dict[str, object]:
        entered.set()
        assert release.wait(60), "export gate never opened"
        return real(self, order, **kw)  # type: ignore[return-value]

    monkeypatch.setattr(keyword.FrozenKeywords, "export", gated)
    with ti._save_lock:  # noqa: SLF001 - an idle snapshot still in flight would mark gen0 written after us
        ti._snap_gen = None  # noqa: SLF001 - force a write of the current generation
    saver = threading.Thread(target=ti.save_snapshot)
    saver.start()
    try:
        assert entered.wait(30)
        # the export is held: a search syncs and ranks, a write commits and is found
        out: dict[str, object] = {}

        def reader() -> None:
            out["hits"] = t.search("bravo river", principal=OPS)
            out["late"] = late = t.remember(**fact("Topic delta", "notes about delta lagoon granite"))
            out["found"] = [h.memory.id for h in t.search("delta lagoon", principal=OPS)]
            out["late_id"] = late.id

        r = threading.Thread(target=reader)
        r.start()
        r.join(60)  # not a timing bound: with the export under the lock this never returns
        assert not r.is_alive(), "a search or write waited for the snapshot export"
        assert saver.is_alive()  # all of the above ran while the export waited
        hits = out["hits"]
        assert isinstance(hits, list) and hits[0].memory.id == first[1].id
        assert out["late_id"] in out["found"]  # type: ignore[operator]
        late = out["late"]
    finally:
        release.set()
        saver.join(60)
    monkeypatch.setattr(keyword.FrozenKeywords, "export", real)
    path = t.store.path / "recall" / SNAPSHOT
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes())
    assert meta["generation"] == gen0 and meta["n"] == 3  # consistent with one generation
    assert ti._snap_gen == gen0 < ti._gen  # noqa: SLF001 - the write is for the next snapshot
    assert ti.save_snapshot()  # the next snapshot holds the late write
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes())
    assert meta["generation"] == t.store.generation() and meta["n"] == 4
    ti.close()
    t.store.release()
    fresh = Engine(tmp_path, embedder="hashing").tenant("acme")
    assert late.id in [h.memory.id for h in fresh.search("delta lagoon", principal=OPS)]
    assert fresh.recall.index.rebuilds == 0 and fresh.recall.check()["conforms"]


def test_frozen_keyword_view_is_unchanged_by_writes_and_exports_as_it_was() -> None:
    """Copy-on-write: writes (new, re-indexed and removed documents, on loaded and on
    written terms) after :meth:`KeywordIndex.frozen` leave the view's export equal to an
    export taken at that moment under the lock."""
    from reckon.recall.keyword import KeywordIndex

    kw = KeywordIndex()
    kw.add_many([(f"d{i}", f"granite river {'basalt ' * (i % 3)}stone {i}") for i in range(20)])
    e = kw.export([f"d{i}" for i in range(20)])
    loaded = KeywordIndex()
    loaded.load([f"d{i}" for i in range(20)], e["tokens"], e["dl"], e["terms"], e["off"], e["doc"], e["tf"])  # type: ignore[arg-type]
    loaded.add("d3", "granite lagoon")  # a written term beside loaded ones
    order = list(reversed([f"d{i}" for i in range(20)]))
    want = loaded.export(order)
    with loaded.frozen() as view:
        loaded.add("d3", "marble")
        loaded.add("d5", "granite granite lagoon")
        loaded.remove("d0")
        loaded.add("new", "river lagoon basalt")
        got = view.export(order)
    for k in ("off", "doc", "tf", "dl"):
        assert np.array_equal(got[k], want[k]), k  # type: ignore[arg-type]
    assert got["terms"] == want["terms"] and got["tokens"] == want["tokens"]
    assert loaded._cow is None  # noqa: SLF001 - the view was released
