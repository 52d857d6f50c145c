"""Operator onboarding from a YAML file (seed 003 §5: "a short onboarding flow seeds a new
tenant with its first objective, fact, and preference so the agent starts with a spine
of high-value context on day one").

A thin layer over the :class:`~reckon.api.Tenant` API. The file::

    tenant: acme                       # tenant id (or give it on the command line)
    company: Acme Inc.                 # display name (or {name: Acme Inc.})
    operator: dana                     # who onboards: author of the seed memories
    teams:   [{id: growth, name: Growth}]
    people:  [{id: dana, name: Dana Whitfield, teams: [growth]}]
    accounts: [{platform: meta, account_id: "act-1234", name: Acme Meta}]     # optional
    subscription: {plan: growth, status: active, seats: 10}                  # optional
    objective:  {label: ..., content: ..., subclass: BudgetConstraintMemory,
                 properties: {platform: meta, amount: 40000, currency: USD, period: monthly}}
    fact:       {label: ..., content: ...}
    preference: {label: ..., content: ...}
    memories:   [{kind: objective, label: ..., ...}]                          # optional, more

``objective``, ``fact`` and ``preference`` are required. Each seed memory takes the
fields of :meth:`Tenant.remember` with these defaults: ``kind`` = its key (for the three
seeds), ``scope: company``, ``importance: 4`` (5 for the objective), ``source:
onboarding`` (confidence 1.0). Seed memories are written by an operator principal, and
``keep_both`` is confirmed automatically when two seeds look alike: the file lists them
deliberately. A person's ``teams`` must be listed under ``teams:`` (or be teams of the
tenant already): teams are made here, never by the seed memories (a team-scope seed
naming another team is refused with :class:`~reckon.UnknownTeam`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reckon._errors import ConflictPending, InvalidInput, ReckonError, UnknownTeam

__all__ = ["OnboardingSpec", "OnboardResult", "REQUIRED_SEEDS", "load_spec", "onboard"]

REQUIRED_SEEDS: tuple[str, ...] = ("objective", "fact", "preference")
"""The three memories every onboarding file must seed (seed 003 §5)."""

_IMPORTANCE_DEFAULT = {"objective": 5, "fact": 4, "preference": 4, "context": 4}


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TeamSpec(_M):
    id: str = Field(min_length=1)
    name: str | None = None


class PersonSpec(_M):
    id: str = Field(min_length=1)
    name: str | None = None
    teams: list[str] = Field(default_factory=list)


class AccountSpec(_M):
    platform: str
    account_id: str
    name: str | None = None

    @field_validator("account_id", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v


class SubscriptionSpec(_M):
    plan: str
    status: str = "active"
    seats: int | None = None


class OnboardingSpec(_M):
    """A parsed onboarding file (see the module docstring)."""

    tenant: str | None = None
    company: str | dict[str, str] | None = None
    operator: str = "onboarding"
    teams: list[TeamSpec] = Field(default_factory=list)
    people: list[PersonSpec] = Field(default_factory=list)
    accounts: list[AccountSpec] = Field(default_factory=list)
    subscription: SubscriptionSpec | None = None
    objective: dict[str, Any] | None = None
    fact: dict[str, Any] | None = None
    preference: dict[str, Any] | None = None
    memories: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def company_name(self) -> str | None:
        if isinstance(self.company, dict):
            return self.company.get("name")
        return self.company

    def seeds(self) -> list[tuple[str, dict[str, Any]]]:
        """``(key, remember fields)`` of every memory to write, seeds first."""
        out = []
        for key in REQUIRED_SEEDS:
            fields = dict(getattr(self, key) or {})
            if fields.get("kind", key) != key:
                raise InvalidInput(f"{key}: kind must be {key!r} (or omitted), got {fields['kind']!r}", field=key)
            fields["kind"] = key
            out.append((key, fields))
        for i, m in enumerate(self.memories):
            if "kind" not in m:
                raise InvalidInput(f"memories[{i}]: kind is required", field=f"memories[{i}].kind")
            out.append((f"memories[{i}]", dict(m)))
        for _key, fields in out:
            fields.setdefault("scope", "company")
            fields.setdefault("importance", _IMPORTANCE_DEFAULT.get(str(fields["kind"]), 4))
            fields.setdefault("source", "onboarding")
            if "label" in fields and "content" not in fields:
                fields["content"] = fields["label"]
        return out


def load_spec(source: str | Path | dict[str, Any]) -> OnboardingSpec:
    """Parse an onboarding file (YAML) or an already-loaded mapping.

    :raises InvalidInput: when the file cannot be read, is not YAML, has an unknown key,
        or lacks any of the first objective, fact and preference (all missing ones are
        named).
    """
    if isinstance(source, dict):
        data: Any = source
        where = "onboarding spec"
    else:
        import yaml  # type: ignore[import-untyped]

        p = Path(source)
        where = str(p)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise InvalidInput(f"cannot read {p}: {e.strerror or e}", field="path") from e
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
            what = " ".join(x for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x) or str(e)
            raise InvalidInput(f"{p}{at}: not valid YAML: {what}", field="path") from e
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: expected a mapping at the top level", field="path")
    _check_text(data, where, "")
    missing = [k for k in REQUIRED_SEEDS if not data.get(k)]
    if missing:
        raise InvalidInput(
            f"{where}: missing {', '.join(missing)}: an onboarding file must seed the first "
            f"objective, fact and preference (seed 003 §5)",
            field=missing[0],
        )
    try:
        return OnboardingSpec(**data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        raise InvalidInput(f"{where}: {loc}: {err.get('msg')}", field=loc or None) from None


def _check_text(value: Any, where: str, path: str) -> None:
    """Refuse a key or value no RDF text can hold (YAML's ``"\\x01"`` / ``"\\uFFFF"``
    escapes make one; :func:`reckon.store.terms.text_fault`), naming the file and the
    value's path in it (``people[0].name``)."""
    from reckon.store.terms import text_fault

    if isinstance(value, str):
        fault = text_fault(value)
        if fault is not None:
            raise InvalidInput(f"{where}: {path or 'value'}: {fault}", field=path or None)
    elif isinstance(value, dict):
        for k, v in value.items():
            key = str(k)
            fault = text_fault(key)
            if fault is not None:
                raise InvalidInput(f"{where}: a key in {path or 'the top level'}: {fault}", field=path or None)
            _check_text(v, where, f"{path}.{key}" if path else key)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_text(v, where, f"{path}[{i}]")


