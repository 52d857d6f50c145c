"""The recent turns of a conversation and its highest order, kept per conversation and
followed through the commits (``TranscriptService.last_order`` / ``recent`` /
``unprocessed``, which the bundle and the extraction queue read on every turn), against
an independent oracle: a plain model of what was recorded, and the full scan
``Tenant.turns``. Random histories at the public API (hypothesis): appended and
explicitly placed turns (gaps included), re-recorded turns, external ids, a second
engine on the same data directory writing in between (its commits reach this one
through the journal)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reckon import InvalidInput
from reckon.api import Engine, Principal

OPS = Principal.operator("ops")

step = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(["c1", "c2"]), st.booleans()),
    st.tuples(st.just("at"), st.sampled_from(["c1", "c2"]), st.integers(0, 40)),
    st.tuples(st.just("again"), st.sampled_from(["c1", "c2"]), st.integers(0, 40)),
    st.tuples(st.just("ext"), st.sampled_from(["c1", "c2"]), st.integers(0, 3)),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=14), st.integers(1, 8))
def test_recent_and_last_order_follow_every_history(steps: list[tuple[str, str, object]], n: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        a = Engine(Path(d), embedder="hashing", jobs=False)
        t = a.create_tenant("acme", company_name="Acme")
        other = Engine(Path(d), embedder="hashing", jobs=False)
        b = other.tenant("acme")  # another writer
        model: dict[str, dict[int, str]] = {"c1": {}, "c2": {}}
        ext: dict[tuple[str, str], int] = {}
        try:
            for i, (op, conv, arg) in enumerate(steps):
                writer = b if i % 3 == 2 else t
                turns = model[conv]
                text = f"turn {i} of {conv}"
                if op == "append":
                    got = writer.record_turn(conv, text, principal=OPS, speaker="ann")
                    order = max(turns, default=-1) + 1
                    assert got.order == order
                    turns[order] = text
                elif op == "at":
                    order = int(arg)  # type: ignore[call-overload]
                    if order in turns:
                        with pytest.raises(InvalidInput):
                            writer.record_turn(conv, text, principal=OPS, speaker="ann", order=order)
                    else:
                        assert writer.record_turn(conv, text, principal=OPS, speaker="ann", order=order).order == order
                        turns[order] = text
                elif op == "again" and turns:
                    order = sorted(turns)[int(arg) % len(turns)]  # type: ignore[call-overload]
                    same = writer.record_turn(conv, turns[order], principal=OPS, speaker="ann", order=order)
                    assert same.order == order and same.text == turns[order]  # a no-op
                elif op == "ext":
                    key = (conv, f"x{arg}")
                    got = writer.record_turn(conv, text, principal=OPS, speaker="ann", external_id=key[1])
                    if key in ext:
                        assert got.order == ext[key] and got.text == turns[ext[key]]  # already recorded
                    else:
                        order = max(turns, default=-1) + 1
                        assert got.order == order
                        ext[key] = order
                        turns[order] = text
                for c, m in model.items():
                    orders = sorted(m)
                    assert t.transcripts.last_order(c) == (orders[-1] if orders else -1)
                    assert [x.order for x in t.transcripts.recent(c, n)] == orders[-n:]
                    assert [x.text for x in t.transcripts.recent(c, n)] == [m[o] for o in orders[-n:]]
                    assert [x.order for x in t.turns(c)] == orders  # the full scan agrees
                    assert t.transcripts.unprocessed(c) == (orders[-1] + 1 if orders else 0)
        finally:
            a.close()
            other.close()  # its turn index's thread stopped before the directory is removed


def test_a_long_conversation_reads_only_its_last_turns(tmp_path: Path) -> None:
    t = Engine(tmp_path, embedder="hashing", jobs=False).create_tenant("acme", company_name="Acme")
    t.record_turns([dict(conversation="long", text=f"line {i}", speaker="ann") for i in range(300)], principal=OPS)
    t.record_turn("long", "far ahead", principal=OPS, speaker="ann", order=10_000)  # a gap of 9,700
    assert t.transcripts.last_order("long") == 10_000
    got = t.transcripts.recent("long", 3)
    assert [x.order for x in got] == [298, 299, 10_000] and got[-1].text == "far ahead"
    assert t.transcripts.recent("never", 3) == [] and t.transcripts.last_order("never") == -1
