"""Where a tenant's API-token records live: with the tenant's data, wherever that is.

The records are JSON objects keyed by a public token id; what they hold (the principal,
a scrypt hash and its salt -- never a token) is :mod:`reckon.server.auth`'s business.
This module only keeps them next to the tenant, so that every Reckon node that can
reach a tenant sees the same tokens (issue 14: two ``reckon serve`` nodes sharing
tenants on a SPARQL server accept each other's tokens):

* **embedded** tenant: ``DATA_DIR/tenants/<id>/tokens.json`` (mode 0600, replaced by
  rename under an ``flock`` on ``tokens.lock``);
* tenant on a **SPARQL server** (:mod:`reckon.store.remote`): the tenant's private
  server graph ``<graph prefix><id>:tokens``, one triple per token
  ``<urn:reckon:token:<id>> <urn:reckon:tokenRecord> "<json>"``. No user query reaches
  it (user SPARQL runs on the process's mirror, which holds only the seven logical
  graphs), ``tenant export`` does not include it, and ``tenant delete`` drops it with
  the tenant's other graphs. Adding a record is one conditional update (only where no
  record of that id is), removing one a ``DELETE WHERE``.

Either way a lookup names one tenant and one token id; there is no table shared between
tenants.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyoxigraph import Literal, NamedNode

from reckon._errors import StoreError
from reckon.store.ids import tenant_dir, validate_tenant_id
from reckon.store.remote import Endpoint, RemoteBackend
from reckon.store.shards import EMBEDDED, ShardMap
from reckon.store.sparql import term_to_sparql

__all__ = ["TokenRecords", "TOKENS_FILE"]

TOKENS_FILE = "tokens.json"
_FORMAT_VERSION = 1
TOKEN_RECORD = NamedNode("urn:reckon:tokenRecord")


class TokenRecords:
    """The API-token records of one tenant (see the module docstring).

    :param tenant_path: the tenant's directory ``DATA_DIR/tenants/<id>`` (embedded:
        where ``tokens.json`` is; remote: unused).
    :param endpoint: the tenant's SPARQL endpoint, ``None`` when it is embedded.
    """

    def __init__(self, tenant_path: Path, tenant_id: str, endpoint: Endpoint | None) -> None:
        self.path = Path(tenant_path)
        self.tenant_id = validate_tenant_id(tenant_id)
        self.endpoint = endpoint
        self._remote = None if endpoint is None else RemoteBackend(endpoint, self.tenant_id, "legacy")

    @classmethod
    def of(cls, data_dir: str | Path, tenant_id: str) -> TokenRecords:
        """The records of ``tenant_id`` where the shard map of ``data_dir`` places it.

        :raises StoreError: when the shard map cannot be read.
        """
        where = ShardMap.load(data_dir).placement(tenant_id)
        ep = None if where == EMBEDDED else ShardMap.load(data_dir).endpoint(where)
        return cls(tenant_dir(Path(data_dir), tenant_id), tenant_id, ep)

    # ------------------------------------------------------------------ where
    @property
    def remote(self) -> bool:
        return self._remote is not None

    def tenant_exists(self) -> bool:
        """True when the tenant is where these records are looked up."""
        if self._remote is not None:
            return self._remote.exists()
        return (self.path / "meta.json").is_file()

    def _graph(self) -> str:
        assert self._remote is not None
        return term_to_sparql(NamedNode(self._remote._base + "tokens"))  # noqa: SLF001

    @staticmethod
    def _subject(token_id: str) -> str:
        if not token_id.isalnum():
            raise StoreError(f"token id {token_id!r}: expected letters and digits")
        return term_to_sparql(NamedNode(f"urn:reckon:token:{token_id}"))

    # ------------------------------------------------------------------ reading
    def lookup(self, token_id: str) -> tuple[Hashable | None, Callable[[], dict[str, Any] | None]]:
        """``(stamp, read)``: a stamp that changes whenever the record may have (``None``:
        there is no record, or no tokens at all) and a function reading the record.
        Embedded: the file's (mtime, size, inode), read only when called; remote: the
        record's text, fetched by this call (one request)."""
        if self._remote is None:
            try:
                st = (self.path / TOKENS_FILE).stat()
            except FileNotFoundError:
                return None, lambda: None
            return (st.st_mtime_ns, st.st_size, st.st_ino), lambda: self._read_file().get(token_id)
        rows = self._remote.endpoint.select(
            f"SELECT ?r WHERE {{ GRAPH {self._graph()} {{ {self._subject(token_id)} "
            f"{term_to_sparql(TOKEN_RECORD)} ?r }} }}"
        )
        if len(rows) != 1:
            return None, lambda: None
        text = str(rows[0]["r"].value)
        return text, lambda: _loads(text)

    def all(self) -> dict[str, dict[str, Any]]:
        """Every record by token id."""
        if self._remote is None:
            return self._read_file()
        rows = self._remote.endpoint.select(
            f"SELECT ?t ?r WHERE {{ GRAPH {self._graph()} {{ ?t {term_to_sparql(TOKEN_RECORD)} ?r }} }}"
        )
        out = {}
        for r in rows:
            rec = _loads(str(r["r"].value))
            if rec is not None:
                out[str(r["t"].value).rsplit(":", 1)[1]] = rec
        return out

    # ------------------------------------------------------------------ writing
    def add(self, token_id: str, record: dict[str, Any]) -> bool:
        """Store ``record`` under ``token_id`` unless one is there; True when stored.

        :raises StoreError: when it cannot be written.
        """
        text = json.dumps(record, sort_keys=True)
        if self._remote is None:
            with self._locked():
                data = self._read_file()
                if token_id in data:
                    return False
                data[token_id] = record
                self._write_file(data)
                return True
        g, s, p = self._graph(), self._subject(token_id), term_to_sparql(TOKEN_RECORD)
        lit = term_to_sparql(Literal(text))
        self._remote.endpoint.update(
            f"INSERT {{ GRAPH {g} {{ {s} {p} {lit} }} }} WHERE {{ FILTER NOT EXISTS {{ GRAPH {g} {{ {s} {p} ?any }} }} }}"
        )
        stamp, _ = self.lookup(token_id)
        return stamp == text

    def remove(self, token_id: str) -> dict[str, Any] | None:
        """Delete the record of ``token_id``; returns it (``None``: there was none)."""
        if self._remote is None:
            with self._locked():
                data = self._read_file()
                raw = data.pop(token_id, None)
                if raw is not None:
                    self._write_file(data)
                return raw
        stamp, read = self.lookup(token_id)
        if stamp is None:
            return None
        g, s, p = self._graph(), self._subject(token_id), term_to_sparql(TOKEN_RECORD)
        self._remote.endpoint.update(f"DELETE WHERE {{ GRAPH {g} {{ {s} {p} ?r }} }}")
        return read()

    def replace_all(self, records: dict[str, dict[str, Any]]) -> None:
        """Make ``records`` the tenant's records (a move copies them to the new place)."""
        if self._remote is None:
            with self._locked():
                self._write_file(dict(records))
            return
        g = self._graph()
        p = term_to_sparql(TOKEN_RECORD)
        body = " ".join(f"{self._subject(t)} {p} {term_to_sparql(Literal(json.dumps(r, sort_keys=True)))} ."
                        for t, r in records.items())
        ops = [f"DROP SILENT GRAPH {g}"] + ([f"INSERT DATA {{ GRAPH {g} {{ {body} }} }}"] if body else [])
        self._remote.endpoint.update(" ;\n".join(ops))

    # ------------------------------------------------------------------ the embedded file
    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            fd = os.open(self.path / "tokens.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise StoreError(f"cannot lock the tokens of tenant {self.tenant_id!r}: {e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read_file(self) -> dict[str, dict[str, Any]]:
        path = self.path / TOKENS_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError as e:
            raise StoreError(f"{path}: not a Reckon tokens file: {e}") from e
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), dict):
            raise StoreError(f"{path}: not a Reckon tokens file")
        return dict(data["tokens"])

    def _write_file(self, tokens: dict[str, dict[str, Any]]) -> None:
        path = self.path / TOKENS_FILE
        data = {"version": _FORMAT_VERSION, "tenant": self.tenant_id, "tokens": tokens}
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as e:
            raise StoreError(f"cannot write {path}: {e}") from e


def _loads(text: str) -> dict[str, Any] | None:
    try:
        v = json.loads(text)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None
