"""A compiled fast path for SHACL Core on one memory node: accept conforming writes
without pySHACL (~100 ms a call); anything it does not accept goes to pySHACL.

https://www.w3.org/TR/shacl/#core-components — supported here: node shapes targeting a
class by ``sh:targetClass``; property shapes with a predicate path; the components
``sh:minCount sh:maxCount sh:datatype sh:class sh:nodeKind sh:in sh:hasValue sh:pattern
(sh:flags) sh:minLength sh:maxLength sh:minInclusive sh:maxInclusive sh:minExclusive
sh:maxExclusive``; node-level ``sh:or sh:and sh:not sh:node`` over such shapes;
``sh:deactivated``; non-Violation severities. A shape using anything else (SPARQL
constraints, qualified shapes, closed shapes, property paths ...) makes the fast path
answer "unknown" for the classes it targets, and the caller runs pySHACL.

The fast path is only ever trusted to say "conforms"; a reported violation always comes
from pySHACL (the authoritative message and report). Its agreement with pySHACL is tested
on conforming and violating inputs (tests/schema/test_fastshacl.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from reckon.datalog.expr import ExprError, compile_xpath_regex
from reckon.vocab import RDF, RDFS, SH, XSD

__all__ = ["FastShapes"]

_A = NamedNode(RDF + "type")
_SUB = NamedNode(RDFS + "subClassOf")
_FIRST, _REST, _NIL = NamedNode(RDF + "first"), NamedNode(RDF + "rest"), NamedNode(RDF + "nil")


def _sh(x: str) -> NamedNode:
    return NamedNode(SH + x)


# the SHACL terms the evaluation reads, built once (not a NamedNode per lookup)
_PATH, _MIN_COUNT, _MAX_COUNT, _HAS_VALUE, _NODE = (_sh(x) for x in ("path", "minCount", "maxCount", "hasValue", "node"))
_OR, _AND, _NOT, _PROPERTY = (_sh(x) for x in ("or", "and", "not", "property"))
_DEACTIVATED, _SEVERITY, _VIOLATION = _sh("deactivated"), _sh("severity"), _sh("Violation")
_BOUNDS = ("minInclusive", "maxInclusive", "minExclusive", "maxExclusive")
_UNKNOWN = object()  # a cached "the fast path cannot decide", raised where it was met


_PROPERTY_COMPONENTS = {"minCount", "maxCount", "datatype", "class", "nodeKind", "in", "hasValue", "pattern",
                        "flags", "minLength", "maxLength", "minInclusive", "maxInclusive", "minExclusive",
                        "maxExclusive"}
_NODE_LOGIC = {"or", "and", "not", "node"}
_IGNORED = {"name", "description", "message", "order", "group", "severity", "deactivated", "path", "property",
            "targetClass", "defaultValue"}
_NUMERIC = {XSD + t for t in ("integer", "decimal", "int", "long", "short", "byte", "nonNegativeInteger",
                              "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedInt",
                              "unsignedLong", "unsignedShort", "unsignedByte")}


class _Unknown(Exception):
    """The fast path cannot decide."""


class FastShapes:
    """Compiled view of a shapes + ontology graph.

    :param triples: the tenant's SCHEMA graph (shapes and ontology together).
    """

    def __init__(self, triples: Iterable[Triple],
                 supers: Callable[[Any], frozenset[Any]] | None = None) -> None:
        spo: dict[Any, dict[Any, list[Any]]] = {}
        for t in triples:
            spo.setdefault(t.subject, {}).setdefault(t.predicate, []).append(t.object)
        self._spo = spo
        self._targets: dict[Any, list[Any]] = {}
        for s, po in spo.items():
            for c in po.get(_sh("targetClass"), []):
                self._targets.setdefault(c, []).append(s)
        self._super_cache: dict[Any, frozenset[Any]] = {}
        self._closure = supers
        # per-shape facts compiled on first use (the shapes graph never changes under an
        # instance): evaluation reads these instead of walking the shapes graph each time
        self._active_cache: dict[Any, bool] = {}
        self._keys_cache: dict[tuple[Any, bool], bool] = {}
        self._list_cache: dict[Any, Any] = {}
        self._values_cache: dict[Any, tuple[Any, ...]] = {}
        self._regex_cache: dict[tuple[str, str], Any] = {}
        self._shapes_cache: dict[tuple[Any, ...], Any] = {}

    # -- graph helpers ------------------------------------------------------------------
    def _objs(self, s: Any, p: NamedNode) -> list[Any]:
        return self._spo.get(s, {}).get(p, [])

    def _one(self, s: Any, p: NamedNode) -> Any:
        v = self._objs(s, p)
        return v[0] if v else None

    def _list(self, head: Any) -> list[Any]:
        hit: Any = self._list_cache.get(head)
        if hit is None:
            try:
                hit = self._read_list(head)
            except _Unknown:
                hit = _UNKNOWN
            self._list_cache[head] = hit
        if hit is _UNKNOWN:
            raise _Unknown
        return cast("list[Any]", hit)

    def _read_list(self, head: Any) -> list[Any]:
        out, seen = [], set()
        while head != _NIL:
            if head in seen:
                raise _Unknown
            seen.add(head)
            first = self._one(head, _FIRST)
            if first is None:
                raise _Unknown
            out.append(first)
            head = self._one(head, _REST)
            if head is None:
                raise _Unknown
        return out

    def supers(self, c: Any) -> frozenset[Any]:
        """``c`` and its superclasses (reflexive, transitive) in the schema graph (the
        owning :class:`reckon.schema.TenantSchema`'s closure when one was given)."""
        if self._closure is not None:
            return self._closure(c)
        if c not in self._super_cache:
            seen = set()
            stack = [c]
            while stack:
                x = stack.pop()
                if x in seen:
                    continue
                seen.add(x)
                stack.extend(self._objs(x, _SUB))
            self._super_cache[c] = frozenset(seen)
        return self._super_cache[c]

    # -- entry point ----------------------------------------------------------------------
    def conforms(self, focus: NamedNode, triples: Iterable[Triple]) -> bool | None:
        """``True`` when ``focus`` conforms to every shape targeting one of its classes;
        ``False`` when some shape is violated; ``None`` when the fast path cannot decide."""
        data: dict[Any, dict[Any, list[Any]]] = {}
        for t in triples:
            data.setdefault(t.subject, {}).setdefault(t.predicate, []).append(t.object)
        try:
            shapes = self._shapes_of(tuple(data.get(focus, {}).get(_A, [])))
            if shapes is None:
                return None
            return all(self._node_ok(s, focus, data) for s in shapes)
        except _Unknown:
            return None

    def _shapes_of(self, classes: tuple[Any, ...]) -> list[Any] | None:
        """The shapes targeting ``classes`` or a superclass, in a fixed order; ``None``
        when one of the classes is unknown to the schema."""
        hit = self._shapes_cache.get(classes, _UNKNOWN)
        if hit is _UNKNOWN:
            hit = None
            if all(c in self._spo for c in classes):  # else a class the schema does not know
                types: set[Any] = set()
                for c in classes:
                    types |= self.supers(c)
                hit = sorted({s for c in types for s in self._targets.get(c, [])}, key=str)
            self._shapes_cache[classes] = hit
        return hit  # type: ignore[no-any-return]

    # -- evaluation -----------------------------------------------------------------------
    def _active(self, shape: Any) -> bool:
        hit = self._active_cache.get(shape)
        if hit is None:
            deact = self._one(shape, _DEACTIVATED)
            if deact is not None and getattr(deact, "value", "") == "true":
                hit = False
            else:
                sev = self._one(shape, _SEVERITY)
                hit = sev is None or sev == _VIOLATION
            self._active_cache[shape] = hit
        return hit

    def _check_keys(self, shape: Any, node_level: bool) -> None:
        """Raise :class:`_Unknown` when ``shape`` uses a SHACL term outside the fast
        path's subset (node-level or property-level components)."""
        key = (shape, node_level)
        ok = self._keys_cache.get(key)
        if ok is None:
            allowed = (_NODE_LOGIC | _PROPERTY_COMPONENTS - {"minCount", "maxCount"} if node_level
                       else _PROPERTY_COMPONENTS | {"node"})
            ok = self._keys_cache[key] = not any(
                p.value.startswith(SH) and p.value[len(SH):] not in allowed | _IGNORED for p in self._spo.get(shape, {}))
        if not ok:
            raise _Unknown

    def _node_ok(self, shape: Any, focus: Any, data: dict[Any, dict[Any, list[Any]]]) -> bool:
        if not self._active(shape):
            return True
        po = self._spo.get(shape, {})
        if po.get(_PATH):
            return self._prop_ok(shape, focus, data)
        self._check_keys(shape, True)
        if not self._values_ok(shape, [focus], data):
            return False
        for lst in po.get(_OR, ()):
            if not any(self._node_ok(s, focus, data) for s in self._list(lst)):
                return False
        for lst in po.get(_AND, ()):
            if not all(self._node_ok(s, focus, data) for s in self._list(lst)):
                return False
        for s in po.get(_NOT, ()):
            if self._node_ok(s, focus, data):
                return False
        for s in po.get(_NODE, ()):
            if not self._node_ok(s, focus, data):
                return False
        return all(self._prop_ok(p, focus, data) for p in po.get(_PROPERTY, ()))

    def _prop_ok(self, shape: Any, focus: Any, data: dict[Any, dict[Any, list[Any]]]) -> bool:
        if not self._active(shape):
            return True
        self._check_keys(shape, False)
        po = self._spo.get(shape, {})
        path = po[_PATH][0] if po.get(_PATH) else None
        if not isinstance(path, NamedNode):
            raise _Unknown
        values = data.get(focus, {}).get(path, [])
        mn = po.get(_MIN_COUNT)
        if mn and len(set(values)) < int(mn[0].value):
            return False
        mx = po.get(_MAX_COUNT)
        if mx and len(set(values)) > int(mx[0].value):
            return False
        for hv in po.get(_HAS_VALUE, ()):
            if hv not in values:
                return False
        for s in po.get(_NODE, ()):
            if not all(self._node_ok(s, v, data) for v in values):
                return False
        return self._values_ok(shape, values, data, has_value_done=True)

    def _value_facts(self, shape: Any) -> tuple[Any, ...]:
        """The value-level components of ``shape``: datatype, classes, node kind, the
        sh:in lists (or :data:`_UNKNOWN`), pattern, flags, length and range bounds."""
        hit = self._values_cache.get(shape)
        if hit is None:
            try:
                ins: Any = [self._list(x) for x in self._objs(shape, _sh("in"))]
            except _Unknown:
                ins = _UNKNOWN
            minl, maxl = self._one(shape, _sh("minLength")), self._one(shape, _sh("maxLength"))
            hit = (
                self._one(shape, _sh("datatype")), self._objs(shape, _sh("class")), self._one(shape, _sh("nodeKind")),
                ins, self._one(shape, _sh("pattern")), self._one(shape, _sh("flags")),
                [(lim, is_min) for lim, is_min in ((minl, True), (maxl, False)) if lim is not None],
                [(b, n) for b, n in ((self._one(shape, _sh(n)), n) for n in _BOUNDS) if b is not None],
            )
            self._values_cache[shape] = hit
        return hit

    def _regex(self, pattern: Any, flags: Any) -> Any:
        key = (pattern.value, flags.value if flags is not None else "")
        rx = self._regex_cache.get(key)
        if rx is None:
            try:  # XPath regex semantics (SHACL §4.8.1): `$` is the end of the string
                rx = compile_xpath_regex(*key)
            except ExprError:
                rx = _UNKNOWN
            self._regex_cache[key] = rx
        if rx is _UNKNOWN:
            raise _Unknown
        return rx

    def _values_ok(self, shape: Any, values: list[Any], data: dict[Any, dict[Any, list[Any]]],
                   has_value_done: bool = False) -> bool:
        if not has_value_done:
            for hv in self._objs(shape, _HAS_VALUE):
                if hv not in values:
                    return False
        dt, classes, kind, ins, pattern, flags, lengths, bounds = self._value_facts(shape)
        if ins is _UNKNOWN:
            raise _Unknown
        for v in values:
            if dt is not None and not _datatype_ok(v, dt):
                return False
            for c in classes:
                vtypes = list(data.get(v, {}).get(_A, [])) + list(self._objs(v, _A))
                if not any(c in self.supers(t) for t in vtypes):
                    return False
            if kind is not None and not _kind_ok(v, kind):
                return False
            for lst in ins:
                if v not in lst:
                    return False
            if pattern is not None:
                if isinstance(v, BlankNode):
                    return False
                if self._regex(pattern, flags).search(v.value) is None:
                    return False
            for lim, is_min in lengths:
                if isinstance(v, BlankNode):
                    return False
                n = len(v.value)
                if (is_min and n < int(lim.value)) or (not is_min and n > int(lim.value)):
                    return False
            for bound, name in bounds:
                c = _compare(v, bound)
                if c is None:
                    return False
                if name == "minInclusive" and c < 0 or name == "maxInclusive" and c > 0:
                    return False
                if name == "minExclusive" and c <= 0 or name == "maxExclusive" and c >= 0:
                    return False
        return True


def _datatype_ok(v: Any, dt: NamedNode) -> bool:
    if not isinstance(v, Literal) or v.datatype != dt or v.language:
        return False
    d = dt.value
    try:
        if d in _NUMERIC:
            n = Decimal(v.value)
            return d != XSD + "integer" or n == n.to_integral_value() and "." not in v.value
        if d == XSD + "dateTime":
            datetime.fromisoformat(v.value.replace("Z", "+00:00"))
        elif d == XSD + "date":
            date.fromisoformat(v.value)
        elif d == XSD + "boolean":
            return v.value in ("true", "false", "1", "0")
        elif d != XSD + "string":
            raise _Unknown
    except (ValueError, InvalidOperation):
        return False
    return True


def _kind_ok(v: Any, kind: NamedNode) -> bool:
    k = kind.value[len(SH):]
    is_iri, is_lit, is_bn = isinstance(v, NamedNode), isinstance(v, Literal), isinstance(v, BlankNode)
    table = {"IRI": is_iri, "Literal": is_lit, "BlankNode": is_bn, "BlankNodeOrIRI": is_bn or is_iri,
             "IRIOrLiteral": is_iri or is_lit, "BlankNodeOrLiteral": is_bn or is_lit}
    if k not in table:
        raise _Unknown
    return table[k]


def _compare(v: Any, bound: Any) -> int | None:
    if not isinstance(v, Literal) or not isinstance(bound, Literal):
        return None
    try:
        if v.datatype.value in _NUMERIC and bound.datatype.value in _NUMERIC:
            a, b = Decimal(v.value), Decimal(bound.value)
        elif v.datatype.value == XSD + "dateTime" and bound.datatype.value == XSD + "dateTime":
            a = datetime.fromisoformat(v.value.replace("Z", "+00:00"))  # type: ignore[assignment]
            b = datetime.fromisoformat(bound.value.replace("Z", "+00:00"))  # type: ignore[assignment]
        else:
            raise _Unknown
    except (ValueError, InvalidOperation, TypeError):
        return None
    try:
        return (a > b) - (a < b)
    except TypeError:
        return None
