"""LLM tool definitions and the tool-call handler (seed 003 §5: "the set of available
subclasses is described to the model"; §6: the search tool for the long tail).

Four tools: ``remember``, ``search``, ``supersede``, ``get_context``.

The ``remember`` schema is generated from the tenant's memory subclass catalogue
(:meth:`reckon.schema.Schema.catalogue`, read from the tenant's own SCHEMA graph), so a
class added in Turtle (ontology + SHACL shape) appears with no code change. Mapping of a
SHACL property shape to JSON Schema:

=========================  ==============================================================
SHACL                      JSON Schema
=========================  ==============================================================
sh:datatype xsd:string     ``"type": "string"``
xsd:integer (and kin)      ``"type": "integer"``
xsd:decimal                ``"type": ["number", "string"]``: a JSON number or the decimal's
                           text (``"40000.00"``, matched by ``"pattern"``), which keeps every
                           digit through clients that read JSON numbers as binary floats
xsd:double / xsd:float     ``"type": "number"``
xsd:boolean                ``"type": "boolean"``
xsd:dateTime / xsd:date    ``"type": "string"``, ``"format": "date-time"`` / ``"date"``
sh:class / IRI node kind   ``"type": "string"`` (an individual's local name, or an IRI)
sh:in, listed individuals  ``"enum"`` (local names of individuals, lexical forms of literals)
sh:min/maxInclusive        ``"minimum"`` / ``"maximum"``
sh:min/maxExclusive        ``"exclusiveMinimum"`` / ``"exclusiveMaximum"``
sh:pattern, sh:min/maxLen  ``"pattern"``, ``"minLength"`` / ``"maxLength"``
sh:minCount >= 1           listed in ``"required"``
sh:maxCount 1              a single value; otherwise ``"type": "array"`` of values
                           (``"minItems"`` / ``"maxItems"`` from the counts)
=========================  ==============================================================

The subclass is a discriminated union: ``"subclass": {"oneOf": [{"name": {"const":
"BudgetConstraintMemory"}, "properties": {...its own properties...}}, ...]}``; a plain
memory omits ``subclass``. The root of every tool's parameters stays a plain object
(what both providers require).

:func:`handle_tool_call` never raises for bad input: it returns ``{"ok": False, "error":
{"type", "field", "constraint", "message", ...}}`` that a model can act on.
"""

from __future__ import annotations

import functools
import logging
import re
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, cast

from reckon import _json as strict_json
from reckon._config import MAX_SEARCH_K
from reckon._errors import (
    ConflictPending,
    InvalidInput,
    NotAuthorized,
    ReckonError,
    RestoreRefused,
    ShapeViolation,
    UnknownMemory,
    UnknownTeam,
)
from reckon._json import InvalidJSON
from reckon.api._limits import MAX_CONVERSATION_CHARS, MAX_SEARCH_CHARS
from reckon.memory.models import IMPORTANCE_NAMES, KINDS, SCOPES, Principal
from reckon.vocab import decimal_text

if TYPE_CHECKING:  # pragma: no cover
    from reckon.api._tenant import Tenant
    from reckon.schema import Catalogue, MemoryClass, PropertySpec

__all__ = ["TOOL_NAMES", "handle_tool_call", "tool_definitions", "tool_schemas"]

log = logging.getLogger("reckon.api")

TOOL_NAMES: tuple[str, ...] = ("remember", "search", "supersede", "get_context")

_XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGER = {_XSD + t for t in ("integer", "int", "long", "short", "nonNegativeInteger", "positiveInteger",
                               "nonPositiveInteger", "negativeInteger", "unsignedInt", "unsignedLong")}
_NUMBER = {_XSD + t for t in ("decimal", "double", "float")}
DECIMAL_NOTE = ('An exact decimal: a JSON number, or a string of its digits to keep every one '
                '("12345678901234.123456789012345678"); results give it back as such a string.')
"""What a decimal property's tool schema says of its values (``xsd:decimal``)."""
_ID = {"type": "string", "pattern": "^[0-9a-f]{32}$", "description": "A memory id: the 32 hex digits shown in [brackets]."}


