"""Pydantic models of the write path: field errors, defaults, three-state patches (seed §3, §5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from reckon._errors import InvalidInput
from reckon.memory.models import (
    MemoryPatch,
    Principal,
    default_confidence,
    normalise_label,
    parse_input,
    parse_patch,
)

GOOD = dict(kind="fact", scope="user", importance=3, source="agent_tool", label="Likes bullet points",
            content="Prefers answers as bullet lists")


def test_valid_input_parses_with_defaults():
    m = parse_input(GOOD)
    assert m.kind == "fact" and m.importance == 3
    assert m.properties == {} and m.subclass is None and m.teams is None
    assert m.resolved_confidence() == 0.9


@pytest.mark.parametrize(
    ("source", "expected"),
    [("operator", 1.0), ("onboarding", 1.0), ("import", 1.0), ("agent_tool", 0.9), ("extraction", 0.7)],
)
def test_default_confidence_per_source(source, expected):
    assert default_confidence(source) == expected
    assert parse_input({**GOOD, "source": source}).resolved_confidence() == expected


def test_explicit_confidence_wins():
    assert parse_input({**GOOD, "confidence": 0.42}).resolved_confidence() == 0.42


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "opinion"}, "kind"),
        ({"scope": "galaxy"}, "scope"),
        ({"importance": 0}, "importance"),
        ({"importance": 6}, "importance"),
        ({"importance": 2.5}, "importance"),
        ({"importance": True}, "importance"),
        ({"source": "rumour"}, "source"),
        ({"label": ""}, "label"),
        ({"label": "   "}, "label"),
        ({"content": ""}, "content"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": -0.1}, "confidence"),
        ({"colour": "red"}, "colour"),
        ({"teams": [""]}, "teams"),
        ({"owner": ""}, "owner"),
        ({"expires_at": "not a date"}, "expires_at"),
    ],
)
def test_bad_input_names_field(change, field):
    with pytest.raises(InvalidInput) as ei:
        parse_input({**GOOD, **change})
    assert ei.value.field == field
    assert field in str(ei.value)


def test_missing_required_field_is_named():
    data = dict(GOOD)
    del data["source"]
    with pytest.raises(InvalidInput) as ei:
        parse_input(data)
    assert ei.value.field == "source"


def test_company_memory_cannot_name_teams_or_owner():
    with pytest.raises(InvalidInput) as ei:
        parse_input({**GOOD, "scope": "company", "teams": ["growth"]})
    assert ei.value.field == "teams"
    with pytest.raises(InvalidInput) as ei:
        parse_input({**GOOD, "scope": "team", "teams": ["growth"], "owner": "ann"})
    assert ei.value.field == "owner"


def test_naive_expiry_is_refused_and_teams_are_sorted_unique():
    with pytest.raises(InvalidInput, match="no time zone") as ei:  # never guessed as UTC
        parse_input({**GOOD, "expires_at": datetime(2027, 1, 1, 12)})
    assert ei.value.field == "expires_at"
    with pytest.raises(InvalidInput, match="no time zone"):
        parse_input({**GOOD, "expires_at": "2027-01-01T12:00:00"})
    m = parse_input({**GOOD, "scope": "team", "teams": ["b", "a", "b"],
                     "expires_at": datetime(2027, 1, 1, 12, tzinfo=UTC)})
    assert m.expires_at == datetime(2027, 1, 1, 12, tzinfo=UTC)
    assert m.teams == ["a", "b"]
    aware = datetime(2027, 1, 1, 14, tzinfo=timezone(timedelta(hours=2)))
    assert parse_input({**GOOD, "expires_at": aware}).expires_at == datetime(2027, 1, 1, 12, tzinfo=UTC)


def test_normalise_label():
    assert normalise_label("  Keep ROAS\t above 3 ") == normalise_label("keep roas above 3")
    assert normalise_label("Keep ROAS above 3") != normalise_label("Keep ROAS above 4")
    assert normalise_label("ＲＯＡＳ") == "roas"  # NFKC full-width


# --- three-state patches ---------------------------------------------------------------

def test_patch_absent_fields_are_not_given():
    p = parse_patch({"label": "new"})
    assert p.given() == {"label": "new"}
    assert "content" not in p.model_fields_set


def test_patch_none_removes_optional_fields():
    p = parse_patch({"expires_at": None, "teams": None})
    assert p.given() == {"expires_at": None, "teams": None}


def test_patch_property_keys_are_three_state():
    p = parse_patch({"properties": {"amount": None, "platform": "meta"}})
    assert p.given() == {"properties": {"amount": None, "platform": "meta"}}


@pytest.mark.parametrize("field", ["kind", "importance", "label", "content", "confidence"])
def test_patch_cannot_remove_required_field(field):
    with pytest.raises(InvalidInput) as ei:
        parse_patch({field: None})
    assert ei.value.field == field
    assert "required" in str(ei.value)


@pytest.mark.parametrize("field", ["scope", "source", "owner", "subclass", "id"])
def test_patch_refuses_immutable_fields(field):
    with pytest.raises(InvalidInput) as ei:
        parse_patch({field: "x"})
    assert ei.value.field == field
    assert "supersede" in str(ei.value)


def test_patch_refuses_unknown_and_invalid_values():
    with pytest.raises(InvalidInput) as ei:
        parse_patch({"colour": "red"})
    assert ei.value.field == "colour"
    with pytest.raises(InvalidInput) as ei:
        parse_patch({"importance": 9})
    assert ei.value.field == "importance"


def test_patch_model_direct():
    assert MemoryPatch().given() == {}


def test_principal():
    p = Principal(person="ann", teams=["growth"])
    assert p.role == "member" and not p.is_operator
    op = Principal.operator()
    assert op.person == "ops" and op.is_operator
    with pytest.raises(ValueError):
        Principal(person="ann", role="admin")
