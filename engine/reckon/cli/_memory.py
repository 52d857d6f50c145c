"""Memory verbs: `reckon remember|update|supersede|restore|history|get|memories|forget`.

The principal is built from `--as PERSON` (required, or `$RECKON_AS`), `--member-of TEAM`
(repeatable) and `--operator`. Subclass properties are given as repeated
`--prop key=value` (a key given twice makes a list value).

Exit codes: 0 ok; 1 an invalid memory (a field its model refuses, e.g. a blank label, or a
SHACL shape violation, e.g. a negative budget amount: the same code whichever layer found
it); 2 input error (an unknown option, a value outside the option's choices or range --
`--kind wish`, `--scope bogus`, `--importance 9`, `--confidence 2` -- the same for every
verb; an unknown memory, project or team; not authorized; a conflict needing `--replace
--conflict-id ID` or `--keep-both --conflict-id ID`; restore refused); 3 internal error.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import typer

from reckon.cli._app import (
    KIND_CHOICES,
    SCOPE_CHOICES,
    SOURCE_CHOICES,
    app,
    fail,
    float_in,
    int_in,
    memory_write,
    one_of,
)
from reckon.cli._tenant import (
    AS_OPT,
    MEMBER_OF_OPT,
    OPERATOR_OPT,
    TENANT_OPT,
    open_tenant,
    principal,
    print_json,
    say,
    warn,
)
from reckon.store.terms import parse_datetime_text

PROP_OPT = typer.Option([], "--prop", "-p", help="Subclass property KEY=VALUE; repeat (a repeated key makes a list).")
JSON_OPT = typer.Option(False, "--json", help="Print the memory as JSON.")


def parse_props(pairs: list[str]) -> dict[str, Any]:
    """`["amount=40000", "avoidTerm=a", "avoidTerm=b"]` -> `{"amount": "40000",
    "avoidTerm": ["a", "b"]}`.

    :raises typer.Exit: (exit 2) for a pair without `=`.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise fail(f"--prop: expected KEY=VALUE, got {pair!r}")
        k, v = pair.split("=", 1)
        k = k.strip()
        if not k:
            raise fail(f"--prop: empty key in {pair!r}")
        if k in out:
            out[k] = (out[k] if isinstance(out[k], list) else [out[k]]) + [v]
        else:
            out[k] = v
    return out


def parse_when(text: str | None, option: str) -> datetime | None:
    """ISO 8601 date (midnight UTC) or date-time with an offset (``Z``, ``+02:00``); a
    date-time without an offset is refused (no time zone is ever guessed)."""
    if text is None:
        return None
    try:
        if len(text.strip()) == 10:
            return datetime.combine(date.fromisoformat(text.strip()), time(0), tzinfo=UTC)
        value = parse_datetime_text(text)
    except ValueError as exc:
        raise fail(f"{option}: not an ISO 8601 date or date-time kept to the microsecond: {text!r} ({exc})") \
            from None
    if value.tzinfo is None:
        raise fail(f"{option}: {text!r} has no time zone: add Z or an offset such as +02:00 "
                   "(a date alone means midnight UTC)")
    return value


def shown_value(v: Any) -> str:
    """A property or status value as ``get`` prints it: a decimal as its exact text, the
    same as ``--json`` and REST give it (``40000``, ``0.85``,
    ``12345678901234.123456789012345678``), never a float's rounding; a date-time in ISO
    8601 as ``--json`` gives it (``2026-12-31T14:59:59.999999Z``), a date as ``YYYY-MM-DD``."""
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, datetime):
        text = v.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(shown_value(x) if isinstance(x, (Decimal, datetime, date)) else repr(x)
                               for x in v) + "]"
    return str(v)


