"""Pydantic models of the memory write path: what callers send and what they get back.

A memory (seed §3, DESIGN.md "Memories") has a **kind** (closed set: preference, fact,
objective, context), a **scope** (user, conversation, project, team, company) backed by
stakeholder links (owner person; conversation; project; teams), an **importance** 1–5 (Disabled, Low, Medium, High, Critical),
a required **source** (agent_tool, extraction, operator, onboarding, import), a
**confidence** in [0, 1] (1 for anything a human entered), an optional expiry, a
label and a content, and optionally a **subclass** under ``rk:Memory`` carrying its
own typed properties.

Models here are pure data: no RDF, no store. Validation errors are turned into
:class:`~reckon._errors.InvalidInput` naming the field by :func:`parse_input` /
:func:`parse_patch`.

Three-state partial edits (seed §5): in a :class:`MemoryPatch` a field that was not
given is left untouched, a field given as ``None`` is removed, a field given a value
is set. Which fields were given is pydantic's ``model_fields_set``; inside
``properties`` the same holds per key.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_serializer, field_validator, model_validator

from reckon._errors import InvalidInput
from reckon.store.terms import text_fault
from reckon.vocab import json_decimals

__all__ = [
    "HUMAN_SOURCES",
    "IMPORTANCE_NAMES",
    "KINDS",
    "SCOPES",
    "SOURCES",
    "Conflict",
    "HistoryEntry",
    "Kind",
    "Memory",
    "MemoryInput",
    "MemoryPatch",
    "Principal",
    "PropertyValue",
    "Revision",
    "Role",
    "Scope",
    "Source",
    "default_confidence",
    "normalise_label",
    "parse_input",
    "parse_patch",
]

Kind = Literal["preference", "fact", "objective", "context"]
Scope = Literal["user", "team", "company", "project", "conversation"]
Source = Literal["agent_tool", "extraction", "operator", "onboarding", "import"]
Role = Literal["member", "operator"]

KINDS: tuple[str, ...] = ("preference", "fact", "objective", "context")
SCOPES: tuple[str, ...] = ("user", "team", "company", "project", "conversation")
SOURCES: tuple[str, ...] = ("agent_tool", "extraction", "operator", "onboarding", "import")
#: Sources where a person typed the memory: confidence defaults to 1 (seed §3).
HUMAN_SOURCES: frozenset[str] = frozenset({"operator", "onboarding", "import"})
#: Importance tiers 1–5 (seed §3: "from Disabled through Critical").
IMPORTANCE_NAMES: dict[int, str] = {1: "Disabled", 2: "Low", 3: "Medium", 4: "High", 5: "Critical"}

#: Default confidence per source when the caller gives none. Human-entered sources get
#: 1.0 (seed §3); a memory the agent wrote through its tool on the user's explicit word
#: gets 0.9; one a background extractor inferred from a conversation gets 0.7.
_DEFAULT_CONFIDENCE: dict[str, float] = {
    "operator": 1.0,
    "onboarding": 1.0,
    "import": 1.0,
    "agent_tool": 0.9,
    "extraction": 0.7,
}

#: A subclass property value: a literal (string, number, boolean, date-time) or an IRI
#: given as a string (the schema catalogue says which properties take IRIs), or a list
#: of those for a multi-valued property.
_Scalar = str | bool | int | float | Decimal | datetime
PropertyValue = _Scalar | list[_Scalar]


def default_confidence(source: str) -> float:
    """Confidence used when none is given: 1.0 for ``operator``/``onboarding``/``import``,
    0.9 for ``agent_tool``, 0.7 for ``extraction``."""
    return _DEFAULT_CONFIDENCE[source]


def normalise_label(label: str) -> str:
    """Dedup key of a label: NFKC, case-folded, runs of whitespace collapsed to one space,
    stripped. ``"  Keep ROAS  above 3 "`` and ``"keep roas above 3"`` give the same key."""
    return " ".join(unicodedata.normalize("NFKC", label).casefold().split())


def _check_text(v: Any, what: str) -> Any:
    """Refuse U+0000 and lone surrogates in a caller's text (strings nested in lists and
    dicts too): XML 1.0 cannot carry U+0000 (SPARQL XML results would be invalid), C
    libraries and terminals cut strings at it, and a lone surrogate is no Unicode scalar
    value (it cannot be encoded as UTF-8 at all)."""
    if isinstance(v, str):
        fault = text_fault(v)
        if fault is not None:
            raise ValueError(f"{what}: {fault}")
    elif isinstance(v, (list, tuple)):
        for x in v:
            _check_text(x, what)
    elif isinstance(v, dict):
        for k, x in v.items():
            _check_text(k, what)
            _check_text(x, f"{what}.{k}" if isinstance(k, str) else what)
    return v


class Principal(BaseModel):
    """Who is acting: a person id (slug), the teams they belong to, and a role; and the
    projects they are a member of and the conversations they take part in.

    ``member``: curates their own user-scope memories, and the project / conversation
    memories of their projects and conversations. ``operator``: may also write team and
    company memories, restore and delete (seed §4).

    ``teams`` is the caller's statement (a token's, the CLI's ``--member-of``).
    ``projects`` and ``conversations`` are graph data (``project rk:member person``,
    ``conversation rk:participant | ag:participant person``): every ``Tenant`` call adds
    the principal's memberships from the tenant's graph (``Tenant.principal_of``), so a
    caller needs to give them only to act for a membership the graph does not hold yet.

    :raises InvalidInput: (not a pydantic error) for an empty person, an unknown role,
        or ids with U+0000 or lone surrogates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    person: str = Field(min_length=1)
    teams: list[str] = Field(default_factory=list)
    role: Role = "member"
    projects: list[str] = Field(default_factory=list)
    conversations: list[str] = Field(default_factory=list)

    def __init__(self, **data: Any) -> None:
        for k in ("person", "teams", "projects", "conversations"):
            try:
                _check_text(data.get(k), k)
            except ValueError as e:
                raise InvalidInput(str(e), field=k) from None
        try:
            super().__init__(**data)
        except ValidationError as e:
            errs: list[Any] = list(e.errors())
            first: dict[str, Any] = dict(errs[0]) if errs else {}
            field = ".".join(str(x) for x in first.get("loc", ())) or None
            raise InvalidInput(f"Principal: {field}: {first.get('msg', e)}", field=field) from None

    @classmethod
    def operator(cls, person: str = "ops", teams: list[str] | None = None) -> Principal:
        """An operator principal (convenience)."""
        return cls(person=person, teams=list(teams or []), role="operator")

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"


