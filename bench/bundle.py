"""Recall benchmark: ``Tenant.context()`` (the bundle) and ``Tenant.search()`` latency at
10k memories, query embedding included.

Targets (issue "Recall"): bundle <= 20 ms p95, search <= 30 ms p95. A benchmark, not a test.

Usage::

    PYTHONPATH=engine python bench/bundle.py                        # 10k memories, MiniLM if installed
    PYTHONPATH=engine python bench/bundle.py --n 2000 --embedder hashing --samples 30

Setup (said so in the output): calling ``remember()`` 10k times would take the
benchmark's whole budget (SHACL validation + one transaction each), so the memories are
generated as the exact layout triples (/work/notes/memory-layout.md) and loaded as the
tenant's initial data (one materialization from scratch), and indexed in bulk with
``RecallIndex.add_many`` using the same document text as the write hook
(``TenantRecall.document``). Mix: 40 % company, 30 % team (5 teams), 30 % user
(20 people); importance 1..5 with weights 5/35/40/15/5 %; every 25th a budget cap, every
25th (offset 12) a performance target; the rest plain memories of the four kinds.
The principal is person0 in team0 and team1. Timings are wall-clock milliseconds on
this machine (shared with other jobs: see the load average printed).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Quad, Triple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

from reckon.api import Engine, Principal  # noqa: E402
from reckon.memory import _rdf as R  # noqa: E402
from reckon.store import MEMORIES  # noqa: E402
from reckon.store.graphs import PROGRAM  # noqa: E402

MK = "https://reckon.dev/ns/marketing#"
PLATFORMS = ["meta", "google", "tiktok", "twitter", "bing", "linkedin"]
METRICS = ["ROAS", "CPA", "CTR", "CPC", "CPM"]
KINDS = ["fact", "preference", "objective", "context"]
TOPICS = ("budget spend campaign creative headline audience landing page conversion retargeting "
          "newsletter webinar pricing discount launch brand tone report dashboard weekly monthly "
          "quarterly agency freelancer hiring onboarding invoice refund region language video "
          "carousel influencer partnership seo keywords bidding").split()
QUESTIONS = [
    "can we scale the spring campaign?",
    "draft three headlines for the new launch",
    "what did we decide about the weekly report?",
    "should we pause retargeting on tiktok?",
    "how much budget is left on meta this month?",
    "which tone should the newsletter use?",
    "plan a webinar for the pricing change",
    "is ROAS on track for google?",
]


def memory_triples(tenant: str, i: int, rng: random.Random) -> tuple[list[Triple], dict]:
    m = R.memory_iri(tenant, uuid.UUID(int=i + 1).hex)
    created = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=13 * i)
    words = rng.sample(TOPICS, 8)
    imp = rng.choices([1, 2, 3, 4, 5], weights=[5, 35, 40, 15, 5])[0]
    r = rng.random()
    scope = "company" if r < 0.4 else "team" if r < 0.7 else "user"
    person = R.person_iri(tenant, f"person{i % 20}")
    label = f"{words[0]} {words[1]} {i}"
    content = " ".join(words[2:]) + f" ({rng.randrange(10**6)})"
    ts = [
        Triple(m, R.LABEL, Literal(label)),
        Triple(m, R.P_CONTENT, Literal(content)),
        Triple(m, R.P_IMPORTANCE, Literal(str(imp), datatype=R.X_INTEGER)),
        Triple(m, R.P_SOURCE, R.SOURCE_IRI["import"]),
        Triple(m, R.P_CONFIDENCE, Literal(rng.choice(["1.0", "0.9", "0.7", "0.4"]), datatype=R.X_DECIMAL)),
        Triple(m, R.P_CREATED, R.dt_literal(created)),
        Triple(m, R.P_UPDATED, R.dt_literal(created)),
        Triple(m, R.P_AUTHOR, person),
        Triple(m, R.P_SCOPE, R.SCOPE_IRI[scope]),
    ]
    if scope == "user":
        ts.append(Triple(m, R.P_OWNER, person))
    elif scope == "team":
        ts.append(Triple(m, R.P_TEAM, R.team_iri(tenant, f"team{i % 5}")))
    props: dict = {}
    if i % 25 == 0:
        plat = PLATFORMS[(i // 25) % len(PLATFORMS)]
        props = {"platform": plat, "amount": 10000 + i, "currency": "USD", "period": "Monthly"}
        ts += [Triple(m, R.A, NamedNode(MK + "BudgetConstraintMemory")), Triple(m, R.P_KIND, R.KIND_IRI["objective"]),
               Triple(m, NamedNode(MK + "platform"), NamedNode(MK + plat)),
               Triple(m, NamedNode(MK + "amount"), Literal(str(10000 + i), datatype=R.X_DECIMAL)),
               Triple(m, NamedNode(MK + "currency"), Literal("USD")),
               Triple(m, NamedNode(MK + "period"), NamedNode(MK + "Monthly"))]
        kind = "objective"
    elif i % 25 == 12:
        metric = METRICS[(i // 25) % len(METRICS)]
        props = {"metric": metric, "targetValue": 2.5}
        ts += [Triple(m, R.A, NamedNode(MK + "PerformanceTargetMemory")), Triple(m, R.P_KIND, R.KIND_IRI["objective"]),
               Triple(m, NamedNode(MK + "metric"), NamedNode(MK + metric)),
               Triple(m, NamedNode(MK + "targetValue"), Literal("2.5", datatype=R.X_DECIMAL))]
        kind = "objective"
    else:
        kind = KINDS[i % 4]
        ts += [Triple(m, R.A, R.MEMORY), Triple(m, R.P_KIND, R.KIND_IRI[kind])]
    extra = " ".join(f"{k} {v}" for k, v in sorted(props.items()))
    doc = dict(id=m.value.rsplit(":", 1)[-1], text=f"{label}\n{content}" + (f"\n{extra}" if extra else ""),
               time=created, importance=imp, scope=scope, kind=kind,
               owner=f"person{i % 20}" if scope == "user" else None,
               teams=[f"team{i % 5}"] if scope == "team" else [])
    return ts, doc


def populate(engine: Engine, tenant_id: str, n: int, seed: int = 7):
    from reckon.api._business import initial_quads
    from reckon.store import TenantStore, tenant_dir

    rng = random.Random(seed)
    t0 = time.perf_counter()
    quads = []
    for p in range(20):
        quads.append(Quad(R.person_iri(tenant_id, f"person{p}"), R.A, R.PERSON, MEMORIES))
        quads.append(Quad(R.team_iri(tenant_id, f"team{p % 5}"), R.rk("member"), R.person_iri(tenant_id, f"person{p}"),
                          MEMORIES))
    for k in range(5):
        quads.append(Quad(R.team_iri(tenant_id, f"team{k}"), R.A, R.TEAM, MEMORIES))
    docs = []
    for i in range(n):
        ts, doc = memory_triples(tenant_id, i, rng)
        quads += [Quad(t.subject, t.predicate, t.object, MEMORIES) for t in ts]
        docs.append(doc)
    TenantStore.create(tenant_dir(engine.data_dir, tenant_id), tenant_id,
                       initial=engine.schema_quads() + initial_quads(tenant_id, "Bench") + quads,
                       reasoner_factory=engine.reasoner_factory(),
                       program=engine.program.to_quads(PROGRAM)).close()  # as create_tenant does
    load_s = time.perf_counter() - t0
    t = engine.tenant(tenant_id)
    t.tick(datetime(2026, 3, 23, 6, tzinfo=timezone.utc))
    for plat in PLATFORMS:
        t.set_spend(plat, 34000)
    for metric in METRICS:
        t.set_kpi(metric, 2.0)
    t.connect_account("meta", "1234", "Bench Meta")
    t.set_subscription("growth", seats=10)
    t1 = time.perf_counter()
    idx = t.recall.index
    with idx.batch():
        for k in range(0, len(docs), 1000):
            idx.add_many(docs[k:k + 1000])
    index_s = time.perf_counter() - t1
    return t, load_s, index_s


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--embedder", choices=["default", "hashing", "minilm"], default="default")
    args = ap.parse_args()
    if args.embedder != "default":
        os.environ["RECKON_EMBEDDER"] = args.embedder
    engine = Engine(tempfile.mkdtemp(prefix="reckon-bench-bundle-"))
    t, load_s, index_s = populate(engine, "bench", args.n)
    who = Principal(person="person0", teams=["team0", "team1"])
    idx = t.recall.index
    print(f"{args.n} memories loaded as initial data in {load_s:.1f} s (one materialization), "
          f"indexed in bulk in {index_s:.1f} s; embedder: {idx.embedder_name}")
    # warm-up: model load, BM25 build, schema caches
    b = t.context(who, QUESTIONS[0])
    t.search(QUESTIONS[0], principal=who)
    print(f"bundle: {len(b.ids())} items in {len(b.blocks)} blocks, {len(b.render())} chars, "
          f"omitted {b.omitted_total}, conflicts {len(b.conflicts)}, capped {b.capped}; ranking: {b.ranking}")
    ctx, srch, ctx_none = [], [], []
    for k in range(args.samples):
        q = QUESTIONS[k % len(QUESTIONS)] + f" ({k})"
        t0 = time.perf_counter()
        t.context(who, [q])
        ctx.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.context(who)
        ctx_none.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.search(q, principal=who)
        srch.append(time.perf_counter() - t0)
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover
        load = float("nan")
    print()
    print(f"{'operation':<36} {'p50 ms':>8} {'p95 ms':>8} {'target p95':>11}")
    for name, xs, tgt in (("context() with conversation", ctx, "<= 20"),
                          ("context() without conversation", ctx_none, "<= 20"),
                          ("search() k=10, tiers 2-3", srch, "<= 30")):
        print(f"{name:<36} {statistics.median(xs) * 1e3:>8.1f} {pct(xs, 95) * 1e3:>8.1f} {tgt:>11}")
    print(f"(samples {args.samples}; 1-min load average {load:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