def show_memory(m: Any, as_json: bool, verb: str, *, detail: bool = False) -> None:
    """One memory: id, label, kind, scope, importance, properties, statuses (``detail``:
    also its content, whom it belongs to, source, confidence, times and lineage)."""
    if as_json:
        print_json(m.model_dump(mode="json"))
        return
    from rich.markup import escape

    say(f"{verb} [bold]{m.id}[/bold] {escape(repr(m.label))} ({m.kind}, {m.scope}, importance {m.importance}"
                  f"{', ' + m.subclass if m.subclass else ''}{'' if m.active else ', INACTIVE'})")
    if detail:
        say("  content: " + m.content, markup=False)
        whose = [f"owner {m.owner}" if m.owner else "", f"teams {', '.join(m.teams)}" if m.teams else "",
                 f"project {m.project}" if m.project else "", f"conversation {m.conversation}" if m.conversation else ""]
        if any(whose):
            say("  shared with: " + "; ".join(w for w in whose if w), markup=False)
        say(f"  source: {m.source}, confidence {m.confidence:g}" + (f", author {m.author}" if m.author else ""),
            markup=False)
        times = [f"created {m.created_at.isoformat()}" if m.created_at else "",
                 f"updated {m.updated_at.isoformat()}" if m.updated_at and m.updated_at != m.created_at else "",
                 f"expires {m.expires_at.isoformat()}" if m.expires_at else ""]
        say("  " + ", ".join(x for x in times if x), markup=False)
        if m.supersedes:
            say(f"  supersedes: {', '.join(m.supersedes)}", markup=False)
    if m.properties:
        say("  properties: " + ", ".join(f"{k}={shown_value(v)}" for k, v in sorted(m.properties.items())),
            markup=False)
    shown = {k: v for k, v in m.status.items() if not k.startswith("compared")}
    if shown:
        say("  status: " + ", ".join(f"{k}={shown_value(v)}" for k, v in sorted(shown.items())), markup=False)
    if m.superseded_by:
        say(f"  superseded by: {', '.join(m.superseded_by)}")


