"""SPARQL text built only from pyoxigraph term serialisation, and the read-only guard.

* :func:`term_to_sparql` serialises a ground term with the library's own escaping
  (``str(NamedNode)`` / ``str(Literal)``); triple terms become ``<<( s p o )>>``
  (SPARQL 1.2). User strings are never pasted into query text.
* :func:`skolemize` / :func:`deskolemize` map blank nodes to Skolem IRIs
  (RDF 1.1 Concepts section 3.5) so that an update can name them.
* :func:`check_read_only` refuses SPARQL updates and ``SERVICE`` before a query runs
  (through :mod:`reckon.store.query_guard`).
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput
from reckon.store.graphs import SKOLEM_PREFIX

__all__ = [
    "check_read_only",
    "deskolemize",
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


def check_read_only(text: str) -> None:
    """Refuse an update, ``SERVICE`` or a dataset clause outside the public graphs,
    decided by :func:`reckon.store.query_guard.inspect_query` (no limits).

    :raises ReadOnlyQuery: for an update or ``SERVICE``.
    :raises InvalidInput: when ``text`` is not a ``str`` or is not a query.
    """
    from reckon.store.graphs import PUBLIC
    from reckon.store.query_guard import inspect_query

    inspect_query(text, None, public_graphs=tuple(g.value for g in PUBLIC))
