"""Read verbs: `reckon bundle`, `reckon search`, `reckon sparql`.

`sparql` takes the query inline, as `@FILE` or `-` (stdin) and is read-only: an
update (INSERT, DELETE, LOAD, CLEAR, DROP ...) or a SERVICE clause is refused with exit 2,
and so is a query over a limit (text over 1 MiB, nesting deeper than 1,000, running longer
than `--timeout` seconds, more than `--max-rows` rows).
Output formats (`--format`): SELECT / ASK: `table` (default), `csv` and `tsv`
(SPARQL 1.1 Query Results CSV and TSV Formats), `json` (SPARQL 1.1 Query Results JSON
Format), `xml` (SPARQL Query Results XML Format); CONSTRUCT / DESCRIBE: `table`, `ttl`
(Turtle), `nt` (N-Triples), `xml` (RDF/XML).

Exit codes: 0 ok; 2 input error (unknown tenant, query does not parse, update refused,
a format that does not fit the query form); 3 internal error.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from typing import Any

import typer

from reckon.cli._app import KIND_CHOICES, SCOPE_CHOICES, app, console, fail, one_of, read_text_arg
from reckon.cli._tenant import (
    AS_OPT,
    MEMBER_OF_OPT,
    OPERATOR_OPT,
    TENANT_OPT,
    engine,
    open_tenant,
    principal,
    print_json,
    say,
)
from reckon.vocab import PREFIXES as _VOCAB_PREFIXES

PREFIXES = dict(_VOCAB_PREFIXES)
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


# --------------------------------------------------------------------------- bundle / search
@app.command("bundle")
def bundle(
    tenant: str = TENANT_OPT,
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    member_of: list[str] = MEMBER_OF_OPT,
    conversation: str = typer.Option("", "--conversation", "-c", help="Recent conversation: text, @FILE or - (stdin)."),
    budget: int = typer.Option(None, "--budget", help="Maximum rendered length, characters (default 6000)."),
    budget_tokens: int = typer.Option(None, "--budget-tokens",
                                      help="Maximum rendered length in tokens instead ($RECKON_TOKENIZER or "
                                           "the MiniLM tokenizer)."),
    ledger: bool = typer.Option(False, "--ledger", help="Also print the context ledger (to stderr)."),
    as_json: bool = typer.Option(False, "--json", help="Print the bundle model as JSON."),
    project: str | None = typer.Option(None, "--project", help="The project of the turn: adds its project memories."),
    conversation_id: str | None = typer.Option(None, "--conversation-id",
                                               help="The conversation of the turn: adds its conversation memories; "
                                                    "without --conversation, ranks by its recorded turns."),
) -> None:
    """Print the context bundle a new conversation of `--as PERSON` starts with."""
    t = open_tenant(tenant)
    text = read_text_arg(conversation) if conversation else ""
    b = t.context(principal(as_person, operator, member_of), conversation=text, budget_chars=budget,
                  budget_tokens=budget_tokens, record_access=False, project=project,
                  conversation_id=conversation_id)
    if as_json:
        print_json(b.model_dump(mode="json"))
    else:
        sys.stdout.write(b.render().rstrip("\n") + "\n")
    if ledger and b.ledger is not None:
        sys.stderr.write("ledger: " + b.ledger.line() + "\n")


@app.command("search")
def search(
    query: str = typer.Argument(..., help="Free text."),
    tenant: str = TENANT_OPT,
    k: int = typer.Option(10, "-k", help="Number of hits (1-100)."),
    kinds: list[str] = typer.Option([], "--kind", parser=one_of(*KIND_CHOICES),
                                    help="Restrict to a kind; repeat."),
    scopes: list[str] = typer.Option([], "--scope", parser=one_of(*SCOPE_CHOICES),
                                     help="Restrict to a scope; repeat."),
    importance: str = typer.Option("2-3", "--importance", help="LO-HI, a single tier, or 'all' (2-5)."),
    explain: bool = typer.Option(False, "--explain", help="Show the score components."),
    expand: str | None = typer.Option(None, "--expand", help="'graph': add the hits' directly linked memories "
                                                             "(marked '+ via <edge> of <hit>')."),
    as_person: str = AS_OPT,
    operator: bool = OPERATOR_OPT,
    member_of: list[str] = MEMBER_OF_OPT,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Hybrid (keyword + vector) search over the active memories visible to `--as`;
    by default the long tail (importance 2-3); `--expand graph` adds their graph
    neighbours (a chunk's document, supersession lineage, memories of the same turn)."""
    imp: Any
    if importance == "all":
        imp = "all"
    else:
        try:
            lo, _, hi = importance.partition("-")
            imp = (int(lo), int(hi or lo))
        except ValueError:
            raise fail(f"--importance: expected LO-HI, N or 'all', got {importance!r}") from None
    t = open_tenant(tenant)
    hits = t.search(query, principal=principal(as_person, operator, member_of), k=k, kinds=kinds or None,
                    scopes=scopes or None, importance=imp, explain=explain, record_access=False, expand=expand)
    if as_json:
        print_json([h.model_dump(mode="json") for h in hits])
        return
    if not hits:
        say("no hits")
    for h in hits:
        m = h.memory
        if h.expanded_from is not None:
            say(f"     +  {m.id}  {m.label!r} ({m.kind}, {m.scope}, importance {m.importance}) via {h.via} "
                f"of {h.expanded_from}", markup=False)
            continue
        say(f"{h.score:.4f}  {m.id}  {m.label!r} ({m.kind}, {m.scope}, importance {m.importance})",
                      markup=False)
        if explain and h.explanation is not None:
            say(f"        {h.explanation}", markup=False)


