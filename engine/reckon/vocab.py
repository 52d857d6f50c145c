"""Reckon's vocabulary: namespaces, named graphs, the prefix map and IRI minting.

The bottom layer: every other module (store, datalog, schema, memory, recall, api, cli,
server) takes its namespace IRIs, graph names and tenant IRIs from here, so each is
spelled once. It imports nothing from Reckon.

Namespaces (``ontology/*.ttl``):

===========  ====================================  ==========================
prefix       IRI                                   module
===========  ====================================  ==========================
``rk:``      ``https://reckon.dev/ns/core#``       ``ontology/core.ttl``
``mk:``      ``https://reckon.dev/ns/marketing#``  ``ontology/marketing.ttl``
``rc:``      ``https://reckon.dev/ns/recruiting#`` ``ontology/recruiting.ttl``
``ag:``      ``https://reckon.dev/ns/agent#``      ``ontology/agent.ttl``
``nt:``      ``https://reckon.dev/ns/notes#``      ``ontology/notes.ttl``
``ev:``      ``https://reckon.dev/ns/events#``     ``ontology/events.ttl``
``xp:``      ``https://reckon.dev/ns/experience#`` ``ontology/experience.ttl``
``ty:``      ``https://reckon.dev/ns/types#``      ``ontology/types.ttl``
===========  ====================================  ==========================

Tenant IRIs are ``urn:reckon:<tenant>:<kind>:<id>``: a memory's id is 32 hex digits;
person and team ids are slugs chosen by callers where every character outside
``A-Z a-z 0-9 - . _ ~`` (RFC 3986 unreserved set) is percent-encoded, so any id maps to
a valid IRI and back unchanged.

Example::

    >>> from reckon.vocab import RK, person_iri, slug_of
    >>> RK + "Memory"
    'https://reckon.dev/ns/core#Memory'
    >>> person_iri("acme", "ana b").value
    'urn:reckon:acme:person:ana%20b'
    >>> slug_of(person_iri("acme", "ana b").value)
    'ana b'
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import quote, unquote

from pyoxigraph import BlankNode, Literal, NamedNode

__all__ = [
    "A",
    "ACTIVE",
    "AG",
    "ASSERTED",
    "BASE_PROPERTIES",
    "BUSINESS",
    "CONVERSATION",
    "EV",
    "EVENTS",
    "EXPERIENCE",
    "INFERRED",
    "IRI_KIND",
    "IRI_SCOPE",
    "IRI_SOURCE",
    "KIND_IRI",
    "LABEL",
    "MEMORIES",
    "MEMORY",
    "META",
    "MK",
    "NOTES",
    "NT",
    "OWL",
    "PERSON",
    "PREFIXES",
    "PROGRAM",
    "PROJECT",
    "PROGRAM_TERMS",
    "PUBLIC",
    "RC",
    "RDF",
    "RDFS",
    "RK",
    "SCHEMA",
    "SCOPE_IRI",
    "SETTINGS",
    "SETTINGS_CLASS",
    "SH",
    "SOURCE_IRI",
    "SUBCLASS",
    "TEAM",
    "TRANSCRIPTS",
    "TY",
    "XP",
    "XSD",
    "agent_iri",
    "company_iri",
    "conversation_iri",
    "decimal_text",
    "ev",
    "json_decimals",
    "local_name",
    "memory_iri",
    "memory_prefix",
    "nt",
    "person_iri",
    "project_iri",
    "python_value",
    "revision_iri",
    "rk",
    "slug_of",
    "sparql_prefixes",
    "team_iri",
    "team_key",
    "tenant_prefix",
    "xp",
]

# -- namespaces ---------------------------------------------------------------------------
RK = "https://reckon.dev/ns/core#"
MK = "https://reckon.dev/ns/marketing#"
RC = "https://reckon.dev/ns/recruiting#"
AG = "https://reckon.dev/ns/agent#"
NT = "https://reckon.dev/ns/notes#"
EV = "https://reckon.dev/ns/events#"
XP = "https://reckon.dev/ns/experience#"
TY = "https://reckon.dev/ns/types#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD = "http://www.w3.org/2001/XMLSchema#"
SH = "http://www.w3.org/ns/shacl#"
OWL = "http://www.w3.org/2002/07/owl#"

PREFIXES: dict[str, str] = {
    "rk": RK,
    "mk": MK,
    "rc": RC,
    "ag": AG,
    "nt": NT,
    "ev": EV,
    "xp": XP,
    "ty": TY,
    "rdf": RDF,
    "rdfs": RDFS,
    "xsd": XSD,
    "owl": OWL,
    "sh": SH,
}
"""The prefixes every read-only query may use undeclared, exports and the inspector
write with, and the CLI accepts in ``prefix:local`` names."""


def sparql_prefixes(*names: str) -> str:
    """``PREFIX`` lines for ``names`` (every prefix of :data:`PREFIXES` when none given).

    >>> sparql_prefixes("rk")
    'PREFIX rk: <https://reckon.dev/ns/core#>\\n'
    """
    return "".join(f"PREFIX {n}: <{PREFIXES[n]}>\n" for n in (names or tuple(PREFIXES)))


def rk(local: str) -> NamedNode:
    """``rk:<local>`` as a term."""
    return NamedNode(RK + local)


def nt(local: str) -> NamedNode:
    """``nt:<local>`` (``ontology/notes.ttl``) as a term."""
    return NamedNode(NT + local)


def ev(local: str) -> NamedNode:
    """``ev:<local>`` (``ontology/events.ttl``) as a term."""
    return NamedNode(EV + local)


def xp(local: str) -> NamedNode:
    """``xp:<local>`` (``ontology/experience.ttl``) as a term."""
    return NamedNode(XP + local)


A = NamedNode(RDF + "type")
LABEL = NamedNode(RDFS + "label")
SUBCLASS = NamedNode(RDFS + "subClassOf")
MEMORY = rk("Memory")
"""``rk:Memory``: every class under it, however deep, is a memory class."""
ACTIVE = rk("ActiveMemory")
"""``rk:ActiveMemory``: derived by ``rules/core.srl`` (not superseded, not expired)."""
PERSON = rk("Person")
TEAM = rk("Team")
PROJECT = rk("Project")
"""``rk:Project``: members (``rk:member``) read and write its project-scope memories."""
CONVERSATION = rk("Conversation")
"""``rk:Conversation``: a conversation as a stakeholder; participants (``rk:participant``,
asserted, or ``ag:participant``, derived from turns) read and write its memories."""
SETTINGS = rk("settings")
"""The tenant's settings node (its values: the ``rk:Settings`` properties, SCHEMA graph)."""
SETTINGS_CLASS = rk("Settings")

