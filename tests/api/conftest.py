"""Fixtures for the facade tests: one Engine with the shipped rule program per module
(loading and checking the program takes seconds), helpers to write a memory's exact
triples (memory-layout.md) without the memory write path."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Quad

from reckon.api import Engine, Tenant
from reckon.store import MEMORIES

RK = "https://reckon.dev/ns/core#"
MK = "https://reckon.dev/ns/marketing#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
LABEL = NamedNode("http://www.w3.org/2000/01/rdf-schema#label")


def rk(x: str) -> NamedNode:
    return NamedNode(RK + x)


def mk(x: str) -> NamedNode:
    return NamedNode(MK + x)


@pytest.fixture(scope="session")
def shipped_engine_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engine")


@pytest.fixture(scope="session")
def engine(shipped_engine_dir: Path) -> Engine:
    """An engine with the shipped rule program (core + marketing + recruiting)."""
    return Engine(shipped_engine_dir)


_counter = iter(range(10**6))


@pytest.fixture()
def tenant(engine: Engine) -> Tenant:
    return engine.create_tenant(f"t{next(_counter)}", company_name="Acme Inc.")


def write_budget_memory(tenant: Tenant, local: str, *, amount: str, platform: str = "meta") -> NamedNode:
    """A complete mk:BudgetConstraintMemory as in memory-layout.md, written directly."""
    m = NamedNode(f"urn:reckon:{tenant.id}:memory:{local}")
    dana = NamedNode(f"urn:reckon:{tenant.id}:person:dana")
    triples = [
        (RDF_TYPE, mk("BudgetConstraintMemory")),
        (LABEL, Literal(f"{platform} monthly spend cap")),
        (rk("kind"), rk("Objective")),
        (rk("scope"), rk("CompanyScope")),
        (rk("importance"), Literal("5", datatype=NamedNode(XSD + "integer"))),
        (rk("source"), rk("AgentTool")),
        (rk("confidence"), Literal("1.0", datatype=NamedNode(XSD + "decimal"))),
        (rk("createdAt"), Literal("2026-03-02T09:15:00Z", datatype=NamedNode(XSD + "dateTime"))),
        (rk("author"), dana),
        (mk("platform"), mk(platform)),
        (mk("amount"), Literal(amount, datatype=NamedNode(XSD + "decimal"))),
        (mk("currency"), Literal("USD")),
        (mk("period"), mk("Monthly")),
    ]
    with tenant.store.transaction() as txn:
        txn.add(Quad(dana, RDF_TYPE, rk("Person"), MEMORIES))
        for p, o in triples:
            txn.add(Quad(m, p, o, MEMORIES))
    return m
