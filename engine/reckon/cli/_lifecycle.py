"""Lifecycle and knowledge verbs (issue 15 items 5 and 7): `reckon maintain --tenant T
[--dry-run] [--queue]` (lifecycle maintenance, :mod:`reckon.lifecycle`), `reckon feedback
ID +1|-1` (rate a memory: ranking and the quality floor use it), `reckon index FILE`
(chunk a document into resource memories, :mod:`reckon.knowledge`).

`reckon maintain` runs at once and prints each action with its reason (JSON with
`--json`); `--queue` puts it on the job queue instead (`reckon worker` runs it; the worker
also runs it daily for every tenant).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from reckon.cli._app import app, int_in, one_of
from reckon.cli._tenant import AS_OPT, OPERATOR_OPT, TENANT_OPT, open_tenant, principal, print_json, say


@app.command("maintain")
def maintain_cmd(
    tenant: str = TENANT_OPT,
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be done; write nothing."),
    queue: bool = typer.Option(False, "--queue", help="Queue it for `reckon worker` instead of running it now."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Lifecycle maintenance: purge expired working memory and notes, merge duplicate
    auto-captured memories, enforce capacity per scope and kind. Never touches a
    human-entered memory; every action is in `reckon history`."""
    if queue:
        from reckon.cli._app import state
        from reckon.jobs import Jobs

        open_tenant(tenant)  # exit 2 for an unknown tenant
        job = Jobs(state.data_dir).enqueue_maintenance(tenant, dry_run=dry_run)
        say(f"queued maintenance of {tenant}: job {job}")
        return
    r = open_tenant(tenant).maintain(dry_run=dry_run)
    if as_json:
        print_json(r.model_dump(mode="json"))
        return
    counts = r.counts()
    say(f"{'dry run: ' if dry_run else ''}{len(r.actions)} action(s) "
        f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items())) or 'nothing to do'}); "
        f"{r.scanned} memories, {r.auto} auto-captured active, {r.protected} over the quality floor")
    for a in r.actions:
        say(escape(f"{a.action} {a.memory or a.key}" + (f" -> {a.into}" if a.into else "") + f": {a.reason}"))


@app.command("feedback")
def feedback_cmd(
    memory_id: str = typer.Argument(..., help="The memory id."),
    vote: int = typer.Argument(..., help="+1 (it helped) or -1 (it did not)."),
    tenant: str = TENANT_OPT,
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
) -> None:
    """Rate a memory; search ranking and the maintenance quality floor use the net feedback."""
    net = open_tenant(tenant).feedback(memory_id, vote, principal=principal(as_person, operator, []))
    say(f"net feedback of {memory_id}: {net:+d}")


@app.command("index")
def index_cmd(
    file: Path = typer.Argument(..., help="A UTF-8 text or Markdown file."),
    tenant: str = TENANT_OPT,
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    scope: str = typer.Option("user", "--scope", parser=one_of("user", "team", "company"),
                              help="user (yours), team or company (operators)."),
    title: str = typer.Option(None, "--title", help="Title (default: the file name)."),
    importance: int = typer.Option(3, "--importance", parser=int_in(2, 5), help="Of the chunks, 2-5 (3: searched, not preloaded)."),
    as_json: bool = typer.Option(False, "--json", help="Print the document and its chunks as JSON."),
) -> None:
    """Index a document: chunks of ~1,400 characters (180 overlap) become searchable memories
    that cite the document and their position; indexing it again does nothing."""
    d = open_tenant(tenant).index_document(path=file, location=file.name, principal=principal(as_person, operator, []),
                                           title=title, scope=scope, importance=importance)
    if as_json:
        print_json(d.to_dict())
        return
    say(f"{'indexed' if d.written else 'already indexed'} {d.location}: document {d.document.id}, "
        f"{len(d.chunks)} chunk(s)")