def _local(iri: str) -> str:
    for sep in ("#", "/", ":"):
        if sep in iri:
            iri = iri.rsplit(sep, 1)[-1]
    return iri


def _num(v: Any) -> int | float:
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------
# schema generation
# ---------------------------------------------------------------------------------------


def property_schema(p: PropertySpec) -> dict[str, Any]:
    """JSON Schema of one catalogued property (table in the module docstring)."""
    one: dict[str, Any] = {}
    dt = p.datatype
    if p.allowed:
        vals = [_local(a) if a.startswith(("http://", "https://", "urn:")) else a for a in p.allowed]
        one["type"] = "string"
        one["enum"] = vals
    elif dt in _INTEGER:
        one["type"] = "integer"
    elif dt == _XSD + "decimal":
        one["type"] = ["number", "string"]
        one["pattern"] = DECIMAL_PATTERN
    elif dt in _NUMBER:
        one["type"] = "number"
    elif dt == _XSD + "boolean":
        one["type"] = "boolean"
    elif dt == _XSD + "dateTime":
        one.update(type="string", format="date-time")
    elif dt == _XSD + "date":
        one.update(type="string", format="date")
    else:
        one["type"] = "string"
    for attr, key in (("min_inclusive", "minimum"), ("max_inclusive", "maximum"),
                      ("min_exclusive", "exclusiveMinimum"), ("max_exclusive", "exclusiveMaximum")):
        v = getattr(p, attr)
        if v is not None and _numeric(one.get("type")):
            one[key] = _num(v)
    if p.pattern:
        one["pattern"] = p.pattern  # a shape's own pattern constrains the text form
    if p.min_length is not None:
        one["minLength"] = p.min_length
    if p.max_length is not None:
        one["maxLength"] = p.max_length
    desc = [p.description or p.label or p.name]
    if p.range_class and not p.allowed:
        desc.append(f"An IRI of a {_local(p.range_class)}.")
    if p.allowed and p.allowed_labels:
        desc.append("Values: " + ", ".join(f"{_local(a)} ({lab})" for a, lab in p.allowed_labels.items()
                                            if lab.casefold() != _local(a).casefold()) or "")
    if p.message:
        desc.append(p.message)
    if dt == _XSD + "decimal" and not p.allowed:
        desc.append(DECIMAL_NOTE)
    text = " ".join(d for d in desc if d and d.strip() and d != "Values: ")
    if not p.multiple:
        return {**one, "description": text}
    arr: dict[str, Any] = {"type": "array", "items": one, "description": text}
    if p.min_count > 1:
        arr["minItems"] = p.min_count
    if p.max_count is not None:
        arr["maxItems"] = p.max_count
    return arr


def subclass_variant(c: MemoryClass, base_paths: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """One branch of the ``subclass`` union: ``{"name": const, "properties": {...}}``.
    Only the class's own and inherited subclass properties (``base_paths``, the
    properties every memory has, are left out)."""
    props = [p for p in c.all_properties if p.path not in base_paths]
    inner: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: property_schema(p) for p in props},
        "additionalProperties": False,
    }
    req = [p.name for p in props if p.required]
    if req:
        inner["required"] = req
    return {
        "type": "object",
        "title": c.name,
        "description": f"{c.label or c.name}: {c.comment}" if c.comment else (c.label or c.name),
        "properties": {"name": {"type": "string", "const": c.name}, "properties": inner},
        "required": ["name", "properties"],
        "additionalProperties": False,
    }


