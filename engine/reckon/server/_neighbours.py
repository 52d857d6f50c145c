"""REST routes of the neighbours' capabilities (issue 15), registered on the HTTP app by
:func:`register`:

=====================================================  ===================================
``PUT /tenants/{id}/notes/{key}``                      write a note (``expected_version``:
                                                       compare-and-set, 409 when it differs)
``GET /tenants/{id}/notes/{key}``                      the live note (404 when none)
``GET /tenants/{id}/notes?prefix=project/x/``          live notes by key prefix
``DELETE /tenants/{id}/notes/{key}``                   delete (404 when no live note)
``GET /tenants/{id}/note-namespaces/{project}``        namespaces with live-note counts
``POST /tenants/{id}/events``                          record events / episodes (all or nothing)
``GET /tenants/{id}/events/{event_id}``                one event
``GET /tenants/{id}/timelines/{timeline}``             a timeline's events by time
``POST /tenants/{id}/entities/dependencies``           entity depends on entity
``GET /tenants/{id}/graph/related``                    typed traversal (``node`` or ``entity``,
                                                       ``depth``, ``edge_type``)
``GET /tenants/{id}/graph/impact``                     the rule-derived impact closure
``GET /tenants/{id}/graph/mermaid``                    a subgraph as a Mermaid flowchart
``POST /tenants/{id}/experiences``                     record an experience (seed 000 Evolving Memory)
``GET /tenants/{id}/experiences/similar?task=``        experiences by task similarity (k = 4)
``GET /tenants/{id}/strategies[?promoted=true]``       strategies and cards (promoted by rule)
``GET /tenants/{id}/strategies/recommend?task=``       strategy cards for a task
=====================================================  ===================================

``entity`` is ``TYPE:LABEL`` (``person:Caroline``); the event graph follows seed 000 MAGMA
and seed 004 Graph Memory.

``{key}`` is the whole key, slashes included (``project/<id>/<namespace>/<name>``; seed
000 Transit). Errors are the app's JSON bodies: a bad key, value or ttl is 422.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["register"]


class NoteBody(BaseModel):
    """A note write: any JSON ``value``; ``ttl`` seconds; ``expected_version`` for compare-and-set."""

    model_config = ConfigDict(extra="forbid")

    value: Any = Field(description="Any JSON value.")
    ttl: float | None = Field(None, gt=0, description="Seconds until the note expires (in-graph clock).")
    expected_version: int | None = Field(None, ge=0, description="Compare-and-set: the live version to replace "
                                                                 "(0: only if the key holds no live note).")


class EventsBody(BaseModel):
    """``{"events": [...]}``: event dicts as ``EventGraph.record`` takes them."""

    model_config = ConfigDict(extra="forbid")

    events: list[dict[str, Any]] = Field(max_length=5000)


class DependencyBody(BaseModel):
    """``entity`` depends on ``depends_on`` (each ``{"label", "type"}`` or ``"type:label"``)."""

    model_config = ConfigDict(extra="forbid")

    entity: Any
    depends_on: Any


class ExperienceBody(BaseModel):
    """An experience record (``ExperienceService.record``)."""

    model_config = ConfigDict(extra="forbid")

    task: str
    outcome: str = Field(description="success, partial or failure")
    worked: str | None = None
    failed: str | None = None
    tools: list[str] = Field(default_factory=list, max_length=50)
    strategy: str | None = Field(None, description="The approach taken, in words.")
    session: str | None = None


def _start(node: str | None, entity: str | None, api_error: Any) -> Any:
    if (node is None) == (entity is None):
        raise api_error(422, "invalid_input", "give exactly one of node (an event id) or entity (TYPE:LABEL)",
                        field="node")
    if entity is not None:
        type_, sep, label = entity.partition(":")
        if not sep:
            raise api_error(422, "invalid_input", "entity: TYPE:LABEL, e.g. person:Caroline", field="entity")
        return (label, type_)
    return node


def register(app: FastAPI, ctx: Any, errors: dict[Any, Any], api_error: Any) -> None:
    """Add the routes above to ``app``; ``ctx`` is the app's authenticated-tenant dependency."""

    @app.put("/tenants/{tenant_id}/notes/{key:path}", summary="Write a keyed note (compare-and-set with "
             "expected_version)", tags=["notes"], responses={409: {"description": "expected_version differs"},
                                                             **errors})
    def put_note(key: str, body: NoteBody, c: Any = Depends(ctx)) -> Any:
        notes = c.tenant.notes
        if body.expected_version is not None:
            res = notes.cas(key, body.value, expected_version=body.expected_version, principal=c.principal,
                            ttl=body.ttl)
            return JSONResponse(res.to_dict(), status_code=200 if res.ok else 409)
        return notes.put(key, body.value, principal=c.principal, ttl=body.ttl).to_dict()

    @app.get("/tenants/{tenant_id}/notes/{key:path}", summary="Read a live note", tags=["notes"],
             responses=errors)
    def get_note(key: str, c: Any = Depends(ctx)) -> Any:
        n = c.tenant.notes.get(key)
        if n is None:
            raise api_error(404, "unknown_note", f"no live note {key!r} in tenant {c.tenant.id!r}", field="key")
        return n.to_dict()

    @app.get("/tenants/{tenant_id}/notes", summary="Live notes by key prefix", tags=["notes"], responses=errors)
    def list_notes(prefix: str = Query("project/", max_length=512), limit: int = Query(1000, ge=1, le=1000),
                   c: Any = Depends(ctx)) -> Any:
        return [n.to_dict() for n in c.tenant.notes.list(prefix, limit=limit)]

    @app.delete("/tenants/{tenant_id}/notes/{key:path}", summary="Delete a live note", tags=["notes"],
                status_code=204, response_class=Response, responses=errors)
    def delete_note(key: str, expected_version: int | None = Query(None, ge=1), c: Any = Depends(ctx)) -> Response:
        if not c.tenant.notes.delete(key, principal=c.principal, expected_version=expected_version):
            raise api_error(404, "unknown_note", f"no live note {key!r} (at that version) in tenant "
                            f"{c.tenant.id!r}", field="key")
        return Response(status_code=204)

    @app.get("/tenants/{tenant_id}/note-namespaces/{project}", summary="Namespaces of a project",
             tags=["notes"], responses=errors)
    def note_namespaces(project: str, c: Any = Depends(ctx)) -> Any:
        return [n.to_dict() for n in c.tenant.notes.namespaces(project)]

    # ------------------------------------------------------------------ the event graph
    @app.post("/tenants/{tenant_id}/events", summary="Record events and episodes", tags=["events"],
              status_code=201, responses=errors)
    def record_events(body: EventsBody, c: Any = Depends(ctx)) -> Any:
        return {"events": [e.to_dict() for e in c.tenant.events.record(body.events)]}

    @app.get("/tenants/{tenant_id}/events/{event_id}", summary="One event", tags=["events"], responses=errors)
    def get_event(event_id: str, c: Any = Depends(ctx)) -> Any:
        return c.tenant.events.get(event_id).to_dict()

    @app.get("/tenants/{tenant_id}/timelines/{timeline}", summary="A timeline's events by time", tags=["events"],
             responses=errors)
    def get_timeline(timeline: str, c: Any = Depends(ctx)) -> Any:
        return [e.to_dict() for e in c.tenant.events.timeline(timeline)]

    @app.post("/tenants/{tenant_id}/entities/dependencies", summary="An entity depends on an entity",
              tags=["events"], status_code=201, responses=errors)
    def add_dependency(body: DependencyBody, c: Any = Depends(ctx)) -> Any:
        return c.tenant.events.add_dependency(body.entity, body.depends_on).to_dict()

    @app.get("/tenants/{tenant_id}/graph/related", summary="Typed traversal of the event graph", tags=["events"],
             responses=errors)
    def graph_related(node: str | None = None, entity: str | None = None, depth: int = Query(1, ge=1, le=10),
                      edge_type: list[str] | None = Query(None), c: Any = Depends(ctx)) -> Any:
        start = _start(node, entity, api_error)
        return [r.to_dict() for r in c.tenant.events.related(start, depth=depth, edge_types=edge_type or None)]

    @app.get("/tenants/{tenant_id}/graph/impact", summary="What a node affects, transitively", tags=["events"],
             responses=errors)
    def graph_impact(node: str | None = None, entity: str | None = None, c: Any = Depends(ctx)) -> Any:
        return [x.to_dict() for x in c.tenant.events.impact(_start(node, entity, api_error))]

    @app.get("/tenants/{tenant_id}/graph/mermaid", summary="A subgraph as a Mermaid flowchart", tags=["events"],
             response_class=PlainTextResponse, responses=errors)
    def graph_mermaid(node: str | None = None, entity: str | None = None, depth: int = Query(1, ge=1, le=10),
                      edge_type: list[str] | None = Query(None), c: Any = Depends(ctx)) -> PlainTextResponse:
        start = None if node is None and entity is None else _start(node, entity, api_error)
        text = c.tenant.events.mermaid(start, depth=depth, edge_types=edge_type or None)
        return PlainTextResponse(text, media_type="text/vnd.mermaid; charset=utf-8")

    # ------------------------------------------------------------------ experience
    @app.post("/tenants/{tenant_id}/experiences", summary="Record an experience", tags=["experience"],
              status_code=201, responses=errors)
    def record_experience(body: ExperienceBody, c: Any = Depends(ctx)) -> Any:
        fields = body.model_dump()
        return c.tenant.experience.record(fields.pop("task"), fields.pop("outcome"), principal=c.principal,
                                          **fields).to_dict()

    @app.get("/tenants/{tenant_id}/experiences/similar", summary="Experiences by task similarity",
             tags=["experience"], responses=errors)
    def similar_experiences(task: str = Query(..., min_length=1), k: int = Query(4, ge=1, le=100),
                            c: Any = Depends(ctx)) -> Any:
        return [h.to_dict() for h in c.tenant.experience.similar(task, k=k)]

    @app.get("/tenants/{tenant_id}/strategies", summary="Strategies and strategy cards", tags=["experience"],
             responses=errors)
    def strategies(promoted: bool | None = None, c: Any = Depends(ctx)) -> Any:
        return [s.to_dict() for s in c.tenant.experience.strategies(promoted=promoted)]

    @app.get("/tenants/{tenant_id}/strategies/recommend", summary="Strategy cards for a task", tags=["experience"],
             responses=errors)
    def recommend(task: str = Query(..., min_length=1), k: int = Query(4, ge=1, le=100), c: Any = Depends(ctx)) -> Any:
        return [h.to_dict() for h in c.tenant.experience.recommend(task, k=k)]
