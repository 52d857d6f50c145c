"""The event graph built from LoCoMo conversations (``../shared/data/locomo/``): each
session an episode on the conversation's timeline at the session's date-time, each event
of LoCoMo's ``event_summary`` an event of its session mentioning the speaker it is filed
under (and the other speaker when the text names them). Temporal order, next-links and
entity links are checked against an oracle computed from the data alone, for every
conversation of the file (held-back inputs of the same kind)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from itertools import combinations

import pytest

from reckon import InvalidInput
from tests.conftest import shared_path

EV = "https://reckon.dev/ns/events#"


def _conversations() -> list[dict]:
    return json.loads(shared_path("data", "locomo", "locomo_dev.json").read_text(encoding="utf-8"))


def _when(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" (no zone given: taken as UTC)."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def build(sample: dict, *, keep_empty: bool = False) -> tuple[list[dict], dict]:
    """The events to record and the oracle: {id: (time, kind, session, mentioned speakers)}.
    LoCoMo has an empty event text (conv-41 session 19): skipped unless ``keep_empty``."""
    sid, conv = sample["sample_id"], sample["conversation"]
    speakers = [conv["speaker_a"], conv["speaker_b"]]
    sessions = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    items: list[dict] = []
    oracle: dict[str, tuple[datetime, str, int, frozenset[str]]] = {}
    for i in sessions:
        at = _when(conv[f"session_{i}_date_time"])
        ep = f"{sid}-s{i}"
        items.append({"id": ep, "kind": "episode", "label": f"{sid} session {i}", "at": at, "timeline": sid,
                      "mentions": [{"label": s, "type": "person"} for s in speakers]})
        oracle[ep] = (at, "episode", i, frozenset(speakers))
        summary = sample["event_summary"].get(f"events_session_{i}", {})
        k = 0
        for speaker in speakers:
            for text in summary.get(speaker, []):
                if not text.strip() and not keep_empty:
                    continue
                named = {speaker} | {s for s in speakers if re.search(rf"\b{re.escape(s)}\b", text)}
                eid = f"{ep}-e{k}"
                k += 1
                items.append({"id": eid, "label": text, "at": at, "timeline": sid, "episode": ep,
                              "mentions": [(s.upper() if j % 2 else f"  {s} ", "person")  # dedup: case, spaces
                                           for j, s in enumerate(sorted(named))]})
                oracle[eid] = (at, "event", i, frozenset(named))
    return items, oracle


@pytest.fixture(scope="module")
def samples():
    return _conversations()


@pytest.mark.parametrize("index", range(5))
def test_event_graph_of_a_locomo_conversation(engine, samples, index):
    sample = samples[index]
    sid = sample["sample_id"]
    items, oracle = build(sample)
    t = engine.create_tenant(f"locomo-{sid}")
    g = t.events
    raw, _ = build(sample, keep_empty=True)
    if len(raw) != len(items):  # the data's empty event: the whole batch is refused, nothing written
        dump = t.dump()
        with pytest.raises(InvalidInput) as e:
            g.record(raw)
        assert re.fullmatch(r"events\[\d+\]\.label", e.value.field) and t.dump() == dump
    recorded = g.record(items)
    assert [e.id for e in recorded] == [i["id"] for i in items]

    # temporal order: the timeline is sorted by the sessions' date-times
    got = g.timeline(sid)
    assert [e.id for e in got] == sorted(oracle, key=lambda x: (oracle[x][0], x))
    assert [e.at for e in got] == sorted(o[0] for o in oracle.values())

    # ev:before holds exactly for the pairs whose times are strictly ordered
    rows = t.sparql(f"SELECT ?a ?b WHERE {{ GRAPH <urn:reckon:graph:inferred> {{ ?a <{EV}before> ?b }} }}")
    before = {(g._id_of(r["a"].value), g._id_of(r["b"].value)) for r in rows}
    expected = {(x, y) for x, y in combinations(oracle, 2) if oracle[x][0] < oracle[y][0]}
    expected |= {(y, x) for x, y in combinations(oracle, 2) if oracle[y][0] < oracle[x][0]}
    assert before == expected and len(before) > 0

    # ev:next from each session's episode: the nodes of the next later date-time, nothing else
    times = sorted({o[0] for o in oracle.values()})
    for ep in (x for x in oracle if oracle[x][1] == "episode"):
        later = [tt for tt in times if tt > oracle[ep][0]]
        want = {x for x in oracle if later and oracle[x][0] == later[0]}
        nxt = {r.node.id for r in g.related(ep, edge_types=["temporal"]) if r.edge == "next"}
        assert nxt == want, (ep, nxt ^ want)

    # entities: one node per speaker (deduplicated by label + type across sessions and spellings)
    speakers = {sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]}
    people = g.entities("person")
    assert sorted(e.label for e in people) == sorted(speakers) and len(people) == 2
    for person in speakers:
        linked = {r.node.id for r in g.related((person, "person"), edge_types=["entity"])}
        assert linked == {x for x, o in oracle.items() if person in o[3]}, person
        assert g.entity(person.lower(), "person").label == person

    # episode links: an event's siblings are the other events of its session
    some = next((x for x in oracle if oracle[x][1] == "event"), None)
    if some is not None:
        sib = {r.node.id for r in g.related(some, depth=2, edge_types=["episode"])}
        session = oracle[some][2]
        assert sib == {x for x, o in oracle.items() if o[2] == session and x != some}

    # Mermaid: the first session and what follows it
    first = f"{sid}-s1"
    text = g.mermaid(first, edge_types=["temporal", "episode"])
    assert text.startswith("flowchart LR\n") and f'[["{sid} session 1"]]' in text
    drawn = {first} | {r.node.id for r in g.related(first, edge_types=["temporal", "episode"])}

    def next_time(x: str) -> datetime | None:
        later = [tt for tt in times if tt > oracle[x][0]]
        return later[0] if later else None

    want_next = {(x, y) for x in drawn for y in drawn if oracle[y][0] == next_time(x)}
    assert text.count("-->|next|") == len(want_next) > 0
    assert text.count("-->|episode|") == sum(1 for x in drawn if oracle[x][1] == "event"
                                             and f"{sid}-s{oracle[x][2]}" in drawn)