def _whole_text(value: Any) -> Any:
    """A date-time given as text keeps every digit it has (pydantic cut a seventh
    fractional-second digit silently): see :func:`reckon.store.terms.check_datetime_text`."""
    if isinstance(value, str):
        from reckon.store.terms import check_datetime_text

        check_datetime_text(value)
    return value


#: A ``datetime`` field that refuses a text with a seventh non-zero fractional-second digit
#: (pydantic would cut it): for request models outside this module (the REST bodies).
WholeDateTime = Annotated[datetime, BeforeValidator(_whole_text)]


def _aware(value: datetime | None) -> datetime | None:
    """Aware date-times are returned in UTC; a naive one (no time zone) is refused:
    Reckon never guesses a zone (an expiry written in local time but read as UTC is
    off by hours)."""
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{value.isoformat()} has no time zone; give an aware datetime or an ISO 8601 "
            "text with an offset (Z, +02:00)"
        )
    return value.astimezone(UTC)



def _check_not_blank(v: str | None) -> str | None:
    """Field validator shared by :class:`MemoryInput` and :class:`MemoryPatch`."""
    if v is not None and not v.strip():
        raise ValueError("must not be blank")
    return v


def _check_strict_int(v: Any) -> Any:
    """Importance is an integer 1-5 (Disabled .. Critical) and nothing else: a string
    (``"5"``, ``"high"``), a float (``5.0``) or a boolean is refused, never coerced."""
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    raise ValueError(f"importance must be an integer 1-5 (1 Disabled .. 5 Critical), "
                     f"not the {type(v).__name__} {v!r}")


def _check_teams(v: list[str] | None) -> list[str] | None:
    """Team ids: non-empty, de-duplicated, sorted."""
    if v is None:
        return None
    if any(not t for t in v):
        raise ValueError("team ids must be non-empty")
    return sorted(set(v))