def _remember_fields(kind: str | None, scope: str | None, importance: int | None, source: str | None,
                     label: str | None, content: str | None, subclass: str | None, props: list[str],
                     confidence: float | None, expires: str | None, teams: list[str], owner: str | None,
                     project: str | None = None, conversation: str | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in (("kind", kind), ("scope", scope), ("importance", importance), ("source", source),
                        ("label", label), ("content", content), ("subclass", subclass),
                        ("confidence", confidence), ("owner", owner), ("project", project),
                        ("conversation", conversation)):
        if value is not None:
            fields[name] = value
    if props:
        fields["properties"] = parse_props(props)
    if expires is not None:
        fields["expires_at"] = parse_when(expires, "--expires")
    if teams:
        fields["teams"] = teams
    return fields


def _write(fn: Any, **kwargs: Any) -> Any:
    """Run a write; a memory its fields or shapes refuse exits 1 (like a shape violation);
    a pending conflict becomes a one-line error with the way forward."""
    from reckon._errors import ConflictPending

    try:
        with memory_write():
            return fn(**kwargs)
    except ConflictPending as c:
        warn(f"conflict: {c}", markup=False)
        warn(f"  would replace: {', '.join(c.candidates)}", markup=False)
        raise fail(f"confirm with --replace --conflict-id {c.conflict_id}, or --keep-both --conflict-id {c.conflict_id}") from None


@app.command("remember")
def remember(
    tenant: str = TENANT_OPT,
    label: str = typer.Option(..., "--label", "-l", help="Short label (dedup key within a scope)."),
    content: str = typer.Option(None, "--content", "-c", help="The memory text (default: the label)."),
    kind: str = typer.Option(..., "--kind", "-k", parser=one_of(*KIND_CHOICES),
                             help="objective | fact | preference | context."),
    scope: str = typer.Option("user", "--scope", "-s", parser=one_of(*SCOPE_CHOICES),
                              help="user | conversation | project | team | company."),
    importance: int = typer.Option(3, "--importance", "-i", parser=int_in(1, 5), help="1 Disabled .. 5 Critical."),
    source: str = typer.Option(None, "--source", parser=one_of(*SOURCE_CHOICES),
                               help="agent_tool | extraction | operator | onboarding | import "
                               "(default: operator with --operator, else agent_tool)."),
    subclass: str = typer.Option(None, "--subclass", help="Memory subclass, e.g. BudgetConstraintMemory."),
    props: list[str] = PROP_OPT,
    confidence: float = typer.Option(None, "--confidence", parser=float_in(0, 1), help="0..1 (default by source)."),
    expires: str = typer.Option(None, "--expires", help="Expiry, ISO 8601: a date (midnight UTC) or a date-time "
                                "with an offset (Z, +02:00)."),
    teams: list[str] = typer.Option([], "--team", help="Team of a team-scope memory; repeat."),
    owner: str = typer.Option(None, "--owner", help="Owner of a user-scope memory (default: --as)."),
    project: str = typer.Option(None, "--project", help="Project of a project-scope memory (its members read it)."),
    conversation: str = typer.Option(None, "--conversation", help="Conversation of a conversation-scope memory "
                                     "(its participants read it)."),
    supersedes: list[str] = typer.Option([], "--supersedes", help="Id of a memory this one replaces; repeat."),
    replace: bool = typer.Option(False, "--replace", help="Confirm a pending conflict: supersede the candidates (needs --conflict-id)."),
    keep_both: bool = typer.Option(False, "--keep-both", help="Confirm a pending conflict: keep both (needs --conflict-id)."),
    conflict_id: str = typer.Option(None, "--conflict-id", help="The id printed with the pending conflict."),
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    member_of: list[str] = MEMBER_OF_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Store a new memory (validated against its shapes; statuses derived at once)."""
    if replace and keep_both:
        raise fail("give --replace or --keep-both, not both")
    t = open_tenant(tenant)
    fields = _remember_fields(kind, scope, importance, source or ("operator" if operator else "agent_tool"), label,
                              content if content is not None else label, subclass, props, confidence, expires,
                              teams, owner, project, conversation)
    m = _write(t.remember, principal=principal(as_person, operator, member_of), supersedes=supersedes or None,
               conflict_resolution="replace" if replace else "keep_both" if keep_both else None,
               conflict_id=conflict_id, **fields)
    restated = m.updated_at is not None and m.created_at is not None and m.updated_at > m.created_at
    # dedup: the same label in the same scope updated the memory it names (reckon history shows what it was)
    show_memory(m, as_json, "updated (same label in this scope)" if restated else "remembered")


@app.command("update")
def update(
    memory_id: str = typer.Argument(..., help="Memory id (32 hex digits) or IRI."),
    tenant: str = TENANT_OPT,
    label: str = typer.Option(None, "--label", "-l"),
    content: str = typer.Option(None, "--content", "-c"),
    kind: str = typer.Option(None, "--kind", "-k", parser=one_of(*KIND_CHOICES)),
    importance: int = typer.Option(None, "--importance", "-i", parser=int_in(1, 5),
                                    help="1 Disabled .. 5 Critical (an integer)."),
    confidence: float = typer.Option(None, "--confidence", parser=float_in(0, 1), help="0..1."),
    expires: str = typer.Option(None, "--expires", help="Set the expiry (ISO 8601)."),
    props: list[str] = PROP_OPT,
    unset_props: list[str] = typer.Option([], "--unset-prop", help="Remove a subclass property; repeat."),
    teams: list[str] = typer.Option([], "--team", help="Set the teams (replaces them); repeat."),
    unset: list[str] = typer.Option([], "--unset", help="Remove an optional field: expires_at or teams; repeat."),
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    member_of: list[str] = MEMBER_OF_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Partial edit, three-state: an option not given leaves the field untouched,
    `--unset` / `--unset-prop` remove, a value sets."""
    changes: dict[str, Any] = {}
    for name, value in (("label", label), ("content", content), ("kind", kind), ("importance", importance),
                        ("confidence", confidence)):
        if value is not None:
            changes[name] = value
    if expires is not None:
        changes["expires_at"] = parse_when(expires, "--expires")
    if teams:
        changes["teams"] = teams
    for name in unset:
        name = {"expires": "expires_at", "expiry": "expires_at"}.get(name, name)
        if name in changes:
            raise fail(f"--unset {name}: the field is also set")
        changes[name] = None
    if props or unset_props:
        p: dict[str, Any] = dict(parse_props(props))
        for k in unset_props:
            p[k] = None
        changes["properties"] = p
    if not changes:
        raise fail("nothing to update: give at least one field option")
    t = open_tenant(tenant)
    m = _write(t.update, memory_id=memory_id, principal=principal(as_person, operator, member_of), **changes)
    show_memory(m, as_json, "updated")


@app.command("supersede")
def supersede(
    old_id: str = typer.Argument(..., help="Id of the memory to replace."),
    tenant: str = TENANT_OPT,
    by: str = typer.Option(None, "--by", help="An existing memory that replaces it (else a new one is written)."),
    label: str = typer.Option(None, "--label", "-l"),
    content: str = typer.Option(None, "--content", "-c"),
    kind: str = typer.Option(None, "--kind", "-k", parser=one_of(*KIND_CHOICES)),
    importance: int = typer.Option(None, "--importance", "-i", parser=int_in(1, 5),
                                    help="1 Disabled .. 5 Critical (an integer)."),
    source: str = typer.Option(None, "--source", parser=one_of(*SOURCE_CHOICES)),
    props: list[str] = PROP_OPT,
    confidence: float = typer.Option(None, "--confidence", parser=float_in(0, 1), help="0..1."),
    expires: str = typer.Option(None, "--expires"),
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    member_of: list[str] = MEMBER_OF_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Replace a memory. With `--by ID` an existing memory takes its place; otherwise a
    new memory is written whose fields default to the old one's (kind, scope, teams,
    owner, importance, subclass and properties), overridden by the options given."""
    t = open_tenant(tenant)
    who = principal(as_person, operator, member_of)
    if by is not None:
        if any(v is not None for v in (label, content, kind, importance, source, confidence, expires)) or props:
            raise fail("--by takes an existing memory; do not combine it with field options")
        m = _write(t.supersede, old_id=old_id, new=by, principal=who)
        show_memory(m, as_json, "superseded by")
        return
    old = t.get(old_id)
    fields: dict[str, Any] = {
        "kind": old.kind, "scope": old.scope, "importance": old.importance,
        "source": source or ("operator" if operator else "agent_tool"),
        "label": old.label, "content": old.content,
    }
    if old.scope == "team":
        fields["teams"] = list(old.teams)
    if old.scope == "user" and old.owner:
        fields["owner"] = old.owner
    if old.scope == "project" and old.project:
        fields["project"] = old.project
    if old.scope == "conversation" and old.conversation:
        fields["conversation"] = old.conversation
    if old.subclass:
        fields["subclass"] = old.subclass_iri or old.subclass
        fields["properties"] = dict(old.properties)
    given = _remember_fields(kind, None, importance, None, label, content, None, props, confidence, expires, [], None)
    if "properties" in given:
        fields.setdefault("properties", {}).update(given.pop("properties"))
    fields.update(given)
    m = _write(t.supersede, old_id=old_id, new=fields, principal=who)
    show_memory(m, as_json, "superseded by")


@app.command("restore")
def restore(
    memory_id: str = typer.Argument(...),
    tenant: str = TENANT_OPT,
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Undo a supersession (operators only; refused while a live memory contradicts it)."""
    t = open_tenant(tenant)
    m = t.restore(memory_id, principal=principal(as_person, operator))
    show_memory(m, as_json, "restored")


@app.command("forget")
def forget(
    memory_id: str = typer.Argument(...),
    tenant: str = TENANT_OPT,
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    reason: str = typer.Option(None, "--reason", help="Why it is deleted: kept on the tombstone and shown by "
                               "`reckon history` (Tenant.delete(reason=...))."),
) -> None:
    """Delete a memory (operators only)."""
    t = open_tenant(tenant)
    t.delete(memory_id, principal=principal(as_person, operator), reason=reason)
    say(f"deleted {memory_id}" + (f" ({reason})" if reason else ""))


@app.command("get")
def get(memory_id: str = typer.Argument(...), tenant: str = TENANT_OPT, as_json: bool = JSON_OPT) -> None:
    """Show one memory with its derived statuses."""
    show_memory(open_tenant(tenant).get(memory_id), as_json, "memory", detail=True)


@app.command("memories")
def memories(
    tenant: str = TENANT_OPT,
    all_: bool = typer.Option(False, "--all", help="Include superseded and expired memories."),
    kind: str = typer.Option(None, "--kind", "-k", parser=one_of(*KIND_CHOICES),
                             help="objective | fact | preference | context."),
    scope: str = typer.Option(None, "--scope", "-s", parser=one_of(*SCOPE_CHOICES),
                              help="user | conversation | project | team | company."),
    subclass: str = typer.Option(None, "--subclass", help="A memory class (its subclasses match too)."),
    label: str = typer.Option(None, "--label", "-l", help="Only memories with this label (case and spacing ignored)."),
    ids: bool = typer.Option(False, "--ids", help="Print only the ids, one per line (for scripts: "
                             "MEMORY_ID=$(reckon memories ... --ids))."),
    as_json: bool = JSON_OPT,
) -> None:
    """List memories (active ones by default)."""
    from reckon.memory.models import normalise_label

    ms = open_tenant(tenant).memories(active_only=not all_, kind=kind, scope=scope, subclass=subclass)
    if label is not None:
        ms = [m for m in ms if normalise_label(m.label) == normalise_label(label)]
    if ids:
        for m in ms:
            say(m.id, markup=False)
        return
    if as_json:
        print_json([m.model_dump(mode="json") for m in ms])
        return
    for m in ms:
        st = ", ".join(f"{v}" for k, v in sorted(m.status.items()) if k in ("budgetStatus", "targetStatus",
                                                                           "timeToFillStatus"))
        say(f"{m.id}  {m.kind:<10} {m.scope:<7} {m.importance}  {m.label}{'' if m.active else ' (inactive)'}"
            f"{'  [' + st + ']' if st else ''}", markup=False)


@app.command("history")
def history(memory_id: str = typer.Argument(...), tenant: str = TENANT_OPT, as_json: bool = JSON_OPT) -> None:
    """The lineage of a memory through its supersession chain, oldest first."""
    entries = open_tenant(tenant).history(memory_id)
    if as_json:
        print_json([e.model_dump(mode="json") for e in entries])
        return
    for e in entries:
        arrow = f" -> superseded by {', '.join(e.superseded_by)}" if e.superseded_by else ""
        if e.event == "deleted":
            when = e.deleted_at.strftime("%Y-%m-%d %H:%M") if e.deleted_at else "?"
            why = f": {e.deleted_reason}" if e.deleted_reason else ""
            say(f"{when}  {e.id}  deleted    (by {e.deleted_by}{why}){arrow}", markup=False)
            continue
        when = e.created_at.strftime("%Y-%m-%d %H:%M") if e.created_at else "?"
        say(f"{when}  {e.id}  {e.event:<10} {e.label!r} (source {e.source}, author {e.author}){arrow}",
                      markup=False)
        for r in e.revisions:
            at = r.revised_at.strftime("%Y-%m-%d %H:%M") if r.revised_at else "?"
            say(f"      was {r.label!r}: {r.content!r} (until {at}, replaced by {r.revised_by})", markup=False)
