"""Keyed shared notes with a time to live: put / get / list by prefix / delete,
compare-and-set, and namespace listing (seed 000 "Transit", ontology/notes.ttl).

Seed 000 describes Transit as "Manifold's shared, durable key-value store" for
cross-agent coordination: keys follow ``project/<project-id>/<namespace>/<record-name>``,
records carry structured JSON values, TTL-based expiry and namespace-level listing, and
"the latest write wins". Reckon holds each key as one ``nt:Note`` node in the tenant's
``<urn:reckon:graph:notes>`` graph, validated by ``nt:NoteShape`` (SHACL) and written in
one store transaction, so every write is serialized per tenant across threads *and*
processes. That makes :meth:`NoteService.cas` atomic: the version is read and the new
value written under the tenant's write lock; of several agents racing on one version
exactly one wins.

Versions. The first write of a key has ``version`` 1; every later put, compare-and-set
or delete adds one; a deleted note keeps its key and version (a tombstone with no value)
so a version is never reused and a compare-and-set holder cannot be fooled by a delete
and re-create (the ABA problem). The *live version* of a key is the version of its live
note, or 0 when there is none (never written, deleted, or expired): ``cas(...,
expected_version=0)`` means "only if nobody holds this key".

Expiry. ``ttl`` (seconds) sets ``nt:expiresAt`` = write time + ttl; the write time is the
in-graph clock ``rk:clock rk:now`` (``Tenant.tick``; the HTTP and MCP servers advance it
on each request). Whether a note is live is derived by ``rules/notes.srl`` against that
clock, the way memory expiry is (``rules/core.srl`` ``rule:active-before-expiry``): no
code path decides expiry. A tenant whose clock was never set gets it set to the wall
clock by the first write with a ``ttl`` (a ttl needs a clock to count from).

Limits (ours: seed 000 names no numbers for Transit): a key is at most 512 characters of
segments ``[A-Za-z0-9][A-Za-z0-9._-]{0,127}``; a value is one JSON text (RFC 8259, no
NaN / Infinity) of at most 262,144 characters; a ttl is more than 0 and at most ten years
(315,576,000 seconds); a listing returns at most 1,000 notes per call.

Authorization: notes are shared by every principal of the tenant (seed 000: "any agent in
any session can read or write a Transit record as long as it knows the key"); each write
records its author.
"""

from __future__ import annotations

import builtins
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import quote

from pyoxigraph import Literal, NamedNode, Quad, Triple, Variable

from reckon import vocab as V
from reckon._args import checked_methods
from reckon._errors import InvalidInput
from reckon.memory import _rdf as R
from reckon.memory.models import Principal
from reckon.store.terms import check_text, text_fault
from reckon.vocab import BUSINESS, INFERRED, MEMORIES, NOTES, NT, nt

__all__ = [
    "MAX_KEY",
    "MAX_LIST",
    "MAX_TTL",
    "MAX_VALUE",
    "NT",
    "CasResult",
    "Namespace",
    "Note",
    "NoteService",
    "parse_key",
]

T_NOTE, T_LIVE, T_EXPIRED, T_NS = nt("Note"), nt("LiveNote"), nt("ExpiredNote"), nt("Namespace")
P_KEY, P_PROJECT, P_NSNAME, P_NAME = nt("key"), nt("project"), nt("namespaceName"), nt("name")
P_VALUE, P_VERSION, P_UPDATED, P_AUTHOR = nt("value"), nt("version"), nt("updatedAt"), nt("author")
P_EXPIRES, P_DELETED, P_IN_NS, P_HOLDS = nt("expiresAt"), nt("deletedAt"), nt("inNamespace"), nt("holds")
CLOCK, NOW = R.rk("clock"), R.rk("now")

MAX_KEY = 512
"""Characters of a key (ours; seed 000 gives none)."""
MAX_VALUE = 262_144
"""Characters of a value's JSON text (ours)."""
MAX_TTL = 315_576_000.0
"""Seconds: ten years of 365.25 days (ours)."""
MAX_LIST = 1000
"""Notes returned by one listing at most (ours)."""

_SEG = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_KEY = re.compile(rf"^project/({_SEG})/({_SEG})/({_SEG}(?:/{_SEG})*)$")
_PREFIX = re.compile(r"^[A-Za-z0-9._/-]{0,512}$")
_SAFE = "-._~/"