def _memory_fields(catalogue: Catalogue) -> dict[str, Any]:
    base_paths = {p.path for p in catalogue.base.properties}
    classes = list(catalogue.classes)
    return {
        "label": {"type": "string", "minLength": 1, "maxLength": 500,
                  "description": "Short title. Re-using a label in the same scope updates that memory."},
        "content": {"type": "string", "minLength": 1, "maxLength": 20000,
                    "description": "The memory in full, as the user stated it."},
        "kind": {"type": "string", "enum": list(KINDS),
                 "description": "preference: how someone likes to work; fact: durable context; "
                                "objective: a target to pursue; context: background from conversations."},
        "scope": {"type": "string", "enum": list(SCOPES),
                  "description": "user: only this person (default for personal notes); conversation: the "
                                 "participants of one conversation (give `conversation`); project: the members of "
                                 "one project (give `project`); team: the person's teams; company: everyone (team "
                                 "and company need an operator). In the bundle the more specific wins: user > "
                                 "conversation > project > team > company."},
        "importance": {"type": "integer", "minimum": 1, "maximum": 5,
                       "description": "; ".join(f"{k} {v}" for k, v in IMPORTANCE_NAMES.items())
                       + ". 4-5 are preloaded in every conversation; 2-3 are found by search; 1 is never recalled."},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1,
                       "description": "How sure you are it is right (default 0.9 for what the user told you)."},
        "expires_at": {"type": "string", "format": "date-time",
                       "description": "When it stops applying (ISO 8601 with time zone), if ever."},
        "teams": {"type": "array", "items": {"type": "string", "minLength": 1},
                  "description": "Team ids for a team-scope memory (default: the user's teams)."},
        "project": {"type": "string", "minLength": 1,
                    "description": "Project id of a project-scope memory (the user must be a member)."},
        "conversation": {"type": "string", "minLength": 1,
                         "description": "Conversation id of a conversation-scope memory (the user must take part)."},
        "subclass": {
            "description": "Optional typed record for structured memories (budgets, targets, ...). Omit for a "
                           "plain memory. Pick the class and fill its properties: "
                           + "; ".join(f"{c.name} ({c.label or c.name})" for c in classes),
            "oneOf": [subclass_variant(c, base_paths) for c in classes],
        },
    }


