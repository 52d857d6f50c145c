"""The MCP server (Model Context Protocol, ``mcp`` SDK 2.x low-level ``Server``, stdio).

One server process serves one tenant as one principal (``reckon mcp --tenant T --as
PERSON [--member-of TEAM] [--operator]``): the agent host launches it per user.

Tools are the agent tools of :meth:`reckon.api.Tenant.tool_definitions`
(``remember``, ``search``, ``supersede``, ``get_context``) plus the transcript tools of
:mod:`reckon.api._turn_tools` (``record_turn``, ``search_turns``: post-turn persistence
for the host), the memory tools' input schemas read from
the tenant's schema catalogue on every ``tools/list`` -- a memory subclass added in
Turtle appears with no code change. Every ``tools/call`` goes through
:meth:`reckon.api.Tenant.handle_tool_call`: the result is the handler's JSON dict, as
``structuredContent`` and as one text block; a refused call (bad field, shape violation,
conflict pending, not authorized ...) comes back as a tool result with ``isError:
true`` and the error object (type, field, constraint, message) the model can correct
-- never as a protocol error.

Nothing but JSON-RPC may go to stdout on the stdio transport: logging goes to stderr.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

__all__ = ["build_server", "run_stdio"]


def build_server(tenant: Any, principal: Any, *, name: str = "reckon") -> Any:
    """A low-level ``mcp.server.Server`` exposing ``tenant``'s agent tools, acting as
    ``principal`` (a :class:`reckon.api.Principal`).

    Tool calls run in a worker thread (the store and reasoner are synchronous).
    """
    try:
        import mcp_types as types
        from mcp.server import Server
    except ImportError as exc:  # mcp 1.x has another server API
        raise ImportError(f"reckon's MCP server needs the mcp SDK 2.x (pip install 'mcp>=2.3,<3'): {exc}") from exc

    from reckon.api._turn_tools import TURN_TOOL_NAMES, handle_turn_tool, turn_tool_schemas

    def _tools() -> list[Any]:
        defs = tenant.tool_definitions(format="anthropic") + turn_tool_schemas()
        return [types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
                for d in defs]

    def _call(name: str, args: Any) -> dict[str, Any]:
        if name in TURN_TOOL_NAMES:
            return handle_turn_tool(tenant, name, args, principal)
        return tenant.handle_tool_call(name, args, principal)  # type: ignore[no-any-return]

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        tools = await anyio.to_thread.run_sync(_tools)
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        args = params.arguments if params.arguments is not None else {}
        result: dict[str, Any] = await anyio.to_thread.run_sync(lambda: _call(params.name, args))
        text = json.dumps(result, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=json.loads(text),
            is_error=not result.get("ok", False),
        )

    def _schema(tool_name: str) -> Any:
        for t in _tools():
            if t.name == tool_name:
                return t.input_schema
        return None

    return Server(
        name,
        version=_version(),
        instructions=(f"Typed memory of tenant {tenant.id!r} for {principal.person!r}. Call get_context at the start "
                      "of a conversation; remember what the user states that is worth keeping; search for the "
                      "long tail; supersede what changed."),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=_schema,
    )


def run_stdio(tenant: Any, principal: Any) -> None:
    """Serve ``tenant`` as ``principal`` over stdio until the client closes stdin.

    While serving, the SDK points fd 1 at stderr so stray prints cannot corrupt the
    JSON-RPC stream.
    """
    from mcp.server.stdio import stdio_server

    server = build_server(tenant, principal)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("reckon")
    except Exception:  # noqa: BLE001
        return "0"
