"""Do two code versions serve bit-identical search hits on the same tenant? An A/B
equality check (not a timing benchmark) for changes that must not change ranking, such
as the recall snapshot's BM25 export outside ``TenantIndex._lock`` (d77908e).

Usage (one copy of the tenant per run: the script writes into it)::

    PYTHONPATH=engine python bench/bundle.py --sizes 10000 --data bench-data   # builds bench-data/n10000
    cp -a bench-data/n10000 copy-a && cp -a bench-data/n10000 copy-b
    git worktree add old-tree <old commit>   # the version to compare against
    PYTHONPATH=old-tree/engine python bench/search_identity.py run copy-a old.json
    PYTHONPATH=engine python bench/search_identity.py run copy-b new.json
    python bench/search_identity.py compare old.json new.json   # exit 1 on any difference

``run`` opens tenant ``bench`` (as ``bench/bundle.py`` builds it) and records, for the 30
queries of ``bench/bundle.py``'s samples (``QUESTIONS[k % 8] + " (k)"``) plus 10 that
match the new writes, the hits ``[id, score]`` (``k=20``, every importance, principal
person0 of team0 and team1, recency against a fixed ``now``, no access counted) in three
phases: ``open`` (the tenant as given), ``written`` (after 300 ``remember`` calls, every
vector attached) and ``reopened`` (the tenant closed, its snapshot written, and opened
again in this process: the snapshot, not a rebuild). The writes are the same in every
run: memory ids come from a counter and ``createdAt`` from a fixed clock (both patched
into ``reckon.memory.service``), texts from a seeded generator. Documents are embedded
with the hashing embedder under MiniLM's name and width (as ``bench/bundle.py
--bulk-hashing``), queries with MiniLM one text at a time: a MiniLM batch's vectors depend
on the batch it was encoded with, which depends on thread timing.
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bundle import QUESTIONS, TOPICS  # noqa: E402

NOW = datetime(2026, 9, 1, tzinfo=UTC)
WRITES = 300


def queries() -> list[str]:
    out = [QUESTIONS[k % len(QUESTIONS)] + f" ({k})" for k in range(30)]
    rng = random.Random(11)
    out += [" ".join(rng.sample(TOPICS, 3)) + f" w{rng.randrange(WRITES)}x" for _ in range(10)]
    return out


class QueryMiniLM:
    """MiniLM for the known query texts (one at a time), hashing for everything else,
    under MiniLM's name and width (the tenant's vectors are MiniLM's)."""

    def __init__(self, texts: set[str]) -> None:
        from reckon.recall.embed import HashingEmbedder, MiniLMEmbedder

        self.q = MiniLMEmbedder()
        self.h = HashingEmbedder()
        self.name, self.dim, self.texts = self.q.name, self.q.dim, texts

    def load(self) -> None:
        self.q.load()

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        return np.stack([self.q.encode([t])[0] if t in self.texts else self.h.encode([t])[0] for t in texts])


def run(data: Path, out: Path) -> None:
    import reckon.memory.service as service
    from reckon import ConflictPending
    from reckon.api import Engine, Principal

    ids = iter(range(1, 10**9))
    service.uuid = SimpleNamespace(uuid4=lambda: uuid.UUID(int=(0xBE << 120) + next(ids)))  # type: ignore[attr-defined]
    tick = iter(range(10**9))
    qs = queries()
    who = Principal(person="person0", teams=["team0", "team1"])
    ops = Principal.operator(person="dana")
    engine = Engine(data, embedder=QueryMiniLM(set(qs)))  # type: ignore[arg-type]
    result: dict[str, Any] = {"queries": qs, "phases": {}, "rebuilds": {}, "seconds": {}}

    def phase(name: str, t: Any) -> None:
        t0 = time.perf_counter()
        assert t.recall.wait(timeout=None)
        result["phases"][name] = {q: [[h.memory.id, h.score] for h in t.search(
            q, principal=who, k=20, importance="all", now=NOW, record_access=False)] for q in qs}
        result["rebuilds"][name] = t.recall.index.rebuilds
        result["seconds"][name] = time.perf_counter() - t0

    t = engine.tenant("bench")
    t.memory._clock = lambda: datetime(2026, 8, 1, tzinfo=UTC) + timedelta(seconds=next(tick))  # noqa: SLF001
    phase("open", t)
    rng = random.Random(5)
    t0 = time.perf_counter()
    for i in range(WRITES):
        words = rng.sample(TOPICS, 6)
        scope = rng.choice(["company", "team", "user"])
        fields: dict[str, Any] = dict(
            kind=rng.choice(["fact", "preference", "context"]), scope=scope, importance=rng.choice([2, 3, 3, 4]),
            source="operator", principal=ops, label=f"{words[0]} {words[1]} w{i}x",
            content=" ".join(words[2:]) + f" w{i}x")
        if scope == "team":
            fields["teams"] = [f"team{i % 5}"]
        elif scope == "user":
            fields["owner"] = f"person{i % 3}"
        try:
            t.remember(**fields)
        except ConflictPending as c:
            t.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id)
    result["seconds"]["writes"] = time.perf_counter() - t0
    phase("written", t)
    t.close()
    t = engine.tenant("bench")
    phase("reopened", t)
    t.close()
    out.write_text(json.dumps(result))


def compare(a: Path, b: Path) -> int:
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    bad = 0
    for name, hits in ra["phases"].items():
        other = rb["phases"][name]
        diff = [q for q in hits if hits[q] != other[q]]
        n = sum(len(v) for v in hits.values())
        print(f"{name:9} {len(hits)} queries, {n} hits, rebuilds {ra['rebuilds'][name]}/{rb['rebuilds'][name]}: "
              + ("identical" if not diff else f"{len(diff)} queries differ"))
        for q in diff[:5]:
            print(f"  {q!r}\n    {hits[q][:5]}\n    {other[q][:5]}")
        bad += len(diff)
    ph = ra["phases"]  # the writes change hits; closing and reopening (the snapshot) changes none
    print(f"{a.name}: open == written {ph['open'] == ph['written']}, written == reopened {ph['written'] == ph['reopened']}")
    return 1 if bad else 0


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:]
    if cmd == "run":
        run(Path(rest[0]), Path(rest[1]))
    elif cmd == "compare":
        raise SystemExit(compare(Path(rest[0]), Path(rest[1])))
    else:
        raise SystemExit(__doc__)
