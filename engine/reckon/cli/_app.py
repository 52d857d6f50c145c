"""Typer application object, global options and the exit-code mapping."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from reckon._config import default_data_dir
from reckon._errors import (
    ConflictPending,
    ExplainError,
    NotAuthorized,
    ReckonError,
    RestoreRefused,
    RuleError,
    SchemaError,
    ShapeViolation,
    StoreError,
    UnknownTeam,
)

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 validation failed (a memory its model or SHACL shapes refuse, e.g. a blank label "
    "or a negative budget amount; a rule file; data that does not conform); 2 usage or input error (an "
    "unknown or missing option, an option value outside its type, choices or range, e.g. --kind bogus or "
    "--importance 9; a setting, amount or KPI value not of its type, e.g. a non-decimal threshold; "
    "unknown tenant, project, team or memory; unreadable file; not authorized; a conflict "
    "to confirm; a refused query); 3 internal error or store failure."
)

app = typer.Typer(
    name="reckon",
    help=(
        "Reckon: typed, rule-derived memory for AI agents.\n\n"
        "Tenants live in --data-dir, $RECKON_DATA_DIR, else $XDG_DATA_HOME/reckon or ~/.local/share/reckon (the same default as "
        "reckon.Engine() in Python). Verbs that act as a person take --as PERSON (or $RECKON_AS).\n\n"
        + EXIT_CODES_HELP
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

rules_app = typer.Typer(help="Check rule files (SRL .srl, RDFox Datalog .dlog).", no_args_is_help=True)
app.add_typer(rules_app, name="rules")


log = logging.getLogger("reckon.cli")

class State:
    data_dir: Path = default_data_dir()
    data_dir_given: bool = False  # --data-dir or $RECKON_DATA_DIR given (the demo uses a temp dir otherwise)
    process: bool = False  # this process runs one command line (process_run): the collector is ours
    engines: list[Any] = []  # the engines the running command opened (closed when an in-process run ends)


state = State()


def _version(value: bool) -> None:
    if value:
        from reckon import __version__

        typer.echo(f"reckon {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _global(
    ctx: typer.Context,
    data_dir: Path = typer.Option(
        None,
        "--data-dir",
        envvar="RECKON_DATA_DIR",
        help="Where tenants live (default: $RECKON_DATA_DIR, else $XDG_DATA_HOME/reckon or ~/.local/share/reckon).",
    ),
    version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_version,
                                 help="Print the version and exit."),
) -> None:
    if data_dir is not None:
        state.data_dir = data_dir
        state.data_dir_given = True
    else:
        state.data_dir = default_data_dir()
        state.data_dir_given = False
    if state.process and ctx.invoked_subcommand not in SHORT_VERBS:
        _collector_on()


def fail(message: str, code: int = EXIT_INPUT) -> typer.Exit:
    """Print an error to stderr and return the Exit to raise."""
    err_console.print(f"[red]error:[/red] {escape(str(message))}", soft_wrap=True)
    return typer.Exit(code)


class InvalidMemory(Exception):
    """A memory write refused for its content (a field or a SHACL shape): exit 1, like a
    shape violation. Raised by the memory verbs around :class:`InvalidInput` naming a
    memory field."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        super().__init__(str(exc))


#: Fields of a memory: an InvalidInput naming one of them is an invalid memory (exit 1).
MEMORY_FIELDS = frozenset({"kind", "scope", "importance", "source", "label", "content", "subclass", "properties",
                           "confidence", "expires_at", "teams", "owner", "replacement", "__root__"})


@contextmanager
def memory_write() -> Iterator[None]:
    """Around a memory write: an :class:`InvalidInput` naming a memory field becomes
    :class:`InvalidMemory` (exit 1, the code of a shape violation)."""
    from reckon._errors import InvalidInput

    try:
        yield
    except InvalidInput as exc:
        if isinstance(exc, (ShapeViolation, UnknownTeam)):  # an unknown team is an input error (exit 2)
            raise
        if (exc.field or "").split(".", 1)[0].split("[", 1)[0] in MEMORY_FIELDS:
            raise InvalidMemory(exc) from exc
        raise


