"""Transcript tools for agent hosts: ``record_turn`` (post-turn persistence, seed 002)
and ``search_turns`` (what was said), as JSON Schema tool definitions and a handler that
never raises for bad input. The MCP server lists them beside the memory tools; they are
not in :func:`reckon.api._tools.tool_definitions` (the host records turns, not the model).
"""

from __future__ import annotations

import json
from typing import Any

from reckon import _json as strict_json
from reckon._errors import InvalidInput, NotAuthorized, ReckonError, ShapeViolation
from reckon._json import InvalidJSON
from reckon.memory.models import Principal
from reckon.store.terms import parse_datetime_text
from reckon.transcripts.models import ROLES

__all__ = ["TURN_TOOL_NAMES", "handle_turn_tool", "turn_tool_schemas"]

TURN_TOOL_NAMES: tuple[str, ...] = ("record_turn", "search_turns")


def turn_tool_schemas() -> list[dict[str, Any]]:
    """``[{"name", "description", "input_schema"}]`` of the transcript tools."""
    return [
        {
            "name": "record_turn",
            "description": "Store one turn of the conversation (after the reply; never blocks it). Tool and web "
                           "output may be stored too (role tool / web): it is searchable but never turned into "
                           "memories. Recording the same turn twice is a no-op.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "conversation": {"type": "string", "minLength": 1, "maxLength": 200,
                                     "description": "The conversation (thread) id."},
                    "text": {"type": "string", "maxLength": 100000, "description": "What was said, verbatim."},
                    "role": {"type": "string", "enum": list(ROLES), "description": "Who produced the turn."},
                    "speaker": {"type": "string", "minLength": 1, "maxLength": 200,
                                "description": "Person id (role user: you) or agent id (role assistant)."},
                    "at": {"type": "string", "format": "date-time", "description": "When (ISO 8601)."},
                    "external_id": {"type": "string", "minLength": 1, "maxLength": 500,
                                    "description": "The message id in the host (re-sending it is a no-op)."},
                },
                "required": ["conversation", "text"],
                "additionalProperties": False,
            },
        },
        {
            "name": "search_turns",
            "description": "Search what was said in past conversations you took part in (hybrid keyword + "
                           "semantic search over turns).",
            "input_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1},
                    "k": {"type": "integer", "minimum": 1, "maximum": 100},
                    "conversations": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    ]


def _err(type_: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"ok": False, "error": {"type": type_, "field": field, "message": message}}


def handle_turn_tool(tenant: Any, name: str, arguments: Any, principal: Principal) -> dict[str, Any]:
    """Run ``record_turn`` / ``search_turns``; returns ``{"ok": True, ...}`` or
    ``{"ok": False, "error": {"type", "field", "message"}}``."""
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = strict_json.loads(arguments or "{}", what="arguments")
        except InvalidJSON as exc:
            return _err("invalid_json", str(exc), field="arguments")
    else:
        try:
            strict_json.check(arguments, "arguments")
        except InvalidJSON as exc:
            return _err("invalid_json", str(exc), field=exc.field)
    if not isinstance(arguments, dict):
        return _err("invalid_input", "arguments must be a JSON object")
    try:
        if name == "record_turn":
            allowed = {"conversation", "text", "role", "speaker", "at", "external_id"}
            extra = sorted(set(arguments) - allowed)
            if extra:
                raise InvalidInput(f"{extra[0]}: unknown argument", field=extra[0])
            a = dict(arguments)
            if isinstance(a.get("at"), str):
                try:
                    a["at"] = parse_datetime_text(a["at"])
                except ValueError as exc:
                    raise InvalidInput(f"at: not an ISO 8601 date-time kept to the microsecond: {a['at']!r} ({exc})",
                                       field="at") from None
            turn = tenant.record_turns([a], principal=principal)[0]
            return {"ok": True, "turn": json.loads(turn.model_dump_json())}
        if name == "search_turns":
            q = arguments.get("query")
            hits = tenant.search_turns(q, principal=principal, k=int(arguments.get("k", 10)),
                                       conversations=arguments.get("conversations"))
            return {"ok": True, "hits": [{"score": h.score, "turn": json.loads(h.turn.model_dump_json())}
                                         for h in hits]}
        return _err("unknown_tool", f"unknown tool {name!r}; transcript tools: {', '.join(TURN_TOOL_NAMES)}")
    except ShapeViolation as exc:
        return _err("shape_violation", str(exc))
    except InvalidInput as exc:
        return _err("invalid_input", str(exc), exc.field)
    except NotAuthorized as exc:
        return _err("not_authorized", str(exc))
    except ReckonError as exc:
        return _err("error", f"{type(exc).__name__}: {exc}")