def tool_schemas(catalogue: Catalogue) -> list[dict[str, Any]]:
    """The four tools as ``{"name", "description", "parameters"}`` (JSON Schema objects)."""
    fields = _memory_fields(catalogue)
    remember_params = {
        "type": "object",
        "properties": {
            **fields,
            "supersedes": {"type": "array", "items": _ID,
                           "description": "Ids of memories this one explicitly replaces (skips conflict detection)."},
            "conflict_resolution": {"type": "string", "enum": ["replace", "keep_both"],
                                    "description": "Only when retrying after a conflict_pending error."},
            "conflict_id": {"type": "string", "description": "The conflict_id of that conflict_pending error."},
        },
        "required": ["label", "content", "kind", "scope", "importance"],
        "additionalProperties": False,
    }
    replacement = {
        "type": "object",
        "properties": dict(fields),
        "required": ["label", "content", "kind", "scope", "importance"],
        "additionalProperties": False,
        "description": "The new memory (same fields as remember).",
    }
    names = [c.name for c in catalogue.classes]
    search_params = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_SEARCH_CHARS,
                      "description": "What to look for, in plain words."},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_K, "description": "Number of results (default 10)."},
            "kinds": {"type": "array", "items": {"type": "string", "enum": list(KINDS)}},
            "scopes": {"type": "array", "items": {"type": "string", "enum": list(SCOPES)}},
            "subclasses": {"type": "array", "items": {"type": "string", "enum": names}},
            "importance": {"type": "array", "items": {"type": "integer", "minimum": 2, "maximum": 5},
                           "description": "Tiers to search; default [2, 3] (the ones not preloaded)."},
            "expand": {"type": "string", "enum": ["graph"],
                       "description": "graph: also return the hits' directly linked memories (a chunk's document, "
                                      "a document's chunks, what a hit replaced or was replaced by, memories from "
                                      "the same turn), each marked with expanded_from and via."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    supersede_params = {
        "type": "object",
        "properties": {
            "old_id": {**_ID, "description": "Id of the memory being replaced (you must own it)."},
            "new_id": {**_ID, "description": "Id of an existing memory that replaces it."},
            "replacement": replacement,
        },
        "required": ["old_id"],
        "additionalProperties": False,
    }
    context_params = {
        "type": "object",
        "properties": {
            "conversation": {"type": "string", "maxLength": MAX_CONVERSATION_CHARS,
                             "description": "The recent conversation, used to order items."},
            "project": {"type": "string", "minLength": 1,
                        "description": "The project this turn works on (adds its project memories)."},
            "conversation_id": {"type": "string", "minLength": 1,
                                "description": "The conversation this turn belongs to (adds its conversation "
                                               "memories; without a conversation, ranks by its recorded turns)."},
            "budget_chars": {"type": "integer", "minimum": 500, "maximum": 100000,
                             "description": "Maximum length of the returned text (default 6000)."},
            "budget_tokens": {"type": "integer", "minimum": 100, "maximum": 100000,
                              "description": "Maximum length in tokens instead of characters."},
        },
        "additionalProperties": False,
    }
    return [
        {"name": "remember",
         "description": "Store a typed memory (a preference, fact, objective or context), optionally as a "
                        "subclass record with typed properties. Use it when the user states something worth "
                        "keeping across conversations. A conflict_pending error means it would replace "
                        "existing memories: ask the user, then retry with conflict_resolution and conflict_id.",
         "parameters": remember_params},
        {"name": "search",
         "description": "Search memories that are not preloaded (Medium and Low importance by default). "
                        "Critical and High memories are already in your context.",
         "parameters": search_params},
        {"name": "supersede",
         "description": "Replace a memory you own by a new one (replacement) or an existing one (new_id). "
                        "The old memory stays in the audit trail.",
         "parameters": supersede_params},
        {"name": "get_context",
         "description": "Re-read the preloaded context bundle (Critical/High memories with live statuses).",
         "parameters": context_params},
    ]


def tool_definitions(tenant: Tenant, format: Literal["openai", "anthropic", "both"] = "openai") -> Any:
    """Tool definitions for an LLM API, generated from the tenant's catalogue.

    :param format: ``"openai"`` -> ``[{"type": "function", "function": {"name",
        "description", "parameters"}}]``; ``"anthropic"`` -> ``[{"name", "description",
        "input_schema"}]``; ``"both"`` -> ``{"openai": [...], "anthropic": [...]}``.
    :raises InvalidInput: for another format.
    """
    if format not in ("openai", "anthropic", "both"):
        raise InvalidInput(f"format: expected 'openai', 'anthropic' or 'both', got {format!r}", field="format")
    tools = tool_schemas(tenant_catalogue(tenant))
    openai = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                 "parameters": t["parameters"]}} for t in tools]
    anthropic = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                 for t in tools]
    if format == "openai":
        return openai
    if format == "anthropic":
        return anthropic
    return {"openai": openai, "anthropic": anthropic}


def tenant_catalogue(tenant: Tenant) -> Catalogue:
    """The catalogue of the tenant's own SCHEMA graph (shipped + its modules); the parsed
    schema is shared by tenants with the same schema content."""
    return tenant.memory.schema.catalogue()


# ---------------------------------------------------------------------------------------
# the handler
# ---------------------------------------------------------------------------------------


def _err(type_: str, message: str, field: str | None = None, constraint: str | None = None,
         **extra: Any) -> dict[str, Any]:
    return {"ok": False, "error": {"type": type_, "field": field, "constraint": constraint, "message": message,
                                   **extra}}


def _json(v: Any) -> Any:
    """JSON-safe copy: datetimes as ISO 8601; a ``Decimal`` (xsd:decimal: amounts, target
    values, utilisation) as the string of its exact lexical form (``"40000"``,
    ``"12345678901234.123456789012345678"``), as the HTTP API gives it: a JSON number
    would be read back as a binary float and lose digits."""
    if isinstance(v, dict):
        return {str(k): _json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_json(x) for x in v]
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, Decimal):
        return decimal_text(v)
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


