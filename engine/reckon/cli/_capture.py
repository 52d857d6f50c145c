"""Conversation verbs: `reckon import conversation FILE`, `reckon turns`, `reckon extract`,
`reckon worker`, `reckon jobs list|retry`.

`reckon import conversation` records the turns of a LoCoMo-style JSON or chat JSONL file
(`reckon.transcripts.files`) with `Tenant.record_turns` (one transaction per 2,000 turns;
re-importing the same file is a no-op). `reckon worker` runs the background extraction
workers on the job queue (`reckon.jobs`: huey, SQLite under the data directory by
default, `RECKON_JOBS_URL` for Redis / PostgreSQL).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from reckon.cli._app import app, fail, state
from reckon.cli._tenant import AS_OPT, OPERATOR_OPT, TENANT_OPT, open_tenant, principal, print_json, say

import_app = typer.Typer(help="Import conversations (transcripts) into a tenant.", no_args_is_help=True)
app.add_typer(import_app, name="import")
jobs_app = typer.Typer(help="Background extraction jobs: list and retry.", no_args_is_help=True)
app.add_typer(jobs_app, name="jobs")


@import_app.command("conversation")
def import_conversation(
    file: Path = typer.Argument(..., help="LoCoMo-style JSON or chat JSONL file."),
    tenant: str = TENANT_OPT,
    person: str = AS_OPT,
    operator: bool = typer.Option(True, "--operator/--member", help="Import as an operator (any speaker)."),
    extract: bool = typer.Option(False, "--extract", help="Run extraction on the imported conversations now."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Record every turn of FILE (exit 2 for a malformed file: nothing is written)."""
    from reckon.transcripts.files import read_conversation_file

    payload = read_conversation_file(file)
    if not payload:
        raise fail(f"{file}: no turns found")
    t = open_tenant(tenant)
    p = principal(person, operator)
    t0 = time.perf_counter()
    turns = t.record_turns(payload, principal=p)
    # embeddings run off the write path; this one-shot process waits for them (persisted
    # beside the store) so that a later `reckon conversation turns --search` ranks by vector
    t.turn_index.wait(timeout=None)
    secs = time.perf_counter() - t0
    convs = sorted({x.conversation for x in turns})
    summary = {"tenant": tenant, "turns": len(turns), "conversations": convs, "seconds": round(secs, 2)}
    if extract:
        from reckon.capture.extract import extract_conversation
        from reckon.jobs import make_extractor

        ex = make_extractor()
        summary["extracted"] = {c: extract_conversation(t, c, ex).written for c in convs}
    if as_json:
        print_json(summary)
    else:
        say(f"recorded {len(turns)} turns of {len(convs)} conversation(s) in {secs:.1f} s: {', '.join(convs)}")


@app.command("turns")
def turns_cmd(
    conversation: str = typer.Argument(..., help="Conversation id."),
    tenant: str = TENANT_OPT,
    query: str = typer.Option(None, "--search", "-q", help="Search the turns instead of listing them."),
    person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    k: int = typer.Option(10, "-k", help="Number of search hits."),
) -> None:
    """List the turns of a conversation, or search them (`-q`)."""
    t = open_tenant(tenant)
    if query:
        hits = t.search_turns(query, principal=principal(person, operator), k=k, conversations=[conversation])
        for h in hits:
            say(escape(f"{h.score:.3f} [{h.turn.id}] {h.turn.speaker or h.turn.role}: {h.turn.text}"))
        return
    for x in t.turns(conversation):
        say(escape(f"[{x.id}] {x.at.isoformat()} {x.role} {x.speaker or ''}: {x.text}"))


@app.command("extract")
def extract_cmd(
    conversation: str = typer.Argument(..., help="Conversation id."),
    tenant: str = TENANT_OPT,
    extractor: str = typer.Option(None, "--extractor", help="rules, model or rules+model (default: $RECKON_EXTRACTOR)."),
) -> None:
    """Run extraction over the conversation's unprocessed tail now (in this process)."""
    from reckon.capture.extract import extract_conversation
    from reckon.jobs import make_extractor

    r = extract_conversation(open_tenant(tenant), conversation, make_extractor(extractor))
    print_json(r.model_dump(mode="json"))


def _jobs() -> Any:
    from reckon.jobs import Jobs

    return Jobs(state.data_dir)


@app.command("worker")
def worker_cmd(
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker threads."),
    once: bool = typer.Option(False, "--once", help="Drain the queue (after the startup sweep) and exit."),
    extractor: str = typer.Option(None, "--extractor", help="rules, model or rules+model (default: $RECKON_EXTRACTOR)."),
) -> None:
    """Run the background extraction workers until SIGINT / SIGTERM."""
    from reckon.jobs import make_extractor

    j = _jobs()
    j._extractor = make_extractor(extractor)  # noqa: SLF001 - validated before the consumer starts
    n = j.run_worker(workers=workers, once=once)
    if once:
        say(f"ran {n} job(s)")


@jobs_app.command("list")
def jobs_list(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Queued, scheduled (waiting to retry) and recorded jobs."""
    j = _jobs()
    recs = j.records()
    out = {"queued": j.huey.pending_count(), "scheduled": j.huey.scheduled_count(), "jobs": recs}
    if as_json:
        print_json(out)
        return
    say(f"queued {out['queued']}, waiting to retry {out['scheduled']}")
    for r in recs:
        err = f" — {r['error']}" if r.get("error") else ""
        say(escape(f"{r.get('id')} {r.get('state')} tenant={r.get('tenant')} conversation={r.get('conversation')} "
                   f"attempts={r.get('attempts', 0)}{err}"))


@jobs_app.command("retry")
def jobs_retry(job_id: str = typer.Argument(None, help="Job id (default: every failed job).")) -> None:
    """Queue failed jobs again."""
    new = _jobs().retry(job_id)
    say(f"queued {len(new)} job(s){': ' + ', '.join(new) if new else ''}")
