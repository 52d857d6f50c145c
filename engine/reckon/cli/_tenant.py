"""Tenant verbs: `reckon tenant create|list|delete|move|export|import|validate` and
`reckon onboard FILE.yaml`; shared helpers of the verb modules (engine, tenant option,
principal).

Exit codes: 0 ok; 1 `tenant validate` found a non-conformant memory or an inferred
graph that differs from recomputation; 2 usage / input error (unknown tenant, bad file,
onboarding file missing its objective, fact or preference); 3 internal error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from reckon.cli._app import EXIT_INPUT, EXIT_INVALID, app, console, err_console, fail, memory_write, state

tenant_app = typer.Typer(help="Create, list, delete, export, import and validate tenants.", no_args_is_help=True)
app.add_typer(tenant_app, name="tenant")

TENANT_OPT = typer.Option(..., "--tenant", "-t", envvar="RECKON_TENANT", help="Tenant id ($RECKON_TENANT).")


def say(*objects: Any, **kwargs: Any) -> None:
    """Print to stdout without hard-wrapping long lines (paths, ids stay greppable)."""
    kwargs.setdefault("soft_wrap", True)
    console.print(*objects, **kwargs)


def warn(*objects: Any, **kwargs: Any) -> None:
    """Print to stderr without hard-wrapping long lines."""
    kwargs.setdefault("soft_wrap", True)
    err_console.print(*objects, **kwargs)


def engine(query_limits: Any = None) -> Any:
    """The :class:`reckon.api.Engine` over `--data-dir` (creates nothing until a write;
    ``query_limits``: a :class:`reckon.store.QueryLimits` for its SPARQL interface)."""
    from reckon.api import Engine

    eng = Engine(state.data_dir, query_limits=query_limits)
    state.engines.append(eng)  # closed when an in-process run ends (reckon.cli._app.run)
    return eng


def open_tenant(tenant_id: str) -> Any:
    """An existing tenant (`UnknownTenant` -> exit 2 through the runner)."""
    return engine().tenant(tenant_id)


def principal(person: str, operator: bool, teams: list[str] | None = None) -> Any:
    """The :class:`reckon.api.Principal` of `--as PERSON [--operator] [--member-of TEAM]`."""
    from reckon.api import Principal

    return Principal(person=person, teams=list(teams or []), role="operator" if operator else "member")


AS_OPT = typer.Option(..., "--as", envvar="RECKON_AS", help="Person id acting (the principal; $RECKON_AS).")
OPERATOR_OPT = typer.Option(False, "--operator", help="Act as an operator (team/company memories, restore, delete).")
MEMBER_OF_OPT = typer.Option([], "--member-of", help="A team of the acting person; repeat the option.")


def print_json(data: Any) -> None:
    """JSON to stdout (plain, no rich markup)."""
    import sys

    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------- tenant verbs
@tenant_app.command("create")
def tenant_create(
    tenant_id: str = typer.Argument(..., help="New tenant id: ^[a-z0-9][a-z0-9_-]{0,62}$."),
    company: str = typer.Option(None, "--company", help="Company display name (default: the id)."),
) -> None:
    """Create an empty tenant (schema graph, company node, clock)."""
    from reckon._errors import TenantExists

    try:
        t = engine().create_tenant(tenant_id, company_name=company)
    except TenantExists as e:
        raise fail(str(e)) from e
    say(f"created tenant {t.id} in {state.data_dir}")


@tenant_app.command("list")
def tenant_list(as_json: bool = typer.Option(False, "--json", help="Print a JSON list.")) -> None:
    """List the tenants of the data directory."""
    ids = engine().list_tenants()
    if as_json:
        print_json(ids)
        return
    for i in ids:
        say(i)


@tenant_app.command("delete")
def tenant_delete(
    tenant_id: str = typer.Argument(...),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete a tenant and all its data."""
    eng = engine()
    eng.tenant(tenant_id)  # UnknownTenant -> exit 2
    if not yes and not typer.confirm(f"delete tenant {tenant_id!r} and all its data?"):
        raise fail("not deleted")
    eng.delete_tenant(tenant_id)
    say(f"deleted tenant {tenant_id}")


