"""Inspector benchmark: page latency of the memory inspector beside the REST route that
reads the same data (the peer: what a client would fetch to build the page itself).

The tenant is the demo's (``reckon demo``: the onboarding file and a month of daily spend)
plus ``--extra`` generated company memories (importance 2-4) so the lanes have some
weight. Requests go through the FastAPI app in-process (``TestClient``: no network), as
an operator; each row is the median and p95 of ``--samples`` requests, in milliseconds.
A benchmark, not a test.

Usage::

    PYTHONPATH=engine python bench/inspector.py                 # demo tenant + 200 memories
    PYTHONPATH=engine python bench/inspector.py --extra 1000 --samples 30
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))


def _time(fn, samples: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    fn()  # warm
    xs = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1000)
    xs.sort()
    return statistics.median(xs), xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extra", type=int, default=200, help="generated company memories on top of the demo's")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--embedder", default="hashing", help="hashing (default) or minilm")
    args = ap.parse_args()
    if args.embedder == "hashing":
        os.environ["RECKON_EMBEDDER"] = "hashing"

    from fastapi.testclient import TestClient
    from rich.console import Console

    from reckon import ConflictPending, Principal
    from reckon.api import Engine
    from reckon.cli._demo import run_demo
    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    d = Path(tempfile.mkdtemp(prefix="reckon-bench-inspector-"))
    run_demo(d, out=Console(file=io.StringIO()))
    eng = Engine(d)
    acme = eng.tenant("acme")
    acme.set_spend("meta", 34000, period_start=date(2026, 3, 1))
    ops = Principal.operator("dana", teams=["growth"])
    words = ("budget spend campaign creative headline audience landing page conversion retargeting newsletter "
             "webinar pricing discount launch brand tone report dashboard weekly").split()
    for i in range(args.extra):
        fields = dict(principal=ops, kind=("fact", "preference", "context")[i % 3], scope="company",
                      importance=2 + i % 3, source="operator",
                      label=f"Note {i} about {words[i % len(words)]} and {words[(i * 7) % len(words)]}",
                      content=f"Memory {i}: the {words[(i * 3) % len(words)]} of the {words[(i * 5) % len(words)]}.")
        try:
            acme.remember(**fields)
        except ConflictPending as c:
            acme.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id)
    cap = next(m for m in acme.memories() if m.subclass == "BudgetConstraintMemory")
    _, token = TokenStore(d).create("acme", person="dana", teams=["growth"], role="operator")
    client = TestClient(create_app(eng))
    client.post("/ui/login", data={"token": token})
    h = {"Authorization": f"Bearer {token}"}
    q = "SELECT ?label ?status WHERE { ?m a rk:ActiveMemory ; rdfs:label ?label ; mk:budgetStatus ?s . " \
        "?s rdfs:label ?status }"
    rows = [
        ("bundle", lambda: client.get("/ui/bundle?conversation=meta+budget"),
         lambda: client.get("/tenants/acme/bundle?conversation=meta+budget", headers=h)),
        ("memory + proof trees", lambda: client.get(f"/ui/memories/{cap.id}"),
         lambda: client.get(f"/tenants/acme/memories/{cap.id}", headers=h)),
        ("lanes (all states)", lambda: client.get("/ui/lanes?state=all"),
         lambda: client.get("/tenants/acme/memories?active_only=false", headers=h)),
        ("lanes + search", lambda: client.get("/ui/lanes?q=meta+budget+report"),
         lambda: client.get("/tenants/acme/search?q=meta+budget+report&importance=2&importance=3&importance=4"
                            "&importance=5&k=50", headers=h)),
        ("SPARQL console", lambda: client.post("/ui/sparql", data={"query": q}),
         lambda: client.get("/tenants/acme/sparql", params={"query": q}, headers=h)),
        ("business", lambda: client.get("/ui/business"), None),
        ("overview", lambda: client.get("/"), None),
    ]
    n = len(acme.memories(active_only=False))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"inspector pages vs REST peers: tenant acme, {n} memories, {args.samples} samples, "
          f"embedder {args.embedder}, load average {load:.2f}")
    print(f"{'page':<22} {'inspector p50':>14} {'p95':>8} {'REST p50':>10} {'p95':>8} {'ratio p50':>10}")
    for name, page, peer in rows:
        assert page().status_code == 200, name
        p50, p95 = _time(page, args.samples)
        if peer is None:
            print(f"{name:<22} {p50:>12.1f}ms {p95:>6.1f}ms {'—':>10} {'—':>8} {'—':>10}")
            continue
        assert peer().status_code == 200, name
        r50, r95 = _time(peer, args.samples)
        print(f"{name:<22} {p50:>12.1f}ms {p95:>6.1f}ms {r50:>8.1f}ms {r95:>6.1f}ms {p50 / r50:>9.2f}x")


if __name__ == "__main__":
    main()
