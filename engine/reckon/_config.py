"""Process-wide defaults shared by the Python API and the CLI (no heavy imports here:
the CLI reads them before it loads anything else)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MAX_SEARCH_K", "default_data_dir"]

MAX_SEARCH_K = 100
"""Most hits one memory search returns: ``Tenant.search(k=...)``, the LLM / MCP
``search`` tool's ``k`` maximum, HTTP ``GET .../search?k=``, ``reckon search -k``. One
constant, so every door agrees (the tool schema said 50 where Python allowed 100)."""


def default_data_dir() -> Path:
    """Where tenants live when no directory is given, for ``Engine()`` and ``reckon``
    alike: ``$RECKON_DATA_DIR``, else ``$XDG_DATA_HOME/reckon``, else
    ``~/.local/share/reckon``."""
    env = os.environ.get("RECKON_DATA_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "reckon"