@tenant_app.command("add-team")
def tenant_add_team(
    tenant_id: str = typer.Argument(...),
    team_id: str = typer.Argument(..., help="Team id (exact: case and whitespace count)."),
    name: str = typer.Option(None, "--name", help="Display name."),
) -> None:
    """Add (or rename) a team. Teams are made only so (or by `reckon onboard`): a memory
    write naming an unknown team is refused (exit 2)."""
    open_tenant(tenant_id).add_team(team_id, name)
    say(f"team {team_id} in tenant {tenant_id}")


@tenant_app.command("teams")
def tenant_teams(
    tenant_id: str = typer.Argument(...),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list."),
) -> None:
    """List the tenant's team ids."""
    ids = open_tenant(tenant_id).teams()
    if as_json:
        print_json(ids)
        return
    for i in ids:
        say(i)


@tenant_app.command("move")
def tenant_move(
    tenant_id: str = typer.Argument(...),
    to: str = typer.Option(..., "--to", help="Endpoint of the shard map (or 'embedded')."),
) -> None:
    """Move a tenant to another SPARQL endpoint of the shard map: export, import, verify,
    switch (writes wait only during the switch), delete the source."""
    eng = engine()
    t = eng.move_tenant(tenant_id, to)
    say(f"moved tenant {tenant_id} to {to} (generation {t.store.generation()})")


@tenant_app.command("export")
def tenant_export(
    tenant_id: str = typer.Argument(...),
    output: Path = typer.Option(None, "--output", "-o", help="File to write (default: stdout)."),
    wipe: bool = typer.Option(False, "--wipe", help="Verified extraction: export, verify the file, then delete the tenant."),
) -> None:
    """Export the asserted graphs (schema, memories, business) as TriG with a
    `# reckon-export-version` header. `--wipe` needs `--output`."""
    import sys

    eng = engine()
    t = eng.tenant(tenant_id)
    if wipe and output is None:
        raise fail("--wipe needs --output FILE (the export is verified before the tenant is deleted)")
    if output is None:
        sys.stdout.buffer.write(t.store.export_trig())
        return
    import os

    parent = output.parent if str(output.parent) else Path(".")
    if output.is_dir() or not parent.is_dir() or not os.access(parent, os.W_OK):
        why = "is a directory" if output.is_dir() else f"no writable directory {parent}"
        raise fail(f"cannot write the export to {output}: {why}")  # an input error (exit 2), not the store's
    t.export(output)
    if not t.verify_export(output):
        raise fail(f"export {output} does not match the tenant; nothing deleted", EXIT_INVALID)
    warn(f"exported tenant {tenant_id} to {output} (verified)")
    if wipe:
        eng.delete_tenant(tenant_id)
        warn(f"deleted tenant {tenant_id}")


@tenant_app.command("import")
def tenant_import(
    tenant_id: str = typer.Argument(..., help="Id of the NEW tenant."),
    source: Path = typer.Argument(..., help="A file written by `reckon tenant export`."),
) -> None:
    """Create a tenant from an export; its inferred graph is derived from scratch.
    Tenant IRIs of the exported tenant are renamed to the new id."""
    from reckon._errors import TenantExists

    try:
        t = engine().import_tenant(tenant_id, source)
    except TenantExists as e:
        raise fail(str(e)) from e
    n = len(t.memories(active_only=False))
    say(f"imported tenant {t.id} from {source}: {n} memories, inferred graph re-derived")


