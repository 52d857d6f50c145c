"""Store backends side by side: the embedded Oxigraph store, ``oxigraph serve`` and
Virtuoso Open Source (reckon.store.remote) at N memories, through ``Tenant.*``; and many
tenants on one node (the engine's LRU tenant cache).

Table 1, per backend: ``Tenant.remember`` / ``Tenant.context`` / ``Tenant.search`` p50 and
p95 (ms) in a warm process, a KPI refresh (``Tenant.set_kpi``: incremental maintenance of
the derived statuses, one commit) p50, and a fresh process's tenant open and first
``remember`` (s: the mirror load, from the server for a remote backend).
Table 2: T tenants on one node, embedded and on ``oxigraph serve``: tenants created and
opened per second (``Engine.tenant`` + one read), and the open file descriptors, threads
and resident memory a fresh process holds after touching all T, LRU cache of 128 vs no
bound.

Usage::

    PYTHONPATH=engine python bench/backends.py                       # 10k memories, 1,000 tenants
    PYTHONPATH=engine python bench/backends.py --memories 2000 --tenants 300 --backends embedded oxigraph

Background memories are the write path's own triples (``bench/write_path.py``) loaded as
the tenant's initial data. The embedder is ``hashing`` unless ``--embedder minilm``: the
table compares stores, not models. Servers run on loopback on this machine (2 cores
shared with everything else), so a remote round trip is ~0.3-1 ms, not a network's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "engine"), str(HERE.parent), str(HERE)]

from write_path import OPS, create_populated_quads, pct  # noqa: E402

from reckon.api import Engine, Principal  # noqa: E402


def _start(kind: str, folder: Path) -> Any:
    from tests.store.servers import start_oxigraph, start_virtuoso

    return start_oxigraph(folder) if kind == "oxigraph" else start_virtuoso(folder)


def bench_backend(kind: str, n: int, samples: int, root: Path) -> dict[str, Any]:
    from reckon.store import TenantStore, tenant_dir
    from reckon.store.graphs import PROGRAM
    from reckon.store.shards import ShardMap, set_placement

    data = root / kind
    data.mkdir(parents=True)
    server = None
    env = dict(os.environ)
    if kind != "embedded":
        server = _start(kind, root / f"{kind}-server")
        cfg = {**server.endpoint_config(), "timeout": 600}
        (data / "shards.json").write_text(json.dumps({"default": "s", "endpoints": {"s": cfg}}))
    try:
        engine = Engine(data, jobs=False)
        remote = None
        if kind != "embedded":
            remote = ShardMap.load(data).endpoint("s")
        t0 = time.perf_counter()
        quads = create_populated_quads(engine, "bench", n, persons=max(1, n // 100))
        TenantStore.create(tenant_dir(data, "bench"), "bench", initial=quads,
                           reasoner_factory=engine.reasoner_factory(), program=engine.program.to_quads(PROGRAM),
                           remote=remote).close()
        if remote is not None:
            set_placement(data, "bench", "s")
        load_s = time.perf_counter() - t0
        t = engine.tenant("bench")
        tgt = t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                         label="ROAS target", content="Keep ROAS above 3", subclass="PerformanceTargetMemory",
                         properties={"metric": "ROAS", "targetValue": 3})
        t.set_spend("meta", 34000)
        who = Principal(person="person0", teams=["team0"])
        t.search("warm up", principal=who)
        t.recall.wait(timeout=None)
        rem, ctx, srch, kpi = [], [], [], []
        for k in range(samples):
            p = Principal(person=f"person{k % max(1, n // 100)}")
            t0 = time.perf_counter()
            t.remember(kind="preference", scope="user", importance=3, source="agent_tool", principal=p,
                       label=f"u{uuid.uuid4().hex}", content=f"x{uuid.uuid4().hex} y{uuid.uuid4().hex}")
            rem.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            t.context(who, "can we scale the spring campaign?")
            ctx.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            t.search("what did we decide about the weekly report?", principal=who)
            srch.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            t.set_kpi("ROAS", 2.0 + (k % 4) * 0.5)
            kpi.append(time.perf_counter() - t0)
        status = t.get(tgt.id).status.get("targetStatus")
        engine.close()
        probe = subprocess.run([sys.executable, str(HERE / "_probe.py"), str(data), "bench", "remember"],
                               capture_output=True, text=True, timeout=1800, env=env)
        first = json.loads(probe.stdout.strip().splitlines()[-1]) if probe.returncode == 0 else {}
        if probe.returncode != 0:
            print(probe.stderr[-2000:], file=sys.stderr)
        return {"kind": kind, "n": n, "load_s": load_s, "remember": rem, "context": ctx, "search": srch, "kpi": kpi,
                "open_s": first.get("open_s", float("nan")), "first_s": first.get("remember_s", float("nan")),
                "status": status}
    finally:
        if server is not None:
            server.stop()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def bench_tenants(count: int, root: Path, kind: str = "embedded") -> list[dict[str, Any]]:
    """Create ``count`` tenants (no rule program: the store's own costs), then in a fresh
    process open each (``Engine.tenant`` + one read: for a remote tenant the mirror
    load from the server) with the LRU bound and without; fds, threads and RSS after."""
    data = root / f"many-{kind}"
    data.mkdir(parents=True)
    server = None
    if kind != "embedded":
        server = _start(kind, root / f"many-{kind}-server")
        (data / "shards.json").write_text(json.dumps({"default": "s", "endpoints": {"s": server.endpoint_config()}}))
    try:
        engine = Engine(data, rules=[], jobs=False)
        t0 = time.perf_counter()
        for i in range(count):
            engine.create_tenant(f"t{i}").store.release()
        create_s = time.perf_counter() - t0
        engine.close()
        rows = []
        for bound in (128, 10**9):
            code = (
                "import sys, time, os, json; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
                "from backends import _fds, _rss_mb, _threads\n"
                "from reckon.api import Engine\n"
                "e = Engine(%r, rules=[], jobs=False); e.max_open_tenants = %d\n"
                "f0, r0, th0 = _fds(), _rss_mb(), _threads(); t0 = time.perf_counter()\n"
                "for i in range(%d):\n"
                "    t = e.tenant(f't{i}'); t.store.generation(); t.store.release()\n"
                "dt = time.perf_counter() - t0\n"
                "print(json.dumps({'open_per_s': %d / dt, 'fds': _fds() - f0, 'rss_mb': _rss_mb(), 'rss0_mb': r0,"
                " 'threads': _threads() - th0}))\n"
            ) % (str(HERE.parent / "engine"), str(HERE), str(data), bound, count, count)
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=3600)
            if p.returncode != 0:
                print(p.stderr[-2000:], file=sys.stderr)
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["bound"] = "128 (LRU)" if bound == 128 else "none"
            r["create_per_s"] = count / create_s
            r["kind"] = kind
            rows.append(r)
        return rows
    finally:
        if server is not None:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--backends", nargs="*", default=["embedded", "oxigraph", "virtuoso"])
    ap.add_argument("--embedder", default="hashing")
    ap.add_argument("--tenant-backends", nargs="*", default=["embedded", "oxigraph"])
    args = ap.parse_args()
    os.environ["RECKON_EMBEDDER"] = args.embedder
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = Path(tempfile.mkdtemp(prefix="reckon-bench-backends-"))
    rows = []
    print(f"Backends at {args.memories} memories, {args.samples} samples, embedder {args.embedder} (ms unless noted)")
    print(f"{'backend':<10} {'load s':>7} {'remember p50/p95':>17} {'context p50/p95':>16} {'search p50/p95':>15} "
          f"{'KPI p50':>8} {'x first':>10} {'open s':>7} {'1st write s':>11}  status", flush=True)
    for kind in args.backends:
        if kind == "virtuoso":
            import shutil

            if shutil.which("virtuoso-t") is None:
                print("virtuoso-t not installed: skipped (apt-get install virtuoso-opensource)", file=sys.stderr)
                continue
        r = bench_backend(kind, args.memories, args.samples, root)
        rows.append(r)
        base = rows[0]
        ratio = pct(r["remember"], 50) / pct(base["remember"], 50)
        print(f"{r['kind']:<10} {r['load_s']:>7.1f} "
              f"{pct(r['remember'], 50) * 1e3:>8.1f}/{pct(r['remember'], 95) * 1e3:<8.1f} "
              f"{pct(r['context'], 50) * 1e3:>7.1f}/{pct(r['context'], 95) * 1e3:<8.1f} "
              f"{pct(r['search'], 50) * 1e3:>7.1f}/{pct(r['search'], 95) * 1e3:<7.1f} "
              f"{pct(r['kpi'], 50) * 1e3:>8.1f} {ratio:>10.2f} {r['open_s']:>7.2f} {r['first_s']:>11.2f}  {r['status']}",
              flush=True)
    if args.tenants:
        print(f"\n{args.tenants} tenants on one node (no rule program), per store backend")
        print(f"{'backend':<10} {'cache bound':<12} {'created/s':>9} {'opened/s':>9} {'+fds':>6} {'+threads':>8} "
              f"{'RSS MB':>8}")
        for kind in args.tenant_backends:
            for r in bench_tenants(args.tenants, root, kind):
                print(f"{kind:<10} {r['bound']:<12} {r['create_per_s']:>9.0f} {r['open_per_s']:>9.0f} {r['fds']:>6} "
                      f"{r['threads']:>8} {r['rss_mb']:>8.0f}", flush=True)

if __name__ == "__main__":
    main()
