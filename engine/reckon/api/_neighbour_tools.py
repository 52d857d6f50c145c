"""Agent tools of the neighbours' capabilities (issue 15), as JSON Schema tool
definitions and a handler that never raises for bad input (like
:mod:`reckon.api._turn_tools`); the MCP server lists them beside the memory tools.

* ``note_put`` / ``note_get`` / ``note_list`` / ``note_delete``: keyed shared notes for
  coordination between agents (seed 000 Transit: "The tool interface exposed to agents
  maps directly onto the store's read/write/list/delete primitives"); ``note_put`` with
  ``expected_version`` is compare-and-set.
* ``event_record`` / ``graph_related`` / ``graph_impact`` / ``graph_mermaid``: the typed
  event graph (seed 000 MAGMA: "ingest event", "traverse the typed edges"; seed 004
  ``getRelated(entityId, depth)``, impact queries, ``visualize()`` as Mermaid).
* ``experience_record`` / ``experience_recall``: experience records and the strategy
  cards promoted from them (seed 000 Evolving Memory: "Evolve -- distill run outcome
  into a new memory record"; "Search -- embed the incoming task, retrieve top-K").
"""

from __future__ import annotations

from typing import Any

from reckon import _json as strict_json
from reckon._errors import (
    InvalidInput,
    NotAuthorized,
    ReckonError,
    ShapeViolation,
    UnknownMemory,
)
from reckon.memory.models import Principal

__all__ = ["EXPERIENCE_TOOL_NAMES", "GRAPH_TOOL_NAMES", "LIFECYCLE_TOOL_NAMES", "NEIGHBOUR_TOOL_NAMES",
           "NOTE_TOOL_NAMES", "handle_neighbour_tool", "neighbour_tool_schemas"]

NOTE_TOOL_NAMES: tuple[str, ...] = ("note_put", "note_get", "note_list", "note_delete")
GRAPH_TOOL_NAMES: tuple[str, ...] = ("event_record", "graph_related", "graph_impact", "graph_mermaid")
EXPERIENCE_TOOL_NAMES: tuple[str, ...] = ("experience_record", "experience_recall")
LIFECYCLE_TOOL_NAMES: tuple[str, ...] = ("memory_feedback", "document_index")
NEIGHBOUR_TOOL_NAMES: tuple[str, ...] = (NOTE_TOOL_NAMES + GRAPH_TOOL_NAMES + EXPERIENCE_TOOL_NAMES
                                         + LIFECYCLE_TOOL_NAMES)

_KEY = {"type": "string", "minLength": 1, "maxLength": 512,
        "pattern": "^project/[A-Za-z0-9][A-Za-z0-9._-]{0,127}/[A-Za-z0-9][A-Za-z0-9._-]{0,127}/"
                   "[A-Za-z0-9][A-Za-z0-9._-]{0,127}(/[A-Za-z0-9][A-Za-z0-9._-]{0,127})*$",
        "description": "project/<project-id>/<namespace>/<name>"}


_EDGES = ("temporal", "causal", "entity", "episode", "dependency")
_ENTITY = {"type": "object", "properties": {"label": {"type": "string", "minLength": 1, "maxLength": 500},
                                            "type": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,63}$",
                                                     "description": "person, place, organisation, service ..."}},
           "required": ["label", "type"], "additionalProperties": False}
_START = {"node": {"type": "string", "description": "An event id."}, "entity": _ENTITY}


