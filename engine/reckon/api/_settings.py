"""Tenant settings: the thresholds, floors and caps the rules read, as data, one value each.

The settings are the triples ``rk:settings p v`` of the tenant's schema graph, for the
properties its program declares with ``rdfs:domain rk:Settings`` (``ontology/core.ttl``:
``rk:nearLimitThreshold``, ``rk:liveContextCap``, ``rk:confidenceFloor``,
``rk:liveImportanceFloor``; a module may declare more). ``shapes/core.ttl``
``rk:SettingsShape`` gives each its datatype, range and ``sh:maxCount 1``. A setting is
named by its shape's ``sh:name`` (``near_limit_threshold``) or the property's local
name (``nearLimitThreshold``); case, ``-`` and ``_`` are ignored.

:func:`set_setting` is one store transaction that replaces the value (every other value
of the property is retracted: never two), after SHACL-validating the settings node with
the new value; the reasoner re-derives incrementally only the statuses that read it
(a near-limit threshold change touches the budget statuses, nothing else).
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon import vocab
from reckon._errors import InvalidInput, ShapeViolation
from reckon.schema.program import SETTINGS
from reckon.store import SCHEMA
from reckon.store.terms import check_text, parse_datetime_text

if TYPE_CHECKING:  # pragma: no cover
    from reckon.api._tenant import Tenant

__all__ = ["SettingChange", "get_settings", "set_setting", "setting_specs"]

_XSD, _SH, _RDFS = vocab.XSD, vocab.SH, vocab.RDFS
_RDF_TYPE = vocab.A
_SETTINGS_CLASS = vocab.SETTINGS_CLASS


class SettingChange(dict):  # type: ignore[type-arg]
    """``{"name", "property", "before", "after", "generation"}`` of one setting change
    (``before`` / ``after`` typed values; ``generation`` ``None`` when nothing changed)."""


def _key(name: str) -> str:
    return re.sub(r"[-_\s]", "", name).casefold()


def setting_specs(schema: list[Triple]) -> dict[str, dict[str, Any]]:
    """Setting name -> ``{"property": IRI, "datatype": IRI | None, "label": str}`` read
    from the schema triples (declarations and ``rk:SettingsShape``)."""
    domain = NamedNode(_RDFS + "domain")
    props = {t.subject for t in schema if t.predicate == domain and t.object == _SETTINGS_CLASS}
    by_s: dict[Any, dict[Any, list[Any]]] = {}
    for t in schema:
        by_s.setdefault(t.subject, {}).setdefault(t.predicate, []).append(t.object)
    shape_info: dict[Any, dict[str, Any]] = {}
    for po in by_s.values():
        for path in po.get(NamedNode(_SH + "path"), []):
            if path in props:
                info = shape_info.setdefault(path, {})
                for n in po.get(NamedNode(_SH + "name"), []):
                    info.setdefault("name", n.value)
                for d in po.get(NamedNode(_SH + "datatype"), []):
                    info.setdefault("datatype", d.value)
    out = {}
    for p in sorted(props, key=str):
        if not isinstance(p, NamedNode):
            continue
        info = shape_info.get(p, {})
        rng = [r.value for r in by_s.get(p, {}).get(NamedNode(_RDFS + "range"), [])]
        name = info.get("name") or p.value.rsplit("#", 1)[-1]
        labels = by_s.get(p, {}).get(NamedNode(_RDFS + "label"), [])
        out[name] = {
            "property": p.value,
            "datatype": info.get("datatype") or (rng[0] if rng else None),
            "label": labels[0].value if labels else name,
        }
    return out


def python_value(term: Any) -> Any:
    """A setting's value: ``Decimal`` for decimals, ``int`` for integers, ``bool``,
    ``datetime``, otherwise the lexical text."""
    if not isinstance(term, Literal):
        return getattr(term, "value", term)
    dt = term.datatype.value
    try:
        if dt == _XSD + "decimal":
            return Decimal(term.value)
        if dt == _XSD + "integer":
            return int(term.value)
        if dt == _XSD + "boolean":
            return term.value == "true"
        if dt == _XSD + "double" or dt == _XSD + "float":
            return float(term.value)
        if dt == _XSD + "dateTime":
            return datetime.fromisoformat(term.value.replace("Z", "+00:00"))
    except ValueError:
        return term.value
    return term.value


def _resolve(specs: dict[str, dict[str, Any]], name: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("setting: give a setting name", field="name")
    want = _key(name)
    for n, spec in specs.items():
        if want in (_key(n), _key(spec["property"].rsplit("#", 1)[-1]), _key(spec["property"])):
            return n, spec
    raise InvalidInput(f"setting: unknown setting {name!r}; the tenant's settings are {sorted(specs)}", field="name")


def _term(spec: dict[str, Any], name: str, value: Any) -> Literal:
    from reckon.store.terms import canonical_term, datetime_literal, decimal_literal

    dt = spec.get("datatype") or _XSD + "string"
    fld = name
    check_text(value.value if isinstance(value, Literal) else value, fld)
    if isinstance(value, Literal):
        return canonical_term(value)
    if dt == _XSD + "decimal":
        try:
            return decimal_literal(value)
        except ValueError as e:
            raise InvalidInput(f"{fld}: {value!r} {e}", field=fld) from None
    if dt == _XSD + "integer":
        if isinstance(value, bool):
            raise InvalidInput(f"{fld}: {value!r} is not an integer", field=fld)
        if isinstance(value, str):
            if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
                raise InvalidInput(f"{fld}: {value!r} is not an integer", field=fld)
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, Decimal) and value == value.to_integral_value():
            value = int(value)
        if not isinstance(value, int):
            raise InvalidInput(f"{fld}: {value!r} is not an integer", field=fld)
        return canonical_term(Literal(str(value), datatype=NamedNode(dt)))
    if dt == _XSD + "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise InvalidInput(f"{fld}: {value!r} is not true or false", field=fld)
        return Literal("true" if value else "false", datatype=NamedNode(dt))
    if dt == _XSD + "dateTime":
        if isinstance(value, str):
            try:
                value = parse_datetime_text(value)
            except ValueError as exc:
                raise InvalidInput(f"{fld}: {value!r} is not an ISO 8601 date-time kept to the microsecond ({exc})",
                                   field=fld) from None
        return datetime_literal(value, fld)
    if dt == _XSD + "string":
        if not isinstance(value, str):
            raise InvalidInput(f"{fld}: {value!r} is not a string", field=fld)
        return Literal(value)
    return canonical_term(Literal(str(value), datatype=NamedNode(dt)))


def _schema(view: Any) -> list[Triple]:
    return [q.triple for q in view.quads(None, None, None, SCHEMA)]


def get_settings(tenant: Tenant) -> dict[str, Any]:
    """Every setting of the tenant: name -> typed value (``None`` when unset; a list
    when a damaged tenant holds several values: ``tenant validate`` reports it)."""
    with tenant.store.snapshot() as view:
        schema = _schema(view)
    specs = setting_specs(schema)
    values: dict[str, list[Any]] = {}
    for t in schema:
        if t.subject == SETTINGS:
            for n, spec in specs.items():
                if t.predicate.value == spec["property"]:
                    values.setdefault(n, []).append(python_value(t.object))
    out: dict[str, Any] = {}
    for n in specs:
        vs = values.get(n, [])
        out[n] = None if not vs else vs[0] if len(vs) == 1 else sorted(vs, key=str)
    return out


def set_setting(tenant: Tenant, name: str, value: Any) -> SettingChange:
    """Replace one setting's value (one transaction; see the module docstring).

    :raises InvalidInput: unknown setting, or a value of the wrong type.
    :raises ShapeViolation: the value is out of the setting's range (``rk:SettingsShape``).
    """
    from reckon.schema.loader import schema_from_graph
    from reckon.schema.validate import format_violations, validate

    with tenant.store.transaction() as txn:
        schema = _schema(txn.view)
        specs = setting_specs(schema)
        canonical_name, spec = _resolve(specs, name)
        p = NamedNode(spec["property"])
        new = _term(spec, canonical_name, value)
        before = [t.object for t in schema if t.subject == SETTINGS and t.predicate == p]
        node = [t for t in schema if t.subject == SETTINGS and t.predicate != p] + [Triple(SETTINGS, p, new)]
        if not any(t.predicate == _RDF_TYPE for t in node):
            node.append(Triple(SETTINGS, _RDF_TYPE, _SETTINGS_CLASS))
        violations = [v for v in validate(node, [SETTINGS], schema=schema_from_graph(schema))
                      if v["severity"] == "Violation"]
        if violations:
            raise ShapeViolation(f"setting {canonical_name} = {new.value}: {format_violations(violations)}",
                                 violations)
        for o in before:
            txn.remove(Quad(SETTINGS, p, o, SCHEMA))
        txn.add(Quad(SETTINGS, p, new, SCHEMA))
    commit = txn.commit
    return SettingChange(
        name=canonical_name,
        property=spec["property"],
        before=python_value(before[0]) if len(before) == 1 else [python_value(b) for b in before] or None,
        after=python_value(new),
        generation=commit.generation if commit is not None else None,
    )
