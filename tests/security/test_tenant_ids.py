"""Tenant ids are checked with re.fullmatch against ^[a-z0-9][a-z0-9_-]{0,62}$ before
any filesystem path is built (DESIGN.md, "The store")."""

from __future__ import annotations

from pathlib import Path

import pytest

from reckon._errors import InvalidTenantId
from reckon.api import Engine
from reckon.store import tenant_dir, validate_tenant_id

BAD_IDS = [
    "",
    "../x",
    "..",
    ".",
    "a/b",
    "a\\b",
    "/abs",
    "Acme",
    "ACME",
    "-lead",
    "_lead",
    "a" * 64,
    "acme\n",
    "acme\r\n",
    "\nacme",
    "ac\x00me",
    "acme ",
    " acme",
    "acmé",
    "аcme",  # Cyrillic a
    "ａｃｍｅ",  # full-width
    "١٢٣",  # Arabic-Indic digits match \d but not [0-9]
    "a.b",
    "a:b",
    "a%2fb",
    "~root",
    "*",
]
GOOD_IDS = ["a", "0", "acme", "acme-01", "acme_eu", "a" * 63, "9lives", "a-_-b"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_tenant_ids_are_refused(bad: str) -> None:
    with pytest.raises(InvalidTenantId):
        validate_tenant_id(bad)


@pytest.mark.parametrize("bad", [None, 1, b"acme", ["acme"], Path("acme")])
def test_non_strings_are_refused(bad: object) -> None:
    with pytest.raises(InvalidTenantId):
        validate_tenant_id(bad)


@pytest.mark.parametrize("good", GOOD_IDS)
def test_good_tenant_ids_pass_unchanged(good: str) -> None:
    assert validate_tenant_id(good) == good
    assert tenant_dir(Path("/data"), good) == Path("/data/tenants") / good


@pytest.mark.parametrize("bad", ["../escape", "a/b", "acme\n", "Acme", ""])
def test_engine_refuses_bad_ids_before_touching_the_filesystem(tmp_path: Path, bad: str) -> None:
    engine = Engine(tmp_path / "data", rules=[])
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for call in (engine.create_tenant, engine.tenant, engine.delete_tenant):
        with pytest.raises(InvalidTenantId):
            call(bad)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert not (tmp_path / "escape").exists()


def test_the_error_message_names_the_rule(tmp_path: Path) -> None:
    with pytest.raises(InvalidTenantId, match=r"\^\[a-z0-9\]\[a-z0-9_-\]\{0,62\}\$"):
        validate_tenant_id("../x")
