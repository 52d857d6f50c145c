"""Reasoning benchmark: Reckon vs nemo, reasonable and owlrl on LUBM(1), LUBM(5), LUBM(10).

Run: ``PYTHONPATH=engine python bench/reasoning.py [--sizes 1,5,10] [--owlrl-sizes 1]
[--incremental-size 1,5,10] [--timeout 900] [--seed 7]`` (one run of the defaults: ~15
minutes on an idle 2-core machine; every system, size and update in that one run, so the
ratios compare runs made under the same load).

Data. LUBM(n) is built from the LUBM(1) data of ``../shared/data/lubm`` by relabelling
universities (``bench.lubm.lubm_triples``): copy k = LUBM(1) with every university number X
replaced by (X + k) mod 1000, in IRIs and e-mail literals, plus the univ-bench ontology.
Copy 0 is LUBM(1); degree-from references that land on another copy's university are the
cross-university links of the original generator. Each size is written once as N-Triples;
every system reads that file.

Systems, each in its own process (one run each, wall-clock ``time.perf_counter``):

* **Reckon** — ``rules/rdfs.srl`` + ``rules/owl2rl.srl`` (the full OWL 2 RL/RDF program):
  parse the N-Triples file (pyoxigraph) + ``Reasoner.load``; the parse time is also shown
  alone;
* **nemo** (``nmo_python``, Rust) — the same program translated to nemo's syntax
  (``bench/srl_to_nemo.py``: the rules that need Reckon's datatype functions are left
  out and listed; on LUBM they derive nothing); timed: ``load_string`` (its own N-Triples
  import) + ``reason``;
* **reasonable** (Rust) — its own OWL 2 RL rules; timed: ``load_file`` + ``reason``;
* **owlrl 7.6** — ``DeductiveClosure(RDFS_Semantics)`` and ``(OWLRL_Semantics)`` (no
  axiomatic triples) on an rdflib Graph; timed: ``expand`` only; only for the sizes in
  ``--owlrl-sizes`` (its RDFS pass is quadratic in literals: ~60 s on LUBM(1) idle).

``reckon-core`` / ``nemo-core``: both engines on a 9-rule RDFS-core program
(``bench/rdfs_core.srl``: subclass, subproperty, domain, range, inverse, transitive), the
engine comparison without OWL 2 RL's ~100 rules; "vs fastest" is within that pair.

Per system and size: wall seconds and CPU seconds (all threads; the Rust peers may use
more than one), triples out (base + inferred, RDF triples only, Reckon's
helper facts and generalized triples excluded), the ratio of its time to the fastest
system of that size, and the 14 LUBM queries run with pyoxigraph over its closure:
LUBM(1) against the official answers, LUBM(n > 1) against Reckon's answers (there are no
official ones).

Then, on each LUBM(n) of ``--incremental-size`` (default: every size): Reckon's incremental maintenance
(``Reasoner.apply``) deleting, then re-inserting, 1 and 100 asserted instance facts (a
seeded sample), each against recomputing from scratch (``Reasoner.load`` of the changed
base graph), with the incremental result compared to the recomputed one; and loading the
program (``load_rules`` + ``Reasoner`` + a one-triple ``load``) in a fresh process with an
empty compiled-program cache vs a warm one (``RECKON_CACHE_DIR``).

Targets (benchmark, not test): Reckon within 1.5x of nemo and ahead of reasonable at
every size; deletes at least 100x faster than recompute. Nothing here asserts a time:
timings depend on the machine and its load (printed with the table).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "engine")]

RULES = (str(REPO / "rules" / "rdfs.srl"), str(REPO / "rules" / "owl2rl.srl"))
CORE = (str(REPO / "bench" / "rdfs_core.srl"),)
SYSTEMS = ("reckon", "nemo", "reasonable", "owlrl-rdfs", "owlrl-owl", "reckon-core", "nemo-core")
INTERNAL = "urn:reckon:internal:"


# ------------------------------------------------------------------ helpers (workers)

def _answers(store, lubm_dir: Path) -> dict[str, list[object]]:
    from bench.lubm import QUERY_NUMBERS, answer_set, query_text, reference_answers

    out: dict[str, list[object]] = {}
    for n in QUERY_NUMBERS:
        header, _ = reference_answers(lubm_dir, n)
        rows = sorted(answer_set(store, query_text(lubm_dir, n), header or None))
        out[str(n)] = [len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()[:16]]
    return out


def _rdf_only(triples):  # -> set[Triple]
    from pyoxigraph import NamedNode

    return {t for t in triples if not any(isinstance(x, NamedNode) and x.value.startswith(INTERNAL)
                                          for x in (t.subject, t.predicate, t.object))}


def _from_nemo(rows):  # -> set[Triple]
    """nemo result rows (IRIs as ``<...>``, blank nodes as ``_:n``, strings, numbers,
    NemoLiteral) as pyoxigraph triples; rows that are not RDF triples are dropped."""
    from pyoxigraph import BlankNode, Literal, NamedNode, Triple

    def term(x):  # noqa: ANN001, ANN202
        if isinstance(x, str):
            if x.startswith("<") and x.endswith(">"):
                return NamedNode(x[1:-1])
            if x.startswith("_:"):
                return BlankNode(x[2:])
            if x.startswith('"') and x.endswith('"'):
                return Literal(x[1:-1].encode().decode("unicode_escape") if "\\" in x else x[1:-1])
            return Literal(x)
        if isinstance(x, bool):
            return Literal(x)
        if isinstance(x, (int, float)):
            return Literal(x)
        v, dt, lang = getattr(x, "value", str(x)), getattr(x, "datatype", None), getattr(x, "language", None)
        if lang:
            return Literal(str(v), language=str(lang))
        if dt:
            return Literal(str(v), datatype=NamedNode(str(dt).strip("<>")))
        return Literal(str(v))

    out = set()
    for s, p, o in rows:
        try:
            out.add(Triple(term(s), term(p), term(o)))
        except (TypeError, ValueError):
            continue  # generalized (literal subject, ...) or unreadable
    return out


def worker(system: str, data: Path, lubm_dir: Path, incremental: bool, seed: int) -> dict[str, object]:
    """Run one system on one N-Triples file; returns timings, counts and answers."""
    from bench.lubm import csv_triples, store_of

    res: dict[str, object] = {"system": system}
    rules_files = CORE if system.endswith("-core") else RULES
    system = system.removesuffix("-core")
    if system == "reckon":
        from pyoxigraph import RdfFormat, parse

        from reckon.datalog import Limits
        from reckon.datalog.evaluate import Reasoner
        from reckon.datalog.loader import load_rules

        t0, c0 = time.perf_counter(), time.process_time()
        with data.open("rb") as fh:
            base = [q.triple for q in parse(fh, format=RdfFormat.N_TRIPLES)]
        t1, c1 = time.perf_counter(), time.process_time()
        rules = load_rules(*rules_files)
        limits = Limits(max_bytes=16 << 30)
        r = Reasoner(rules, limits=limits)
        r.load(base)
        t2, c2 = time.perf_counter(), time.process_time()
        res.update(seconds=t2 - t0, cpu=time.process_time() - c0, parse=t1 - t0, reason=t2 - t1)
        closure = set(base) | r.inferred()
        res["triples"] = len(closure)
        res["inconsistent"] = len(r.inconsistencies())
        res["answers"] = _answers(store_of(closure), lubm_dir) if rules_files == RULES else {}
        if incremental:
            res["updates"] = _updates(r, rules, limits, base, seed, (r.inferred(), t2 - t1, c2 - c1))
        return res
    if system == "nemo":
        import nmo_python
        from bench.srl_to_nemo import translate

        from reckon.datalog._datatypes import SUPPORTED
        from reckon.datalog.loader import load_rules

        program = translate(load_rules(*rules_files), str(data), tuple(sorted(SUPPORTED)))
        t0, c0 = time.perf_counter(), time.process_time()
        engine = nmo_python.NemoEngine(nmo_python.load_string(program.text))
        engine.reason()
        res["seconds"], res["cpu"] = time.perf_counter() - t0, time.process_time() - c0
        closure = _rdf_only(_from_nemo(engine.result(program.predicate)))
        res["dropped"] = sorted(program.dropped)
    elif system == "reasonable":
        import reasonable
        from bench.lubm import from_rdflib

        ttl = data.with_suffix(".ttl")  # reasonable reads .ttl / .n3 only; N-Triples is Turtle
        if not ttl.exists():
            os.symlink(data, ttl)
        t0, c0 = time.perf_counter(), time.process_time()
        rr = reasonable.PyReasoner()
        rr.load_file(str(ttl))
        out = rr.reason()
        res["seconds"], res["cpu"] = time.perf_counter() - t0, time.process_time() - c0
        closure = from_rdflib(out)
    else:
        import rdflib
        from bench.lubm import from_rdflib
        from owlrl import DeductiveClosure, OWLRL_Semantics, RDFS_Semantics

        g = rdflib.Graph()
        g.parse(str(data), format="nt")
        semantics = RDFS_Semantics if system == "owlrl-rdfs" else OWLRL_Semantics
        t0, c0 = time.perf_counter(), time.process_time()
        DeductiveClosure(semantics, axiomatic_triples=False, datatype_axioms=False).expand(g)
        res["seconds"], res["cpu"] = time.perf_counter() - t0, time.process_time() - c0
        closure = from_rdflib(g)
    res["triples"] = len(closure)
    res["answers"] = _answers(store_of(closure), lubm_dir) if rules_files == RULES else {}
    del csv_triples
    return res


def _updates(r, rules, limits, base, seed: int, initial) -> list[dict[str, object]]:  # noqa: ANN001
    """Delete then re-insert 1 and 100 instance facts; each timed against recompute.

    Recomputing after a re-insert is materializing the original base graph again: its
    time and result are those of the first load (``initial``: inferred graph, seconds,
    CPU seconds), so only the deletions are recomputed."""
    from reckon.datalog.evaluate import Reasoner

    rng = random.Random(seed)
    instance = [t for t in base if "univ-bench" not in t.subject.value]  # type: ignore[union-attr]
    out = []
    for k in (1, 100):
        facts = rng.sample(instance, k)
        gone = set(facts)
        smaller = [t for t in base if t not in gone]
        for verb, kwargs, target in (("delete", {"delete": facts}, smaller), ("insert", {"insert": facts}, base)):
            t0, c0 = time.perf_counter(), time.process_time()
            r.apply(**kwargs)
            t_inc, c_inc = time.perf_counter() - t0, time.process_time() - c0
            if verb == "insert":
                want, t_full, c_full = initial
            else:
                fresh = Reasoner(rules, limits=limits)
                t0, c0 = time.perf_counter(), time.process_time()
                fresh.load(target)
                t_full, c_full = time.perf_counter() - t0, time.process_time() - c0
                want = fresh.inferred()
                del fresh
            same = r.inferred() == want and r.base() == set(target)
            out.append({"verb": verb, "k": k, "incremental": t_inc, "recompute": t_full, "same": same,
                        "incremental_cpu": c_inc, "recompute_cpu": c_full})
    return out


def program_load(cache_dir: str) -> tuple[float, float]:
    """(seconds of the imports, seconds to load rdfs.srl + owl2rl.srl and materialize one
    triple) in a fresh process."""
    code = (
        "import time; t0 = time.perf_counter()\n"
        "from pyoxigraph import NamedNode as N, Triple\n"
        "from reckon.datalog.loader import load_rules\nfrom reckon.datalog.evaluate import Reasoner\n"
        "t1 = time.perf_counter()\n"
        f"r = Reasoner(load_rules(*{RULES!r}))\n"
        "r.load([Triple(N('http://ex/a'), N('http://ex/p'), N('http://ex/b'))])\n"
        "print(t1 - t0, time.perf_counter() - t1)\n"
    )
    env = dict(os.environ, RECKON_CACHE_DIR=cache_dir, PYTHONPATH=str(REPO / "engine"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    a, b = proc.stdout.strip().splitlines()[-1].split()
    return float(a), float(b)


# ------------------------------------------------------------------ driver

def _run_worker(system: str, data: Path, lubm_dir: Path, incremental: bool, seed: int, timeout: float) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "engine"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", system, "--data", str(data),
           "--lubm", str(lubm_dir), "--seed", str(seed)] + (["--incremental"] if incremental else [])
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"system": system, "timeout": timeout, "error": f"> {timeout:.0f} s (timeout)"}
    if proc.returncode != 0:
        return {"system": system, "error": (proc.stderr.strip().splitlines() or ["?"])[-1][:120],
                "wall": time.perf_counter() - t0}
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _reference(lubm_dir: Path) -> dict[str, list[object]]:
    from bench.lubm import QUERY_NUMBERS, reference_answers

    out = {}
    for n in QUERY_NUMBERS:
        _, rows = reference_answers(lubm_dir, n)
        s = sorted(rows)
        out[str(n)] = [len(s), hashlib.sha256(repr(s).encode()).hexdigest()[:16]]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,5,10", help="LUBM sizes (universities), comma-separated")
    ap.add_argument("--owlrl-sizes", default="1", help="sizes owlrl runs on (slow); '' for none")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="systems to run")
    ap.add_argument("--incremental-size", default=None,
                    help="sizes for the update rows, comma-separated (default: every size)")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="seconds per system and size; a peer that runs out is shown as '> T' and the table goes on")
    ap.add_argument("--seed", type=int, default=7, help="seed of the sample of updated facts")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--lubm", help=argparse.SUPPRESS)
    ap.add_argument("--incremental", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    from bench.lubm import default_lubm_dir, lubm_triples, write_ntriples

    if args.worker:
        res = worker(args.worker, Path(args.data), Path(args.lubm), args.incremental, args.seed)
        print(json.dumps(res))
        return 0

    lubm = default_lubm_dir()
    if not lubm.exists():
        print(f"LUBM data missing: {lubm} (set RECKON_SHARED)", file=sys.stderr)
        return 2
    sizes = [int(x) for x in args.sizes.split(",") if x]
    owlrl_sizes = {int(x) for x in args.owlrl_sizes.split(",") if x}
    systems = [s for s in args.systems.split(",") if s]
    inc_sizes = {int(x) for x in args.incremental_size.split(",") if x} if args.incremental_size else set(sizes)
    load0 = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    started = time.perf_counter()
    reference = _reference(lubm)
    rows: list[tuple[str, ...]] = []
    updates: list[tuple[int, dict[str, object]]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            data = write_ntriples(lubm_triples(lubm, n), Path(tmp) / f"lubm{n}.nt")
            n_base = sum(1 for _ in data.open("rb"))
            results = {}
            for system in systems:
                if system.startswith("owlrl") and n not in owlrl_sizes:
                    results[system] = {"system": system, "error": "skipped (--owlrl-sizes)"}
                    continue
                results[system] = _run_worker(system, data, lubm, system == "reckon" and n in inc_sizes,
                                              args.seed, args.timeout)
                print(f"LUBM({n}) {system}: {results[system].get('seconds', results[system].get('error'))}",
                      file=sys.stderr, flush=True)
            expected = reference if n == 1 else results.get("reckon", {}).get("answers")
            for system in systems:
                r = results[system]
                core = system.endswith("-core")
                group = [x for k, x in results.items() if k.endswith("-core") == core and "seconds" in x]
                fastest = min(x["seconds"] for x in group) if group else None
                cpus = [x["cpu"] for x in group if x.get("cpu") is not None]
                fastest_cpu = min(cpus) if cpus else None
                if "seconds" not in r:
                    if "timeout" in r:  # the peer ran out of its time: its time is a lower bound
                        lower = f"x{r['timeout'] / fastest:.2f}" if fastest else "-"
                        rows.append((f"LUBM({n})", system, f"> {r['timeout']:.0f}", "-", "-", f"> {lower}", "-",
                                     "timed out (--timeout); not compared"))
                    else:
                        rows.append((f"LUBM({n})", system, "-", "-", "-", "-", "-", str(r.get("error"))))
                    continue
                ans = r.get("answers") or {}
                ok = sum(1 for q, v in ans.items() if expected and expected.get(q) == v)
                what = "14 queries vs " + ("official answers" if n == 1 else "Reckon's answers")
                if core:
                    ok, what = 0, "RDFS-core program (bench/rdfs_core.srl): no query check"
                extra = ""
                if system == "reckon":
                    extra = f"; parse {r['parse']:.1f} s + reason {r['reason']:.1f} s"
                    if r.get("inconsistent"):
                        extra += f"; {r['inconsistent']} inconsistencies!"
                cpu = r.get("cpu")
                rows.append((f"LUBM({n})", system, f"{r['seconds']:.2f}", f"{cpu:.2f}" if cpu is not None else "-",
                             f"{r['triples']:,}", f"x{r['seconds'] / fastest:.2f}" if fastest else "-",
                             f"x{cpu / fastest_cpu:.2f}" if cpu is not None and fastest_cpu else "-",
                             (what if core else f"{ok}/14 ({what})") + extra))
                if system == "nemo" and r.get("dropped"):
                    notes.append(f"nemo program leaves out {len(r['dropped'])} rules (Reckon datatype functions): "
                                 + ", ".join(str(x).split(":")[-1].rstrip(">") for x in r["dropped"]))
                if r.get("updates"):
                    updates += [(n, u) for u in r["updates"]]  # type: ignore[attr-defined]
            notes.append(f"LUBM({n}): {n_base:,} base triples")
        cold = program_load(str(Path(tmp) / "cache"))
        warm = program_load(str(Path(tmp) / "cache"))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"one run, {time.perf_counter() - started:.0f} s; load average (1, 5, 15 min) {load0} at the start, "
          f"{load} at the end, {os.cpu_count()} CPUs; ratios are to the fastest system of the same size in "
          "this run (seconds: wall clock; CPU: all threads)\n")
    _print(rows, ("size", "system", "seconds", "CPU s", "triples", "vs fastest", "CPU vs fastest", "queries / notes"),
           "Materialization, RDFS + OWL 2 RL")
    urows = [(f"LUBM({n})", f"{u['verb']} {u['k']} fact{'s' if u['k'] != 1 else ''}",
              f"{u['incremental']:.4f}", f"{u.get('incremental_cpu', 0):.4f}", f"{u['recompute']:.2f}",
              f"{u.get('recompute_cpu', 0):.2f}",
              f"x{u['recompute'] / u['incremental']:.0f} (CPU x{u.get('recompute_cpu', 0) / max(u.get('incremental_cpu', 1), 1e-6):.0f})",
              "yes" if u["same"] else "NO") for n, u in updates]
    urows.append(("-", "program load (cold cache)", f"{cold[1]:.3f}", "-", "-", "-", "-", f"(+ imports {cold[0]:.2f} s)"))
    urows.append(("-", "program load (cached)", f"{warm[1]:.3f}", "-", "-", "-", f"x{cold[1] / warm[1]:.1f} faster",
                  f"(+ imports {warm[0]:.2f} s)"))
    _print(urows, ("size", "Reckon update", "seconds", "CPU s", "recompute s", "recompute CPU s", "speed-up",
                   "= recompute"),
           "Incremental maintenance (vs recompute from scratch) and program load")
    for note in dict.fromkeys(notes):
        print(note)
    return 0


def _print(rows: list[tuple[str, ...]], header: tuple[str, ...], title: str) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(title)
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print()


if __name__ == "__main__":
    raise SystemExit(main())