_Q_LIST = (
    V.sparql_prefixes("nt")
    + f"SELECT ?n ?key ?prefix WHERE {{ GRAPH {NOTES} {{ ?n nt:key ?key }} "
    f"GRAPH {INFERRED} {{ ?n a nt:LiveNote }} FILTER(STRSTARTS(?key, ?prefix)) }} "
    "ORDER BY ?key LIMIT 1001"
)
_Q_NAMESPACES = (
    V.sparql_prefixes("nt")
    + f"SELECT ?project ?name (COUNT(?n) AS ?count) WHERE {{ GRAPH {NOTES} {{ ?ns a nt:Namespace ; "
    "nt:project ?project ; nt:namespaceName ?name } "
    f"OPTIONAL {{ GRAPH {INFERRED} {{ ?ns nt:holds ?n }} }} }} GROUP BY ?project ?name ORDER BY ?name"
)
_Q_EXPIRED = V.sparql_prefixes("nt") + f"SELECT ?n WHERE {{ GRAPH {INFERRED} {{ ?n a nt:ExpiredNote }} }}"


def parse_key(key: Any) -> tuple[str, str, str]:
    """``"project/<id>/<namespace>/<name>"`` -> ``(project, namespace, name)``.

    :raises InvalidInput: (field ``key``) when it does not have that form.
    """
    if not isinstance(key, str):
        raise InvalidInput(f"key: a string project/<project-id>/<namespace>/<name> is required, not {type(key).__name__}",
                           field="key")
    fault = text_fault(key)
    if fault is not None:
        raise InvalidInput(f"key: {fault}; a key is project/<project-id>/<namespace>/<name> (seed 000 Transit)",
                           field="key")
    m = _KEY.fullmatch(key) if len(key) <= MAX_KEY else None
    if m is None:
        raise InvalidInput(
            f"key {key[:80]!r}: expected project/<project-id>/<namespace>/<name> (seed 000 Transit), each segment "
            f"1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit, at most {MAX_KEY} characters",
            field="key")
    return m.group(1), m.group(2), m.group(3)


def _project(project: Any) -> str:
    if not isinstance(project, str) or not re.fullmatch(_SEG, project):
        raise InvalidInput(f"project {project!r}: 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter "
                           f"or digit", field="project")
    return project


def note_iri(tenant: str, key: str) -> NamedNode:
    """``urn:reckon:<tenant>:note:<key>`` (key characters are all IRI-safe)."""
    return NamedNode(f"urn:reckon:{tenant}:note:{quote(key, safe=_SAFE)}")


def namespace_iri(tenant: str, project: str, namespace: str) -> NamedNode:
    """``urn:reckon:<tenant>:note-namespace:<project>/<namespace>``."""
    return NamedNode(f"urn:reckon:{tenant}:note-namespace:{quote(project, safe='-._~')}/"
                     f"{quote(namespace, safe='-._~')}")


def _json_text(value: Any) -> str:
    check_text(value, "value")  # JSON would escape a control character, never a noncharacter or lone surrogate
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"value: a JSON value is required (str, number, bool, None, list, dict): {e}",
                           field="value") from None
    if len(text) > MAX_VALUE:
        raise InvalidInput(f"value: its JSON text has {len(text):,} characters; at most {MAX_VALUE:,}",
                           field="value")
    return text


