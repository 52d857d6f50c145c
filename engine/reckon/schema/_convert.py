"""Term conversion between pyoxigraph and rdflib.

The SHACL validator (pySHACL) works on rdflib graphs; the store speaks pyoxigraph.
``xsd:string`` literals become plain rdflib literals so that data and shapes carry
strings the same way (DESIGN.md: pySHACL's ``sh:in`` reports false violations when one
side types plain strings ``xsd:string`` and the other does not).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from reckon._errors import InvalidInput

if TYPE_CHECKING:  # pragma: no cover
    import rdflib

# rdflib (~0.1 s to import) is imported by each function: importing ``reckon.schema``
# must not pull it onto the paths that never build an rdflib graph.

__all__ = ["graph_from_triples", "to_oxigraph", "to_rdflib"]

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def to_rdflib(term: Any) -> rdflib.term.Node:
    """Convert one term to rdflib.

    Accepts pyoxigraph ``NamedNode`` / ``BlankNode`` / ``Literal``, rdflib terms (returned
    as they are, except ``xsd:string`` literals which become plain literals) and ``str``
    (read as an IRI).

    :raises InvalidInput: for a triple term or any other value (pySHACL has no RDF 1.2 terms).
    """
    import rdflib

    if isinstance(term, ox.NamedNode):
        return rdflib.URIRef(term.value)
    if isinstance(term, ox.BlankNode):
        return rdflib.BNode(term.value)
    if isinstance(term, ox.Literal):
        if term.language:
            return rdflib.Literal(term.value, lang=term.language)
        if term.datatype.value == _XSD_STRING:
            return rdflib.Literal(term.value)
        return rdflib.Literal(term.value, datatype=rdflib.URIRef(term.datatype.value))
    if isinstance(term, rdflib.Literal):
        if term.datatype is not None and str(term.datatype) == _XSD_STRING:
            return rdflib.Literal(str(term))
        return term
    if isinstance(term, (rdflib.URIRef, rdflib.BNode)):
        return term
    if isinstance(term, str):
        return rdflib.URIRef(term)
    raise InvalidInput(f"cannot convert {term!r} to an RDF term for SHACL validation")


def to_oxigraph(term: rdflib.term.Node) -> ox.NamedNode | ox.BlankNode | ox.Literal:
    """Convert one rdflib term to pyoxigraph (plain literals become ``xsd:string``).

    :raises InvalidInput: for an rdflib term kind pyoxigraph has no counterpart for.
    """
    import rdflib

    if isinstance(term, rdflib.URIRef):
        return ox.NamedNode(str(term))
    if isinstance(term, rdflib.BNode):
        return ox.BlankNode(str(term))
    if isinstance(term, rdflib.Literal):
        if term.language:
            return ox.Literal(str(term), language=term.language)
        if term.datatype is not None:
            return ox.Literal(str(term), datatype=ox.NamedNode(str(term.datatype)))
        return ox.Literal(str(term))
    raise InvalidInput(f"cannot convert {term!r} to a pyoxigraph term")


def graph_from_triples(triples: Iterable[Any]) -> rdflib.Graph:
    """An rdflib graph holding ``triples``.

    :param triples: pyoxigraph ``Triple`` or ``Quad`` (the graph name is dropped) or
        3-tuples of terms accepted by :func:`to_rdflib`.
    :returns: a new in-memory rdflib ``Graph``.
    :raises InvalidInput: when an item is not a triple.
    """
    import rdflib

    g = rdflib.Graph()
    for t in triples:
        if isinstance(t, (ox.Triple, ox.Quad)):
            s, p, o = t.subject, t.predicate, t.object
        elif isinstance(t, tuple) and len(t) in (3, 4):
            s, p, o = t[0], t[1], t[2]
        else:
            raise InvalidInput(f"expected a triple, got {t!r}")
        g.add((to_rdflib(s), to_rdflib(p), to_rdflib(o)))
    return g
