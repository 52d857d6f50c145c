"""Reasoning benchmark on LUBM(1): Reckon vs owlrl (RDFS) vs reasonable (OWL 2 RL).

Run: ``PYTHONPATH=engine python bench/reasoning.py [--skip-owlrl] [--seed N]``

One run each, wall-clock seconds (``time.perf_counter``), on the LUBM(1) instance +
univ-bench ontology (``bench/lubm.py``, 100,836 base triples):

* Reckon full materialization with ``rules/rdfs.srl`` + ``rules/owl2rl.srl``
  (``Reasoner.load``), and the 14 LUBM queries checked against the reference answers;
* owlrl 7.6 RDFS closure (``DeductiveClosure(RDFS_Semantics)``, no axiomatic triples) on an
  rdflib in-memory Graph — skip with ``--skip-owlrl`` (minutes); timed: ``expand`` only;
* reasonable (Rust) OWL 2 RL closure; timed: ``PyReasoner.load_file`` (Turtle, parsed in
  Rust) + ``reason`` (which returns rdflib terms);
* Reckon incremental maintenance (``Reasoner.apply``): delete, then re-insert, 1 and 100
  asserted facts (a seeded sample of instance triples), each against recomputing from
  scratch (``Reasoner.load`` of the changed base); the incremental result is compared with
  the recomputed one.

Counts are triples of the output graph (base + inferred, generalized triples dropped).
Ratios are "this / reasonable" for the full runs and "recompute / incremental" (speed-up)
for updates. Timings depend on the machine and its load; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "engine")]

from bench.lubm import (  # noqa: E402
    QUERY_NUMBERS,
    base_triples,
    csv_triples,
    default_lubm_dir,
    from_rdflib,
    run_query,
    store_of,
    to_rdflib_graph,
)
import os  # noqa: E402


def _rules():  # -> RuleSet
    from reckon.datalog.srl import parse_srl

    out = None
    for name in ("rdfs.srl", "owl2rl.srl"):
        path = REPO / "rules" / name
        rs = parse_srl(path.read_text(encoding="utf-8"), file=str(path))
        out = rs if out is None else out + rs
    return out


def _owlrl(base):  # -> (set[Triple], seconds of DeductiveClosure.expand only)
    from owlrl import DeductiveClosure, RDFS_Semantics

    g = to_rdflib_graph(base)
    _, t = _timed(lambda: DeductiveClosure(RDFS_Semantics, axiomatic_triples=False, datatype_axioms=False).expand(g))
    return from_rdflib(g), t


def _reasonable(base):  # -> (set[Triple], seconds of load_file + reason)
    """reasonable's fastest path: its own (Rust) Turtle parser via ``load_file`` (from_graph
    iterates an rdflib Graph in Python: ~2x slower in total)."""
    import tempfile

    import reasonable
    from pyoxigraph import RdfFormat, serialize

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lubm1.ttl"
        path.write_bytes(serialize(base, format=RdfFormat.TURTLE))
        r = reasonable.PyReasoner()

        def run():
            r.load_file(str(path))
            return r.reason()

        out, t = _timed(run)
    return from_rdflib(out), t


def _same(actual: set[tuple[str, ...]], expected: set[tuple[str, ...]]) -> bool:
    return actual == expected


def _timed(fn):  # -> (result, seconds)
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip-owlrl", action="store_true", help="do not run owlrl (slow: minutes)")
    ap.add_argument("--seed", type=int, default=7, help="seed of the sample of updated facts")
    args = ap.parse_args(argv)

    from reckon.datalog.evaluate import Reasoner

    lubm = default_lubm_dir()
    if not lubm.exists():
        print(f"LUBM data missing: {lubm} (set RECKON_SHARED)", file=sys.stderr)
        return 2
    base, t_parse = _timed(lambda: base_triples(lubm))
    rules = _rules()
    rows: list[tuple[str, str, str, str, str]] = []  # system, what, seconds, triples, ratio

    reasoner = Reasoner(rules)
    _, t_reckon = _timed(lambda: reasoner.load(base))
    reckon_total = len(reasoner.base() | reasoner.inferred())
    store = store_of(reasoner.base(), reasoner.inferred())
    ok = sum(_same(*run_query(store, lubm, n)) for n in QUERY_NUMBERS)

    reasonable_out, t_reasonable = _reasonable(base)
    n_reasonable = len(reasonable_out)
    rstore = store_of(reasonable_out)
    ok_r = sum(_same(*run_query(rstore, lubm, n)) for n in QUERY_NUMBERS)

    def ratio(t: float, n: int) -> str:
        return f"time x{t / t_reasonable:.2f}, triples x{n / n_reasonable:.3f}"

    rows.append(("Reckon", f"RDFS + OWL 2 RL (LUBM {ok}/14 ok)", f"{t_reckon:.2f}", str(reckon_total), ratio(t_reckon, reckon_total)))
    if not args.skip_owlrl:
        owl_out, t_owlrl = _owlrl(base)
        rows.append(("owlrl 7.6", "RDFS (no axioms)", f"{t_owlrl:.2f}", str(len(owl_out)), ratio(t_owlrl, len(owl_out))))
    else:
        rows.append(("owlrl 7.6", "RDFS (skipped: --skip-owlrl)", "-", "-", "-"))
    rows.append(("reasonable", f"OWL 2 RL (LUBM {ok_r}/14 ok)", f"{t_reasonable:.2f}", str(n_reasonable), "1"))

    # incremental maintenance vs recompute
    instance = csv_triples(lubm)
    rng = random.Random(args.seed)
    base_set = set(base)
    for k in (1, 100):
        facts = rng.sample(instance, k)
        smaller = [t for t in base if t not in set(facts)]
        for verb, kwargs, target in (
            ("delete", {"delete": facts}, smaller),
            ("insert", {"insert": facts}, base),
        ):
            _, t_inc = _timed(lambda: reasoner.apply(**kwargs))
            fresh = Reasoner(rules)
            _, t_full = _timed(lambda: fresh.load(target))
            same = reasoner.inferred() == fresh.inferred() and reasoner.base() == set(target) == fresh.base()
            rows.append(
                (
                    "Reckon",
                    f"{verb} {k} fact{'s' if k > 1 else ''} (= recompute: {'yes' if same else 'NO'})",
                    f"{t_inc:.3f}",
                    str(len(reasoner.base() | reasoner.inferred())),
                    f"recompute {t_full:.2f} s, speed-up x{t_full / t_inc:.1f}",
                )
            )
    assert reasoner.base() == base_set

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    _print(rows, f"LUBM(1): {len(base):,} base triples (loaded in {t_parse:.2f} s); load average {load} on {os.cpu_count()} CPUs")
    return 0


def _print(rows: list[tuple[str, str, str, str, str]], title: str) -> None:
    header = ("system", "task", "seconds", "triples", "vs reasonable / vs recompute")
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text
        print(title)
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        for r in [header, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
        return
    table = Table(title=title)
    for h in header:
        table.add_column(h, justify="right" if h in ("seconds", "triples") else "left")
    for r in rows:
        table.add_row(*r)
    Console(width=140).print(table)


if __name__ == "__main__":
    raise SystemExit(main())
