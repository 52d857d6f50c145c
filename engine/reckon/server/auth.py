"""API tokens per tenant, stored hashed in the tenant's own directory.

A token is ``rkt_<tenant>.<token id>.<secret>``: the tenant id and a 12-hex-digit
token id (public; used to list and revoke) followed by 43 characters of
``secrets.token_urlsafe(32)`` (256 random bits). It is shown once, at creation.

Storage: with the tenant's data (:mod:`reckon.store.tokens`): ``DATA_DIR/tenants/<tenant>/
tokens.json`` (mode 0600) for an embedded tenant, the tenant's private ``tokens`` graph on
its SPARQL server for a remote one -- so every Reckon node serving a tenant accepts the
same tokens. One record per token names its tenant and principal (person, teams, role)
and holds ``scrypt(secret, salt=16 random bytes, n=2**14, r=8, p=1, dklen=32)`` (RFC
7914) -- never the token. There is no token table shared between tenants (DESIGN.md,
"The store": no shared table with a tenant column): a token is looked up only among the
records of the tenant named in the request URL, and its record must name that tenant, so
a token of tenant A can never reach tenant B. Deleting a tenant deletes its tokens with
it; moving it moves them.

Verification compares digests with :func:`hmac.compare_digest`. A successful
verification is cached in memory (keyed by a SHA-256 of the token) until the tokens
file (embedded) or the token's record (remote: read on every request, one SELECT)
changes, so a revocation made by another process or node takes effect on the next request;
so is a failed one (a repeated wrong token costs no second scrypt, ~90 ms). Guessing
secrets of a known token id is slowed by the HTTP server's rate limiter, which charges a
failed verification ten requests (``reckon.server.http.RateLimiter``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from collections.abc import Hashable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reckon._errors import InvalidInput, InvalidTenantId, StoreError, UnknownTenant
from reckon.store import validate_tenant_id
from reckon.store.tokens import TokenRecords

__all__ = [
    "TOKEN_PREFIX",
    "TokenError",
    "TokenForbidden",
    "TokenRecord",
    "TokenStore",
    "parse_token",
]

TOKEN_PREFIX = "rkt_"
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
        self._cache: dict[bytes, tuple[Hashable, TokenRecord]] = {}
        self._failed: dict[bytes, Hashable] = {}  # wrong tokens -> the record's stamp
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ records
    def _records(self, tenant: str) -> TokenRecords:
        """:raises UnknownTenant: when the tenant does not exist where the shard map places it."""
        try:
            recs = TokenRecords.of(self.data_dir, tenant)
            exists = recs.tenant_exists()
        except StoreError as e:
            raise UnknownTenant(f"tenant {tenant!r}: {e}") from e
        if not exists:
            raise UnknownTenant(f"no tenant {tenant!r} in {self.data_dir}")
        return recs

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
        recs = self._records(tenant)
        while True:
            tid = secrets.token_hex(6)
            record = TokenRecord(
                id=tid, tenant=tenant, person=person, teams=teams, role=role,
                sparql=(role == "operator") if sparql is None else bool(sparql or role == "operator"),
                label=label, created_at=datetime.now(UTC).replace(microsecond=0),
            )
            raw = {
                **record.model_dump(mode="json"),
                "kdf": "scrypt", **{k: v for k, v in _SCRYPT.items()},
                "salt": salt.hex(), "hash": _digest(secret, salt).hex(),
            }
            if recs.add(tid, raw):
                break
        return record, f"{TOKEN_PREFIX}{tenant}.{tid}.{secret}"

    def list(self, tenant: str) -> list[TokenRecord]:
        """The tenant's live tokens (records only), oldest first.

        :raises UnknownTenant: when the tenant does not exist.
        """
        recs = [self._record(r) for r in self._records(tenant).all().values()]
        return sorted(recs, key=lambda r: (r.created_at, r.id))

    def revoke(self, tenant: str, token_id: str) -> TokenRecord:
        """Delete a token; it stops working at once (in every process).

        :raises InvalidInput: when the tenant has no token with this id.
        :raises UnknownTenant: when the tenant does not exist.
        """
        raw = self._records(tenant).remove(token_id) if token_id.isalnum() else None
        if raw is None:
            raise InvalidInput(f"tenant {tenant!r} has no token {token_id!r}", field="token_id")
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
            stamp, read = TokenRecords.of(self.data_dir, tenant).lookup(tid)
        except (InvalidTenantId, UnknownTenant, StoreError):
            raise TokenError("invalid token") from None
        if stamp is None:
            raise TokenError("invalid token")
        key = hashlib.sha256(token.strip().encode("ascii")).digest()
        with self._lock:
            hit = self._cache.get(key)
            miss = self._failed.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        if miss == stamp:  # the same wrong token again: no second scrypt (~90 ms)
            raise TokenError("invalid token")
        try:
            raw = read()
        except (StoreError, OSError, ValueError):
            raise TokenError("invalid token") from None
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
