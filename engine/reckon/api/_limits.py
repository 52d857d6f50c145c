"""Sizes of free-text inputs to recall (issue 9: a 10 MB search text took 32 s).

Keyword tokenisation and embedding are linear in the text, and MiniLM reads only its
first 256 word pieces, so longer inputs only cost time.
"""

from __future__ import annotations

__all__ = ["MAX_CONVERSATION_CHARS", "MAX_SEARCH_CHARS"]

MAX_SEARCH_CHARS = 2000
"""Longest search query, characters (``Tenant.search``, the search tool, HTTP ``q``)."""

MAX_CONVERSATION_CHARS = 100_000
"""Longest conversation text given to the bundle, characters (``Tenant.context``)."""
