"""A long query holds no lock (issue 9, point 3): while a cartesian ``COUNT(*)`` runs
in a query worker until its deadline, another process writes to the same tenant and
its write is acknowledged before the query ends; then a read sees the write."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reckon._errors import QueryLimitExceeded
from reckon.api import Engine
from reckon.store import QueryLimits

pytestmark = pytest.mark.slow

CHILD = Path(__file__).resolve().parents[1] / "api" / "engine_child.py"
CARTESIAN = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"


def test_writes_from_another_process_go_through_during_a_long_query(tmp_path) -> None:
    eng = Engine(tmp_path, query_limits=QueryLimits(timeout=20.0))
    t = eng.create_tenant("acme")
    t.sparql("ASK {}")  # the worker is up and has the tenant's mirror
    t.store.release()
    outcome: dict[str, object] = {}

    def long_query() -> None:
        try:
            t.sparql(CARTESIAN)
        except QueryLimitExceeded as exc:
            outcome["limit"] = exc.limit

    q = threading.Thread(target=long_query)
    q.start()
    writes_done_while_query_ran = []
    for amount in ("1000", "2000", "3000"):
        r = subprocess.run([sys.executable, str(CHILD), str(tmp_path), "acme", "spend", amount],
                           capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0, r.stderr[-2000:]
        writes_done_while_query_ran.append(q.is_alive())
    q.join(timeout=120)
    assert writes_done_while_query_ran == [True, True, True]
    assert outcome == {"limit": "deadline"}
    rows = t.sparql("PREFIX mk: <https://reckon.dev/ns/marketing#> SELECT ?a WHERE { ?s mk:amount ?a }")
    assert [r["a"].value for r in rows] == ["3000"]
    eng.close()