def neighbour_tool_schemas() -> list[dict[str, Any]]:
    """``[{"name", "description", "input_schema"}]`` of the neighbour tools."""
    return [
        {"name": "note_put",
         "description": "Write a shared note under a key other agents know (project/<id>/<namespace>/<name>); the "
                        "latest write wins. With expected_version it is compare-and-set: written only if the key's "
                        "live version is that number (0: nobody holds the key), so agents can claim work safely.",
         "input_schema": {"type": "object", "properties": {
             "key": _KEY, "value": {"description": "Any JSON value."},
             "ttl": {"type": "number", "exclusiveMinimum": 0, "maximum": 315576000,
                     "description": "Seconds until the note expires."},
             "expected_version": {"type": "integer", "minimum": 0}},
             "required": ["key", "value"], "additionalProperties": False}},
        {"name": "note_get",
         "description": "Read a shared note by key (null when the key holds no live note).",
         "input_schema": {"type": "object", "properties": {"key": _KEY}, "required": ["key"],
                          "additionalProperties": False}},
        {"name": "note_list",
         "description": "List the live shared notes whose key starts with prefix (e.g. project/x/findings/).",
         "input_schema": {"type": "object", "properties": {
             "prefix": {"type": "string", "maxLength": 512},
             "limit": {"type": "integer", "minimum": 1, "maximum": 1000}},
             "required": ["prefix"], "additionalProperties": False}},
        {"name": "note_delete",
         "description": "Delete a shared note (only at expected_version when given).",
         "input_schema": {"type": "object", "properties": {"key": _KEY,
                                                           "expected_version": {"type": "integer", "minimum": 1}},
                          "required": ["key"], "additionalProperties": False}},
        {"name": "event_record",
         "description": "Record something that happened (or, with kind episode, a session) on a timeline, with "
                        "its time, the events that caused it and the entities it mentions. Entities are merged by "
                        "label and type, so mention the same person or thing the same way each time.",
         "input_schema": {"type": "object", "properties": {
             "label": {"type": "string", "minLength": 1, "maxLength": 10000, "description": "What happened."},
             "at": {"type": "string", "format": "date-time", "description": "When (ISO 8601 with an offset)."},
             "timeline": {"type": "string", "description": "Conversation or run id (default: default)."},
             "kind": {"type": "string", "enum": ["event", "episode"]},
             "id": {"type": "string", "description": "Its id (default: random)."},
             "episode": {"type": "string", "description": "Id of the episode it belongs to."},
             "caused_by": {"type": "array", "items": {"type": "string"}, "description": "Ids of its causes."},
             "mentions": {"type": "array", "maxItems": 200, "items": _ENTITY}},
             "required": ["label", "at"], "additionalProperties": False}},
        {"name": "graph_related",
         "description": "Events and entities connected to an event (node) or an entity: what came before or "
                        "after (temporal), causes and effects (causal), what mentions the same entities (entity), "
                        "the session (episode), dependencies.",
         "input_schema": {"type": "object", "properties": {**_START,
             "depth": {"type": "integer", "minimum": 1, "maximum": 10},
             "edge_types": {"type": "array", "items": {"type": "string", "enum": list(_EDGES)}}},
             "additionalProperties": False}},
        {"name": "graph_impact",
         "description": "Everything an event or entity affects, transitively (what it caused; what depends on it).",
         "input_schema": {"type": "object", "properties": dict(_START), "additionalProperties": False}},
        {"name": "graph_mermaid",
         "description": "A Mermaid flowchart of the subgraph around an event or entity.",
         "input_schema": {"type": "object", "properties": {**_START,
             "depth": {"type": "integer", "minimum": 1, "maximum": 10},
             "edge_types": {"type": "array", "items": {"type": "string", "enum": list(_EDGES)}}},
             "additionalProperties": False}},
        {"name": "experience_record",
         "description": "After a task: record how it went (outcome, what worked, what failed, tools) and the "
                        "approach you took in a few words. An approach that succeeds often becomes a strategy card "
                        "offered on similar tasks.",
         "input_schema": {"type": "object", "properties": {
             "task": {"type": "string", "minLength": 1, "maxLength": 2000},
             "outcome": {"type": "string", "enum": ["success", "partial", "failure"]},
             "worked": {"type": "string", "maxLength": 4000}, "failed": {"type": "string", "maxLength": 4000},
             "tools": {"type": "array", "maxItems": 50, "items": {"type": "string", "minLength": 1, "maxLength": 200}},
             "strategy": {"type": "string", "maxLength": 2000, "description": "The approach taken."},
             "session": {"type": "string", "maxLength": 200}},
             "required": ["task", "outcome"], "additionalProperties": False}},
        {"name": "experience_recall",
         "description": "Before a task: the strategy cards and past experiences of the most similar tasks.",
         "input_schema": {"type": "object", "properties": {
             "task": {"type": "string", "minLength": 1},
             "k": {"type": "integer", "minimum": 1, "maximum": 100}},
             "required": ["task"], "additionalProperties": False}},
        {"name": "memory_feedback",
         "description": "Rate a memory you used: +1 when it helped, -1 when it was wrong or useless. Search ranks "
                        "well-rated memories higher, and maintenance never evicts them.",
         "input_schema": {"type": "object", "properties": {
             "id": {"type": "string", "pattern": "^[0-9a-f]{32}$", "description": "The memory id."},
             "vote": {"type": "integer", "enum": [1, -1]}},
             "required": ["id", "vote"], "additionalProperties": False}},
        {"name": "document_index",
         "description": "Index a document the user gives you (its text) so that `search` finds its passages later "
                        "and cites them (document and chunk position). Indexing the same text again does nothing.",
         "input_schema": {"type": "object", "properties": {
             "text": {"type": "string", "minLength": 1, "maxLength": 1_000_000},
             "location": {"type": "string", "minLength": 1, "maxLength": 2000,
                          "description": "A file name or URL naming the document."},
             "title": {"type": "string", "minLength": 1, "maxLength": 400}},
             "required": ["text", "location"], "additionalProperties": False}},
    ]


def _err(type_: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"ok": False, "error": {"type": type_, "field": field, "message": message}}


