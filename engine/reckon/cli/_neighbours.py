"""The neighbours' verbs (issue 15): `reckon notes put|get|list|cas|delete|namespaces|purge`
(keyed shared notes, seed 000 Transit), `reckon events add|load|depend|timeline` and
`reckon graph [NODE] [--mermaid|--impact]` (the event graph, seed 000 MAGMA, seed 004),
`reckon experience record|strategies|similar` (seed 000 Evolving Memory).

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

from reckon import _json as strict_json
from reckon._json import InvalidJSON
from reckon.cli._app import EXIT_INPUT, EXIT_INVALID, app, fail, one_of
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
        return strict_json.loads(text, what="value")
    except InvalidJSON as e:
        raise fail(f"{e}; pass --string to store the text as a string") from None


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


# ---------------------------------------------------------------------------------------
# The event graph (seed 000 MAGMA, seed 004 Graph Memory)
# ---------------------------------------------------------------------------------------

events_app = typer.Typer(help="The typed event graph: events, episodes, entities (seed 000 MAGMA).",
                         no_args_is_help=True)
app.add_typer(events_app, name="events")


def _event_dict(e: Any) -> Any:
    return e.to_dict()


@events_app.command("add")
def events_add(label: str = typer.Argument(..., help="What happened."),
               at: str = typer.Option(..., "--at", help="When: ISO 8601 date-time with an offset (Z, +02:00)."),
               tenant: str = TENANT_OPT,
               timeline: str = typer.Option("default", "--timeline", help="Timeline (conversation, run) id."),
               episode: str = typer.Option(None, "--episode", help="Id of the episode it belongs to."),
               caused_by: list[str] = typer.Option([], "--caused-by", help="Id of a cause; repeat the option."),
               mention: list[str] = typer.Option([], "--mention", help="An entity TYPE:LABEL; repeat the option."),
               event_id: str = typer.Option(None, "--id", help="The event's id (default: random)."),
               is_episode: bool = typer.Option(False, "--episode-node", help="Record an episode (a session)."),
               ) -> None:
    """Record one event (or, with --episode-node, an episode); prints it as JSON."""
    g = open_tenant(tenant).events
    print_json(g.record_event(label, at=at, timeline=timeline, episode=episode, caused_by=caused_by,
                              mentions=mention, id=event_id, kind="episode" if is_episode else "event").to_dict())


@events_app.command("load")
def events_load(file: str = typer.Argument(..., help="JSON list or JSON Lines of events ('-': stdin)."),
                tenant: str = TENANT_OPT) -> None:
    """Record the events of FILE in one transaction (all or nothing; exit 2 naming events[i])."""
    from pathlib import Path

    text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    try:
        data = (strict_json.loads(text, what=file) if text.lstrip().startswith("[") else
                [strict_json.loads(x, what=f"{file} line {i}") for i, x in enumerate(text.splitlines(), 1)
                 if x.strip()])
    except InvalidJSON as e:
        raise fail(f"not JSON or JSON Lines: {e}") from None
    out = open_tenant(tenant).events.record(data)
    say(f"recorded {len(out)} events")


@events_app.command("depend")
def events_depend(entity: str = typer.Argument(..., help="TYPE:LABEL"), on: str = typer.Argument(..., help="TYPE:LABEL"),
                  tenant: str = TENANT_OPT) -> None:
    """Record that ENTITY depends on ON (both TYPE:LABEL, e.g. service:UserService service:Auth)."""
    e = open_tenant(tenant).events.add_dependency(entity, on)
    say(escape(f"{e.id} depends on {on}"))


@events_app.command("timeline")
def events_timeline(timeline: str = typer.Argument("default", help="Timeline id."), tenant: str = TENANT_OPT,
                    as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The events of a timeline by time."""
    evs = open_tenant(tenant).events.timeline(timeline)
    if as_json:
        print_json([e.to_dict() for e in evs])
        return
    for e in evs:
        say(escape(f"{e.at.isoformat()} [{e.id}] {e.kind}: {e.label}"))


