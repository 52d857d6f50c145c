"""Child process for the multi-process facade tests (run as a script).

usage: python engine_child.py <data_dir> <tenant> <command> [args...]

commands:
  spend <amount>              tenant.set_spend("meta", amount)
  status <memory iri>         print the budget status local name (or "none")
  loop <worker> <n>           n writes alternating set_spend / set_kpi with distinct
                              values; prints "<worker> <i>" after each returns
  remember <worker> <n>       n tenant.remember calls (user scope of person <worker>);
                              prints "<worker> <i> <memory id>" after each returns
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

from reckon import ConflictPending  # noqa: E402
from reckon.api import Engine, Principal  # noqa: E402


def main() -> None:
    data_dir, tenant_id, cmd, *args = sys.argv[1:]
    tenant = Engine(data_dir).tenant(tenant_id)
    if cmd == "spend":
        tenant.set_spend("meta", args[0])
    elif cmd == "status":
        rows = tenant.sparql(
            f"SELECT ?s WHERE {{ <{args[0]}> <https://reckon.dev/ns/marketing#budgetStatus> ?s }}"
        )
        print(rows[0]["s"].value.rsplit("#", 1)[-1] if rows else "none")  # type: ignore[index]
    elif cmd == "loop":
        worker, n = args[0], int(args[1])
        for i in range(n):
            if i % 2 == 0:
                tenant.set_spend("meta", 1000 * (int(worker) + 1) + i)
            else:
                tenant.set_kpi("ROAS", f"{worker}.{i}")
            print(f"{worker} {i}", flush=True)
    elif cmd == "remember":
        worker, n = args[0], int(args[1])
        principal = Principal(person=f"w{worker}")
        for i in range(n):
            # unrelated random words, so the conflict judge sees no overlap between facts
            words = [uuid.uuid4().hex[:10] for _ in range(4)]
            fields = dict(kind="fact", scope="user", importance=3, source="agent_tool",
                          label=" ".join(words[:2]), content=" ".join(words[2:]), principal=principal)
            try:
                m = tenant.remember(**fields)
            except ConflictPending as c:  # hex words can still share sub-tokens: keep both
                m = tenant.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id)
            print(f"{worker} {i} {m.id}", flush=True)
    else:  # pragma: no cover
        raise SystemExit(f"unknown command {cmd}")
    tenant.store.close()


if __name__ == "__main__":
    main()
