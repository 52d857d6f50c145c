"""Process S of the delete-and-recreate test: holds tenant ``acme`` open while another
process deletes and re-creates it. Reads commands on stdin, one per line, and answers
one line each on stdout (``ok ...`` or ``error <ExceptionClass>``).

commands: open | labels (old Tenant object) | sparql (old) | write (old) | kpi (old)
| reopen-labels (engine.tenant again) | reopen-sparql | release | quit
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2] / "engine"), str(HERE.parents[2])]

from reckon.api import Engine, Principal

Q = ("SELECT ?l WHERE { GRAPH <urn:reckon:graph:memories> { ?m a <https://reckon.dev/ns/core#Memory> ; "
     "<http://www.w3.org/2000/01/rdf-schema#label> ?l } } ORDER BY ?l")


def main() -> None:
    engine = Engine(sys.argv[1])
    t = None
    ops = Principal.operator("dana")
    for line in sys.stdin:
        cmd = line.strip()
        try:
            if cmd == "open":
                t = engine.tenant("acme")
                out = "ok " + ",".join(sorted(m.label for m in t.memories()))
            elif cmd == "labels":
                out = "ok " + ",".join(sorted(m.label for m in t.memories()))
            elif cmd == "sparql":
                out = "ok " + ",".join(r["l"].value for r in t.sparql(Q))
            elif cmd == "write":
                m = t.remember(principal=ops, kind="fact", scope="company", importance=3, source="operator",
                               label="written-by-S", content="S writes after the delete")
                out = "ok " + m.id
            elif cmd == "kpi":
                t.set_kpi("ROAS", "2.5")
                out = "ok"
            elif cmd == "reopen-labels":
                out = "ok " + ",".join(sorted(m.label for m in engine.tenant("acme").memories()))
            elif cmd == "reopen-sparql":
                out = "ok " + ",".join(r["l"].value for r in engine.tenant("acme").sparql(Q))
            elif cmd == "release":
                t.store.release()
                out = "ok"
            elif cmd == "quit":
                print("ok", flush=True)
                return
            else:
                out = f"error unknown command {cmd!r}"
        except Exception as exc:  # noqa: BLE001 - reported to the test
            out = f"error {type(exc).__name__} {str(exc)[:200]}".replace("\n", " ")
        print(out, flush=True)


if __name__ == "__main__":
    main()
