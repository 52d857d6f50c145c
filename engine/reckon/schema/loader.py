"""Load the ontology, the SHACL shapes and the module rule files into one :class:`Schema`.

The shipped modules are ``ontology/*.ttl`` + ``shapes/*.ttl`` (+ ``rules/<module>.srl``
for each ontology module), found with :func:`reckon._resources.resource_dir`. An
ontology author adds a module without Python by passing its files (or a folder holding
them) as extra paths: Turtle files (``.ttl``, ``.nt``) are split triple by triple into
ontology and shapes (a node that is a SHACL shape, and the blank nodes it reaches, goes
to the shapes graph; everything else to the ontology), ``.srl`` / ``.dlog`` files are
rule files.

Schemas are cached per module set (the resolved paths and their modification times), so
repeated loads are free and the parsed shapes graph is reused by every validation.

SHACL (https://www.w3.org/TR/shacl/#targetClass): a shape with ``sh:targetClass C``
applies to instances of subclasses of ``C`` only if the ``rdfs:subClassOf`` triples are
in the *data* graph. :attr:`Schema.hierarchy` holds what validation adds to every data
graph: the transitive closure of ``rdfs:subClassOf`` and every ``rdf:type`` triple of
the ontology (so ``sh:class`` finds individuals such as ``mk:meta a mk:Platform``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rdflib
from rdflib.namespace import OWL, RDF, RDFS, SH

from reckon import vocab
from reckon._errors import SchemaError
from reckon._resources import resource_dir

if TYPE_CHECKING:  # pragma: no cover
    from reckon.schema.catalogue import Catalogue

__all__ = [
    "MK",
    "RC",
    "RK",
    "Schema",
    "load_schema",
    "schema_from_graph",
    "split_shapes",
]

RK = rdflib.Namespace(vocab.RK)
"""The core namespace, prefix ``rk:``."""
MK = rdflib.Namespace(vocab.MK)
"""The marketing module namespace, prefix ``mk:``."""
RC = rdflib.Namespace(vocab.RC)
_NEIGHBOUR_PREFIXES = tuple((p, rdflib.Namespace(vocab.PREFIXES[p])) for p in ("nt", "ev", "xp", "ty"))
"""Prefixes of the shipped modules of issue 15, bound like rk / mk / rc."""
"""The recruiting module namespace, prefix ``rc:``."""

_TURTLE_SUFFIXES = {".ttl": "turtle", ".nt": "nt", ".n3": "n3"}
_RULE_SUFFIXES = (".srl", ".dlog")
_SHAPE_TYPES = (SH.NodeShape, SH.PropertyShape)


@dataclass(frozen=True, eq=False)
class Schema:
    """The loaded memory model: ontology, shapes, module rule files.

    :ivar ontology: rdflib graph of every ontology triple (classes, properties,
        individuals, the ``rk:settings`` defaults).
    :ivar shapes: rdflib graph of every SHACL shape (node shapes, their property shapes
        and lists), the shapes graph given to pySHACL.
    :ivar hierarchy: rdflib graph added to each validation's data graph: the closure of
        ``rdfs:subClassOf`` plus every ``rdf:type`` triple of the ontology.
    :ivar rule_files: rule files of the loaded modules, core first (``rules/core.srl``,
        ``rules/marketing.srl`` ... then extra ``.srl`` / ``.dlog`` files in the order given).
    :ivar sources: the Turtle files the schema was read from.
    """

    ontology: rdflib.Graph
    shapes: rdflib.Graph
    hierarchy: rdflib.Graph
    rule_files: tuple[Path, ...] = ()
    sources: tuple[Path, ...] = ()
    _memory: dict[Any, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- class hierarchy ----------------------------------------------------------

    def superclasses(self, cls: rdflib.URIRef) -> set[rdflib.URIRef]:
        """Every class ``cls`` is (transitively) an ``rdfs:subClassOf``, excluding itself."""
        return {o for o in self.hierarchy.objects(cls, RDFS.subClassOf) if isinstance(o, rdflib.URIRef)} - {cls}

    def memory_classes(self) -> list[rdflib.URIRef]:
        """Every class under ``rk:Memory``, however deep, sorted by IRI (``rk:Memory`` excluded).

        Classes the rules derive (``rk:ActiveMemory``, ``rk:LiveCandidate``) are not
        declared subclasses and are not listed.
        """
        return sorted(
            {
                s
                for s in self.hierarchy.subjects(RDFS.subClassOf, RK.Memory)
                if isinstance(s, rdflib.URIRef) and s != RK.Memory
            }
        )

    def is_memory_class(self, cls: rdflib.term.Node) -> bool:
        """Whether ``cls`` is ``rk:Memory`` or a class under it."""
        return cls == RK.Memory or (cls, RDFS.subClassOf, RK.Memory) in self.hierarchy

    def is_known_class(self, cls: rdflib.term.Node) -> bool:
        """Whether the ontology declares ``cls`` (``owl:Class`` / ``rdfs:Class``) or places
        it in the class hierarchy."""
        return (
            (cls, RDF.type, OWL.Class) in self.ontology
            or (cls, RDF.type, RDFS.Class) in self.ontology
            or (cls, RDFS.subClassOf, None) in self.hierarchy
            or (None, RDFS.subClassOf, cls) in self.hierarchy
        )

    def qname(self, iri: rdflib.term.Node) -> str:
        """``prefix:local`` for an IRI of a bound namespace, else the IRI itself."""
        try:
            return str(self.ontology.namespace_manager.normalizeUri(str(iri))).strip("<>")
        except Exception:  # pragma: no cover - rdflib raises various errors on odd IRIs
            return str(iri)

    # -- derived views ------------------------------------------------------------

    def catalogue(self) -> Catalogue:
        """The memory subclass catalogue (computed once per schema).

        :returns: :class:`reckon.schema.catalogue.Catalogue`.
        """
        with self._lock:
            cat = self._memory.get("catalogue")
            if cat is None:
                from reckon.schema.catalogue import build_catalogue

                cat = build_catalogue(self)
                self._memory["catalogue"] = cat
        return cat

    def graph(self) -> rdflib.Graph:
        """Ontology and shapes in one new rdflib graph (what the store puts in its schema graph)."""
        g = rdflib.Graph()
        for prefix, ns in self.ontology.namespaces():
            g.bind(prefix, ns, override=False)
        for t in self.ontology:
            g.add(t)
        for t in self.shapes:
            g.add(t)
        return g

    def triples(self) -> list[Any]:
        """Ontology and shapes as pyoxigraph ``Triple`` objects (blank nodes keep their ids;
        ``xsd:string`` literals are typed, as Oxigraph stores them).

        :returns: ``list[pyoxigraph.Triple]``.
        """
        import pyoxigraph as ox

        from reckon.schema._convert import to_oxigraph

        out = []
        for s, p, o in self.graph():
            out.append(ox.Triple(to_oxigraph(s), to_oxigraph(p), to_oxigraph(o)))  # type: ignore[arg-type]
        return out


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def load_schema(*extra: str | Path, shipped: bool = True) -> Schema:
    """Load the shipped modules plus ``extra`` module files into a :class:`Schema`.

    :param extra: files or folders of an additional module: Turtle files holding an
        ontology and/or shapes (split automatically), ``.srl`` / ``.dlog`` rule files.
        A folder contributes its ``*.ttl``, ``*.nt``, ``*.srl`` and ``*.dlog`` files.
    :param shipped: include the shipped ``ontology/``, ``shapes/`` and module rule files
        (``False`` loads only ``extra``).
    :returns: a cached :class:`Schema`: the same object for the same module set as long
        as no file changed.
    :raises SchemaError: when a path does not exist, has an unknown extension, or a
        Turtle file does not parse (message names the file and the parser's reason).
    """
    turtle: list[Path] = []
    rules: list[Path] = []
    if shipped:
        onto_dir = resource_dir("ontology")
        shapes_dir = resource_dir("shapes")
        turtle += sorted(onto_dir.glob("*.ttl"), key=_module_order)
        turtle += sorted(shapes_dir.glob("*.ttl"), key=_module_order)
        try:
            rules_dir: Path | None = resource_dir("rules")
        except SchemaError:  # pragma: no cover - rules/ always ships
            rules_dir = None
        if rules_dir is not None:
            for onto in sorted(onto_dir.glob("*.ttl"), key=_module_order):
                candidate = rules_dir / f"{onto.stem}.srl"
                if candidate.is_file():
                    rules.append(candidate)
    for p in extra:
        path = Path(p).expanduser().resolve()
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.suffix in _TURTLE_SUFFIXES:
                    turtle.append(child)
                elif child.suffix in _RULE_SUFFIXES:
                    rules.append(child)
        elif not path.is_file():
            raise SchemaError(f"module file not found: {path}")
        elif path.suffix in _TURTLE_SUFFIXES:
            turtle.append(path)
        elif path.suffix in _RULE_SUFFIXES:
            rules.append(path)
        else:
            raise SchemaError(
                f"module file {path} has an unknown extension {path.suffix!r}; "
                "expected .ttl or .nt (ontology / shapes) or .srl / .dlog (rules)"
            )
    key = tuple((str(p.resolve()), p.stat().st_mtime_ns) for p in (*turtle, *rules))
    return _load_cached(key)


@functools.lru_cache(maxsize=32)
def _load_cached(key: tuple[tuple[str, int], ...]) -> Schema:
    paths = [Path(p) for p, _ in key]
    turtle = [p for p in paths if p.suffix in _TURTLE_SUFFIXES]
    rules = tuple(p for p in paths if p.suffix in _RULE_SUFFIXES)
    merged = rdflib.Graph()
    for path in turtle:
        try:
            merged.parse(path, format=_TURTLE_SUFFIXES[path.suffix])
        except Exception as exc:  # rdflib raises many exception types for bad syntax
            raise SchemaError(f"cannot parse {path}: {exc}") from exc
    return _build(merged, rules=rules, sources=tuple(turtle))


def schema_from_graph(graph: rdflib.Graph | Iterable[Any]) -> Schema:
    """A :class:`Schema` from a graph that holds ontology and shapes together (e.g. a
    tenant's schema named graph). Not cached: keep the returned object.

    :param graph: an rdflib graph, or pyoxigraph triples / quads.
    :raises InvalidInput: when an item is not a triple.
    """
    if not isinstance(graph, rdflib.Graph):
        from reckon.schema._convert import graph_from_triples

        graph = graph_from_triples(graph)
    else:
        from reckon.schema._convert import to_rdflib

        copy = rdflib.Graph()
        for prefix, ns in graph.namespaces():
            copy.bind(prefix, ns, override=False)
        for s, p, o in graph:
            copy.add((s, p, to_rdflib(o)))
        graph = copy
    return _build(graph, rules=(), sources=())


def split_shapes(graph: rdflib.Graph) -> tuple[rdflib.Graph, rdflib.Graph]:
    """Split a graph into (ontology, shapes).

    A node is a shape when it is typed ``sh:NodeShape`` / ``sh:PropertyShape`` or is the
    subject of an ``sh:`` predicate; its triples and those of every blank node it reaches
    (property shapes, ``sh:in`` / ``sh:or`` lists) or every named RDF list it reaches (an
    IRI with ``rdf:first``: ``sh:in mk:ISO4217Codes``, one list several shapes share) go to
    the shapes graph; all other triples go to the ontology.
    """
    shape_nodes: set[rdflib.term.Node] = set()
    for s, p, o in graph:
        if (p == RDF.type and o in _SHAPE_TYPES) or (isinstance(p, rdflib.URIRef) and p.startswith(str(SH))):
            shape_nodes.add(s)
    # close over blank nodes reachable from shapes
    todo = list(shape_nodes)
    while todo:
        n = todo.pop()
        for o in graph.objects(n, None):
            if (isinstance(o, rdflib.BNode) or (o, RDF.first, None) in graph) and o not in shape_nodes:
                shape_nodes.add(o)
                todo.append(o)
    onto, shapes = rdflib.Graph(), rdflib.Graph()
    for prefix, ns in graph.namespaces():
        onto.bind(prefix, ns, override=False)
        shapes.bind(prefix, ns, override=False)
    for t in graph:
        (shapes if t[0] in shape_nodes else onto).add(t)
    return onto, shapes


def _build(merged: rdflib.Graph, *, rules: tuple[Path, ...], sources: tuple[Path, ...]) -> Schema:
    for prefix, ns in (("rk", RK), ("mk", MK), ("rc", RC), *_NEIGHBOUR_PREFIXES):
        merged.bind(prefix, ns, override=False)
    onto, shapes = split_shapes(merged)
    return Schema(
        ontology=onto,
        shapes=shapes,
        hierarchy=_hierarchy(onto),
        rule_files=rules,
        sources=sources,
    )


def _hierarchy(onto: rdflib.Graph) -> rdflib.Graph:
    """Closure of ``rdfs:subClassOf`` over named classes, plus all ``rdf:type`` triples."""
    direct: dict[rdflib.term.Node, set[rdflib.term.Node]] = {}
    for s, o in onto.subject_objects(RDFS.subClassOf):
        if isinstance(s, rdflib.URIRef) and isinstance(o, rdflib.URIRef):
            direct.setdefault(s, set()).add(o)
    h = rdflib.Graph()
    for prefix, ns in onto.namespaces():
        h.bind(prefix, ns, override=False)
    for cls in direct:
        seen: set[rdflib.term.Node] = set()
        todo = list(direct[cls])
        while todo:
            sup = todo.pop()
            if sup in seen:
                continue
            seen.add(sup)
            todo.extend(direct.get(sup, ()))
        for sup in seen:
            h.add((cls, RDFS.subClassOf, sup))
    for t in onto.triples((None, RDF.type, None)):
        h.add(t)
    return h


def _module_order(p: Path) -> tuple[int, str]:
    """Core first, then modules alphabetically."""
    return (0 if p.stem == "core" else 1, p.name)
