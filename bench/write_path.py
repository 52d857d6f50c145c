"""Write-path benchmark through the public path: ``Tenant.remember()`` latency at 1k,
10k and 100k memories (the recall index open, MiniLM configured: the write must not wait
for an embedding), a fresh process's first write, and a KPI refresh (incremental
maintenance of the derived statuses) against recomputing the inferred graph from
scratch on a large tenant.

Targets (issue "Fast where users touch it"): ``Tenant.remember`` p50 <= 5 ms at 10k
memories, flat in tenant size; a fresh process's first write under 1 s at 10k;
incremental KPI refresh >= 100x faster than recomputation at 1M triples.

Usage::

    PYTHONPATH=engine python bench/write_path.py                 # 1k, 10k; big tenant 1M triples
    PYTHONPATH=engine python bench/write_path.py --sizes 100000 --big 0
    PYTHONPATH=engine python bench/write_path.py --sizes 1000 --samples 20 --big 200000
    PYTHONPATH=engine python bench/write_path.py --data DIR --tenant bench --big 0   # a prebuilt tenant

``--data DIR`` keeps the generated tenants (``w<n>``) there and reuses them on the next
run. ``--tenant ID`` measures an existing tenant of ``--data`` instead of generating
one (``--sizes`` is then ignored; its memory count is printed): e.g. the 100k-memory
tenant ``bench`` that ``bench/bundle.py --sizes 100000 --bulk-hashing --data DIR``
built in ``DIR/n100000``. The measured writes stay in that tenant (3 x ``--samples``
memories, plus two for the fresh-process probe and one warm-up).

Background memories are generated as the exact triples the write path produces and
loaded as the tenant's initial data (``remember`` one by one would take the benchmark's
whole budget); the measured calls go through ``Tenant.remember``: pydantic,
authorization, dedup and conflict reads, SHACL validation, one store transaction with
incremental reasoning, and the recall index following the commit (keyword at once, the
embedding queued for the background thread). Peer: ``MemoryService.remember`` alone
(no recall layer), the floor of the facade. Timings are wall-clock milliseconds, and
the calling thread's CPU milliseconds beside them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad, Triple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

from reckon.api import Engine, Principal  # noqa: E402
from reckon.datalog.evaluate import Reasoner  # noqa: E402
from reckon.memory import _rdf as R  # noqa: E402
from reckon.store import MEMORIES  # noqa: E402
from reckon.store.graphs import PROGRAM  # noqa: E402

MK = "https://reckon.dev/ns/marketing#"
OPS = Principal.operator(person="ops")
PLATFORMS = ["meta", "google", "tiktok", "twitter", "bing", "linkedin"]
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar "
         "papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def memory_triples(tenant: str, i: int, persons: int) -> list[Triple]:
    """Layout triples of background memory ``i``: user-scope preferences spread over
    ``persons`` people, every 10th a company fact, every 50th a budget cap."""
    m = R.memory_iri(tenant, uuid.UUID(int=i + 1).hex)
    now = R.dt_literal(datetime(2026, 3, 1, tzinfo=UTC))
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11))
    person = R.person_iri(tenant, f"person{i % persons}")
    ts = [
        Triple(m, R.LABEL, Literal(f"memory {i} {words}")),
        Triple(m, R.P_CONTENT, Literal(f"background memory number {i}: {words} {i * 7919 % 10007}")),
        Triple(m, R.P_IMPORTANCE, Literal(str(1 + i % 5), datatype=R.X_INTEGER)),
        Triple(m, R.P_SOURCE, R.SOURCE_IRI["import"]),
        Triple(m, R.P_CONFIDENCE, Literal("1", datatype=R.X_DECIMAL)),
        Triple(m, R.P_CREATED, now),
        Triple(m, R.P_UPDATED, now),
        Triple(m, R.P_AUTHOR, person),
    ]
    if i % 50 == 0:
        ts += [
            Triple(m, R.A, NamedNode(MK + "BudgetConstraintMemory")),
            Triple(m, R.P_KIND, R.KIND_IRI["objective"]),
            Triple(m, R.P_SCOPE, R.SCOPE_IRI["company"]),
            Triple(m, NamedNode(MK + "platform"), NamedNode(MK + PLATFORMS[(i // 50) % len(PLATFORMS)])),
            Triple(m, NamedNode(MK + "amount"), Literal(str(10000 + i), datatype=R.X_DECIMAL)),
            Triple(m, NamedNode(MK + "currency"), Literal("USD")),
            Triple(m, NamedNode(MK + "period"), NamedNode(MK + "Monthly")),
        ]
    elif i % 10 == 0:
        ts += [Triple(m, R.A, R.MEMORY), Triple(m, R.P_KIND, R.KIND_IRI["fact"]),
               Triple(m, R.P_SCOPE, R.SCOPE_IRI["company"])]
    else:
        ts += [Triple(m, R.A, R.MEMORY), Triple(m, R.P_KIND, R.KIND_IRI["preference"]),
               Triple(m, R.P_SCOPE, R.SCOPE_IRI["user"]), Triple(m, R.P_OWNER, person)]
    return ts


def create_populated_quads(engine: Engine, tenant_id: str, n: int, persons: int) -> list[Quad]:
    """The initial quads of a tenant with ``n`` background memories: schema, company,
    clock, people and the memories' triples."""
    from reckon.business.writers import initial_quads

    quads = [Quad(R.person_iri(tenant_id, f"person{p}"), R.A, R.PERSON, MEMORIES) for p in range(persons)]
    for i in range(n):
        quads += [Quad(t.subject, t.predicate, t.object, MEMORIES) for t in memory_triples(tenant_id, i, persons)]
    return engine.schema_quads() + initial_quads(tenant_id, "Bench") + quads


