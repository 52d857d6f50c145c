"""SPARQL text built only from pyoxigraph term serialisation, and the read-only guard.

* :func:`term_to_sparql` serialises a ground term with the library's own escaping
  (``str(NamedNode)`` / ``str(Literal)``); triple terms become ``<<( s p o )>>``
  (SPARQL 1.2). User strings are never pasted into query text.
* :func:`skolemize` / :func:`deskolemize` map blank nodes to Skolem IRIs
  (RDF 1.1 Concepts section 3.5) so that an update can name them.
* :func:`check_read_only` refuses SPARQL updates and ``SERVICE`` before a query runs
  (SPARQL 1.1 Query section 2 grammar; Federated Query section 3).
"""

from __future__ import annotations

import re
from typing import Iterable

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput, ReadOnlyQuery
from reckon.store.graphs import SKOLEM_PREFIX

__all__ = [
    "UPDATE_KEYWORDS",
    "check_read_only",
    "deskolemize",
    "keywords_outside_literals",
    "quads_to_data_block",
    "skolemize",
    "term_to_sparql",
]

Term = NamedNode | BlankNode | Literal | Triple


def skolemize(term: Term) -> NamedNode | Literal | Triple:
    """Replace a blank node (also inside a triple term) by its Skolem IRI."""
    if isinstance(term, BlankNode):
        return NamedNode(SKOLEM_PREFIX + term.value)
    if isinstance(term, Triple):
        return Triple(skolemize(term.subject), term.predicate, skolemize(term.object))  # type: ignore[arg-type]
    return term


def deskolemize(term: Term) -> Term:
    """Inverse of :func:`skolemize`: a Skolem IRI becomes the blank node it names."""
    if isinstance(term, NamedNode):
        if term.value.startswith(SKOLEM_PREFIX):
            return BlankNode(term.value[len(SKOLEM_PREFIX):])
        return term
    if isinstance(term, Triple):
        return Triple(deskolemize(term.subject), term.predicate, deskolemize(term.object))  # type: ignore[arg-type]
    return term


def term_to_sparql(term: Term) -> str:
    """SPARQL text of a ground term, escaped by pyoxigraph.

    :raises InvalidInput: for a blank node (skolemize it first: a SPARQL update cannot
        name an existing blank node).
    """
    if isinstance(term, (NamedNode, Literal)):
        return str(term)
    if isinstance(term, Triple):
        return (
            f"<<( {term_to_sparql(term.subject)} {term_to_sparql(term.predicate)} "
            f"{term_to_sparql(term.object)} )>>"
        )
    raise InvalidInput(f"cannot serialise {term!r} into SPARQL update text")


def quads_to_data_block(quads: Iterable[Quad]) -> str:
    """``GRAPH <g> { s p o . ... } ...`` for ``INSERT DATA`` / ``DELETE DATA`` (quads
    must be skolemized and in named graphs)."""
    by_graph: dict[str, list[str]] = {}
    for q in quads:
        g = term_to_sparql(q.graph_name)  # type: ignore[arg-type]
        by_graph.setdefault(g, []).append(
            f"{term_to_sparql(q.subject)} {term_to_sparql(q.predicate)} {term_to_sparql(q.object)} ."
        )
    return " ".join(f"GRAPH {g} {{ {' '.join(ts)} }}" for g, ts in sorted(by_graph.items()))


# --- read-only guard -------------------------------------------------------------------

UPDATE_KEYWORDS = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)
"""Keywords that begin a SPARQL 1.1 Update operation (Update section 3)."""

_IRI = re.compile(r'<[^<>"{}|^`\\\x00-\x20]*>')
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def keywords_outside_literals(text: str) -> list[str]:
    """Upper-cased bare words of a SPARQL text that are outside IRIs, strings and
    comments and are not variables, prefixed names or language tags.

    A small tokenizer, enough to spot ``SERVICE`` / update keywords; the query parser
    remains the authority on syntax.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif c in "\"'":
            triple = text.startswith(c * 3, i)
            quote = c * 3 if triple else c
            j = i + len(quote)
            while j < n:
                if text[j] == "\\":
                    j += 2
                    continue
                if text.startswith(quote, j):
                    break
                if not triple and text[j] == "\n":
                    break
                j += 1
            i = j + len(quote)
        elif c == "<":
            m = _IRI.match(text, i)
            i = m.end() if m else i + 1
        elif c in "?$@":
            m = _WORD.match(text, i + 1)
            i = (m.end() if m else i + 1)
            # a language tag may continue with -subtags
            while i < n and (text[i].isalnum() or text[i] in "-_"):
                i += 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_-.:" ):
                j += 1
            word = text[i:j].rstrip(".")
            if ":" not in word and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_:")):
                out.append(word.upper())
            i = i + max(len(word), 1)
        else:
            i += 1
    return out


def check_read_only(text: str) -> None:
    """Refuse ``SERVICE`` anywhere in a query (outside strings, IRIs and comments).

    Updates are refused by the caller when the text does not parse as a query
    (:func:`classify_parse_failure`).

    :raises ReadOnlyQuery: when the query uses ``SERVICE`` (federated query).
    :raises InvalidInput: when ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise InvalidInput(f"SPARQL query must be a str, not {type(text).__name__}", field="query")
    if "SERVICE" in keywords_outside_literals(text):
        raise ReadOnlyQuery("SERVICE (federated query) is not allowed on the read-only query interface")


def classify_parse_failure(text: str, error: Exception) -> Exception:
    """Error to raise when ``text`` failed to parse as a query: :class:`ReadOnlyQuery`
    when it contains a SPARQL Update keyword, else :class:`InvalidInput`."""
    words = set(keywords_outside_literals(text))
    found = sorted(words & UPDATE_KEYWORDS)
    if found:
        return ReadOnlyQuery(
            f"SPARQL update ({', '.join(found)}) refused: this interface is read-only ({error})"
        )
    return InvalidInput(f"SPARQL query does not parse: {error}", field="query")
