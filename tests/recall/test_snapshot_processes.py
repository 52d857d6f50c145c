"""A fresh process serves the same search as the process that wrote the tenant, through
the recall snapshots that writer's embedding thread wrote while the writes went on (the
BM25 export runs outside ``TenantIndex._lock`` from a copy-on-write view,
:meth:`KeywordIndex.frozen <reckon.recall.keyword.KeywordIndex.frozen>`).

Real stores, the public API (``Engine(...).tenant(...)``, ``Tenant.remember`` /
``update`` / ``delete`` / ``search``), the hashing embedder, and fresh processes
(``python -c``) as the readers. The snapshot cadence is lowered (a snapshot after every
few generations, small embedding batches, no quiet wait) so that many snapshots are
exported while writes land.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from reckon import ConflictPending
from reckon.api import Engine, Principal
from reckon.recall import tenant_index
from reckon.recall.keyword import tokenize
from reckon.recall.tenant_index import SNAPSHOT

ENGINE = str(Path(__file__).resolve().parents[2] / "engine")
ENV = dict(os.environ, RECKON_EMBEDDER="hashing", PYTHONPATH=ENGINE)
OPS = Principal.operator(person="dana")
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # recency is scored against this, in every process
WORDS = ("granite basalt marble river lagoon harbour lantern orchard meadow canyon glacier summit "
         "copper amber cobalt saffron violet indigo falcon heron otter badger walrus bison").split()

# the writers' cadence: a snapshot every few generations, embedding batches of four, no quiet wait
_CADENCE = {"_SNAPSHOT_EVERY": 5, "_BATCH": 4, "_QUIET_S": 0.0}

_READER = """
import json, sys
from datetime import datetime
from reckon.api import Engine, Principal
data, queries, now = sys.argv[1], json.loads(sys.argv[2]), datetime.fromisoformat(sys.argv[3])
ops = Principal.operator(person="dana")
t = Engine(data, embedder="hashing").tenant("acme")
out = {"hits": {}}
for q in queries:
    hits = t.search(q, principal=ops, k=20, importance="all", now=now, record_access=False, explain=True)
    out["hits"][q] = [[h.memory.id, h.score, h.explanation.bm25_rank] for h in hits]
ix = t.recall.index
out["rebuilds"], out["generation"] = ix.rebuilds, ix.generation
out["pending"] = ix.pending()
out["conforms"] = ix.check(repair=False)["conforms"]
out["ids"] = sorted(m.id for m in t.memories())
print(json.dumps(out))
"""


def _read_in_fresh_process(data: Path, queries: list[str]) -> dict:  # type: ignore[type-arg]
    p = subprocess.run([sys.executable, "-c", _READER, str(data), json.dumps(queries), NOW.isoformat()],
                       capture_output=True, text=True, timeout=300, env=ENV)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)  # type: ignore[no-any-return]


def _snapshot_generation(data: Path) -> int | None:
    try:
        with np.load(data / "tenants" / "acme" / "recall" / SNAPSHOT, allow_pickle=False) as z:
            return int(json.loads(z["meta"].tobytes())["generation"])
    except FileNotFoundError:
        return None


def _keep_snapshot(data: Path, kept: dict[int, dict[str, np.ndarray]]) -> None:
    """Add the tenant's current snapshot to ``kept`` (by generation), its columns read."""
    try:
        with np.load(data / "tenants" / "acme" / "recall" / SNAPSHOT, allow_pickle=False) as z:
            cols = {k: z[k] for k in z.files}
    except FileNotFoundError:
        return
    kept.setdefault(int(json.loads(cols["meta"].tobytes())["generation"]), cols)