DECIMAL_PATTERN = r"^[ \t\r\n]*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[ \t\r\n]*$"
"""The lexical space of ``xsd:decimal`` (XML Schema 1.1 Part 2 §3.3.3): ASCII digits,
no exponent, no ``NaN``/``INF`` (``"1e3"`` is not a decimal), with the white space its
``collapse`` facet takes off (space, tab, CR, LF) around it; the same rule as
:func:`reckon.store.terms.decimal_literal`, which every other entry point goes through.
(A JSON Schema ``$`` also matches before a final newline; a newline is white space
here anyway.)"""
_DECIMAL_TEXT = re.compile(DECIMAL_PATTERN[1:-1])


def _numeric(t: Any) -> bool:
    """Whether a JSON Schema ``"type"`` (a name or a list of names) admits numbers."""
    names = t if isinstance(t, list) else [t]
    return any(n in ("integer", "number") for n in names)


def _as_number(v: Any) -> Any:
    """A decimal string (``"12345678901234.123456789012345678"``) as the ``Decimal`` it
    spells, for the bounds checks; anything else unchanged."""
    if isinstance(v, str) and _DECIMAL_TEXT.fullmatch(v):
        return Decimal(v.strip(" \t\r\n"))
    return v


@functools.lru_cache(maxsize=1)
def _exact_validator(jsonschema: Any) -> Any:
    """Draft 2020-12 where a ``"number"`` is a JSON number or a decimal string: an
    xsd:decimal keeps every digit only as text through clients that parse JSON numbers
    as binary floats (MCP), so the tools take both (the tool schemas say so)."""
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "number", lambda chk, v: base.TYPE_CHECKER.is_type(v, "number")
        or (isinstance(v, str) and _DECIMAL_TEXT.fullmatch(v) is not None))

    def bound(name: str) -> Any:
        original = base.VALIDATORS[name]
        return lambda validator, limit, instance, schema: original(validator, limit, _as_number(instance), schema)

    return jsonschema.validators.extend(
        base, {n: bound(n) for n in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")},
        type_checker=checker)


def _fold_enums(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with every string that an ``"enum"`` of ``schema`` lists in another case
    (``"monthly"`` for ``"Monthly"``) spelled as listed, as the Python API and the CLI
    take an individual's local name in any case; a string matching no entry, or two
    entries, is left for the schema check to refuse. Follows ``properties``, ``items``
    and the ``oneOf`` variant whose ``name`` constant the value names (the subclass)."""
    if isinstance(value, str) and isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        same = [e for e in schema["enum"] if isinstance(e, str) and e.casefold() == value.casefold()]
        return same[0] if len(same) == 1 else value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_fold_enums(schema["items"], v) for v in value]
    if not isinstance(value, dict):
        return value
    for variant in schema.get("oneOf") or ():
        const = ((variant.get("properties") or {}).get("name") or {}).get("const")
        if const is not None and const == value.get("name"):
            schema = variant
            break
    props = schema.get("properties")
    if not isinstance(props, dict):
        return value
    return {k: _fold_enums(props[k], v) if isinstance(props.get(k), dict) else v for k, v in value.items()}


def _validate(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any] | None:
    """JSON Schema check with ``jsonschema`` when installed (the service validates again)."""
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - optional
        return None
    validator = _exact_validator(jsonschema)(schema)
    errors = sorted(validator.iter_errors(args), key=lambda e: (len(list(e.absolute_path)), str(e.absolute_path)))
    if not errors:
        return None
    e = errors[0]
    best = jsonschema.exceptions.best_match(errors) or e
    e = best
    path = ".".join(str(p) for p in e.absolute_path)
    if e.validator == "required":
        missing = e.message.split("'")[1] if "'" in e.message else None
        path = ".".join(x for x in (path, missing) if x)
    elif e.validator == "additionalProperties":
        extra = e.message.split("'")[1] if "'" in e.message else None
        path = ".".join(x for x in (path, extra) if x)
    if e.validator == "oneOf" and path.endswith("subclass"):
        return _subclass_error(e, args)
    return _err("invalid_input", f"{path or 'arguments'}: {e.message}", field=path or None,
                constraint=str(e.validator))


def _subclass_error(e: Any, args: dict[str, Any]) -> dict[str, Any]:
    """A precise error for the subclass union: unknown name, or the branch's own error."""
    sub = args.get("subclass")
    if isinstance(sub, dict):
        name = sub.get("name")
        for branch_schema in e.schema.get("oneOf", []):
            if branch_schema["properties"]["name"].get("const") == name:
                import jsonschema

                errs = list(jsonschema.Draft202012Validator(branch_schema).iter_errors(sub))
                if errs:
                    b = jsonschema.exceptions.best_match(errs)
                    path = ".".join(str(p) for p in b.absolute_path)
                    if b.validator in ("required", "additionalProperties") and "'" in b.message:
                        path = ".".join(x for x in (path, b.message.split("'")[1]) if x)
                    return _err("invalid_input", f"subclass.{path}: {b.message}", field=f"subclass.{path}",
                                constraint=str(b.validator))
        names = [b["properties"]["name"].get("const") for b in e.schema.get("oneOf", [])]
        return _err("invalid_input", f"subclass.name: unknown memory class {name!r}; known: {', '.join(names)}",
                    field="subclass.name", constraint="enum")
    return _err("invalid_input", "subclass: an object {\"name\": <class>, \"properties\": {...}} is required",
                field="subclass", constraint="type")


def _memory_args(a: dict[str, Any]) -> dict[str, Any]:
    """Tool arguments -> ``Tenant.remember`` fields (source is the agent tool)."""
    out = {k: v for k, v in a.items() if k not in ("subclass", "supersedes", "conflict_resolution", "conflict_id")}
    sub = a.get("subclass")
    if isinstance(sub, dict):
        out["subclass"] = sub.get("name")
        out["properties"] = dict(sub.get("properties") or {})
    elif isinstance(sub, str):  # lenient flat form: subclass name + properties
        out["subclass"] = sub
    if "properties" in a and not isinstance(sub, dict):
        out["properties"] = a["properties"]
    out.setdefault("source", "agent_tool")
    return out


def _memory_json(m: Any) -> dict[str, Any]:
    return _json(m.model_dump())  # type: ignore[no-any-return]


def handle_tool_call(tenant: Tenant, name: str, arguments: dict[str, Any] | str | None,
                     principal: Principal) -> dict[str, Any]:
    """Validate and execute one tool call; never raises for bad input.

    :param name: ``remember`` | ``search`` | ``supersede`` | ``get_context``.
    :param arguments: the model's arguments, a dict or a JSON string.
    :param principal: who the agent acts for.
    :returns: ``{"ok": True, ...result}`` (JSON-serialisable) or ``{"ok": False, "error":
        {"type", "field", "constraint", "message", ...}}`` with ``type`` one of
        ``invalid_json``, ``unknown_tool``, ``invalid_input``, ``shape_violation``
        (+ ``violations``), ``not_authorized``, ``conflict_pending`` (+ ``conflict_id``,
        ``candidates``), ``unknown_memory``, ``restore_refused``, ``error``.
    """
    if not isinstance(principal, Principal):
        return _err("invalid_input", "principal: a reckon Principal is required", field="principal",
                    constraint="type")
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = strict_json.loads(arguments or "{}", what="arguments")
        except InvalidJSON as exc:
            return _err("invalid_json", str(exc), field="arguments", constraint=exc.constraint)
    else:
        try:
            strict_json.check(arguments, "arguments")
        except InvalidJSON as exc:
            return _err("invalid_json", str(exc), field=exc.field, constraint=exc.constraint)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return _err("invalid_input", "arguments must be a JSON object", constraint="type")
    if name not in TOOL_NAMES:
        return _err("unknown_tool", f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}", field="name",
                    constraint="enum")
    try:
        tools = {t["name"]: t for t in tool_schemas(tenant_catalogue(tenant))}
        arguments = cast("dict[str, Any]", _fold_enums(tools[name]["parameters"], arguments))
        bad = _validate(tools[name]["parameters"], arguments)
        if bad is not None:
            return bad
        return _execute(tenant, name, arguments, principal)
    except ConflictPending as exc:
        return _err("conflict_pending", f"{exc} Ask the user, then call remember again with "
                    f"conflict_resolution 'replace' or 'keep_both' and this conflict_id.",
                    field="conflict_resolution", constraint="confirmation", conflict_id=exc.conflict_id,
                    candidates=list(exc.candidates))
    except ShapeViolation as exc:
        vs = [_json(v) for v in exc.violations]
        first = vs[0] if vs else {}
        constraint = first.get("constraint")
        field = first.get("field") or first.get("path")
        if field and name == "remember" and not str(field).startswith(("subclass", "properties")) and \
                str(field) not in tools["remember"]["parameters"]["properties"]:
            field = f"subclass.properties.{field}"
        return _err("shape_violation", str(exc), field=field, constraint=constraint, violations=vs)
    except UnknownTeam as exc:
        return _err("unknown_team", str(exc), field=exc.field, constraint="exists", teams=list(exc.teams),
                    known=list(exc.known))
    except InvalidInput as exc:
        field = exc.field
        if field and field.startswith("properties.") and name in ("remember", "supersede"):
            field = "subclass." + field
        return _err("invalid_input", str(exc), field=field, constraint="value")
    except NotAuthorized as exc:
        return _err("not_authorized", str(exc), constraint="authorization")
    except UnknownMemory as exc:
        return _err("unknown_memory", str(exc), field="old_id" if name == "supersede" else None,
                    constraint="exists")
    except RestoreRefused as exc:
        return _err("restore_refused", str(exc))
    except ReckonError as exc:
        return _err("error", f"{type(exc).__name__}: {exc}")


def _execute(tenant: Tenant, name: str, a: dict[str, Any], principal: Principal) -> dict[str, Any]:
    if name == "remember":
        fields = _memory_args(a)
        m = tenant.remember(principal=principal, supersedes=a.get("supersedes") or None,
                            conflict_resolution=a.get("conflict_resolution"), conflict_id=a.get("conflict_id"),
                            **fields)
        return {"ok": True, "memory": _memory_json(m)}
    if name == "search":
        imp = a.get("importance")
        hits = tenant.search(a["query"], principal=principal, k=a.get("k", 10), kinds=a.get("kinds"),
                             scopes=a.get("scopes"), subclasses=a.get("subclasses"),
                             importance=sorted(set(imp)) if imp else (2, 3), expand=a.get("expand"))
        return {"ok": True, "hits": [
            {"id": h.memory.id, "score": h.score, "label": h.memory.label, "content": h.memory.content,
             "kind": h.memory.kind, "scope": h.memory.scope, "importance": h.memory.importance,
             "subclass": h.memory.subclass, "properties": _json(h.memory.properties),
             "status": _json(h.memory.status),
             **({"document": h.document, "citation": h.citation} if h.citation else {}),
             **({"expanded_from": h.expanded_from, "via": h.via} if h.expanded_from else {})} for h in hits]}
    if name == "supersede":
        if ("new_id" in a) == ("replacement" in a):
            return _err("invalid_input", "supersede: give exactly one of new_id or replacement",
                        field="replacement", constraint="oneOf")
        new: Any = a["new_id"] if "new_id" in a else _memory_args(a["replacement"])
        m = tenant.supersede(a["old_id"], new, principal=principal)
        return {"ok": True, "memory": _memory_json(m), "superseded": a["old_id"]}
    # get_context
    b = tenant.context(principal, conversation=a.get("conversation", ""), budget_chars=a.get("budget_chars"),
                       budget_tokens=a.get("budget_tokens"), project=a.get("project"),
                       conversation_id=a.get("conversation_id"))
    return {"ok": True, "text": b.render(), "ids": b.ids(), "omitted": dict(b.omitted),
            "omitted_total": b.omitted_total, "capped": dict(b.capped),
            "conflicts": [_json(c.model_dump()) for c in b.conflicts], "ranking": b.ranking,
            "ledger": b.ledger.model_dump(mode="json") if b.ledger is not None else None}
