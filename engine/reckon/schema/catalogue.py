"""The memory subclass catalogue: every class under ``rk:Memory`` and its shape-declared
properties (seed 003 §3, §5: "the set of available subclasses is described to the model").

Built from the ontology (labels, comments, hierarchy, individuals) and the SHACL shapes
(https://www.w3.org/TR/shacl/#core-components): for each class, the property shapes of
the node shapes that target it with ``sh:targetClass`` give each property's path,
datatype or class, cardinality (``sh:minCount`` / ``sh:maxCount``), value set (``sh:in``,
or the individuals of the ``sh:class`` when the ontology lists them), numeric bounds,
pattern, length limits, name, description and message. This feeds the LLM tool schema.

Example::

    >>> from reckon.schema import load_schema
    >>> cat = load_schema().catalogue()
    >>> budget = cat.get("mk:BudgetConstraintMemory")
    >>> [p.name for p in budget.properties]
    ['platform', 'amount', 'currency', 'period']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from reckon._errors import InvalidInput

if TYPE_CHECKING:  # pragma: no cover
    import rdflib

    from reckon.schema.loader import Schema

# rdflib is imported by the functions that read a schema graph, not here: this module's
# classes are on every memory write's path (``reckon.schema.tenant``), which reads no
# rdflib graph (``reckon remember`` / ``search`` / ``bundle`` start without rdflib).

__all__ = ["Catalogue", "MemoryClass", "PropertySpec", "build_catalogue"]

Number = int | Decimal | float


@dataclass(frozen=True)
class PropertySpec:
    """One property of a memory class, as its SHACL property shapes constrain it.

    :ivar path: the property IRI (``sh:path``; only predicate paths are catalogued).
    :ivar curie: ``prefix:local`` of the path.
    :ivar name: field name (``sh:name``, else the path's local name).
    :ivar description: ``sh:description``, else the property's ``rdfs:comment``.
    :ivar label: the property's ``rdfs:label`` in the ontology.
    :ivar datatype: IRI of ``sh:datatype`` (literal values), or ``None``.
    :ivar range_class: IRI of ``sh:class`` (node values), or ``None``.
    :ivar node_kind: local name of ``sh:nodeKind`` (``"IRI"``, ``"Literal"`` ...), or ``None``.
    :ivar min_count: ``sh:minCount`` (0 when absent); ``required`` is ``min_count >= 1``.
    :ivar max_count: ``sh:maxCount`` or ``None`` (unbounded).
    :ivar allowed: allowed values (IRIs or lexical forms): ``sh:in``, else the individuals
        of ``range_class`` listed in the ontology; empty when open.
    :ivar allowed_labels: ``rdfs:label`` of each allowed IRI (e.g. ``mk:meta`` -> ``"meta"``).
    :ivar closed: ``True`` when ``allowed`` comes from ``sh:in`` (no other value conforms);
        ``False`` when it lists the ontology's current individuals of an open class.
    :ivar min_inclusive, max_inclusive, min_exclusive, max_exclusive: numeric bounds.
    :ivar pattern: ``sh:pattern`` (XPath regex), or ``None``.
    :ivar min_length, max_length: string length bounds (characters).
    :ivar message: ``sh:message`` shown when a value is refused.
    :ivar order: ``sh:order``, used to sort properties.
    """

    path: str
    curie: str
    name: str
    description: str | None = None
    label: str | None = None
    datatype: str | None = None
    range_class: str | None = None
    node_kind: str | None = None
    min_count: int = 0
    max_count: int | None = None
    allowed: tuple[str, ...] = ()
    allowed_labels: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    closed: bool = False
    min_inclusive: Number | None = None
    max_inclusive: Number | None = None
    min_exclusive: Number | None = None
    max_exclusive: Number | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    message: str | None = None
    order: float | None = None
    in_terms: tuple[Any, ...] = field(default=(), compare=False, hash=False, repr=False)
    """The ``sh:in`` values as RDF terms (``pyoxigraph`` ``NamedNode`` / ``Literal``)."""

    # -- the memory layer's reading of the same spec -------------------------------------
    @property
    def iri(self) -> str:
        """The property IRI (= :attr:`path`)."""
        return self.path

    @property
    def local(self) -> str:
        """The local name of the property IRI (``"amount"``)."""
        return _local(self.path)

    @property
    def klass(self) -> str | None:
        """The class of IRI values (= :attr:`range_class`)."""
        return self.range_class

    @property
    def in_values(self) -> list[Any]:
        """The ``sh:in`` values as RDF terms."""
        return list(self.in_terms)

    @property
    def takes_iri(self) -> bool:
        """Whether values are IRIs (a class range, or an ``sh:in`` of IRIs) rather than literals."""
        from pyoxigraph import NamedNode

        return self.datatype is None and (self.range_class is not None
                                          or any(isinstance(v, NamedNode) for v in self.in_terms))

    @property
    def identifying(self) -> bool:
        """Single-valued IRI properties (platform, period, metric, candidate) identify what a
        subclass memory is about -- see :mod:`reckon.memory.conflicts`."""
        return self.takes_iri and self.max_count == 1

    @property
    def required(self) -> bool:
        """Whether at least one value is required."""
        return self.min_count >= 1

    @property
    def multiple(self) -> bool:
        """Whether more than one value is allowed."""
        return self.max_count is None or self.max_count > 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (Decimals become floats; ``None`` fields are dropped)."""
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            if k == "in_terms" or v is None or v == () or v == {}:
                continue
            if isinstance(v, Decimal):
                v = float(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[k] = v
        out["required"] = self.required
        out["multiple"] = self.multiple
        return out


@dataclass(frozen=True)
class MemoryClass:
    """A memory class: ``rk:Memory`` itself or any class under it.

    :ivar iri: the class IRI.
    :ivar curie: ``prefix:local``.
    :ivar name: the IRI's local name (``"BudgetConstraintMemory"``).
    :ivar label: ``rdfs:label``; :ivar comment: ``rdfs:comment``.
    :ivar parents: direct superclasses (IRIs) that are memory classes.
    :ivar ancestors: every memory class above it, nearest first, ending with ``rk:Memory``.
    :ivar depth: number of ``rdfs:subClassOf`` steps to ``rk:Memory`` (0 for ``rk:Memory``).
    :ivar properties: its OWN properties (from shapes targeting this class), by ``sh:order``.
    :ivar inherited: properties of its ancestors (nearest first), minus those it redefines.
    :ivar conditions: node-level constraints of its shapes, as ``{"path", "message"}``
        (e.g. "owner is required for scope user").
    """

    iri: str
    curie: str
    name: str
    label: str | None
    comment: str | None
    parents: tuple[str, ...]
    ancestors: tuple[str, ...]
    depth: int
    properties: tuple[PropertySpec, ...]
    inherited: tuple[PropertySpec, ...] = ()
    conditions: tuple[dict[str, str | None], ...] = ()
    all_properties: tuple[PropertySpec, ...] = ()
    """Inherited properties from ``rk:Memory`` down, then its own (each path once, the
    most specific class's definition winning)."""

    def property(self, key: str) -> PropertySpec:
        """Look up a property (own or inherited) by name, CURIE or IRI.

        :raises InvalidInput: when the class has no such property.
        """
        for p in self.all_properties:
            if key in (p.name, p.curie, p.path):
                return p
        raise InvalidInput(f"{self.curie} has no property {key!r}", field=key)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict of the class and its own and inherited properties."""
        return {
            "iri": self.iri,
            "curie": self.curie,
            "name": self.name,
            "label": self.label,
            "comment": self.comment,
            "parents": list(self.parents),
            "ancestors": list(self.ancestors),
            "depth": self.depth,
            "properties": [p.to_dict() for p in self.properties],
            "inherited": [p.to_dict() for p in self.inherited],
            "conditions": [dict(c) for c in self.conditions],
        }


@dataclass(frozen=True)
class Catalogue:
    """All memory classes of a schema.

    :ivar base: ``rk:Memory`` with the properties every memory carries.
    :ivar classes: every class under ``rk:Memory``, sorted by depth then CURIE.
    """

    base: MemoryClass
    classes: tuple[MemoryClass, ...]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.classes)

    def __len__(self) -> int:
        return len(self.classes)

    def names(self) -> list[str]:
        """CURIEs of the memory subclasses."""
        return [c.curie for c in self.classes]

    def get(self, key: str) -> MemoryClass:
        """A memory class by CURIE (``"mk:BudgetConstraintMemory"``), IRI or local name
        (``"BudgetConstraintMemory"``); ``rk:Memory`` / ``"Memory"`` gives :attr:`base`.

        :raises InvalidInput: (field ``"subclass"``) when no memory class matches, or a
            local name is ambiguous across modules.
        """
        for c in (self.base, *self.classes):
            if key in (c.iri, c.curie):
                return c
        matches = [c for c in (self.base, *self.classes) if c.name == key]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InvalidInput(
                f"memory class name {key!r} is ambiguous: {', '.join(c.curie for c in matches)}; use a CURIE",
                field="subclass",
            )
        raise InvalidInput(
            f"unknown memory class {key!r}; known: {', '.join(self.names()) or '(none)'}",
            field="subclass",
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: ``{"base": {...}, "classes": [{...}, ...]}``."""
        return {"base": self.base.to_dict(), "classes": [c.to_dict() for c in self.classes]}


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


def build_catalogue(schema: Schema) -> Catalogue:
    """Build the catalogue of ``schema`` (use :meth:`Schema.catalogue`, which caches it)."""
    import rdflib
    from rdflib.namespace import RDFS

    from reckon.schema.loader import RK

    onto = schema.ontology
    memory = set(schema.memory_classes())
    own: dict[rdflib.URIRef, tuple[PropertySpec, ...]] = {}
    conditions: dict[rdflib.URIRef, tuple[dict[str, str | None], ...]] = {}
    for cls in (RK.Memory, *sorted(memory)):
        own[cls], conditions[cls] = _class_properties(schema, cls)

    def ancestors(cls: rdflib.URIRef) -> list[rdflib.URIRef]:
        ups = [c for c in schema.superclasses(cls) if c in memory or c == RK.Memory]
        # nearest first: more superclasses of its own = deeper = nearer
        return sorted(ups, key=lambda c: (-len(schema.superclasses(c)), str(c)))

    def make(cls: rdflib.URIRef) -> MemoryClass:
        ups = ancestors(cls) if cls != RK.Memory else []
        seen = {p.path for p in own[cls]}
        inherited: list[PropertySpec] = []
        for up in ups:
            for p in own.get(up, ()):
                if p.path not in seen:
                    seen.add(p.path)
                    inherited.append(p)
        top_down: list[PropertySpec] = []
        for up in reversed(ups):
            top_down.extend(p for p in own.get(up, ()) if any(p is q for q in inherited))
        top_down.extend(own[cls])
        conds = list(conditions[cls])
        for up in ups:
            conds.extend(conditions.get(up, ()))
        parents = sorted(
            str(o)
            for o in onto.objects(cls, RDFS.subClassOf)
            if isinstance(o, rdflib.URIRef) and (o in memory or o == RK.Memory)
        )
        return MemoryClass(
            iri=str(cls),
            curie=schema.qname(cls),
            name=_local(cls),
            label=_text(onto, cls, RDFS.label),
            comment=_text(onto, cls, RDFS.comment),
            parents=tuple(parents),
            ancestors=tuple(str(u) for u in ups),
            depth=len(ups),
            properties=own[cls],
            inherited=tuple(inherited),
            conditions=tuple(conds),
            all_properties=tuple(top_down),
        )

    classes = sorted((make(c) for c in memory), key=lambda c: (c.depth, c.curie))
    return Catalogue(base=make(RK.Memory), classes=tuple(classes))


def _class_properties(
    schema: Schema, cls: rdflib.URIRef
) -> tuple[tuple[PropertySpec, ...], tuple[dict[str, str | None], ...]]:
    import rdflib
    from rdflib.namespace import RDF, SH

    from reckon.schema.loader import RK

    shapes = schema.shapes
    node_shapes = set(shapes.subjects(SH.targetClass, cls))
    if (cls, RDF.type, SH.NodeShape) in shapes:  # implicit class target
        node_shapes.add(cls)
    merged: dict[rdflib.term.Node, dict[str, Any]] = {}
    conds: list[dict[str, str | None]] = []
    for ns in sorted(node_shapes, key=str):
        for ps in shapes.objects(ns, SH.property):
            path = shapes.value(ps, SH.path)
            if not isinstance(path, rdflib.URIRef):
                continue  # complex paths are not catalogued
            _merge(merged.setdefault(path, {}), _read_property_shape(schema, ps))
        report = shapes.value(ns, RK.reportPath)
        if report is not None:
            msg = shapes.value(ns, SH.message)
            conds.append({"path": str(report), "message": str(msg) if msg is not None else None})
    specs = [_spec(schema, rdflib.URIRef(str(path)), fields) for path, fields in merged.items()]
    specs.sort(key=lambda p: (p.order if p.order is not None else float("inf"), p.name))
    return tuple(specs), tuple(conds)


def _read_property_shape(schema: Schema, ps: rdflib.term.Node) -> dict[str, Any]:
    import rdflib
    from rdflib.collection import Collection
    from rdflib.namespace import SH

    g = schema.shapes
    out: dict[str, Any] = {}

    def lit(p: rdflib.URIRef) -> Any:
        v = g.value(ps, p)
        return v.toPython() if isinstance(v, rdflib.Literal) else v

    for key, pred in (
        ("name", SH.name),
        ("description", SH.description),
        ("message", SH.message),
        ("pattern", SH.pattern),
    ):
        v = g.value(ps, pred)
        if v is not None:
            out[key] = str(v)
    for key, pred in (
        ("min_count", SH.minCount),
        ("max_count", SH.maxCount),
        ("min_length", SH.minLength),
        ("max_length", SH.maxLength),
    ):
        v = lit(pred)
        if v is not None:
            out[key] = int(v)
    for key, pred in (
        ("min_inclusive", SH.minInclusive),
        ("max_inclusive", SH.maxInclusive),
        ("min_exclusive", SH.minExclusive),
        ("max_exclusive", SH.maxExclusive),
    ):
        v = lit(pred)
        if v is not None:
            out[key] = v
    order = lit(SH.order)
    if order is not None:
        out["order"] = float(order)
    for key, pred in (("datatype", SH.datatype), ("range_class", SH["class"])):
        v = g.value(ps, pred)
        if v is not None:
            out[key] = str(v)
    nk = g.value(ps, SH.nodeKind)
    if nk is not None:
        out["node_kind"] = str(nk).rsplit("#", 1)[-1]
    in_list = g.value(ps, SH["in"])
    if in_list is not None:
        from reckon.schema._convert import to_oxigraph

        values = list(Collection(g, in_list))
        out["allowed"] = tuple(str(v) for v in values)
        out["in_terms"] = tuple(to_oxigraph(v) for v in values)
        out["closed"] = True
    return out


def _merge(into: dict[str, Any], new: dict[str, Any]) -> None:
    """Merge two property shapes on one path: the tighter cardinality wins, else first value."""
    for k, v in new.items():
        if k not in into:
            into[k] = v
        elif k == "min_count":
            into[k] = max(into[k], v)
        elif k == "max_count":
            into[k] = min(into[k], v)


def _spec(schema: Schema, path: rdflib.URIRef, f: dict[str, Any]) -> PropertySpec:
    import rdflib
    from rdflib.namespace import RDF, RDFS

    onto = schema.ontology
    allowed: tuple[str, ...] = f.get("allowed", ())
    closed = bool(f.get("closed", False))
    if not allowed and f.get("range_class"):
        members = sorted(
            str(s) for s in schema.hierarchy.subjects(RDF.type, rdflib.URIRef(f["range_class"]))
            if isinstance(s, rdflib.URIRef)
        )
        allowed = tuple(members)
    labels = {}
    for a in allowed:
        lab = _text(onto, rdflib.URIRef(a), RDFS.label) if a.startswith(("http", "urn:")) else None
        if lab is not None:
            labels[a] = lab
    return PropertySpec(
        path=str(path),
        curie=schema.qname(path),
        name=f.get("name") or _local(path),
        description=f.get("description") or _text(onto, path, RDFS.comment),
        label=_text(onto, path, RDFS.label),
        datatype=f.get("datatype"),
        range_class=f.get("range_class"),
        node_kind=f.get("node_kind"),
        min_count=f.get("min_count", 0),
        max_count=f.get("max_count"),
        allowed=allowed,
        allowed_labels=labels,
        closed=closed,
        min_inclusive=f.get("min_inclusive"),
        max_inclusive=f.get("max_inclusive"),
        min_exclusive=f.get("min_exclusive"),
        max_exclusive=f.get("max_exclusive"),
        pattern=f.get("pattern"),
        min_length=f.get("min_length"),
        max_length=f.get("max_length"),
        message=f.get("message"),
        order=f.get("order"),
        in_terms=f.get("in_terms", ()),
    )


def _text(g: rdflib.Graph, s: rdflib.term.Node, p: rdflib.URIRef) -> str | None:
    """A plain or English literal value, else any value, else ``None``."""
    import rdflib

    best = None
    for o in g.objects(s, p):
        if isinstance(o, rdflib.Literal):
            if o.language in (None, "en"):
                return str(o)
            best = best or str(o)
    return best


def _local(iri: rdflib.term.Node | str) -> str:
    s = str(iri)
    for sep in ("#", "/", ":"):
        if sep in s:
            s = s.rsplit(sep, 1)[-1]
    return s
