"""Regression: a missing or unknown argument to a Tenant call raised a bare TypeError;
every public call raises a ReckonError (here InvalidInput naming the argument)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reckon import InvalidInput


@pytest.fixture()
def tenant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    from reckon import Engine

    return Engine(tmp_path).create_tenant("acme")


def test_remember_without_principal_names_it(tenant) -> None:  # type: ignore[no-untyped-def]
    before = tenant.dump()
    with pytest.raises(InvalidInput) as ei:
        tenant.remember(kind="fact", scope="user", importance=3, source="agent_tool", label="x", content="y")
    assert ei.value.field == "principal"
    assert tenant.dump() == before


def test_search_with_unknown_option_names_it(tenant) -> None:  # type: ignore[no-untyped-def]
    from reckon import Principal

    with pytest.raises(InvalidInput) as ei:
        tenant.search("x", principal=Principal(person="p"), bogus=1)
    assert ei.value.field == "bogus"
