"""Verbs on rule files: ``reckon rules check``, ``reckon infer``, ``reckon explain``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import typer

from reckon._errors import RuleError
from reckon.cli._app import EXIT_INVALID, EXIT_OK, app, console, err_console, fail, rules_app

_FORMATS = {
    "turtle": "ttl",
    "ttl": "ttl",
    "ntriples": "nt",
    "nt": "nt",
    "nquads": "nq",
    "nq": "nq",
    "trig": "trig",
    "rdfxml": "rdf",
    "xml": "rdf",
    "jsonld": "jsonld",
}


@rules_app.command("check")
def rules_check(
    files: list[Path] = typer.Argument(..., help="Rule files (.srl or .dlog) or names of shipped files."),
) -> None:
    """Parse and check rule files: syntax, prefixes, well-formedness, stratification.

    Prints every problem as file:line:column CODE message; exit 1 if any.
    """
    from reckon.datalog.loader import load_rules
    from reckon.datalog.stratify import check_program, stratify

    problems = 0
    for f in files:
        try:
            rs = load_rules(f)
            check_program(rs)
            strata = stratify(rs)
        except RuleError as exc:
            for d in exc.diagnostics:
                err_console.print(str(d))
            problems += len(exc.diagnostics) or 1
            continue
        except OSError as exc:
            raise fail(f"cannot read {f}: {exc.strerror or exc}") from exc
        console.print(
            f"{f}: ok — {len(rs.rules)} rules, {len(rs.data)} data triples, {len(strata)} strata"
        )
    if problems:
        raise typer.Exit(EXIT_INVALID)
    raise typer.Exit(EXIT_OK)


def _read_triples(paths: list[Path]) -> Iterator["object"]:
    from pyoxigraph import RdfFormat, Triple, parse

    for p in paths:
        fmt = RdfFormat.from_extension(p.suffix.lstrip(".")) if p.suffix else None
        if fmt is None:
            raise fail(f"cannot guess the RDF format of {p} from its extension")
        try:
            for q in parse(path=str(p), format=fmt, base_iri=p.resolve().as_uri()):
                yield Triple(q.subject, q.predicate, q.object)
        except SyntaxError as exc:
            raise fail(f"{p}: {exc}") from exc
        except OSError as exc:
            raise fail(f"cannot read {p}: {exc.strerror or exc}") from exc


def _load(rules: list[Path], data: list[Path]):  # type: ignore[no-untyped-def]
    from reckon.datalog.evaluate import Reasoner
    from reckon.datalog.loader import load_rules

    if not rules:
        raise fail("give at least one --rules file")
    rs = load_rules(*rules)
    reasoner = Reasoner(rs)
    reasoner.load(_read_triples(data))
    return rs, reasoner


@app.command("infer")
def infer(
    data: list[Path] = typer.Argument(..., help="RDF data files (format from extension)."),
    rules: list[Path] = typer.Option([], "--rules", "-r", help="Rule file(s); repeat the option."),
    fmt: str = typer.Option("nt", "--format", "-f", help="Output: turtle, ntriples, nquads, trig, rdfxml, jsonld."),
    output: Path = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
) -> None:
    """Materialize RULES over DATA and write the inferred graph (derived triples not in DATA)."""
    from pyoxigraph import Quad, RdfFormat, serialize

    ext = _FORMATS.get(fmt.lower().replace("-", "").replace("_", ""))
    if ext is None:
        raise fail(f"unknown format {fmt!r}; choose one of {sorted(set(_FORMATS))}")
    rs, reasoner = _load(rules, data)
    inferred = sorted(reasoner.inferred(), key=str)
    rdf_format = RdfFormat.from_extension(ext)
    assert rdf_format is not None
    items: list[object]
    if ext in ("nq", "trig"):
        items = [Quad(t.subject, t.predicate, t.object) for t in inferred]
    else:
        items = list(inferred)
    prefixes = dict(rs.prefixes) if ext == "ttl" else None
    out = serialize(items, format=rdf_format, prefixes=prefixes) if prefixes else serialize(items, format=rdf_format)
    if output is not None:
        output.write_bytes(out)
        err_console.print(f"{len(inferred)} inferred triples written to {output}")
    else:
        sys.stdout.buffer.write(out)


def parse_triple_arg(text: str) -> "object":
    """Parse one triple given in N-Triples/Turtle syntax (prefixed names need the rules' PREFIXes)."""
    from pyoxigraph import RdfFormat, Triple, parse

    t = text.strip()
    if not t.endswith("."):
        t += " ."
    try:
        quads = list(parse(input=t.encode(), format=RdfFormat.N_TRIPLES))
    except SyntaxError as exc:
        raise fail(f"not an N-Triples triple: {text!r} ({exc})") from exc
    if len(quads) != 1:
        raise fail(f"expected exactly one triple, got {len(quads)}")
    q = quads[0]
    return Triple(q.subject, q.predicate, q.object)


@app.command("explain")
def explain(
    triple: str = typer.Argument(..., help='The inferred triple in N-Triples syntax, e.g. "<s> <p> <o>".'),
    data: list[Path] = typer.Option([], "--data", "-d", help="RDF data file(s); repeat the option."),
    rules: list[Path] = typer.Option([], "--rules", "-r", help="Rule file(s); repeat the option."),
) -> None:
    """Explain why an inferred triple holds: rule, bindings and supporting facts, recursively."""
    _, reasoner = _load(rules, data)
    t = parse_triple_arg(triple)
    console.print(reasoner.explain(t).render(), markup=False)
