"""Typer application object, global options and the exit-code mapping."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from reckon._errors import (
    InvalidInput,
    InvalidTenantId,
    ReadOnlyQuery,
    ReckonError,
    RuleError,
    ShapeViolation,
    UnknownMemory,
    UnknownTenant,
)

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

app = typer.Typer(
    name="reckon",
    help=(
        "Reckon: typed, rule-derived memory for AI agents.\n\n"
        "Exit codes: 0 ok; 1 validation failed / not conformant; "
        "2 usage or input error; 3 internal error."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

rules_app = typer.Typer(help="Check rule files (SRL .srl, RDFox Datalog .dlog).", no_args_is_help=True)
app.add_typer(rules_app, name="rules")


def default_data_dir() -> Path:
    """``$RECKON_DATA_DIR``, else ``$XDG_DATA_HOME/reckon``, else ``~/.local/share/reckon``."""
    env = os.environ.get("RECKON_DATA_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "reckon"


class State:
    data_dir: Path = default_data_dir()
    data_dir_given: bool = False  # --data-dir or $RECKON_DATA_DIR given (the demo uses a temp dir otherwise)


state = State()


@app.callback()
def _global(
    data_dir: Path = typer.Option(
        None,
        "--data-dir",
        envvar="RECKON_DATA_DIR",
        help="Where tenants live (default: $XDG_DATA_HOME/reckon or ~/.local/share/reckon).",
    ),
) -> None:
    if data_dir is not None:
        state.data_dir = data_dir
        state.data_dir_given = True
    else:
        state.data_dir = default_data_dir()
        state.data_dir_given = False


def fail(message: str, code: int = EXIT_INPUT) -> typer.Exit:
    """Print an error to stderr and return the Exit to raise."""
    err_console.print(f"[red]error:[/red] {escape(str(message))}", soft_wrap=True)
    return typer.Exit(code)


def run(argv: list[str]) -> int:
    """Run the CLI, mapping exceptions to the documented exit codes."""
    # Register verbs (import for side effects).
    from reckon.cli import _rules  # noqa: F401

    for mod in ("_tenant", "_memory", "_data", "_query", "_serve", "_demo", "_capture"):
        try:
            __import__(f"reckon.cli.{mod}")
        except ModuleNotFoundError as exc:  # verb module not present in this build
            if exc.name != f"reckon.cli.{mod}":
                raise
    try:
        # with standalone_mode=False click RETURNS the code of a typer.Exit / click.exceptions.Exit
        rv = app(args=argv, standalone_mode=False)
        if isinstance(rv, int) and not isinstance(rv, bool):
            return rv
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_INPUT
    except (RuleError, ShapeViolation) as exc:
        err_console.print(f"[red]not valid:[/red] {escape(str(exc))}", soft_wrap=True)
        return EXIT_INVALID
    except (InvalidInput, InvalidTenantId, UnknownTenant, UnknownMemory, ReadOnlyQuery) as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        return EXIT_INPUT
    except ReckonError as exc:
        err_console.print(f"[red]error:[/red] {type(exc).__name__}: {escape(str(exc))}", soft_wrap=True)
        return EXIT_INPUT
    except UnicodeDecodeError as exc:  # a file given by the user is not UTF-8 text
        err_console.print(f"[red]error:[/red] input is not UTF-8 text: {escape(str(exc))}", soft_wrap=True)
        return EXIT_INPUT
    except OSError as exc:  # a path given by the user cannot be read or written
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        err_console.print(
            f"[red]error:[/red] cannot access{escape(where)}: {escape(exc.strerror or str(exc))}",
            soft_wrap=True,
        )
        return EXIT_INPUT
    except Exception as exc:  # click usage errors, option validation and real bugs
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):  # e.g. an empty --as building the Principal
            first = exc.errors()[0] if exc.errors() else {}
            field = ".".join(str(x) for x in first.get("loc", ())) or exc.title
            err_console.print(
                f"[red]error:[/red] invalid {escape(field)}: {escape(str(first.get('msg', exc)))}",
                soft_wrap=True,
            )
            return EXIT_INPUT
        # click's exceptions, or typer's vendored copy of click (typer >= 0.26: typer._click)
        names = {c.__name__ for c in type(exc).__mro__}
        if "ClickException" in names:
            exc.show()  # type: ignore[attr-defined]
            return EXIT_INPUT
        if "Abort" in names:
            return EXIT_INPUT
        err_console.print(f"[red]internal error:[/red] {type(exc).__name__}: {escape(str(exc))}")
        if os.environ.get("RECKON_DEBUG"):
            raise
        return EXIT_INTERNAL
    return EXIT_OK


def read_text_arg(value: str) -> str:
    """An argument given inline, as ``@file``, or ``-`` for stdin."""
    import sys

    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        p = Path(value[1:])
        try:
            return p.read_text(encoding="utf-8")
        except OSError as exc:
            raise fail(f"cannot read {p}: {exc.strerror}") from exc
    return value


def as_jsonable(value: Any) -> Any:
    """pyoxigraph terms -> strings for JSON output."""
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(value, (NamedNode, BlankNode, Literal)):
        return str(value)
    return value
