"""The query pool talks to its worker processes on descriptors of any number: a process
holding more than FD_SETSIZE (1,024) descriptors -- many tenants, many engines open --
still answers SPARQL (``select()`` refused such a descriptor with "filedescriptor out of
range in select()"; the pool polls)."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from reckon.api import Engine


def test_sparql_answers_when_the_process_holds_over_1024_descriptors(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1400
    if hard != resource.RLIM_INFINITY and hard < want:
        pytest.skip(f"the hard descriptor limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    held = []
    try:
        while len(held) < 1100:  # push the next descriptors past FD_SETSIZE
            held.append(os.open(os.devnull, os.O_RDONLY))
        assert held[-1] >= 1024
        engine = Engine(tmp_path, embedder="hashing")
        t = engine.create_tenant("fds")
        rows = t.sparql("SELECT (1 + 1 AS ?two) WHERE {}")
        assert [int(r["two"].value) for r in rows] == [2]
        engine.close()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