def validate_tenant(t: Any) -> dict[str, Any]:
    """Check a tenant: SHACL-validate every memory, every typed business node and the
    settings node (one value each) against the tenant's own shapes; check that the
    schema graph holds every triple of the tenant's stored program; compare the stored
    inferred graph with materialization from scratch, under the tenant's own program,
    over the asserted graphs; and compare the recall index with a rebuild from the
    store (``TenantIndex.check``).

    :returns: `{"memories": n, "nodes": n, "violations": [dicts], "program": digest,
        "schema_missing": [triples as text], "inferred_missing": [triples as text],
        "inferred_extra": [...], "inconsistencies": [{"node", "rule", "facts",
        "explanation"}] (the tenant's rules derive `?x rdf:type owl:Nothing`),
        "recall": {...}, "conforms": bool}`.
    """
    from pyoxigraph import NamedNode

    from reckon.datalog.evaluate import Reasoner
    from reckon.schema import schema_from_graph, validate
    from reckon.store import ASSERTED, BUSINESS, MEMORIES, SCHEMA
    from reckon.store.terms import canonical_term
    from reckon.vocab import A as rdf_type
    asserted = t.store.asserted()
    schema_triples = [q.triple for q in asserted if q.graph_name == SCHEMA]
    data = [q.triple for q in asserted if q.graph_name in (MEMORIES, BUSINESS)]
    memories = [NamedNode(m.iri) for m in t.memories(active_only=False)]
    focus = set(memories)
    focus |= {q.subject for q in asserted
              if q.graph_name in (MEMORIES, BUSINESS) and q.predicate == rdf_type and isinstance(q.subject, NamedNode)}
    from reckon.schema.program import SETTINGS

    settings = [x for x in schema_triples if x.subject == SETTINGS]
    if settings:
        focus.add(SETTINGS)
    violations = validate(data + settings, sorted(focus, key=str), schema=schema_from_graph(schema_triples))
    violations = [v for v in violations if v["severity"] == "Violation"]
    program = t.program()
    stored = set(schema_triples)
    schema_missing = sorted(str(x) for x in program.schema_triples() - stored)
    ruleset = program.ruleset()
    base = [q.triple for q in asserted if q.graph_name in ASSERTED]
    expected: set[Any] = set()
    inconsistencies: list[dict[str, Any]] = []
    if ruleset is not None:
        r = Reasoner(ruleset, canonical=canonical_term)
        r.load(base)
        expected = r.inferred()
        inconsistencies = [
            {"node": str(i.node), "rule": i.rule, "facts": [str(f) for f in i.facts], "explanation": i.render()}
            for i in r.inconsistencies()
        ]
    inferred = t.store.inferred()
    missing = sorted(str(x) for x in expected - inferred)
    extra = sorted(str(x) for x in inferred - expected)
    recall = t.recall.check()
    return {
        "tenant": t.id,
        "memories": len(memories),
        "nodes": len(focus),
        "violations": violations,
        "program": program.digest,
        "modules": program.names(),
        "schema_missing": schema_missing,
        "inferred": len(inferred),
        "inferred_missing": missing,
        "inferred_extra": extra,
        "inconsistencies": inconsistencies,
        "recall": recall,
        "conforms": not violations and not missing and not extra and not schema_missing and not inconsistencies
        and recall["conforms"],
    }


