"""A bundle ranked by the conversation as recorded (``Tenant.context(principal,
conversation_id=...)`` without a ``conversation``): the last turns of that conversation,
as the transcript index embeds them, rank exactly as the same lines passed as the
conversation do; a principal who may not read the conversation gets no ranking by it
(the ordering would tell what it says); and an agent that records each turn has only
the lines not embedded yet encoded at bundle time -- its own reply, recorded after the
previous bundle, was embedded in the background, and the user's new turn, encoded by the
bundle, is not encoded again by the transcript index.

Real stores, the hashing embedder wrapped to record each encode (the model is not
under test)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from reckon import ConflictPending
from reckon.api import Engine, Principal
from reckon.recall import HashingEmbedder

OPS = Principal.operator("ops")
ANN = Principal(person="ann", teams=["growth"])
LEE = Principal(person="lee", teams=["growth"])
T0 = datetime(2026, 3, 2, 9, 15, 0, 412_337, tzinfo=UTC)
LABELS = ("Spring campaign budget is fixed until April", "Newsletter tone is friendly and short",
          "Retargeting on TikTok is paused", "Weekly report goes out Monday at 9",
          "Meta spend cap is $40,000 per month", "Customer refunds need a manager's approval")


class CountingHashing(HashingEmbedder):
    """The hashing embedder, recording the texts of every encode call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [t for c in self.calls for t in c]

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().encode(texts)


def put(tenant, label: str) -> str:  # type: ignore[no-untyped-def]
    fields = dict(kind="fact", scope="company", importance=4, principal=OPS, label=label,
                  content=f"{label} (details)", source="operator")
    try:
        return str(tenant.remember(**fields).id)
    except ConflictPending as e:
        return str(tenant.remember(**fields, conflict_resolution="keep_both", conflict_id=e.conflict_id).id)


@pytest.fixture()
def setup(tmp_path: Path):  # type: ignore[no-untyped-def]
    emb = CountingHashing()
    engine = Engine(tmp_path, embedder=emb, jobs=False)
    t = engine.create_tenant("acme", company_name="Acme Inc.")
    t.add_team("growth")
    t.tick(T0)
    ids = [put(t, label) for label in LABELS]
    t.recall.wait(timeout=60)
    yield t, emb, ids
    engine.close()


def order(bundle) -> list[tuple[str, float | None]]:  # type: ignore[no-untyped-def]
    return [(it.id, it.similarity) for blk in bundle.blocks for it in blk.items]


def test_recorded_turns_rank_as_the_same_lines_passed(setup) -> None:  # type: ignore[no-untyped-def]
    t, _, _ = setup
    said = [("user", "ann", "can we scale the spring campaign budget?"),
            ("assistant", None, "the budget is fixed until April"),
            ("user", "ann", "then what about the newsletter tone?")]
    for role, speaker, text in said:
        t.record_turn("c1", text, principal=ANN if role == "user" else OPS, role=role, speaker=speaker)
    lines = ["ann: can we scale the spring campaign budget?", "assistant: the budget is fixed until April",
             "ann: then what about the newsletter tone?"]
    recorded = t.context(ANN, conversation_id="c1", record_access=False)
    passed = t.context(ANN, lines, conversation_id="c1", record_access=False)
    assert recorded.ranking.startswith("cosine similarity") and order(recorded) == order(passed)
    assert any(s not in (None, 0.0) for _, s in order(recorded))
    # no turns recorded: importance then recency, as without a conversation
    none = t.context(ANN, conversation_id="never-recorded", record_access=False)
    assert none.ranking.startswith("importance") and none.ranking == t.context(ANN, record_access=False).ranking


def test_only_the_last_six_turns_rank(setup) -> None:  # type: ignore[no-untyped-def]
    t, _, _ = setup
    texts = [f"turn {i}: " + LABELS[i % len(LABELS)].lower() for i in range(9)]
    for text in texts:
        t.record_turn("c2", text, principal=ANN, speaker="ann")
    recorded = t.context(ANN, conversation_id="c2", record_access=False)
    passed = t.context(ANN, [f"ann: {x}" for x in texts[-6:]], record_access=False)
    assert order(recorded) == order(passed)
    assert t.transcripts.recent("c2", 6)[0].order == 3 and [x.order for x in t.transcripts.recent("c2", 100)] == list(range(9))


