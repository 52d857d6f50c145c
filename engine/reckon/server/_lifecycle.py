"""REST routes of lifecycle maintenance, feedback and knowledge indexing (issue 15 items 5
and 7), registered on the app of :mod:`reckon.server.http`:

=====================================================  ===================================
``POST /tenants/{id}/maintenance[?dry_run=true]``      run lifecycle maintenance (operator):
                                                       the :class:`~reckon.lifecycle.MaintenanceReport`
``POST /tenants/{id}/memories/{mid}/feedback``         ``{"vote": 1 | -1}``: the net feedback
``GET /tenants/{id}/memories/{mid}/usage``             access count, net feedback, last access
``POST /tenants/{id}/documents``                       ``{"text", "location", "title"?, "scope"?,
                                                       "importance"?}``: index a document
                                                       (:mod:`reckon.knowledge`); 201, or 200 when
                                                       it was indexed already
=====================================================  ===================================
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import Depends, FastAPI, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from reckon._errors import NotAuthorized

__all__ = ["register"]


class DocumentBody(BaseModel):
    """A document to index: its text and a location naming it."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=5_000_000)
    location: str = Field(min_length=1, max_length=2000)
    title: str | None = Field(None, min_length=1, max_length=400)
    scope: Literal["user", "team", "company"] = "user"
    importance: int = Field(3, ge=2, le=5)


class FeedbackBody(BaseModel):
    """A rating of a memory: +1 (it helped) or -1 (it did not)."""

    model_config = ConfigDict(extra="forbid")

    vote: Literal[1, -1]


def register(app: FastAPI, ctx: Any, errors: dict[Any, Any], api_error: Any) -> None:
    """Add the routes above to ``app``; ``ctx`` is the app's authenticated-tenant dependency."""

    @app.post("/tenants/{tenant_id}/maintenance", summary="Run lifecycle maintenance (operator)",
              tags=["lifecycle"], responses=errors)
    def maintenance(dry_run: bool = Query(False, description="Report only; write nothing."),
                    c: Any = Depends(ctx)) -> Any:
        if not c.principal.is_operator:
            raise NotAuthorized(f"{c.principal.person!r} may not run maintenance: operators only")
        return c.tenant.maintain(dry_run=dry_run).model_dump(mode="json")

    @app.post("/tenants/{tenant_id}/documents", summary="Index a document (chunks as searchable memories)",
              tags=["knowledge"], status_code=201, responses=errors)
    def index_document(body: DocumentBody, c: Any = Depends(ctx)) -> Any:
        d = c.tenant.index_document(body.text, principal=c.principal, location=body.location, title=body.title,
                                    scope=body.scope, importance=body.importance)
        return JSONResponse(d.to_dict(), status_code=201 if d.written else 200)

    @app.post("/tenants/{tenant_id}/memories/{memory_id}/feedback", summary="Rate a memory (+1 / -1)",
              tags=["lifecycle"], responses=errors)
    def feedback(memory_id: str, body: FeedbackBody, c: Any = Depends(ctx)) -> Any:
        return {"id": memory_id, "feedback": c.tenant.feedback(memory_id, body.vote, principal=c.principal)}

    @app.get("/tenants/{tenant_id}/memories/{memory_id}/usage", summary="Access and feedback counts of a memory",
             tags=["lifecycle"], responses=errors)
    def usage(memory_id: str, c: Any = Depends(ctx)) -> Any:
        return {"id": memory_id, **c.tenant.usage(memory_id, principal=c.principal)}
