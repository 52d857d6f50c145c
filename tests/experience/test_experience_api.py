"""Experience records and strategy cards through the public API (``Tenant.experience``;
seed 000 Evolving Memory, seed 001 procedural memory): recording, one strategy per
approach text, promotion by rule at the tenant setting (default 5), demotion when a
success is deleted, refusals that change nothing, and retrieval by task similarity with
the real all-MiniLM-L6-v2 on paraphrased tasks."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reckon import InvalidInput, NotAuthorized, Principal, UnknownMemory
from reckon.recall.embed import minilm_available

AGENT, OTHER, OPS = Principal(person="agent-1"), Principal(person="agent-2"), Principal.operator("dana")
BISECT = "Bisect the failing commit range, then pin the flaky dependency"


@pytest.fixture(scope="module")
def tenant(engine):
    t = engine.create_tenant("xp")
    t.tick(datetime(2026, 3, 1, 12, 0, 0, 654321, tzinfo=timezone(timedelta(hours=-8))))
    return t


def test_record_and_read(tenant):
    x = tenant.experience
    e = x.record("Fix the flaky checkout test in CI", "success", principal=AGENT, worked="bisecting found the commit",
                 failed="re-running the job", tools=["pytest", "git", "git"], strategy=BISECT, session="run-7")
    assert (e.outcome, e.tools, e.approach, e.author, e.session) == ("success", ("git", "pytest"), BISECT, "agent-1",
                                                                      "run-7")
    assert e.at == tenant.clock()                                   # the in-graph clock
    assert x.get(e.id) == e and x.experiences(outcome="success") == [e]
    rows = tenant.sparql("SELECT ?t WHERE { GRAPH <urn:reckon:graph:experience> { ?e "
                         "<https://reckon.dev/ns/experience#task> ?t } }")
    assert [r["t"].value for r in rows] == ["Fix the flaky checkout test in CI"]


def test_one_strategy_per_approach_and_promotion_at_the_setting(tenant):
    x = tenant.experience
    spellings = [BISECT, BISECT.upper(), "  " + BISECT.replace(" ", "   "), BISECT]
    for i, s in enumerate(spellings):                               # 1 earlier + 4 = 5 successes
        x.record(f"Fix flaky test #{i}", "success", principal=AGENT if i % 2 else OTHER, strategy=s, tools=["git"])
        card = next(c for c in x.strategies() if c.approach == BISECT)
        assert (card.success_count, card.promoted) == (i + 2, i + 2 >= 5)  # promoted at 5 (seed 000)
    x.record("Fix flaky test #9", "failure", principal=AGENT, strategy=BISECT)
    x.record("Fix flaky test #10", "partial", principal=AGENT, strategy=BISECT)
    [card] = x.strategies(promoted=True)
    assert card.success_count == 5 and card.tools[0] == "git" and len(card.tasks) == 5
    assert len({e.strategy for e in x.experiences()}) == 1          # one strategy node for every spelling
    tenant.set_setting("strategy_promotion_threshold", 6)           # settings are data: re-derived
    assert x.strategies(promoted=True) == []
    tenant.set_setting("strategy_promotion_threshold", 5)
    assert len(x.strategies(promoted=True)) == 1
    last = x.experiences(outcome="success")[-1]
    with pytest.raises(NotAuthorized):
        x.delete(last.id, principal=Principal(person="mallory"))
    x.delete(last.id, principal=OPS)                                # a success goes: demoted
    assert x.strategies(promoted=True) == [] and x.strategies()[0].success_count == 4
    with pytest.raises(UnknownMemory):
        x.get(last.id)


@pytest.mark.parametrize("kwargs,field", [
    ({"task": "", "outcome": "success"}, "task"),
    ({"task": "x", "outcome": "won"}, "outcome"),
    ({"task": "x", "outcome": "success", "tools": "git"}, "tools"),
    ({"task": "x", "outcome": "success", "tools": [""]}, "tools"),
    ({"task": "x", "outcome": "success", "strategy": "   "}, "strategy"),
    ({"task": "x", "outcome": "success", "at": datetime(2026, 1, 1)}, "at"),
    ({"task": "x\x00", "outcome": "success"}, "task"),
])
def test_bad_records_are_refused_and_change_nothing(tenant, kwargs, field):
    dump = tenant.dump()
    with pytest.raises(InvalidInput) as e:
        tenant.experience.record(principal=AGENT, **kwargs)
    assert e.value.field == field and tenant.dump() == dump


def test_shape_limits_are_enforced(tenant):
    from reckon import ShapeViolation

    dump = tenant.dump()
    with pytest.raises(ShapeViolation):
        tenant.experience.record("x" * 2001, "success", principal=AGENT)
    with pytest.raises(ShapeViolation):
        tenant.experience.record("x", "success", principal=AGENT, tools=[f"t{i}" for i in range(51)])
    assert tenant.dump() == dump


TASKS = {
    "flaky": ("Fix the intermittently failing checkout test in the CI pipeline", "Bisect the commit range"),
    "report": ("Write the quarterly marketing performance report for the board", "Start from last quarter's deck"),
    "migrate": ("Migrate the Postgres database schema to the new billing tables", "Dry-run the migration on a copy"),
    "invoice": ("Chase the customer whose invoice is sixty days overdue", "Call before emailing"),
    "hire": ("Screen applicants for the senior data engineer opening", "Use the take-home rubric"),
}
QUERIES = [  # paraphrases with few shared words -> the task they are about
    ("a unit test sometimes breaks on the build server", "flaky"),
    ("prepare the Q3 ad results summary for directors", "report"),
    ("change the SQL tables for payments", "migrate"),
    ("a client has not paid us for two months", "invoice"),
    ("interview candidates for an analytics engineering role", "hire"),
]


@pytest.mark.skipif(not minilm_available(), reason="all-MiniLM-L6-v2 is not installed")
def test_retrieval_by_task_similarity_with_minilm(engine):
    import os

    from reckon.experience.service import ExperienceService

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t = engine.create_tenant("xp-rank")
    x = ExperienceService(t.store, t.memory, embedder="minilm")  # the real model: ranking matters here
    ids = {}
    for key, (task, approach) in TASKS.items():
        for i in range(5):
            e = x.record(task if i == 0 else f"{task} (run {i})", "success", principal=AGENT, strategy=approach)
        ids[key] = e.strategy
    top1 = 0
    for query, want in QUERIES:
        hits = x.similar(query, k=4)
        assert len(hits) == 4 and hits[0].score >= hits[-1].score
        top1 += TASKS[want][0] in hits[0].item.task
        cards = x.recommend(query)
        assert cards[0].item.id == ids[want], (query, [c.item.approach for c in cards])
    assert top1 == len(QUERIES)
    assert len(x.recommend("anything", k=2)) == 2 and len(x.strategies(promoted=True)) == 5


def test_keyword_fallback_when_the_embedder_fails(engine):
    from reckon.experience.service import ExperienceService
    from reckon.recall.embed import EmbeddingUnavailable

    class Broken:
        dim = 384

        def encode(self, texts):
            raise EmbeddingUnavailable("no model")

    t = engine.create_tenant("xp-broken")
    x = ExperienceService(t.store, t.memory, embedder=Broken())
    x.record("rotate the TLS certificate of the CDN", "success", principal=AGENT)
    x.record("write release notes", "success", principal=AGENT)
    hits = x.similar("the CDN certificate expired")
    assert hits[0].item.task == "rotate the TLS certificate of the CDN" and 0 < hits[0].score <= 1
    assert hits[1].score == 0.0