def test_a_principal_who_may_not_read_the_conversation_is_not_ranked_by_it(setup) -> None:  # type: ignore[no-untyped-def]
    t, _, _ = setup
    t.record_turn("private", "the refunds need a manager's approval now", principal=ANN, speaker="ann")
    assert t.context(ANN, conversation_id="private", record_access=False).ranking.startswith("cosine")
    theirs = t.context(LEE, conversation_id="private", record_access=False)  # lee never spoke in it
    assert theirs.ranking.startswith("importance")
    assert t.context(OPS, conversation_id="private", record_access=False).ranking.startswith("cosine")  # operator


def test_an_agent_recording_each_turn_has_only_the_unembedded_line_encoded(setup) -> None:  # type: ignore[no-untyped-def]
    t, emb, _ = setup
    questions = ["what is the meta spend cap?", "and who approves refunds?", "when does the report go out?"]
    replies = ["the cap is $40,000 a month", "a manager approves them", "Mondays at 9"]
    for k, (q, r) in enumerate(zip(questions, replies)):
        t.record_turn("c3", q, principal=ANN, speaker="ann")
        emb.calls.clear()
        b = t.context(ANN, conversation_id="c3", record_access=False)
        assert b.ranking.startswith("cosine")
        # the user's new line only: the earlier lines (this reply's predecessor included)
        # were embedded by the transcript index or by an earlier bundle
        assert emb.texts == [f"ann: {q}"], (k, emb.calls)
        emb.calls.clear()
        t.record_turn("c3", r, principal=OPS, role="assistant")
        assert t.turn_index.wait(timeout=60)
        # the transcript index embedded the reply and never the question again
        assert emb.texts == [f"assistant: {r}"], (k, emb.calls)
    # every line has its vector in the transcript index, each embedded once in all
    ti = t.turn_index.tenant_index
    lines = [f"ann: {q}" for q in questions] + [f"assistant: {r}" for r in replies]
    assert set(ti.stored_vectors(lines)) == set(lines)


def test_a_recorded_turn_keeps_the_bundle_parts_and_a_new_participant_sees_the_conversation(
        setup, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reckon.recall.bundle import TenantRecall

    t, _, _ = setup
    t.record_turn("c4", "we plan the spring launch here", principal=LEE, speaker="lee")
    chat = t.remember(kind="fact", scope="conversation", conversation="c4", importance=5, principal=LEE,
                      label="Spring launch chat", content="This chat plans the spring launch", source="agent_tool")
    before = t.context(ANN, conversation_id="c4", record_access=False)
    assert chat.id not in before.ids()  # ann has not spoken in c4
    built: list[str] = []
    real = TenantRecall._prepare

    def counting(self, view, principal, project, conversation_id):  # type: ignore[no-untyped-def]
        built.append(principal.person)
        return real(self, view, principal, project, conversation_id)

    monkeypatch.setattr(TenantRecall, "_prepare", counting)
    t.record_turn("c4", "the launch is on Monday", principal=LEE, speaker="lee")
    t.record_turn("c4", "noted", principal=OPS, role="assistant")
    again = t.context(LEE, conversation_id="c4", record_access=False)
    assert chat.id in again.ids()
    t.context(LEE, conversation_id="c4", record_access=False)
    # lee's parts were built once for the generation of the turns, then carried: no
    # rebuild for the two recorded turns
    lee_builds = built.count("lee")
    t.record_turn("c4", "and the budget?", principal=LEE, speaker="lee")
    t.context(LEE, conversation_id="c4", record_access=False)
    assert built.count("lee") == lee_builds
    # ann speaks in c4: she takes part now and her bundle holds the conversation's memory
    t.record_turn("c4", "I join the launch planning", principal=ANN, speaker="ann")
    assert "c4" in t.principal_of(ANN).conversations
    now = t.context(ANN, conversation_id="c4", record_access=False)
    assert chat.id in now.ids() and chat.id not in before.ids()