#: Error classes -> (message prefix, exit code), most specific first. Never a class name.
_ERRORS: list[tuple[type[BaseException], str, int]] = [
    (InvalidMemory, "invalid memory", EXIT_INVALID),
    (ShapeViolation, "invalid memory", EXIT_INVALID),
    (RuleError, "not valid", EXIT_INVALID),
    (SchemaError, "invalid schema", EXIT_INVALID),
    (UnknownTeam, "unknown team", EXIT_INPUT),
    (NotAuthorized, "not authorized", EXIT_INPUT),
    (ConflictPending, "conflict", EXIT_INPUT),
    (RestoreRefused, "restore refused", EXIT_INPUT),
    (ExplainError, "not inferred", EXIT_INPUT),
    (StoreError, "store error", EXIT_INTERNAL),
    (ReckonError, "error", EXIT_INPUT),
]


#: The module of each verb (``reckon VERB ...``): a command line imports and builds only
#: its verb's module (typer builds a click command for every registered verb, ~0.1 s for
#: all of them); help, an unknown verb or no verb import every module.
#: ``tests/cli/test_help_and_exit_codes.py`` holds this map to what the modules register.
VERB_MODULES: dict[str, str] = {
    **dict.fromkeys(("remember", "update", "supersede", "restore", "forget", "get", "memories", "history"),
                    "_memory"),
    **dict.fromkeys(("bundle", "search", "sparql"), "_query"),
    **dict.fromkeys(("tenant", "onboard"), "_tenant"),
    **dict.fromkeys(("rules", "infer", "explain"), "_rules"),
    **dict.fromkeys(("kpi", "spend", "clock", "load"), "_data"),
    **dict.fromkeys(("serve", "mcp", "token"), "_serve"),
    "demo": "_demo",
    **dict.fromkeys(("import", "jobs", "turns", "extract", "worker"), "_capture"),
    **dict.fromkeys(("notes", "events", "graph", "experience"), "_neighbours"),
    **dict.fromkeys(("maintain", "feedback", "index"), "_lifecycle"),
}
_VERB_MODULE_ORDER = ("_rules", "_tenant", "_memory", "_data", "_query", "_serve", "_demo", "_capture",
                      "_neighbours", "_lifecycle")
_GLOBAL_VALUE_OPTIONS = frozenset({"--data-dir"})


def verb_of(argv: list[str]) -> str | None:
    """The verb of a command line (the first argument that is not a global option or its
    value), or ``None`` (no verb, or help / version asked before it)."""
    it = iter(argv)
    for a in it:
        if a in _GLOBAL_VALUE_OPTIONS:
            next(it, None)
        elif a.startswith("--data-dir="):
            continue
        elif a.startswith("-"):
            return None  # -h / --help / -V / --version, or an option click will refuse
        else:
            return a
    return None


def command(argv: list[str] | None = None) -> Any:
    """The click command of the app, its help polished (see :func:`polish`): with
    ``argv`` naming a known verb, only that verb's module is registered
    (:data:`VERB_MODULES`); otherwise every verb."""
    verb = verb_of(argv) if argv is not None else None
    mods = (VERB_MODULES[verb],) if verb in VERB_MODULES else _VERB_MODULE_ORDER
    for mod in mods:
        try:
            __import__(f"reckon.cli.{mod}")
        except ModuleNotFoundError as exc:  # verb module not present in this build
            if exc.name != f"reckon.cli.{mod}":
                raise
    return polish(typer.main.get_command(app))


#: A negative number (``-1``, ``-0.5``, ``-1e3``): a value, never an option.
_NEGATIVE_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _numbers_as_values(make_parser: Any, ctx: Any) -> Any:
    """Click's parser for ``ctx``, except that an argument that is a negative number
    and not one of the command's options is a value (``reckon tenant settings set T
    live_context_cap -1``; click alone reads ``-1`` as an unknown short option and
    asks for ``--`` before it). An option's own value was already taken as given
    (``--amount -5``)."""
    parser = make_parser(ctx)
    process_opts = parser._process_opts

    def _process(arg: str, state: Any) -> None:
        if _NEGATIVE_NUMBER.fullmatch(arg) and arg not in parser._short_opt and arg not in parser._long_opt:
            state.largs.append(arg)
        else:
            process_opts(arg, state)

    parser._process_opts = _process
    return parser


