"""Several processes record turns of one conversation at once: every turn lands exactly
once, at a unique position (orders are assigned inside the tenant's write lock)."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from pathlib import Path

from reckon import Principal
from reckon.api import Engine

REPO = Path(__file__).resolve().parents[2]


def _child(data_dir: str, who: str, n: int) -> None:
    os.environ["RECKON_EMBEDDER"] = "hashing"
    os.environ["RECKON_JOBS_URL"] = "off"
    sys.path.insert(0, str(REPO / "engine"))
    t = Engine(data_dir).tenant("acme")
    for i in range(n):
        t.record_turn("shared", f"{who} says {i}", principal=Principal.operator("ops"), speaker=who,
                      external_id=f"{who}-{i}")


def test_concurrent_writers_get_unique_orders(tmp_path):
    Engine(tmp_path / "d").create_tenant("acme")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_child, args=(str(tmp_path / "d"), who, 12)) for who in ("ann", "bob", "cy")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    turns = Engine(tmp_path / "d").tenant("acme").turns("shared")
    assert [t.order for t in turns] == list(range(36))
    assert sorted(t.text for t in turns) == sorted(f"{w} says {i}" for w in ("ann", "bob", "cy") for i in range(12))
    for w in ("ann", "bob", "cy"):  # each writer's own turns keep their order
        mine = [int(t.text.rsplit(" ", 1)[1]) for t in turns if t.speaker == w]
        assert mine == list(range(12))
