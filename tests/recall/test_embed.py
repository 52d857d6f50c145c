"""Embedders: hashing fallback determinism; MiniLM shape, normalisation, semantics."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from reckon.recall import HashingEmbedder


def test_hashing_embedder_is_deterministic_and_normalised(hashing: HashingEmbedder) -> None:
    v = hashing.encode(["Meta spend cap of 40k", "Meta spend cap of 40k", ""])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(v[0], v[1])
    assert np.linalg.norm(v[0]) == np.float32(1.0) or abs(np.linalg.norm(v[0]) - 1) < 1e-5
    assert not v[2].any()  # no features -> zero row
    # a fresh instance gives the same vector (no per-process hash salt)
    assert np.allclose(HashingEmbedder().encode(["Meta spend cap of 40k"])[0], v[0])


def test_hashing_similarity_follows_shared_words(hashing: HashingEmbedder) -> None:
    q, near, far = hashing.encode(["painting a sunrise", "she painted the sunrise", "quarterly tax filing"])
    assert q @ near > 0.3 > q @ far


def test_minilm_shape_norm_and_semantics(minilm) -> None:  # type: ignore[no-untyped-def]
    v = minilm.encode(["The car broke down on the highway", "My automobile stopped working",
                       "I baked banana bread"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


# --------------------------------------------------------------------------- runtimes
SENTENCES = [
    "can we scale the spring campaign?",
    "Don't let Meta spend go over $40k this month.",
    "",
    "a",
    "Caroline's new painting of the Sunrise!",
    "Émile a réservé un café à Zürich — 東京 🎉 naïve façade",
    "Keep ad headlines under 40 characters " * 60,  # truncated at 256 word pieces
    "ROAS 2.50 vs target 3.00; CPA $34,000.10 (monthly)",
    "\n\t  leading and trailing whitespace \u2028 line separator  ",
]


def test_tanh_gelu_stays_within_its_bound_of_the_exact_gelu() -> None:
    """The runtime's GELU is the tanh form; against the exact x * Phi(x) (math.erf) it
    differs by under 5e-4 everywhere, 0 at 0, and is exact in the tails."""
    import math

    from reckon.recall._minilm import _gelu

    xs = np.linspace(-9, 9, 36001, dtype=np.float32)
    got = _gelu(xs.copy())
    want = np.array([0.5 * float(x) * (1.0 + math.erf(float(x) / math.sqrt(2.0))) for x in xs])
    err = np.abs(got - want)
    assert float(err.max()) < 5e-4 and float(err.max()) > 1e-5  # the tanh form, not the erf one
    assert float(err[np.abs(xs) > 6].max()) < 1e-5
    assert got[np.argmin(np.abs(xs))] == 0.0


def test_numpy_runtime_matches_sentence_transformers(minilm) -> None:  # type: ignore[no-untyped-def]
    """The torch-free runtime gives the reference vectors: cosine >= 0.9999 per sentence
    (the same weights, tokenizer, truncation, mean pooling and normalisation)."""
    import importlib.util

    from reckon.recall import MiniLMEmbedder

    if importlib.util.find_spec("sentence_transformers") is None:
        msg = "sentence-transformers (the reference runtime, extra embeddings-torch) not installed"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    np_emb = MiniLMEmbedder(runtime="numpy")
    ref = MiniLMEmbedder(runtime="torch")
    a = np_emb.encode(SENTENCES)
    b = ref.encode(SENTENCES)
    assert np_emb.runtime == "numpy" and ref.runtime == "torch" and np_emb.name == ref.name
    cos = (a * b).sum(axis=1)
    assert cos.min() >= 0.9999, cos
    # batching does not change a vector
    one = np.stack([np_emb.encode([s])[0] for s in SENTENCES[:4]])
    assert np.allclose(one, a[:4], atol=1e-5)


def test_numpy_runtime_threads_and_packing_do_not_change_a_vector(minilm) -> None:  # type: ignore[no-untyped-def]
    """A bulk encode (several length-sorted batches on two threads, per-token layers on
    the packed valid positions) gives each sentence the vector it gets alone."""
    from reckon.recall import MiniLMEmbedder

    numpy_emb = MiniLMEmbedder(runtime="numpy")  # the default (auto) may load another runtime
    numpy_emb.load()
    model = numpy_emb._model
    texts = [f"turn {i}: " + "we went hiking near the lake last weekend " * (i % 7) for i in range(70)]
    texts += SENTENCES
    two = model.encode(texts, batch_size=8, threads=2)
    one = model.encode(texts, batch_size=8, threads=1)
    assert np.array_equal(one, two)  # the same batches, whichever thread ran them
    alone = np.stack([model.encode([t])[0] for t in texts[::9]])
    assert np.allclose(alone, one[::9], atol=2e-6)
    assert np.allclose(np.linalg.norm(one[np.linalg.norm(one, axis=1) > 0], axis=1), 1.0, atol=1e-5)


def test_encode_threads_setting(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall._minilm import encode_threads

    monkeypatch.setenv("RECKON_ENCODE_THREADS", "3")
    assert encode_threads() == 3
    monkeypatch.setenv("RECKON_ENCODE_THREADS", "not a number")
    assert 1 <= encode_threads() <= 4
    monkeypatch.delenv("RECKON_ENCODE_THREADS")
    assert encode_threads() == max(1, min(len(os.sched_getaffinity(0)), 4))


# --------------------------------------------------------------------------- OpenAI-compatible
class _EmbeddingsServer:
    """A small OpenAI-compatible ``/v1/embeddings`` endpoint on 127.0.0.1 answering the
    hashing embedder's vectors (out of order, as the API allows), for the test only."""

    def __init__(self, fail: bool = False) -> None:
        import http.server
        import json
        import threading

        from reckon.recall import HashingEmbedder

        self.requests: list[dict] = []
        outer = self
        hashing = HashingEmbedder(dim=64)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                if fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                vecs = hashing.encode(body["input"])
                data = [{"object": "embedding", "index": i, "embedding": vecs[i].tolist()}
                        for i in reversed(range(len(vecs)))]
                out = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._t = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._t.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_openai_compatible_endpoint(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall import HashingEmbedder, embedder_from_name

    srv = _EmbeddingsServer()
    try:
        monkeypatch.setenv("RECKON_EMBEDDER_URL", srv.url)
        monkeypatch.setenv("RECKON_EMBEDDER_MODEL", "tiny-embed")
        monkeypatch.setenv("RECKON_EMBEDDER_API_KEY", "sk-test")
        emb = embedder_from_name("openai")
        emb.batch_size = 2
        texts = ["meta budget cap", "weekly report", "", "sunrise painting", "x"]
        v = emb.encode(texts)
        assert v.shape == (5, 64) and emb.dim == 64 and emb.name == "openai:tiny-embed@127.0.0.1"
        want = HashingEmbedder(dim=64).encode(texts[:2] + [" "] + texts[3:])
        assert np.allclose(v, want, atol=1e-6)  # reordered by "index", normalised
        assert [r["body"]["input"] for r in srv.requests] == [texts[:2], [" ", "sunrise painting"], ["x"]]
        assert {r["auth"] for r in srv.requests} == {"Bearer sk-test"}
        assert {r["path"] for r in srv.requests} == {"/v1/embeddings"}
    finally:
        srv.close()


def test_openai_endpoint_failure_is_embedding_unavailable_and_keyword_search_still_works(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from reckon.api import Engine, Principal
    from reckon.recall import EmbeddingUnavailable, OpenAIEmbedder

    srv = _EmbeddingsServer(fail=True)
    try:
        emb = OpenAIEmbedder(srv.url, "tiny-embed", dim=64)
        with pytest.raises(EmbeddingUnavailable, match="500"):
            emb.encode(["x"])
        ops = Principal.operator(person="dana")
        t = Engine(tmp_path, embedder=emb).create_tenant("acme")
        m = t.remember(kind="fact", scope="company", importance=3, source="operator", principal=ops,
                       label="Warehouse hours", content="the warehouse closes at six")
        assert [h.memory.id for h in t.search("warehouse closes", principal=ops)] == [m.id]
        assert not t.recall.wait(10)  # the endpoint fails: the vector stays queued, retried later
        assert t.recall.index.pending() == 1
        assert [h.memory.id for h in t.search("warehouse closes", principal=ops)] == [m.id]
    finally:
        srv.close()


def test_unknown_embedder_name_is_a_clear_error() -> None:
    from reckon._errors import InvalidInput
    from reckon.recall import embedder_from_name

    with pytest.raises(InvalidInput, match="unknown embedder 'bert'.*auto, minilm, minilm-torch, openai, hashing"):
        embedder_from_name("bert")


@pytest.mark.parametrize("name, env, asked", [
    ("minilm-torch", {}, "embedder 'minilm-torch'"),
    ("minilm", {"RECKON_MINILM_RUNTIME": "torch"}, "RECKON_MINILM_RUNTIME=torch"),
])
def test_an_asked_for_torch_runtime_that_is_missing_is_an_error_naming_its_extra(
        monkeypatch: pytest.MonkeyPatch, name: str, env: dict[str, str], asked: str) -> None:
    """README's embedder table: minilm-torch needs ``pip install ".[embeddings-torch]"``
    after torch's CPU build. Asked for explicitly and missing, it is refused at once (no
    silent hashing fallback) with that hint, not the ``embeddings`` extra's."""
    import sys

    from reckon.recall.embed import EmbeddingUnavailable, embedder_from_name

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed
    with pytest.raises(EmbeddingUnavailable) as err:
        embedder_from_name(name, env=env)
    msg = str(err.value)
    assert msg.startswith(f"{asked} asks for the MiniLM torch runtime, but sentence-transformers is not installed")
    assert 'pip install ".[embeddings-torch]"' in msg and "download.pytorch.org/whl/cpu" in msg
    assert '".[embeddings]"' not in msg


def test_the_session_caches_the_onnx_graph_outside_home(_cache_outside_home: Path) -> None:
    """tests/conftest.py points ``$RECKON_CACHE_DIR`` at a temporary directory: the
    minilm fixture's graph build never writes into ``~/.cache/reckon``."""
    from reckon.recall._minilm_ort import cache_dir

    where = cache_dir()
    assert where is not None and where.resolve() == _cache_outside_home.resolve()
    assert not where.resolve().is_relative_to((Path.home() / ".cache").resolve())
