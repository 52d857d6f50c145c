"""What the read-only query interface's walls cost (issue 9): the check, the worker
process, the deadline, and a write after a query.

Rows (milliseconds, median of ``--samples`` runs unless said otherwise), side by side:

* point query / 1k-row SELECT / COUNT over the tenant: in-process evaluation
  (``TenantStore.query``, no deadline, no sandbox: the trusted path) vs
  ``Tenant.sparql`` (check + sandboxed worker); the ratio;
* the check alone (``inspect_query``) on a short query, a 200 KB VALUES block and a
  20,000-UNION text (refused at depth 1,000);
* worker start (first query of an engine), and a cartesian ``COUNT(*)`` cancelled at a
  1 s deadline: time until the error, and the next query (a fresh worker);
* a write right after a query (the worker takes the tenant's shared lock only while it
  syncs, and not at all when the caller hands it the missing commit texts).

Usage::

    PYTHONPATH=engine python bench/query_limits.py [--samples 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

from reckon._errors import QueryLimitExceeded
from reckon.api import Engine
from reckon.store import QueryLimits, inspect_query
from reckon.store.tenant_store import PUBLIC_IRIS


def ms(fn, samples: int) -> float:
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=50)
    args = ap.parse_args()
    n = args.samples
    d = tempfile.mkdtemp()
    eng = Engine(d, rules=[])
    t = eng.create_tenant("acme")
    for i in range(200):
        t.add_team(f"team{i}", f"Team number {i}")
    print(f"# load average {os.getloadavg()[0]:.2f}; tenant of {len(t.store.asserted())} asserted quads")

    t0 = time.perf_counter()
    t.sparql("ASK {}")
    start_ms = (time.perf_counter() - t0) * 1000

    queries = {
        "point query": "SELECT ?l WHERE { <urn:reckon:acme:team:team7> <http://www.w3.org/2000/01/rdf-schema#label> ?l }",
        "1k-row SELECT": "SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 1000",
        "COUNT(*)": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    }
    print("\n| query | in-process ms | Tenant.sparql (worker) ms | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for name, q in queries.items():
        a = ms(lambda: t.store.query(q), n)
        b = ms(lambda: t.sparql(q), n)
        print(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.1f}x |")

    lim = QueryLimits()
    values = "SELECT * WHERE { VALUES ?x { " + " ".join(f"<urn:x:{i}>" for i in range(15_000)) + " } }"
    unions = "SELECT * WHERE { " + " UNION ".join(["{ ?s ?p ?o }"] * 20_000) + " }"
    print("\n| check (inspect_query) | bytes | ms |")
    print("| --- | ---: | ---: |")
    for name, q in (("short query", queries["point query"]), ("VALUES block", values), ("20k UNIONs (refused)", unions)):
        def check(q: str = q) -> None:
            try:
                inspect_query(q, lim, public_graphs=PUBLIC_IRIS)
            except QueryLimitExceeded:
                pass
        print(f"| {name} | {len(q)} | {ms(check, max(3, n // 10)):.2f} |")

    fast = Engine(d, rules=[], query_limits=QueryLimits(timeout=1.0))
    ft = fast.tenant("acme")
    ft.sparql("ASK {}")
    t0 = time.perf_counter()
    try:
        ft.sparql("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }")
    except QueryLimitExceeded:
        pass
    cancel_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    ft.sparql("ASK {}")
    respawn_ms = (time.perf_counter() - t0) * 1000
    print("\n| worker | ms |")
    print("| --- | ---: |")
    print(f"| start (first query of an engine) | {start_ms:.0f} |")
    print(f"| cartesian COUNT(*) until the 1 s deadline error | {cancel_ms:.0f} |")
    print(f"| next query (fresh worker, tenant mirror reloaded) | {respawn_ms:.0f} |")

    k = [0]

    def write() -> None:
        k[0] += 1
        t.add_team(f"w{k[0]}")

    def query_then_write() -> None:
        t.sparql(queries["point query"])
        write()

    a = ms(write, n)
    b = ms(query_then_write, n)
    print("\n| write path | ms |")
    print("| --- | ---: |")
    print(f"| add_team alone | {a:.2f} |")
    print(f"| point query + add_team | {b:.2f} |")
    fast.close()
    eng.close()


if __name__ == "__main__":
    main()
