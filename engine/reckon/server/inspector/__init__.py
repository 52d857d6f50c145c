"""The memory inspector: server-rendered pages of one tenant, served by ``reckon serve``.

Pages (GET unless noted; all HTML, Jinja2 templates with autoescaping, no external
resources, no build step: the templates, one stylesheet and one small script ship in the
wheel under ``reckon/server/inspector/``):

==============================  ==============================================================
``/``                           overview: memories by kind and lifecycle state, the clock
``/ui/bundle``                  the context bundle exactly as an agent receives it, for a
                                chosen person (operators) and conversation; ids link to memories
``/ui/lanes``                   memories in lanes by block / kind / scope / importance / state,
                                filters, and search with each hit's score explanation
``/ui/memories/{id}``           properties, derived statuses with their proof trees
                                (``explain``, collapsible), the supersession timeline
``/ui/business``                KPIs, spend records, spend over time (inline SVG), accounts
``/ui/settings``                settings, ontology modules, memory classes, the rule program
``/ui/sparql`` (GET, POST)      read-only SPARQL console, results as a table
``/ui/login`` (GET, POST)       sign in with an API token; ``POST /ui/logout`` signs out
==============================  ==============================================================

**Authentication.** The same API tokens as the REST routes (:mod:`reckon.server.auth`).
A browser presents one once, in the login form (a POST body: never in a URL, which would
be logged); the server verifies it and keeps it in an ``HttpOnly``, ``SameSite=Strict``
cookie (``Secure`` over HTTPS) that scripts cannot read and other sites cannot send. Every
request re-verifies the token, so a revoked token stops working at once. The cookie opens
only the inspector pages, never the REST routes (which take ``Authorization: Bearer``),
so a cross-site form cannot write through it; the inspector itself only reads.

**Read policy.** What a page shows obeys the API's policy: operators see every memory of
the tenant; members company memories, their teams' and their own. A memory the viewer
may not see answers 404 exactly like an absent one, and is redacted wherever it appears
inside something visible (proof trees, lineage). The SPARQL console needs the token's
``sparql`` grant, like the endpoint. Stored text is attacker-controlled: templates
escape every value, and pages are sent with a ``Content-Security-Policy`` that allows
only this server's own stylesheet and script (no inline script, no other origin).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

__all__ = ["COOKIE", "mount"]

COOKIE = "reckon_inspector"
_HERE = Path(__file__).resolve().parent

_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


class _LoginRequired(Exception):
    def __init__(self, next_path: str) -> None:
        self.next_path = next_path


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_HERE / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["num"] = _num
    return env


def _when(value: Any) -> str:
    from datetime import datetime

    if value is None:
        return "—"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    return str(value)


def _num(value: Any) -> str:
    from decimal import Decimal

    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) < 1000 else f"{value:,.2f}"
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return f"{value:,}"
    return "—" if value is None else str(value)


def _safe_next(path: str | None) -> str:
    """Only a local path (``/...``, not ``//host``) may be a post-login destination."""
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path


def mount(app: FastAPI, engine: Any, tokens: Any) -> None:
    """Add the inspector routes and static files to a FastAPI ``app`` serving ``engine``
    with the token store ``tokens``."""
    from starlette.staticfiles import StaticFiles

    from reckon._errors import InvalidInput, ReckonError, UnknownMemory, UnknownTenant
    from reckon.server.auth import TokenError, TokenForbidden, TokenRecord
    from reckon.server.inspector import _views as V

    env = _environment()
    app.mount("/ui/static", StaticFiles(directory=str(_HERE / "static")), name="inspector-static")

    def html(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        base = request.scope.get("root_path", "") or ""
        body = env.get_template(template).render(base=base, path=request.url.path, **ctx)
        return HTMLResponse(body, status_code=status, headers=_SECURITY_HEADERS)

    def session(request: Request) -> TokenRecord | None:
        tok = request.cookies.get(COOKIE)
        if not tok:
            return None
        try:
            return tokens.verify(tokens.tenant_of(tok), tok)  # type: ignore[no-any-return]
        except (TokenError, TokenForbidden, ReckonError):
            return None

    class Ctx:
        def __init__(self, record: TokenRecord) -> None:
            self.record = record
            self.principal = record.principal()
            self.tenant = engine.tenant(record.tenant)

    def require(request: Request) -> Ctx:
        record = session(request)
        if record is None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise _LoginRequired(target)
        try:
            return Ctx(record)
        except UnknownTenant:  # the tenant was deleted while signed in
            raise _LoginRequired("/") from None

    @app.exception_handler(_LoginRequired)
    async def _to_login(request: Request, exc: _LoginRequired) -> Response:
        base = request.scope.get("root_path", "") or ""
        r = RedirectResponse(f"{base}/ui/login?next={quote(exc.next_path, safe='')}", status_code=303)
        if request.cookies.get(COOKIE):
            r.delete_cookie(COOKIE, path="/")
        return r

    def page(request: Request, template: str, build: Callable[[Ctx], dict[str, Any]]) -> HTMLResponse:
        c = require(request)
        common = {"record": c.record, "principal": c.principal, "tenant": c.tenant.id}
        try:
            data = build(c)
        except UnknownMemory as exc:
            return html(request, "error.html", 404, title="Not found", message=str(exc), **common)
        except InvalidInput as exc:
            return html(request, "error.html", 422, title="Invalid request", message=str(exc), **common)
        return html(request, template, **common, **data)

    def _int(value: str | None, name: str) -> int | None:
        if value in (None, ""):
            return None
        try:
            return int(value)
        except ValueError:
            raise InvalidInput(f"{name}: expected an integer, got {value!r}", field=name) from None

    # ------------------------------------------------------------------ sign in / out
    @app.get("/ui/login", include_in_schema=False)
    def login_form(request: Request, next: str = "/") -> HTMLResponse:
        return html(request, "login.html", next=_safe_next(next), error=None, record=session(request))

    @app.post("/ui/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", errors="replace"), keep_blank_values=True)
        token = (form.get("token") or [""])[0].strip()
        nxt = _safe_next((form.get("next") or ["/"])[0])
        try:
            record = tokens.verify(tokens.tenant_of(token), token)
            engine.tenant(record.tenant)
        except (TokenError, TokenForbidden, ReckonError):
            return html(request, "login.html", 401, next=nxt, error="That is not a valid API token.", record=None)
        base = request.scope.get("root_path", "") or ""
        r = RedirectResponse(base + nxt, status_code=303)
        r.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https",
                     path="/")
        return r

    @app.post("/ui/logout", include_in_schema=False)
    def logout(request: Request) -> Response:
        base = request.scope.get("root_path", "") or ""
        r = RedirectResponse(f"{base}/ui/login", status_code=303)
        r.delete_cookie(COOKIE, path="/")
        return r

    # ------------------------------------------------------------------ pages
    @app.get("/", include_in_schema=False)
    def overview(request: Request) -> HTMLResponse:
        return page(request, "overview.html", lambda c: V.overview_page(c.tenant, c.principal))

    @app.get("/ui", include_in_schema=False)
    def ui_root(request: Request) -> Response:
        return RedirectResponse((request.scope.get("root_path", "") or "") + "/", status_code=307)

    @app.get("/ui/bundle", include_in_schema=False)
    def bundle(request: Request, person: str | None = None, conversation: str = "",
               budget: str | None = None) -> HTMLResponse:
        def build(c: Ctx) -> dict[str, Any]:
            chars = _int(budget, "budget") or 6000
            d = V.bundle_page(c.tenant, c.principal, person, conversation, chars)
            d["people"] = V.people(c.tenant) if c.principal.role == "operator" else []
            return d

        return page(request, "bundle.html", build)

    @app.get("/ui/lanes", include_in_schema=False)
    def lanes(request: Request, group: str = "block", state: str = "active", kind: str | None = None,
              scope: str | None = None, importance: str | None = None, q: str | None = None) -> HTMLResponse:
        return page(request, "lanes.html", lambda c: V.lanes_page(
            c.tenant, c.principal, group=group, state=state, kind=kind or None, scope=scope or None,
            importance=_int(importance, "importance"), q=(q or "").strip() or None))

    @app.get("/ui/memories/{memory_id}", include_in_schema=False)
    def memory(request: Request, memory_id: str) -> HTMLResponse:
        return page(request, "memory.html", lambda c: V.memory_page(c.tenant, c.principal, memory_id))

    @app.get("/ui/business", include_in_schema=False)
    def business(request: Request) -> HTMLResponse:
        return page(request, "business.html", lambda c: V.business_page(c.tenant, c.principal))

    @app.get("/ui/settings", include_in_schema=False)
    def settings(request: Request) -> HTMLResponse:
        return page(request, "settings.html", lambda c: V.settings_page(c.tenant))

    @app.get("/ui/sparql", include_in_schema=False)
    def sparql_form(request: Request) -> HTMLResponse:
        return page(request, "sparql.html", lambda c: V.sparql_page(c.tenant, c.principal, None,
                                                                     allowed=c.record.sparql))

    @app.post("/ui/sparql", include_in_schema=False)
    async def sparql_run(request: Request) -> HTMLResponse:
        ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        raw = (await request.body()).decode("utf-8", errors="replace")
        query = (parse_qs(raw, keep_blank_values=True).get("query") or [""])[0] \
            if ctype == "application/x-www-form-urlencoded" else raw
        from starlette.concurrency import run_in_threadpool

        def build(c: Ctx) -> dict[str, Any]:
            return V.sparql_page(c.tenant, c.principal, query, allowed=c.record.sparql)

        return await run_in_threadpool(page, request, "sparql.html", build)