def polish(cmd: Any) -> Any:
    """Make the help of ``cmd`` and its subcommands render as written, for every verb:
    help text is escaped for rich markup (``[a-z0-9]`` in a pattern is text, not a style
    tag), single line breaks inside a paragraph are joined (docstrings wrap at 90
    columns, the terminal does its own), flags show no value placeholder, and repeatable
    options show ``<type>...``."""
    def text(t: str | None) -> str | None:
        if not t:
            return t
        paragraphs = [" ".join(line.strip() for line in p.splitlines() if line.strip())
                      for p in inspect.cleandoc(t).split("\n\n")]
        return escape("\n\n".join(p for p in paragraphs if p))

    seen: set[int] = set()

    def walk(c: Any) -> None:
        if id(c) in seen:
            return
        seen.add(id(c))
        c.help = text(c.help)
        if getattr(c, "short_help", None):
            c.short_help = text(c.short_help)
        for p in c.params:
            if getattr(p, "help", None):
                p.help = text(p.help)
            if getattr(p, "is_flag", False) and p.metavar is None:
                p.metavar = ""
            elif getattr(p, "multiple", False) and p.metavar is None and hasattr(p, "display_type"):
                shown = str(p.display_type(click_context(c)))
                if shown.startswith("<list[") and shown.endswith("]>"):
                    p.metavar = "<" + shown[len("<list["):-2] + ">..."
        original = c.get_help_option

        def help_option(ctx: Any, _original: Any = original) -> Any:
            opt = _original(ctx)
            if opt is not None and opt.metavar is None:
                opt.metavar = ""  # -h / --help is a flag too
            return opt

        c.get_help_option = help_option
        c.make_parser = functools.partial(_numbers_as_values, c.make_parser)
        for sub in getattr(c, "commands", {}).values():
            walk(sub)

    walk(cmd)
    return cmd


def click_context(c: Any) -> Any:
    """A bare click context for ``c`` (to ask a parameter how it displays its type)."""
    return type(c).context_class(c) if hasattr(type(c), "context_class") else None


#: Verbs that do one bounded operation and exit: the process runs them with the cyclic
#: garbage collector off (see :func:`process_run`). Every other verb (serve, mcp, worker,
#: imports, maintenance, the demo ...) runs with it on.
SHORT_VERBS = frozenset({"remember", "update", "supersede", "restore", "forget", "get", "memories", "history",
                         "bundle", "search", "sparql"})