def _ttl(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        secs = ttl.total_seconds()
    elif isinstance(ttl, bool) or not isinstance(ttl, (int, float, Decimal)):
        raise InvalidInput(f"ttl: seconds (a number) or a timedelta, not {type(ttl).__name__}", field="ttl")
    else:
        secs = float(ttl)
    if not (0 < secs <= MAX_TTL):  # also refuses NaN
        raise InvalidInput(f"ttl: {ttl!r} seconds; more than 0 and at most {MAX_TTL:,.0f} (ten years)", field="ttl")
    return secs


def _dt(term: Any) -> datetime | None:
    if not isinstance(term, Literal):
        return None
    try:
        t = datetime.fromisoformat(term.value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Note:
    """One live note.

    :ivar key: ``project/<id>/<namespace>/<name>``.
    :ivar value: the JSON value (decoded).
    :ivar version: the note's version (>= 1).
    :ivar updated_at: the in-graph clock at the last write (UTC).
    :ivar author: person id of the last writer.
    :ivar expires_at: when it stops being live (UTC), or ``None``.
    """

    key: str
    project: str
    namespace: str
    name: str
    value: Any
    version: int
    updated_at: datetime
    author: str
    expires_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: times as ISO 8601 strings."""
        return {
            "key": self.key, "project": self.project, "namespace": self.namespace, "name": self.name,
            "value": self.value, "version": self.version, "updated_at": self.updated_at.isoformat(),
            "author": self.author, "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


@dataclass(frozen=True)
class CasResult:
    """Outcome of :meth:`NoteService.cas`.

    :ivar ok: whether the write happened.
    :ivar version: the key's live version after the call (the new one when ``ok``, the
        one that made it fail otherwise; 0 = no live note).
    :ivar note: the live note after the call, or ``None``.
    """

    ok: bool
    version: int
    note: Note | None

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "version": self.version, "note": self.note.to_dict() if self.note else None}


@dataclass(frozen=True)
class Namespace:
    """A namespace of a project and how many live notes it holds."""

    project: str
    namespace: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"project": self.project, "namespace": self.namespace, "count": self.count}


@checked_methods
class NoteService:
    """Keyed notes of one tenant (see the module docstring).

    :param store: the tenant store.
    :param memory: the tenant's ``MemoryService`` (its SHACL validator).
    :param wall: the wall clock (UTC ``datetime``), used only to start an unset
        in-graph clock.
    """

    def __init__(self, store: Any, memory: Any, *, wall: Any = None) -> None:
        self.store = store
        self.memory = memory
        self.tenant: str = store.tenant_id
        self._wall = wall or (lambda: datetime.now(UTC))

    # ------------------------------------------------------------------ reads
    def get(self, key: str, *, principal: Principal | None = None) -> Note | None:
        """The live note of ``key``, or ``None`` (never written, deleted, or expired
        against the in-graph clock).

        :param principal: who reads; notes are shared by every principal of the tenant
            (see the module docstring), so it changes nothing but is accepted, like the
            other reads of the facade, and checked to be a ``Principal``.
        :raises InvalidInput: for a malformed key or a principal that is not a ``Principal``.
        """
        if principal is not None:
            self._principal(principal)
        parse_key(key)
        with self.store.snapshot() as view:
            return self._read(view, note_iri(self.tenant, key))

    def version(self, key: str, *, principal: Principal | None = None) -> int:
        """The live version of ``key`` (0 when there is no live note); ``principal`` as
        for :meth:`get`."""
        n = self.get(key, principal=principal)
        return n.version if n else 0

    def list(self, prefix: str = "project/", *, limit: int = MAX_LIST,
             principal: Principal | None = None) -> list[Note]:
        """Live notes whose key starts with ``prefix``, by key.

        :param prefix: any leading part of a key (``"project/webgpu-wiki/findings/"``).
        :param limit: 1 to 1,000.
        :param principal: as for :meth:`get` (accepted and checked; notes are shared).
        :raises InvalidInput: for a prefix with characters no key has, or a bad limit.
        """
        if principal is not None:
            self._principal(principal)
        if isinstance(prefix, str):
            check_text(prefix, "prefix")
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise InvalidInput(f"prefix {str(prefix)[:80]!r}: characters of a key (A-Z a-z 0-9 . _ - /), "
                               f"at most {MAX_KEY}", field="prefix")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
            raise InvalidInput(f"limit: an integer from 1 to {MAX_LIST}", field="limit")
        with self.store.snapshot() as view:
            rows = view.query(_Q_LIST, substitutions={Variable("prefix"): Literal(prefix)})
            out = []
            for r in rows:
                n = self._read(view, r["n"])
                if n is not None:
                    out.append(n)
                if len(out) >= limit:
                    break
        return out

    def namespaces(self, project: str, *, principal: Principal | None = None) -> builtins.list[Namespace]:
        """The namespaces of ``project`` that were ever written, each with its number of
        live notes (seed 000: "namespace-level listing"); ``principal`` as for :meth:`get`.

        :raises InvalidInput: for a malformed project id.
        """
        if principal is not None:
            self._principal(principal)
        _project(project)
        with self.store.snapshot() as view:
            rows = view.query(_Q_NAMESPACES, substitutions={Variable("project"): Literal(project)})
            return [Namespace(project, r["name"].value, int(r["count"].value)) for r in rows]

    # ------------------------------------------------------------------ writes
    def put(self, key: str, value: Any, *, principal: Principal, ttl: Any = None) -> Note:
        """Write ``value`` under ``key`` (the latest write wins; version + 1).

        :param value: any JSON value.
        :param ttl: seconds (or a ``timedelta``) until the note expires; ``None``: never.
        :returns: the written note.
        :raises InvalidInput: a bad key, value or ttl.
        :raises ShapeViolation: when the note does not conform to ``nt:NoteShape``.
        """
        return self._write(key, value, principal=principal, ttl=ttl, expected=None).note  # type: ignore[return-value]

    def cas(self, key: str, value: Any, *, expected_version: int, principal: Principal, ttl: Any = None) -> CasResult:
        """Compare-and-set: write ``value`` only if the key's live version is
        ``expected_version`` (0: only if there is no live note). Atomic: the check and
        the write are one store transaction under the tenant's write lock, so of several
        writers (threads or processes) expecting the same version exactly one succeeds.

        :returns: :class:`CasResult` (``ok`` False, nothing written, when the version differs).
        :raises InvalidInput: a bad key, value, ttl or expected_version.
        """
        if isinstance(expected_version, bool) or not isinstance(expected_version, int) or expected_version < 0:
            raise InvalidInput("expected_version: an integer >= 0 (0: the key holds no live note)",
                               field="expected_version")
        return self._write(key, value, principal=principal, ttl=ttl, expected=expected_version)

    def delete(self, key: str, *, principal: Principal, expected_version: int | None = None) -> bool:
        """Delete the live note of ``key`` (its value goes; its key and version stay as a
        tombstone, version + 1).

        :param expected_version: delete only if the live version is this one.
        :returns: whether a live note was deleted.
        :raises InvalidInput: a bad key or expected_version.
        """
        parse_key(key)
        self._principal(principal)
        if expected_version is not None and (isinstance(expected_version, bool)
                                             or not isinstance(expected_version, int) or expected_version < 1):
            raise InvalidInput("expected_version: an integer >= 1", field="expected_version")
        node = note_iri(self.tenant, key)
        with self.store.transaction() as txn:
            view = txn.view
            cur = self._read(view, node)
            if cur is None or (expected_version is not None and cur.version != expected_version):
                return False
            now = self._now(txn, need_clock=False)
            author = self._author(txn, principal)
            for p in (P_VALUE, P_EXPIRES, P_VERSION, P_UPDATED, P_AUTHOR):
                txn.remove_pattern(node, p, None, NOTES)
            txn.add(Quad(node, P_VERSION, Literal(str(cur.version + 1), datatype=R.X_INTEGER), NOTES))
            txn.add(Quad(node, P_UPDATED, R.dt_literal(now), NOTES))
            txn.add(Quad(node, P_DELETED, R.dt_literal(now), NOTES))
            txn.add(Quad(node, P_AUTHOR, author, NOTES))
        return True

    def purge_expired(self) -> builtins.list[str]:
        """Remove the values of notes that expired against the in-graph clock (they
        become tombstones, version unchanged: their live version was already 0).

        :returns: the purged keys.
        """
        purged: builtins.list[str] = []
        with self.store.transaction() as txn:
            view = txn.view
            now = self._now(txn, need_clock=False)
            for r in view.query(_Q_EXPIRED):
                node = r["n"]
                keys = view.objects(node, P_KEY, NOTES)
                txn.remove_pattern(node, P_VALUE, None, NOTES)
                txn.remove_pattern(node, P_EXPIRES, None, NOTES)
                txn.add(Quad(node, P_DELETED, R.dt_literal(now), NOTES))
                if keys:
                    purged.append(keys[0].value)
        return sorted(purged)

    # ------------------------------------------------------------------ internals
    def _principal(self, principal: Any) -> Principal:
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        return principal

    def _write(self, key: str, value: Any, *, principal: Principal, ttl: Any, expected: int | None) -> CasResult:
        project, namespace, name = parse_key(key)
        self._principal(principal)
        text = _json_text(value)
        secs = _ttl(ttl)
        node = note_iri(self.tenant, key)
        ns = namespace_iri(self.tenant, project, namespace)
        with self.store.transaction() as txn:
            view = txn.view
            cur = self._read(view, node)
            live_version = cur.version if cur else 0
            if expected is not None and live_version != expected:
                return CasResult(False, live_version, cur)
            stored = [int(v.value) for v in view.objects(node, P_VERSION, NOTES) if isinstance(v, Literal)]
            version = max(stored, default=0) + 1
            now = self._now(txn, need_clock=secs is not None)
            expires = now + timedelta(seconds=secs) if secs is not None else None
            author = self._author(txn, principal)
            triples = [
                Triple(node, R.A, T_NOTE),
                Triple(node, P_KEY, Literal(key)),
                Triple(node, P_PROJECT, Literal(project)),
                Triple(node, P_NSNAME, Literal(namespace)),
                Triple(node, P_NAME, Literal(name)),
                Triple(node, P_IN_NS, ns),
                Triple(node, P_VALUE, Literal(text)),
                Triple(node, P_VERSION, Literal(str(version), datatype=R.X_INTEGER)),
                Triple(node, P_UPDATED, R.dt_literal(now)),
                Triple(node, P_AUTHOR, author),
            ]
            if expires is not None:
                triples.append(Triple(node, P_EXPIRES, R.dt_literal(expires)))
            self.memory._validate(node, triples)
            for p in (P_VALUE, P_VERSION, P_UPDATED, P_AUTHOR, P_EXPIRES, P_DELETED):
                txn.remove_pattern(node, p, None, NOTES)
            for t in triples:
                txn.add(Quad(t.subject, t.predicate, t.object, NOTES))
            txn.add(Quad(ns, R.A, T_NS, NOTES))
            txn.add(Quad(ns, P_PROJECT, Literal(project), NOTES))
            txn.add(Quad(ns, P_NSNAME, Literal(namespace), NOTES))
        note = Note(key, project, namespace, name, json.loads(text), version,
                    _dt(R.dt_literal(now)) or now, principal.person,
                    _dt(R.dt_literal(expires)) if expires is not None else None)
        return CasResult(True, version, note)

    def _author(self, txn: Any, principal: Principal) -> NamedNode:
        person = R.person_iri(self.tenant, principal.person)
        if not txn.view.contains(Quad(person, R.A, R.PERSON, MEMORIES)):
            txn.add(Quad(person, R.A, R.PERSON, MEMORIES))
        return person

    def _now(self, txn: Any, *, need_clock: bool) -> datetime:
        """The in-graph clock; when unset, the wall clock (written as the clock when
        ``need_clock``: a ttl counts from it)."""
        for v in txn.view.objects(CLOCK, NOW, BUSINESS):
            t = _dt(v)
            if t is not None:
                return t
        now = self._wall()
        if need_clock:
            txn.add(Quad(CLOCK, R.A, R.rk("Clock"), BUSINESS))
            txn.add(Quad(CLOCK, NOW, R.dt_literal(now), BUSINESS))
        return now

    def _read(self, view: Any, node: Any) -> Note | None:
        if not view.contains(Quad(node, R.A, T_LIVE, INFERRED)):
            return None
        po: dict[Any, list[Any]] = {}
        for q in view.quads(node, None, None, NOTES):
            po.setdefault(q.predicate, []).append(q.object)

        def one(p: NamedNode) -> Any:
            vals = po.get(p)
            return vals[0] if vals else None

        key, value, version = one(P_KEY), one(P_VALUE), one(P_VERSION)
        if key is None or value is None or version is None:
            return None
        project, namespace, name = parse_key(key.value)
        author = one(P_AUTHOR)
        person = author.value.rsplit(":person:", 1)[-1] if isinstance(author, NamedNode) else ""
        from urllib.parse import unquote

        return Note(key.value, project, namespace, name, json.loads(value.value), int(version.value),
                    _dt(one(P_UPDATED)) or datetime.min.replace(tzinfo=UTC), unquote(person),
                    _dt(one(P_EXPIRES)))
