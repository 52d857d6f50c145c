"""`reckon demo`: onboard the demo company from the shipped `examples/` and replay a
month of its daily spend and revenue, printing the context bundle whenever a derived
status changes, then the explanation of the final budget status.

The data (`examples/demo-spend-2026-03.csv`, written for the demo; see
`examples/README.md`): Meta and Google daily spend, conversions and revenue for March
2026. The onboarding file (`examples/acme.yaml`) seeds a Meta budget cap of $40,000 a
month and a blended ROAS >= 3.0 target, so over the month the cap goes within_budget ->
near_limit (>= 80 %) -> over_budget and the target met -> below. Everything is derived by
the rules from the month-to-date spend records and KPIs the replay writes.

Uses a fresh temporary data directory unless `--data-dir` (or `$RECKON_DATA_DIR`) is
given. Works without sentence-transformers (the bundle falls back to the lexical
embedder); `--no-embeddings` forces that fallback.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from reckon.cli._app import app, console, fail, state

DEMO_FILE = "acme.yaml"
DEMO_DATA = "demo-spend-2026-03.csv"
CONVERSATION = "How is our Meta spend tracking against the monthly cap, and are we still hitting our ROAS goal?"


def _statuses(tenant: Any, ids: dict[str, str]) -> dict[str, tuple[str | None, Any]]:
    """`label -> (status, value)` of the budget cap and the targets."""
    out = {}
    for mid in ids.values():
        m = tenant.get(mid)
        if "budgetStatus" in m.status or m.subclass == "BudgetConstraintMemory":
            out[m.label] = (m.status.get("budgetStatus"), m.status.get("utilisation"))
        elif "targetStatus" in m.status or m.subclass == "PerformanceTargetMemory":
            out[m.label] = (m.status.get("targetStatus"), m.status.get("currentValue"))
    return out


def run_demo(data_dir: Path, *, out: Console, tenant_id: str = "acme", budget_chars: int = 3000) -> dict[str, Any]:
    """Run the demo into `data_dir` and print to `out`.

    :returns: `{"tenant": id, "days": [(date, {label: (status, value)})], "printed":
        [dates whose bundle was printed], "explained": rendered explanation}`.
    :raises TenantExists: when `tenant_id` exists in `data_dir`.
    """
    from pyoxigraph import NamedNode

    from reckon import loaders
    from reckon._errors import TenantExists, UnknownTenant
    from reckon._resources import resource_dir
    from reckon.api import Engine, Principal
    from reckon.onboarding import load_spec, onboard
    from reckon.recall.bundle import check_budget_chars

    check_budget_chars(budget_chars)  # refused before anything is printed or written
    examples = resource_dir("examples")
    spec_path = examples / DEMO_FILE
    engine = Engine(data_dir)
    try:
        engine.tenant(tenant_id)
    except UnknownTenant:
        pass
    else:
        raise TenantExists(f"tenant {tenant_id!r} already exists in {data_dir}")
    engine._make_data_dir()  # noqa: SLF001 - a data directory that cannot be made is refused before the banner
    out.print(Rule(f"Reckon demo: onboarding {spec_path.name}"))
    result = onboard(engine, spec_path, tenant_id=tenant_id)
    tenant = engine.tenant(result.tenant)
    spec = load_spec(spec_path)
    out.print(f"tenant [bold]{result.tenant}[/bold] ({spec.company_name}) in {data_dir}: "
              f"{len(result.memories)} seed memories (objective, fact, preference, ...)", soft_wrap=True)

    records = loaders.read_csv(examples / DEMO_DATA)
    daily = loaders.aggregate_daily(records)
    tracked = {k: v for k, v in result.memories.items()}
    person = next((p for p in spec.people if p.id == spec.operator), None)
    who = Principal(person=spec.operator, teams=list(person.teams) if person else [], role="operator")
    days = sorted({d.day for d in daily})
    out.print(f"replaying {len(days)} days of {', '.join(sorted({d.platform for d in daily}))} spend "
              f"and revenue ({days[0]} .. {days[-1]}): month-to-date spend, ROAS, clock\n", soft_wrap=True)

    history: list[tuple[Any, dict[str, tuple[str | None, Any]]]] = []
    printed: list[Any] = []
    previous: dict[str, tuple[str | None, Any]] | None = None

    def on_day(ds: loaders.DayState) -> None:
        nonlocal previous
        now = _statuses(tenant, tracked)
        history.append((ds.day, now))
        changed = [
            f"{label}: {previous[label][0] if previous and label in previous else '—'} -> {st}"
            for label, (st, _) in now.items()
            if previous is None or label not in previous or previous[label][0] != st
        ]
        first, last = ds.day == days[0], ds.day == days[-1]
        if changed or first or last:
            why = "; ".join(changed) if changed and not first else ("first day" if first else "last day")
            out.print(Rule(f"{ds.day}: {why}"))
            bundle = tenant.context(who, conversation=CONVERSATION, budget_chars=budget_chars)
            out.print(bundle.render().rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
            out.print()
            printed.append(ds.day)
        previous = now

    loaders.replay_daily(tenant, daily, kpis=("ROAS",), company_kpis=True, on_day=on_day)

    table = Table("day", *[label for label in history[-1][1]], title="Derived statuses, day by day")
    for day, st in history:
        cells = []
        for label in history[-1][1]:
            s, v = st.get(label, (None, None))
            value = f"{v:.0%}" if isinstance(v, float) and "cap" in label.lower() else (f"{v:.3f}" if isinstance(v, float) else "")
            cells.append(f"{s or '—'} {value}".strip())
        table.add_row(str(day), *cells)
    out.print(table)

    budget_id = result.memories["objective"]
    budget = tenant.get(budget_id)
    status = budget.status.get("budgetStatus")
    explained = ""
    if status is not None:
        from reckon.vocab import MK as mk
        status_iri = {"within_budget": "WithinBudget", "near_limit": "NearLimit", "over_budget": "OverBudget"}[status]
        out.print(Rule(f"Why is {budget.label!r} {status}? (reckon explain)"))
        explained = tenant.explain(budget.iri, mk + "budgetStatus", NamedNode(mk + status_iri)).render()
        out.print(explained, markup=False, highlight=False, soft_wrap=True)
    out.print(Rule())
    return {"tenant": tenant.id, "days": history, "printed": printed, "explained": explained}


@app.command("demo")
def demo(
    tenant_id: str = typer.Option("acme", "--tenant", "-t", help="Tenant id to create."),
    keep: bool = typer.Option(False, "--keep", help="Keep the temporary data directory (its path is printed)."),
    embeddings: bool = typer.Option(True, "--embeddings/--no-embeddings",
                                    help="Rank bundle items with MiniLM when installed (else the lexical fallback)."),
    budget: int = typer.Option(3000, "--budget", min=500, help="Bundle size budget, characters (>= 500)."),
    data_dir_opt: Path = typer.Option(None, "--data-dir", help="Run in this data directory (kept) instead of a "
                                      "temporary one; the same as the global `reckon --data-dir DIR demo`."),
) -> None:
    """Onboard a demo company from examples/, replay a month of daily spend and revenue,
    and print the bundle whenever a derived status changes (budget within_budget ->
    near_limit -> over_budget, ROAS target met -> below), then explain one status."""
    from reckon._errors import TenantExists

    if not embeddings:
        os.environ["RECKON_EMBEDDER"] = "hashing"
    temp = None
    if data_dir_opt is not None:
        data_dir = data_dir_opt
    elif state.data_dir_given:
        data_dir = state.data_dir
    else:
        temp = Path(tempfile.mkdtemp(prefix="reckon-demo-"))
        data_dir = temp
    try:
        run_demo(data_dir, out=console, tenant_id=tenant_id, budget_chars=budget)
    except TenantExists as e:
        raise fail(f"{e}; pick another --tenant or --data-dir") from e
    finally:
        if temp is not None and not keep:
            shutil.rmtree(temp, ignore_errors=True)
    if temp is None or keep:
        console.print(f"data in {data_dir}; try: reckon --data-dir {data_dir} bundle --tenant {tenant_id} --as dana",
                      markup=False, soft_wrap=True)
