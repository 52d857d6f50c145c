"""The Reckon exception hierarchy.

Every public call raises a subclass of :class:`ReckonError`; catch the most
specific class you can act on::

    ReckonError                      base class; catch-all for Reckon failures
    ├── RuleError                    a rule file/program is not acceptable
    │   ├── RuleSyntaxError          (+ SyntaxError) text does not parse; has file:line:column
    │   └── RuleSetInvalid           (+ ValueError) parsed, but not well-formed / not stratifiable
    ├── EvaluationLimitExceeded      a runaway program hit a documented limit
    │   └── ResourceLimit            ... a memory / fact / round budget (names the limit and the rule)
    ├── InconsistentGraph            the rules derive an inconsistency (owl:Nothing) and the write was refused
    ├── ExplainError                 (+ LookupError) explain() asked about a triple that is not inferred
    ├── SchemaError                  ontology / shapes files cannot be loaded
    ├── InvalidInput                 (+ ValueError) a request is malformed (bad field, bad value)
    │   ├── ShapeViolation           a write does not conform to the SHACL shapes
    │   └── UnknownTeam              (+ LookupError) a write or read names a team the tenant does not have
    ├── NotAuthorized                (+ PermissionError) the principal may not do this
    ├── UnknownTenant                (+ LookupError) no such tenant
    │   └── TenantGone               the tenant this object was opened on was deleted (or re-created)
    ├── TenantExists                 a tenant with this id already exists
    ├── InvalidTenantId              (+ ValueError) tenant id does not match ^[a-z0-9][a-z0-9_-]{0,62}$
    ├── UnknownMemory                (+ LookupError) no memory with this id in this tenant
    ├── ConflictPending              a write needs confirmation (replace / keep_both)
    ├── RestoreRefused               restoring would contradict a live memory
    ├── ReadOnlyQuery                (+ ValueError) an update was sent to a read-only query interface
    ├── QueryLimitExceeded           a read-only query hit a documented limit (size, depth, deadline, rows)
    ├── ProgramMismatch              a tenant was opened with another program than the one it stores
    └── StoreError                   (+ OSError) the tenant store failed (I/O, lock, corruption)

Diagnostics for rule programs are collected into one report: see
:class:`reckon.datalog.diagnostics.Diagnostic`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reckon.datalog.diagnostics import Diagnostic

__all__ = [
    "ConflictPending",
    "EvaluationLimitExceeded",
    "ExplainError",
    "InconsistentGraph",
    "InvalidInput",
    "InvalidTenantId",
    "NotAuthorized",
    "ProgramMismatch",
    "QueryLimitExceeded",
    "ReadOnlyQuery",
    "ReckonError",
    "ResourceLimit",
    "RestoreRefused",
    "RuleError",
    "RuleSetInvalid",
    "RuleSyntaxError",
    "SchemaError",
    "ShapeViolation",
    "StoreError",
    "TenantExists",
    "TenantGone",
    "UnknownMemory",
    "UnknownTeam",
    "UnknownTenant",
]


class ReckonError(Exception):
    """Base class of every error Reckon raises on purpose."""


class RuleError(ReckonError):
    """A rule program cannot be used. ``diagnostics`` lists every problem found.

    :ivar diagnostics: list of :class:`~reckon.datalog.diagnostics.Diagnostic`,
        each with file, line, column, a stable code (``SRL0xx``) and a message.
    """

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics) or "invalid rule program")


class RuleSyntaxError(RuleError, SyntaxError):
    """The rule text does not parse (grammar of SRL or the RDFox Datalog subset)."""

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics) or "rule syntax error"


class RuleSetInvalid(RuleError, ValueError):
    """The rule set parses but is not well-formed (unsafe variable, unknown prefix,
    assignment rebinding a variable ...) or its negation cannot be stratified."""


class EvaluationLimitExceeded(ReckonError):
    """Materialization stopped at a documented limit (e.g. ``max_derived`` facts or
    ``max_rounds`` semi-naive rounds), typically a rule minting fresh blank nodes
    forever. The store is left as it was before the call."""


class ResourceLimit(EvaluationLimitExceeded):
    """Materialization stopped before it exhausted a resource: the process's memory
    (``Limits.max_bytes``: the resident-memory budget, checked every round and, for a
    round that grows too fast, inside it), the number of derived facts
    (``max_derived``), the rounds of one stratum (``max_rounds``) or the nesting depth of
    a triple term (``max_term_depth``). Raised while the process is still healthy, so it
    can be caught; the reasoner (and the store) keep their previous state.

    :ivar limit: the name of the :class:`~reckon.datalog.evaluate.Limits` field that
        was hit (``"max_bytes"``, ``"max_derived"``, ``"max_rounds"``, ``"max_term_depth"``).
    :ivar value: the limit's value (bytes, facts, rounds or levels).
    :ivar observed: what was measured when evaluation stopped, in the same unit.
    :ivar rule: the name of the rule that was deriving when evaluation stopped.
    """

    def __init__(self, message: str, *, limit: str, value: int, observed: int, rule: str = "") -> None:
        self.limit = limit
        self.value = value
        self.observed = observed
        self.rule = rule
        super().__init__(message)


class InconsistentGraph(ReckonError):
    """The rules derive an inconsistency — some ``?x rdf:type owl:Nothing`` (the RDFox
    convention for an OWL 2 RL rule whose head is ``false``) — and the reasoner was
    built to refuse such a change (``Reasoner(..., refuse_inconsistent=True)``). The
    change was not applied: the reasoner, and the store that asked, are as before.

    :ivar inconsistencies: the new inconsistencies
        (:class:`~reckon.datalog.evaluate.Inconsistency`: the node, the rule, the
        clashing facts and the explanation).
    """

    def __init__(self, message: str, inconsistencies: list[Any] | None = None) -> None:
        self.inconsistencies = list(inconsistencies or [])
        super().__init__(message)


class ExplainError(ReckonError, LookupError):
    """``explain`` was asked about a triple that is not in the inferred graph."""


class SchemaError(ReckonError):
    """An ontology or shapes file cannot be loaded or is inconsistent."""


class InvalidInput(ReckonError, ValueError):
    """A request is malformed. ``field`` names the offending field when known."""

    def __init__(self, message: str, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


class ShapeViolation(InvalidInput):
    """A write does not conform to the SHACL shapes; nothing was written. An
    :class:`InvalidInput` whose ``field`` is the first violation's field.

    :ivar violations: list of dicts with ``focus_node``, ``path``, ``field``, ``constraint``
        (the SHACL constraint component, e.g. ``sh:MinInclusiveConstraintComponent``),
        ``value`` and ``message``.
    """

    def __init__(self, message: str, violations: list[dict[str, Any]] | None = None) -> None:
        self.violations = list(violations or [])
        first = self.violations[0] if self.violations else {}
        super().__init__(message, field=first.get("field") or None)


class UnknownTeam(InvalidInput, LookupError):
    """A call names a team the tenant does not have: a write (``teams`` of a team-scope
    memory, or the principal's teams it defaults to) or a read (the principal's
    ``teams``, a token's). Nothing was read or written. Teams are made only by an
    operator: :meth:`reckon.api.Tenant.add_team`, :meth:`~reckon.api.Tenant.add_person`
    with ``teams``, or an onboarding file; a write never creates one, so a typo cannot
    become a new team nobody reads.

    Team ids are compared exactly (case and whitespace count, as for person ids); the
    message suggests a known team that differs only in case, Unicode form or
    surrounding whitespace (:func:`reckon.vocab.team_key`).

    :ivar teams: the unknown team ids, sorted.
    :ivar known: the tenant's team ids, sorted.
    """

    def __init__(self, message: str, field: str | None = "teams", *, teams: Sequence[str] = (),
                 known: Sequence[str] = ()) -> None:  # (message, field) as InvalidInput: wrappers re-raise so
        self.teams = sorted(teams)
        self.known = sorted(known)
        super().__init__(message, field=field)


class NotAuthorized(ReckonError, PermissionError):
    """The principal may not perform this operation (scope / ownership / role)."""


class UnknownTenant(ReckonError, LookupError):
    """No tenant with this id exists under the engine's data directory."""


class TenantGone(UnknownTenant):
    """The tenant this object was opened on no longer exists: it was deleted, and
    maybe re-created (a new *incarnation* with the same id, e.g. ``tenant delete`` +
    ``import`` while ``serve`` runs). Nothing was read or written. Open the tenant
    again (``engine.tenant(id)``) to reach the new incarnation, if there is one."""


class TenantExists(ReckonError):
    """``create_tenant`` was called with an id that already exists."""


class InvalidTenantId(ReckonError, ValueError):
    """A tenant id does not match ``^[a-z0-9][a-z0-9_-]{0,62}$``; refused before any
    filesystem path is built from it."""


class UnknownMemory(ReckonError, LookupError):
    """No memory with this id exists in this tenant."""


class ConflictPending(ReckonError):
    """A new memory would replace existing ones a human may have meant to keep.

    Nothing was written. Confirm with ``resolution="replace"`` or ``"keep_both"``.

    :ivar conflict_id: token to pass back when confirming.
    :ivar candidates: ids of the memories the new one would replace.
    """

    def __init__(self, message: str, conflict_id: str, candidates: list[str]) -> None:
        self.conflict_id = conflict_id
        self.candidates = list(candidates)
        super().__init__(message)


class RestoreRefused(ReckonError):
    """Restoring a superseded memory would contradict a still-live memory."""


class ReadOnlyQuery(ReckonError, ValueError):
    """A SPARQL update (or LOAD / CLEAR / SERVICE) was sent to a read-only interface."""


class ProgramMismatch(ReckonError):
    """A tenant was opened with an explicit program (``Engine(rules=..., modules=...)``)
    that differs from the program the tenant stores, or a tenant created before programs
    were stored does not match the program it was opened with. Nothing was written.
    Open it without naming a program (it then reasons with its own), or migrate it
    explicitly (``Tenant.install_module`` / ``reckon tenant modules add|remove``).

    :ivar differences: one line per module that differs.
    """

    def __init__(self, message: str, differences: list[str] | None = None) -> None:
        self.differences = list(differences or [])
        super().__init__(message)


class QueryLimitExceeded(ReckonError):
    """A read-only SPARQL query was stopped at a documented limit; nothing else was
    affected (see ``reckon.store.QueryLimits`` for the defaults).

    :ivar limit: which limit: ``"query_bytes"`` (text too large), ``"depth"`` (nesting
        or operator chains too deep), ``"deadline"`` (evaluation took too long: it was
        cancelled), ``"rows"`` / ``"result_bytes"`` (result too large), ``"busy"`` (no
        query worker became free before the deadline), ``"resources"`` (the evaluator
        ran out of memory or stack and was stopped).
    :ivar value: the limit's configured value (bytes, levels, seconds, rows).
    """

    def __init__(self, message: str, limit: str, value: float | int | None = None) -> None:
        self.limit = limit
        self.value = value
        super().__init__(message)


class StoreError(ReckonError, OSError):
    """The tenant store failed: I/O error, lock timeout or corrupted state."""


class TenantClosed(StoreError):
    """This :class:`~reckon.api.Tenant` object (its store) was closed -- by
    ``Tenant.close()`` or ``Engine.close()`` (also on leaving ``with Engine(...)``) --
    and is used again. Nothing was read or written; ``engine.tenant(id)`` opens the
    tenant again (a new object)."""
