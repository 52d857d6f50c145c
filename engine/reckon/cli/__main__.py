"""``python -m reckon.cli``: the ``reckon`` command."""

from reckon.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
