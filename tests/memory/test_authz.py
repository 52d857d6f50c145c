"""Authorization rules of the write path (seed §4)."""

from __future__ import annotations

import pytest

from reckon._errors import NotAuthorized
from reckon.memory import authz
from reckon.memory.models import Principal

ANN = Principal(person="ann", teams=["growth"])
BOB = Principal(person="bob", teams=["growth"])
OPS = Principal.operator(person="olga")


def test_member_creates_own_user_memory():
    authz.check_create(ANN, scope="user", source="agent_tool", owner=None, label="x")
    authz.check_create(ANN, scope="user", source="extraction", owner="ann", label="x")


@pytest.mark.parametrize("scope", ["team", "company"])
def test_member_cannot_create_shared_memory(scope):
    with pytest.raises(NotAuthorized) as ei:
        authz.check_create(ANN, scope=scope, source="agent_tool", owner=None, label="Budget")
    msg = str(ei.value)
    assert "'ann'" in msg and scope in msg and "operator-gated" in msg and "'Budget'" in msg


@pytest.mark.parametrize("source", ["operator", "onboarding", "import"])
def test_human_sources_are_operator_only(source):
    with pytest.raises(NotAuthorized) as ei:
        authz.check_create(ANN, scope="user", source=source, owner=None, label="x")
    assert source in str(ei.value)
    authz.check_create(OPS, scope="company", source=source, owner=None, label="x")


def test_member_cannot_create_for_someone_else():
    with pytest.raises(NotAuthorized) as ei:
        authz.check_create(ANN, scope="user", source="agent_tool", owner="bob", label="x")
    assert "'bob'" in str(ei.value)
    authz.check_create(OPS, scope="user", source="operator", owner="bob", label="x")


def test_update_rules():
    authz.check_update(ANN, memory_id="m1", scope="user", owner="ann")
    with pytest.raises(NotAuthorized, match="owned by 'ann'"):
        authz.check_update(BOB, memory_id="m1", scope="user", owner="ann")
    with pytest.raises(NotAuthorized, match="team-scope"):
        authz.check_update(ANN, memory_id="m2", scope="team", owner=None)
    authz.check_update(OPS, memory_id="m1", scope="user", owner="ann")
    authz.check_update(OPS, memory_id="m3", scope="company", owner=None)


def test_supersede_only_by_owner():
    authz.check_supersede(ANN, memory_id="m1", scope="user", owner="ann")
    with pytest.raises(NotAuthorized, match="do not own"):
        authz.check_supersede(BOB, memory_id="m1", scope="user", owner="ann")
    # an operator does not own a member's personal memory either
    with pytest.raises(NotAuthorized, match="do not own"):
        authz.check_supersede(OPS, memory_id="m1", scope="user", owner="ann")
    with pytest.raises(NotAuthorized, match="operator-gated"):
        authz.check_supersede(ANN, memory_id="m2", scope="company", owner=None)
    authz.check_supersede(OPS, memory_id="m2", scope="company", owner=None)
    assert authz.can_supersede(OPS, scope="team", owner=None)
    assert not authz.can_supersede(ANN, scope="team", owner=None)


def test_restore_and_delete_operator_only():
    for check in (authz.check_restore, authz.check_delete):
        with pytest.raises(NotAuthorized, match="operator-only"):
            check(ANN, memory_id="m1")
        check(OPS, memory_id="m1")
