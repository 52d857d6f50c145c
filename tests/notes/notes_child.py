"""Child process of the compare-and-set race (run as a script).

usage: python notes_child.py <data_dir> <tenant> <worker> <key> <rounds> <start-file>

Waits for <start-file>, then until the key's version reaches <rounds>: reads the live
note, and compare-and-sets {"count": count + 1, "by": worker} at the version it read.
Prints "win <version written>" or "lose <expected>" per attempt.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

from reckon.api import Engine, Principal


def main() -> None:
    data_dir, tenant_id, worker, key, rounds, start = sys.argv[1:]
    tenant = Engine(data_dir).tenant(tenant_id)
    notes = tenant.notes
    me = Principal(person=worker)
    notes.get(key)  # load program and reasoner before the start signal
    while not Path(start).exists():
        time.sleep(0.01)
    while True:
        cur = notes.get(key)
        v = cur.version if cur else 0
        if v >= int(rounds):
            break
        count = cur.value["count"] if cur else 0
        res = notes.cas(key, {"count": count + 1, "by": worker}, expected_version=v, principal=me)
        print(f"win {res.version}" if res.ok else f"lose {v}", flush=True)


if __name__ == "__main__":
    main()
