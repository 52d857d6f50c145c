"""The tenant -> endpoint map: which SPARQL server (or the embedded store) holds a tenant.

A JSON file, ``$RECKON_SHARDS`` or else ``DATA_DIR/shards.json`` (several Reckon nodes
share one file, e.g. from configuration management or a shared volume)::

    {
      "default": "east",                      // where new tenants go ("embedded" if absent)
      "endpoints": {
        "east": {"url": "http://127.0.0.1:7878", "server": "oxigraph"},
        "west": {"url": "https://sparql.example.com", "server": "virtuoso",
                 "auth": {"digest": ["reckon", "secret"]}, "verify": "/etc/ssl/ca.pem",
                 "headers_env": {"X-Api-Key": "WEST_KEY"}, "timeout": 5}
      },
      "tenants": {"acme": "east", "beta": "west", "gamma": "embedded"}
    }

(JSON has no comments; they are here for the reader.) Every key of an endpoint is a
parameter of :class:`reckon.store.remote.Endpoint`. ``tenants`` is written by Reckon
(``reckon tenant create`` records where it put a tenant, ``reckon tenant move`` switches
it) under an ``flock`` on ``shards.json.lock`` and replaced by rename, so a reader sees
the old map or the new one. A tenant not listed lives in the embedded store of the node's
data directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from reckon._errors import StoreError
from reckon.store.ids import validate_tenant_id
from reckon.store.remote import Endpoint

__all__ = ["EMBEDDED", "ShardMap", "set_placement"]

EMBEDDED = "embedded"

_cache: dict[str, tuple[tuple[int, int], ShardMap]] = {}
_cache_lock = threading.Lock()


@dataclass
class ShardMap:
    """A parsed shard map (see the module docstring).

    :ivar path: the file (``None``: no file, every tenant embedded).
    """

    path: Path | None = None
    default: str = EMBEDDED
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    tenants: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def file_for(data_dir: str | Path) -> Path:
        env = os.environ.get("RECKON_SHARDS")
        return Path(env) if env else Path(data_dir) / "shards.json"

    @classmethod
    def load(cls, data_dir: str | Path) -> ShardMap:
        """The map of ``data_dir`` (cached while the file is unchanged; endpoints, and so
        their HTTP connection pools, are shared by every tenant of the process).

        :raises StoreError: when the file is not valid JSON or names an unknown endpoint.
        """
        path = cls.file_for(data_dir)
        try:
            st = path.stat()
        except OSError:
            return cls(None)
        key = (st.st_mtime_ns, st.st_size)
        with _cache_lock:
            hit = _cache.get(str(path))
            if hit is not None and hit[0] == key:
                return hit[1]
        m = cls.parse(path, path.read_bytes())
        with _cache_lock:
            old = _cache.get(str(path))
            if old is not None:  # keep the connection pools of unchanged endpoints
                for name, ep in m.endpoints.items():
                    prev = old[1].endpoints.get(name)
                    if prev is not None and prev.to_dict() == ep.to_dict():
                        m.endpoints[name] = prev
            _cache[str(path)] = (key, m)
        return m

    @classmethod
    def parse(cls, path: Path | None, data: bytes) -> ShardMap:
        try:
            raw = json.loads(data or b"{}")
        except ValueError as e:
            raise StoreError(f"shard map {path}: not JSON: {e}") from e
        if not isinstance(raw, dict):
            raise StoreError(f"shard map {path}: expected a JSON object")
        unknown = set(raw) - {"default", "endpoints", "tenants"}
        if unknown:
            raise StoreError(f"shard map {path}: unknown keys {sorted(unknown)}")
        eps = {name: Endpoint.from_dict(name, d) for name, d in (raw.get("endpoints") or {}).items()}
        m = cls(path, str(raw.get("default") or EMBEDDED), eps, {})
        for tid, where in (raw.get("tenants") or {}).items():
            validate_tenant_id(tid)
            m._known(str(where))
            m.tenants[tid] = str(where)
        m._known(m.default)
        return m

    def _known(self, name: str) -> None:
        if name != EMBEDDED and name not in self.endpoints:
            raise StoreError(f"shard map {self.path}: unknown endpoint {name!r} (known: {sorted(self.endpoints)})")

    def endpoint(self, name: str) -> Endpoint:
        """:raises StoreError: when no endpoint of that name is configured."""
        ep = self.endpoints.get(name)
        if ep is None:
            raise StoreError(
                f"SPARQL endpoint {name!r} is not configured (shard map: {self.path or 'none'}; "
                f"set RECKON_SHARDS or write DATA_DIR/shards.json)"
            )
        return ep

    def placement(self, tenant_id: str) -> str:
        """Where ``tenant_id`` lives: an endpoint name or :data:`EMBEDDED`."""
        return self.tenants.get(tenant_id, EMBEDDED)

    def remote_tenants(self) -> list[str]:
        return sorted(t for t, w in self.tenants.items() if w != EMBEDDED)


def set_placement(data_dir: str | Path, tenant_id: str, where: str | None) -> None:
    """Record (``None``: forget) where ``tenant_id`` lives, atomically (flock + rename);
    other keys of the file are kept as written.

    :raises StoreError: when the file cannot be written or ``where`` is unknown.
    """
    validate_tenant_id(tenant_id)
    path = ShardMap.file_for(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            raw = json.loads(path.read_bytes() or b"{}") if path.exists() else {}
        except ValueError as e:
            raise StoreError(f"shard map {path}: not JSON: {e}") from e
        tenants = dict(raw.get("tenants") or {})
        if where is None:
            tenants.pop(tenant_id, None)
        else:
            tenants[tenant_id] = where
        raw["tenants"] = dict(sorted(tenants.items()))
        data = (json.dumps(raw, indent=2) + "\n").encode()
        ShardMap.parse(path, data)  # refuse to write a map that would not load
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        raise StoreError(f"cannot write the shard map {path}: {e}") from e
    finally:
        os.close(lock)
