"""SHACL validation of changed nodes with pySHACL on a small in-memory rdflib graph.

https://www.w3.org/TR/shacl/#validation-report

DESIGN.md (measured): pySHACL validating one node against a small rdflib graph costs
about 1-14 ms, against an Oxigraph-backed graph 0.4-1.25 s. So the caller passes the
changed nodes' neighbourhood (their own triples plus the ``rdf:type`` of every IRI they
point to: owner, teams, the memory that superseded them ...) as a small graph; this module
adds the ontology's class hierarchy and individuals (:attr:`Schema.hierarchy`) so that
``sh:targetClass rk:Memory`` reaches instances of every subclass (SHACL §2.1.3.2) and
``sh:class mk:Platform`` finds ``mk:meta``, and runs pySHACL with no inference. Data and
shapes are both rdflib graphs with plain (untyped) strings: pySHACL's ``sh:in`` misfires
when one side types strings ``xsd:string`` (DESIGN.md).

Each violation is a dict::

    {"focus_node": "urn:reckon:acme:memory:...",     # IRI of the node validated
     "path": "https://reckon.dev/ns/marketing#amount",  # property IRI, or None
     "field": "amount",                              # sh:name of the property shape
     "constraint": "sh:MinInclusiveConstraintComponent",
     "value": "-5",                                  # offending value (IRI or lexical form), or None
     "message": "amount is required: exactly one decimal >= 0",
     "severity": "Violation",                        # Violation | Warning | Info
     "shape": "https://reckon.dev/ns/marketing#BudgetConstraintMemoryShape" or None}

A focus node typed with a class the ontology does not know is reported with the
constraint ``rk:KnownClassConstraint`` (otherwise no shape would apply and a typo in the
class would validate).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from reckon._errors import InvalidInput, ShapeViolation
from reckon.datalog.expr import ExprError, xpath_regex_for_re
from reckon.schema._convert import graph_from_triples, to_rdflib
from reckon.vocab import PREFIXES

if TYPE_CHECKING:  # pragma: no cover
    import rdflib

    from reckon.schema.loader import Schema

# rdflib and ``reckon.schema.loader`` (rdflib's namespaces) are imported by the functions
# below: ``import reckon.schema`` stays without rdflib (the write and read paths never
# validate with pySHACL unless the compiled fast path cannot decide).

__all__ = ["check", "format_violations", "validate"]

# pySHACL patches rdflib globals while it loads a shapes graph; serialize its calls.
_PYSHACL_LOCK = threading.Lock()


def validate(
    nodes_graph: rdflib.Graph | Iterable[Any],
    focus_nodes: Iterable[Any],
    *,
    schema: Schema | None = None,
) -> list[dict[str, Any]]:
    """Validate ``focus_nodes`` of ``nodes_graph`` against the schema's SHACL shapes.

    :param nodes_graph: the changed nodes' neighbourhood: an rdflib ``Graph`` or an
        iterable of pyoxigraph ``Triple`` / ``Quad`` (graph names are ignored). Must hold
        the ``rdf:type`` of every IRI the focus nodes link to (``sh:class`` looks there).
    :param focus_nodes: the nodes to validate: IRIs as ``str``, ``rdflib.URIRef`` or
        ``pyoxigraph.NamedNode``.
    :param schema: the schema to validate against; default: :func:`load_schema` (shipped).
    :returns: violations (all severities), sorted by focus node, path, constraint, value;
        empty when the nodes conform.
    :raises InvalidInput: when a focus node is not an IRI.
    """
    import rdflib

    from reckon.schema.loader import load_schema

    schema = schema or load_schema()
    focus = [_focus_iri(f) for f in focus_nodes]
    if not focus:
        return []
    data = rdflib.Graph()
    for t in schema.hierarchy:
        data.add(t)
    nodes = nodes_graph if isinstance(nodes_graph, rdflib.Graph) else graph_from_triples(nodes_graph)
    for s, p, o in nodes:
        data.add((s, p, to_rdflib(o)))

    out = _unknown_classes(schema, data, focus)
    from pyshacl import validate as shacl_validate

    shapes = _shapes_for(schema, data, focus)
    with _PYSHACL_LOCK:
        conforms, report, _text = shacl_validate(
            data,
            shacl_graph=shapes,
            focus_nodes=[str(f) for f in focus],
            inference="none",
            advanced=False,
            allow_warnings=True,
            allow_infos=True,
        )
    if not conforms or isinstance(report, rdflib.Graph):
        out.extend(_results(schema, report))
    out.sort(key=lambda v: (v["focus_node"], v["path"] or "", v["constraint"], v["value"] or ""))
    return out


def check(
    nodes_graph: rdflib.Graph | Iterable[Any],
    focus_nodes: Iterable[Any],
    *,
    schema: Schema | None = None,
) -> None:
    """Like :func:`validate`, but raise when any violation has severity ``Violation``.

    :raises ShapeViolation: whose message names each field and constraint, e.g.
        ``field 'amount' (mk:amount) violates sh:MinInclusiveConstraintComponent with
        value -5: amount is required: exactly one decimal >= 0``; ``.violations`` holds
        the dicts.
    :raises InvalidInput: when a focus node is not an IRI.
    """
    found = [v for v in validate(nodes_graph, focus_nodes, schema=schema) if v["severity"] == "Violation"]
    if found:
        raise ShapeViolation(format_violations(found), found)


def format_violations(violations: list[dict[str, Any]]) -> str:
    """One readable message for a list of violation dicts (one line per violation)."""
    lines = []
    for v in violations:
        where = f"field {v['field']!r}" if v.get("field") else "node"
        if v.get("path"):
            where += f" ({_short(v['path'])})"
        value = f" with value {v['value']}" if v.get("value") is not None else ""
        lines.append(f"<{v['focus_node']}>: {where} violates {v['constraint']}{value}: {v['message']}")
    head = "1 shape violation" if len(lines) == 1 else f"{len(lines)} shape violations"
    return head + ":\n  " + "\n  ".join(lines)


# ---------------------------------------------------------------------------


def _focus_iri(f: Any) -> rdflib.URIRef:
    import rdflib

    if isinstance(f, ox.NamedNode):
        return rdflib.URIRef(f.value)
    if isinstance(f, rdflib.URIRef):
        return f
    if isinstance(f, str) and not isinstance(f, rdflib.term.Node):
        return rdflib.URIRef(f)
    raise InvalidInput(f"focus node must be an IRI, got {f!r}", field="focus_nodes")


def _unknown_classes(schema: Schema, data: rdflib.Graph, focus: list[rdflib.URIRef]) -> list[dict[str, Any]]:
    from rdflib.namespace import RDF

    out = []
    for f in focus:
        for cls in data.objects(f, RDF.type):
            if not schema.is_known_class(cls):
                out.append(
                    {
                        "focus_node": str(f),
                        "path": str(RDF.type),
                        "field": "type",
                        "constraint": "rk:KnownClassConstraint",
                        "value": str(cls),
                        "message": f"type {cls} is not a class of the loaded ontology",
                        "severity": "Violation",
                        "shape": None,
                    }
                )
    return out


def _shapes_for(schema: Schema, data: rdflib.Graph, focus: list[rdflib.URIRef]) -> rdflib.Graph:
    """The part of the shapes graph that can apply to ``focus``: node shapes targeting a
    class of a focus node (or a superclass), shapes with other kinds of targets, and
    everything they reach. Cached on the schema per set of classes; pySHACL then builds
    a handful of shapes instead of all of them (validation cost scales with shape count).
    """
    import rdflib
    from rdflib.namespace import RDF, SH

    classes: set[rdflib.term.Node] = set()
    for f in focus:
        for cls in data.objects(f, RDF.type):
            classes.add(cls)
            classes.update(schema.superclasses(cls) if isinstance(cls, rdflib.URIRef) else ())
    key = ("shapes_for", frozenset(classes))
    cached = schema._memory.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    g = schema.shapes
    roots: set[rdflib.term.Node] = set()
    for cls in classes:
        roots.update(g.subjects(SH.targetClass, cls))
        if (cls, RDF.type, SH.NodeShape) in g:
            roots.add(cls)
    for pred in (SH.targetNode, SH.targetSubjectsOf, SH.targetObjectsOf):
        roots.update(g.subjects(pred, None))
    sub = rdflib.Graph()
    for prefix, ns in g.namespaces():
        sub.bind(prefix, ns, override=False)
    seen: set[rdflib.term.Node] = set()
    todo = list(roots)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for p, o in g.predicate_objects(n):
            if p == SH.pattern or (p == SH.flags and g.value(n, SH.pattern) is not None):
                continue
            sub.add((n, p, o))
            if (o, None, None) in g and o not in seen and p != RDF.type:
                todo.append(o)
        patterns = list(g.objects(n, SH.pattern))
        if patterns:
            # pySHACL matches sh:pattern with Python's re, where `$` also matches before a
            # final newline: hand it the XPath regex translated (SHACL §4.8.1, XPath F&O
            # 3.1 §5.6.1), its sh:flags inline
            flags = g.value(n, SH.flags)
            try:
                translated = [xpath_regex_for_re(str(x), str(flags) if flags is not None else "") for x in patterns]
            except ExprError:  # an invalid pattern: pySHACL reports it as it is
                for x in patterns:
                    sub.add((n, SH.pattern, x))
                if flags is not None:
                    sub.add((n, SH.flags, flags))
            else:
                for text in translated:
                    sub.add((n, SH.pattern, rdflib.Literal(text)))
    with schema._lock:
        if len(schema._memory) < 512:
            schema._memory[key] = sub
    return sub


def _results(schema: Schema, report: rdflib.Graph) -> list[dict[str, Any]]:
    import rdflib
    from rdflib.namespace import RDF, SH

    from reckon.schema.loader import RK

    names = _field_names(schema)
    out = []
    for r in report.subjects(RDF.type, SH.ValidationResult):
        focus = report.value(r, SH.focusNode)
        path = report.value(r, SH.resultPath)
        node_level = path is None
        shape = report.value(r, SH.sourceShape)
        if path is None and isinstance(shape, rdflib.URIRef):
            path = schema.shapes.value(shape, RK.reportPath)
        comp = report.value(r, SH.sourceConstraintComponent)
        value = report.value(r, SH.value)
        msgs = [str(m) for m in report.objects(r, SH.resultMessage)]
        severity = report.value(r, SH.resultSeverity)
        path_s = str(path) if isinstance(path, rdflib.URIRef) else None
        own_name = schema.shapes.value(shape, SH.name) if shape is not None and not node_level else None
        out.append(
            {
                "focus_node": str(focus),
                "path": path_s,
                "field": str(own_name) if own_name is not None else names.get(path_s, _local(path_s)) if path_s else None,
                "constraint": "sh:" + str(comp).rsplit("#", 1)[-1] if comp is not None else "sh:Unknown",
                "value": None if value is None or (node_level and value == focus) else str(value),
                "message": _message(schema, shape, comp, value, msgs,
                                    str(own_name) if own_name is not None
                                    else names.get(path_s, _local(path_s)) if path_s else None),
                "severity": str(severity).rsplit("#", 1)[-1] if severity is not None else "Violation",
                "shape": str(shape) if isinstance(shape, rdflib.URIRef) else None,
            }
        )
    return out


#: Value-range and length constraint components -> (the shape's parameter, what the value must be).
_BOUNDS: dict[str, tuple[str, str]] = {
    "MinInclusiveConstraintComponent": ("minInclusive", "at least"),
    "MinExclusiveConstraintComponent": ("minExclusive", "above"),
    "MaxInclusiveConstraintComponent": ("maxInclusive", "at most"),
    "MaxExclusiveConstraintComponent": ("maxExclusive", "below"),
    "MinLengthConstraintComponent": ("minLength", "at least this many characters long:"),
    "MaxLengthConstraintComponent": ("maxLength", "at most this many characters long:"),
}


def _message(schema: Schema, shape: Any, comp: Any, value: Any, msgs: list[str], field: str | None) -> str:
    """A violation's message: what was wrong with the value -- derived from the
    constraint component and the shape's parameter (``amount -5 is negative: it must be
    at least 0``, ``... is not a decimal``) -- then the shape's own ``sh:message`` (the
    rule, as its author wrote it: often "X is required: exactly one ..."), so a value
    that is present but out of range is never reported only as "required"."""
    import rdflib
    from rdflib.namespace import SH

    authored = "; ".join(sorted(msgs)) or f"does not conform to {_short(str(shape))}"
    name = str(comp).rsplit("#", 1)[-1] if comp is not None else ""
    what = field or "the value"
    numeric = isinstance(value, rdflib.Literal) and isinstance(value.toPython(), (int, float, Decimal)) \
        and not isinstance(value.toPython(), bool)
    shown = None if value is None else repr(str(value)) if isinstance(value, rdflib.Literal) and not numeric \
        else str(value)
    lead: str | None = None
    if name in _BOUNDS and shape is not None:
        param, must = _BOUNDS[name]
        bound = schema.shapes.value(shape, SH[param])
        if bound is not None and shown is not None:
            b = str(bound)
            negative = name == "MinInclusiveConstraintComponent" and _is_zero(b) and str(value).startswith("-")
            lead = (f"{what} {shown} is negative: it must be at least 0" if negative
                    else f"{what} {shown} is out of range: it must be {must} {b}")
    elif name == "DatatypeConstraintComponent" and shape is not None and shown is not None:
        dt = schema.shapes.value(shape, SH.datatype)
        lead = f"{what} {shown} is not of datatype {_short(str(dt))}" if dt is not None else None
    elif name == "MaxCountConstraintComponent" and shape is not None:
        n = schema.shapes.value(shape, SH.maxCount)
        lead = f"{what} has more than {n} value{'s' if str(n) != '1' else ''}" if n is not None else None
    elif name == "MinCountConstraintComponent":
        lead = f"{what} is missing"
    elif name == "InConstraintComponent" and shown is not None:
        lead = f"{what} {shown} is not one of the allowed values"
    elif name == "PatternConstraintComponent" and shown is not None:
        lead = f"{what} {shown} does not have the required form"
    elif name == "ClassConstraintComponent" and shown is not None:
        lead = f"{what} {shown} is not a known {_short(str(schema.shapes.value(shape, SH['class'])))}" \
            if shape is not None and schema.shapes.value(shape, SH["class"]) is not None else None
    if lead is None or lead in authored:
        return authored
    return f"{lead} ({authored})"


def _is_zero(text: str) -> bool:
    try:
        return float(text) == 0.0
    except ValueError:
        return False


def _field_names(schema: Schema) -> dict[str, str]:
    """path IRI -> sh:name, preferring names given in memory shapes (cached on the schema)."""
    import rdflib
    from rdflib.namespace import SH

    cached = schema._memory.get("field_names")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    names: dict[str, str] = {}
    for ps, path in schema.shapes.subject_objects(SH.path):
        name = schema.shapes.value(ps, SH.name)
        if isinstance(path, rdflib.URIRef) and name is not None:
            names.setdefault(str(path), str(name))
    schema._memory["field_names"] = names
    return names


def _local(iri: str | None) -> str | None:
    if iri is None:
        return None
    return iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def _short(iri: str) -> str:
    for prefix, ns in PREFIXES.items():
        if iri.startswith(ns):
            return f"{prefix}:{iri[len(ns):]}"
    return iri
