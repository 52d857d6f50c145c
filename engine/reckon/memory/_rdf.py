"""Memory model <-> RDF terms (the triples ``ontology/core.ttl`` and ``shapes/core.ttl`` describe).

Nothing here builds SPARQL text from user values: data becomes pyoxigraph
``NamedNode`` / ``Literal`` terms whose constructors validate, and reads bind values
through ``substitutions``.

Person and team ids are slugs chosen by callers; they become IRIs
``urn:reckon:<tenant>:person:<pct-encoded id>`` where every character outside
``A-Z a-z 0-9 - . _ ~`` is percent-encoded (RFC 3986 unreserved set), so any id —
quotes, braces, spaces, NUL — maps to a valid IRI and back unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable
from urllib.parse import quote, unquote

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput
from reckon.store.terms import canonical_term, datetime_literal
from reckon.store.terms import decimal_literal as _decimal_literal

from reckon.vocab import (  # noqa: F401  (re-exported for the memory layer)
    BUSINESS,
    INFERRED,
    MEMORIES,
    MK,
    OWL,
    RDF,
    RDFS,
    RK,
    SCHEMA,
    SH,
    XSD,
    local_name,
    memory_iri,
    memory_prefix,
    person_iri,
    python_value,
    revision_iri,
    rk,
    slug_of,
    team_iri,
)
from reckon.vocab import IRI_KIND, IRI_SCOPE, IRI_SOURCE, KIND_IRI, SCOPE_IRI, SOURCE_IRI
from reckon.vocab import A, ACTIVE, LABEL, MEMORY, PERSON, SUBCLASS, TEAM

P_CONTENT, P_KIND, P_SCOPE, P_OWNER, P_TEAM = rk("content"), rk("kind"), rk("scope"), rk("owner"), rk("team")
P_IMPORTANCE, P_SOURCE, P_CONFIDENCE = rk("importance"), rk("source"), rk("confidence")
P_CREATED, P_UPDATED, P_AUTHOR, P_EXPIRES = rk("createdAt"), rk("updatedAt"), rk("author"), rk("expiresAt")
P_SUPERSEDED_BY, P_SUPERSEDES = rk("supersededBy"), rk("supersedes")
DELETED, REVISION = rk("DeletedMemory"), rk("Revision")
P_DELETED_AT, P_DELETED_BY = rk("deletedAt"), rk("deletedBy")
P_REVISION_OF, P_REVISED_AT, P_REVISED_BY = rk("revisionOf"), rk("revisedAt"), rk("revisedBy")
P_DERIVED_FROM = rk("derivedFrom")  # ontology/agent.ttl: memory -> the turns it was extracted from
X_STRING, X_INTEGER, X_DECIMAL = NamedNode(XSD + "string"), NamedNode(XSD + "integer"), NamedNode(XSD + "decimal")
X_DATETIME, X_DATE, X_BOOLEAN = NamedNode(XSD + "dateTime"), NamedNode(XSD + "date"), NamedNode(XSD + "boolean")
X_DOUBLE, X_FLOAT = NamedNode(XSD + "double"), NamedNode(XSD + "float")


#: Base properties of every memory: handled by the model, never by a subclass spec.
BASE_PROPERTIES = frozenset(
    p.value for p in (A, LABEL, P_CONTENT, P_KIND, P_SCOPE, P_OWNER, P_TEAM, P_IMPORTANCE, P_SOURCE,
                      P_CONFIDENCE, P_CREATED, P_UPDATED, P_AUTHOR, P_EXPIRES, P_SUPERSEDED_BY, P_SUPERSEDES,
                      P_DERIVED_FROM)
)

# ---------------------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------------------

def dt_literal(value: datetime, field: str = "datetime") -> Literal:
    """``xsd:dateTime`` in UTC with ``Z``, in the store's canonical form (no trailing
    zeros in the fraction: ``…34.82904Z``); see :func:`reckon.store.terms.datetime_literal`.

    :raises InvalidInput: for a naive ``datetime`` (no time zone is ever guessed).
    """
    return datetime_literal(value, field)


def decimal_literal(value: Any) -> Literal:
    """Canonical ``xsd:decimal`` (no exponent, no trailing zeros: ``"40000"``, ``"2.5"``);
    see :func:`reckon.store.terms.decimal_literal`.

    :raises ValueError: for a value the store cannot hold exactly (more than 18
        fractional digits, beyond ~1.7e20, not finite, not a number).
    """
    return _decimal_literal(value)


# ---------------------------------------------------------------------------------------
# The schema as seen by one tenant (its SCHEMA graph)
# ---------------------------------------------------------------------------------------

@dataclass
class PropertySpec:
    """What the shapes / ontology say about one subclass property."""

    iri: str
    local: str
    datatype: str | None = None
    klass: str | None = None
    in_values: list[Any] = field(default_factory=list)
    max_count: int | None = None
    min_count: int = 0
    name: str | None = None  # sh:name: the field name a tool call uses (e.g. "avoid_terms")

    @property
    def takes_iri(self) -> bool:
        return self.datatype is None and (self.klass is not None or any(isinstance(v, NamedNode) for v in self.in_values))

    @property
    def identifying(self) -> bool:
        """Single-valued IRI properties (platform, period, metric, candidate) identify what a
        subclass memory is about — see :mod:`reckon.memory.conflicts`."""
        return self.takes_iri and self.max_count == 1


class SchemaView:
    """Memory classes, their property specs and enumerated individuals, read from the
    schema triples (ontology + shapes) of one tenant.

    :param triples: the SCHEMA graph's triples.
    """

    def __init__(self, triples: Iterable[Triple]) -> None:
        spo: dict[Any, dict[Any, list[Any]]] = defaultdict(lambda: defaultdict(list))
        by_po: dict[tuple[Any, Any], list[Any]] = defaultdict(list)
        for t in triples:
            spo[t.subject][t.predicate].append(t.object)
            by_po[(t.predicate, t.object)].append(t.subject)
        self._spo = spo
        self._by_po = by_po
        # subclass closure below rk:Memory
        sub: dict[Any, set[Any]] = defaultdict(set)  # class -> direct superclasses
        for (p, o), subjects in by_po.items():
            if p == SUBCLASS:
                for s in subjects:
                    if isinstance(s, NamedNode):
                        sub[s].add(o)
        self._supers: dict[NamedNode, set[NamedNode]] = {}
        for c in list(sub):
            seen: set[Any] = set()
            stack = list(sub[c])
            while stack:
                x = stack.pop()
                if x in seen:
                    continue
                seen.add(x)
                stack.extend(sub.get(x, ()))
            if MEMORY in seen and c != MEMORY:
                self._supers[c] = {x for x in seen if isinstance(x, NamedNode)}
        self._by_local: dict[str, list[NamedNode]] = defaultdict(list)
        for c in self._supers:
            self._by_local[local_name(c.value).casefold()].append(c)
        self._spec_cache: dict[NamedNode, dict[str, PropertySpec]] = {}

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
        superclass, then from ``rdfs:domain`` declarations; base properties excluded."""
        if klass in self._spec_cache:
            return self._spec_cache[klass]
        specs: dict[str, PropertySpec] = {}
        chain = self.class_chain(klass)
        target = NamedNode(SH + "targetClass")
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
                    p = paths[0].value
                    spec = specs.setdefault(p, PropertySpec(iri=p, local=local_name(p)))
                    for nm in self._spo[ps].get(NamedNode(SH + "name"), []):
                        spec.name = spec.name or nm.value
                    for d in self._spo[ps].get(NamedNode(SH + "datatype"), []):
                        spec.datatype = spec.datatype or d.value
                    for k in self._spo[ps].get(NamedNode(SH + "class"), []):
                        spec.klass = spec.klass or k.value
                    for lst in self._spo[ps].get(NamedNode(SH + "in"), []):
                        spec.in_values = spec.in_values or self._rdf_list(lst)
                    for n in self._spo[ps].get(NamedNode(SH + "maxCount"), []):
                        v = int(n.value)
                        spec.max_count = v if spec.max_count is None else min(spec.max_count, v)
                    for n in self._spo[ps].get(NamedNode(SH + "minCount"), []):
                        spec.min_count = max(spec.min_count, int(n.value))
        domain = NamedNode(RDFS + "domain")
        rng = NamedNode(RDFS + "range")
        functional = NamedNode(OWL + "FunctionalProperty")
        for c in chain:
            if c == MEMORY:
                continue
            for p in self._by_po.get((domain, c), []):
                if not isinstance(p, NamedNode) or p.value in BASE_PROPERTIES:
                    continue
                spec = specs.setdefault(p.value, PropertySpec(iri=p.value, local=local_name(p.value)))
                for r in self._spo[p].get(rng, []):
                    if r.value.startswith(XSD) or r.value == RDFS + "Literal":
                        spec.datatype = spec.datatype or r.value
                    elif spec.klass is None and spec.datatype is None:
                        spec.klass = r.value
                if spec.max_count is None and functional in self._spo[p].get(A, []):
                    spec.max_count = 1
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

    def _to_term(self, spec: PropertySpec, v: Any) -> Any:
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
            return Literal("true" if v else "false", datatype=X_BOOLEAN)
        if dt == XSD + "dateTime":
            if isinstance(v, str):
                try:
                    v = datetime.fromisoformat(v.replace("Z", "+00:00"))
                except ValueError:
                    raise bad("is not an ISO 8601 date-time") from None
            if not isinstance(v, datetime):
                raise bad("must be a date-time")
            if v.tzinfo is None or v.utcoffset() is None:
                raise bad("has no time zone (give an offset, e.g. 2026-03-01T09:00:00+01:00 or Z)")
            return dt_literal(v, fld)
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
            return Literal(v.isoformat(), datatype=X_DATE)
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


def _name_key(text: str) -> str:
    """An individual's name as a lookup key: case, spaces, ``_`` and ``-`` ignored
    (``"conversion_rate"`` = ``"ConversionRate"`` = label ``"conversion rate"``), the
    rule ``Tenant.set_kpi`` applies to the same names (``reckon.api._business.Vocabulary``)."""
    import re

    return re.sub(r"[^0-9a-z]", "", text.casefold())


def quads(triples: Iterable[tuple[Any, Any, Any]], graph: NamedNode = MEMORIES) -> list[Quad]:
    return [Quad(s, p, o, graph) for s, p, o in triples]
