"""Backends for the store suite: every test that takes ``backend`` runs on the embedded
store, on ``oxigraph serve`` and on Virtuoso Open Source, both started on loopback once
per session (``sparql_servers``, tests/conftest.py) and stopped by pid. Virtuoso missing fails under ``CI=true`` and skips
elsewhere (``.ci/run`` installs it)."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.store.servers import Server, server_for

BACKENDS = ["embedded", "oxigraph", "virtuoso"]
_prefixes = itertools.count()


_server = server_for  # the session's server of a kind (``sparql_servers`` is in tests/conftest.py)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, sparql_servers: dict[str, Server],
            tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> str:
    """The backend's name; for a remote one, ``tmp_path/shards.json`` names an endpoint
    ``t`` on the server with a graph prefix of its own (tests share the server)."""
    kind = request.param
    if kind != "embedded":
        s = _server(sparql_servers, kind, tmp_path_factory.getbasetemp() / "servers")
        cfg = s.endpoint_config(prefix=f"urn:reckon:test{os.getpid()}-{next(_prefixes)}:")
        (tmp_path / "shards.json").write_text(json.dumps({"default": "t", "endpoints": {"t": cfg}}))
    return str(kind)


def remote_for(data_dir: Path) -> Any:
    """The endpoint new tenants of ``data_dir`` go to (``None``: embedded)."""
    from reckon.store.shards import EMBEDDED, ShardMap

    m = ShardMap.load(data_dir)
    return None if m.default == EMBEDDED else m.endpoint(m.default)


@pytest.fixture()
def create_store(backend: str, tmp_path: Path) -> Callable[..., Any]:
    """``create_store(tenant_id, **kw)``: ``TenantStore.create`` under ``tmp_path/tenants``
    on the parametrized backend."""
    from reckon.store import TenantStore

    def make(tenant_id: str = "acme", root: Path | None = None, **kw: Any) -> TenantStore:
        root = root or tmp_path
        return TenantStore.create(root / "tenants" / tenant_id, tenant_id, remote=remote_for(tmp_path), **kw)

    return make
