"""reckon.vocab is the one place namespaces, graph names and prefix maps are spelled
(issue 10 §7): a scan of the package's code (docstrings excluded) finds them nowhere else,
and recall / server do not reach into the private ``reckon.memory._rdf``."""

from __future__ import annotations

import ast
from pathlib import Path

from pyoxigraph import NamedNode

from reckon import vocab

PACKAGE = Path(vocab.__file__).resolve().parent
SPELLED = ("https://reckon.dev/ns/", "urn:reckon:graph:", "http://www.w3.org/ns/shacl#",
           "http://www.w3.org/2000/01/rdf-schema#")


def _code_strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
        # attribute docstrings: a bare string right after an assignment
        if hasattr(node, "body") and isinstance(node.body, list):
            for stmt in node.body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    docstrings.add(id(stmt.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


#: Packages of work still in flight when this test landed (issue 15's neighbour modules);
#: they spell their namespaces and graph names (vocab already holds them: NT, EV, XP, TY,
#: NOTES, EVENTS, EXPERIENCE). Remove an entry once its package takes them from vocab.
NOT_YET: tuple[str, ...] = ()


def test_namespaces_and_graph_names_are_spelled_only_in_vocab() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "vocab.py" and path.parent == PACKAGE:
            continue
        if path.relative_to(PACKAGE).parts[0] in NOT_YET:
            continue
        for line, text in _code_strings(path):
            for ns in SPELLED:
                if ns in text:
                    offenders.append(f"{path.relative_to(PACKAGE)}:{line}: {ns}")
    # help texts that tell a user what to type are not vocabulary definitions
    offenders = [o for o in offenders if not o.startswith(("server/http.py", "cli/_query.py"))
                 or "urn:reckon:graph:" not in o]
    assert offenders == []


def test_recall_and_server_do_not_import_memory_private_modules() -> None:
    bad = []
    for sub in ("recall", "server"):
        for path in sorted((PACKAGE / sub).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [a.name for a in node.names]
                    if node.module.startswith("reckon.memory._") or (
                            node.module == "reckon.memory" and any(n.startswith("_") for n in names)):
                        bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert bad == []


def test_vocab_is_the_bottom_layer() -> None:
    tree = ast.parse((PACKAGE / "vocab.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("reckon")}


def test_iri_minting_round_trips_any_id() -> None:
    for raw in ["ana", "ana b", 'q"}{<>', "ü/ß:#?", "\x00x"]:
        p = vocab.person_iri("acme", raw)
        assert isinstance(p, NamedNode)
        assert p.value.startswith(vocab.tenant_prefix("acme") + "person:")
        assert vocab.slug_of(p.value) == raw
        assert vocab.slug_of(vocab.team_iri("acme", raw).value) == raw
    assert vocab.memory_iri("acme", "0" * 32).value == vocab.memory_prefix("acme") + "0" * 32
    assert vocab.company_iri("acme").value == "urn:reckon:acme:company"


def test_prefix_map_is_shared() -> None:
    from reckon.cli._query import PREFIXES as cli_prefixes
    from reckon.server.inspector._views import PREFIXES as inspector_prefixes
    from reckon.store.query_guard import DEFAULT_PREFIX_MAP

    assert DEFAULT_PREFIX_MAP == cli_prefixes == inspector_prefixes == vocab.PREFIXES
    assert vocab.PREFIXES["rk"] == vocab.RK and vocab.SCHEMA.value == "urn:reckon:graph:schema"
    assert vocab.sparql_prefixes("rk", "mk") == (f"PREFIX rk: <{vocab.RK}>\nPREFIX mk: <{vocab.MK}>\n")