@tenant_app.command("validate")
def tenant_validate(
    tenant_id: str = typer.Argument(...),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """SHACL-validate every memory (and typed business node), check that the inferred
    graph equals recomputation from scratch, and report every inconsistency the tenant's
    rules derive (a node in owl:Nothing, with rule and explanation). Exit 1 when not
    conformant."""
    from reckon.schema import format_violations

    report = validate_tenant(open_tenant(tenant_id))
    if as_json:
        print_json(report)
    else:
        say(
            f"tenant {report['tenant']}: {report['memories']} memories, {report['nodes']} nodes validated, "
            f"{len(report['violations'])} violations; inferred graph {report['inferred']} triples, "
            f"{len(report['inferred_missing'])} missing and {len(report['inferred_extra'])} extra vs recomputation"
        )
        if report["violations"]:
            warn(format_violations(report["violations"]), markup=False)
        for line in report["schema_missing"][:20]:
            warn(f"schema graph lacks a triple of the program: {line}", markup=False)
        for line in report["inferred_missing"][:20]:
            warn(f"missing inferred: {line}", markup=False)
        for line in report["inferred_extra"][:20]:
            warn(f"extra inferred: {line}", markup=False)
        for inc in report["inconsistencies"][:20]:
            warn(f"inconsistent: {inc['node']} (rule {inc['rule']})\n{inc['explanation']}", markup=False)
        rc = report["recall"]
        say(f"recall index: {rc['documents']} documents, {rc['vectors']} with vectors ({rc['embedder']}), "
            f"{len(rc['missing'])} missing, {len(rc['extra'])} extra and {len(rc['stale'])} stale vs the store")
        for what in ("missing", "extra", "stale"):
            for mid in rc[what][:20]:
                warn(f"recall index {what}: {mid}", markup=False)
    if not report["conforms"]:
        raise typer.Exit(EXIT_INVALID)
    if not as_json:
        say("conforms")


# --------------------------------------------------------------------------- onboarding
@app.command("onboard")
def onboard_cmd(
    file: Path = typer.Argument(..., help="Onboarding YAML (see examples/acme.yaml)."),
    tenant_id: str = typer.Option(None, "--tenant", "-t", help="Tenant id (default: the file's `tenant`)."),
    existing: bool = typer.Option(False, "--existing", help="Add to an existing tenant instead of creating one."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Onboard a tenant from a YAML file: company, teams, people, accounts and the first
    objective, fact and preference (seed 003 §5). A file missing any of the three is
    refused (exit 2) naming what is missing; an invalid seed memory exits 1; a failed
    onboarding leaves no tenant."""
    from reckon._errors import TenantExists
    from reckon.onboarding import onboard

    try:
        with memory_write():  # an invalid seed memory exits 1, like a shape violation
            result = onboard(engine(), file, tenant_id=tenant_id, existing=existing)
    except TenantExists as e:
        raise fail(f"{e} (pass --existing to add to it)") from e
    if as_json:
        print_json(result.model_dump())
        return
    verb = "created" if result.created else "extended"
    say(f"{verb} tenant {result.tenant}: {len(result.memories)} seed memories")
    for key, mid in result.memories.items():
        say(f"  {key}: {mid}")


# --------------------------------------------------------------------------- modules (program)
modules_app = typer.Typer(
    help="The tenant's program: list, add (install / upgrade), remove or adopt modules. Each change is one "
    "atomic migration that re-derives the inferred graph and reports what changed.",
    no_args_is_help=True,
)
tenant_app.add_typer(modules_app, name="modules")


def _print_report(report: Any, as_json: bool) -> None:
    d = report.as_dict()
    if as_json:
        print_json(d)
        return
    if d["action"] == "unchanged":
        say(f"module {d['module']} is installed with that content: nothing changed")
        return
    what = f"{d['action']} {d['module']}" if d["module"] else d["action"]
    say(f"{what}: program {d['program_after'][:19]}… (was {str(d['program_before'])[:19]}…), generation {d['generation']}")
    say(f"  schema: +{d['schema_added']} -{d['schema_removed']} triples; "
        f"inferred: +{d['inferred_added']} -{d['inferred_removed']} triples")
    for name, (before, after) in sorted(d["settings"].items()):
        say(f"  setting {name}: {before} -> {after}")
    for c in d["status_changes"][:50]:
        say(f"  memory {c['memory']} {c['property']}: {', '.join(c['before']) or '-'} -> {', '.join(c['after']) or '-'}")
    if len(d["status_changes"]) > 50:
        say(f"  ... {len(d['status_changes']) - 50} more status changes (--json lists all)")


@modules_app.command("list")
def modules_list(
    tenant_id: str = typer.Argument(...),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the modules of the tenant's program (name, digest, files)."""
    t = open_tenant(tenant_id)
    mods = t.modules()
    if as_json:
        print_json({"program": t.program().digest, "modules": [vars(m) for m in mods]})
        return
    say(f"program {t.program().digest}")
    for m in mods:
        say(f"  {m.name}  {m.digest[:19]}…  {', '.join(m.files)}")


@modules_app.command("add")
def modules_add(
    tenant_id: str = typer.Argument(...),
    paths: list[Path] = typer.Argument(..., help="Module files (.ttl ontology/shapes, .srl/.dlog rules) or a folder."),
    name: str = typer.Option(None, "--name", help="Module name (default: the folder name or first file's stem)."),
    upgrade: bool = typer.Option(False, "--upgrade", help="Replace the installed module of that name."),
    as_json: bool = typer.Option(False, "--json", help="Print the migration report as JSON."),
) -> None:
    """Install a module (or upgrade one with --upgrade): one atomic migration. A shipped
    module's name alone (core, marketing, recruiting, agent) installs this Reckon's copy."""
    from reckon.schema.program import SHIPPED_MODULES

    t = open_tenant(tenant_id)
    if len(paths) == 1 and str(paths[0]) in SHIPPED_MODULES and not paths[0].exists():
        _print_report(t.install_module(str(paths[0]), upgrade=upgrade), as_json)
        return
    _print_report(t.install_module(list(paths), name=name, upgrade=upgrade), as_json)


@modules_app.command("remove")
def modules_remove(
    tenant_id: str = typer.Argument(...),
    name: str = typer.Argument(..., help="Module name (see `modules list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print the migration report as JSON."),
) -> None:
    """Remove a module from the tenant's program: one atomic migration."""
    _print_report(open_tenant(tenant_id).remove_module(name), as_json)


@modules_app.command("adopt")
def modules_adopt(
    tenant_id: str = typer.Argument(...),
    paths: list[Path] = typer.Argument(None, help="The author's module files the tenant was created with."),
    keep_unknown_schema: bool = typer.Option(
        False, "--keep-unknown-schema", help="Keep schema triples no module produces as module 'legacy-schema'."),
    as_json: bool = typer.Option(False, "--json", help="Print the migration report as JSON."),
) -> None:
    """Record the program of a tenant created before Reckon stored programs in tenants:
    the shipped modules plus PATHS."""
    from reckon._errors import UnknownTenant
    from reckon.api import Engine
    from reckon.api._program import adopt
    from reckon.api._tenant import Tenant
    from reckon.store import TenantStore, tenant_dir, validate_tenant_id

    eng = Engine(state.data_dir, modules=list(paths or []))
    path = tenant_dir(eng.data_dir, validate_tenant_id(tenant_id))
    if not (path / "meta.json").is_file():
        raise UnknownTenant(f"no tenant {tenant_id!r} in {eng.data_dir}")
    t = Tenant(eng, TenantStore(path, program_resolver=eng._resolve))
    _print_report(adopt(t, eng.program, keep_unknown_schema=keep_unknown_schema), as_json)


# --------------------------------------------------------------------------- settings
settings_app = typer.Typer(help="The tenant's settings (thresholds, floors, caps): one value each.",
                           no_args_is_help=True)
tenant_app.add_typer(settings_app, name="settings")


@settings_app.command("get")
def settings_get(
    tenant_id: str = typer.Argument(...),
    name: str = typer.Argument(None, help="One setting (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print the tenant's settings (or one)."""
    from reckon.api._settings import _resolve, setting_specs
    from reckon.store import SCHEMA

    t = open_tenant(tenant_id)
    values = t.settings()
    if name is not None:
        with t.store.snapshot() as view:
            specs = setting_specs([q.triple for q in view.quads(None, None, None, SCHEMA)])
        key, _ = _resolve(specs, name)
        values = {key: values.get(key)}
    if as_json:
        print_json({k: (str(v) if v is not None and not isinstance(v, (int, bool, list)) else v)
                    for k, v in values.items()})
        return
    for k, v in values.items():
        say(f"{k} = {v}")


@settings_app.command("set")
def settings_set(
    tenant_id: str = typer.Argument(...),
    name: str = typer.Argument(..., help="near_limit_threshold, live_context_cap, confidence_floor, "
                               "live_importance_floor, refuse_inconsistent, or a module's setting."),
    value: str = typer.Argument(..., help="The new value (decimal / integer / true|false as the setting's type)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Replace one setting's value; the statuses that read it are re-derived. A value
    of the wrong type (not a decimal, an integer, true / false as the setting's type)
    exits 2, like a bad amount of `reckon spend set` or `kpi set`; a value of the right
    type its shape refuses (out of range) exits 1, like data that does not conform; an
    unknown setting or tenant exits 2."""
    from rich.markup import escape

    from reckon._errors import InvalidInput, ShapeViolation

    t = open_tenant(tenant_id)
    try:
        change = t.set_setting(name, value)
    except InvalidInput as exc:
        if isinstance(exc, ShapeViolation) or exc.field == "name":
            raise
        err_console.print(f"[red]invalid setting:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_INPUT) from None
    if as_json:
        print_json(change)
        return
    say(f"{change['name']}: {change['before']} -> {change['after']}")
