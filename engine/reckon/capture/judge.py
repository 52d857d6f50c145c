"""An optional model conflict judge through the OpenAI-compatible client
(:mod:`reckon.capture.llm`), pluggable with ``Engine(judge=ModelJudge(...))`` or
``tenant.set_judge(...)``.

Candidates come from the deterministic judge's own pre-filter (same kind, similarity at
or above its threshold; subclass memories keep the identifying-property rule, no model
call). The model is asked which candidates the new memory *replaces* -- the same subject
and attribute with a different value -- and answers ``{"replace": [ids]}``; ids it
invents are ignored. When the model cannot be reached or answers nonsense, the write
path does not fail: the deterministic :class:`~reckon.memory.conflicts.ContradictionJudge`
decides (and the failure is logged).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from reckon.capture.llm import ChatClient, LLMError, parse_json_object
from reckon.memory.conflicts import ContradictionJudge, Subject

__all__ = ["ModelJudge"]

log = logging.getLogger("reckon.capture")

PROMPT = """You decide whether a NEW memory replaces EXISTING memories of an AI agent.
It replaces one only when both state the same subject and attribute with a different value
("keep emails short" -> "write long detailed emails"; "cap Meta at $40k" -> "cap Meta at $50k").
Related, similar, more detailed, compatible or about another subject: it does NOT replace it.
Answer with one JSON object: {"replace": [ids of the existing memories it replaces]}."""


class ModelJudge:
    """Conflict judge asking a chat model (module docstring).

    :param client: the chat client (``ChatClient()`` from ``RECKON_LLM_*`` by default).
    :param fallback: the deterministic judge used for candidates, subclass memories and
        when the model fails (default: ``ContradictionJudge(candidate_threshold=0.05)``;
        give it an ``encoder`` for candidates by embedding similarity).
    """

    def __init__(self, client: ChatClient | None = None, *, fallback: ContradictionJudge | None = None) -> None:
        self.client = client or ChatClient()
        # a wider candidate net than the deterministic default: the model catches paraphrases
        self.fallback = fallback or ContradictionJudge(candidate_threshold=0.05)
        self.failures = 0

    def judge(self, new: Subject, candidates: Sequence[Subject]) -> list[str]:
        fb = self.fallback
        keyed: list[str] = []
        plain: list[Subject] = []
        for c in candidates:
            if new.subclass is not None and c.subclass == new.subclass and set(new.keys) & set(c.keys):
                keyed.extend(v.id for v in fb.verdicts(new, [c]))
            elif (new.kind is None or c.kind is None or new.kind == c.kind) and \
                    (new.subclass is None) == (c.subclass is None):
                plain.append(c)
        sims = fb.similarities(new, plain)
        pool = [c for c, s in zip(plain, sims) if s >= fb.candidate_threshold]
        if not pool:
            return keyed
        payload = {"new": {"label": new.label, "content": new.content},
                   "existing": [{"id": c.id, "label": c.label, "content": c.content} for c in pool]}
        try:
            reply = self.client.complete([{"role": "system", "content": PROMPT},
                                          {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}])
            ids = parse_json_object(reply).get("replace")
            if not isinstance(ids, list):
                raise LLMError("model judge reply has no 'replace' list", retryable=True)
        except LLMError as exc:
            self.failures += 1
            log.warning("model conflict judge failed (%s); deterministic judge decides", exc)
            return keyed + [v.id for v in fb.verdicts(new, pool)]
        known = {c.id for c in pool}
        return keyed + [i for i in dict.fromkeys(ids) if isinstance(i, str) and i in known]
