"""API tokens per tenant, stored hashed in the tenant's own directory.

A token is ``rkt_<tenant>.<token id>.<secret>``: the tenant id and a 12-hex-digit
token id (public; used to list and revoke) followed by 43 characters of
``secrets.token_urlsafe(32)`` (256 random bits). It is shown once, at creation.

Storage: ``DATA_DIR/tenants/<tenant>/tokens.json`` (mode 0600), one record per token
naming its tenant and principal (person, teams, role) and holding
``scrypt(secret, salt=16 random bytes, n=2**14, r=8, p=1, dklen=32)`` (RFC 7914) -- never
the token. There is no token table shared between tenants (DESIGN.md, "The store":
no shared table with a tenant column): a token is looked up only in the file of the
tenant named in the request URL, and its record must name that tenant, so a token of
tenant A can never reach tenant B. Deleting a tenant deletes its tokens with it.

Verification compares digests with :func:`hmac.compare_digest`. A successful
verification is cached in memory (keyed by a SHA-256 of the token) until the tokens
file changes, so a revocation made by another process takes effect on the next request;
so is a failed one (a repeated wrong token costs no second scrypt, ~90 ms). Guessing
secrets of a known token id is slowed by the HTTP server's rate limiter, which charges a
failed verification ten requests (``reckon.server.http.RateLimiter``).
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reckon._errors import InvalidInput, InvalidTenantId, UnknownTenant
from reckon.store import tenant_dir, validate_tenant_id

__all__ = [
    "TOKEN_PREFIX",
    "TokenError",
    "TokenForbidden",
    "TokenRecord",
    "TokenStore",
    "parse_token",
]

TOKEN_PREFIX = "rkt_"
TOKENS_FILE = "tokens.json"
_FORMAT_VERSION = 1
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}
_TOKEN_RE = re.compile(r"rkt_([a-z0-9][a-z0-9_-]{0,62})\.([0-9a-f]{12})\.([A-Za-z0-9_-]{20,128})")


class TokenError(Exception):
    """Authentication failed: no token, a malformed token, or no such (live) token.
    The HTTP layer answers 401."""


class TokenForbidden(Exception):
    """A well-formed token of another tenant was presented. The HTTP layer answers 403."""


class TokenRecord(BaseModel):
    """What a token stands for (the stored record, without its hash).

    :ivar id: public token id (12 hex digits).
    :ivar tenant: the only tenant the token opens.
    :ivar person: the principal's person id; ``teams`` their teams; ``role``
        ``member`` or ``operator`` (see :class:`reckon.api.Principal`).
    :ivar sparql: may use the SPARQL endpoint (which reads every memory of the tenant,
        other people's user-scope memories included): operators always, members only
        when granted.
    :ivar label: free text to recognise the token by (``"grafana"``).
    :ivar created_at: UTC creation time.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    tenant: str
    person: str
    teams: list[str] = Field(default_factory=list)
    role: Literal["member", "operator"] = "member"
    sparql: bool = False
    label: str | None = None
    created_at: datetime

    def principal(self) -> Any:
        """The :class:`reckon.api.Principal` acting with this token."""
        from reckon.api import Principal

        return Principal(person=self.person, teams=list(self.teams), role=self.role)


def parse_token(token: str) -> tuple[str, str, str]:
    """Split a token into ``(tenant, token_id, secret)``.

    :raises TokenError: when it is not a Reckon token.
    """
    m = _TOKEN_RE.fullmatch(token.strip()) if isinstance(token, str) else None
    if m is None:
        raise TokenError("not a Reckon API token (expected rkt_<tenant>.<id>.<secret>)")
    return m.group(1), m.group(2), m.group(3)


def _digest(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode("ascii"), salt=salt, **_SCRYPT)


class TokenStore:
    """Create, list, revoke and verify the API tokens of an engine's tenants.

    :param data_dir: the engine's data directory (tenants under ``data_dir/tenants``).
    """

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)
        self._cache: dict[bytes, tuple[tuple[int, int, int], TokenRecord]] = {}
        self._failed: dict[bytes, tuple[int, int, int]] = {}  # wrong tokens -> tokens-file stamp
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ files
    def _dir(self, tenant: str) -> Path:
        d = tenant_dir(self.data_dir, tenant)
        if not (d / "meta.json").is_file():
            raise UnknownTenant(f"no tenant {tenant!r} in {self.data_dir}")
        return d

    @contextmanager
    def _locked(self, tenant: str) -> Iterator[Path]:
        d = self._dir(tenant)
        fd = os.open(d / "tokens.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield d / TOKENS_FILE
        finally:
            os.close(fd)

    @staticmethod
    def _read(path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": _FORMAT_VERSION, "tokens": {}}
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), dict):
            raise InvalidInput(f"{path}: not a Reckon tokens file")
        return data

    @staticmethod
    def _write(path: Path, data: dict[str, Any]) -> None:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    # ------------------------------------------------------------------ management
    def create(
        self,
        tenant: str,
        *,
        person: str,
        teams: list[str] | None = None,
        role: Literal["member", "operator"] = "member",
        sparql: bool | None = None,
        label: str | None = None,
    ) -> tuple[TokenRecord, str]:
        """Create a token; returns ``(record, token)``. The token is not stored and
        cannot be shown again.

        :param sparql: may use the SPARQL endpoint (default: only operators).
        :raises UnknownTenant: when the tenant does not exist.
        :raises InvalidTenantId: for an invalid tenant id.
        :raises InvalidInput: for an empty person or team id, or an unknown role.
        """
        from reckon.api import Principal

        validate_tenant_id(tenant)
        if role not in ("member", "operator"):
            raise InvalidInput(f"role: expected 'member' or 'operator', got {role!r}", field="role")
        if not isinstance(person, str) or not person.strip():
            raise InvalidInput("person: a non-empty person id is required", field="person")
        teams = sorted(set(teams or []))
        if any(not isinstance(t, str) or not t.strip() for t in teams):
            raise InvalidInput("teams: team ids must be non-empty", field="teams")
        Principal(person=person, teams=teams, role=role)  # same checks as the API
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        with self._locked(tenant) as path:
            data = self._read(path)
            tid = secrets.token_hex(6)
            while tid in data["tokens"]:
                tid = secrets.token_hex(6)
            record = TokenRecord(
                id=tid, tenant=tenant, person=person, teams=teams, role=role,
                sparql=(role == "operator") if sparql is None else bool(sparql or role == "operator"),
                label=label, created_at=datetime.now(UTC).replace(microsecond=0),
            )
            data["version"] = _FORMAT_VERSION
            data["tenant"] = tenant
            data["tokens"][tid] = {
                **record.model_dump(mode="json"),
                "kdf": "scrypt", **{k: v for k, v in _SCRYPT.items()},
                "salt": salt.hex(), "hash": _digest(secret, salt).hex(),
            }
            self._write(path, data)
        return record, f"{TOKEN_PREFIX}{tenant}.{tid}.{secret}"

    def list(self, tenant: str) -> list[TokenRecord]:
        """The tenant's live tokens (records only), oldest first.

        :raises UnknownTenant: when the tenant does not exist.
        """
        path = self._dir(tenant) / TOKENS_FILE
        data = self._read(path)
        recs = [self._record(r) for r in data["tokens"].values()]
        return sorted(recs, key=lambda r: (r.created_at, r.id))

    def revoke(self, tenant: str, token_id: str) -> TokenRecord:
        """Delete a token; it stops working at once (in every process).

        :raises InvalidInput: when the tenant has no token with this id.
        :raises UnknownTenant: when the tenant does not exist.
        """
        with self._locked(tenant) as path:
            data = self._read(path)
            raw = data["tokens"].pop(token_id, None)
            if raw is None:
                raise InvalidInput(f"tenant {tenant!r} has no token {token_id!r}", field="token_id")
            self._write(path, data)
        return self._record(raw)

    @staticmethod
    def _record(raw: dict[str, Any]) -> TokenRecord:
        return TokenRecord.model_validate({k: raw[k] for k in TokenRecord.model_fields if k in raw})

    # ------------------------------------------------------------------ verification
    def verify(self, tenant: str, token: str) -> TokenRecord:
        """The record of ``token`` if it is a live token of ``tenant``.

        :raises TokenForbidden: when the token names another tenant.
        :raises TokenError: when it is malformed, unknown, revoked, or ``tenant`` does
            not exist (indistinguishable on purpose).
        """
        t_tenant, tid, secret = parse_token(token)
        if t_tenant != tenant:
            raise TokenForbidden(f"this token is for another tenant, not {tenant!r}")
        try:
            path = tenant_dir(self.data_dir, tenant) / TOKENS_FILE
        except (InvalidTenantId, UnknownTenant):
            raise TokenError("invalid token") from None
        try:
            st = path.stat()
        except FileNotFoundError:
            raise TokenError("invalid token") from None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        key = hashlib.sha256(token.strip().encode("ascii")).digest()
        with self._lock:
            hit = self._cache.get(key)
            miss = self._failed.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        if miss == stamp:  # the same wrong token again: no second scrypt (~90 ms)
            raise TokenError("invalid token")
        try:
            data = self._read(path)
        except (InvalidInput, OSError, ValueError):
            raise TokenError("invalid token") from None
        raw = data["tokens"].get(tid)
        if not isinstance(raw, dict) or raw.get("tenant") != tenant or raw.get("kdf") != "scrypt":
            raise TokenError("invalid token")
        try:
            salt = bytes.fromhex(raw["salt"])
            expected = bytes.fromhex(raw["hash"])
            got = hashlib.scrypt(secret.encode("ascii"), salt=salt, n=int(raw["n"]), r=int(raw["r"]),
                                 p=int(raw["p"]), dklen=len(expected))
        except (KeyError, ValueError, TypeError):
            raise TokenError("invalid token") from None
        if not hmac.compare_digest(got, expected):
            with self._lock:
                if len(self._failed) > 10_000:
                    self._failed.clear()
                self._failed[key] = stamp
            raise TokenError("invalid token")
        record = self._record(raw)
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (stamp, record)
        return record

    def tenant_of(self, token: str) -> str:
        """The tenant a token names (not verified: call :meth:`verify` with it).

        :raises TokenError: when it is not a Reckon token.
        """
        return parse_token(token)[0]
