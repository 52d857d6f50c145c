"""LUBM(1) data, ontology, the 14 queries and their reference answers.

The one loader shared by ``bench/reasoning.py`` and ``tests/reasoning/`` (tests put the
repository root on ``sys.path`` and ``from bench.lubm import ...``).

Inputs (read-only, under ``../shared/data/lubm/``, see its ``SOURCES.md``):

* ``chasebench/scenarios/LUBM/data/001/src_<Class>.csv`` (one column: class membership)
  and ``src_<property>.csv`` (two columns) — the LUBM(1) instance, 100,543 facts;
* ``instans-reasoning/ontology/univ-bench.ttl`` — the univ-bench ontology in Turtle,
  namespace ``http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#``;
* ``instans-reasoning/queries/q<N>.rq`` — the 14 LUBM queries (SPARQL 1.1);
* ``instans-reasoning/answers/answers_query<N>.csv`` — the official LUBM answers for
  one university (UBA 1.7, seed 0, index 0): a header row of variable names, then one
  row per solution; ``NO ANSWERS.`` for an empty result.

IRI mapping (``../shared/data/README.md``): ChaseBench abbreviates
``http://www.Department0.University0.edu/GraduateStudent4`` as
``Department0-University0-GraduateStudent4``, ``http://www.University0.edu`` as
``University0`` and ``http://www.Department0.University0.edu`` as
``Department0-University0``; publications nest one level deeper
(``Department0-University0-FullProfessor0-Publication0`` ->
``http://www.Department0.University0.edu/FullProfessor0/Publication0``, the form used
by the reference answers). Values of ``name``, ``emailAddress``, ``telephone`` and
``researchInterest`` are plain literals (``xsd:string``).

Answers are compared as sets of tuples of strings: an IRI as its IRI string, a literal
as its lexical form (the reference CSVs carry no datatypes or language tags).
"""

from __future__ import annotations

import csv
import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, Store, Triple, parse

__all__ = [
    "LITERAL_PROPERTIES",
    "QUERY_NUMBERS",
    "RDF_TYPE",
    "UB",
    "answer_set",
    "from_rdflib",
    "owlrl_rdfs_closure",
    "reasonable_owlrl_closure",
    "to_rdflib_graph",
    "base_triples",
    "csv_triples",
    "lubm_triples",
    "relabel",
    "write_ntriples",
    "default_lubm_dir",
    "entity_iri",
    "ontology_triples",
    "query_text",
    "reference_answers",
    "run_query",
    "store_of",
]

UB = "http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#"
"""The univ-bench namespace used by UBA data, queries and answers."""

RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
LITERAL_PROPERTIES = frozenset({"name", "emailAddress", "telephone", "researchInterest"})
"""Properties whose second CSV column is a literal, not an entity."""

QUERY_NUMBERS = tuple(range(1, 15))

_DATA = ("chasebench", "scenarios", "LUBM", "data", "001")
_ONTOLOGY = ("instans-reasoning", "ontology", "univ-bench.ttl")


def default_lubm_dir() -> Path:
    """``$RECKON_SHARED/data/lubm``, else ``<repo>/../shared/data/lubm`` (may not exist)."""
    repo = Path(__file__).resolve().parents[1]
    shared = Path(os.environ.get("RECKON_SHARED", repo.parent / "shared"))
    return (shared / "data" / "lubm").resolve()


def entity_iri(token: str) -> NamedNode:
    """The IRI a ChaseBench LUBM token abbreviates.

    >>> entity_iri("Department0-University0-GraduateStudent4").value
    'http://www.Department0.University0.edu/GraduateStudent4'
    >>> entity_iri("University0").value
    'http://www.University0.edu'
    >>> entity_iri("Department0-University0-FullProfessor0-Publication0").value
    'http://www.Department0.University0.edu/FullProfessor0/Publication0'

    :raises ValueError: when the token is neither ``UniversityN...`` nor ``DepartmentN-UniversityN...``.
    """
    parts = token.split("-")
    if parts[0].startswith("University"):
        host, rest = parts[:1], parts[1:]
    elif parts[0].startswith("Department") and len(parts) >= 2 and parts[1].startswith("University"):
        host, rest = parts[:2], parts[2:]
    else:
        raise ValueError(f"not a LUBM entity token: {token!r}")
    iri = "http://www." + ".".join(host) + ".edu"
    if rest:
        iri += "/" + "/".join(rest)
    return NamedNode(iri)


def _in_slice(token: str, prefixes: tuple[str, ...] | None) -> bool:
    if prefixes is None:
        return True
    return any(token == p or token.startswith(p + "-") for p in prefixes)


UNIVERSITIES = 1000
"""UBA 1.7 draws the universities a person's degrees come from among University0 ..
University999 (the LUBM(1) data references 979 of them)."""

_UNIV = re.compile(r"University([0-9]+)")


def relabel(text: str, copy: int) -> str:
    """``text`` with every university number X replaced by (X + copy) mod 1000 (LUBM(n),
    see :func:`lubm_triples`)."""
    if not copy:
        return text
    return _UNIV.sub(lambda m: f"University{(int(m.group(1)) + copy) % UNIVERSITIES}", text)


