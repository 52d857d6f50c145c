"""W3C SPARQL-RL (SRL) conformance: evaluation manifests ``eval/``, ``eval2/``, ``examples/``.

Suite: ``../shared/conformance/srl-tests/shacl12-test-suite/tests/sparql-rl/{eval,eval2,examples}``
(one pytest case per ``mf:entries`` item, id = ``<area>/<mf:name>``).

Each case: parse ``srlt:ruleset`` with :func:`parse_srl`, parse every ``srlt:data`` file
(Turtle, RDF 1.2, with pyoxigraph), run :func:`materialize` (SRL "Evaluation of a Rule
Set") and compare the inference graph with ``mf:result`` by RDF graph isomorphism
(blank nodes: :func:`rdflib.compare.isomorphic`).

Expected failures (``strict=True``): entries whose data or result file is missing from our
copy of the suite (``srl-tests/SOURCES.md``, "Known problems": the file could not be
retrieved); the reason names the missing files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, RdfFormat, Triple, parse
from rdflib import BNode as RBNode
from rdflib import Graph, URIRef
from rdflib import Literal as RLiteral
from rdflib.compare import isomorphic

from reckon.datalog.evaluate import materialize
from reckon.datalog.srl import parse_srl
from tests.conformance._manifest import Entry, entries

pytestmark = pytest.mark.conformance

AREAS = ("eval", "eval2", "examples")


def _cases() -> list[object]:
    out: list[object] = []
    for area in AREAS:
        for e in entries(area):
            marks = []
            if e.missing:
                names = ", ".join(p.name for p in e.missing)
                marks.append(
                    pytest.mark.xfail(
                        reason=f"file(s) missing from our copy of the suite (SOURCES.md, Known problems): {names}",
                        strict=True,
                        raises=FileNotFoundError,
                    )
                )
            out.append(pytest.param(e, id=f"{area}/{e.name}", marks=marks))
    return out


CASES = _cases()


def _read_turtle(path: Path) -> list[Triple]:
    if not path.exists():
        raise FileNotFoundError(f"missing test file: {path}")
    with path.open("rb") as fh:
        return [q.triple for q in parse(fh, format=RdfFormat.TURTLE, base_iri=path.as_uri())]


def _to_rdflib(t: object, bnodes: dict[str, RBNode]) -> object:
    if isinstance(t, NamedNode):
        return URIRef(t.value)
    if isinstance(t, BlankNode):
        return bnodes.setdefault(t.value, RBNode())
    if isinstance(t, Literal):
        if t.language:
            return RLiteral(t.value, lang=t.language)
        return RLiteral(t.value, datatype=URIRef(t.datatype.value))
    if isinstance(t, Triple):  # rdflib has no triple terms: an opaque IRI (blank nodes inside are not mapped)
        return URIRef("urn:reckon:test:triple-term:" + str(t))
    raise TypeError(t)


def _graph(triples: set[Triple]) -> Graph:
    g = Graph()
    bn: dict[str, RBNode] = {}
    for t in triples:
        g.add((_to_rdflib(t.subject, bn), _to_rdflib(t.predicate, bn), _to_rdflib(t.object, bn)))  # type: ignore[arg-type]
    return g


def _has_bnode(triples: set[Triple]) -> bool:
    return any(isinstance(x, BlankNode) for t in triples for x in (t.subject, t.object))


def test_suite_has_evaluation_cases() -> None:
    """The three evaluation manifests are read (46 entries listed in mf:entries of our copy)."""
    if not CASES:
        pytest.skip("../shared is absent (outside CI)")
    assert len(CASES) == 46


@pytest.mark.parametrize("entry", CASES)
def test_srl_eval(entry: Entry) -> None:
    """If the ruleset is evaluated over the data, then the inference graph is isomorphic
    to the expected result graph."""
    for p in entry.missing:
        raise FileNotFoundError(f"missing test file: {p}")
    assert entry.ruleset is not None and entry.result is not None
    rs = parse_srl(entry.ruleset.read_text(encoding="utf-8"), file=str(entry.ruleset), base=entry.ruleset.as_uri())
    base: list[Triple] = []
    for d in entry.data:
        base.extend(_read_turtle(d))
    got = materialize(rs, base)
    expected = set(_read_turtle(entry.result))
    if _has_bnode(got) or _has_bnode(expected):
        assert isomorphic(_graph(got), _graph(expected)), (
            f"not isomorphic:\n got {sorted(map(str, got))}\n expected {sorted(map(str, expected))}"
        )
    else:
        assert {str(t) for t in got} == {str(t) for t in expected}
