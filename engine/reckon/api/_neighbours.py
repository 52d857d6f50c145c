"""The neighbours' capabilities on the :class:`~reckon.api.Tenant` facade (issue 15):
keyed shared notes (seed 000 "Transit"). Each is a service over the same tenant store,
validated by the tenant's SHACL shapes and reasoned by its rules; the facade only hands
out one instance per tenant."""

from __future__ import annotations

from typing import Any

__all__ = ["NeighboursMixin"]


class NeighboursMixin:
    """Mixed into :class:`~reckon.api.Tenant` (needs ``store``, ``memory``, ``_mlock``)."""

    store: Any
    memory: Any
    _mlock: Any

    def _service(self, name: str, make: Any) -> Any:
        with self._mlock:
            got = self.__dict__.get(name)
            if got is None:
                got = self.__dict__[name] = make()
            return got

    @property
    def notes(self) -> Any:
        """The tenant's keyed shared notes (:class:`reckon.notes.NoteService`: ``put``,
        ``get``, ``list``, ``delete``, ``cas``, ``namespaces``, ``purge_expired``; seed 000
        Transit)."""
        memory = self.memory

        def make() -> Any:
            from reckon.notes.service import NoteService

            return NoteService(self.store, memory)

        return self._service("_notes", make)
