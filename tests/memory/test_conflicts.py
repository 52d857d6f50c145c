"""Lexical conflict judge and conflict ids (seed §9, mechanism 2)."""

from __future__ import annotations

import pytest

from reckon.memory.conflicts import ConflictJudge, LexicalJudge, Subject, conflict_digest, cosine, jaccard, tokens

BUDGET = "https://reckon.dev/ns/marketing#BudgetConstraintMemory"
PLATFORM = "https://reckon.dev/ns/marketing#platform"
PERIOD = "https://reckon.dev/ns/marketing#period"


def test_tokens_drop_stop_words_and_fold_case():
    assert tokens("Keep the ROAS above 3!") == ["keep", "roas", "above", "3"]


def test_similarities():
    assert jaccard("keep roas above 3", "keep roas above 3") == 1.0
    assert jaccard("keep roas above 3", "keep roas above 2.5") == pytest.approx(3 / 5)
    assert tokens("cap $40,000 at 2.5x") == ["cap", "40,000", "2.5", "x"]
    assert cosine("a b", "") == 0.0
    assert cosine("roas roas target", "roas target") == pytest.approx(3 / (5 ** 0.5 * 2 ** 0.5))
    assert cosine("hello world", "goodbye moon") == 0.0


def test_lexical_judge_picks_similar_text():
    j = LexicalJudge(threshold=0.5)
    assert isinstance(j, ConflictJudge)
    new = Subject("", "ROAS target", "Keep ROAS above 2.5 this quarter")
    cands = [
        Subject("a", "ROAS target", "Keep ROAS above 3 this quarter"),
        Subject("b", "Tone of voice", "Write in a friendly, informal tone"),
    ]
    assert j.judge(new, cands) == ["a"]


def test_same_subclass_same_keys_conflict_regardless_of_text():
    j = LexicalJudge()
    meta = f"<{PLATFORM}>", "<https://reckon.dev/ns/marketing#meta>"
    new = Subject("", "Cap", "x", BUDGET, {PLATFORM: "meta", PERIOD: "monthly"})
    same = Subject("a", "Completely different words", "nothing alike", BUDGET, {PLATFORM: "meta", PERIOD: "monthly"})
    other_platform = Subject("b", "Cap", "x", BUDGET, {PLATFORM: "google", PERIOD: "monthly"})
    no_keys = Subject("c", "Cap", "x", BUDGET, {})
    assert meta  # keys are N-Triples strings in the service; any string works here
    assert j.judge(new, [same, other_platform, no_keys]) == ["a", "c"]


def test_threshold_is_validated():
    with pytest.raises(ValueError):
        LexicalJudge(threshold=0)


def test_conflict_digest_is_stable_and_order_free():
    assert conflict_digest("k", ["b", "a"]) == conflict_digest("k", ["a", "b"])
    assert conflict_digest("k", ["a"]) != conflict_digest("k", ["a", "b"])
    assert conflict_digest("k", ["a"]) != conflict_digest("k2", ["a"])
    assert len(conflict_digest("k", [])) == 24