def _whole(cols: dict[str, np.ndarray]) -> bool:
    """Whether a snapshot is whole: its digest is the writer's (what a fresh process
    checks before it serves the snapshot) and -- the independent oracle -- each
    document's BM25 postings are the terms of :func:`tokenize` of its text, with their
    counts."""
    meta = json.loads(cols["meta"].tobytes())
    n = int(meta["n"])
    if meta.get("digest") != tenant_index._digest(cols) or len(cols["id.off"]) != n + 1:  # noqa: SLF001
        return False
    tb, to = cols["text.blob"].tobytes(), cols["text.off"].tolist()
    want = [Counter(tokenize(tb[a:b].decode("utf-8", "surrogatepass"))) for a, b in zip(to, to[1:])]
    mb, mo = cols["kw.terms.blob"].tobytes(), cols["kw.terms.off"].tolist()
    terms = [mb[a:b].decode() for a, b in zip(mo, mo[1:])]
    got: list[Counter[str]] = [Counter() for _ in range(n)]
    off = cols["kw.off"].tolist()
    for j, term in enumerate(terms):
        for d, f in zip(cols["kw.doc"][off[j]:off[j + 1]].tolist(), cols["kw.tf"][off[j]:off[j + 1]].tolist()):
            got[d][term] += f
    return got == want


def _remember(t, rng: random.Random, i: int):  # type: ignore[no-untyped-def]
    """Memory ``i``: five shared words (so queries rank many documents) and one word of its own."""
    own = f"own{i:04d}q"
    fields = dict(kind="fact", scope="company", importance=rng.choice([2, 3, 3, 4]), source="operator",
                  principal=OPS, label=f"note {i} {rng.choice(WORDS)}",
                  content=" ".join([*rng.sample(WORDS, 5), own]))
    try:
        return t.remember(**fields), own
    except ConflictPending as c:
        return t.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id), own


def _search(t, queries: list[str]) -> dict[str, list[list[object]]]:  # type: ignore[no-untyped-def]
    """Per query, its hits as ``[id, score, BM25 rank]``."""
    out = {}
    for q in queries:
        hits = t.search(q, principal=OPS, k=20, importance="all", now=NOW, record_access=False, explain=True)
        out[q] = [[h.memory.id, h.score, h.explanation.bm25_rank] for h in hits]
    return out


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")  # an export that raised
def test_fresh_process_search_equals_the_writers_after_snapshots_taken_during_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Write 150 memories (with updates and deletes among them) while the embedding thread
    snapshots every few generations: every snapshot seen between two writes is whole.
    Close, and search from a fresh process: the same hits, ids, scores and BM25 ranks
    exactly, for queries matching early, middle and last writes; the fresh process
    opened the snapshot (no rebuild) at the writer's last generation."""
    for k, v in _CADENCE.items():
        monkeypatch.setattr(tenant_index, k, v)
    rng = random.Random(5)
    t = Engine(tmp_path, embedder="hashing").create_tenant("acme")
    ms, owns = [], []
    kept: dict[int, dict[str, np.ndarray]] = {}
    for i in range(150):
        m, own = _remember(t, rng, i)
        ms.append(m)
        owns.append(own)
        if i == 3:
            t.search("granite", principal=OPS)  # this process ranks: the embedding thread starts
        if i % 7 == 6:  # an edit moves postings of a document already in a snapshot
            t.update(ms[i - 5].id, principal=OPS, content=f"{' '.join(rng.sample(WORDS, 4))} {owns[i - 5]}")
        if i % 11 == 10:  # a delete moves the last BM25 slot into the freed one
            t.delete(ms[i - 9].id, principal=OPS)
        _keep_snapshot(tmp_path, kept)
    assert t.recall.wait(60)
    _keep_snapshot(tmp_path, kept)
    assert len(kept) >= 2, sorted(kept)  # the writes span several snapshots
    assert [g for g, cols in kept.items() if not _whole(cols)] == []
    gone = {ms[i - 9].id for i in range(150) if i % 11 == 10}
    queries = [*rng.sample(WORDS, 6), "granite basalt river", "falcon heron otter", "copper amber summit",
               owns[0], owns[40], owns[100], owns[147], owns[148], owns[149], f"{owns[149]} {owns[120]} lagoon",
               ms[149].label, ms[75].label]
    before = _search(t, queries)
    assert ms[149].id == before[owns[149]][0][0] and ms[0].id == before[owns[0]][0][0]
    assert not gone & {h[0] for hits in before.values() for h in hits}
    gen = t.store.generation()
    t.close()
    assert _snapshot_generation(tmp_path) == gen  # close wrote the last generation
    fresh = _read_in_fresh_process(tmp_path, queries)
    assert fresh["rebuilds"] == 0 and fresh["generation"] == gen and fresh["pending"] == 0
    assert fresh["conforms"]
    for q in queries:
        assert fresh["hits"][q] == before[q], q