# --------------------------------------------------------------------------- sparql
def _short(iri: str) -> str:
    for p, ns in PREFIXES.items():
        if iri.startswith(ns) and iri[len(ns):] and all(c.isalnum() or c in "_-" for c in iri[len(ns):]):
            return f"{p}:{iri[len(ns):]}"
    return f"<{iri}>"


def _table_term(t: Any) -> str:
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(t, NamedNode):
        return _short(t.value)
    if isinstance(t, BlankNode):
        return f"_:{t.value}"
    if isinstance(t, Literal):
        if t.language:
            return f'"{t.value}"@{t.language}'
        if t.datatype.value == _XSD_STRING:
            return t.value
        if t.datatype.value.startswith(PREFIXES["xsd"]) and t.datatype.value.rsplit("#", 1)[-1] in (
                "integer", "decimal", "double", "boolean"):
            return t.value
        return f'"{t.value}"^^{_short(t.datatype.value)}'
    return str(t)


def _csv_term(t: Any) -> str:
    from pyoxigraph import BlankNode, Literal, NamedNode

    if t is None:
        return ""
    if isinstance(t, (NamedNode, Literal)):
        return t.value
    if isinstance(t, BlankNode):
        return f"_:{t.value}"
    return str(t)


def _json_term(t: Any) -> dict[str, Any]:
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(t, NamedNode):
        return {"type": "uri", "value": t.value}
    if isinstance(t, BlankNode):
        return {"type": "bnode", "value": t.value}
    if isinstance(t, Literal):
        out: dict[str, Any] = {"type": "literal", "value": t.value}
        if t.language:
            out["xml:lang"] = t.language
        elif t.datatype.value != _XSD_STRING:
            out["datatype"] = t.datatype.value
        return out
    return {"type": "triple", "value": {"subject": _json_term(t.subject), "predicate": _json_term(t.predicate),
                                        "object": _json_term(t.object)}}