BASE_PROPERTIES: frozenset[str] = frozenset(
    [RDF + "type", RDFS + "label"]
    + [RK + p for p in ("content", "kind", "scope", "owner", "team", "project", "conversation", "importance", "source", "confidence",
                        "createdAt", "updatedAt", "author", "expiresAt", "supersededBy", "supersedes",
                        "derivedFrom")]
)
"""IRIs of the properties every memory carries (``ontology/core.ttl``; ``rk:derivedFrom``
from ``ontology/agent.ttl``): the memory model handles them; a subclass's own
properties are the others."""

KIND_IRI: dict[str, NamedNode] = {k: rk(v) for k, v in {"preference": "Preference", "fact": "Fact", "objective": "Objective",
                                   "context": "Context"}.items()}
SCOPE_IRI: dict[str, NamedNode] = {k: rk(v) for k, v in {"user": "UserScope", "team": "TeamScope", "company": "CompanyScope",
                                    "project": "ProjectScope", "conversation": "ConversationScope"}.items()}
SOURCE_IRI: dict[str, NamedNode] = {k: rk(v) for k, v in {"agent_tool": "AgentTool", "extraction": "Extraction", "operator": "Operator",
                                     "onboarding": "Onboarding", "import": "Import"}.items()}
IRI_KIND: dict[NamedNode, str] = {v: k for k, v in KIND_IRI.items()}
IRI_SCOPE: dict[NamedNode, str] = {v: k for k, v in SCOPE_IRI.items()}
IRI_SOURCE: dict[NamedNode, str] = {v: k for k, v in SOURCE_IRI.items()}
"""The core kinds, scopes and sources by their model names (``"preference"`` ->
``rk:Preference``, ``"user"`` -> ``rk:UserScope``, ``"agent_tool"`` -> ``rk:AgentTool``)
and back."""

