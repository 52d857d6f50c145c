"""Child process of the SIGKILL tests (run as a script); it is killed at a random moment.

usage: python kill_child.py <data_dir> <tenant> <mode> [args]

modes (each prints one acknowledgement line after a call RETURNED, flushed):
  spend                 set_spend("meta", 30000 + i) forever: "i <amount>"
  migrate <srl> <srl2>  upgrade module "watch" alternately to <srl> / <srl2>: "i <program digest>"
  import <export>       import_tenant("imp<i>", <export>): "i imp<i>"
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

from reckon.api import Engine  # noqa: E402


def main() -> None:
    data_dir, tenant_id, mode, *args = sys.argv[1:]
    engine = Engine(data_dir)
    t = engine.tenant(tenant_id)
    i = 0
    while True:
        if mode == "spend":
            amount = 30000 + i
            t.set_spend("meta", f"{amount}.10")
            print(f"{i} {amount}.1", flush=True)
        elif mode == "migrate":
            r = t.install_module(args[i % 2], name="watch", upgrade=True)
            print(f"{i} {r.program_after}", flush=True)
        elif mode == "import":
            engine.import_tenant(f"imp{i}", args[0])
            print(f"{i} imp{i}", flush=True)
        else:  # pragma: no cover
            raise SystemExit(f"unknown mode {mode}")
        i += 1


if __name__ == "__main__":
    main()
