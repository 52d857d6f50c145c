"""The batching both MiniLM runtimes share (:func:`reckon.recall._minilm.encode_batched`),
held to an independent oracle: each text's vector computed alone, by a fake model whose
output depends only on its own word pieces (so any mix-up of rows, padding leaking into
the mean, or a lost batch shows)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reckon.recall._minilm import encode_batched

HIDDEN = 4


@dataclass
class _Enc:
    ids: list[int]


class _Tok:
    """Word pieces: one id per character (1 + code point % 97), [CLS]=101 first."""

    def encode_batch(self, texts: list[str]) -> list[_Enc]:
        return [_Enc([101] + [1 + ord(c) % 97 for c in t]) for t in texts]


def _forward(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Mean over the valid columns of a per-piece feature (padding must not count)."""
    feats = np.stack([ids, ids % 7, ids % 3 + 1, np.ones_like(ids)], axis=-1).astype(np.float32)
    valid = (np.arange(ids.shape[1])[None, :] < lengths[:, None]).astype(np.float32)
    return (feats * valid[..., None]).sum(axis=1) / lengths[:, None].astype(np.float32)


def _alone(text: str) -> np.ndarray:
    e = _Tok().encode_batch([text])[0].ids
    v = _forward(np.asarray([e], dtype=np.int64), np.asarray([len(e)], dtype=np.int64))[0]
    return v / max(float(np.linalg.norm(v)), 1e-12)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(max_size=30), max_size=40), batch_size=st.integers(1, 8), threads=st.integers(1, 3))
def test_batched_encode_equals_each_text_alone_in_input_order(texts: list[str], batch_size: int,
                                                              threads: int) -> None:
    out = encode_batched(_Tok(), texts, HIDDEN, _forward, batch_size, threads)
    assert out.shape == (len(texts), HIDDEN) and out.dtype == np.float32
    for row, text in zip(out, texts):
        np.testing.assert_allclose(row, _alone(text), rtol=1e-5, atol=1e-6)


def test_no_texts_give_an_empty_matrix() -> None:
    out = encode_batched(_Tok(), [], HIDDEN, _forward, 32, 2)
    assert out.shape == (0, HIDDEN)


class _NeverRuns:
    """Helpers that are never scheduled (a machine busy with other work)."""

    def __init__(self) -> None:
        self.offered = 0

    def offer(self, job: object, most: int) -> None:
        self.offered += most


def test_a_few_texts_run_one_per_run_and_the_caller_never_waits_for_an_unstarted_one(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threading

    import reckon.recall._shared as shared

    texts = ["a short one", "a somewhat longer text here", "mid length"]
    seen: set[str] = set()

    def forward(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        seen.add(threading.current_thread().name)
        assert ids.shape[0] == 1  # one text per run: no padding
        return _forward(ids, lengths)

    out = encode_batched(_Tok(), texts, HIDDEN, forward, 32, 3)
    for row, text in zip(out, texts):
        np.testing.assert_allclose(row, _alone(text), rtol=1e-5, atol=1e-6)
    never = _NeverRuns()
    monkeypatch.setattr(shared, "_HELPERS", never)
    seen.clear()
    out = encode_batched(_Tok(), texts, HIDDEN, forward, 32, 3)  # returns: the caller ran all three
    assert never.offered == 2 and seen == {threading.current_thread().name}
    for row, text in zip(out, texts):
        np.testing.assert_allclose(row, _alone(text), rtol=1e-5, atol=1e-6)


def test_an_error_in_a_parallel_run_reaches_the_caller() -> None:
    import pytest

    def forward(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        if ids.shape[1] > 5:
            raise RuntimeError("model failed")
        return _forward(ids, lengths)

    with pytest.raises(RuntimeError, match="model failed"):
        encode_batched(_Tok(), ["ab", "a much longer text"], HIDDEN, forward, 32, 2)


def test_a_background_embedder_thread_keeps_its_encodes_on_itself() -> None:
    import threading

    import reckon.recall._minilm as mod

    texts = ["one text", "another, longer text", "third"]
    seen: list[tuple[str, int]] = []

    def forward(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        seen.append((threading.current_thread().name, ids.shape[0]))
        return _forward(ids, lengths)

    got: list[np.ndarray] = []

    def background() -> None:
        mod.mark_background_thread()
        got.append(encode_batched(_Tok(), texts, HIDDEN, forward, 32, 3))

    t = threading.Thread(target=background, name="bg-embedder")
    t.start()
    t.join()
    assert seen == [("bg-embedder", 3)]  # one padded batch, on the embedder's own thread
    for row, text in zip(got[0], texts):
        np.testing.assert_allclose(row, _alone(text), rtol=1e-5, atol=1e-6)