def _args(arguments: Any, name: str) -> dict[str, Any]:
    if isinstance(arguments, (str, bytes)):
        arguments = strict_json.loads(arguments or "{}", what="arguments")
    else:
        strict_json.check(arguments, "arguments")
    if not isinstance(arguments, dict):
        raise InvalidInput("arguments must be a JSON object")
    schema = next(s for s in neighbour_tool_schemas() if s["name"] == name)["input_schema"]
    extra = sorted(set(arguments) - set(schema["properties"]))
    if extra:
        raise InvalidInput(f"{extra[0]}: unknown argument", field=extra[0])
    for r in schema.get("required", []):
        if r not in arguments:
            raise InvalidInput(f"{r}: required", field=r)
    return dict(arguments)


def handle_neighbour_tool(tenant: Any, name: str, arguments: Any, principal: Principal) -> dict[str, Any]:
    """Run one neighbour tool; returns ``{"ok": True, ...}`` or
    ``{"ok": False, "error": {"type", "field", "message"}}`` (a failed compare-and-set is
    ``{"ok": False, "error": {"type": "version_mismatch", ...}, "version": n}``)."""
    if name not in NEIGHBOUR_TOOL_NAMES:
        return _err("unknown_tool", f"unknown tool {name!r}; neighbour tools: {', '.join(NEIGHBOUR_TOOL_NAMES)}")
    try:
        a = _args(arguments, name)
        if name in GRAPH_TOOL_NAMES:
            return _graph_tool(tenant, name, a)
        if name == "document_index":
            d = tenant.index_document(a["text"], principal=principal, location=a["location"], title=a.get("title"))
            return {"ok": True, "document": d.document.id, "key": d.key, "chunks": len(d.chunks), "written": d.written}
        if name == "memory_feedback":
            return {"ok": True, "id": a["id"], "feedback": tenant.feedback(a["id"], a["vote"], principal=principal)}
        if name == "experience_record":
            x = tenant.experience
            task, outcome = a.pop("task"), a.pop("outcome")
            return {"ok": True, "experience": x.record(task, outcome, principal=principal, **a).to_dict()}
        if name == "experience_recall":
            x, k = tenant.experience, a.get("k", 4)
            return {"ok": True, "cards": [h.to_dict() for h in x.recommend(a["task"], k=k)],
                    "experiences": [h.to_dict() for h in x.similar(a["task"], k=k)]}
        notes = tenant.notes
        if name == "note_put":
            if a.get("expected_version") is not None:
                res = notes.cas(a["key"], a["value"], expected_version=a["expected_version"], principal=principal,
                                ttl=a.get("ttl"))
                if not res.ok:
                    out = _err("version_mismatch", f"{a['key']}: live version is {res.version}, not "
                               f"{a['expected_version']}; read it again and retry", "expected_version")
                    out["version"] = res.version
                    return out
                return {"ok": True, "note": res.note.to_dict() if res.note else None}
            return {"ok": True, "note": notes.put(a["key"], a["value"], principal=principal,
                                                  ttl=a.get("ttl")).to_dict()}
        if name == "note_get":
            n = notes.get(a["key"])
            return {"ok": True, "note": n.to_dict() if n else None}
        if name == "note_list":
            return {"ok": True, "notes": [n.to_dict() for n in notes.list(a["prefix"], limit=a.get("limit", 1000))]}
        deleted = notes.delete(a["key"], principal=principal, expected_version=a.get("expected_version"))
        return {"ok": True, "deleted": deleted}
    except InvalidInput as exc:
        return _err("invalid_input", str(exc), exc.field)
    except UnknownMemory as exc:
        return _err("not_found", str(exc))
    except ShapeViolation as exc:
        return _err("shape_violation", str(exc))
    except NotAuthorized as exc:
        return _err("not_authorized", str(exc))
    except ReckonError as exc:
        return _err("error", f"{type(exc).__name__}: {exc}")


def _graph_tool(tenant: Any, name: str, a: dict[str, Any]) -> dict[str, Any]:
    g = tenant.events
    if name == "event_record":
        return {"ok": True, "event": g.record([a])[0].to_dict()}
    if ("node" in a) == ("entity" in a):
        raise InvalidInput("give exactly one of node (an event id) or entity ({label, type})", field="node")
    start = a.get("node") if "node" in a else a["entity"]
    if name == "graph_impact":
        return {"ok": True, "nodes": [x.to_dict() for x in g.impact(start)]}
    if name == "graph_related":
        rel = g.related(start, depth=a.get("depth", 1), edge_types=a.get("edge_types"))
        return {"ok": True, "related": [r.to_dict() for r in rel]}
    return {"ok": True, "mermaid": g.mermaid(start, depth=a.get("depth", 1), edge_types=a.get("edge_types"))}