class OnboardResult(BaseModel):
    """What :func:`onboard` did: the tenant id, and memory ids by seed key
    (``"objective"``, ``"fact"``, ``"preference"``, ``"memories[0]"`` ...)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tenant: str
    created: bool
    memories: dict[str, str]


def onboard(engine: Any, source: str | Path | dict[str, Any], *, tenant_id: str | None = None,
            existing: bool = False) -> OnboardResult:
    """Create (or, with ``existing``, extend) a tenant from an onboarding file: company
    name, teams, people, accounts, subscription, then the seed memories (source
    ``onboarding``). A tenant created here is deleted again if any step fails, so a bad
    file leaves nothing behind.

    :param tenant_id: overrides the file's ``tenant``.
    :raises InvalidInput: bad file (see :func:`load_spec`), no tenant id, or a person's
        team that is neither under ``teams:`` nor a team of the (existing) tenant.
    :raises TenantExists: the tenant exists and ``existing`` is false (pass
        ``existing=True`` to add to it).
    :raises ShapeViolation: a seed memory does not conform to its shapes.
    """
    from reckon._errors import TenantExists, UnknownTenant
    from reckon.api import Principal

    spec = load_spec(source)
    tid = tenant_id or spec.tenant
    if not tid:
        raise InvalidInput("no tenant id: put 'tenant: <id>' in the file or pass --tenant", field="tenant")
    seeds = spec.seeds()
    missing = [f"{key}.label" for key, f in seeds if not f.get("label")]
    if missing:
        raise InvalidInput(f"missing {', '.join(missing)}", field=missing[0])
    created = False
    try:
        tenant = engine.tenant(tid)
        if not existing:
            raise TenantExists(f"tenant {tid!r} already exists")
    except UnknownTenant:
        tenant = engine.create_tenant(tid, company_name=spec.company_name)
        created = True
    try:
        declared = {team.id.strip() for team in spec.teams} | set(tenant.teams())
        for i, person in enumerate(spec.people):
            undeclared = sorted({t.strip() for t in person.teams} - declared)
            if undeclared:  # a typo in a person's teams would otherwise be a new team
                raise InvalidInput(
                    f"people[{i}].teams: {', '.join(map(repr, undeclared))} not under teams: "
                    f"(declared: {', '.join(map(repr, sorted(declared))) or 'none'})", field=f"people[{i}].teams")
        for team in spec.teams:
            tenant.add_team(team.id, team.name)
        for person in spec.people:
            tenant.add_person(person.id, person.name, teams=person.teams)
        for acc in spec.accounts:
            tenant.connect_account(acc.platform, acc.account_id, acc.name)
        if spec.subscription is not None:
            s = spec.subscription
            tenant.set_subscription(s.plan, s.status, s.seats)
        teams = next((p.teams for p in spec.people if p.id == spec.operator), [])
        principal = Principal(person=spec.operator, teams=teams, role="operator")
        ids: dict[str, str] = {}
        for key, fields in seeds:
            try:
                try:
                    m = tenant.remember(principal=principal, **fields)
                except ConflictPending as c:
                    m = tenant.remember(principal=principal, conflict_resolution="keep_both",
                                        conflict_id=c.conflict_id, **fields)
            except UnknownTeam as e:  # keeps the unknown and known team ids
                raise UnknownTeam(f"{key}: {e}", e.field, teams=e.teams, known=e.known) from e
            except ReckonError as e:
                raise type(e)(f"{key}: {e}", *_extra_args(e)) from e
            ids[key] = m.id
    except BaseException:
        if created:
            engine.delete_tenant(tid)
        raise
    return OnboardResult(tenant=tid, created=created, memories=ids)


def _extra_args(e: Exception) -> tuple[Any, ...]:
    """Constructor arguments after the message for errors that carry data."""
    if hasattr(e, "violations"):
        return (e.violations,)
    if isinstance(e, ConflictPending):
        return (e.conflict_id, e.candidates)
    if isinstance(e, InvalidInput):
        return (e.field,)
    return ()