# -- named graphs (DESIGN.md, "The store") ------------------------------------------------
SCHEMA = NamedNode("urn:reckon:graph:schema")
"""Ontology + shapes + settings defaults (asserted)."""
MEMORIES = NamedNode("urn:reckon:graph:memories")
"""Memory nodes, people, teams, the company (asserted)."""
BUSINESS = NamedNode("urn:reckon:graph:business")
"""KPIs, spend, accounts, subscription, the clock (asserted)."""
TRANSCRIPTS = NamedNode("urn:reckon:graph:transcripts")
"""Conversations and their turns (asserted; ``ontology/agent.ttl``)."""
NOTES = NamedNode("urn:reckon:graph:notes")
"""Keyed shared notes (asserted; ``ontology/notes.ttl``)."""
EVENTS = NamedNode("urn:reckon:graph:events")
"""The typed event graph: events, episodes, entities (asserted; ``ontology/events.ttl``)."""
EXPERIENCE = NamedNode("urn:reckon:graph:experience")
"""Experience records and strategies (asserted; ``ontology/experience.ttl``)."""
INFERRED = NamedNode("urn:reckon:graph:inferred")
"""Derived triples only; written by the reasoner."""
META = NamedNode("urn:reckon:graph:meta")
"""Private store bookkeeping (write generation, incarnation)."""
PROGRAM = NamedNode("urn:reckon:graph:program")
"""The tenant's stored program (``reckon.schema.program``)."""

PROGRAM_TERMS: dict[str, NamedNode] = {n: NamedNode("urn:reckon:" + n) for n in (
    "program", "programDigest", "programFormat", "module", "moduleName", "moduleOrder", "moduleDigest", "moduleFiles")}
"""The stored program's bookkeeping terms in :data:`PROGRAM` (``urn:reckon:<name>``:
the program node, its digest and format, each module's node, name, order, digest and
files; ``reckon.schema.program``)."""

ASSERTED: tuple[NamedNode, ...] = (SCHEMA, MEMORIES, BUSINESS, TRANSCRIPTS, NOTES, EVENTS, EXPERIENCE)
"""Graphs whose union is the reasoner's base graph."""
PUBLIC: tuple[NamedNode, ...] = (SCHEMA, MEMORIES, BUSINESS, TRANSCRIPTS, NOTES, EVENTS, EXPERIENCE, INFERRED)
"""Graphs visible to SPARQL (their union is the default graph)."""

# -- tenant IRIs ----------------------------------------------------------------------------
_SAFE = "-._~"


def _enc(text: str) -> str:
    return quote(text, safe=_SAFE)


def tenant_prefix(tenant: str) -> str:
    """``urn:reckon:<tenant>:``: every IRI a tenant's data mints starts so."""
    return f"urn:reckon:{tenant}:"


def memory_prefix(tenant: str) -> str:
    """``urn:reckon:<tenant>:memory:``."""
    return f"urn:reckon:{tenant}:memory:"


def memory_iri(tenant: str, hex_id: str) -> NamedNode:
    """``urn:reckon:<tenant>:memory:<32 hex digits>``."""
    return NamedNode(f"urn:reckon:{tenant}:memory:{hex_id}")


def revision_iri(tenant: str, hex_id: str) -> NamedNode:
    """``urn:reckon:<tenant>:revision:<hex>``: a rk:Revision node (earlier label / content)."""
    return NamedNode(f"urn:reckon:{tenant}:revision:{hex_id}")


def company_iri(tenant: str) -> NamedNode:
    """``urn:reckon:<tenant>:company``."""
    return NamedNode(f"urn:reckon:{tenant}:company")


def person_iri(tenant: str, person: str) -> NamedNode:
    """``urn:reckon:<tenant>:person:<pct-encoded id>``."""
    return NamedNode(f"urn:reckon:{tenant}:person:{_enc(person)}")


def team_iri(tenant: str, team: str) -> NamedNode:
    """``urn:reckon:<tenant>:team:<pct-encoded id>``."""
    return NamedNode(f"urn:reckon:{tenant}:team:{_enc(team)}")


def team_key(team: str) -> str:
    """The key two team ids must not share unless equal: NFKC form, surrounding
    whitespace stripped, case folded (``"Growth"``, ``" growth"`` and ``"ｇｒｏｗｔｈ"``
    share ``"growth"``).

    Team ids themselves are exact (case-sensitive, like person ids; the IRI is
    :func:`team_iri` of the id as given). The key only keeps an operator from adding a
    second team that differs from one of the tenant's in case, Unicode form or
    whitespace, and lets the unknown-team error suggest the one meant.

    >>> team_key(" Growth ") == team_key("growth")
    True
    """
    return unicodedata.normalize("NFKC", team).strip().casefold()


