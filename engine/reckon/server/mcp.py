"""The MCP server (Model Context Protocol, ``mcp`` SDK 2.x low-level ``Server``, stdio).

One server process serves one tenant as one principal (``reckon mcp --tenant T --as
PERSON [--member-of TEAM] [--operator]``): the agent host launches it per user.

Tools are the agent tools of :meth:`reckon.api.Tenant.tool_definitions`
(``remember``, ``search``, ``supersede``, ``get_context``) plus the transcript tools of
:mod:`reckon.api._turn_tools` (``record_turn``, ``search_turns``: post-turn persistence
for the host) and the neighbour tools of :mod:`reckon.api._neighbour_tools` (``NEIGHBOUR_TOOL_NAMES``: the
keyed notes ``note_*``, the event graph ``event_record`` / ``graph_*``, ``experience_*``,
``memory_feedback``, ``document_index``), the memory tools' input schemas read from
the tenant's schema catalogue on every ``tools/list`` -- a memory subclass added in
Turtle appears with no code change. Every ``tools/call`` goes through
:meth:`reckon.api.Tenant.handle_tool_call` (or the transcript / neighbour handler; an
unknown name is refused naming every tool served): the result is the handler's JSON dict, as
``structuredContent`` and as one text block; a refused call (bad field, shape violation,
conflict pending, not authorized ...) comes back as a tool result with ``isError:
true`` and the error object (type, field, constraint, message) the model can correct
-- never as a protocol error.

**Resources** (``resources/list``, ``resources/templates/list``, ``resources/read``), all
read as the server's principal under the API's read policy
(:func:`reckon.memory.authz.can_read`):

* ``reckon://<tenant>/bundle`` — the context bundle (``text/markdown``), exactly the text
  ``get_context`` returns; ``reckon://<tenant>/bundle?conversation=...`` orders items by
  that conversation (template ``reckon://<tenant>/bundle{?conversation}``);
* ``reckon://<tenant>/memories/<id>`` — one memory with its derived statuses
  (``application/json``; template ``reckon://<tenant>/memories/{id}``); a memory the
  principal may not see is "not found" exactly like an absent one;
* ``reckon://<tenant>/ontology`` — the tenant's schema graph (ontology and SHACL shapes)
  as Turtle.

An unknown resource is a JSON-RPC error ``-32602`` (invalid params) naming the URI.

**Prompts** (``prompts/list``, ``prompts/get``): ``start_conversation`` (optional
argument ``message``: the user's first message) returns the bundle as an embedded
resource followed by the instructions for using the memory tools, the message the host
sends first in a new conversation.

Nothing but JSON-RPC may go to stdout on the stdio transport: logging goes to stderr.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

__all__ = ["PROMPTS", "build_server", "resource_uris", "run_stdio"]

#: Prompt names served (``prompts/list``).
PROMPTS: tuple[str, ...] = ("start_conversation",)

_INSTRUCTIONS = (
    "The memory context above is this user's typed, rule-derived memory: the active Critical and High "
    "memories they may use (its last line says what the budget or the live-context cap left out), with live "
    "statuses (a budget near its cap, a target below) derived from current "
    "business data. Treat it as binding and cite items by their [id]. Before acting on a preference, fact "
    "or detail not shown, call the `search` tool (Medium and Low memories are not preloaded). When the user "
    "states something worth keeping, call `remember`; when something changed, `supersede` the old memory. "
    "A refused tool call comes back with the field and constraint to correct."
)


def resource_uris(tenant_id: str) -> dict[str, str]:
    """The resource URIs and templates of a tenant: ``bundle``, ``bundle_template``,
    ``memory_template``, ``ontology``."""
    base = f"reckon://{tenant_id}"
    return {"bundle": f"{base}/bundle", "bundle_template": f"{base}/bundle{{?conversation}}",
            "memory_template": f"{base}/memories/{{id}}", "ontology": f"{base}/ontology"}


def build_server(tenant: Any, principal: Any, *, name: str = "reckon", wall_clock: bool = True) -> Any:
    """A low-level ``mcp.server.Server`` exposing ``tenant``'s agent tools, acting as
    ``principal`` (a :class:`reckon.api.Principal`). With ``wall_clock`` each tool call
    first moves the tenant's in-graph clock forward to the wall clock when it is more
    than a minute behind (``Tenant.advance_clock``).

    Tool calls run in a worker thread (the store and reasoner are synchronous).
    """
    try:
        import mcp_types as types
        from mcp.server import Server
    except ImportError as exc:  # mcp 1.x has another server API
        raise ImportError(f"reckon's MCP server needs the mcp SDK 2.x (pip install 'mcp>=2.3,<3'): {exc}") from exc

    from reckon.api._neighbour_tools import NEIGHBOUR_TOOL_NAMES, handle_neighbour_tool, neighbour_tool_schemas
    from reckon.api._tools import TOOL_NAMES
    from reckon.api._turn_tools import TURN_TOOL_NAMES, handle_turn_tool, turn_tool_schemas

    def _tools() -> list[Any]:
        defs = tenant.tool_definitions(format="anthropic") + turn_tool_schemas() + neighbour_tool_schemas()
        return [types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
                for d in defs]

    def _call(name: str, args: Any) -> dict[str, Any]:
        if name in TURN_TOOL_NAMES:
            return handle_turn_tool(tenant, name, args, principal)
        if name in NEIGHBOUR_TOOL_NAMES:
            return handle_neighbour_tool(tenant, name, args, principal)
        if name not in TOOL_NAMES:  # name every tool this server serves, not only the memory tools
            served = ", ".join((*TOOL_NAMES, *TURN_TOOL_NAMES, *NEIGHBOUR_TOOL_NAMES))
            return {"ok": False, "error": {"type": "unknown_tool", "field": "name", "constraint": "enum",
                                           "message": f"unknown tool {name!r}; tools: {served}"}}
        return tenant.handle_tool_call(name, args, principal)  # type: ignore[no-any-return]

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        tools = await anyio.to_thread.run_sync(_tools)
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        args = params.arguments if params.arguments is not None else {}
        def call() -> dict[str, Any]:
            if wall_clock:
                tenant.advance_clock()  # expiry judged against the present
            return _call(params.name, args)

        result: dict[str, Any] = await anyio.to_thread.run_sync(call)
        text = json.dumps(result, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=json.loads(text),
            is_error=not result.get("ok", False),
        )

    uris = resource_uris(tenant.id)

    def _not_found(message: str) -> Exception:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS

        return MCPError(INVALID_PARAMS, message)

    async def on_list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(resources=[
            types.Resource(name="bundle", title="Context bundle", uri=uris["bundle"], mime_type="text/markdown",
                           description=f"The memory context a new conversation of {principal.person!r} starts "
                                       "with: active Critical and High memories with their derived statuses."),
            types.Resource(name="ontology", title="Ontology and shapes", uri=uris["ontology"],
                           mime_type="text/turtle",
                           description="The tenant's schema graph: memory classes, properties and SHACL shapes."),
        ])

    async def on_list_resource_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(name="bundle-for-conversation", title="Context bundle for a conversation",
                                   uri_template=uris["bundle_template"], mime_type="text/markdown",
                                   description="The bundle with items ordered by similarity to the conversation."),
            types.ResourceTemplate(name="memory", title="A memory", uri_template=uris["memory_template"],
                                   mime_type="application/json",
                                   description="One memory by id (32 hex digits) with its derived statuses."),
        ])

    def _read(uri: str) -> tuple[str, str]:
        from urllib.parse import parse_qs, urlsplit

        from reckon._errors import UnknownMemory

        parts = urlsplit(uri)
        if parts.scheme != "reckon" or parts.netloc != tenant.id:
            raise _not_found(f"unknown resource {uri!r}: this server serves reckon://{tenant.id}/...")
        path, query = parts.path, parse_qs(parts.query)
        if path == "/bundle":
            conversation = (query.get("conversation") or [""])[0]
            return "text/markdown", tenant.context(principal, conversation=conversation).render()
        if path == "/ontology":
            return "text/turtle", _ontology_turtle(tenant)
        if path.startswith("/memories/") and path.count("/") == 2:
            mid = path.rsplit("/", 1)[1]
            try:
                m = tenant.get(mid, principal=principal)  # the read policy: reckon.memory.authz.can_read
            except UnknownMemory as exc:
                raise _not_found(str(exc)) from None
            return "application/json", json.dumps(m.model_dump(mode="json"), ensure_ascii=False, indent=1)
        raise _not_found(f"unknown resource {uri!r}; resources: {uris['bundle']}, {uris['ontology']}, "
                         f"{uris['memory_template']}")

    async def on_read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        mime, text = await anyio.to_thread.run_sync(lambda: _read(uri))
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    async def on_list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[types.Prompt(
            name="start_conversation", title="Start a conversation with memory context",
            description="The context bundle (as an embedded resource) and how to use the memory tools, to send "
                        "first in a new conversation.",
            arguments=[types.PromptArgument(name="message", required=False,
                                            description="The user's first message (orders the bundle's items "
                                                        "by similarity to it).")])])

    async def on_get_prompt(ctx: Any, params: Any) -> Any:
        if params.name != "start_conversation":
            raise _not_found(f"unknown prompt {params.name!r}; prompts: {', '.join(PROMPTS)}")
        message = str((params.arguments or {}).get("message") or "")
        text = await anyio.to_thread.run_sync(lambda: tenant.context(principal, conversation=message).render())
        from urllib.parse import quote

        uri = uris["bundle"] + (f"?conversation={quote(message, safe='')}" if message else "")
        messages = [
            types.PromptMessage(role="user", content=types.EmbeddedResource(
                type="resource", resource=types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text))),
            types.PromptMessage(role="user", content=types.TextContent(
                type="text", text=_INSTRUCTIONS + (f"\n\nThe user's first message:\n{message}" if message else ""))),
        ]
        return types.GetPromptResult(description=f"Memory context of {principal.person!r} in tenant {tenant.id!r}",
                                     messages=messages)

    def _schema(tool_name: str) -> Any:
        for t in _tools():
            if t.name == tool_name:
                return t.input_schema
        return None

    return Server(
        name,
        version=_version(),
        instructions=(f"Typed memory of tenant {tenant.id!r} for {principal.person!r}. Start a conversation with the "
                      "start_conversation prompt or the reckon://" + tenant.id + "/bundle resource (or call "
                      "get_context); remember what the user states that is worth keeping; search for the long "
                      "tail; supersede what changed."),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
        get_tool_input_schema=_schema,
    )


def _ontology_turtle(tenant: Any) -> str:
    """The tenant's SCHEMA graph (ontology + shapes) as Turtle, with the usual prefixes."""
    from pyoxigraph import RdfFormat, Triple, serialize

    from reckon.store import SCHEMA

    triples = sorted((Triple(q.subject, q.predicate, q.object) for q in tenant.store.asserted()
                      if q.graph_name == SCHEMA), key=str)
    from reckon.vocab import PREFIXES as prefixes
    return (serialize(triples, format=RdfFormat.TURTLE, prefixes=prefixes) or b"").decode("utf-8")


def run_stdio(tenant: Any, principal: Any, *, wall_clock: bool = True) -> None:
    """Serve ``tenant`` as ``principal`` over stdio until the client closes stdin
    (``wall_clock``: see :func:`build_server`).

    While serving, the SDK points fd 1 at stderr so stray prints cannot corrupt the
    JSON-RPC stream.
    """
    from mcp.server.stdio import stdio_server

    server = build_server(tenant, principal, wall_clock=wall_clock)

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
