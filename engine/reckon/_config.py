"""Process-wide defaults shared by the Python API and the CLI (no heavy imports here:
the CLI reads them before it loads anything else)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_data_dir"]


def default_data_dir() -> Path:
    """Where tenants live when no directory is given, for ``Engine()`` and ``reckon``
    alike: ``$RECKON_DATA_DIR``, else ``$XDG_DATA_HOME/reckon``, else
    ``~/.local/share/reckon``."""
    env = os.environ.get("RECKON_DATA_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "reckon"