@app.command("graph")
def graph_cmd(node: str = typer.Argument(None, help="Event id to start from (default: the whole graph)."),
              tenant: str = TENANT_OPT,
              entity: str = typer.Option(None, "--entity", help="Start from an entity TYPE:LABEL instead."),
              depth: int = typer.Option(1, "--depth", help="Hops from the start (1-10)."),
              edge_type: list[str] = typer.Option([], "--edge-type",
                                                  help="temporal, causal, entity, episode, dependency; repeat."),
              mermaid: bool = typer.Option(False, "--mermaid", help="Print a Mermaid flowchart."),
              impact: bool = typer.Option(False, "--impact", help="Print what the start node affects, transitively."),
              as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Traverse the event graph: related nodes, the impact closure (--impact) or a Mermaid
    diagram (--mermaid) of the subgraph."""
    g = open_tenant(tenant).events
    start: Any = node
    if entity is not None:
        type_, sep, label = entity.partition(":")
        if not sep:
            raise fail("--entity: TYPE:LABEL, e.g. person:Caroline")
        start = (label, type_)
    edges = edge_type or None
    if mermaid:
        sys.stdout.write(g.mermaid(start, depth=depth, edge_types=edges))
        return
    if start is None:
        raise fail("give a NODE (event id) or --entity TYPE:LABEL, or --mermaid for the whole graph")
    if impact:
        out = g.impact(start)
        if as_json:
            print_json([x.to_dict() for x in out])
        else:
            for x in out:
                say(escape(f"[{x.id}] {x.label}"))
        return
    rel = g.related(start, depth=depth, edge_types=edges)
    if as_json:
        print_json([r.to_dict() for r in rel])
        return
    for r in rel:
        say(escape(f"{r.distance} {r.edge:<12} [{r.node.id}] {r.node.label}  (via {r.via})"))


# ---------------------------------------------------------------------------------------
# Experience and strategy cards (seed 000 Evolving Memory)
# ---------------------------------------------------------------------------------------

xp_app = typer.Typer(help="Experience records and strategy cards (seed 000 Evolving Memory).", no_args_is_help=True)
app.add_typer(xp_app, name="experience")


@xp_app.command("record")
def xp_record(task: str = typer.Argument(..., help="The task as given."),
              outcome: str = typer.Option(..., "--outcome", parser=one_of("success", "partial", "failure"),
                                          help="success, partial or failure."),
              tenant: str = TENANT_OPT, person: str = AS_OPT,
              worked: str = typer.Option(None, "--worked", help="What worked."),
              failed: str = typer.Option(None, "--failed", help="What failed."),
              tool: list[str] = typer.Option([], "--tool", help="A tool used; repeat the option."),
              strategy: str = typer.Option(None, "--strategy", help="The approach taken, in words."),
              session: str = typer.Option(None, "--session", help="The run or conversation id.")) -> None:
    """Record one run of TASK; prints it as JSON."""
    x = open_tenant(tenant).experience
    print_json(x.record(task, outcome, principal=principal(person, False), worked=worked, failed=failed,
                        tools=tool, strategy=strategy, session=session).to_dict())


@xp_app.command("strategies")
def xp_strategies(tenant: str = TENANT_OPT,
                  promoted: bool = typer.Option(False, "--promoted", help="Only the strategy cards."),
                  as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Strategies with their success counts; cards are promoted at strategy_promotion_threshold."""
    cards = open_tenant(tenant).experience.strategies(promoted=True if promoted else None)
    if as_json:
        print_json([c.to_dict() for c in cards])
        return
    for c in cards:
        say(escape(f"{'card' if c.promoted else '    '} {c.success_count:>3} [{c.id}] {c.approach}"))


@xp_app.command("similar")
def xp_similar(task: str = typer.Argument(..., help="The new task."), tenant: str = TENANT_OPT,
               k: int = typer.Option(4, "-k", help="How many (default 4: seed 000 topK)."),
               cards: bool = typer.Option(False, "--cards", help="Recommend strategy cards instead."),
               as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Past experiences (or, with --cards, strategy cards) most similar to TASK."""
    x = open_tenant(tenant).experience
    hits = x.recommend(task, k=k) if cards else x.similar(task, k=k)
    if as_json:
        print_json([h.to_dict() for h in hits])
        return
    for h in hits:
        text = h.item.approach if cards else f"{h.item.task} -> {h.item.outcome}"
        say(escape(f"{h.score:.3f} [{h.item.id}] {text}"))
