"""Fixtures: a real TenantStore in tmp_path with the shipped ontology + shapes in its SCHEMA
graph and the rule program's reasoner.

When ``reckon.datalog.evaluate`` (the project's reasoner) is importable it is used with
the shipped rules; until then a small reference reasoner (:class:`LifecycleReasoner`,
SPARQL over an in-memory pyoxigraph store, recomputed from scratch) derives the core
lifecycle facts the write path reads: ``rk:Memory`` membership through the subclass
closure, ``rk:supersedes`` and ``rk:ActiveMemory`` against the in-graph clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyoxigraph import Quad, RdfFormat, Store, Triple, parse

from reckon.memory.models import Principal
from reckon.memory.service import MemoryService
from reckon.store import MEMORIES, SCHEMA, TenantStore
from reckon.vocab import A as RDF_TYPE
from reckon.vocab import rk, team_iri

#: Teams of the test tenant (``<team> a rk:Team``), as an operator's ``add_team`` makes them.
TEAMS = ("growth", "ads", "sales", "brand")
TEAM = rk("Team")

REPO = Path(__file__).resolve().parents[2]

_LIFECYCLE = """
PREFIX rk: <https://reckon.dev/ns/core#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
CONSTRUCT { ?c rdfs:subClassOf ?d . ?m a ?d . ?new rk:supersedes ?old . ?a a rk:ActiveMemory . }
WHERE {
  { ?c rdfs:subClassOf/rdfs:subClassOf+ ?d }
  UNION { ?m a ?c . ?c rdfs:subClassOf+ ?d . ?d rdfs:subClassOf* rk:Memory }
  UNION { ?old rk:supersededBy ?new }
  UNION { ?a a/rdfs:subClassOf* rk:Memory .
          FILTER NOT EXISTS { ?a rk:supersededBy ?x }
          OPTIONAL { ?a rk:expiresAt ?exp }
          OPTIONAL { rk:clock rk:now ?now }
          FILTER (!BOUND(?exp) || (BOUND(?now) && ?exp > ?now)) }
}
"""


@dataclass(frozen=True)
class _Delta:
    added: frozenset[Triple]
    removed: frozenset[Triple]


class LifecycleReasoner:
    """Reference reasoner for the core lifecycle rules (test double; recomputes from scratch)."""

    def __init__(self) -> None:
        self._base: set[Triple] = set()
        self._inf: set[Triple] = set()

    def _compute(self) -> set[Triple]:
        st = Store()
        st.extend(Quad(t.subject, t.predicate, t.object) for t in self._base)
        return {t for t in st.query(_LIFECYCLE)} - self._base

    def load(self, base: Iterable[Triple]) -> None:
        self._base = set(base)
        self._inf = self._compute()

    def apply(self, insert: Iterable[Triple] = (), delete: Iterable[Triple] = ()) -> _Delta:
        self._base -= set(delete)
        self._base |= set(insert)
        new = self._compute()
        d = _Delta(frozenset(new - self._inf), frozenset(self._inf - new))
        self._inf = new
        return d

    def inferred(self) -> set[Triple]:
        return set(self._inf)


def reasoner_factory():
    try:
        import reckon.datalog.maintain  # noqa: F401  (incremental maintenance)
        from reckon.datalog.evaluate import Reasoner  # type: ignore
        from reckon.datalog.loader import load_rules  # type: ignore
    except ImportError:
        return LifecycleReasoner
    rules = load_rules(*(REPO / "rules" / f for f in ("core.srl", "marketing.srl", "recruiting.srl")))

    def make():
        return Reasoner(rules)

    return make


def schema_quads(extra: Iterable[Path] = ()) -> list[Quad]:
    files = sorted((REPO / "ontology").glob("*.ttl")) + sorted((REPO / "shapes").glob("*.ttl")) + list(extra)
    out = []
    for f in files:
        for t in parse(path=str(f), format=RdfFormat.TURTLE):
            out.append(Quad(t.subject, t.predicate, t.object, SCHEMA))
    return out


@pytest.fixture
def make_store(tmp_path):
    made = []

    def _make(tenant: str = "acme", extra: Iterable[Path] = ()) -> TenantStore:
        # the org structure these tests write team memories for (an operator's add_team)
        teams = [Quad(team_iri(tenant, t), RDF_TYPE, TEAM, MEMORIES) for t in TEAMS]
        st = TenantStore.create(tmp_path / tenant, tenant, initial=schema_quads(extra) + teams,
                                reasoner_factory=reasoner_factory())
        made.append(st)
        return st

    yield _make
    for st in made:
        st.close()


@pytest.fixture
def store(make_store):
    return make_store()


@pytest.fixture
def svc(store):
    return MemoryService(store)


ANN = Principal(person="ann", teams=["growth"])
BOB = Principal(person="bob", teams=["growth"])
OPS = Principal.operator(person="olga")
