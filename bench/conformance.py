"""Entailment conformance counts: Reckon vs owlrl on W3C-manifest entailment suites.

Run: ``PYTHONPATH=engine python bench/conformance.py [--manifest PATH ...] [--show-failures]``

Without ``--manifest``: the W3C RDF 1.1 Semantics entailment tests of
``../shared/conformance/rdf-mt/`` (``manifest.ttl``, 48 approved entries, and
``az-tests/manifest.ttl``, 14 proposed ones). ``--manifest`` takes any other manifest in
the same vocabulary (``mf:PositiveEntailmentTest`` / ``mf:NegativeEntailmentTest``,
``mf:action`` = premise, ``mf:result`` = conclusion graph or ``false``), e.g. an OWL 2 RL
collection converted to that form; the premise and conclusion files are read as
N-Triples (``.nt``), RDF/XML (``.rdf``, ``.owl``) or Turtle (anything else).

Each entry falls into one category, judged the same way for every system:

* **entailment** — positive test with a conclusion graph: the conclusion (blank nodes
  read as existential variables, RDF 1.1 Semantics §5.2) is contained in the closure of
  the premise; an inconsistent premise entails everything and also counts (and is
  counted apart, "via inconsistency");
* **inconsistency** — positive test whose result is ``false``: the system finds the
  premise inconsistent;
* **non-entailment** — negative test with a conclusion graph: not entailed, and the
  premise found consistent;
* **consistency** — negative test whose result is ``false``: the premise found
  consistent.

A **false inconsistency** is a premise found inconsistent in a negative test (non-
entailment or consistency: the test says the premise has a model).

Regime: an entry's ``mf:recognizedDatatypes`` (RDF 1.1 Semantics §7: the datatypes D
the entailment is relative to) is given to Reckon as ``Reasoner(datatypes=D)``; an entry
without one runs under Reckon's own D (every supported datatype). owlrl has no such
option (it always recognizes its datatypes).

Systems: Reckon ``rules/rdfs.srl`` (``reckon-rdfs``), with ``rdfs-axioms.srl``
(``reckon-rdfs-axioms``, ``reckon infer --axiomatic``), ``rdfs.srl`` + ``owl2rl.srl``
(``reckon-owl``), both + ``rdfs-axioms.srl`` (``reckon-owl-axioms``); inconsistent = ``Reasoner.inconsistencies()`` not empty. owlrl
``DeductiveClosure(RDFS_Semantics)`` and ``(OWLRL_Semantics)``, each with its axiomatic
and datatype axioms on (its most complete setting); inconsistent = owlrl's error
triples (``ERRNS:error``) or a node in ``owl:Nothing``.

Prints one table of counts (passed / total per category). Nothing here is a test: the
suites' pass/fail contract for Reckon is ``tests/reasoning/test_rdfs_entailment.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "engine")]

from pyoxigraph import BlankNode, NamedNode, RdfFormat, Triple, parse  # noqa: E402

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
OWL_NOTHING = NamedNode("http://www.w3.org/2002/07/owl#Nothing")
RDF_TYPE = NamedNode(RDF + "type")
SHARED = REPO.parent / "shared"
RDF_MT = SHARED / "conformance" / "rdf-mt"
CATEGORIES = ("entailment", "inconsistency", "non-entailment", "consistency")
SYSTEMS = ("reckon-rdfs", "reckon-rdfs-axioms", "reckon-owl", "reckon-owl-axioms", "owlrl-rdfs", "owlrl-owl")
RULES = {
    "reckon-rdfs": ("rdfs.srl",),
    "reckon-rdfs-axioms": ("rdfs.srl", "rdfs-axioms.srl"),
    "reckon-owl": ("rdfs.srl", "owl2rl.srl"),
    "reckon-owl-axioms": ("rdfs.srl", "owl2rl.srl", "rdfs-axioms.srl"),
}


def _format(path: Path) -> RdfFormat:
    if path.suffix == ".nt":
        return RdfFormat.N_TRIPLES
    if path.suffix in (".rdf", ".owl", ".xml"):
        return RdfFormat.RDF_XML
    return RdfFormat.TURTLE


def read_graph(path: Path, base: str) -> list[Triple]:
    with path.open("rb") as fh:
        return [q.triple for q in parse(fh, format=_format(path), base_iri=base)]


def manifest_entries(manifest: Path, prefix: str = "") -> list[dict[str, object]]:
    """The entries of a W3C test manifest, in ``mf:entries`` order: name, category,
    premise path, conclusion path (``None`` for result ``false``), and the base IRI."""
    folder = manifest.parent
    triples = read_graph(manifest, manifest.as_uri())
    by_s: dict[object, dict[str, list[object]]] = defaultdict(lambda: defaultdict(list))
    for t in triples:
        by_s[t.subject][t.predicate.value].append(t.object)

    def one(s: object, p: str) -> object:
        return by_s[s][p][0]

    def local(term: object) -> Path:
        value = term.value  # type: ignore[attr-defined]
        if value.startswith("file:"):
            from urllib.parse import unquote, urlparse

            return Path(unquote(urlparse(value).path))
        return folder / value.rsplit("/", 1)[-1]

    heads = [s for s, po in by_s.items() if NamedNode(MF + "Manifest") in po.get(RDF + "type", [])]
    out = []
    for head in heads:
        node = one(head, MF + "entries")
        while node != NamedNode(RDF + "nil"):
            e = one(node, RDF + "first")
            node = one(node, RDF + "rest")
            kind = one(e, RDF + "type").value.rsplit("#", 1)[1]  # type: ignore[attr-defined]
            if kind not in ("PositiveEntailmentTest", "NegativeEntailmentTest"):
                continue
            result = one(e, MF + "result")
            graph = isinstance(result, NamedNode)
            positive = kind == "PositiveEntailmentTest"
            category = ("entailment" if graph else "inconsistency") if positive else \
                ("non-entailment" if graph else "consistency")
            action = one(e, MF + "action")
            recognized = by_s[e].get(MF + "recognizedDatatypes")
            datatypes = None
            if recognized:
                datatypes, item = [], recognized[0]
                while item != NamedNode(RDF + "nil"):
                    datatypes.append(one(item, RDF + "first").value)  # type: ignore[attr-defined]
                    item = one(item, RDF + "rest")
            out.append({
                "name": prefix + one(e, MF + "name").value,  # type: ignore[attr-defined]
                "category": category,
                "action": local(action),
                "action_iri": action.value,  # type: ignore[attr-defined]
                "result": local(result) if graph else None,
                "result_iri": result.value if graph else None,  # type: ignore[attr-defined]
                "datatypes": datatypes,
            })
    return out


def entails(graph: set[Triple], conclusion: list[Triple]) -> bool:
    """Simple entailment (RDF 1.1 Semantics §5.2): some mapping of the conclusion's blank
    nodes to terms of ``graph`` puts every conclusion triple in ``graph``. Backtracking over
    the conclusion triples, each matched against the graph triples of its predicate."""
    by_p: dict[object, list[Triple]] = defaultdict(list)
    for g in graph:
        by_p[g.predicate].append(g)
    order = sorted(conclusion, key=lambda t: sum(isinstance(x, BlankNode) for x in t))

    def match(i: int, b: dict[BlankNode, object]) -> bool:
        if i == len(order):
            return True
        t = order[i]
        cands = list(graph) if isinstance(t.predicate, BlankNode) else by_p.get(t.predicate, [])
        for g in cands:
            nb, ok = dict(b), True
            for pat, val in ((t.subject, g.subject), (t.predicate, g.predicate), (t.object, g.object)):
                if isinstance(pat, BlankNode):
                    if nb.setdefault(pat, val) != val:
                        ok = False
                        break
                elif pat != val:
                    ok = False
                    break
            if ok and match(i + 1, nb):
                return True
        return False

    return match(0, {})


def run_reckon(programs: dict[str, object], system: str, premise: list[Triple],
               datatypes: list[str] | None = None) -> tuple[set[Triple], bool]:
    from reckon.datalog.evaluate import Reasoner

    r = Reasoner(programs[system], datatypes=datatypes)  # type: ignore[arg-type]
    r.load(premise)
    return set(premise) | r.inferred(), bool(r.inconsistencies())


def run_owlrl(system: str, premise: list[Triple]) -> tuple[set[Triple], bool]:
    import rdflib
    from bench.lubm import from_rdflib, to_rdflib_graph
    from owlrl import DeductiveClosure, OWLRL_Semantics, RDFS_Semantics
    from owlrl.Namespaces import ERRNS

    g = to_rdflib_graph(premise)
    semantics = RDFS_Semantics if system == "owlrl-rdfs" else OWLRL_Semantics
    DeductiveClosure(semantics, axiomatic_triples=True, datatype_axioms=True).expand(g)
    errors = any(True for _ in g.triples((None, ERRNS.error, None)))
    nothing = any(True for _ in g.triples((None, rdflib.RDF.type, rdflib.OWL.Nothing)))
    # generalized triples with a blank-node predicate cannot be pyoxigraph Triples: dropped
    closure = from_rdflib(t for t in g if t[1] != ERRNS.error and isinstance(t[1], rdflib.URIRef))
    return closure, errors or nothing


def judge(category: str, closure: set[Triple], inconsistent: bool, conclusion: list[Triple] | None) -> tuple[bool, str]:
    """(passed, how) for one entry."""
    if category == "inconsistency":
        return inconsistent, "inconsistent" if inconsistent else "missed"
    if category == "consistency":
        return not inconsistent, "false inconsistency" if inconsistent else "consistent"
    assert conclusion is not None
    if category == "entailment":
        if entails(closure, conclusion):
            return True, "entailed"
        return (True, "via inconsistency") if inconsistent else (False, "not entailed")
    if inconsistent:
        return False, "false inconsistency"
    return (False, "wrongly entailed") if entails(closure, conclusion) else (True, "not entailed")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", action="append", default=[], help="a W3C entailment manifest (repeatable)")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--show-failures", action="store_true", help="list each failed entry per system")
    args = ap.parse_args(argv)
    systems = [s for s in args.systems.split(",") if s]

    if args.manifest:
        entries = [e for m in args.manifest for e in manifest_entries(Path(m), f"{Path(m).parent.name}/")]
    else:
        entries = manifest_entries(RDF_MT / "manifest.ttl") + manifest_entries(RDF_MT / "az-tests" / "manifest.ttl", "az-tests/")

    from reckon.datalog.loader import load_rules

    programs = {s: load_rules(*RULES[s]) for s in systems if s in RULES}
    totals: dict[str, int] = defaultdict(int)
    passed: dict[tuple[str, str], int] = defaultdict(int)
    false_inc: dict[str, int] = defaultdict(int)
    via_inc: dict[str, int] = defaultdict(int)
    errors: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    failures: dict[str, list[str]] = defaultdict(list)
    for e in entries:
        cat = str(e["category"])
        try:
            premise = read_graph(Path(str(e["action"])), str(e["action_iri"]))
            conclusion = read_graph(Path(str(e["result"])), str(e["result_iri"])) if e["result"] else None
        except (OSError, SyntaxError) as exc:  # a manifest naming a missing file (az-tests/same-as-one)
            print(f"skipped {e['name']}: {exc}", file=sys.stderr)
            continue
        totals[cat] += 1
        for s in systems:
            t0 = time.perf_counter()
            try:
                dts = e["datatypes"]
                closure, inconsistent = (run_reckon(programs, s, premise, dts)  # type: ignore[arg-type]
                                         if s in RULES else run_owlrl(s, premise))
            except Exception as exc:  # noqa: BLE001 - a crash is a failed entry, counted
                errors[s] += 1
                failures[s].append(f"{e['name']} [{cat}]: {type(exc).__name__}: {exc}"[:200])
                continue
            finally:
                seconds[s] += time.perf_counter() - t0
            ok, how = judge(cat, closure, inconsistent, conclusion)
            passed[(s, cat)] += ok
            false_inc[s] += how == "false inconsistency"
            via_inc[s] += how == "via inconsistency"
            if not ok:
                failures[s].append(f"{e['name']} [{cat}]: {how}")

    header = ("system", *(f"{c} /{totals[c]}" for c in CATEGORIES), "false inconsistencies", "via inconsistency",
              "crashes", "seconds")
    rows = [(s, *(str(passed[(s, c)]) for c in CATEGORIES), str(false_inc[s]), str(via_inc[s]), str(errors[s]),
             f"{seconds[s]:.1f}") for s in systems]
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    src = ", ".join(args.manifest) if args.manifest else "rdf-mt (approved + az-tests)"
    print(f"Entailment conformance on {src}: {len(entries)} entries")
    for r in (header, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
    if args.show_failures:
        for s in systems:
            print(f"\n{s}: {len(failures[s])} failed")
            for f in failures[s]:
                print("  " + f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
