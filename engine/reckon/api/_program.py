"""Program migrations: install, upgrade or remove a module of a tenant, and adopt a tenant
created before programs were stored in tenants (``reckon.schema.program``).

Every migration is ONE store transaction: the schema graph's module triples and
settings, the stored program (private program graph) and the inferred graph re-derived
from scratch under the new program are written by one atomic update. Before it writes,
a migration checks the new program (rule files parse and stratify, settings have one
value each), refuses to drop a class that memories still use, and SHACL-validates every
memory and typed business node (and the settings node) against the new shapes; any
refusal leaves the store exactly as it was.

Tenants created before this version (no program graph) are adopted on first open: when
every triple of their schema graph is produced by the opener's program (blank-node
structures compared up to renaming) or belongs to Reckon's own vocabularies (``rk:``,
``mk:``, ``rc:``: an earlier version of the shipped modules, replaced by the current
one), and their inferred graph holds no predicate that program cannot derive, the
program is recorded (schema triples renamed to the deterministic blank nodes, settings
values kept) and the inferred graph re-derived. Otherwise the open is refused with :class:`~reckon._errors.ProgramMismatch`
saying how to adopt it (``Engine(data_dir, modules=[...])`` with the modules it was
created with, or :func:`adopt` / ``reckon tenant modules adopt`` keeping the unexplained
schema triples as a module named ``legacy-schema``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyoxigraph import (
    BlankNode,
    CanonicalizationAlgorithm,
    Dataset,
    DefaultGraph,
    NamedNode,
    Quad,
    RdfFormat,
    Triple,
    serialize,
)

from reckon import vocab
from reckon._errors import InvalidInput, ProgramMismatch, ShapeViolation
from reckon.schema.program import SETTINGS, Module, ModuleFile, Program
from reckon.store import MEMORIES, SCHEMA
from reckon.store.graphs import BUSINESS, PROGRAM

if TYPE_CHECKING:  # pragma: no cover
    from reckon.api._tenant import Tenant

__all__ = ["MigrationReport", "ModuleInfo", "adopt", "check_open", "migrate", "stored_program"]

_RDF_TYPE = vocab.A
_NOT_SETTINGS = frozenset(NamedNode(x) for x in (
    vocab.RDF + "type", vocab.RDFS + "label", vocab.RDFS + "comment", vocab.RDFS + "seeAlso",
    vocab.RDFS + "isDefinedBy"))
LEGACY_MODULE = "legacy-schema"
"""Name of the module :func:`adopt` creates for schema triples no module produces."""


@dataclass(frozen=True)
class ModuleInfo:
    """One module of a tenant's program.

    :ivar name: module name (``"core"``, ``"marketing"``, an author's file stem).
    :ivar digest: ``"sha256:<hex>"`` of its name and files.
    :ivar files: its file names.
    :ivar kinds: ``"schema"`` (ontology / shapes) and / or ``"rules"``.
    """

    name: str
    digest: str
    files: list[str]
    kinds: list[str]

    @classmethod
    def of(cls, m: Module) -> ModuleInfo:
        return cls(m.name, m.digest, [f.path for f in m.files], m.kinds)


@dataclass(frozen=True)
class MigrationReport:
    """What a migration changed.

    :ivar action: ``"install"``, ``"upgrade"``, ``"remove"``, ``"adopt"`` or
        ``"unchanged"`` (nothing to do: the module is installed with that digest).
    :ivar module: the module installed / upgraded / removed (``None`` for adopt).
    :ivar program_before: digest of the program before (``None``: none was stored).
    :ivar program_after: digest of the program now.
    :ivar schema_added: schema-graph triples added; ``schema_removed`` likewise.
    :ivar settings: setting name -> ``[before, after]`` lexical values (``None`` = absent).
    :ivar inferred_added: inferred triples added; ``inferred_removed`` likewise.
    :ivar status_changes: derived properties of memories that changed:
        ``{"memory": id, "property": local name, "before": [...], "after": [...]}``.
    :ivar generation: store generation after the write (``None`` when nothing was written).
    """

    action: str
    module: str | None
    program_before: str | None
    program_after: str
    schema_added: int = 0
    schema_removed: int = 0
    settings: dict[str, list[str | None]] = field(default_factory=dict)
    inferred_added: int = 0
    inferred_removed: int = 0
    status_changes: list[dict[str, Any]] = field(default_factory=list)
    generation: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the report."""
        from dataclasses import asdict

        return asdict(self)


def stored_program(view: Any) -> Program | None:
    """The program stored in the tenant (``view``: a store snapshot), ``None`` if none."""
    return Program.from_quads(view.program_quads())


def _settings_now(schema: set[Triple]) -> dict[NamedNode, list[Any]]:
    out: dict[NamedNode, list[Any]] = defaultdict(list)
    for t in schema:
        if t.subject == SETTINGS and t.predicate not in _NOT_SETTINGS:
            out[t.predicate].append(t.object)
    return dict(out)


def _attribution(prog: Program | None) -> dict[NamedNode, tuple[str, Any]]:
    out: dict[NamedNode, tuple[str, Any]] = {}
    if prog is None:
        return out
    for m in prog.modules:
        for p, vals in m.settings().items():
            out.setdefault(p, (m.name, vals[0]))
    return out


def _local(iri: str) -> str:
    return iri.rsplit("#", 1)[-1] if "#" in iri else iri.rsplit("/", 1)[-1]


def _setting_names(old: Program | None, new: Program) -> dict[str, str]:
    """Setting property IRI -> the name ``Tenant.settings()`` gives it (its shape's
    ``sh:name``, as the module's author wrote it: ``max_churn``, not ``maxChurn``),
    from ``new``'s schema, else ``old``'s (a setting whose module goes)."""
    from reckon.api._settings import setting_specs

    out: dict[str, str] = {}
    for prog in (new, old):
        if prog is not None:
            for name, spec in setting_specs(list(prog.schema_triples())).items():
                out.setdefault(spec["property"], name)
    return out


def _settings_delta(
    now: dict[NamedNode, list[Any]], old: Program | None, new: Program
) -> tuple[dict[NamedNode, list[Any]], dict[str, list[str | None]]]:
    """The settings after migrating from ``old`` to ``new`` (property -> values) and the
    changes as name -> [before, after]. One value each; see ``reckon.schema.program``.

    :raises InvalidInput: a module states a value that differs from the tenant's.
    """
    defaults = new.default_settings()
    names = _setting_names(old, new)
    new_by = _attribution(new)
    old_by = _attribution(old)
    after: dict[NamedNode, list[Any]] = {p: list(v) for p, v in now.items()}
    for p, v in defaults.items():
        cur = now.get(p, [])
        stated_before = old_by.get(p)
        if not cur:
            after[p] = [v]  # a new setting: its module's default
        elif cur == [v] or old is None:
            continue  # agrees, or adoption of an older tenant: its values stand
        elif stated_before == new_by[p]:
            continue  # the module's default did not change: the tenant's own value stands
        elif stated_before is not None and stated_before[0] == new_by[p][0]:
            if cur == [stated_before[1]]:
                after[p] = [v]  # an upgrade changed the default the tenant never changed
            # else the tenant set its own value: it stands over the new default
        else:
            raise InvalidInput(
                f"module {new_by[p][0]} states setting {names.get(p.value, _local(p.value))} = {v.value}, but the "
                f"tenant's value "
                f"is {', '.join(c.value for c in cur)}; a setting has one value: change it with "
                f"`reckon tenant settings set` / Tenant.set_setting, or drop it from the module",
                field="settings",
            )
    declared = new.declared_settings()
    for p in list(after):
        if p not in defaults and p not in declared:
            del after[p]  # its module is gone
    changes: dict[str, list[str | None]] = {}
    for p in set(now) | set(after):
        b = sorted(x.value for x in now.get(p, []))
        a = sorted(x.value for x in after.get(p, []))
        if a != b:
            changes[names.get(p.value, _local(p.value))] = [", ".join(b) or None, ", ".join(a) or None]
    return after, changes


def _declared_classes(schema: set[Triple]) -> set[Any]:
    owl_class = NamedNode(vocab.OWL + "Class")
    rdfs_class = NamedNode(vocab.RDFS + "Class")
    sub = vocab.SUBCLASS
    out = set()
    for t in schema:
        if t.predicate == _RDF_TYPE and t.object in (owl_class, rdfs_class):
            out.add(t.subject)
        elif t.predicate == sub:
            out.add(t.subject)
    return out


def _validate_after(view: Any, schema_after: set[Triple], tenant_id: str) -> None:
    """SHACL-validate every memory, typed business node and the settings node against
    the new schema.

    :raises ShapeViolation: listing the violations (nothing is written).
    """
    from reckon.schema.loader import schema_from_graph
    from reckon.schema.validate import format_violations, validate

    data = [q.triple for g in (MEMORIES, BUSINESS) for q in view.quads(None, None, None, g)]
    focus = {t.subject for t in data if t.predicate == _RDF_TYPE and isinstance(t.subject, NamedNode)}
    settings = [t for t in schema_after if t.subject == SETTINGS]
    if settings:
        focus.add(SETTINGS)
    if not focus:
        return
    violations = validate(data + settings, sorted(focus, key=str), schema=schema_from_graph(schema_after))
    violations = [v for v in violations if v["severity"] == "Violation"]
    if violations:
        raise ShapeViolation(
            f"tenant {tenant_id}: the new program would make {len(violations)} constraint(s) fail; "
            f"nothing was changed:\n{format_violations(violations)}",
            violations,
        )


def _status_changes(commit: Any, tenant_id: str) -> list[dict[str, Any]]:
    prefix = f"urn:reckon:{tenant_id}:memory:"
    before: dict[tuple[str, str], list[str]] = defaultdict(list)
    after: dict[tuple[str, str], list[str]] = defaultdict(list)
    for triples, acc in ((commit.inferred_removed, before), (commit.inferred_added, after)):
        for t in triples:
            s = t.subject
            if isinstance(s, NamedNode) and s.value.startswith(prefix) and "/" not in s.value[len(prefix):]:
                o = t.object
                acc[(s.value[len(prefix):], _local(t.predicate.value))].append(
                    _local(o.value) if isinstance(o, NamedNode) else str(getattr(o, "value", o))
                )
    out = []
    for key in sorted(set(before) | set(after)):
        b, a = sorted(before.get(key, [])), sorted(after.get(key, []))
        if a != b:
            out.append({"memory": key[0], "property": key[1], "before": b, "after": a})
    return out


def migrate(
    tenant: Tenant,
    new: Program,
    *,
    action: str,
    module: str | None = None,
    validate: bool = True,
) -> MigrationReport:
    """Move the tenant to program ``new`` in one atomic write (see the module docstring).

    :raises RuleError: the new program's rules do not parse or stratify.
    :raises InvalidInput: settings conflict, or a class still used by memories would go.
    :raises ShapeViolation: memories / business nodes / settings would not conform.
    """
    # parses and checks the rules before anything is written
    factory = new.reasoner_factory(refuse_inconsistent=tenant.engine.refuse_inconsistent)
    store = tenant.store
    with store.transaction() as txn:
        view = txn.view
        old = stored_program(view)
        if old is not None and old.digest == new.digest:
            return MigrationReport("unchanged", module, old.digest, new.digest)
        schema_now = {q.triple for q in view.quads(None, None, None, SCHEMA)}
        settings_now = _settings_now(schema_now)
        settings_triples_now = {t for t in schema_now if t.subject == SETTINGS and t.predicate in settings_now}
        old_triples = old.schema_triples() if old is not None else schema_now - settings_triples_now
        new_triples = new.schema_triples()
        settings_after, setting_changes = _settings_delta(settings_now, old, new)
        settings_triples_after = {Triple(SETTINGS, p, v) for p, vs in settings_after.items() for v in vs}
        remove = (old_triples - new_triples) | (settings_triples_now - settings_triples_after)
        add = (new_triples - old_triples) | (settings_triples_after - settings_triples_now)
        schema_after = (schema_now - remove) | add
        used = {q.object for q in view.quads(None, _RDF_TYPE, None, MEMORIES)}
        lost = (used & _declared_classes(schema_now)) - _declared_classes(schema_after)
        if lost:
            counts: dict[Any, int] = {c: len(view.subjects(_RDF_TYPE, c, MEMORIES)) for c in lost}
            raise InvalidInput(
                f"tenant {tenant.id}: the new program no longer declares "
                + ", ".join(f"{_local(c.value)} (used by {n} memories)" for c, n in sorted(counts.items(), key=str))
                + "; delete or supersede those memories first",
                field="modules",
            )
        if validate:
            _validate_after(view, schema_after, tenant.id)
        for t in remove:
            txn.remove(Quad(t.subject, t.predicate, t.object, SCHEMA))
        for t in add:
            txn.add(Quad(t.subject, t.predicate, t.object, SCHEMA))
        txn.set_program(new.to_quads(PROGRAM), factory)
    commit = txn.commit
    _schema_changed(tenant)
    return MigrationReport(
        action=action,
        module=module,
        program_before=old.digest if old is not None else None,
        program_after=new.digest,
        schema_added=len(add),
        schema_removed=len(remove),
        settings=setting_changes,
        inferred_added=len(commit.inferred_added) if commit else 0,
        inferred_removed=len(commit.inferred_removed) if commit else 0,
        status_changes=_status_changes(commit, tenant.id) if commit else [],
        generation=commit.generation if commit else None,
    )


def _schema_changed(tenant: Tenant) -> None:
    """Drop this process's caches of the tenant's schema (other processes follow the
    stored program key)."""
    mem = getattr(tenant, "_memory", None)
    if mem is not None:
        mem.reload_schema()


# ------------------------------------------------------------------------------- open
def _canonical(triples: set[Triple]) -> set[Quad]:
    ds = Dataset(Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in triples)
    ds.canonicalize(CanonicalizationAlgorithm.RDFC_1_0)
    return set(ds)


def _differences(stored: Program, mine: Program) -> list[str]:
    out = []
    for name in sorted(set(stored.names()) | set(mine.names())):
        a, b = stored.module(name), mine.module(name)
        if a is None:
            out.append(f"module {name}: only in the program you opened it with")
        elif b is None:
            out.append(f"module {name}: only in the tenant's program")
        elif a.digest != b.digest:
            out.append(f"module {name}: the tenant has {a.digest[:19]}…, you gave {b.digest[:19]}…")
    return out


def _derived_predicates(prog: Program) -> set[str] | None:
    rs = prog.ruleset()
    if rs is None:
        return set()
    out = set()
    for r in rs.rules:
        for tp in r.head:
            if not isinstance(tp.p, NamedNode):
                return None  # a variable predicate derives anything
            out.add(tp.p.value)
    for t in rs.data:
        out.add(t.predicate.value)
    return out


def check_open(tenant: Tenant, opener: Program, explicit: bool) -> None:
    """Check (and for a legacy tenant, adopt) the program of a tenant being opened.

    :raises ProgramMismatch: ``explicit`` and the stored program differs from
        ``opener``; or a legacy tenant that does not match ``opener`` (see the module
        docstring).
    """
    with tenant.store.snapshot() as view:
        stored = stored_program(view)
        if stored is None:
            schema_now = {q.triple for q in view.quads(None, None, None, SCHEMA)}
            inferred_preds = {q.predicate.value for q in view.quads(None, None, None, vocab.INFERRED)}
    if stored is not None:
        if explicit and stored.digest != opener.digest:
            diff = _differences(stored, opener)
            raise ProgramMismatch(
                f"tenant {tenant.id} stores another program than the one this Engine was given: "
                + "; ".join(diff)
                + ". Open it without rules=/modules= to use its own program, or migrate it explicitly "
                "(Tenant.install_module / remove_module, `reckon tenant modules add|remove`)",
                diff,
            )
        return
    problems = _legacy_mismatch(schema_now, inferred_preds, opener)
    if problems:
        raise ProgramMismatch(
            f"tenant {tenant.id} was created before Reckon stored programs in tenants, and it does not "
            f"match the program it was opened with: {'; '.join(problems)}. Open it once with the modules "
            f"it was created with (Engine(data_dir, modules=[...])), or adopt it explicitly: "
            f"`reckon tenant modules adopt {tenant.id} [MODULE FILES...] --keep-unknown-schema` keeps the "
            f"schema triples no module produces as a module named {LEGACY_MODULE!r}",
            problems,
        )
    migrate(tenant, opener, action="adopt", validate=False)


def _legacy_mismatch(schema_now: set[Triple], inferred_preds: set[str], opener: Program) -> list[str]:
    problems = []
    settings = {t for t in schema_now if t.subject == SETTINGS and t.predicate not in _NOT_SETTINGS}
    mine = opener.schema_triples()
    unknown, _ = _unexplained(schema_now - settings, mine)
    # what an earlier Reckon's shipped modules stated (only Reckon's own vocabularies)
    # is replaced by the current shipped modules; an author's module is not guessed
    foreign = {t for c in _grouped(unknown) if not _shipped_only(c) for t in c}
    if foreign:
        example = sorted(str(t) for t in foreign)[:2]
        problems.append(
            f"its schema graph has {len(foreign)} triple(s) the program does not produce"
            + (f" (e.g. {' ; '.join(example)})" if example else "")
        )
    derivable = _derived_predicates(opener)
    if derivable is not None:
        strange = sorted(inferred_preds - derivable - {vocab.RDF + "type"})
        if strange:
            problems.append(
                "its inferred graph holds predicates no rule of the program derives ("
                + ", ".join(_local(p) for p in strange[:5]) + "): it was reasoned with other rule files"
            )
    return problems


_SHIPPED_NS = (vocab.RK, vocab.MK, vocab.RC, vocab.AG, vocab.NT, vocab.EV, vocab.XP, vocab.TY)


def _grouped(triples: set[Triple]) -> list[set[Triple]]:
    ground, comps = _components(triples)
    return [{t} for t in ground] + comps


def _shipped_only(component: set[Triple]) -> bool:
    """Whether every named subject of ``component`` is in a shipped vocabulary."""
    named = {t.subject for t in component if isinstance(t.subject, NamedNode)}
    return bool(named) and all(n.value.startswith(_SHIPPED_NS) for n in named)


def _components(triples: set[Triple]) -> tuple[set[Triple], list[set[Triple]]]:
    """Ground triples, and the triples grouped by connected blank nodes."""
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    ground: set[Triple] = set()
    with_b: list[Triple] = []
    for t in triples:
        bs = [x for x in (t.subject, t.object) if isinstance(x, BlankNode)]
        if not bs:
            ground.add(t)
            continue
        with_b.append(t)
        for b in bs[1:]:
            parent[find(bs[0])] = find(b)
        find(bs[0])
    groups: dict[Any, set[Triple]] = defaultdict(set)
    for t in with_b:
        root: Any = t.subject if isinstance(t.subject, BlankNode) else t.object
        groups[find(root)].add(t)
    return ground, list(groups.values())


def _key(component: set[Triple]) -> frozenset[Quad]:
    return frozenset(_canonical(component))


def _unexplained(legacy: set[Triple], program: set[Triple]) -> tuple[set[Triple], set[Triple]]:
    """Legacy schema triples no module of ``program`` produces (ground triples not in it,
    blank-node structures not isomorphic to one of its), and the explained rest."""
    lg, lcomps = _components(legacy)
    pg, pcomps = _components(program)
    keys = {_key(c) for c in pcomps}
    unknown = lg - pg
    for c in lcomps:
        if _key(c) not in keys:
            unknown |= c
    return unknown, legacy - unknown


def adopt(tenant: Tenant, program: Program, *, keep_unknown_schema: bool = False) -> MigrationReport:
    """Record ``program`` as the program of a tenant created before programs were stored.

    :param keep_unknown_schema: keep the schema triples no module of ``program``
        produces as a module named :data:`LEGACY_MODULE` (its text: those triples as
        N-Triples); without it such triples make the adoption fail.
    :raises ProgramMismatch: the tenant already stores a program, or it does not match
        ``program`` and ``keep_unknown_schema`` is false.
    """
    with tenant.store.snapshot() as view:
        if stored_program(view) is not None:
            raise ProgramMismatch(
                f"tenant {tenant.id} already stores its program; change it with modules add / remove"
            )
        schema_now = {q.triple for q in view.quads(None, None, None, SCHEMA)}
        inferred_preds = {q.predicate.value
                          for q in view.quads(None, None, None, vocab.INFERRED)}
    settings = {t for t in schema_now if t.subject == SETTINGS and t.predicate not in _NOT_SETTINGS}
    unknown, _ = _unexplained(schema_now - settings, program.schema_triples())
    if unknown:
        if not keep_unknown_schema:
            raise ProgramMismatch(
                f"tenant {tenant.id}: {len(unknown)} schema triple(s) are produced by no module of the program; "
                f"name the modules it was created with, or keep them as module {LEGACY_MODULE!r} "
                f"(keep_unknown_schema=True / --keep-unknown-schema)",
                sorted(str(t) for t in unknown)[:20],
            )
        text = serialize([Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in unknown],
                         format=RdfFormat.N_TRIPLES) or b""
        program = program.replace(Module(LEGACY_MODULE, (ModuleFile(f"{LEGACY_MODULE}.nt", text.decode()),)))
    problems = _legacy_mismatch(schema_now, inferred_preds, program)
    rule_problems = [p for p in problems if p.startswith("its inferred graph")]
    if rule_problems:
        raise ProgramMismatch(f"tenant {tenant.id}: {rule_problems[0]}; name its rule files too", rule_problems)
    return migrate(tenant, program, action="adopt", validate=False)


def install(tenant: Tenant, module: Module, *, upgrade: bool = False) -> MigrationReport:
    """Add ``module`` to the tenant's program (or, with ``upgrade``, replace the module
    of that name).

    :raises InvalidInput: the name is taken and ``upgrade`` is false, or it is not
        installed and ``upgrade`` is true.
    """
    problems = module.datatype_problems()
    if problems:
        raise InvalidInput("; ".join(problems), field="modules")
    prog = tenant.program()
    current = prog.module(module.name)
    if current is not None and current.digest == module.digest:
        return MigrationReport("unchanged", module.name, prog.digest, prog.digest)
    if current is not None and not upgrade:
        raise InvalidInput(
            f"module {module.name!r} is installed with another content ({current.digest[:19]}…); "
            f"upgrade it explicitly (upgrade=True / --upgrade)", field="modules",
        )
    if current is None and upgrade:
        raise InvalidInput(f"module {module.name!r} is not installed; nothing to upgrade", field="modules")
    return migrate(tenant, prog.replace(module), action="upgrade" if current is not None else "install",
                   module=module.name)


def remove(tenant: Tenant, name: str) -> MigrationReport:
    """Remove the module called ``name`` from the tenant's program.

    :raises InvalidInput: no such module, or it is ``core`` (every memory needs it), or a
        class it declares is still used by memories.
    """
    prog = tenant.program()
    if prog.module(name) is None:
        raise InvalidInput(f"module {name!r} is not installed (installed: {', '.join(prog.names())})",
                           field="modules")
    if name == "core":
        raise InvalidInput("module 'core' cannot be removed: every memory is typed by it", field="modules")
    return migrate(tenant, prog.without(name), action="remove", module=name)
