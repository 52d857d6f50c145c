"""The context bundle and on-demand search through the Tenant API (seed 003 §6, §8;
seed 002 "pre-turn retrieval under a character budget with omitted counts").

Worked example (seed §7): a Critical Meta budget cap set in March is in a different
user's bundle three weeks later with ``near_limit`` derived from the overnight spend,
although the new conversation shares no word with it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from reckon._errors import ConflictPending, InvalidInput
from reckon.api import Engine, Principal
from reckon.memory.conflicts import tokens
from reckon.recall.bundle import block_label

DANA = Principal.operator(person="dana", teams=["growth"])
ANN = Principal(person="ann", teams=["growth"])
LEE = Principal(person="lee", teams=["sales"])
T0 = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    old = os.environ.get("RECKON_EMBEDDER")
    os.environ["RECKON_EMBEDDER"] = "hashing"  # deterministic, no model download in unit tests
    yield Engine(tmp_path_factory.mktemp("bundle"))
    if old is None:
        os.environ.pop("RECKON_EMBEDDER", None)
    else:
        os.environ["RECKON_EMBEDDER"] = old


_n = iter(range(10_000))


@pytest.fixture
def tenant(engine):
    t = engine.create_tenant(f"b{next(_n)}", company_name="Acme Inc.")
    t.add_team("growth")
    t.add_team("sales")
    t.tick(T0)
    return t


def put(tenant, fields):
    """``remember``, confirming ``keep_both`` when the lexical judge flags look-alike labels
    (the test memories are deliberately similar)."""
    try:
        return tenant.remember(**fields)
    except ConflictPending as e:
        return tenant.remember(**fields, conflict_resolution="keep_both", conflict_id=e.conflict_id)


def cap(**kw):
    d = dict(kind="objective", scope="company", importance=5, source="agent_tool", principal=DANA,
             label="Meta monthly spend cap", content="Don't let Meta spend go over $40k this month.",
             subclass="BudgetConstraintMemory",
             properties={"platform": "meta", "amount": 40000, "currency": "USD", "period": "monthly"})
    d.update(kw)
    return d


def fact(label, importance, *, scope="company", principal=DANA, content=None, **kw):
    return dict(kind="fact", scope=scope, importance=importance, source="operator" if principal.is_operator
                else "agent_tool", principal=principal, label=label, content=content or label, **kw)


def roas_target(value, *, scope="company", principal=DANA, importance=5, label="ROAS target", content=None):
    return dict(kind="objective", scope=scope, importance=importance,
                source="operator" if principal.is_operator else "agent_tool", principal=principal,
                label=label, content=content or f"Keep ROAS at or above {value}",
                subclass="PerformanceTargetMemory", properties={"metric": "ROAS", "targetValue": value})


# ---------------------------------------------------------------------------------------
# seed §7 worked example
# ---------------------------------------------------------------------------------------


def test_meta_cap_is_in_a_new_conversation_with_near_limit_although_no_word_matches(tenant):
    m = put(tenant, cap())
    tenant.tick(T0 + timedelta(days=21))
    tenant.set_spend("meta", 34000)  # the overnight refresh
    question = "can we scale the spring campaign?"
    text_of_memory = f"{m.label} {m.content}"
    assert not set(tokens(question)) & set(tokens(text_of_memory))  # nothing lexical to retrieve it by

    b = tenant.context(LEE, conversation=[question])
    item = b.item(m.id)
    assert item.importance_name == "Critical" and item.scope == "company" and item.author == "dana"
    assert item.status["budgetStatus"] == "near_limit"
    assert item.status_text == "near_limit — 85 % ($34,000 of $40,000 monthly)"
    text = b.render()
    assert f"[{m.id}] Meta monthly spend cap" in text
    assert "near_limit — 85 % ($34,000 of $40,000 monthly)" in text and "set by dana" in text
    assert b.blocks[0].label == "Budget constraints"
    # the header tells the agent what is preloaded and what must be searched
    assert "Critical and High" in text and "`search`" in text and "Medium and Low" in text


def test_status_follows_the_spend_on_the_next_read_no_cache(tenant):
    m = put(tenant, cap())
    tenant.set_spend("meta", 20000)
    assert tenant.context(ANN).item(m.id).status_text.startswith("within_budget — 50 %")
    tenant.set_spend("meta", 41000)
    assert tenant.context(ANN).item(m.id).status_text.startswith("over_budget — 102.5 %")


def test_target_status_inline_with_direction(tenant):
    m = put(tenant, roas_target(3.0))
    tenant.set_kpi("ROAS", 2.5)
    b = tenant.context(ANN)
    assert b.item(m.id).status_text == "below — ROAS 2.5 vs target 3.0 (higher is better)"
    assert any(x.kind == "kpi" and x.text.startswith("KPI ROAS = 2.5") for x in b.business)
    assert "## Live business data" in b.render()


def test_business_lines_from_the_live_context(tenant):
    tenant.connect_account("meta", "1234", "Acme Meta")
    tenant.set_subscription("growth", seats=10)
    b = tenant.context(ANN)
    texts = [x.text for x in b.business]
    assert "Connected account: meta 1234 (Acme Meta)" in texts
    assert "Subscription: plan growth, active, 10 seats" in texts


# ---------------------------------------------------------------------------------------
# tiers, lifecycle, visibility
# ---------------------------------------------------------------------------------------


def test_importance_tiers_bundle_vs_search(tenant):
    ids = {i: put(tenant, fact(f"Walrus harbour rule tier {i}", i, content=f"walrus harbour tier{i}")).id
           for i in range(1, 6)}
    b = tenant.context(ANN, "anything at all")
    shown = set(b.ids())
    assert shown == {ids[4], ids[5]}
    assert {it.importance_name for it in b.items()} == {"High", "Critical"}
    found = {h.memory.id for h in tenant.search("walrus harbour", principal=ANN)}
    assert found == {ids[2], ids[3]}  # the long tail, by default
    found_all = {h.memory.id for h in tenant.search("walrus harbour", principal=ANN, importance="all")}
    assert found_all == {ids[2], ids[3], ids[4], ids[5]}  # never the Disabled one
    assert ids[1] not in {h.memory.id for h in tenant.search("walrus harbour tier1", principal=ANN,
                                                             importance=(1, 5))}


def test_superseded_and_expired_memories_never_appear(tenant):
    old = put(tenant, fact("Quarterly planning cadence", 5, content="Plan every quarter on the 1st"))
    new = tenant.supersede(old.id, dict(kind="fact", scope="company", importance=5, source="operator",
                                        label="Monthly planning cadence", content="Plan every month on the 1st"),
                           principal=DANA)
    exp = put(tenant, fact("Spring promo code live", 4, content="Promo code SPRING24 works",
                                 expires_at=T0 + timedelta(days=10)))
    low_old = put(tenant, fact("Old promo wording", 3, content="promo wording draft"))
    tenant.supersede(low_old.id, dict(kind="fact", scope="company", importance=3, source="operator",
                                      label="New promo wording", content="promo wording final"), principal=DANA)
    assert exp.id in tenant.context(ANN).ids()
    tenant.tick(T0 + timedelta(days=11))
    b = tenant.context(ANN, "planning promo code")
    assert new.id in b.ids()
    assert old.id not in b.ids() and exp.id not in b.ids()
    hits = {h.memory.id for h in tenant.search("promo wording planning cadence code", principal=ANN,
                                               importance="all", k=20)}
    assert old.id not in hits and exp.id not in hits and low_old.id not in hits
    assert new.id in hits


def test_other_peoples_and_other_teams_memories_are_not_visible(tenant):
    mine = put(tenant, fact("Ann likes weekly digests", 4, scope="user", principal=ANN))
    theirs = put(tenant, fact("Lee likes daily digests", 4, scope="user", principal=LEE))
    growth = put(tenant, fact("Growth team reviews on Mondays", 4, scope="team", principal=DANA,
                                    teams=["growth"]))
    sales = put(tenant, fact("Sales team reviews on Fridays", 4, scope="team",
                                   principal=Principal.operator(person="olga", teams=["sales"]), teams=["sales"]))
    ids = set(tenant.context(ANN).ids())
    assert mine.id in ids and growth.id in ids
    assert theirs.id not in ids and sales.id not in ids
    hits = {h.memory.id for h in tenant.search("digests reviews", principal=ANN, importance="all")}
    assert hits == {mine.id, growth.id}


def test_low_confidence_personal_memory_is_not_preloaded(tenant):
    sure = put(tenant, fact("Ann works from Lisbon", 4, scope="user", principal=ANN, confidence=0.9))
    unsure = put(tenant, fact("Ann may prefer video calls", 4, scope="user", principal=ANN, confidence=0.3))
    ids = tenant.context(ANN).ids()
    assert sure.id in ids and unsure.id not in ids


def test_written_in_one_conversation_visible_in_the_next(tenant):
    assert tenant.context(ANN).ids() == []
    m = put(tenant, fact("Never run ads on Sundays", 5))
    assert tenant.context(LEE).ids() == [m.id]


# ---------------------------------------------------------------------------------------
# precedence and conflicts
# ---------------------------------------------------------------------------------------


def test_personal_target_overrides_company_target_and_conflict_is_flagged(tenant):
    company = put(tenant, roas_target(3.0))
    mine = put(tenant, roas_target(2.0, scope="user", principal=ANN, importance=4, label="My ROAS target",
                                         content="For my campaigns ROAS 2.0 is fine"))
    tenant.set_kpi("ROAS", 2.5)
    b = tenant.context(ANN)
    assert [(c.authoritative, c.overridden) for c in b.conflicts] == [(mine.id, company.id)]
    c = b.conflicts[0]
    assert c.kind == "accidental" and "metric=ROAS" in c.key
    assert b.item(company.id).overridden_by == mine.id and b.item(mine.id).overrides == [company.id]
    assert b.item(mine.id).status_text.startswith("met — ROAS 2.5 vs target 2.0")
    text = b.render()
    assert f"OVERRIDDEN by [{mine.id}]" in text and "ACCIDENTAL?" in text
    block = next(x for x in b.blocks if x.label == "Performance targets")
    assert [i.id for i in block.items] == [mine.id, company.id]  # authoritative first
    # someone else sees only the company target, with no conflict
    other = tenant.context(LEE)
    assert other.conflicts == [] and company.id in other.ids() and mine.id not in other.ids()


def test_deliberate_override_by_wording(tenant):
    company = put(tenant, roas_target(3.0))
    mine = put(tenant, roas_target(2.0, scope="user", principal=ANN, importance=4, label="My ROAS target",
                                         content="Override the company ROAS goal: 2.0 is fine for my tests"))
    (c,) = tenant.context(ANN).conflicts
    assert (c.authoritative, c.overridden, c.kind) == (mine.id, company.id, "deliberate")
    assert "deliberate override" in tenant.context(ANN).render()


def test_plain_memories_conflict_by_text_across_scopes(tenant):
    """If a team memory states another weekday for the company's report day, then the
    tenant's conflict judge (the default ContradictionJudge: "value friday/monday") makes
    the team memory authoritative; an unrelated memory and a related one that does not
    contradict (similar words only) are not overridden."""
    company = put(tenant, fact("Reports go out on Friday", 4,
                                     content="Weekly performance reports go out on Friday"))
    team = put(tenant, fact("Reports go out on Monday", 4, scope="team", teams=["growth"],
                                  content="Weekly performance reports go out on Monday"))
    unrelated = put(tenant, fact("Brand colour is teal", 4, content="Use teal as the brand colour"))
    related = put(tenant, fact("Weekly performance reports by platform", 4, scope="team", teams=["growth"],
                                     content="Weekly performance reports are split by platform"))
    b = tenant.context(ANN)
    assert [(c.authoritative, c.overridden) for c in b.conflicts] == [(team.id, company.id)]
    assert "value friday/monday" in b.conflicts[0].key
    # created later by the author of the company memory: deliberate
    assert b.conflicts[0].kind == "deliberate"
    assert b.item(unrelated.id).overridden_by is None and b.item(related.id).overrides == []


def test_bundle_conflicts_follow_the_tenants_judge(tenant):
    """If the tenant's judge is replaced (``Tenant.set_judge``), then the bundle's
    precedence follows it: the lexical judge (word-count cosine >= 0.5) pairs two report
    memories that the default judge keeps apart (no contradiction named), and a judge
    that never conflicts flags nothing, even for two budgets on the same platform."""
    from reckon.memory.conflicts import LexicalJudge

    company = put(tenant, fact("Reports go out on Friday afternoon", 4,
                                     content="Weekly performance reports go out on Friday afternoon"))
    team = put(tenant, fact("Reports go out on Monday morning", 4, scope="team", teams=["growth"],
                                  content="Weekly performance reports go out on Monday morning"))
    assert tenant.context(ANN).conflicts == []  # ContradictionJudge: two differences, no single value
    tenant.set_judge(LexicalJudge())
    b = tenant.context(ANN)
    assert [(c.authoritative, c.overridden) for c in b.conflicts] == [(team.id, company.id)]

    class Never:
        def judge(self, new, candidates):  # type: ignore[no-untyped-def]
            return []

    put(tenant, cap())
    put(tenant, cap(scope="team", teams=["growth"], label="Growth Meta cap", importance=4,
                    properties={"platform": "meta", "amount": 30000, "currency": "USD", "period": "monthly"}))
    assert len(tenant.context(ANN).conflicts) == 2  # the lexical judge: same identifying properties too
    tenant.set_judge(Never())
    assert tenant.context(ANN).conflicts == []


# ---------------------------------------------------------------------------------------
# ranking and budget
# ---------------------------------------------------------------------------------------


def test_ranking_inside_a_block_follows_the_conversation(tenant):
    a = put(tenant, fact("Shipping partner is DHL", 4, content="parcels ship with DHL express couriers"))
    b_ = put(tenant, fact("Office dog is called Biscuit", 4, content="the office dog Biscuit loves treats"))
    first = tenant.context(ANN, ["who feeds the office dog Biscuit treats?"])
    assert first.ranking.startswith("cosine similarity")
    assert [i.id for i in first.blocks[0].items] == [b_.id, a.id]
    second = tenant.context(ANN, ["which couriers ship our parcels, DHL?"])
    assert [i.id for i in second.blocks[0].items] == [a.id, b_.id]
    none = tenant.context(ANN)
    assert none.ranking.startswith("importance, then most recent")
    assert [i.id for i in none.blocks[0].items] == [b_.id, a.id]  # newest first


def test_budget_drops_high_before_critical_and_counts_omitted(tenant):
    crit = [put(tenant, fact(f"Critical rule number {i} about {w}", 5, content=f"{w} " * 12)).id
            for i, w in enumerate(["invoices", "refunds", "chargebacks"])]
    high = [put(tenant, dict(fact(f"High preference {i} about {w}", 4, content=f"{w} " * 12),
                                   kind="preference")).id
            for i, w in enumerate(["emoji", "tables", "bullets", "headings", "links"])]
    full = tenant.context(ANN, budget_chars=100_000)
    assert set(full.ids()) == set(crit) | set(high) and full.omitted_total == 0
    for budget in (1500, 1200, 900, 700):
        b = tenant.context(ANN, budget_chars=budget)
        text = b.render()
        assert len(text) <= budget
        shown = set(b.ids())
        assert b.omitted_total == len(crit) + len(high) - len(shown) == sum(b.omitted.values())
        per_block = {blk.label: blk.omitted for blk in b.blocks if blk.omitted}
        assert per_block == b.omitted
        if shown & set(crit) != set(crit):  # a Critical dropped => every High dropped first
            assert not shown & set(high)
        if b.omitted_total:
            assert f"({b.omitted_total} item(s) omitted" in text
    # one character short of the full text: exactly the lowest-ranked High item goes
    just = tenant.context(ANN, budget_chars=len(full.render()) - 1)
    lowest_high = next(blk for blk in full.blocks if blk.label == "Preferences").items[-1].id
    assert set(just.ids()) == set(crit) | set(high) - {lowest_high}
    assert just.omitted == {"Preferences": 1} and len(just.render()) <= len(full.render()) - 1


def test_budget_below_the_minimum_is_refused(tenant):
    with pytest.raises(InvalidInput) as e:
        tenant.context(ANN, budget_chars=50)
    assert e.value.field == "budget_chars"


def test_search_explain_and_filters(tenant):
    a = put(tenant, fact("Preferred report format is PDF", 3, content="send reports as PDF attachments"))
    put(tenant, dict(fact("Prefers short PDF summaries", 2, content="short PDF summaries please"),
                           kind="preference"))
    hits = tenant.search("PDF reports", principal=ANN, kinds=["fact"], explain=True)
    assert [h.memory.id for h in hits] == [a.id]
    ex = hits[0].explanation
    assert ex is not None and ex.bm25_rank == 1 and hits[0].score == pytest.approx(ex.final)
    with pytest.raises(InvalidInput) as e:
        tenant.search("x", principal=ANN, kinds=["opinion"])
    assert e.value.field == "kinds"
    with pytest.raises(InvalidInput):
        tenant.search("   ", principal=ANN)


def test_search_by_subclass(tenant):
    t = put(tenant, roas_target(3.0, importance=3))
    put(tenant, fact("ROAS is reported weekly", 3))
    hits = tenant.search("ROAS", principal=ANN, subclasses=["PerformanceTargetMemory"])
    assert [h.memory.id for h in hits] == [t.id]


def test_memory_written_elsewhere_is_indexed_on_read(tenant):
    """A write that bypassed the facade (another process, or the service directly) is
    found by search: the open index follows the store's commits, not the facade's calls."""
    tenant.search("anything", principal=ANN)  # the index is open
    m = tenant.memory.remember(**fact("Warehouse closes at six", 3, content="the warehouse closes at 6pm"))
    assert m.id not in tenant.recall.index  # nothing told it yet
    assert [h.memory.id for h in tenant.search("warehouse closes", principal=ANN)] == [m.id]
    assert m.id in tenant.recall.index and tenant.recall.index.rebuilds == 1  # the commit, not a rebuild


def test_block_labels_from_ontology_labels():
    assert block_label("budget constraint memory", "BudgetConstraintMemory") == "Budget constraints"
    assert block_label("hiring criteria memory", "HiringCriteriaMemory") == "Hiring criteria"
    assert block_label("sourcing preference memory", "X") == "Sourcing preferences"
    assert block_label(None, "HeadlineRuleMemory") == "Headline rules"
    assert block_label("brand voice memory", "X") == "Brand voices"


def test_search_follows_importance_updates_and_tier_lists(tenant):
    m = put(tenant, fact("Invoices are due in 30 days", 2, content="invoice payment terms thirty days"))
    assert [h.memory.id for h in tenant.search("invoice payment terms", principal=ANN)] == [m.id]
    tenant.update(m.id, principal=DANA, importance=5)  # now preloaded, no longer in the long tail
    assert tenant.search("invoice payment terms", principal=ANN) == []
    assert m.id in tenant.context(ANN).ids()
    assert [h.memory.id for h in tenant.search("invoice payment terms", principal=ANN, importance=[2, 5])] == [m.id]
    assert tenant.search("invoice payment terms", principal=ANN, importance=[2, 3, 4]) == []


class _BrokenEmbedder:
    name = "broken"

    def encode(self, texts):
        from reckon.recall import EmbeddingUnavailable

        raise EmbeddingUnavailable("no model here")


def test_ranking_falls_back_to_importance_and_recency_without_embeddings(tenant, tmp_path):
    from reckon.recall.bundle import TenantRecall

    tenant._recall = TenantRecall(tenant.store, tenant.memory, embedder=_BrokenEmbedder(), directory=tmp_path / "idx")
    old = put(tenant, fact("Office dog is called Biscuit", 4, content="the office dog Biscuit loves treats"))
    crit = put(tenant, fact("Shipping partner is DHL", 5, content="parcels ship with DHL express couriers"))
    new = put(tenant, fact("Printer is on floor two", 4, content="the printer lives on the second floor"))
    b = tenant.context(ANN, ["who feeds the office dog Biscuit treats?"])
    assert b.ranking.startswith("importance, then most recent")
    assert [i.id for i in b.blocks[0].items] == [crit.id, new.id, old.id]
    assert all(i.similarity is None for i in b.items())
    # search still works by keyword
    low = put(tenant, fact("Biscuit eats at noon", 3, content="dog lunch at noon"))
    assert [h.memory.id for h in tenant.search("Biscuit noon", principal=ANN)] == [low.id]
