"""A tenant's program: the modules (ontology, shapes, rules) it reasons with, stored in it.

DESIGN.md "The store": *a tenant owns its rule program: the modules (ontology, shapes,
rules) and settings it was created or migrated with are stored in it, and every process
reasons with exactly those.*

* A :class:`Module` is a named set of files: Turtle (``.ttl`` / ``.nt``: ontology and
  shapes together) and rule files (``.srl`` / ``.dlog``). Its digest is the SHA-256 of
  its name and the files' names and texts. The shipped modules are ``core``,
  ``marketing``, ``recruiting`` and ``agent`` (``ontology/<m>.ttl``, ``shapes/<m>.ttl``,
  ``rules/<m>.srl``); an author's files are grouped into modules by file stem (or one
  module per folder).
* A :class:`Program` is an ordered tuple of modules; its digest does not depend on the
  order (modules are named).
* **Storage.** :meth:`Program.to_quads` writes one node per module into the tenant's
  private ``urn:reckon:graph:program`` graph (name, order, digest and the files' texts as
  a JSON literal) plus ``<urn:reckon:program> <urn:reckon:programDigest> "sha256:…"``,
  the key the store watches. They are written in the same atomic update as the schema
  triples and the re-derived inferred graph of the migration that installs them
  (:meth:`reckon.store.Txn.set_program`), so a SIGKILL leaves the old program and its
  state or the new program and its state, never a mix.
* **Schema triples.** :meth:`Module.schema_triples` parses the module's Turtle with
  Oxigraph, names its blank nodes deterministically (RDF Dataset Canonicalization
  RDFC-1.0 labels, prefixed per module: ``_:m<hash>c14n3``) and puts literals in the
  store's form, so the same module text always yields the same triples and a later
  upgrade or removal retracts exactly what it added (a ground triple stays while another
  module states it too).
* **Settings.** ``rk:settings p v`` (any ``p`` but its type, label and comments; the
  properties are declared with ``rdfs:domain rk:Settings``) is a *setting*, not a module
  triple: one value each
  (``shapes/core.ttl`` ``rk:SettingsShape`` has ``sh:maxCount 1``). A module's setting
  values are defaults: installed when the tenant has no value yet. A module that states
  a different value than the tenant's, or than another module's, is **refused**
  (:class:`~reckon._errors.InvalidInput` naming both values; change a setting with
  ``Tenant.set_setting`` / ``reckon tenant settings set``). A value the tenant set itself
  stands while the module that states the default is unchanged or upgraded; an upgrade
  whose default changed replaces the value only if the tenant still had the old default.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pyoxigraph import (
    BlankNode,
    CanonicalizationAlgorithm,
    Dataset,
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    RdfFormat,
    Triple,
    parse,
)

from reckon import vocab
from reckon._errors import InvalidInput, SchemaError
from reckon.store.terms import check_file_text

__all__ = [
    "PROGRAM_DIGEST",
    "PROGRAM_NODE",
    "SETTINGS",
    "SHIPPED_MODULES",
    "Module",
    "ModuleFile",
    "Program",
    "default_program",
    "modules_from_paths",
]

RK = vocab.RK
_RDF = vocab.RDF
_RDFS = vocab.RDFS
SETTINGS = vocab.SETTINGS
"""The tenant's settings node ``rk:settings``."""
REFUSE_INCONSISTENT = NamedNode(RK + "refuseInconsistent")
"""The setting that makes a tenant refuse a write deriving a new inconsistency."""
_SETTINGS_CLASS = vocab.SETTINGS_CLASS
_DOMAIN = NamedNode(_RDFS + "domain")
_NOT_SETTINGS = frozenset(NamedNode(x) for x in (
    _RDF + "type", _RDFS + "label", _RDFS + "comment", _RDFS + "seeAlso", _RDFS + "isDefinedBy"))
"""Predicates on ``rk:settings`` that describe the node; every other one is a setting."""

PROGRAM_NODE, PROGRAM_DIGEST = vocab.PROGRAM_TERMS["program"], vocab.PROGRAM_TERMS["programDigest"]
"""``<urn:reckon:program> <urn:reckon:programDigest> "sha256:…"`` in the program graph."""
_P_FORMAT, _P_MODULE, _P_NAME, _P_ORDER, _P_DIGEST, _P_FILES = (
    vocab.PROGRAM_TERMS[n] for n in ("programFormat", "module", "moduleName", "moduleOrder", "moduleDigest", "moduleFiles"))
