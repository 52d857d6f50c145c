"""A MiniLM runtime that is installed but fails to load (here: its loader made to raise).

Explicit choice (``RECKON_EMBEDDER=minilm`` + ``RECKON_MINILM_RUNTIME=numpy``, or
``minilm-torch``): ``Tenant.search`` raises ``EmbeddingUnavailable`` naming the real cause
(``remember`` commits and keeps the memory: embedding runs in the background and is
retried); before, the index silently switched to hashing. ``auto``: the switch to hashing
is logged once with the cause, and ``Tenant`` status (``embedder``) names the fallback and
the cause."""

from __future__ import annotations

import logging

import pytest

from reckon.api import Engine, Principal
from reckon.recall import EmbeddingUnavailable
from reckon.recall.embed import MiniLMEmbedder, embedder_from_name

OPS = Principal.operator("ann")
FACT = dict(kind="fact", scope="company", importance=3, label="Meta cap", content="Meta spend under 40000 USD", source="operator")


@pytest.fixture()
def broken_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(runtime: str) -> None:
        raise RuntimeError(f"{runtime} weights are corrupt")

    monkeypatch.setattr(MiniLMEmbedder, "_load_runtime", staticmethod(fail))


@pytest.mark.parametrize("name,env,runtime", [("minilm", {"RECKON_MINILM_RUNTIME": "numpy"}, "numpy"),
                                               ("minilm-torch", {}, "torch")])
def test_explicit_runtime_that_fails_to_load_raises_the_cause(tmp_path, broken_loader, name, env, runtime):
    try:
        emb = embedder_from_name(name, env=env)
    except EmbeddingUnavailable:
        pytest.skip(f"the {runtime} runtime is not installed")
    t = Engine(tmp_path, embedder=emb).create_tenant("acme", company_name="Acme")
    m = t.remember(**FACT, principal=OPS)  # committed (embedding is in the background): acknowledged, kept
    with pytest.raises(EmbeddingUnavailable, match=f"RuntimeError: {runtime} weights are corrupt"):
        t.search("meta spend", principal=OPS)
    assert t.get(m.id, principal=OPS).label == "Meta cap"
    assert "hashing" not in t.recall.index.embedder_name


def test_auto_runtime_that_fails_to_load_falls_back_once_with_the_cause(tmp_path, broken_loader, caplog):
    emb = embedder_from_name("minilm", env={})
    assert emb.explicit is False
    t = Engine(tmp_path, embedder=emb).create_tenant("acme", company_name="Acme")
    with caplog.at_level(logging.WARNING, logger="reckon.recall"):
        m = t.remember(**FACT, principal=OPS)
        t.remember(**{**FACT, "label": "TikTok cap", "content": "TikTok spend under 9000 USD"}, principal=OPS)
        assert [h.memory.id for h in t.search("meta spend", principal=OPS)][:1] == [m.id]
    fell = [r for r in caplog.records if "hashing fallback" in r.getMessage()]
    assert len(fell) == 1 and "weights are corrupt" in fell[0].getMessage(), caplog.text
    name = t.recall.index.embedder_name
    assert name.startswith("hashing-384 (fallback: all-MiniLM-L6-v2 unavailable: ") and "weights are corrupt" in name
