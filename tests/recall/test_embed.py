"""Embedders: hashing fallback determinism; MiniLM shape, normalisation, semantics."""

from __future__ import annotations

import numpy as np

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
