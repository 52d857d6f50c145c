"""The neighbours' verbs (issue 15): `reckon notes put|get|list|cas|delete|namespaces|purge`
(keyed shared notes, seed 000 Transit).

Values are JSON: `reckon notes put KEY '{"plan": [1, 2]}'`; `--string` stores the text as a
JSON string; `-` reads the value from stdin. `get` prints the note as JSON (exit 2 when
the key holds no live note); `cas` exits 1 when the expected version does not match.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.markup import escape

from reckon.cli._app import EXIT_INPUT, EXIT_INVALID, app, fail
from reckon.cli._tenant import (
    AS_OPT,
    TENANT_OPT,
    open_tenant,
    principal,
    print_json,
    say,
)

notes_app = typer.Typer(help="Keyed shared notes: project/<id>/<namespace>/<name> (seed 000 Transit).",
                        no_args_is_help=True)
app.add_typer(notes_app, name="notes")

KEY_ARG = typer.Argument(..., help="project/<project-id>/<namespace>/<name>")
TTL_OPT = typer.Option(None, "--ttl", help="Seconds until the note expires (against the in-graph clock).")
STRING_OPT = typer.Option(False, "--string", help="Store VALUE as a JSON string (not parsed as JSON).")


def _value(raw: str, as_string: bool) -> Any:
    text = sys.stdin.read() if raw == "-" else raw
    if as_string:
        return text
    try:
        return json.loads(text)
    except ValueError as e:
        raise fail(f"value: not JSON ({e}); pass --string to store the text as a string") from None


@notes_app.command("put")
def put_cmd(key: str = KEY_ARG, value: str = typer.Argument(..., help="JSON value, or - for stdin."),
            tenant: str = TENANT_OPT, person: str = AS_OPT, ttl: float = TTL_OPT,
            as_string: bool = STRING_OPT) -> None:
    """Write VALUE under KEY (the latest write wins); prints the note as JSON."""
    t = open_tenant(tenant)
    print_json(t.notes.put(key, _value(value, as_string), principal=principal(person, False), ttl=ttl).to_dict())


@notes_app.command("cas")
def cas_cmd(key: str = KEY_ARG, value: str = typer.Argument(..., help="JSON value, or - for stdin."),
            expected: int = typer.Option(..., "--expected", help="The live version to replace (0: no live note)."),
            tenant: str = TENANT_OPT, person: str = AS_OPT, ttl: float = TTL_OPT,
            as_string: bool = STRING_OPT) -> None:
    """Compare-and-set: write VALUE only if KEY's live version is --expected (exit 1 otherwise)."""
    t = open_tenant(tenant)
    res = t.notes.cas(key, _value(value, as_string), expected_version=expected,
                      principal=principal(person, False), ttl=ttl)
    print_json(res.to_dict())
    if not res.ok:
        raise typer.Exit(EXIT_INVALID)


@notes_app.command("get")
def get_cmd(key: str = KEY_ARG, tenant: str = TENANT_OPT,
            value_only: bool = typer.Option(False, "--value", help="Print only the value.")) -> None:
    """Print the live note of KEY as JSON (exit 2 when there is none)."""
    n = open_tenant(tenant).notes.get(key)
    if n is None:
        raise fail(f"no live note {key!r} in tenant {tenant!r}", EXIT_INPUT)
    print_json(n.value if value_only else n.to_dict())


@notes_app.command("list")
def list_cmd(prefix: str = typer.Argument("project/", help="Key prefix."), tenant: str = TENANT_OPT,
             as_json: bool = typer.Option(False, "--json", help="Print the notes as JSON.")) -> None:
    """List the live notes whose key starts with PREFIX."""
    notes = open_tenant(tenant).notes.list(prefix)
    if as_json:
        print_json([n.to_dict() for n in notes])
        return
    for n in notes:
        exp = f" expires {n.expires_at.isoformat()}" if n.expires_at else ""
        say(escape(f"{n.key} v{n.version} by {n.author}{exp}: {json.dumps(n.value, ensure_ascii=False)[:200]}"))


@notes_app.command("namespaces")
def namespaces_cmd(project: str = typer.Argument(..., help="Project id."), tenant: str = TENANT_OPT,
                   as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the namespaces of PROJECT with their numbers of live notes."""
    rows = open_tenant(tenant).notes.namespaces(project)
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    for r in rows:
        say(escape(f"project/{r.project}/{r.namespace}/  {r.count} live"))


@notes_app.command("delete")
def delete_cmd(key: str = KEY_ARG, tenant: str = TENANT_OPT, person: str = AS_OPT,
               expected: int = typer.Option(None, "--expected", help="Delete only if the live version is this.")) -> None:
    """Delete the live note of KEY (exit 2 when there is none or the version differs)."""
    if not open_tenant(tenant).notes.delete(key, principal=principal(person, False), expected_version=expected):
        raise fail(f"no live note {key!r} (at that version) in tenant {tenant!r}", EXIT_INPUT)
    say(f"deleted {key}")


@notes_app.command("purge")
def purge_cmd(tenant: str = TENANT_OPT) -> None:
    """Remove the values of notes expired against the in-graph clock; prints their keys."""
    for k in open_tenant(tenant).notes.purge_expired():
        say(k)