class MemoryInput(BaseModel):
    """A new memory as the caller states it (seed §3, §5).

    ``subclass`` is a class local name (``"BudgetConstraintMemory"``) or a full IRI;
    ``properties`` maps a property local name (or IRI) to a value. ``teams`` and
    ``owner`` default from the principal in the service: user scope -> owner is the
    principal's person; team scope -> ``teams`` is required. ``project`` (project scope)
    and ``conversation`` (conversation scope) name the one stakeholder of those scopes
    and are required for them.
    """

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, defer_build=True)

    kind: Kind
    scope: Scope
    importance: int = Field(ge=1, le=5)
    source: Source
    label: str = Field(min_length=1, max_length=500)
    content: str = Field(min_length=1, max_length=20_000)
    subclass: str | None = None
    properties: dict[str, PropertyValue] = Field(default_factory=dict)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    expires_at: datetime | None = None
    teams: list[str] | None = None
    owner: str | None = None
    project: str | None = Field(default=None, min_length=1)
    conversation: str | None = Field(default=None, min_length=1)
    derived_from: list[str] | None = Field(
        default=None, max_length=1000,
        description="IRIs of the turns (ontology/agent.ttl ag:Turn) the memory was extracted from")

    _not_blank = field_validator("label", "content")(classmethod(lambda cls, v: _check_not_blank(v)))
    _strict_int = field_validator("importance", mode="before")(classmethod(lambda cls, v: _check_strict_int(v)))
    _utc = field_validator("expires_at")(classmethod(lambda cls, v: _aware(v)))
    _digits = field_validator("expires_at", mode="before")(classmethod(lambda cls, v: _whole_text(v)))
    _teams = field_validator("teams")(classmethod(lambda cls, v: _check_teams(v)))

    @field_validator("owner")
    @classmethod
    def _owner(cls, v: str | None) -> str | None:
        if v is not None and not v:
            raise ValueError("owner must be non-empty")
        return v

    @model_validator(mode="before")
    @classmethod
    def _text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k in ("label", "content", "subclass", "properties", "teams", "owner", "project", "conversation"):
                _check_text(data.get(k), k)
        return data

    @model_validator(mode="after")
    def _scope_links(self) -> MemoryInput:
        if self.scope != "team" and self.scope != "user" and self.teams:
            raise ValueError(f"teams: a {self.scope} memory has no team links")
        if self.scope != "user" and self.owner is not None:
            raise ValueError("owner: only a user-scope memory has an owner")
        for name in ("project", "conversation"):
            if self.scope == name and getattr(self, name) is None:
                raise ValueError(f"{name}: a {name}-scope memory needs its {name}")
            if self.scope != name and getattr(self, name) is not None:
                raise ValueError(f"{name}: only a {name}-scope memory has a {name}")
        return self

    def resolved_confidence(self) -> float:
        return self.confidence if self.confidence is not None else default_confidence(self.source)


#: Fields of a memory that update() may change. Others (scope, source, owner, subclass)
#: define who the memory belongs to and where it came from: supersede instead.
_PATCHABLE_REQUIRED = frozenset({"kind", "importance", "label", "content", "confidence"})
_PATCHABLE_OPTIONAL = frozenset({"expires_at", "properties", "teams"})


class MemoryPatch(BaseModel):
    """A partial edit with three-state semantics (seed §5).

    A field absent from the call is untouched; ``None`` removes it; a value sets it.
    Required fields (kind, importance, label, content, confidence) cannot be removed.
    In ``properties`` each key follows the same rule (``{"amount": None}`` removes the
    amount, ``{"amount": 45000}`` sets it, keys not given are untouched).

    :raises InvalidInput: through :func:`parse_patch` when a field is unknown,
        immutable, invalid, or a required field is set to ``None``.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: Kind | None = None
    importance: int | None = Field(default=None, ge=1, le=5)
    label: str | None = Field(default=None, min_length=1, max_length=500)
    content: str | None = Field(default=None, min_length=1, max_length=20_000)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    expires_at: datetime | None = None
    properties: dict[str, PropertyValue | None] | None = None
    teams: list[str] | None = None

    _not_blank = field_validator("label", "content")(classmethod(lambda cls, v: _check_not_blank(v)))
    _strict_int = field_validator("importance", mode="before")(classmethod(lambda cls, v: _check_strict_int(v)))
    _utc = field_validator("expires_at")(classmethod(lambda cls, v: _aware(v)))
    _digits = field_validator("expires_at", mode="before")(classmethod(lambda cls, v: _whole_text(v)))
    _teams = field_validator("teams")(classmethod(lambda cls, v: _check_teams(v)))

    @model_validator(mode="before")
    @classmethod
    def _text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k in ("label", "content", "properties", "teams"):
                _check_text(data.get(k), k)
        return data

    @model_validator(mode="after")
    def _required_not_removed(self) -> MemoryPatch:
        for name in sorted(self.model_fields_set & _PATCHABLE_REQUIRED):
            if getattr(self, name) is None:
                raise ValueError(f"{name}: a required field cannot be removed (None)")
        return self

    def given(self) -> dict[str, Any]:
        """The fields the caller gave (absent ones are not in the dict)."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class Memory(BaseModel):
    """A memory as read back from the store, with its derived state inline.

    ``active`` is ``rk:ActiveMemory`` membership in the inferred graph; ``status`` holds
    derived statuses by local name (``{"budgetStatus": "near_limit", "utilisation":
    Decimal("0.85"), "currentSpend": Decimal("34000")}``). ``subclass`` is the most specific
    asserted class's local name, or ``None`` for a plain memory.

    Values are exact: an xsd:decimal (amounts, target values) is a ``decimal.Decimal``
    with every digit stored; in JSON (:meth:`model_dump` with ``mode="json"``, the HTTP
    API, MCP) it is the string of its exact lexical form (``"40000"``,
    ``"12345678901234.123456789012345678"``, never exponent notation), so no client's
    binary float rounds it. Writers take a number or such a string.
    """

    model_config = ConfigDict(frozen=False, defer_build=True)

    id: str
    iri: str
    kind: Kind
    scope: Scope
    importance: int
    source: Source
    label: str
    content: str
    confidence: float
    owner: str | None = None
    teams: list[str] = Field(default_factory=list)
    project: str | None = None
    conversation: str | None = None
    subclass: str | None = None
    subclass_iri: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    expires_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    author: str | None = None
    superseded_by: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    active: bool = False
    status: dict[str, Any] = Field(default_factory=dict)
    derived_from: list[str] = Field(default_factory=list)

    @field_serializer("properties", "status", when_used="json")
    def _exact_decimals(self, v: dict[str, Any]) -> dict[str, Any]:
        return dict(json_decimals(v))


