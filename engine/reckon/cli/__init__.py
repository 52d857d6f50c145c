"""The ``reckon`` command line (typer + rich).

Exit codes (documented in ``reckon --help`` and README):

* 0 — ok
* 1 — validation failed: an invalid memory (refused by its model, e.g. importance 9,
  or by its SHACL shapes, e.g. a negative budget: the same code either way), a rule
  file with diagnostics, data or a tenant that does not conform
* 2 — usage or input error: bad arguments, unknown tenant or memory, unreadable file,
  not authorized, a conflict to confirm, a refused or malformed query
* 3 — internal error (a bug: please report it) or a store failure (I/O, lock timeout)

Messages name what went wrong (``invalid memory: importance: ...``, ``not authorized:
...``), never an exception class.
"""

from __future__ import annotations

import sys

from reckon.cli._app import EXIT_INPUT, EXIT_INTERNAL, EXIT_INVALID, EXIT_OK, app

__all__ = ["EXIT_INPUT", "EXIT_INTERNAL", "EXIT_INVALID", "EXIT_OK", "app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code.

    Called without ``argv`` (the console script, ``python -m reckon.cli``) it runs this
    process's command line with the process tuned for one command (see
    :func:`reckon.cli._app.process_run`); with ``argv`` (tests, embedding) it only runs it."""
    from reckon.cli._app import process_run, run

    if argv is not None:
        return run(argv)
    return process_run(sys.argv[1:])
