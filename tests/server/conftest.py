"""Server test fixtures: one data directory with two tenants (``acme``, ``beta``), tokens
for each, a few memories, and a FastAPI TestClient (no network)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session", autouse=True)
def _hashing_embedder() -> Iterator[None]:
    """The lexical embedder: these tests check serving, not the embedding model."""
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"
    yield
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


@dataclass
class World:
    data_dir: Path
    engine: Any
    client: Any
    tokens: dict[str, str] = field(default_factory=dict)  # name -> token
    ids: dict[str, str] = field(default_factory=dict)  # name -> memory id

    def h(self, who: str, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}", **extra}


BUDGET = {"kind": "objective", "scope": "company", "importance": 5, "source": "operator",
          "label": "Meta monthly spend cap", "content": "Don't let Meta spend go over $40k this month.",
          "subclass": "BudgetConstraintMemory",
          "properties": {"platform": "meta", "amount": 40000, "currency": "USD", "period": "monthly"}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, _hashing_embedder: None) -> Iterator[World]:
    from fastapi.testclient import TestClient

    from reckon.api import Engine, Principal
    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    d = tmp_path_factory.mktemp("serve")
    eng = Engine(d)
    acme = eng.create_tenant("acme", company_name="Acme")
    beta = eng.create_tenant("beta", company_name="Beta")
    acme.add_person("dana", "Dana", teams=["growth"])
    acme.add_person("sam", "Sam", teams=["growth"])
    ops = Principal.operator("dana", teams=["growth"])
    sam = Principal(person="sam", teams=["growth"])
    w = World(d, eng, None)
    w.ids["budget"] = acme.remember(principal=ops, **BUDGET).id
    w.ids["icp"] = acme.remember(principal=ops, kind="fact", scope="company", importance=3, source="operator",
                                 label="Ideal customer profile",
                                 content="We sell to small businesses with ten to fifty employees.").id
    w.ids["sam_pref"] = acme.remember(principal=sam, kind="preference", scope="user", importance=3,
                                      source="agent_tool", label="Sam wants short answers",
                                      content="Sam prefers bullet points and short answers.").id
    w.ids["beta_fact"] = beta.remember(principal=Principal.operator("bob"), kind="fact", scope="company",
                                       importance=4, source="operator", label="Beta secret plan",
                                       content="Beta launches the zebra campaign in May.").id
    ts = TokenStore(d)
    w.tokens["acme_ops"] = ts.create("acme", person="dana", teams=["growth"], role="operator", label="ops")[1]
    w.tokens["acme_sam"] = ts.create("acme", person="sam", teams=["growth"])[1]
    w.tokens["acme_analyst"] = ts.create("acme", person="ana", sparql=True)[1]
    w.tokens["beta_ops"] = ts.create("beta", person="bob", role="operator")[1]
    # no rate limit here: these tests send hundreds of requests per token in seconds
    # (the limiter has its own tests in tests/security/test_http_limits.py)
    with TestClient(create_app(eng, rate_limit=None)) as client:
        w.client = client
        yield w
