"""Verbs on rule files: ``reckon rules check``, ``reckon infer``, ``reckon explain``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import typer
from pyoxigraph import NamedNode, Quad, Triple

from reckon._errors import RuleError
from reckon.cli._app import EXIT_INVALID, EXIT_OK, app, console, err_console, fail, rules_app
from reckon.vocab import PREFIXES

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


def _read_triples(paths: list[Path]) -> Iterator[Triple]:
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


def _load(rules: list[Path], data: list[Path], axiomatic: bool = False):  # type: ignore[no-untyped-def]
    from reckon.datalog.evaluate import Reasoner
    from reckon.datalog.loader import load_rules

    if not rules:
        raise fail("give at least one --rules file")
    files: list[Path | str] = list(rules)
    if axiomatic:
        files.append("rdfs-axioms.srl")
    rs = load_rules(*files)
    reasoner = Reasoner(rs)
    reasoner.load(_read_triples(data))
    return rs, reasoner


@app.command("infer")
def infer(
    data: list[Path] = typer.Argument(..., help="RDF data files (format from extension)."),
    rules: list[Path] = typer.Option([], "--rules", "-r", help="Rule file(s); repeat the option."),
    fmt: str = typer.Option("nt", "--format", "-f", help="Output: turtle, ntriples, nquads, trig, rdfxml, jsonld."),
    output: Path = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    axiomatic: bool = typer.Option(
        False, "--axiomatic",
        help="RDFS completeness: add rdfs-axioms.srl (RDF/RDFS axiomatic triples, rdfs1, rdfD1 with blank nodes; "
             "RDF 1.1 Semantics §7-9).",
    ),
) -> None:
    """Materialize RULES over DATA and write the inferred graph (derived triples not in DATA).

    If the rules derive an inconsistency (some node in owl:Nothing: an OWL 2 RL rule whose
    head is false, an ill-typed literal ...), each is printed to stderr with its rule, the
    clashing facts and the explanation tree, the inferred graph is still written, and the
    exit code is 1.
    """
    from pyoxigraph import Quad, RdfFormat, serialize

    ext = _FORMATS.get(fmt.lower().replace("-", "").replace("_", ""))
    if ext is None:
        raise fail(f"unknown format {fmt!r}; choose one of {sorted(set(_FORMATS))}")
    rs, reasoner = _load(rules, data, axiomatic)
    inferred = sorted(reasoner.inferred(), key=str)
    rdf_format = RdfFormat.from_extension(ext)
    assert rdf_format is not None
    items: list[Triple] | list[Quad]
    if ext in ("nq", "trig"):
        items = [Quad(t.subject, t.predicate, t.object) for t in inferred]
    else:
        items = list(inferred)
    prefixes = dict(rs.prefixes) if ext == "ttl" else None
    out = serialize(items, format=rdf_format, prefixes=prefixes) if prefixes else serialize(items, format=rdf_format)
    assert out is not None  # serialize without an output file returns the bytes
    if output is not None:
        output.write_bytes(out)
        err_console.print(f"{len(inferred)} inferred triples written to {output}")
    elif hasattr(sys.stdout, "buffer"):
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    else:  # pragma: no cover - a text-only stdout (tests capture into StringIO)
        sys.stdout.write(out.decode("utf-8"))
    found = reasoner.inconsistencies()
    if found:
        err_console.print(f"inconsistent: {len(found)} node{'s' if len(found) != 1 else ''} in owl:Nothing", markup=False)
        for i in found:
            err_console.print(f"- {i.node} (rule {i.rule})", markup=False, soft_wrap=True)
            for f in i.facts:
                err_console.print(f"    clashing fact: {f}", markup=False, soft_wrap=True)
            err_console.print("\n".join("    " + line for line in i.render().splitlines()), markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID)


def parse_triple_arg(text: str, prefixes: dict[str, str] | None = None) -> object:
    """Parse one triple given in N-Triples syntax, or Turtle with ``prefixes`` declared
    (prefixed names, ``a`` for ``rdf:type``, bare numbers and booleans)."""
    from pyoxigraph import RdfFormat, Triple, parse

    t = text.strip()
    if not t.endswith("."):
        t += " ."
    try:
        if prefixes:
            head = "".join(f"@prefix {p}: <{ns}> .\n" for p, ns in prefixes.items())
            quads = list(parse(input=(head + t).encode(), format=RdfFormat.TURTLE))
        else:
            quads = list(parse(input=t.encode(), format=RdfFormat.N_TRIPLES))
    except SyntaxError as exc:
        what = f"a triple (N-Triples, or Turtle with the prefixes {', '.join(sorted(prefixes))})" if prefixes \
            else "an N-Triples triple"
        raise fail(f"not {what}: {text!r} ({exc})") from exc
    if len(quads) != 1:
        raise fail(f"expected exactly one triple, got {len(quads)}")
    q = quads[0]
    return Triple(q.subject, q.predicate, q.object)


@app.command("explain")
def explain(
    triple: str = typer.Argument(None, help='The inferred triple: N-Triples ("<s> <p> <o>") or Turtle with the '
                                 "prefixes rk: mk: rc: rdf: rdfs: xsd: owl: sh: (and the rule files' own), "
                                 'e.g. "<urn:x> a rk:ActiveMemory".'),
    data: list[Path] = typer.Option([], "--data", "-d", help="RDF data file(s); repeat the option."),
    rules: list[Path] = typer.Option([], "--rules", "-r", help="Rule file(s); repeat the option."),
    tenant: str = typer.Option(None, "--tenant", "-t", help="Explain a triple of this tenant's inferred graph."),
    memory: str = typer.Option(None, "--memory", "-m", help="With --tenant: the memory id whose status to explain."),
    prop: str = typer.Option(None, "--property", "-p", help="With --memory: the derived property, e.g. mk:budgetStatus, "
                             "or a (rdf:type: why it is a rk:ActiveMemory ...)."),
) -> None:
    """Explain why an inferred triple holds: rule, bindings and supporting facts, recursively.

    Either over rule and data files (--rules, --data) or over a tenant (--tenant), where
    ``--memory ID --property mk:budgetStatus`` names a derived status without writing the triple.
    """
    if tenant is None:
        if memory is not None or prop is not None:
            raise fail("--memory and --property need --tenant")
        if triple is None:
            raise fail("give the triple to explain")
        rs, reasoner = _load(rules, data)
        t = parse_triple_arg(triple, prefixes={**_PREFIXES, **dict(rs.prefixes)})
        console.print(reasoner.explain(t).render(), markup=False, soft_wrap=True)
        return
    if data or rules:
        raise fail("--tenant explains with the tenant's own rules and data; drop --data / --rules")
    from reckon.cli._tenant import open_tenant

    ten = open_tenant(tenant)
    if memory is not None:
        if triple is not None or prop is None:
            raise fail("with --memory give --property (and no triple)")
        s = NamedNode(ten.get(memory).iri)
        p = _prefixed(prop)
        objs = [q.object for q in ten.store.inferred() if q.subject == s and q.predicate == p]
        if not objs:
            raise fail(f"memory {memory} has no inferred {prop}")
        from pyoxigraph import Triple

        targets = [Triple(s, p, o) for o in sorted(objs, key=str)]
    elif triple is not None:
        targets = [parse_triple_arg(triple, prefixes=_PREFIXES)]
    else:
        raise fail("give the triple to explain, or --memory ID --property P")
    reasoner = ten.store.reasoner()
    for t in targets:
        console.print(reasoner.explain(t).render(), markup=False, soft_wrap=True)


_PREFIXES = dict(PREFIXES)


def _prefixed(name: str) -> NamedNode:
    if name == "a":  # as in Turtle and SPARQL
        return NamedNode(_PREFIXES["rdf"] + "type")
    if name.startswith("<") and name.endswith(">"):
        return NamedNode(name[1:-1])
    prefix, sep, local = name.partition(":")
    if sep and prefix in _PREFIXES:
        return NamedNode(_PREFIXES[prefix] + local)
    if "://" in name or name.startswith("urn:"):
        return NamedNode(name)
    raise fail(f"not an IRI or known prefixed name: {name!r} (prefixes: {', '.join(_PREFIXES)})")
