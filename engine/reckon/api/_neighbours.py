"""The neighbours' capabilities on the :class:`~reckon.api.Tenant` facade (issue 15):
keyed shared notes (seed 000 "Transit"), the typed event graph (seed 000 "MAGMA", seed
004 "Graph Memory") and experience records with strategy cards (seed 000 "Evolving
Memory"). Each is a service over the same tenant store, validated by the tenant's SHACL
shapes and reasoned by its rules (the shipped modules ``notes``, ``events`` and
``experience``); the facade only hands out one instance per tenant."""

from __future__ import annotations

from typing import Any

from reckon._errors import InvalidInput

__all__ = ["NeighboursMixin"]


class NeighboursMixin:
    """Mixed into :class:`~reckon.api.Tenant` (needs ``store``, ``memory``, ``_mlock``,
    ``id``, ``modules()`` and ``settings()``)."""

    store: Any
    memory: Any
    id: str
    _mlock: Any

    def _service(self, name: str, module: str, make: Any) -> Any:
        names = [m.name for m in self.modules()]  # type: ignore[attr-defined]
        if module not in names:
            raise InvalidInput(f"tenant {self.id!r} has no {module!r} module in its program (modules: "
                               f"{', '.join(names)}); install it: reckon tenant modules add {self.id} {module}",
                               field="modules")
        with self._mlock:
            got = self.__dict__.get(name)
            if got is None:
                got = self.__dict__[name] = make()
            return got

    @property
    def notes(self) -> Any:
        """The tenant's keyed shared notes (:class:`reckon.notes.NoteService`: ``put``,
        ``get``, ``list``, ``delete``, ``cas``, ``namespaces``, ``purge_expired``; seed 000
        Transit).

        :raises InvalidInput: when the tenant's program has no ``notes`` module."""
        memory = self.memory

        def make() -> Any:
            from reckon.notes.service import NoteService

            return NoteService(self.store, memory)

        return self._service("_notes", "notes", make)

    @property
    def events(self) -> Any:
        """The tenant's typed event graph (:class:`reckon.events.EventGraph`: ``record``,
        ``record_event``, ``record_episode``, ``add_dependency``, ``timeline``,
        ``related``, ``impact``, ``mermaid``, ``delete``, ``wait``; seed 000 MAGMA, seed 004 Graph Memory).

        :raises InvalidInput: when the tenant's program has no ``events`` module."""
        memory = self.memory

        def max_nodes() -> int:
            return int(self.settings().get("event_graph_max_nodes", 10000))  # type: ignore[attr-defined]

        def threshold() -> float:
            return float(self.settings().get("event_similarity_threshold", 0.7))  # type: ignore[attr-defined]

        embedder = getattr(getattr(self, "engine", None), "embedder", None)

        def make() -> Any:
            from reckon.events.service import EventGraph

            return EventGraph(self.store, memory, max_nodes=max_nodes, embedder=embedder,
                              similarity_threshold=threshold)

        return self._service("_events", "events", make)

    @property
    def experience(self) -> Any:
        """The tenant's experience records and strategy cards
        (:class:`reckon.experience.ExperienceService`: ``record``, ``experiences``,
        ``strategies``, ``similar``, ``recommend``, ``delete``; seed 000 Evolving Memory).

        :raises InvalidInput: when the tenant's program has no ``experience`` module."""
        memory = self.memory
        embedder = getattr(getattr(self, "engine", None), "embedder", None)

        def make() -> Any:
            from reckon.experience.service import ExperienceService

            return ExperienceService(self.store, memory, embedder=embedder)

        return self._service("_experience", "experience", make)
