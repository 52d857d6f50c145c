"""A second process writing to the same tenants (run as a script by the history suite).

Reads one JSON command per line on stdin, runs it with its own :class:`reckon.api.Engine`
over the data directory given as argv[1], releases the tenant lock, and answers one JSON
line: ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "<ReckonError class>",
"message": "..."}``.

commands: ``{"op": "spend", "tenant": t, "platform": p, "amount": text}``,
``{"op": "kpi", "tenant": t, "metric": m, "value": text, "platform": p|None}``,
``{"op": "tick", "tenant": t, "now": iso, "allow_backwards": bool}``,
``{"op": "setting", "tenant": t, "name": n, "value": text}``,
``{"op": "budget", "tenant": t, "label": l, "platform": p, "amount": text}`` (result: id),
``{"op": "quit"}``.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

from reckon import ReckonError  # noqa: E402
from reckon.api import Engine, Principal  # noqa: E402

OPS = Principal(person="dana", role="operator")


def run(engine: Engine, cmd: dict) -> object:  # type: ignore[type-arg]
    t = engine.tenant(cmd["tenant"])
    try:
        op = cmd["op"]
        if op == "spend":
            t.set_spend(cmd["platform"], cmd["amount"])
        elif op == "kpi":
            t.set_kpi(cmd["metric"], cmd["value"], platform=cmd.get("platform"))
        elif op == "tick":
            t.tick(datetime.fromisoformat(cmd["now"]), allow_backwards=cmd.get("allow_backwards", False))
        elif op == "setting":
            t.set_setting(cmd["name"], cmd["value"])
        elif op == "budget":
            m = t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                           label=cmd["label"], content=cmd["label"], subclass="BudgetConstraintMemory",
                           properties={"platform": cmd["platform"], "amount": cmd["amount"], "currency": "USD",
                                       "period": "monthly"},
                           conflict_resolution=cmd.get("resolution"), conflict_id=cmd.get("conflict_id"))
            return m.id
        else:
            raise SystemExit(f"unknown op {op}")
        return None
    finally:
        t.store.release()


def main() -> None:
    engine = Engine(sys.argv[1])
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        try:
            out = {"ok": True, "result": run(engine, cmd)}
        except ReckonError as e:
            out = {"ok": False, "error": type(e).__name__, "message": str(e),
                   "conflict_id": getattr(e, "conflict_id", None), "candidates": getattr(e, "candidates", None)}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
