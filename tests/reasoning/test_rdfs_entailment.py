"""W3C RDF 1.1 Semantics entailment tests (``../shared/conformance/rdf-mt/manifest.ttl``)
run against ``rules/rdfs.srl``, alone and with the completeness option ``rules/rdfs-axioms.srl``.

Spec: RDF 1.1 Semantics, https://www.w3.org/TR/rdf11-mt/ (§7 datatypes, §8 RDF and §9
RDFS entailment, with their axiomatic triples).

Regime (rdfs.srl header): RDFS entailment recognizing the datatypes of OWL 2 RL plus
rdf:langString, rdf:HTML, xsd:date and xsd:time; ``rdfs-axioms.srl`` adds the axiomatic
triples, rdfs1 and rdfD1 in RDF form (``reckon infer --axiomatic``). Every entry of the
approved manifest's ``mf:entries`` list (48 tests; three more are commented out upstream
as rescinded or duplicate) and of ``az-tests/manifest.ttl`` ("Unapproved RDF Semantics
tests", its cases named ``az-tests/<name>``) runs in both configurations, ``[rdfs]`` and
``[axioms]``:

* PositiveEntailmentTest with a graph result: the conclusion (``mf:result``) must be
  contained in the closure of the premise (``mf:action``), its blank nodes read as
  existential variables (RDF 1.1 Semantics §5.2), or the premise must be inconsistent
  (an inconsistent graph entails everything);
* PositiveEntailmentTest with result ``false``: the premise is inconsistent:
  ``Reasoner.inconsistencies()`` is not empty (some node in owl:Nothing, rdfs.srl);
* NegativeEntailmentTest: the conclusion is not entailed (and the premise is consistent);
  with result ``false``, the premise is consistent.

Each entry runs under its own datatype regime: the manifest's ``mf:recognizedDatatypes``
is the reasoner's ``datatypes=`` (RDF 1.1 Semantics §7: D-entailment for that D; the
twins ``datatypes-non-well-formed-literal-1`` / ``-2`` differ only there).

Out of scope, each with its reason (``pytest -rxs``), marked ``xfail(strict=True)`` so
that an unexpected pass fails the suite: the cases in OUT_OF_SCOPE (both
configurations) and in NEEDS_AXIOMS (without the option only).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import BlankNode, NamedNode, RdfFormat, Triple, parse

from tests.conftest import shared_path_or_fail_at_collection
from tests.reasoning.conftest import load_shipped

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
BASE = "https://w3c.github.io/rdf-tests/rdf/rdf11/rdf-mt/"

_NOT_CANONICAL = ("the conclusion names a literal that is neither in the graph nor the canonical literal of a"
                  " value in it (rdfs.srl header: rules conclude about the terms of the graph)")
_AXIOMS = "needs the completeness option rdfs-axioms.srl (axiomatic triples, rdfD1 in RDF form)"

# name -> reason, in both configurations
OUT_OF_SCOPE: dict[str, str] = {
    "datatypes-semantic-equivalence-within-type-2": _NOT_CANONICAL,
    "datatypes-semantic-equivalence-between-datatypes": _NOT_CANONICAL,
    "float-round-same": _NOT_CANONICAL,
    "float-infinity": _NOT_CANONICAL,
    "double-round-same": _NOT_CANONICAL,
    "double-infinity": _NOT_CANONICAL,
    "az-tests/only-one-property": "needs counting the properties an interpretation can have (all properties"
    " are the one value 0), not a rule-derivable clash",
    "az-tests/resource-is-literal": "needs `ex:foo rdf:type rdfs:Resource` for an IRI that is not in the graph"
    " (RDFS tautology); rules only conclude about terms of the graph",
    "az-tests/same-as-one": "upstream manifest names same-as-one001.nt / 002.nt, only .ttl files exist"
    " (SOURCES.md)",
}

# name -> reason, only without rdfs-axioms.srl
NEEDS_AXIOMS: dict[str, str] = {
    "rdfms-seq-representation-test002": _AXIOMS,
    "rdfms-seq-representation-test003": _AXIOMS,
    "rdfms-seq-representation-test004": _AXIOMS,
    "literal-type": _AXIOMS,
    "az-tests/langstring": _AXIOMS,
}

CONFIGS = {"rdfs": ("rdfs.srl",), "axioms": ("rdfs.srl", "rdfs-axioms.srl")}

ROOT = shared_path_or_fail_at_collection("conformance", "rdf-mt")


def _read(path: Path) -> list[Triple]:
    fmt = RdfFormat.N_TRIPLES if path.suffix == ".nt" else RdfFormat.TURTLE
    base = BASE + path.relative_to(ROOT).as_posix()  # type: ignore[arg-type]
    with path.open("rb") as fh:
        return [q.triple for q in parse(fh, format=fmt, base_iri=base)]


def _manifest_entries(manifest: str, prefix: str = "") -> list[dict[str, object]]:
    """(name, kind, regime, action path, result path | False) for each manifest entry, in order."""
    if ROOT is None:
        return []
    triples = _read(ROOT / manifest)
    by_s: dict[object, dict[str, list[object]]] = {}
    for t in triples:
        by_s.setdefault(t.subject, {}).setdefault(t.predicate.value, []).append(t.object)

    def one(s: object, p: str) -> object:
        return by_s[s][p][0]

    manifest = next(s for s, po in by_s.items() if NamedNode(MF + "Manifest") in po.get(RDF + "type", []))
    node, entries = one(manifest, MF + "entries"), []
    while node != NamedNode(RDF + "nil"):
        entries.append(one(node, RDF + "first"))
        node = one(node, RDF + "rest")
    def rdf_list(node: object) -> list[str]:
        items = []
        while node != NamedNode(RDF + "nil"):
            items.append(one(node, RDF + "first").value)  # type: ignore[attr-defined]
            node = one(node, RDF + "rest")
        return items

    out = []
    for e in entries:
        result = one(e, MF + "result")
        recognized = by_s[e].get(MF + "recognizedDatatypes")
        out.append(
            {
                "name": prefix + one(e, MF + "name").value,  # type: ignore[attr-defined]
                "kind": one(e, RDF + "type").value.rsplit("#", 1)[1],  # type: ignore[attr-defined]
                "regime": one(e, MF + "entailmentRegime").value,  # type: ignore[attr-defined]
                # the manifest's datatype regime D; absent: Reckon's own (every supported datatype)
                "datatypes": None if recognized is None else rdf_list(recognized[0]),
                "action": ROOT / one(e, MF + "action").value[len(BASE) :],  # type: ignore[attr-defined]
                "result": False if not isinstance(result, NamedNode) else ROOT / result.value[len(BASE) :],
            }
        )
    return out


ENTRIES = _manifest_entries("manifest.ttl")
AZ_ENTRIES = _manifest_entries("az-tests/manifest.ttl", "az-tests/")


def _params() -> list[object]:
    params = []
    for config in CONFIGS:
        for e in ENTRIES + AZ_ENTRIES:
            name, marks = str(e["name"]), []
            reason = OUT_OF_SCOPE.get(name) or (NEEDS_AXIOMS.get(name) if config == "rdfs" else None)
            if reason is not None:
                if not Path(str(e["action"])).exists():
                    marks.append(pytest.mark.skip(reason=reason))
                else:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
            params.append(pytest.param(config, e, id=f"{config}:{name}", marks=marks))
    return params


def entails(graph: set[Triple], conclusion: list[Triple]) -> bool:
    """Simple entailment: some mapping of the conclusion's blank nodes to terms of ``graph``
    makes every conclusion triple a member of ``graph`` (RDF 1.1 Semantics §5.2)."""

    def match(i: int, binding: dict[BlankNode, object]) -> bool:
        if i == len(conclusion):
            return True
        t = conclusion[i]
        for g in graph:
            b = dict(binding)
            ok = True
            for pat, val in ((t.subject, g.subject), (t.predicate, g.predicate), (t.object, g.object)):
                if isinstance(pat, BlankNode):
                    if b.setdefault(pat, val) != val:
                        ok = False
                        break
                elif pat != val:
                    ok = False
                    break
            if ok and match(i + 1, b):
                return True
        return False

    return match(0, {})


@pytest.fixture(scope="module")
def programs():
    return {name: load_shipped(*files) for name, files in CONFIGS.items()}


def test_manifest_is_complete() -> None:
    """Every listed entry is collected (48 approved + 14 az-tests), and every out-of-scope name is a real entry."""
    if ROOT is None:
        pytest.skip("shared data missing: conformance/rdf-mt")
    names = [e["name"] for e in ENTRIES]
    assert len(names) == 48
    az = [e["name"] for e in AZ_ENTRIES]
    assert len(az) == 14
    assert set(OUT_OF_SCOPE) | set(NEEDS_AXIOMS) <= set(names) | set(az)


@pytest.mark.parametrize(("config", "entry"), _params())
def test_rdf_mt(config: str, entry: dict[str, object], programs) -> None:
    from reckon.datalog.evaluate import Reasoner

    premise = _read(entry["action"])  # type: ignore[arg-type]
    r = Reasoner(programs[config], datatypes=entry["datatypes"])  # type: ignore[arg-type]
    r.load(premise)
    graph = set(premise) | r.inferred()
    inconsistent = bool(r.inconsistencies())
    positive = entry["kind"] == "PositiveEntailmentTest"
    if entry["result"] is False:
        assert inconsistent == positive, [i.render() for i in r.inconsistencies()]
        return
    conclusion = _read(entry["result"])  # type: ignore[arg-type]
    if positive:
        assert inconsistent or entails(graph, conclusion), f"not entailed: {conclusion}"
    else:
        assert not inconsistent, [i.render() for i in r.inconsistencies()]
        assert not entails(graph, conclusion), f"wrongly entailed: {conclusion}"


def test_entails_helper_reads_blank_nodes_as_variables() -> None:
    """The checker itself: `_:x` may map to any term, but consistently."""
    a, b, c, p = (NamedNode(f"http://example.org/{n}") for n in "abcp")
    x = BlankNode()
    g = {Triple(a, p, b), Triple(c, p, a)}
    assert entails(g, [Triple(a, p, x)])
    assert entails(g, [Triple(x, p, a), Triple(a, p, b)])
    assert not entails(g, [Triple(a, p, x), Triple(c, p, x)])
    assert not entails(g, [Triple(b, p, a)])
