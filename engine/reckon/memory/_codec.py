"""The memory codec: a memory's RDF triples <-> the :class:`~reckon.memory.models.Memory`
model (seed §3; ``ontology/core.ttl``, ``shapes/core.ttl``).

Reads: :func:`to_memory` (asserted + inferred triples -> Memory), :func:`audience` (the
read policy's inputs). Writes: :func:`node_triples` (a new memory's triples),
:func:`subclass_triples` / :func:`property_spec` (typed properties; the one refusal of a
property the rules derive), :func:`turns` (``rk:derivedFrom``), :func:`linked_types`
(the context SHACL needs about linked nodes). Terms come from :mod:`reckon.memory._rdf`;
no SPARQL text is built here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from pyoxigraph import Literal, NamedNode, Quad, Triple

from reckon._errors import InvalidInput, UnknownTeam
from reckon.memory import _rdf as R
from reckon.memory.models import Kind, Memory, MemoryInput, Principal, Scope, Source

if TYPE_CHECKING:
    from reckon.memory.service import MemoryService

__all__ = [
    "audience",
    "check_teams",
    "derived_predicates",
    "linked_types",
    "node_triples",
    "property_spec",
    "stakeholders",
    "subclass_triples",
    "to_memory",
    "turns",
]



#: The live rules' bookkeeping on a memory (``rules/core.srl`` live-candidate-*: which
#: stakeholder's live context it is a candidate for), not a status of the memory.
_LIVE_CANDIDATE_IN = R.rk("liveCandidateIn")

def to_memory(svc: MemoryService, m: NamedNode, asserted: dict[Any, list[Any]], inferred: dict[Any, list[Any]]) -> Memory:
    """The :class:`Memory` of node ``m`` from its asserted and inferred triples
    (predicate -> objects)."""
    def one(p: NamedNode) -> Any:
        v = asserted.get(p)
        return v[0] if v else None

    hex_id = m.value.rsplit(":", 1)[-1]
    types = [t for t in asserted.get(R.A, []) if isinstance(t, NamedNode)]
    subclass = next((t for t in types if t != R.MEMORY), None)
    props: dict[str, Any] = {}
    if subclass is not None:
        specs = svc.schema.properties(subclass)
        for p, objs in asserted.items():
            if p.value in R.BASE_PROPERTIES:
                continue
            spec = specs.get(p.value)
            vals = sorted((svc.schema.from_term(o) for o in objs), key=repr)
            many = spec is not None and spec.max_count != 1 and (spec.max_count or 2) > 1
            props[R.local_name(p.value)] = vals if (many or len(vals) > 1) else vals[0]
    status: dict[str, Any] = {}
    for p, objs in inferred.items():
        if p in (R.A, R.P_SUPERSEDES) or p == _LIVE_CANDIDATE_IN:
            continue
        vals = []
        for o in objs:
            if isinstance(o, NamedNode):
                vals.append(svc.schema.label_of(o) or R.local_name(o.value))
            else:
                vals.append(R.python_value(o))
        status[R.local_name(p.value)] = vals[0] if len(vals) == 1 else sorted(vals, key=repr)
    owner = one(R.P_OWNER)
    author = one(R.P_AUTHOR)
    return Memory(
        id=hex_id,
        iri=m.value,
        kind=cast(Kind, R.IRI_KIND[one(R.P_KIND)]),
        scope=cast(Scope, R.IRI_SCOPE[one(R.P_SCOPE)]),
        importance=int(one(R.P_IMPORTANCE).value),
        source=cast(Source, R.IRI_SOURCE[one(R.P_SOURCE)]),
        label=one(R.LABEL).value,
        content=one(R.P_CONTENT).value if one(R.P_CONTENT) is not None else "",
        confidence=float(one(R.P_CONFIDENCE).value),
        owner=R.slug_of(owner.value) if owner is not None else None,
        teams=sorted(R.slug_of(t.value) for t in asserted.get(R.P_TEAM, [])),
        **R.links_of(asserted),
        subclass=R.local_name(subclass.value) if subclass is not None else None,
        subclass_iri=subclass.value if subclass is not None else None,
        properties=props,
        expires_at=R.python_value(one(R.P_EXPIRES)) if one(R.P_EXPIRES) is not None else None,
        created_at=R.python_value(one(R.P_CREATED)) if one(R.P_CREATED) is not None else None,
        updated_at=R.python_value(one(R.P_UPDATED)) if one(R.P_UPDATED) is not None else None,
        author=R.slug_of(author.value) if author is not None else None,
        superseded_by=sorted(o.value.rsplit(":", 1)[-1] for o in asserted.get(R.P_SUPERSEDED_BY, [])),
        supersedes=sorted(o.value.rsplit(":", 1)[-1] for o in inferred.get(R.P_SUPERSEDES, [])),
        active=R.ACTIVE in inferred.get(R.A, []),
        status=status,
        derived_from=sorted(o.value for o in asserted.get(R.P_DERIVED_FROM, [])),
    )


def derived_predicates(svc: MemoryService) -> frozenset[str]:
    """IRIs of predicates some rule of the tenant's program derives (rule heads):
    a writer never asserts them (derived triples live only in the inferred graph),
    else a stored "status" could contradict the derived one. From the ``derived``
    callable the service was built with (the facade hands it the tenant's program),
    else from the store's reasoner."""
    if svc._derived is not None:
        return svc._derived()
    try:
        rs = getattr(svc.store.reasoner(), "ruleset", None)
    except Exception:  # noqa: BLE001 - no reasoner: nothing is derived
        rs = None
    if rs is None:
        return frozenset()
    return frozenset(
        tp.p.value for r in rs.rules for tp in r.head if isinstance(tp.p, NamedNode)
    ) - {R.A.value}


def property_spec(svc: MemoryService, klass: NamedNode, name: str, derived: frozenset[str]) -> Any:
    """The property ``name`` (local name or IRI) of class ``klass`` a writer may assert.

    :param derived: :func:`derived_predicates` (read once per write).
    :raises InvalidInput: when ``klass`` has no such property, or when it is one the
        rules derive (a stored value could contradict the derived one).
    """
    spec = svc.schema.resolve_property(klass, name)
    if spec.iri in derived:
        raise InvalidInput(
            f"properties.{name}: {spec.local} is derived by the rules from live data; it cannot be written",
            field=f"properties.{name}",
        )
    return spec


def subclass_triples(svc: MemoryService, m: NamedNode, klass: NamedNode, properties: dict[str, Any]) -> list[Triple]:
    """The property triples of a new subclass memory ``m``.

    :raises InvalidInput: for an unknown, derived or ill-typed property (:func:`property_spec`).
    """
    out = []
    derived = derived_predicates(svc) if properties else frozenset()
    for name, value in properties.items():
        spec = property_spec(svc, klass, name, derived)
        for term in svc.schema.to_terms(spec, value):
            out.append(Triple(m, NamedNode(spec.iri), term))
    return out


def turns(tenant: str, iris: Sequence[str] | None) -> list[NamedNode]:
    """Turn IRIs of ``derived_from`` (each must be a turn of this tenant; SHACL
    checks it is an ``ag:Turn``).

    :raises InvalidInput: for a value that is not an IRI of this tenant.
    """
    out: list[NamedNode] = []
    for v in iris or ():
        if not isinstance(v, str) or not v.startswith(f"urn:reckon:{tenant}:"):
            raise InvalidInput(f"derived_from: {v!r} is not a turn of tenant {tenant!r}",
                               field="derived_from")
        try:
            out.append(NamedNode(v))
        except ValueError:
            raise InvalidInput(f"derived_from: {v!r} is not an IRI", field="derived_from") from None
    return list(dict.fromkeys(out))


def linked_types(svc: MemoryService, triples: Iterable[Triple]) -> tuple[list[Triple], list[Quad]]:
    """Type triples of linked nodes for validation, and quads creating missing
    person and conversation nodes (``<p> a rk:Person``, ``<c> a rk:Conversation``) in
    MEMORIES: new people and conversations appear on demand. A project was checked by
    :func:`check_project`; a team is never created here (:func:`check_teams`).

    :raises UnknownTeam: a ``rk:team`` link names a team the tenant does not have.
    """
    ctx: list[Triple] = []
    create: list[Quad] = []
    seen: set[NamedNode] = set()
    for t in triples:
        o = t.object
        if not isinstance(o, NamedNode) or o in seen or t.predicate == R.A:
            continue
        seen.add(o)
        if t.predicate in (R.P_OWNER, R.P_AUTHOR):
            if not svc._exists(o, R.PERSON):
                create.append(Quad(o, R.A, R.PERSON, R.MEMORIES))
            ctx.append(Triple(o, R.A, R.PERSON))
        elif t.predicate == R.P_TEAM:  # never created here: check_teams refused an unknown one
            if not svc._exists(o, R.TEAM):
                raise unknown_teams(svc.tenant, [R.slug_of(o.value)], svc.team_ids())
            ctx.append(Triple(o, R.A, R.TEAM))
        elif t.predicate in (R.P_PROJECT, R.P_CONVERSATION):
            klass = R.PROJECT if t.predicate == R.P_PROJECT else R.CONVERSATION
            if not svc._exists(o, klass):
                create.append(Quad(o, R.A, klass, R.MEMORIES))
            ctx.append(Triple(o, R.A, klass))
        elif o.value.startswith(f"urn:reckon:{svc.tenant}:"):
            ctx.extend(Triple(o, R.A, ty) for ty in svc._types_of(o))
    return ctx, create


def audience(asserted: dict[Any, list[Any]]) -> dict[str, Any]:
    """``scope``, ``owner`` and ``teams`` of a memory's asserted triples (the read
    policy's inputs, :func:`reckon.memory.authz.can_read`)."""
    scope = asserted.get(R.P_SCOPE)
    owner = asserted.get(R.P_OWNER)
    return {
        "scope": R.IRI_SCOPE.get(scope[0], "user") if scope else "user",
        "owner": R.slug_of(owner[0].value) if owner else None,
        "teams": sorted(R.slug_of(t.value) for t in asserted.get(R.P_TEAM, [])),
        **R.links_of(asserted),
    }


def check_project(svc: MemoryService, data: MemoryInput) -> None:
    """A project-scope memory names a project of the tenant (``<project> a rk:Project``,
    made by :meth:`reckon.api.Tenant.add_project`): checked before authorization, so an
    operator and a member both learn that the project does not exist (a member is not
    told "not authorized" for a typo), and nothing is written.

    :raises InvalidInput: (field ``project``) naming the unknown project.
    """
    if data.project is None:
        return
    if not svc._exists(R.project_iri(svc.tenant, data.project), R.PROJECT):
        raise InvalidInput(
            f"project: no project {data.project!r} in tenant {svc.tenant!r} "
            "(an operator creates it with Tenant.add_project)",
            field="project",
        )


def check_teams(svc: MemoryService, teams: Iterable[str], *, field: str = "teams") -> None:
    """Every id in ``teams`` is a team of the tenant (``<team> a rk:Team``, made by an
    operator: :meth:`reckon.api.Tenant.add_team`, ``add_person(teams=...)`` or an
    onboarding file). Ids are compared exactly (see :func:`reckon.vocab.team_key`).
    Checked before authorization and before anything is written, like
    :func:`check_project`.

    :raises UnknownTeam: (field ``field``) naming the unknown ids and the known ones.
    """
    wanted = sorted(set(teams))
    if not wanted:
        return
    missing = [t for t in wanted if not svc._exists(svc._team(t), R.TEAM)]
    if missing:
        raise unknown_teams(svc.tenant, missing, svc.team_ids(), field=field)


def unknown_teams(tenant: str, missing: Sequence[str], known: Sequence[str], *, field: str = "teams") -> UnknownTeam:
    """The :class:`UnknownTeam` for ``missing`` ids, listing the ``known`` ones and, for
    each missing id, a known id with the same :func:`reckon.vocab.team_key` if any."""
    keys = {R.team_key(k): k for k in known}
    names = ", ".join(repr(t) + (f" (did you mean {keys[R.team_key(t)]!r}?)" if R.team_key(t) in keys else "")
                      for t in missing)
    listed = ", ".join(repr(k) for k in known) if known else "none yet"
    noun = "team" if len(missing) == 1 else "teams"
    return UnknownTeam(
        f"{field}: no {noun} {names} in tenant {tenant!r} (its teams: {listed}); "
        "an operator creates a team with Tenant.add_team or `reckon tenant add-team`",
        teams=list(missing), known=list(known), field=field)


def stakeholders(data: MemoryInput, principal: Principal) -> tuple[str | None, list[str]]:
    """Owner and teams of a new memory: a user-scope memory is the writer's unless it
    names an owner; a team-scope memory is the writer's teams' unless it names teams.

    A project- or conversation-scope memory's one project / conversation id is returned
    in place of the teams (the link of its dedup group; :data:`reckon.memory._rdf.LINKS`).

    :raises InvalidInput: teams on a user-scope memory; a team-scope memory without teams.
    """
    owner = data.owner
    teams = list(data.teams or [])
    if data.scope == "user":
        if teams:
            raise InvalidInput("teams: a user-scope memory has no team links", field="teams")
        owner = owner or principal.person
    elif data.scope == "team":
        teams = teams or sorted(set(principal.teams))
        if not teams:
            raise InvalidInput("teams: a team-scope memory needs at least one team", field="teams")
    elif data.scope in R.LINKS:  # the one project / conversation, carried as the group's link
        teams = [getattr(data, data.scope)]
    return owner, teams


def node_triples(
    svc: MemoryService, m: NamedNode, data: MemoryInput, klass: NamedNode, owner: str | None, teams: list[str],
    principal: Principal,
) -> list[Triple]:
    """The triples of new memory ``m`` (class ``klass``), created and updated now by ``principal``.

    :raises InvalidInput: for a bad property or ``derived_from`` value.
    """
    now = R.dt_literal(svc._clock())
    triples = [
        Triple(m, R.A, klass),
        Triple(m, R.LABEL, Literal(data.label)),
        Triple(m, R.P_CONTENT, Literal(data.content)),
        Triple(m, R.P_KIND, R.KIND_IRI[data.kind]),
        Triple(m, R.P_SCOPE, R.SCOPE_IRI[data.scope]),
        Triple(m, R.P_IMPORTANCE, Literal(str(data.importance), datatype=R.X_INTEGER)),
        Triple(m, R.P_SOURCE, R.SOURCE_IRI[data.source]),
        Triple(m, R.P_CONFIDENCE, R.decimal_literal(data.resolved_confidence())),
        Triple(m, R.P_CREATED, now),
        Triple(m, R.P_UPDATED, now),
        Triple(m, R.P_AUTHOR, svc._person(principal.person)),
    ]
    if owner is not None:
        triples.append(Triple(m, R.P_OWNER, svc._person(owner)))
    if data.scope in R.LINKS:
        pred, iri_of = R.LINKS[data.scope]
        triples.extend(Triple(m, pred, iri_of(svc.tenant, t)) for t in teams)
    else:
        triples.extend(Triple(m, R.P_TEAM, svc._team(t)) for t in teams)
    if data.expires_at is not None:
        triples.append(Triple(m, R.P_EXPIRES, R.dt_literal(data.expires_at)))
    if klass != R.MEMORY:
        triples.extend(subclass_triples(svc, m, klass, data.properties))
    triples.extend(Triple(m, R.P_DERIVED_FROM, t) for t in turns(svc.tenant, data.derived_from))
    return triples