def csv_triples(lubm_dir: Path, *, subjects: Iterable[str] | None = None, copy: int = 0) -> list[Triple]:
    """The LUBM(1) instance as triples, in file order (files sorted by name).

    :param lubm_dir: the ``data/lubm`` folder.
    :param subjects: keep only facts whose subject token equals one of these prefixes or
        starts with ``prefix + "-"`` (e.g. ``["Department0-University0"]`` = one
        department's slice); ``None`` keeps everything (100,543 facts).
    :param copy: relabel every university number X as (X + copy) mod 1000, in IRIs and
        in literals (e-mail addresses): copy k of LUBM(1) is university k's data
        (:func:`lubm_triples`). ``subjects`` are matched before relabelling.
    :raises FileNotFoundError: when the CSV folder is missing.
    """
    folder = lubm_dir.joinpath(*_DATA)
    files = sorted(folder.glob("src_*.csv"))
    if not files:
        raise FileNotFoundError(f"no src_*.csv under {folder}")
    prefixes = tuple(subjects) if subjects is not None else None
    out: list[Triple] = []
    iris: dict[str, NamedNode] = {}

    def iri(token: str) -> NamedNode:
        got = iris.get(token)
        if got is None:
            got = iris[token] = entity_iri(relabel(token, copy))
        return got

    for f in files:
        name = f.stem[len("src_") :]
        pred = NamedNode(UB + name)
        with f.open(newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                if not row:
                    continue
                if not _in_slice(row[0], prefixes):
                    continue
                if len(row) == 1:
                    out.append(Triple(iri(row[0]), RDF_TYPE, NamedNode(UB + name)))
                elif name in LITERAL_PROPERTIES:
                    out.append(Triple(iri(row[0]), pred, Literal(relabel(row[1], copy))))
                else:
                    out.append(Triple(iri(row[0]), pred, iri(row[1])))
    return out


@functools.lru_cache(maxsize=2)
def _lubm_cached(path: str, n: int) -> tuple[Triple, ...]:
    d = Path(path)
    out: list[Triple] = list(ontology_triples(d))
    for k in range(n):
        out.extend(csv_triples(d, copy=k))
    return tuple(dict.fromkeys(out))


def lubm_triples(lubm_dir: Path, n: int) -> tuple[Triple, ...]:
    """LUBM(n): the univ-bench ontology plus n relabelled copies of the LUBM(1) instance.

    Mapping (documented in ``bench/reasoning.py``): copy k (k = 0 .. n-1) is the LUBM(1)
    instance with every university number X replaced by (X + k) mod 1000 — in entity
    IRIs (``http://www.Department3.University0.edu/Lecturer2`` becomes
    ``...University{k}.edu/Lecturer2``) and in literals (e-mail addresses). So copy k is
    university k's departments, people, courses and publications, exactly as LUBM(1) is
    university 0's, and the degree-from references to the 1000 universities of UBA keep
    their distribution: a reference that lands on a university in 0 .. n-1 is a
    cross-university link, as in the original generator's LUBM(n) (e.g. Q13's
    ``hasAlumnus University0`` gains the alumni of other copies). Copy 0 is LUBM(1), so
    LUBM(1) = ``lubm_triples(d, 1)`` = :func:`base_triples`. Deduplicated, order kept;
    cached per process.
    """
    if n < 1:
        raise ValueError("LUBM(n) needs n >= 1")
    return _lubm_cached(str(lubm_dir), n)


def write_ntriples(triples: Iterable[Triple], path: Path) -> Path:
    """Write triples as N-Triples (the input format every peer of bench/reasoning.py reads)."""
    from pyoxigraph import serialize

    with path.open("wb") as fh:
        serialize(triples, fh, format=RdfFormat.N_TRIPLES)
    return path


@functools.lru_cache(maxsize=4)
def _ontology_cached(path: str) -> tuple[Triple, ...]:
    with open(path, "rb") as fh:
        return tuple(q.triple for q in parse(fh, format=RdfFormat.TURTLE))


def ontology_triples(lubm_dir: Path) -> tuple[Triple, ...]:
    """The univ-bench ontology (Turtle) as triples; cached per process (blank nodes are
    stable within the process). :raises FileNotFoundError: when the file is missing."""
    return _ontology_cached(str(lubm_dir.joinpath(*_ONTOLOGY)))


@functools.lru_cache(maxsize=4)
def _base_cached(path: str, subjects: tuple[str, ...] | None) -> tuple[Triple, ...]:
    d = Path(path)
    return tuple(dict.fromkeys([*ontology_triples(d), *csv_triples(d, subjects=subjects)]))


def base_triples(lubm_dir: Path, *, subjects: tuple[str, ...] | None = None) -> tuple[Triple, ...]:
    """Ontology + instance triples (deduplicated, order kept); cached per process.

    :param subjects: see :func:`csv_triples`; the ontology is always included.
    """
    return _base_cached(str(lubm_dir), subjects)


def query_text(lubm_dir: Path, n: int) -> str:
    """SPARQL text of LUBM query ``n`` (1..14)."""
    return lubm_dir.joinpath("instans-reasoning", "queries", f"q{n}.rq").read_text(encoding="utf-8")


def reference_answers(lubm_dir: Path, n: int) -> tuple[tuple[str, ...], set[tuple[str, ...]]]:
    """``(variables, solutions)`` of the official LUBM(1) answer file of query ``n``.

    ``NO ANSWERS.`` gives ``((), set())``.
    """
    path = lubm_dir.joinpath("instans-reasoning", "answers", f"answers_query{n}.csv")
    text = path.read_text(encoding="utf-8")
    if text.strip() == "NO ANSWERS.":
        return (), set()
    rows = [r for r in csv.reader(text.splitlines()) if r]
    header, body = tuple(rows[0]), rows[1:]
    return header, {tuple(r) for r in body}


def store_of(*graphs: Iterable[Triple]) -> Store:
    """An in-memory pyoxigraph Store with the union of the triples in its default graph."""
    store = Store()
    store.bulk_extend(Quad(t.subject, t.predicate, t.object) for g in graphs for t in g)
    return store


def _norm(term: object) -> str:
    if isinstance(term, (NamedNode, Literal)):
        return term.value
    return str(term)


def answer_set(store: Store, sparql: str, variables: Iterable[str] | None = None) -> set[tuple[str, ...]]:
    """Run a SELECT query; solutions as a set of tuples of IRI strings / lexical forms.

    :param variables: projection order (defaults to the query's own variable order).
    """
    solutions = store.query(sparql)
    names = list(variables) if variables else [v.value for v in solutions.variables]  # type: ignore[union-attr]
    return {tuple(_norm(s[v]) for v in names) for s in solutions}  # type: ignore[union-attr]


def run_query(store: Store, lubm_dir: Path, n: int) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """``(actual, expected)`` for LUBM query ``n`` against ``store``, both in the
    reference file's variable order."""
    header, expected = reference_answers(lubm_dir, n)
    actual = answer_set(store, query_text(lubm_dir, n), header or None)
    return actual, expected


# ----------------------------------------------------------------- reference reasoners


def to_rdflib_graph(triples: Iterable[Triple]):  # -> rdflib.Graph
    """An in-memory rdflib Graph with the triples (owlrl crashes on Oxigraph-backed graphs
    with literals: DESIGN.md, measured facts). Blank-node ids and literal datatypes /
    language tags are kept (``xsd:string`` literals stay typed ``xsd:string``)."""
    import rdflib

    def conv(t: object) -> object:
        if isinstance(t, NamedNode):
            return rdflib.URIRef(t.value)
        if isinstance(t, Literal):
            if t.language:
                return rdflib.Literal(t.value, lang=t.language)
            return rdflib.Literal(t.value, datatype=rdflib.URIRef(t.datatype.value))
        return rdflib.BNode(t.value)  # type: ignore[attr-defined]

    g = rdflib.Graph()
    for t in triples:
        g.add((conv(t.subject), conv(t.predicate), conv(t.object)))
    return g


def from_rdflib(triples: Iterable[tuple[object, object, object]]) -> set[Triple]:
    """rdflib (s, p, o) tuples as pyoxigraph Triples; generalized triples (a literal
    subject or predicate), which RDF and pyoxigraph do not allow, are dropped."""
    import rdflib
    from pyoxigraph import BlankNode

    def conv(t: object) -> object:
        if isinstance(t, rdflib.URIRef):
            return NamedNode(str(t))
        if isinstance(t, rdflib.BNode):
            return BlankNode(str(t))
        assert isinstance(t, rdflib.Literal)
        if t.language:
            return Literal(str(t), language=t.language)
        return Literal(str(t), datatype=NamedNode(str(t.datatype)) if t.datatype else None)

    out: set[Triple] = set()
    for s, p, o in triples:
        if isinstance(s, rdflib.Literal) or isinstance(p, rdflib.Literal):
            continue
        out.add(Triple(conv(s), conv(p), conv(o)))  # type: ignore[arg-type]
    return out


def owlrl_rdfs_closure(triples: Iterable[Triple]) -> set[Triple]:
    """owlrl's RDFS closure, ``DeductiveClosure(RDFS_Semantics, axiomatic_triples=False,
    datatype_axioms=False)``, of the triples (input included), minus generalized
    (literal-subject) triples. Runs on an rdflib in-memory Graph; LUBM(1): ~60 s."""
    from owlrl import DeductiveClosure, RDFS_Semantics

    g = to_rdflib_graph(triples)
    DeductiveClosure(RDFS_Semantics, axiomatic_triples=False, datatype_axioms=False).expand(g)
    return from_rdflib(g)


def reasonable_owlrl_closure(triples: Iterable[Triple]) -> set[Triple]:
    """The OWL 2 RL closure computed by ``reasonable`` (Rust; ``PyReasoner.from_graph`` +
    ``reason()``), input included."""
    import reasonable

    r = reasonable.PyReasoner()
    r.from_graph(to_rdflib_graph(triples))
    return from_rdflib(r.reason())