PROGRAM_FORMAT = 1

SHIPPED_MODULES: tuple[str, ...] = ("core", "marketing", "recruiting", "agent", "notes", "events", "experience", "types")
"""Names of the modules that ship with Reckon, in program order (core first)."""

_SCHEMA_SUFFIXES = {".ttl": RdfFormat.TURTLE, ".nt": RdfFormat.N_TRIPLES, ".n3": RdfFormat.N3}
_RULE_SUFFIXES = {".srl": "srl", ".rl": "srl", ".dlog": "dlog", ".datalog": "dlog"}
_X = vocab.XSD
_XSD_INTEGER = NamedNode(_X + "integer")
_UNSTORABLE = {
    **{_X + t: "xsd:integer" for t in (
        "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger", "nonPositiveInteger",
        "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")},
    _X + "dateTimeStamp": "xsd:dateTime",
}
"""Datatypes the store never keeps: it stores their values under the datatype named."""


@dataclass(frozen=True)
class ModuleFile:
    """One file of a module.

    :ivar path: its name inside the module (``"ontology/core.ttl"``, ``"my_rules.srl"``).
    :ivar text: its content (UTF-8 text).
    :ivar base: base IRI used to parse it (relative IRIs; not part of the digest).
    """

    path: str
    text: str
    base: str | None = None

    @property
    def kind(self) -> str:
        """``"schema"`` (Turtle: ontology and shapes) or ``"rules"`` (SRL / RDFox Datalog)."""
        suffix = Path(self.path).suffix.lower()
        if suffix in _SCHEMA_SUFFIXES:
            return "schema"
        if suffix in _RULE_SUFFIXES:
            return "rules"
        raise InvalidInput(f"module file {self.path}: expected .ttl, .nt, .srl or .dlog", field="modules")


