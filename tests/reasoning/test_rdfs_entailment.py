"""W3C RDF 1.1 Semantics entailment tests (``../shared/conformance/rdf-mt/manifest.ttl``)
run against ``rules/rdfs.srl``.

Spec: RDF 1.1 Semantics, https://www.w3.org/TR/rdf11-mt/ (§9.2.1 RDFS entailment patterns).

Every entry of the approved manifest's ``mf:entries`` list (48 tests; three more are
commented out upstream as rescinded or duplicate) gets one test, named after the manifest
entry:

* PositiveEntailmentTest with a graph result: materialize the premise (``mf:action``)
  with rdfs.srl; the conclusion (``mf:result``) must be contained in the closure, its
  blank nodes read as existential variables (simple entailment of the conclusion by the
  closure, RDF 1.1 Semantics §5.2: an instance of the conclusion is a subgraph).
* NegativeEntailmentTest with a graph result: the conclusion must NOT be contained. These
  run for every regime (simple, RDF, RDFS, with or without recognized datatypes): Reckon
  entails at most what the strongest regime entails, so a non-entailment stays one.
* Out of scope, each with its reason (shown by ``pytest -rxs``):

  - positive tests that need datatype recognition (D-entailment: equal values of
    different lexical forms, ``"42"^^xsd:integer`` => ``_:x rdf:type xsd:integer``) or the
    container-membership axiomatic triples (``rdf:_1 rdf:type
    rdfs:ContainerMembershipProperty``), a generalized triple, or a conclusion about a
    term that is not in the graph: marked ``xfail(strict=True)`` — they run, and an
    unexpected pass fails the suite;
  - tests whose result is ``false`` (the premise is / is not inconsistent): Reckon does not
    check consistency (ill-typed literals, range clashes between disjoint datatypes), so a
    positive one cannot pass and a negative one would pass without testing anything:
    skipped with the reason.

``az-tests/manifest.ttl`` ("Unapproved RDF Semantics tests", corner cases "not known to be
supported by any implementation", see its README) runs the same way; its cases are named
``az-tests/<name>``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import BlankNode, NamedNode, RdfFormat, Triple, parse

from tests.conftest import shared_path_or_fail_at_collection
from tests.reasoning.conftest import closure, load_shipped

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
BASE = "https://w3c.github.io/rdf-tests/rdf/rdf11/rdf-mt/"

_D_ENTAILMENT = "needs datatype recognition (D-entailment: literal values, not lexical forms)"
_CMP_AXIOMS = "needs the rdf:_n container-membership axiomatic triples (not materialized, rdfs.srl header)"
_INCONSISTENCY = "result is `false`: consistency checking (ill-typed literals, datatype clashes) is not implemented"

# name -> reason. Positive graph-result cases here are xfail(strict=True); `false` results are skipped.
OUT_OF_SCOPE: dict[str, str] = {
    "datatypes-intensional-xsd-integer-decimal-compatible": _INCONSISTENCY + " (negative: would pass vacuously)",
    "datatypes-non-well-formed-literal-1": _INCONSISTENCY + " (negative: would pass vacuously)",
    "datatypes-non-well-formed-literal-2": _INCONSISTENCY,
    "datatypes-range-clash": _INCONSISTENCY,
    "datatypes-test010": _INCONSISTENCY,
    "rdfs-entailment-test001": _INCONSISTENCY,
    "rdfs-entailment-test002": _INCONSISTENCY,
    "rdfs-subClassOf-a-Property-test001": _INCONSISTENCY + " (negative: would pass vacuously)",
    "xmlsch-02-whitespace-facet-2": _INCONSISTENCY,
    "xmlsch-02-whitespace-facet-4": _INCONSISTENCY,
    "datatypes-semantic-equivalence-within-type-1": _D_ENTAILMENT,
    "datatypes-semantic-equivalence-within-type-2": _D_ENTAILMENT,
    "datatypes-semantic-equivalence-between-datatypes": _D_ENTAILMENT,
    "literal-type": _D_ENTAILMENT,
    "float-round-same": _D_ENTAILMENT,
    "float-infinity": _D_ENTAILMENT,
    "double-round-same": _D_ENTAILMENT,
    "double-infinity": _D_ENTAILMENT,
    "rdfms-seq-representation-test002": _CMP_AXIOMS,
    "rdfms-seq-representation-test003": _CMP_AXIOMS,
    "rdfms-seq-representation-test004": _CMP_AXIOMS,
    # az-tests/manifest.ttl
    "az-tests/horst-complete-rules": "needs a generalized triple (blank-node predicate `baz1 _:p baz2` from"
    " rdfs7, then rdfs3); with owl2rl.srl loaded, scm-rng2 derives the conclusion",
    "az-tests/langstring": _D_ENTAILMENT,
    "az-tests/resource-is-literal": "needs `ex:foo rdf:type rdfs:Resource` for an IRI that is not in the graph"
    " (RDFS tautology); rules only conclude about terms of the graph",
    "az-tests/same-as-one": "upstream manifest names same-as-one001.nt / 002.nt, only .ttl files exist"
    " (SOURCES.md); also needs D-entailment",
    "az-tests/ill-formed-string": _INCONSISTENCY,
    "az-tests/inconsistent-recognizing-integer": _INCONSISTENCY,
    "az-tests/langstring-disjoint-string": _INCONSISTENCY,
    "az-tests/langstring-not-subclassof-string": _INCONSISTENCY,
    "az-tests/only-one-class": _INCONSISTENCY,
    "az-tests/only-one-property": _INCONSISTENCY,
    "az-tests/unrecognized-datatype001": _INCONSISTENCY + " (negative: would pass vacuously)",
    "az-tests/well-formed-html": _INCONSISTENCY + " (negative: would pass vacuously)",
}

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
    out = []
    for e in entries:
        result = one(e, MF + "result")
        out.append(
            {
                "name": prefix + one(e, MF + "name").value,  # type: ignore[attr-defined]
                "kind": one(e, RDF + "type").value.rsplit("#", 1)[1],  # type: ignore[attr-defined]
                "regime": one(e, MF + "entailmentRegime").value,  # type: ignore[attr-defined]
                "action": ROOT / one(e, MF + "action").value[len(BASE) :],  # type: ignore[attr-defined]
                "result": False if not isinstance(result, NamedNode) else ROOT / result.value[len(BASE) :],
            }
        )
    return out


ENTRIES = _manifest_entries("manifest.ttl")
AZ_ENTRIES = _manifest_entries("az-tests/manifest.ttl", "az-tests/")


def _params() -> list[object]:
    params = []
    for e in ENTRIES + AZ_ENTRIES:
        name, marks = str(e["name"]), []
        if name in OUT_OF_SCOPE:
            if e["result"] is False or not Path(str(e["action"])).exists():
                marks.append(pytest.mark.skip(reason=OUT_OF_SCOPE[name]))
            else:
                marks.append(pytest.mark.xfail(strict=True, reason=OUT_OF_SCOPE[name]))
        params.append(pytest.param(e, id=name, marks=marks))
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
def rdfs_rules():
    return load_shipped("rdfs.srl")


def test_manifest_is_complete() -> None:
    """Every listed entry is collected (48 approved + 14 az-tests), and every out-of-scope name is a real entry."""
    if ROOT is None:
        pytest.skip("shared data missing: conformance/rdf-mt")
    names = [e["name"] for e in ENTRIES]
    assert len(names) == 48
    az = [e["name"] for e in AZ_ENTRIES]
    assert len(az) == 14
    assert set(OUT_OF_SCOPE) <= set(names) | set(az)


@pytest.mark.parametrize("entry", _params())
def test_rdf_mt(entry: dict[str, object], rdfs_rules) -> None:
    premise = _read(entry["action"])  # type: ignore[arg-type]
    conclusion = _read(entry["result"])  # type: ignore[arg-type]
    graph = closure(rdfs_rules, premise)
    assert set(premise) <= graph
    if entry["kind"] == "PositiveEntailmentTest":
        assert entails(graph, conclusion), f"not entailed: {conclusion}"
    else:
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
