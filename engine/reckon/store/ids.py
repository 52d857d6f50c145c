"""Tenant ids and the on-disk layout of a tenant.

Layout (DESIGN.md, "The store")::

    DATA_DIR/tenants/<id>/
        store/        the Oxigraph (RocksDB) store
        lock          fcntl.flock target serializing writers across processes
        generation    hint: last committed write generation (the store holds the truth)
        meta.json     {"format_version": 1, "tenant_id": ..., "created_at": ...,
                       "incarnation": 32 hex digits, new for every create / import}
        recall/       the recall index (written by reckon.recall)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from reckon._errors import InvalidTenantId

__all__ = ["FORMAT_VERSION", "TENANT_ID_PATTERN", "tenant_dir", "validate_tenant_id"]

FORMAT_VERSION = 1
TENANT_ID_PATTERN = r"[a-z0-9][a-z0-9_-]{0,62}"
_TENANT_ID = re.compile(TENANT_ID_PATTERN)


def validate_tenant_id(tenant_id: object) -> str:
    """Return ``tenant_id`` unchanged when it matches ``^[a-z0-9][a-z0-9_-]{0,62}$``.

    The whole string must match (``re.fullmatch``: a trailing newline, NUL, ``/``,
    ``..``, upper case, non-ASCII letters and 64+ characters are all refused). Called
    before any filesystem path is built from the id.

    :raises InvalidTenantId: when ``tenant_id`` is not a ``str`` or does not match.

    >>> validate_tenant_id("acme-01")
    'acme-01'
    """
    if type(tenant_id) is not str or _TENANT_ID.fullmatch(tenant_id) is None:
        raise InvalidTenantId(
            f"invalid tenant id {tenant_id!r}: expected 1-63 characters matching "
            "^[a-z0-9][a-z0-9_-]{0,62}$ (lower-case ASCII letters, digits, '_' and '-', "
            "not starting with '_' or '-')"
        )
    return tenant_id


def tenant_dir(data_dir: Path, tenant_id: str) -> Path:
    """``data_dir/tenants/<tenant_id>`` after validating the id, never through a
    symbolic link: ``tenants/evil -> tenants/victim`` does not open ``victim``.

    :raises InvalidTenantId: when the id is invalid.
    :raises UnknownTenant: when ``tenants/<tenant_id>`` is a symbolic link (or not a
        directory).
    """
    from reckon._errors import UnknownTenant

    path = Path(data_dir) / "tenants" / validate_tenant_id(tenant_id)
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        raise UnknownTenant(
            f"no tenant {tenant_id!r}: {path} is a symbolic link or not a directory "
            "(tenant directories are never reached through links)"
        )
    return path