@dataclass(frozen=True, eq=False)
class Module:
    """A named set of module files (see the module docstring).

    :ivar name: the module's name (unique in a program), e.g. ``"marketing"``.
    :ivar files: its files, sorted by path.
    """

    name: str
    files: tuple[ModuleFile, ...]
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip() or len(self.name) > 100:
            raise InvalidInput(f"module name {self.name!r}: 1 to 100 characters", field="name")
        paths = [f.path for f in self.files]
        if len(set(paths)) != len(paths):
            raise InvalidInput(f"module {self.name}: two files named alike in {paths}", field="modules")
        if not self.files:
            raise InvalidInput(f"module {self.name}: no files", field="modules")
        for f in self.files:
            f.kind  # noqa: B018 - raises for an unknown extension
        object.__setattr__(self, "files", tuple(sorted(self.files, key=lambda f: f.path)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Module) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"Module({self.name!r}, {[f.path for f in self.files]}, {self.digest[:15]}…)"

    @cached_property
    def digest(self) -> str:
        """``"sha256:<hex>"`` over the name and every file's path and text."""
        payload = json.dumps([self.name, [[f.path, f.text] for f in self.files]], ensure_ascii=False)
        return "sha256:" + hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def kinds(self) -> list[str]:
        """Which of ``"schema"`` / ``"rules"`` the module has."""
        return sorted({f.kind for f in self.files})

    # -- loading ---------------------------------------------------------------------
    @classmethod
    def shipped(cls, name: str, *, rules: bool = True) -> Module:
        """A shipped module: ``ontology/<name>.ttl``, ``shapes/<name>.ttl`` and (when
        ``rules``) ``rules/<name>.srl``, those that exist.

        :raises SchemaError: when no such module ships.
        """
        from reckon._resources import resource_dir

        files = []
        kinds = ["ontology", "shapes"] + (["rules"] if rules else [])
        for kind in kinds:
            suffix = ".srl" if kind == "rules" else ".ttl"
            p = resource_dir(kind) / f"{name}{suffix}"
            if p.is_file():
                files.append(ModuleFile(f"{kind}/{p.name}", p.read_text(encoding="utf-8"), p.resolve().as_uri()))
        if not any(f.kind == "schema" for f in files):
            raise SchemaError(f"no shipped module {name!r} (shipped: {', '.join(SHIPPED_MODULES)})")
        return cls(name, tuple(files))

    @classmethod
    def from_paths(cls, paths: Sequence[str | Path], name: str | None = None) -> Module:
        """A module from files (or one folder of them). ``IMPORTS`` of a rule file are
        resolved now and the imported files become files of the module (the stored
        program never reads the file system again).

        :param name: the module's name; default: the folder's name, or the stem of the
            first file.
        :raises InvalidInput: for a missing path, an unknown extension, an unreadable file.
        """
        files: list[Path] = []
        for p in paths:
            path = Path(p).expanduser()
            if path.is_dir():
                files += [c for c in sorted(path.iterdir())
                          if c.suffix.lower() in _SCHEMA_SUFFIXES or c.suffix.lower() in _RULE_SUFFIXES]
                name = name or path.resolve().name
            elif path.is_file():
                files.append(path)
            else:
                raise InvalidInput(f"module file not found: {path}", field="modules")
        if not files:
            raise InvalidInput(f"no module files in {[str(p) for p in paths]}", field="modules")
        name = name or files[0].stem
        out: list[ModuleFile] = []
        seen: set[Path] = set()
        todo = [f.resolve() for f in files]
        while todo:
            f = todo.pop(0)
            if f in seen:
                continue
            seen.add(f)
            suffix = f.suffix.lower()
            if suffix not in _SCHEMA_SUFFIXES and suffix not in _RULE_SUFFIXES:
                raise InvalidInput(f"module file {f}: expected .ttl, .nt, .srl or .dlog", field="modules")
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise InvalidInput(f"cannot read module file {f}: {e}", field="modules") from e
            check_file_text(text, str(f), field="modules")
            out.append(ModuleFile(f.name, text, f.as_uri()))
            if suffix in _RULE_SUFFIXES:
                todo += _rule_imports(text, f)
        return cls(name, tuple(out))

    # -- content ---------------------------------------------------------------------
    def _parsed(self) -> tuple[frozenset[Triple], dict[NamedNode, list[Any]]]:
        got = self._cache.get("parsed")
        if got is None:
            got = _parse_schema(self)
            self._cache["parsed"] = got
        return got

    def schema_triples(self) -> frozenset[Triple]:
        """The module's ontology and shapes triples as the store holds them: blank nodes
        named deterministically for this module, literals canonical; its setting values
        (see :meth:`settings`) excluded.

        :raises InvalidInput: when a Turtle file does not parse (file and reason named).
        """
        return self._parsed()[0]

    def settings(self) -> dict[NamedNode, list[Any]]:
        """Setting values the module states on ``rk:settings`` (property -> values):
        every triple of ``rk:settings`` except its type, label and comments."""
        return self._parsed()[1]

    def declared_settings(self) -> set[NamedNode]:
        """Properties this module declares with ``rdfs:domain rk:Settings``."""
        return {t.subject for t in self.schema_triples()
                if t.predicate == _DOMAIN and t.object == _SETTINGS_CLASS and isinstance(t.subject, NamedNode)}

    def ruleset(self) -> Any:
        """The module's rule files parsed and merged, unchecked
        (``reckon.datalog.model.RuleSet``), or ``None`` when it has none.

        :raises RuleError: when a rule file does not parse.
        """
        from reckon.datalog.loader import parse_rules

        parts = []
        for f in self.files:
            if f.kind != "rules":
                continue
            fmt = _RULE_SUFFIXES[Path(f.path).suffix.lower()]
            parts.append(parse_rules(f.text, format=fmt, file=f"{self.name}:{f.path}", base=f.base, check=False))
        if not parts:
            return None
        merged = parts[0]
        for p in parts[1:]:
            merged = merged + p
        return merged

    def datatype_problems(self) -> list[str]:
        """Shapes of this module that no stored value can satisfy: ``sh:datatype`` of an
        integer subtype (``xsd:int``, ``xsd:positiveInteger`` ...) or ``xsd:dateTimeStamp``
        -- the store holds every such literal as ``xsd:integer`` / ``xsd:dateTime``
        (``reckon.store.terms``), so the constraint would refuse every value."""
        sh_datatype = NamedNode(vocab.SH + "datatype")
        sh_path = NamedNode(vocab.SH + "path")
        paths = {t.subject: t.object for t in self.schema_triples() if t.predicate == sh_path}
        out = []
        for t in self.schema_triples():
            if t.predicate == sh_datatype and isinstance(t.object, NamedNode) and t.object.value in _UNSTORABLE:
                where = paths.get(t.subject)
                out.append(
                    f"module {self.name}: sh:datatype {_local(t.object)} "
                    f"{'on ' + _local(where) if isinstance(where, NamedNode) else ''} can never conform: the store "
                    f"keeps such values as {_UNSTORABLE[t.object.value]}; use that datatype "
                    f"(with sh:minInclusive / sh:maxInclusive for a range)"
                )
        return sorted(out)

    def to_record(self) -> str:
        """The files as the JSON text stored in the program graph."""
        return json.dumps([[f.path, f.text, f.base] for f in self.files], ensure_ascii=False)

    @classmethod
    def from_record(cls, name: str, record: str) -> Module:
        """Inverse of :meth:`to_record`."""
        rows = json.loads(record)
        return cls(name, tuple(ModuleFile(p, t, b) for p, t, b in rows))


def _rule_imports(text: str, path: Path) -> list[Path]:
    """Local files a rule file IMPORTS (resolved as ``reckon.datalog.loader`` does)."""
    from reckon._errors import RuleError
    from reckon.datalog.loader import FORMATS, _import_target, parse_rules

    fmt = FORMATS.get(path.suffix.lower(), "srl")
    try:
        rs = parse_rules(text, format=fmt, file=str(path), base=path.as_uri(), check=False)
    except RuleError:
        return []  # reported when the program is checked
    out = []
    for iri in rs.imports:
        target = _import_target(iri.value, path)
        if target is None:
            raise InvalidInput(
                f"{path}: IMPORTS <{iri.value}> cannot be resolved: only local files are supported",
                field="modules",
            )
        out.append(target)
    return out


def _parse_schema(module: Module) -> tuple[frozenset[Triple], dict[NamedNode, list[Any]]]:
    from reckon.store.terms import canonical_term, check_triples_text

    ds = Dataset()
    for f in module.files:
        if f.kind != "schema":
            continue
        fmt = _SCHEMA_SUFFIXES[Path(f.path).suffix.lower()]
        try:
            parsed = list(parse(f.text.encode("utf-8", "surrogatepass"), format=fmt, base_iri=f.base))
        except SyntaxError as e:
            raise InvalidInput(f"module {module.name}: {f.path} does not parse: {e}", field="modules") from e
        check_triples_text((q.triple for q in parsed), f"module {module.name}: {f.path}", field="modules")
        for q in parsed:
            ds.add(Quad(q.subject, q.predicate, q.object, DefaultGraph()))
    ds.canonicalize(CanonicalizationAlgorithm.RDFC_1_0)
    prefix = "m" + hashlib.sha256(module.name.encode("utf-8", "surrogatepass")).hexdigest()[:10]

    def name(t: Any) -> Any:
        if isinstance(t, BlankNode):
            return BlankNode(prefix + t.value.replace("_", ""))
        return canonical_term(t)

    triples = {Triple(name(q.subject), q.predicate, name(q.object)) for q in ds}
    settings: dict[NamedNode, list[Any]] = {}
    rest = set()
    for t in triples:
        if t.subject == SETTINGS and t.predicate not in _NOT_SETTINGS:
            settings.setdefault(t.predicate, []).append(t.object)
        else:
            rest.add(t)
    return frozenset(rest), settings


# ------------------------------------------------------------------------------------
# Programs
# ------------------------------------------------------------------------------------

_RULESETS: dict[str, Any] = {}
"""Checked rule programs of this process, by :meth:`Program.ruleset_key`."""
_RULESETS_LOCK = threading.Lock()
_SOURCE_DIGEST: list[str] = []


def _source_digest() -> str:
    """SHA-256 of this module's source (part of every cached rule program's key)."""
    if not _SOURCE_DIGEST:
        try:
            data = Path(__file__).read_bytes()
        except OSError:  # pragma: no cover - run from a zip: key by the version only
            import reckon

            data = reckon.__version__.encode()
        _SOURCE_DIGEST.append(hashlib.sha256(data).hexdigest())
    return _SOURCE_DIGEST[0]


@dataclass(frozen=True, eq=False)
class Program:
    """The ordered modules a tenant reasons with (see the module docstring).

    :ivar modules: the modules, in program order (rule files are concatenated in it).
    """

    modules: tuple[Module, ...]

    def __post_init__(self) -> None:
        names = [m.name for m in self.modules]
        if len(set(names)) != len(names):
            raise InvalidInput(f"two modules with one name in {names}", field="modules")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Program) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    @cached_property
    def digest(self) -> str:
        """``"sha256:<hex>"`` of the sorted (name, module digest) pairs."""
        payload = json.dumps([PROGRAM_FORMAT, sorted((m.name, m.digest) for m in self.modules)])
        return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()

    def names(self) -> list[str]:
        """Module names in program order."""
        return [m.name for m in self.modules]

    def module(self, name: str) -> Module | None:
        """The module called ``name``, if any."""
        return next((m for m in self.modules if m.name == name), None)

    def replace(self, module: Module) -> Program:
        """This program with ``module`` added (at the end) or replacing its namesake."""
        if self.module(module.name) is None:
            return Program((*self.modules, module))
        return Program(tuple(module if m.name == module.name else m for m in self.modules))

    def without(self, name: str) -> Program:
        """This program without the module called ``name``."""
        return Program(tuple(m for m in self.modules if m.name != name))

    # -- rules -----------------------------------------------------------------------
    def ruleset(self) -> Any:
        """The merged, checked rule program (``RuleSet``), or ``None`` without rule
        files. Cached for the life of the process, and on disk for the next process
        (``reckon.datalog._cache``: "checked programs", keyed by :meth:`ruleset_key`;
        an entry is written only after the check passed, and a damaged one is ignored).

        :raises RuleError: a rule file does not parse, or the merged program is not
            well-formed or not stratifiable (every problem listed).
        """
        key = self.ruleset_key()
        with _RULESETS_LOCK:
            if key in _RULESETS:
                return _RULESETS[key]
        if not any(f.kind == "rules" for m in self.modules for f in m.files):
            merged = None
        else:
            from reckon.datalog import _cache

            merged = _cache.load_checked(key)
            if merged is None:
                merged = self._parse_rules()
                _cache.store_checked(key, merged)
        with _RULESETS_LOCK:
            _RULESETS[key] = merged
        return merged

    def _parse_rules(self) -> Any:
        """Parse, merge and check the rule files (no cache); ``None`` without rules."""
        from reckon.datalog.stratify import check_program

        parts = [rs for rs in (m.ruleset() for m in self.modules) if rs is not None]
        merged = None
        if parts:
            merged = parts[0]
            for p in parts[1:]:
                merged = merged + p
            check_program(merged)
        return merged

    def ruleset_key(self) -> str:
        """Digest of everything :meth:`ruleset` reads: the code that parses and merges
        (this module's source; the rule parser's is in the cache's engine fingerprint),
        the modules in program order and each rule file's path, base IRI and text.
        Unlike :attr:`digest` it depends on the order and the base IRIs."""
        return self._ruleset_key

    @cached_property
    def _ruleset_key(self) -> str:
        h = hashlib.sha256(_source_digest().encode())
        for m in self.modules:
            rules = [[f.path, f.base, f.text] for f in m.files if f.kind == "rules"]
            h.update(json.dumps([m.name, rules], ensure_ascii=False).encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def reasoner_factory(self, *, refuse_inconsistent: bool = False) -> Any:
        """A factory of empty reasoners for the rule program, with the store's term
        identity (``reckon.store.terms.canonical_term``), holding only the asserted triples
        a rule can read (``Reasoner(drop_unread=True)``: the store keeps the rest);
        ``None`` without rules.

        :param refuse_inconsistent: the reasoners refuse a change that derives a new
            ``?x rdf:type owl:Nothing`` (``Reasoner(refuse_inconsistent=True)``).
            Independently, a tenant whose settings hold ``rk:refuseInconsistent true``
            (the ``refuse_inconsistent`` setting, ``ontology/core.ttl``) refuses such a
            change from the write that sets it on (``Reasoner(refuse_when=...)``).
        """
        ruleset = self.ruleset()
        if ruleset is None:
            return None
        from reckon.datalog.evaluate import Reasoner
        from reckon.store.terms import canonical_term

        switch = Triple(SETTINGS, REFUSE_INCONSISTENT, Literal(True))
        return lambda: Reasoner(ruleset, canonical=canonical_term, refuse_inconsistent=refuse_inconsistent,
                                refuse_when=switch, drop_unread=True)

    # -- schema ----------------------------------------------------------------------
    def schema_triples(self) -> set[Triple]:
        """Union of the modules' schema triples (settings values excluded)."""
        out: set[Triple] = set()
        for m in self.modules:
            out |= m.schema_triples()
        return out

    def declared_settings(self) -> set[NamedNode]:
        """Setting properties (``rdfs:domain rk:Settings``) declared by the program."""
        out: set[NamedNode] = set()
        for m in self.modules:
            out |= m.declared_settings()
        return out

    def default_settings(self) -> dict[NamedNode, Any]:
        """One value per setting property: the value stated by the modules.

        :raises InvalidInput: when a module states two values for one setting, or two
            modules state different values (``sh:maxCount 1``: one value each).
        """
        out: dict[NamedNode, tuple[str, Any]] = {}
        for m in self.modules:
            for p, values in m.settings().items():
                if len(set(values)) > 1:
                    raise InvalidInput(
                        f"module {m.name} states {len(set(values))} values for setting {_local(p)} "
                        f"({', '.join(sorted(v.value for v in values))}); a setting has one value",
                        field="settings",
                    )
                v = values[0]
                if p in out and out[p][1] != v:
                    raise InvalidInput(
                        f"module {m.name} states setting {_local(p)} = {v.value}, but module {out[p][0]} "
                        f"states {out[p][1].value}; a setting has one value (change it with "
                        f"`reckon tenant settings set` / Tenant.set_setting after installing)",
                        field="settings",
                    )
                out.setdefault(p, (m.name, v))
        return {p: v for p, (_, v) in out.items()}

    # -- storage ---------------------------------------------------------------------
    def to_quads(self, graph: NamedNode) -> list[Quad]:
        """The program as quads of the private program graph ``graph``."""
        quads = [
            Quad(PROGRAM_NODE, PROGRAM_DIGEST, Literal(self.digest), graph),
            Quad(PROGRAM_NODE, _P_FORMAT, Literal(str(PROGRAM_FORMAT), datatype=_XSD_INTEGER), graph),
        ]
        for i, m in enumerate(self.modules):
            node = NamedNode("urn:reckon:module:" + hashlib.sha256(m.name.encode("utf-8", "surrogatepass")).hexdigest()[:32])
            quads += [
                Quad(PROGRAM_NODE, _P_MODULE, node, graph),
                Quad(node, _P_NAME, Literal(m.name), graph),
                Quad(node, _P_ORDER, Literal(str(i), datatype=_XSD_INTEGER), graph),
                Quad(node, _P_DIGEST, Literal(m.digest), graph),
                Quad(node, _P_FILES, Literal(m.to_record()), graph),
            ]
        return quads

    @classmethod
    def from_quads(cls, quads: Iterable[Quad]) -> Program | None:
        """The program stored in a program graph, or ``None`` when it holds none (a
        tenant created before programs were stored).

        :raises SchemaError: when the stored program is damaged (a module's digest does
            not match its files) or of an unknown format.
        """
        by_node: dict[Any, dict[NamedNode, Any]] = {}
        digest = None
        fmt = None
        for q in quads:
            if q.subject == PROGRAM_NODE:
                if q.predicate == PROGRAM_DIGEST:
                    digest = q.object.value  # type: ignore[union-attr]
                elif q.predicate == _P_FORMAT:
                    fmt = int(q.object.value)  # type: ignore[union-attr]
                continue
            by_node.setdefault(q.subject, {})[q.predicate] = q.object
        if digest is None:
            return None
        if fmt != PROGRAM_FORMAT:
            raise SchemaError(f"stored program has format {fmt!r}; this Reckon reads format {PROGRAM_FORMAT}")
        rows = []
        for node, props in by_node.items():
            name, order, files, mdig = (props.get(p) for p in (_P_NAME, _P_ORDER, _P_FILES, _P_DIGEST))
            if name is None or order is None or files is None or mdig is None:
                raise SchemaError(f"stored program: module node {node} is incomplete")
            m = Module.from_record(name.value, files.value)
            if m.digest != mdig.value:
                raise SchemaError(f"stored program: module {name.value} does not match its digest")
            rows.append((int(order.value), m))
        prog = cls(tuple(m for _, m in sorted(rows, key=lambda r: r[0])))
        if prog.digest != digest:
            raise SchemaError("stored program does not match its digest")
        return prog


def _local(p: NamedNode) -> str:
    v = p.value
    return v.rsplit("#", 1)[-1] if "#" in v else v.rsplit("/", 1)[-1]


def modules_from_paths(paths: Sequence[str | Path]) -> list[Module]:
    """Group module files into modules: a folder is one module (named after it); files
    with the same stem are one module (``my.ttl`` + ``my.srl`` -> ``my``).

    :raises InvalidInput: for a missing path or an unknown extension.
    """
    groups: dict[str, list[Path]] = {}
    out: list[Module] = []
    for p in paths:
        path = Path(p).expanduser()
        if path.is_dir():
            out.append(Module.from_paths([path]))
            continue
        if not path.is_file():
            raise InvalidInput(f"module file not found: {path}", field="modules")
        if path.suffix.lower() not in _SCHEMA_SUFFIXES and path.suffix.lower() not in _RULE_SUFFIXES:
            raise InvalidInput(f"module {path}: expected a .srl, .dlog or .ttl file", field="modules")
        groups.setdefault(path.stem, []).append(path)
    out += [Module.from_paths(files, name=stem) for stem, files in groups.items()]
    return out


def default_program(rules: Sequence[str | Path] | None = None, modules: Sequence[str | Path] = ()) -> Program:
    """The program an :class:`~reckon.api.Engine` gives new tenants.

    :param rules: ``None``: every shipped module with its rules; otherwise the shipped
        modules' ontology and shapes only, plus these rule files (a shipped name such
        as ``"core.srl"`` joins its shipped module; any other file is a module of its
        own, named by its stem).
    :param modules: an author's module files (see :func:`modules_from_paths`).
    :raises InvalidInput: a module name clashes with another, or a path is bad.
    """
    from reckon._resources import resource_dir

    shipped = {n: Module.shipped(n, rules=rules is None) for n in SHIPPED_MODULES}
    extra: list[Module] = []
    if rules is not None:
        for r in rules:
            p = Path(r)
            stem = p.stem
            if not p.is_file() and len(p.parts) == 1 and stem in shipped and (resource_dir("rules") / p.name).is_file():
                base = shipped[stem]
                f = resource_dir("rules") / p.name
                shipped[stem] = Module(stem, (*base.files, ModuleFile(f"rules/{f.name}", f.read_text(encoding="utf-8"),
                                                                      f.resolve().as_uri())))
                continue
            if not p.is_file() and len(p.parts) == 1 and (resource_dir("rules") / p.name).is_file():
                f = resource_dir("rules") / p.name
                extra.append(Module(stem, (ModuleFile(f"rules/{f.name}", f.read_text(encoding="utf-8"),
                                                      f.resolve().as_uri()),)))
                continue
            if not p.is_file():
                raise InvalidInput(f"rule file not found: {r}", field="rules")
            extra.append(Module.from_paths([p]))
    extra += modules_from_paths(list(modules))
    mods = list(shipped.values())
    names = {m.name for m in mods}
    for m in extra:
        problems = m.datatype_problems()
        if problems:
            raise InvalidInput("; ".join(problems), field="modules")
        if m.name in names:
            raise InvalidInput(
                f"module {m.name!r}: a module of that name is already in the program "
                f"({', '.join(sorted(names))}); rename the file or folder", field="modules",
            )
        names.add(m.name)
        mods.append(m)
    return Program(tuple(mods))