def create_populated(engine: Engine, tenant_id: str, n: int, persons: int) -> tuple[object, float]:
    """A tenant created with ``n`` background memories (+ their people) in its initial
    data: one materialization from scratch at creation. Returns (tenant, seconds)."""
    from reckon.store import TenantStore, tenant_dir

    t0 = time.perf_counter()
    TenantStore.create(
        tenant_dir(engine.data_dir, tenant_id), tenant_id,
        initial=create_populated_quads(engine, tenant_id, n, persons),
        reasoner_factory=engine.reasoner_factory(),
        program=engine.program.to_quads(PROGRAM),  # the tenant stores its program, as create_tenant does
    ).close()
    return engine.tenant(tenant_id), time.perf_counter() - t0


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def bench_remember(engine: Engine, n: int, samples: int, tenant: str | None = None) -> dict[str, Any]:
    """``tenant``: measure that existing tenant (its people are person0..19, as both
    benchmarks generate them) instead of generating ``w<n>``."""
    import json
    import subprocess

    tid = tenant or f"w{n}"
    persons = 20 if tenant else max(1, n // 100)
    if tid in engine.list_tenants():
        t, load_s = engine.tenant(tid), float("nan")
    else:
        t, load_s = create_populated(engine, tid, n, persons=persons)
        t.set_spend("meta", 34000)
    if tenant:
        n = len(t.memories())
    t.store.close()
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from _probe import compile_bytecode

    compile_bytecode()
    p = subprocess.run([sys.executable, str(here / "_probe.py"), str(engine.data_dir), tid, "remember", "remember"],
                       capture_output=True, text=True, timeout=1800)
    first = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
    t = Engine(engine.data_dir).tenant(tid)  # a new engine: the one above closed its store
    who0 = Principal(person="person0")
    t.search("warm up", principal=who0)  # the recall index is open: every write below follows its commit
    t.recall.wait(timeout=None)  # steady state: the background memories have their vectors
    t.remember(kind="fact", scope="user", importance=3, source="agent_tool", principal=Principal(person="warm"),
               label="warm up", content="warm up the caches")
    res = measure_remember(t, samples, persons=persons)
    return {"n": n, "load_s": load_s, **res, "first": first.get("remember_s", float("nan")),
            "again": first.get("remember_again_s", float("nan")),
            "open": first.get("open_s", float("nan")), "rss": first.get("rss_mb", float("nan")),
            "embedder": t.recall.index.embedder_name}


def measure_remember(t: Any, samples: int, persons: int) -> dict[str, Any]:
    """``samples`` rounds of a user-scope ``Tenant.remember`` (principal ``person<k %
    persons>``), a company-scope one (an operator) and the peer, ``MemoryService.remember``
    alone; seconds per call, and the embeddings still queued when the rounds ended."""
    user, company, service = [], [], []
    cpu: dict[str, list[float]] = {"user": [], "company": [], "service": []}

    def timed(name: str, out: list[float], fn: Any, **kw: Any) -> None:
        c0, t0 = time.thread_time(), time.perf_counter()
        fn(**kw)
        out.append(time.perf_counter() - t0)
        cpu[name].append(time.thread_time() - c0)  # the caller's thread: not the embedding thread

    with t.store.exclusive():  # keep the on-disk store open across the measured writes
        for k in range(samples):
            who = Principal(person=f"person{k % persons}")
            timed("user", user, t.remember, kind="preference", scope="user", importance=3, source="agent_tool",
                  principal=who, label=f"u{uuid.uuid4().hex}", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
            timed("company", company, t.remember, kind="fact", scope="company", importance=3, source="operator",
                  principal=OPS, label=f"c{uuid.uuid4().hex}", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
            timed("service", service, t.memory.remember, kind="preference", scope="user", importance=3,
                  source="agent_tool", principal=who, label=f"s{uuid.uuid4().hex}",
                  content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
    return {"user": user, "company": company, "service": service, "cpu": cpu, "pending": t.recall.index.pending()}


def ms3(xs: list[float]) -> str:
    return f"{pct(xs, 50) * 1e3:>8.1f} {pct(xs, 95) * 1e3:>8.1f} {pct(xs, 99) * 1e3:>8.1f}"


def bench_refresh(engine: Engine, triples_target: int, refreshes: int) -> dict[str, float]:
    per = 12.5  # asserted triples per background memory (mix above)
    n = int(triples_target / per)
    t, load_s = create_populated(engine, "big", n, persons=max(1, n // 100))
    tgt = t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                     label="ROAS target", content="Keep ROAS above 3", subclass="PerformanceTargetMemory",
                     properties={"metric": "ROAS", "targetValue": 3})
    t.set_kpi("ROAS", 2.5)
    asserted = t.store.asserted()
    inc = []
    statuses = []
    with t.store.exclusive():
        for k in range(refreshes):
            v = 2.0 + (k % 4) * 0.5
            t0 = time.perf_counter()
            t.set_kpi("ROAS", v)
            inc.append(time.perf_counter() - t0)
            statuses.append(t.get(tgt.id).status.get("targetStatus"))
    base = {Triple(q.subject, q.predicate, q.object) for q in asserted}
    t0 = time.perf_counter()
    r = Reasoner(engine.ruleset)
    r.load(base)
    n_inf = len(r.inferred())
    full = time.perf_counter() - t0
    return {"memories": n, "asserted": len(asserted), "inferred": n_inf, "load_s": load_s,
            "inc_p50_ms": statistics.median(inc) * 1e3, "full_s": full,
            "ratio": full / statistics.median(inc), "statuses": ",".join(sorted(set(map(str, statuses))))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000])
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--big", type=int, default=1_000_000, help="asserted triples of the refresh tenant (0: skip)")
    ap.add_argument("--refreshes", type=int, default=8)
    ap.add_argument("--data", type=Path, default=None, help="keep (and reuse) the tenants here")
    ap.add_argument("--tenant", default=None, help="measure this existing tenant of --data (see docstring)")
    args = ap.parse_args()
    if args.tenant and args.data is None:
        ap.error("--tenant needs --data")
    import os

    os.environ.setdefault("RECKON_EMBEDDER", "minilm")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    engine = Engine(args.data or tempfile.mkdtemp(prefix="reckon-bench-"))
    if args.tenant:
        rows = [bench_remember(engine, 0, args.samples, tenant=args.tenant)]
    else:
        rows = [bench_remember(engine, n, args.samples) for n in args.sizes]
    print("Tenant.remember() latency (ms), background memories loaded as initial data; "
          f"embedder {rows[0]['embedder'] if rows else '-'}", flush=True)
    print(f"{'memories':>9} {'load s':>7} {'write':<34} {'p50':>8} {'p95':>8} {'p99':>8}"
          f" {'CPU p50':>8} {'CPU p95':>8}")
    for r in rows:
        for key, name in (("user", "Tenant.remember user scope"), ("company", "Tenant.remember company scope"),
                          ("service", "peer: MemoryService.remember")):
            c = r["cpu"][key]
            print(f"{r['n']:>9} {r['load_s']:>7.1f} {name:<34} {ms3(r[key])} {pct(c, 50) * 1e3:>8.1f} {pct(c, 95) * 1e3:>8.1f}")
    print("CPU: the calling thread's CPU time (time.thread_time), apart from the load of a shared machine; "
          "user scope: person<k % (n/100)>, so at 10k every sample is that person's first write in the process")
    print("target: Tenant.remember p50 <= 5 ms at 10k memories; embeddings queued when the samples ended: "
          + ", ".join(f"{r['n']}: {r['pending']}" for r in rows))
    print()
    print(f"{'memories':>9} {'fresh process: open s':>22} {'first remember s':>17} {'second s':>9} {'RSS MB':>7}")
    for r in rows:
        print(f"{r['n']:>9} {r['open']:>22.2f} {r['first']:>17.2f} {r['again']:>9.3f} {r['rss']:>7.0f}")
    print("target: a fresh process's first write under 1 s at 10k memories")
    if args.big:
        r = bench_refresh(engine, args.big, args.refreshes)
        print()
        print("KPI refresh -> target status: incremental (set_kpi, one transaction) vs recomputation from scratch")
        print(f"{'memories':>9} {'asserted':>9} {'inferred':>9} {'load s':>7} {'incr p50 ms':>12} {'scratch s':>10} {'ratio':>7}")
        print(f"{r['memories']:>9} {r['asserted']:>9} {r['inferred']:>9} {r['load_s']:>7.1f} {r['inc_p50_ms']:>12.1f} "
              f"{r['full_s']:>10.1f} {r['ratio']:>7.0f}x   statuses seen: {r['statuses']}")
        print("target: >= 100x at 1M triples")


if __name__ == "__main__":
    main()
