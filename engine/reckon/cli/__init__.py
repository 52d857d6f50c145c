"""The ``reckon`` command line (typer + rich).

Exit codes (documented in ``reckon --help`` and README):

* 0 — ok
* 1 — validation failed / not conformant (rule diagnostics, shape violations)
* 2 — usage or input error (bad arguments, unreadable file, unknown tenant)
* 3 — internal error (a bug: please report it)
"""

from __future__ import annotations

import sys

from reckon.cli._app import EXIT_INPUT, EXIT_INTERNAL, EXIT_INVALID, EXIT_OK, app

__all__ = ["EXIT_INPUT", "EXIT_INTERNAL", "EXIT_INVALID", "EXIT_OK", "app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code."""
    from reckon.cli._app import run

    return run(argv if argv is not None else sys.argv[1:])
