"""A write does not wait for another thread's first search to open the tenant's recall.

Found on the 10k-memory bench tenant: a ``Tenant.remember`` made while another thread's
first ``Tenant.search`` was in flight took 1.6-2.2 s instead of 0.8 s. ``py-spy dump``
showed the writer idle in ``Tenant.memory``, waiting for ``Tenant._mlock``, which the
search held in ``Tenant.recall`` while it imported ``reckon.recall.bundle`` (~0.5 s) and
built the ``TenantRecall``. The memory service already existed: ``memory`` (and
``recall``, ``transcripts``) now return what is already built without the lock, and the
import runs outside it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from reckon.api import Engine, Principal
from reckon.recall import bundle

OPS = Principal.operator(person="dana")


def fact(label: str, content: str) -> dict[str, Any]:
    return dict(kind="fact", scope="company", importance=3, source="operator", label=label, content=content,
                principal=OPS)


def test_remember_returns_while_another_threads_first_search_builds_the_recall(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Engine(tmp_path, embedder="hashing").create_tenant("acme").close()
    t = Engine(tmp_path, embedder="hashing").tenant("acme")
    first = t.remember(**fact("Topic alpha", "notes about alpha granite"))  # the memory service exists
    entered, release = threading.Event(), threading.Event()
    real = bundle.TenantRecall.__init__

    def gated(self: bundle.TenantRecall, *a: Any, **kw: Any) -> None:
        entered.set()
        assert release.wait(60), "gate never opened"
        real(self, *a, **kw)

    monkeypatch.setattr(bundle.TenantRecall, "__init__", gated)
    out: dict[str, Any] = {}
    searcher = threading.Thread(target=lambda: out.update(hits=t.search("alpha granite", principal=OPS)))
    searcher.start()
    try:
        assert entered.wait(30)  # the search is building the recall (held at the gate)
        writer = threading.Thread(target=lambda: out.update(late=t.remember(**fact("Topic bravo", "bravo basalt"))))
        writer.start()
        writer.join(30)  # not a timing bound: waiting for the search's lock, it never returns
        assert not writer.is_alive(), "the write waited for the other thread's first search"
        assert searcher.is_alive()  # the write ran while the search was held
    finally:
        release.set()
        searcher.join(60)
    assert [h.memory.id for h in out["hits"]][:1] == [first.id]
    assert out["late"].id in [h.memory.id for h in t.search("bravo basalt", principal=OPS)]
    t.close()