def render_results(result: Any, form: str, variables: list[str], fmt: str) -> str:
    """The text of a query result in `fmt` (see the module docstring).

    :raises typer.Exit: (exit 2) for a format that does not fit the query form.
    """
    fmt = fmt.lower()
    if form == "graph":
        from pyoxigraph import RdfFormat, serialize

        triples = list(result)
        if fmt in ("ttl", "turtle"):
            return (serialize(triples, format=RdfFormat.TURTLE, prefixes=PREFIXES) or b"").decode()
        if fmt in ("nt", "ntriples"):
            return (serialize(triples, format=RdfFormat.N_TRIPLES) or b"").decode()
        if fmt in ("xml", "rdfxml"):
            return (serialize(triples, format=RdfFormat.RDF_XML) or b"").decode()
        if fmt == "table":
            return "".join(f"{_table_term(t.subject)} {_table_term(t.predicate)} {_table_term(t.object)}\n"
                           for t in triples)
        raise fail(f"--format {fmt}: a CONSTRUCT / DESCRIBE result is RDF; use ttl, nt, xml or table")
    if fmt in ("ttl", "turtle", "nt", "ntriples"):
        raise fail(f"--format {fmt}: only CONSTRUCT / DESCRIBE results are RDF; use table, csv, tsv, json or xml")
    if fmt == "xml":  # SPARQL 1.1 Query Results XML Format, serialised by pyoxigraph
        from pyoxigraph import QueryResultsFormat, parse_query_results

        if form == "ask":
            doc: dict[str, Any] = {"head": {}, "boolean": bool(result)}
        else:
            names = variables or list(dict.fromkeys(k for r in result for k in r))
            doc = {"head": {"vars": names},
                   "results": {"bindings": [{k: _json_term(v) for k, v in r.items()} for r in result]}}
        parsed = parse_query_results(json.dumps(doc), QueryResultsFormat.JSON)
        return (parsed.serialize(format=QueryResultsFormat.XML) or b"").decode() + "\n"
    if form == "ask":
        if fmt == "json":
            return json.dumps({"head": {}, "boolean": bool(result)}) + "\n"
        if fmt in ("table", "csv", "tsv"):
            return ("true" if result else "false") + "\n"
        raise fail(f"unknown --format {fmt!r}")
    rows: list[dict[str, Any]] = result
    if not variables:
        seen: dict[str, None] = {}
        for r in rows:
            for k in r:
                seen.setdefault(k, None)
        variables = list(seen)
    if fmt == "json":
        return json.dumps({"head": {"vars": variables},
                           "results": {"bindings": [{k: _json_term(v) for k, v in r.items()} for r in rows]}},
                          ensure_ascii=False, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\r\n")
        w.writerow(variables)
        for r in rows:
            w.writerow([_csv_term(r.get(v)) for v in variables])
        return buf.getvalue()
    if fmt == "tsv":
        lines = ["\t".join(f"?{v}" for v in variables)]
        for r in rows:
            lines.append("\t".join(str(r[v]) if v in r else "" for v in variables))
        return "\n".join(lines) + "\n"
    if fmt == "table":
        from rich.table import Table

        table = Table(*variables, show_lines=False)
        for r in rows:
            table.add_row(*[_table_term(r[v]) if v in r else "" for v in variables])
        buf = io.StringIO()
        from rich.console import Console

        Console(file=buf, width=max(80, console.width), highlight=False).print(table)
        return buf.getvalue() + f"{len(rows)} row{'s' if len(rows) != 1 else ''}\n"
    raise fail(f"unknown --format {fmt!r}; choose table, csv, tsv, json, xml (SELECT/ASK) or ttl, nt, xml "
               "(CONSTRUCT)")


@app.command("sparql")
def sparql(
    query: str = typer.Argument(..., help="The query inline, @FILE, or - for stdin."),
    tenant: str = TENANT_OPT,
    fmt: str = typer.Option("table", "--format", "-f", help="table | csv | tsv | json | xml (SELECT / ASK); "
                            "table | ttl | nt | xml (CONSTRUCT / DESCRIBE: RDF/XML)."),
    timeout: float = typer.Option(60.0, "--timeout", min=0.01, help="Seconds before the query is cancelled."),
    max_rows: int = typer.Option(1_000_000, "--max-rows", min=1, help="Most rows of the result."),
) -> None:
    """Run a read-only SPARQL query (in a sandboxed worker process: no network). The default graph is the union of the schema,
    memories, business and inferred graphs (each also addressable with GRAPH
    <urn:reckon:graph:schema|memories|business|inferred>)."""
    from reckon.store import QueryLimits

    text = read_text_arg(query)
    t = engine(QueryLimits(timeout=timeout, max_rows=max_rows, workers=1)).tenant(tenant)
    outcome = t.sparql_outcome(text)  # ReadOnlyQuery / InvalidInput / QueryLimitExceeded -> exit 2
    sys.stdout.write(render_results(outcome.to_python(), outcome.form, list(outcome.variables), fmt))
