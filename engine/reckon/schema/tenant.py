"""One tenant's schema: the single owner of its memory classes, the subclass closure,
property specs, the catalogue (LLM tool schema), the compiled SHACL fast path and the
pySHACL validator, built from the tenant's SCHEMA graph and cached per digest of it.

Every reader of the schema goes through :class:`TenantSchema`: the memory write path
(classes, property specs, value conversion, validation), the store's write check
(:meth:`TenantSchema.check_delta`, run on every asserted write), the tool schema
(:meth:`TenantSchema.catalogue`) and recall (labels, identifying properties).

SHACL: https://www.w3.org/TR/shacl/ (Core constraint components, section 4; the
validation report, section 3.6).

Example::

    >>> from reckon.schema import TenantSchema, load_schema, schema_digest
    >>> triples = load_schema().triples()
    >>> ts = TenantSchema.of(schema_digest(triples), triples)
    >>> budget = ts.resolve_class("BudgetConstraintMemory")
    >>> sorted(s.local for s in ts.properties(budget).values())
    ['amount', 'budgetStatus', 'comparedSpendRecord', 'currency', 'currentSpend', 'period', 'platform', 'utilisation']
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput
from reckon.schema._fastshacl import FastShapes
from reckon.schema._shacl import read_schema, restrict, schema_digest
from reckon.schema.catalogue import Catalogue, PropertySpec
from reckon.store.terms import canonical_term, datetime_literal, decimal_literal, parse_datetime_text
from reckon.vocab import (
    ASSERTED,
    BASE_PROPERTIES,
    LABEL,
    MEMORY,
    OWL,
    PREFIXES,
    RDF,
    RDFS,
    RK,
    SCHEMA,
    SH,
    SUBCLASS,
    XSD,
    A,
    local_name,
    python_value,
)

if TYPE_CHECKING:  # pragma: no cover
    from reckon.schema.loader import Schema

__all__ = ["TenantSchema", "curie", "schema_digest"]

_TARGET = NamedNode(SH + "targetClass")
_X_BOOLEAN, _X_DATE = NamedNode(XSD + "boolean"), NamedNode(XSD + "date")
_CACHE: dict[str, TenantSchema] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64
_CONFORMING_SIZE = 512  # conforming (focus, graph) pairs remembered per schema
_ASSERTED = frozenset(ASSERTED)
_NON_SCHEMA = frozenset(g for g in ASSERTED if g != SCHEMA)


def _read(view: Any, s: Any, p: Any, graphs: frozenset[NamedNode]) -> list[Quad]:
    """Quads ``s p ?o`` of ``view`` in ``graphs``: one scan (``StoreView.quads_in``)
    where the view has it, else one read per graph (in a fixed order)."""
    quads_in = getattr(view, "quads_in", None)
    if quads_in is not None:
        return quads_in(s, p, None, graphs)  # type: ignore[no-any-return]
    return [q for g in ASSERTED if g in graphs for q in view.quads(s, p, None, g)]


class TenantSchema:
    """Memory classes, their property specs and enumerated individuals, the SHACL
    shapes and the validator of one SCHEMA graph (ontology + shapes + settings).

    Build it with :meth:`of` (cached per digest) or :meth:`read` (from a store).

    :param digest: :func:`schema_digest` of ``triples``.
    :param triples: the SCHEMA graph's triples (blank nodes as blank nodes).
    """

    def __init__(self, digest: str, triples: Sequence[Triple]) -> None:
        self.digest = digest
        self.triples: tuple[Triple, ...] = tuple(triples)
        self._lock = threading.RLock()
        self._shacl: dict[frozenset[str] | None, Any] = {}
        self._fast: Any = None
        self._catalogue: Catalogue | None = None
        self._memo: dict[str, Any] = {}
        self._conforming: OrderedDict[tuple[Any, frozenset[Triple]], None] = OrderedDict()
        spo: dict[Any, dict[Any, list[Any]]] = defaultdict(lambda: defaultdict(list))
        by_po: dict[tuple[Any, Any], list[Any]] = defaultdict(list)
        for t in self.triples:
            spo[t.subject][t.predicate].append(t.object)
            by_po[(t.predicate, t.object)].append(t.subject)
        self._spo = spo
        self._by_po = by_po
        # the subclass closure, computed once here for every reader (memory write path,
        # the SHACL fast path, the pySHACL restriction, the recall layer)
        direct: dict[Any, set[Any]] = defaultdict(set)  # class -> direct superclasses
        for t in self.triples:
            if t.predicate == SUBCLASS and isinstance(t.subject, NamedNode):
                direct[t.subject].add(t.object)
        self._direct = direct
        self._closure: dict[Any, frozenset[Any]] = {}
        self._supers: dict[NamedNode, set[NamedNode]] = {}
        for c in list(direct):
            up = self.superclasses(c) - {c}
            if MEMORY in up and c != MEMORY and isinstance(c, NamedNode):
                self._supers[c] = {x for x in up if isinstance(x, NamedNode)}
        self._targeted = frozenset(o for s, po in spo.items() for o in po.get(_TARGET, ()))
        self._by_local: dict[str, list[NamedNode]] = defaultdict(list)
        for c in self._supers:
            self._by_local[local_name(c.value).casefold()].append(c)
        self._spec_cache: dict[NamedNode, dict[str, PropertySpec]] = {}

    # -- construction and cache -----------------------------------------------------------
    @classmethod
    def of(cls, digest: str, triples: Sequence[Triple]) -> TenantSchema:
        """The schema of a SCHEMA graph with this ``digest`` (see :func:`schema_digest`):
        one object per digest in the process, shared by every tenant with the same modules
        and settings."""
        with _CACHE_LOCK:
            hit = _CACHE.get(digest)
            if hit is None:
                hit = _CACHE[digest] = cls(digest, triples)
                while len(_CACHE) > _CACHE_SIZE:
                    _CACHE.pop(next(iter(_CACHE)))
            return hit

    @classmethod
    def read(cls, query: Callable[..., Any]) -> TenantSchema:
        """The schema of a tenant's SCHEMA graph read through ``query`` (a store's, a
        snapshot's or a transaction's ``query``)."""
        digest, triples = read_schema(query)
        return cls.of(digest, triples)

    # -- the subclass closure -----------------------------------------------------------------
    def superclasses(self, c: Any) -> frozenset[Any]:
        """``c`` and every class it is (transitively) an ``rdfs:subClassOf`` (reflexive)."""
        hit = self._closure.get(c)
        if hit is None:
            seen: set[Any] = set()
            stack = [c]
            while stack:
                x = stack.pop()
                if x in seen:
                    continue
                seen.add(x)
                stack.extend(self._direct.get(x, ()))
            hit = self._closure[c] = frozenset(seen)
        return hit

    def closure(self, types: Iterable[str]) -> frozenset[str]:
        """IRIs of ``types`` and all their superclasses."""
        return frozenset(x.value for t in types for x in self.superclasses(NamedNode(t)) if isinstance(x, NamedNode))

    # -- classes ------------------------------------------------------------------------
    @property
    def memory_classes(self) -> list[NamedNode]:
        """Every class strictly below rk:Memory (any depth), sorted by IRI."""
        return sorted(self._supers, key=lambda n: n.value)

    def is_memory_class(self, iri: NamedNode) -> bool:
        return iri == MEMORY or iri in self._supers

    def resolve_class(self, name: str) -> NamedNode:
        """A subclass given as local name or IRI.

        :raises InvalidInput: (field ``subclass``) when no class under rk:Memory matches.
        """
        if ":" in name:
            try:
                iri = NamedNode(name)
            except ValueError:
                raise InvalidInput(f"subclass: {name!r} is not a valid IRI", field="subclass") from None
            if iri in self._supers:
                return iri
            raise InvalidInput(f"subclass: {name!r} is not a class under rk:Memory", field="subclass")
        hits = self._by_local.get(name.casefold(), [])
        exact = [h for h in hits if local_name(h.value) == name]
        hits = exact or hits
        if len(hits) == 1:
            return hits[0]
        if not hits:
            known = ", ".join(sorted({local_name(c.value) for c in self._supers})) or "none"
            raise InvalidInput(f"subclass: unknown memory class {name!r} (known: {known})", field="subclass")
        raise InvalidInput(
            f"subclass: {name!r} is ambiguous ({', '.join(h.value for h in hits)}); give the full IRI",
            field="subclass",
        )

    def class_chain(self, iri: NamedNode) -> list[NamedNode]:
        """The class and its superclasses up to rk:Memory."""
        return [iri, *sorted(self._supers.get(iri, set()), key=lambda n: n.value)]

    # -- properties ---------------------------------------------------------------------
    def _rdf_list(self, head: Any) -> list[Any]:
        out = []
        nil = NamedNode(RDF + "nil")
        seen = set()
        while head != nil and head not in seen:
            seen.add(head)
            firsts = self._spo[head].get(NamedNode(RDF + "first"), [])
            if not firsts:
                break
            out.append(firsts[0])
            rests = self._spo[head].get(NamedNode(RDF + "rest"), [])
            if not rests:
                break
            head = rests[0]
        return out

    def properties(self, klass: NamedNode) -> dict[str, PropertySpec]:
        """Subclass properties (IRI -> spec) from the shapes targeting the class or any
        superclass, then from ``rdfs:domain`` declarations; the base properties every
        memory carries (:data:`reckon.vocab.BASE_PROPERTIES`) excluded. Several shapes on
        one path merge: the first datatype / class / ``sh:in`` / name (the class before its
        superclasses), the tightest cardinality."""
        hit = self._spec_cache.get(klass)
        if hit is not None:
            return hit
        acc: dict[str, dict[str, Any]] = {}
        chain = self.class_chain(klass)
        target = _TARGET
        shape_p = NamedNode(SH + "property")
        path = NamedNode(SH + "path")
        for c in chain:
            shapes = list(self._by_po.get((target, c), []))
            if NamedNode(SH + "NodeShape") in self._spo[c].get(A, []):
                shapes.append(c)
            for shape in shapes:
                for ps in self._spo[shape].get(shape_p, []):
                    paths = [x for x in self._spo[ps].get(path, []) if isinstance(x, NamedNode)]
                    if not paths or paths[0].value in BASE_PROPERTIES:
                        continue
                    f = acc.setdefault(paths[0].value, {})
                    for key, pred in (("name", "name"), ("datatype", "datatype"), ("range_class", "class")):
                        for v in self._spo[ps].get(NamedNode(SH + pred), []):
                            f.setdefault(key, v.value)
                    for lst in self._spo[ps].get(NamedNode(SH + "in"), []):
                        f.setdefault("in_terms", tuple(self._rdf_list(lst)))
                    for n in self._spo[ps].get(NamedNode(SH + "maxCount"), []):
                        f["max_count"] = min(f.get("max_count", int(n.value)), int(n.value))
                    for n in self._spo[ps].get(NamedNode(SH + "minCount"), []):
                        f["min_count"] = max(f.get("min_count", 0), int(n.value))
        domain = NamedNode(RDFS + "domain")
        rng = NamedNode(RDFS + "range")
        functional = NamedNode(OWL + "FunctionalProperty")
        for c in chain:
            if c == MEMORY:
                continue
            for p in self._by_po.get((domain, c), []):
                if not isinstance(p, NamedNode) or p.value in BASE_PROPERTIES:
                    continue
                f = acc.setdefault(p.value, {})
                for r in self._spo[p].get(rng, []):
                    if r.value.startswith(XSD) or r.value == RDFS + "Literal":
                        f.setdefault("datatype", r.value)
                    elif "range_class" not in f and "datatype" not in f:
                        f["range_class"] = r.value
                if "max_count" not in f and functional in self._spo[p].get(A, []):
                    f["max_count"] = 1
        specs = {p: _make_spec(p, f) for p, f in acc.items()}
        self._spec_cache[klass] = specs
        return specs

    def resolve_property(self, klass: NamedNode, name: str) -> PropertySpec:
        """:raises InvalidInput: (field ``properties.<name>``) when the class has no such property."""
        specs = self.properties(klass)
        if name in specs:
            return specs[name]
        hits = [s for s in specs.values() if name in (s.local, s.name)] or [
            s for s in specs.values() if name.casefold() in (s.local.casefold(), (s.name or "").casefold())
        ]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(sorted(s.local for s in specs.values())) or "none"
        raise InvalidInput(
            f"properties.{name}: {local_name(klass.value)} has no property {name!r} (known: {known})",
            field=f"properties.{name}",
        )

    def individuals(self, klass: str) -> list[NamedNode]:
        return [s for s in self._by_po.get((A, NamedNode(klass)), []) if isinstance(s, NamedNode)]

    def label_of(self, iri: NamedNode) -> str | None:
        labels = self._spo[iri].get(LABEL, []) if iri in self._spo else []
        return labels[0].value if labels else None

    # -- rendering as data -----------------------------------------------------------------
    def templates(self, annotation: str) -> dict[str, str]:
        """Local name of each property annotated with ``annotation`` (``"statusTemplate"``
        or ``"lineTemplate"``, in ``rk:``) -> its template text (``reckon.recall.render``)."""
        key = "templates:" + annotation
        with self._lock:
            hit = self._memo.get(key)
            if hit is None:
                pred = NamedNode(RK + annotation)
                hit = self._memo[key] = {
                    local_name(s.value): objs[0].value
                    for s, po in self._spo.items() if isinstance(s, NamedNode)
                    for objs in (po.get(pred, []),) if objs
                }
            return hit

    def fact(self, subject: NamedNode, predicate: str) -> Any:
        """The first object of ``subject predicate ?o`` in the schema (``predicate`` an IRI
        or ``prefix:local`` of :data:`reckon.vocab.PREFIXES`), or ``None``."""
        if ":" in predicate and not predicate.startswith(("http:", "https:", "urn:")):
            prefix, _, local = predicate.partition(":")
            predicate = PREFIXES.get(prefix, prefix + ":") + local
        objs = self._spo.get(subject, {}).get(NamedNode(predicate), []) if subject in self._spo else []
        return objs[0] if objs else None

    # -- SHACL: the compiled fast path, pySHACL, the catalogue -------------------------------
    @property
    def fast(self) -> FastShapes:
        """The compiled SHACL Core fast path over these shapes (trusted only to say
        "conforms"; see :mod:`reckon.schema._fastshacl`)."""
        with self._lock:
            if self._fast is None:
                self._fast = FastShapes(self.triples, supers=self.superclasses)
            return self._fast  # type: ignore[no-any-return]

    def shacl_schema(self, classes: frozenset[str] | None = None) -> Schema:
        """The pySHACL-ready :class:`~reckon.schema.Schema` of these triples, restricted to
        the shapes that target one of ``classes`` (``None``: every shape). pySHACL's cost
        grows with the number of shapes it walks (~3 ms each), so a node is validated
        against its own classes' shapes only; the shapes of other classes cannot apply to
        a node that is not an instance of their target class."""
        from reckon.schema.loader import schema_from_graph

        with self._lock:
            hit = self._shacl.get(classes)
            if hit is None:
                triples = list(self.triples) if classes is None else restrict(list(self.triples), classes)
                hit = self._shacl[classes] = schema_from_graph(triples)
            return hit

    def catalogue(self) -> Catalogue:
        """The memory subclass catalogue (the LLM tool schema's source)."""
        return self.shacl_schema(None).catalogue()

    def validate(self, focus: NamedNode, triples: Sequence[Triple]) -> None:
        """Validate ``focus`` in its small graph ``triples`` (its own triples plus the type
        triples of the nodes it links to): the fast path first; pySHACL for anything the
        fast path does not accept, so every reported violation is pySHACL's.

        Validation is a pure function of (shapes, ``focus``, the set of ``triples``): the
        last graphs that conformed are remembered, so the memory layer's check of a new
        node before its write and the store's write check of the same node at commit
        (:meth:`check_delta`, which builds the very same graph with :meth:`node_graph`)
        validate it once.

        :raises ShapeViolation: naming focus node, field / path and constraint of every
            violation (https://www.w3.org/TR/shacl/#validation-report).
        """
        triples = list(triples)
        key = (focus, frozenset(triples))
        with self._lock:
            if key in self._conforming:  # this exact graph conformed already (a pure function of it)
                self._conforming.move_to_end(key)
                return
        if self.fast.conforms(focus, triples) is not True:
            from reckon.schema.validate import check

            types = [t.object.value for t in triples if t.subject == focus and t.predicate == A
                     and isinstance(t.object, NamedNode)]
            check(triples, [focus], schema=self.shacl_schema(self.closure(types)))
        with self._lock:
            self._conforming[key] = None
            if len(self._conforming) > _CONFORMING_SIZE:
                self._conforming.popitem(last=False)

    def constrains(self, types: Iterable[Any]) -> bool:
        """Whether some shape targets one of ``types`` or their superclasses."""
        return any(x in self._targeted for t in types for x in self.superclasses(t))

    def check_delta(self, added: Sequence[Quad], removed: Sequence[Quad], view: Any) -> None:
        """Validate every node whose asserted triples (memories, business data,
        transcripts: every asserted graph but the schema's) a write changes, in its state
        after the write: the store's write check (``TenantStore.validator``), so every
        asserted write -- memory layer, business data, loaders, imports of one node --
        meets the shapes.

        :param added: the write's net added quads; :param removed: its net removed quads.
        :param view: the committed state before the write (``StoreView``).
        :raises ShapeViolation: for the first node that does not conform; nothing is written.
        """
        graphs = tuple(g for g in ASSERTED if g != SCHEMA)
        gone = {q for q in removed if q.graph_name in graphs}
        new: dict[Any, list[Quad]] = defaultdict(list)
        focus: set[Any] = set()
        for q in added:
            if q.graph_name in graphs:
                new[q.subject].append(q)
                focus.add(q.subject)
        focus |= {q.subject for q in gone}
        for f in sorted((x for x in focus if isinstance(x, NamedNode)), key=str):
            triples = self.node_graph(f, view, new, gone)
            if triples is not None:
                self.validate(f, triples)

    def node_graph(self, focus: NamedNode, view: Any, new: Mapping[Any, Sequence[Quad]],
                   gone: AbstractSet[Quad] = frozenset()) -> list[Triple] | None:
        """The small graph ``focus`` is validated in after a write: its asserted triples
        (every asserted graph but the schema's) in ``view`` less ``gone`` plus its quads
        in ``new``, and the type triples (every asserted graph) of the nodes it links to;
        ``None`` when no shape targets its types.

        :param view: the committed state before the write (``StoreView``).
        :param new: subject -> the write's added quads (non-schema asserted graphs).
        :param gone: the write's removed quads.
        """
        after = [q for q in _read(view, focus, None, _NON_SCHEMA) if q not in gone]
        after += new.get(focus, ())
        types = [q.object for q in after if q.predicate == A]
        if not types or not self.constrains(types):
            return None
        triples = list(dict.fromkeys(Triple(q.subject, q.predicate, q.object) for q in after))
        for o in {t.object for t in triples if isinstance(t.object, NamedNode) and t.object != focus}:
            linked = [q for q in _read(view, o, A, _ASSERTED) if q not in gone]
            linked += [q for q in new.get(o, ()) if q.predicate == A]
            triples.extend(Triple(o, A, q.object) for q in linked)
        return list(dict.fromkeys(triples))

    # -- value conversion ---------------------------------------------------------------
    def to_terms(self, spec: PropertySpec, value: Any) -> list[Any]:
        """Python value(s) -> RDF term(s) following the spec's datatype / class / sh:in.

        :raises InvalidInput: (field ``properties.<local>``) when the value does not fit.
        """
        values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
        if spec.max_count is not None and len(values) > spec.max_count:
            raise InvalidInput(
                f"properties.{spec.local}: at most {spec.max_count} value(s) allowed, got {len(values)}",
                field=f"properties.{spec.local}",
            )
        return [self._to_term(spec, v) for v in values]

    def _to_term(self, spec: PropertySpec, v: Any) -> Any:  # noqa: C901 - one branch per datatype
        fld = f"properties.{spec.local}"

        def bad(why: str) -> InvalidInput:
            return InvalidInput(f"{fld}: {v!r} {why}", field=fld)

        if spec.takes_iri:
            if not isinstance(v, str):
                raise bad("must be a string naming an individual or an IRI")
            options: list[NamedNode] = [x for x in spec.in_values if isinstance(x, NamedNode)]
            if not options and spec.klass:
                options = self.individuals(spec.klass)
            want = _name_key(v)
            for o in options:
                if v == o.value or v == local_name(o.value) or want in (
                    _name_key(local_name(o.value)),
                    _name_key(self.label_of(o) or ""),
                ):
                    return o
            if options and not spec.klass:
                raise bad(f"is not one of {sorted(local_name(o.value) for o in options)}")
            try:
                iri = NamedNode(v)
            except ValueError:
                if options:
                    raise bad(f"is not one of {sorted(local_name(o.value) for o in options)}") from None
                raise bad("is not a valid IRI") from None
            if ":" not in v:
                raise bad("is not an absolute IRI")
            return iri
        dt = spec.datatype or (XSD + "string")
        if dt == XSD + "string":
            if not isinstance(v, str):
                raise bad("must be a string")
            return Literal(v)
        if dt == XSD + "decimal":
            if isinstance(v, bool) or not isinstance(v, (int, float, Decimal, str)):
                raise bad("must be a number")
            try:
                return decimal_literal(v)
            except (InvalidOperation, ValueError) as e:
                raise bad(str(e) or "is not a decimal number") from None
        if dt in (XSD + "integer", XSD + "int", XSD + "long", XSD + "nonNegativeInteger", XSD + "positiveInteger"):
            if isinstance(v, bool):
                raise bad("must be an integer")
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if isinstance(v, Decimal) and v == v.to_integral_value():
                v = int(v)
            if isinstance(v, str):
                try:
                    v = int(v.strip())
                except ValueError:
                    raise bad("is not an integer") from None
            if not isinstance(v, int):
                raise bad("must be an integer")
            # the store holds every integer subtype as xsd:integer (reckon.store.terms)
            return canonical_term(Literal(str(v), datatype=NamedNode(dt)))
        if dt == XSD + "boolean":
            if not isinstance(v, bool):
                raise bad("must be true or false")
            return Literal("true" if v else "false", datatype=_X_BOOLEAN)
        if dt == XSD + "dateTime":
            if isinstance(v, str):
                try:
                    v = parse_datetime_text(v)
                except ValueError as exc:
                    raise bad("has more than 6 fractional-second digits (date-times are kept to the microsecond)"
                              if "fractional" in str(exc) else "is not an ISO 8601 date-time") from None
            if not isinstance(v, datetime):
                raise bad("must be a date-time")
            if v.tzinfo is None or v.utcoffset() is None:
                raise bad("has no time zone (give an offset, e.g. 2026-03-01T09:00:00+01:00 or Z)")
            return datetime_literal(v, fld)
        if dt == XSD + "date":
            if isinstance(v, datetime):
                v = v.date()
            if isinstance(v, str):
                try:
                    v = date.fromisoformat(v)
                except ValueError:
                    raise bad("is not an ISO 8601 date") from None
            if not isinstance(v, date):
                raise bad("must be a date")
            return Literal(v.isoformat(), datatype=_X_DATE)
        if dt in (XSD + "double", XSD + "float"):
            if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
                raise bad("must be a number")
            return canonical_term(Literal(repr(float(v)), datatype=NamedNode(dt)))
        # any other datatype: the lexical form as given, as the store will hold it
        return canonical_term(Literal(str(v), datatype=NamedNode(dt)))

    def from_term(self, term: Any) -> Any:
        """Stored term -> the value a caller sees: enumerated individuals by local name,
        other IRIs as strings, literals as Python values."""
        if isinstance(term, NamedNode) and term in self._spo and self._spo[term].get(A):
            return local_name(term.value)
        return python_value(term)


# ---------------------------------------------------------------------------------------
# property specs
# ---------------------------------------------------------------------------------------

def _make_spec(path: str, f: dict[str, Any]) -> PropertySpec:
    in_terms = tuple(f.get("in_terms", ()))
    return PropertySpec(
        path=path,
        curie=curie(path),
        name=f.get("name") or local_name(path),
        datatype=f.get("datatype"),
        range_class=f.get("range_class"),
        min_count=f.get("min_count", 0),
        max_count=f.get("max_count"),
        allowed=tuple(t.value for t in in_terms),
        closed=bool(in_terms),
        in_terms=in_terms,
    )


def curie(iri: str) -> str:
    """``prefix:local`` for an IRI in a namespace of :data:`reckon.vocab.PREFIXES`, else the IRI."""
    for prefix, ns in PREFIXES.items():
        if iri.startswith(ns) and len(iri) > len(ns):
            return f"{prefix}:{iri[len(ns):]}"
    return iri


def _name_key(text: str) -> str:
    """An individual's name as a lookup key: case, spaces, ``_`` and ``-`` ignored
    (``"conversion_rate"`` = ``"ConversionRate"`` = label ``"conversion rate"``), the
    rule ``Tenant.set_kpi`` applies to the same names (``reckon.business.writers.Vocabulary``)."""
    return re.sub(r"[^0-9a-z]", "", text.casefold())