_KILLED_WRITER = """
import random, sys
import reckon.recall.tenant_index as ti
""" + "".join(f"ti.{k} = {v!r}\n" for k, v in _CADENCE.items()) + """
from reckon import ConflictPending
from reckon.api import Engine, Principal
ops = Principal.operator(person="dana")
words = sys.argv[2].split()
rng = random.Random(int(sys.argv[3]))
t = Engine(sys.argv[1], embedder="hashing").tenant("acme")
ms = []
for i in range(100000):
    own = f"k{sys.argv[3]}w{i:05d}z"
    fields = dict(kind="fact", scope="company", importance=3, source="operator", principal=ops,
                  label=f"note {sys.argv[3]} {i}", content=" ".join([*rng.sample(words, 5), own]))
    try:
        m = t.remember(**fields)
    except ConflictPending as c:
        m = t.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id)
    ms.append(m.id)
    print("acked", m.id, own, flush=True)
    if i == 2:
        t.search("granite", principal=ops)  # this process ranks: its embedding thread snapshots
    if i % 9 == 8:
        t.update(ms[i - 4], principal=ops, importance=2)
"""


def test_sigkill_after_an_acknowledged_write_loses_nothing_the_fresh_process_finds_it(tmp_path: Path) -> None:
    """A writer whose embedding thread snapshots every few generations while it writes is
    SIGKILLed after an acknowledged write, twice: a fresh process opens the last
    snapshot it wrote (no rebuild: a snapshot exported during writes is whole) and
    catches up from the journal; every acknowledged memory is there and found by its own
    keyword, and the index equals a rebuild from the store."""
    Engine(tmp_path, embedder="hashing").create_tenant("acme").close()
    acked: dict[str, str] = {}
    for run in (1, 2):
        p = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(tmp_path), " ".join(WORDS), str(run)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        assert p.stdout is not None
        seen: set[int | None] = set()
        start = _snapshot_generation(tmp_path)
        n = 0
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # not a timing bound: a hung writer fails below
            line = p.stdout.readline()
            if not line:
                break
            _, mid, own = line.split()
            acked[mid] = own
            n += 1
            seen.add(_snapshot_generation(tmp_path))
            if n >= 60 and len(seen - {None, start}) >= 2:
                break  # two snapshots of this writer exist: kill it right after this write
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        for line in p.stdout.read().splitlines():  # acknowledged before it died
            if line.startswith("acked "):
                _, mid, own = line.split()
                acked[mid] = own
        err = p.stderr.read() if p.stderr else ""
        assert len(seen - {None, start}) >= 2, (seen, err)
        assert "Traceback" not in err, err  # no snapshot export raised in the writer's threads
        fresh = _read_in_fresh_process(tmp_path, sorted(acked.values()))
        assert fresh["rebuilds"] == 0  # the last snapshot (written during writes) was served
        assert fresh["conforms"]
        assert set(acked) <= set(fresh["ids"])
        for mid, own in acked.items():  # its own word: BM25 rank 1 (its vector may still be queued)
            assert [mid, 1] in [[i, rank] for i, _, rank in fresh["hits"][own]], own
