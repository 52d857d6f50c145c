"""Regression: a tenant written only by short-lived processes never got its vectors.

``reckon search`` embeds the tenant's backlog in its background thread and, as the
process exits, finishes the batch in progress (``_close_at_exit``). A backlog larger
than one MiniLM batch was encoded on a ``ThreadPoolExecutor``, which cannot start once
the interpreter shuts down (``RuntimeError: can't register atexit after shutdown``): every
run logged "embedding failed" and exited 0, and the tenant stayed at 0 vectors forever.
The batches now run on the calling thread and the shared helper threads, the caller
taking any no helper started, so an encode at exit completes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reckon.recall import minilm_available

REPO = Path(__file__).resolve().parents[2]


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RECKON_EMBEDDER"}  # the default: MiniLM when installed
    env.update(PYTHONPATH=str(REPO / "engine"), HF_HUB_OFFLINE="1", RECKON_ENCODE_THREADS="2")
    return subprocess.run([sys.executable, "-m", "reckon.cli", "--data-dir", str(data), *args],
                          capture_output=True, text=True, env=env, timeout=600)


def test_one_search_of_a_short_process_embeds_a_backlog_of_several_batches(tmp_path: Path) -> None:
    if not minilm_available():
        if os.environ.get("CI") == "true":
            pytest.fail("the embeddings extra is not installed (CI installs it)")
        pytest.skip("the embeddings extra is not installed")
    from reckon import Engine, Principal

    n = 130  # more than one MiniLM batch: the pool path
    with Engine(tmp_path, embedder="hashing") as engine:  # a writer that never ranks: no vector computed
        t = engine.create_tenant("t1")
        for i in range(n):
            t.remember(kind="fact", scope="user", importance=3, source="agent_tool", principal=Principal(person="dana"),
                       label=f"fact number {i} about apples", content=f"apple river {i} word{i}")
    for f in (tmp_path / "tenants" / "t1" / "recall").glob("vectors-*"):
        f.unlink()  # the hashing writer's vectors: the MiniLM file starts empty
    p = _cli(tmp_path, "search", "--tenant", "t1", "--as", "dana", "apple river")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "embedding failed" not in p.stderr, p.stderr[-2000:]
    v = _cli(tmp_path, "tenant", "validate", "t1")
    assert f"{n} documents, {n} with vectors (all-MiniLM-L6-v2)" in v.stdout, v.stdout + v.stderr[-2000:]