def project_iri(tenant: str, project: str) -> NamedNode:
    """``urn:reckon:<tenant>:project:<pct-encoded id>``."""
    return NamedNode(f"urn:reckon:{tenant}:project:{_enc(project)}")


def conversation_iri(tenant: str, conversation: str) -> NamedNode:
    """``urn:reckon:<tenant>:conversation:<pct-encoded id>``."""
    return NamedNode(f"urn:reckon:{tenant}:conversation:{_enc(conversation)}")


def agent_iri(tenant: str, agent: str) -> NamedNode:
    """``urn:reckon:<tenant>:agent:<pct-encoded id>``."""
    return NamedNode(f"urn:reckon:{tenant}:agent:{_enc(agent)}")


def slug_of(iri: str) -> str:
    """Inverse of :func:`person_iri` / :func:`team_iri`: the id after the last ``:``."""
    return unquote(iri.rsplit(":", 1)[-1])


def local_name(iri: str) -> str:
    """The part after the last ``#`` (else ``/``, else ``:``).

    >>> local_name(MK + "BudgetConstraintMemory")
    'BudgetConstraintMemory'
    """
    for sep in ("#", "/", ":"):
        if sep in iri:
            iri = iri.rsplit(sep, 1)[-1]
            if sep != ":":
                break
    return iri


# -- term values ------------------------------------------------------------------------------
_X_INTEGER = NamedNode(XSD + "integer")
_X_DECIMAL = NamedNode(XSD + "decimal")
_X_FLOATS = (NamedNode(XSD + "double"), NamedNode(XSD + "float"))
_X_BOOLEAN = NamedNode(XSD + "boolean")
_X_DATETIME = NamedNode(XSD + "dateTime")
_X_DATE = NamedNode(XSD + "date")


def decimal_text(value: Decimal) -> str:
    """The exact text of a decimal, never in exponent notation: how JSON outputs carry an
    xsd:decimal (HTTP, MCP, tool results, ``--json``: a string, so no client's binary
    float rounds it).

    >>> decimal_text(Decimal("12345678901234.123456789012345678")), decimal_text(Decimal("1.2E-7"))
    ('12345678901234.123456789012345678', '0.00000012')
    """
    return format(value, "f")


def json_decimals(value: Any) -> Any:
    """``value`` with every ``Decimal`` (in dicts and lists) as :func:`decimal_text`."""
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, dict):
        return {k: json_decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_decimals(v) for v in value]
    return value


def python_value(term: object) -> Any:
    """A term's Python value: ``int`` for xsd:integer (and int/long/non-negative/positive
    integer), ``decimal.Decimal`` for xsd:decimal (exact: every digit the store holds),
    ``float`` for double/float, ``bool``, ``datetime`` (UTC) for xsd:dateTime, ``date``,
    ``str`` otherwise (also for a lexical form that does not parse); IRIs as their
    string, blank nodes as ``_:label``.

    >>> python_value(Literal("12345678901234.123456789012345678", datatype=NamedNode(XSD + "decimal")))
    Decimal('12345678901234.123456789012345678')
    >>> python_value(Literal("2.5", datatype=NamedNode(XSD + "double")))
    2.5
    """
    if isinstance(term, NamedNode):
        return term.value
    if isinstance(term, BlankNode):
        return f"_:{term.value}"
    if not isinstance(term, Literal):
        return str(term)
    dt = term.datatype
    v = term.value
    try:
        if dt == _X_INTEGER or dt.value.endswith(("#int", "#long", "#nonNegativeInteger", "#positiveInteger")):
            return int(v)
        if dt == _X_DECIMAL:
            d = Decimal(v.strip())
            if not d.is_finite():  # not an xsd:decimal lexical form
                return v
            return d
        if dt in _X_FLOATS:
            return float(v)
        if dt == _X_BOOLEAN:
            return v in ("true", "1")
        if dt == _X_DATETIME:
            return datetime.fromisoformat(v.replace("Z", "+00:00")).astimezone(UTC)
        if dt == _X_DATE:
            return date.fromisoformat(v)
    except (ValueError, InvalidOperation):
        return v
    return v