def _collector_on() -> None:
    """The cyclic collector on, what the start built frozen (never traversed again)."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def process_run(argv: list[str]) -> int:
    """:func:`run` as this process's whole job (the console script): tuned for one command.

    * BLAS: ``$OPENBLAS_NUM_THREADS`` defaults to ``$RECKON_BLAS_THREADS`` (default 1,
      the limit :mod:`reckon.recall._minilm` sets when it loads the model; 0 leaves BLAS
      alone) before numpy is imported, so OpenBLAS starts no thread pool whose threads
      spin on a shared machine (measured: ~0.1-0.2 CPU s of a ``reckon search``).
    * The cyclic garbage collector is off while the command starts (imports, the
      tenant's open: hundreds of thousands of objects that live until exit, which it
      would traverse again and again) and, for :data:`SHORT_VERBS`, until the command
      ends (reference counting still frees everything that is not a cycle); for every
      other verb it is turned on, with what the start built frozen, once the verb is
      known. On exit what is left is frozen, so the interpreter's final collections do
      not traverse it.
    """
    import gc

    if "numpy" not in sys.modules and "OPENBLAS_NUM_THREADS" not in os.environ:
        try:
            n = int(os.environ.get("RECKON_BLAS_THREADS", "1"))
        except ValueError:
            n = 1
        if n > 0:
            os.environ["OPENBLAS_NUM_THREADS"] = str(n)
    was = gc.isenabled()
    gc.disable()
    state.process = True
    try:
        return run(argv)
    finally:
        state.process = False
        gc.freeze()  # the process exits: its last collections skip what the command built
        if was:
            gc.enable()


def run(argv: list[str]) -> int:
    """Run the CLI, mapping exceptions to the documented exit codes (:data:`EXIT_CODES_HELP`).

    Run in-process (tests, embedding: not :func:`process_run`), the engines the command
    opened are closed when it ends (:meth:`reckon.api.Engine.close`: the reasoner state
    written when that pays, background threads stopped), so nothing it started writes
    to the data directory after it returned; a command process leaves that to its exit
    (``atexit``), which costs its caller no wait."""
    try:
        return _run(argv)
    finally:
        opened, state.engines = state.engines, []
        if not state.process:
            for eng in opened:
                try:
                    eng.close()
                except Exception:  # noqa: BLE001 - the command's own outcome is what it returns
                    log.warning("closing the engine of a finished command failed", exc_info=True)


def _run(argv: list[str]) -> int:
    cmd = command(argv)
    try:
        # with standalone_mode=False click RETURNS the code of a typer.Exit / click.exceptions.Exit
        rv = cmd.main(args=argv, prog_name="reckon", standalone_mode=False)
        if isinstance(rv, int) and not isinstance(rv, bool):
            return rv
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_INPUT
    except (ReckonError, InvalidMemory) as exc:
        for cls, prefix, code in _ERRORS:
            if isinstance(exc, cls):
                text = str(exc)
                if text.startswith(prefix + ": "):  # "invalid memory: importance: ..." says it already
                    text = text[len(prefix) + 2:]
                if isinstance(exc, ShapeViolation) and text.startswith("setting "):  # rk:SettingsShape refused it
                    prefix = "invalid setting"
                    text = text[len("setting "):]
                elif isinstance(exc, ShapeViolation) and exc.violations and not any(
                        ":memory:" in str(v.get("focus_node", "")) for v in exc.violations):
                    prefix = "invalid data"  # business data or another non-memory node (spend, KPI, account)
                err_console.print(f"[red]{prefix}:[/red] {escape(text)}", soft_wrap=True)
                return code
        raise  # pragma: no cover - ReckonError is the last row
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
            first: Any = exc.errors()[0] if exc.errors() else {}
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
        err_console.print(f"[red]internal error (please report it):[/red] {type(exc).__name__}: "
                          f"{escape(str(exc))}")
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


def strict_int(text: str | int) -> int:
    """An integer option's value exactly as written (``"5.0"`` and ``"5 "`` are refused;
    typer's own conversion would round ``5.0`` to 5); the option's default passes as is."""
    import re

    import typer

    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if not isinstance(text, str) or not re.fullmatch(r"[+-]?\d+", text):
        raise typer.BadParameter(f"an integer is required, got {text!r}")
    return int(text)


#: The choices of the memory options ``--kind`` / ``--scope`` / ``--source``: those of
#: :mod:`reckon.memory.models` (``KINDS``, ``SCOPES``, ``SOURCES``; ``tests/cli`` holds them
#: equal), spelled here so that parsing a command line imports no model.
KIND_CHOICES = ("objective", "fact", "preference", "context")
SCOPE_CHOICES = ("user", "conversation", "project", "team", "company")
SOURCE_CHOICES = ("agent_tool", "extraction", "operator", "onboarding", "import")


def one_of(*choices: str) -> Any:
    """The parser of an option with enumerated values: any other value is a usage error
    (exit 2, "Invalid value for '--kind': 'bogus' is not one of ..."), the same for every
    verb (the value is checked before anything is opened)."""
    import typer

    def parse(text: str) -> str:
        if text not in choices:
            raise typer.BadParameter(f"{text!r} is not one of {', '.join(map(repr, choices))}")
        return text

    return parse


def int_in(low: int, high: int) -> Any:
    """The parser of an integer option in ``low..high``: :func:`strict_int`, and a value
    outside the range is a usage error (exit 2)."""
    import typer

    def parse(text: str | int) -> int:
        value = strict_int(text)
        if not low <= value <= high:
            raise typer.BadParameter(f"{value} is not in the range {low}..{high}")
        return value

    return parse


def float_in(low: float, high: float) -> Any:
    """The parser of a number option in ``low..high`` (a finite decimal number: ``nan``,
    ``inf`` and trailing text are refused); outside it, a usage error (exit 2)."""
    import math

    import typer

    def parse(text: str | float) -> float:
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            value = float(text)
        else:
            try:
                value = float(str(text).strip())
            except ValueError:
                raise typer.BadParameter(f"a number is required, got {text!r}") from None
        if not math.isfinite(value):
            raise typer.BadParameter(f"a finite number is required, got {text!r}")
        if not low <= value <= high:
            raise typer.BadParameter(f"{text} is not in the range {low:g}..{high:g}")
        return value

    return parse
