"""What the memory layer needs from a tenant store: typed ``Protocol`` seams between
``reckon.memory`` and ``reckon.store`` (any backend that satisfies them serves the
memory layer; :class:`reckon.store.TenantStore` does, embedded or over a remote SPARQL
endpoint).

* :class:`MemoryView` -- reads of one consistent committed snapshot.
* :class:`MemoryTxn` -- one write transaction: pending quads plus the snapshot it reads.
* :class:`MemoryStore` -- one tenant's store: reads, snapshots, transactions.

Terms are pyoxigraph terms (``NamedNode``, ``BlankNode``, ``Literal``), quads
``pyoxigraph.Quad``; SPARQL results are the store's ``QueryResult`` (a list of rows,
``bool`` or triples).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from pyoxigraph import NamedNode, Quad

__all__ = ["MemoryStore", "MemoryTxn", "MemoryView"]

Term = Any  # pyoxigraph NamedNode | BlankNode | Literal (pyoxigraph ships no common base type)


@runtime_checkable
class MemoryView(Protocol):
    """Reads of one committed snapshot."""

    def quads(self, s: Term | None = None, p: NamedNode | None = None, o: Term | None = None,
              graph: NamedNode | None = None) -> list[Quad]:
        """Quads matching the pattern (``None`` = any)."""
        ...

    def objects(self, s: Term, p: NamedNode, graph: NamedNode | None = None) -> list[Term]:
        """Objects of ``s p ?o``."""
        ...

    def subjects(self, p: NamedNode, o: Term, graph: NamedNode | None = None) -> list[Term]:
        """Subjects of ``?s p o``."""
        ...

    def contains(self, quad: Quad) -> bool:
        """Whether the snapshot holds ``quad``."""
        ...

    def query(self, sparql: str, *, substitutions: Mapping[Any, Term] | None = None,
              use_default_graph_as_union: bool = True) -> Any:
        """Read-only SPARQL over the snapshot."""
        ...


@runtime_checkable
class MemoryTxn(Protocol):
    """One write transaction: reads see the committed state as of its start."""

    view: Any
    commit: Any

    def add(self, quad: Quad) -> None:
        """Assert ``quad`` on commit."""
        ...

    def remove(self, quad: Quad) -> None:
        """Retract ``quad`` on commit."""
        ...

    def remove_pattern(self, s: Term | None = None, p: NamedNode | None = None, o: Term | None = None,
                       graph: NamedNode | None = None) -> int:
        """Retract every committed asserted quad matching the pattern; returns how many."""
        ...

    def query(self, sparql: str, **kwargs: Any) -> Any:
        """Read-only SPARQL over the committed state."""
        ...


@runtime_checkable
class MemoryStore(Protocol):
    """One tenant's store as the memory layer uses it."""

    tenant_id: str
    last_commit: Any

    @property
    def program_key(self) -> str | None:
        """Changes whenever the tenant's stored program changes (schema caches follow it)."""
        ...

    def query(self, sparql: str, *, substitutions: Mapping[Any, Term] | None = None,
              use_default_graph_as_union: bool = True, limits: Any = None) -> Any:
        """Read-only SPARQL over a committed snapshot (trusted query texts)."""
        ...

    def snapshot(self) -> AbstractContextManager[Any]:
        """A consistent committed snapshot (:class:`MemoryView`) for several reads."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """One serialized write transaction (:class:`MemoryTxn`)."""
        ...

    def reasoner(self) -> Any:
        """The tenant's reasoner (its ``ruleset`` names the derived predicates)."""
        ...