class Revision(BaseModel):
    """The label and content a memory had before an in-place update replaced them."""

    model_config = ConfigDict(defer_build=True)

    label: str
    content: str | None
    revised_at: datetime | None
    revised_by: str | None


class HistoryEntry(BaseModel):
    """One memory in a lineage (supersession chain), oldest first (seed §9).

    A deleted memory appears as its tombstone: ``event="deleted"``, ``label`` /
    ``source`` ``None``, with ``deleted_at`` / ``deleted_by`` and, when one was given,
    ``deleted_reason`` (lifecycle maintenance names its rule). ``revisions`` lists the
    earlier label and content of in-place updates (edits and dedup restatements),
    oldest first; the current ones are ``label`` / ``content``.
    """

    model_config = ConfigDict(defer_build=True)

    id: str
    label: str | None
    content: str | None = None
    source: Source | None
    author: str | None
    created_at: datetime | None
    updated_at: datetime | None
    superseded_by: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    active: bool
    event: Literal["created", "updated", "superseded", "current", "deleted"]
    revisions: list[Revision] = Field(default_factory=list)
    deleted_at: datetime | None = None
    deleted_by: str | None = None
    deleted_reason: str | None = None


class Conflict(BaseModel):
    """A pending ask-before-overwrite (seed §9): the newcomer would replace ``candidates``.

    ``conflict_id`` is a digest of the normalised newcomer and the candidate ids, so a
    confirmation is only accepted for the same write against the same candidates.
    """

    model_config = ConfigDict(defer_build=True)

    conflict_id: str
    label: str
    candidates: list[str]
    candidate_labels: list[str]
    reason: str


def _field_of(err: Mapping[str, Any]) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    return ".".join(loc) if loc else "__root__"


def _invalid(exc: ValidationError, what: str) -> InvalidInput:
    errs = exc.errors()
    first = errs[0]
    field = _field_of(first)
    msg = str(first.get("msg", "invalid value"))
    if field == "__root__" and ":" in msg:
        # model validators say "field: reason"
        head = msg.split(",", 1)[-1].strip()
        field = head.split(":", 1)[0].strip()
    details = "; ".join(f"{_field_of(e)}: {e.get('msg')}" for e in errs)
    return InvalidInput(f"invalid {what}: {details}", field=field)


def parse_input(data: dict[str, Any]) -> MemoryInput:
    """Validate a new memory.

    :raises InvalidInput: with ``field`` naming the first offending field.
    """
    try:
        return MemoryInput.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc, "memory") from None


def parse_patch(changes: dict[str, Any]) -> MemoryPatch:
    """Validate a partial edit (three-state).

    :raises InvalidInput: when a field is unknown or immutable (scope, source, owner,
        subclass: supersede instead), invalid, or a required field is given ``None``.
    """
    immutable = sorted(set(changes) & {"scope", "source", "owner", "project", "conversation", "subclass", "id", "iri"})
    if immutable:
        raise InvalidInput(
            f"{immutable[0]}: cannot be changed by update(); supersede the memory instead",
            field=immutable[0],
        )
    try:
        return MemoryPatch.model_validate(changes)
    except ValidationError as exc:
        raise _invalid(exc, "update") from None
