"""Serving Reckon outside Python: the HTTP server (:func:`create_app`, FastAPI: SPARQL
1.1 Protocol query endpoint and REST routes per tenant), API tokens per tenant
(:class:`TokenStore`, stored hashed) and the MCP server (:func:`build_mcp_server`,
stdio). Run them with ``reckon serve`` and ``reckon mcp``."""

from __future__ import annotations

from typing import Any

from reckon.server.auth import TokenRecord, TokenStore

__all__ = ["TokenRecord", "TokenStore", "build_mcp_server", "create_app"]


def create_app(engine: Any, **kwargs: Any) -> Any:
    """The FastAPI application over ``engine``; see :func:`reckon.server.http.create_app`."""
    from reckon.server.http import create_app as _create

    return _create(engine, **kwargs)


def build_mcp_server(tenant: Any, principal: Any) -> Any:
    """The MCP server of one tenant and principal; see :func:`reckon.server.mcp.build_server`."""
    from reckon.server.mcp import build_server

    return build_server(tenant, principal)
