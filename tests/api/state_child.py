"""Child process for the reasoner-state tests (run as a script).

usage: python state_child.py <data_dir> <tenant> <n> [kill-before-state | kill-before-rename | torn-state]

Makes ``n`` writes through ``Tenant.*`` (budget caps and spend refreshes), printing
``done <i> <generation>`` after each returns, then exits without closing the tenant (the
state file is written, when it is, by the lock's idle release or at exit). With
``kill-before-state`` the process SIGKILLs itself at the moment it would write the
reasoner state file -- after a commit was acknowledged by the store, before the state
reaches the disk; with ``kill-before-rename`` once the temporary file is written, before
it is renamed into place; with ``torn-state`` after renaming a temporary file cut to half
its length into place (what a torn write would leave).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

from reckon.api import Engine, Principal  # noqa: E402
from reckon.store import TenantStore  # noqa: E402

OPS = Principal(person="dana", role="operator")


def main() -> None:
    data_dir, tenant_id, n, *flags = sys.argv[1:]
    if "kill-before-state" in flags:
        def die(self: TenantStore, **kw: object) -> None:
            if self.last_commit is None:  # a release before this process wrote anything
                return
            print("dying", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        TenantStore._save_reasoner_state = die  # type: ignore[method-assign]
    if "kill-before-rename" in flags or "torn-state" in flags:
        import reckon.store.tenant_store as ts

        real_replace = os.replace
        torn = "torn-state" in flags

        class _Os:  # the module's ``os`` with a replace that dies around the state file's rename
            def __getattr__(self, name: str) -> object:
                return getattr(os, name)

            @staticmethod
            def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
                if ".reasoner.state." not in str(src):
                    real_replace(src, dst)
                    return
                if torn:
                    size = os.path.getsize(src)
                    with open(src, "r+b") as f:
                        f.truncate(size // 2)
                    real_replace(src, dst)
                print("dying", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

        ts.os = _Os()  # type: ignore[assignment]
    t = Engine(data_dir).tenant(tenant_id)
    for i in range(int(n)):
        if i % 2 == 0:
            platform = ["google", "tiktok", "linkedin", "bing"][(i // 2) % 4]
            t.remember(kind="objective", scope="company", importance=5, source="operator", principal=OPS,
                       subclass="BudgetConstraintMemory", label=f"child cap {i}",
                       content=f"{platform} ceiling {i} set by the worker",
                       properties={"platform": platform, "amount": str(20000 + i), "currency": "USD",
                                   "period": "monthly"})
        else:
            t.set_spend("google", 19000 + 7 * i)
        print("done", i, t.store.generation(), flush=True)


if __name__ == "__main__":
    main()
