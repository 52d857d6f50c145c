"""The deterministic extractor: typed standing conditions stated in plain English become
typed memories with no model call (seed 003 §7: "a budget stored as a sentence is
inert").

From the user's turns (never the assistant's, never tool or web output), sentence by
sentence:

* **budget caps** -> ``BudgetConstraintMemory`` {platform, amount, currency, period}:
  a platform, an amount of money, a period ("this month", "per week", "daily") and a cap
  cue ("don't let ... go over", "cap ... at", "keep ... spend under", "budget is",
  "no more than", "max"). Importance 5 (a hard constraint).
* **KPI targets** -> ``PerformanceTargetMemory`` {metric, target_value, platform?}: a
  metric (ROAS, CPA, CTR, CPC, CPM, conversion rate ... and their spelled-out names), a
  number and a target cue ("keep ... above", "under", "at least", "target", "goal",
  "should stay"). Importance 4.
* **explicit preferences** -> plain ``preference`` memories: sentences that say so
  ("I prefer", "I'd rather", "always", "never", "please don't", "from now on",
  "going forward", "I want you to", "make sure to"). Importance 3.

Not extracted: questions, hypotheticals ("what if", "if we", "should we"), reports of the
past ("we spent $40k last month", "ROAS was 2.5"), current values ("our ROAS is 2.5")
-- a standing condition is an instruction, not a measurement. Platforms, metrics and
periods are matched against the tenant's ontology individuals (local names and labels)
plus common synonyms (Facebook/Instagram -> meta, "return on ad spend" -> ROAS). Measured
on ``bench/data/extraction_labelled.jsonl`` by ``bench/extraction.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from reckon.capture.candidates import Candidate

__all__ = ["RuleExtractor", "sentences"]

_PLATFORMS = {
    "meta": "meta", "facebook": "meta", "instagram": "meta", "fb": "meta", "ig": "meta",
    "google": "google", "google ads": "google", "adwords": "google", "youtube": "google",
    "tiktok": "tiktok", "tik tok": "tiktok", "twitter": "twitter", "x ads": "twitter",
    "bing": "bing", "microsoft ads": "bing", "microsoft advertising": "bing", "linkedin": "linkedin",
}
_METRICS = {
    "roas": "ROAS", "return on ad spend": "ROAS", "cpa": "CPA", "cost per acquisition": "CPA",
    "cost per action": "CPA", "cost per conversion": "CPA", "ctr": "CTR", "click-through rate": "CTR",
    "click through rate": "CTR", "cpc": "CPC", "cost per click": "CPC", "cpm": "CPM",
    "cost per mille": "CPM", "cost per thousand impressions": "CPM", "conversion rate": "ConversionRate",
    "cvr": "ConversionRate", "revenue": "Revenue", "conversions": "Conversions",
}
_PERIODS = [
    (r"\b(?:per|a|each|every|this|next|the|one)\s+(?:calendar\s+)?day\b|\bdaily\b|\bper diem\b", "daily"),
    (r"\b(?:per|a|each|every|this|next|the|one)\s+(?:calendar\s+)?week\b|\bweekly\b", "weekly"),
    (r"\b(?:per|a|each|every|this|next|the|one)\s+(?:calendar\s+)?month\b|\bmonthly\b|\b/\s?mo(?:nth)?\b", "monthly"),
    (r"\b(?:per|a|each|every|this|next|the|one)\s+quarter\b|\bquarterly\b", "quarterly"),
    (r"\b(?:per|a|each|every|this|next|the|one)\s+year\b|\byearly\b|\bannual(?:ly)?\b", "yearly"),
]
_MONEY = re.compile(
    r"(?P<sym>[$€£])\s?(?P<num>\d[\d,]*(?:\.\d+)?)\s?(?P<mult>k|m|thousand|million|grand)?\b"
    r"|(?P<num2>\d[\d,]*(?:\.\d+)?)\s?(?P<mult2>k|m|thousand|million)?\s?(?P<code>usd|eur|gbp|dollars|euros|pounds)\b"
    r"|(?P<num3>\d[\d,]*(?:\.\d+)?)\s?(?P<mult3>k|thousand|grand)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"(?P<sym>[$€£])?\s?(?P<num>\d+(?:[.,]\d+)?)\s?(?P<pct>%|percent|x)?", re.IGNORECASE)
_CAP_CUE = re.compile(
    r"\b(?:(?:don'?t|do not|never|not)\s+(?:let|allow)\b.*\b(?:over|above|exceed|past|beyond|more than)"
    r"|\bcap(?:ped)?\b|\bceiling\b|\blimit\b|\bbudget\s+(?:is|of|at|=|:|will be|should be)"
    r"|\b(?:keep|hold|stay)\b.*\b(?:under|below|within|at or below|no more than)"
    r"|\bno more than\b|\bnot more than\b|\bat most\b|\bmax(?:imum)?\b|\bnever (?:spend|go)\b.*\bover"
    r"|\bshould(?:n'?t| not) (?:go|be|run) (?:over|above)|\bmust(?:n'?t| not) (?:go|be|exceed)"
    r"|\btops\b|\bbudget\b[^.;:]{0,40}:|(?:can'?t|cannot|can not) spend more than)",
    re.IGNORECASE,
)
_SPEND_WORD = re.compile(r"\b(?:spend|spending|budget|cap|ceiling|limit|max(?:imum)?|tops|ads?)\b", re.IGNORECASE)
_TARGET_CUE = re.compile(
    r"\b(?:keep|maintain|hold|get|push|drive|bring|target|aim|wants?|needs?|goal|should|must|stays?|ensure|"
    r"make sure)\b"
    r"|^\s*(?:and\s+|also\s+|plus\s+)?(?:our\s+|the\s+)?[\w .-]{2,40}?\s+(?:under|below|above|over|at least|at most)\s",
    re.IGNORECASE,
)
_NOT_STANDING = re.compile(
    r"^\s*(?:what if|if|unless|whenever|should we|could we|can we|did we|do we|how|why|when|where|what|which|who|is it|"
    r"are we|was it|were we|would it)\b"
    r"|\b(?:last|previous|past)\s+(?:month|week|quarter|year|campaign)\b|\byesterday\b|\bago\b"
    r"|\b(?:we|i|they)\s+(?:spent|had|got|hit|reached|saw|paid)\b|\b(?:was|were)\b",
    re.IGNORECASE,
)
_PREF_CUE = re.compile(
    r"^\s*(?:(?:and|also|oh|ok|okay|so|but|hey|btw|please|one more thing)[,:]?\s+)*"
    r"(?:i\s+(?:really\s+)?prefer|i'?d\s+(?:really\s+)?prefer|i\s+would\s+prefer|i'?d\s+rather|i\s+would\s+rather|"
    r"my\s+preference\s+is|always\b|never\b|please\s+(?:always|never|don'?t|do not|avoid|use|keep|make|send|write)|"
    r"don'?t\s+ever|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|i\s+want\s+you\s+to|"
    r"i'?d\s+like\s+you\s+to|make\s+sure\s+(?:to|you)|remember\s+(?:that\s+)?i\s+(?:prefer|like|want|hate)|"
    r"i'?d\s+like\b(?!\s+to\s+(?:know|ask|see|hear|thank|say|talk|share))(?=.*\b(?:in|as|by|with|to be|not)\b))"
    r"|,\s*always[.!]?\s*$",
    re.IGNORECASE,
)
_SENT = re.compile(r"(?<=[.!?;])\s+|\n+")
#: a clause boundary: ", and" / "and" before an instruction verb ("... this month and keep ROAS above 3")
_CLAUSE = re.compile(r",?\s+(?:and|also|plus)\s+(?=(?:keep|hold|cap|make sure|never|always|don'?t|do not|target|aim|"
                     r"set|limit|spend|maintain|get|push|drive)\b)", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """``text`` split into sentences (on ``.``/``!``/``?``/``;`` and newlines; decimals
    kept), and a sentence joining two instructions with "and" into its clauses."""
    out: list[str] = []
    for s in _SENT.split(text):
        if s and s.strip():
            out.extend(c.strip() for c in _CLAUSE.split(s.strip()) if c.strip())
    return out


def _amount(m: re.Match[str]) -> Decimal | None:
    num = m.group("num") or m.group("num2") or m.group("num3")
    mult = (m.group("mult") or m.group("mult2") or m.group("mult3") or "").lower()
    try:
        v = Decimal(num.replace(",", ""))
    except InvalidOperation:
        return None
    factor = {"k": 1000, "thousand": 1000, "grand": 1000, "m": 1_000_000, "million": 1_000_000}.get(mult, 1)
    return v * factor


def _currency(m: re.Match[str]) -> str:
    sym = m.group("sym")
    code = (m.group("code") or "").lower()
    if sym == "€" or code in ("eur", "euros"):
        return "EUR"
    if sym == "£" or code in ("gbp", "pounds"):
        return "GBP"
    return "USD"


def _find(table: dict[str, str], text: str) -> tuple[str, int] | None:
    """The first key of ``table`` found in ``text`` as whole words (longest key first at a
    position): ``(value, position)``."""
    best: tuple[int, int, str] | None = None
    low = text.casefold()
    for key, val in table.items():
        for m in re.finditer(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", low):
            cand = (m.start(), -len(key), val)
            if best is None or cand < best:
                best = cand
    return (best[2], best[0]) if best else None


def _find_all(table: dict[str, str], text: str) -> list[tuple[str, int]]:
    """Every mention of a key of ``table`` in ``text`` (whole words, longest key first at a
    position, no overlaps): ``(value, position)`` in text order."""
    hits: list[tuple[int, int, str]] = []
    low = text.casefold()
    for key, val in table.items():
        for m in re.finditer(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", low):
            hits.append((m.start(), m.end(), val))
    hits.sort(key=lambda h: (h[0], -(h[1] - h[0])))
    out: list[tuple[str, int]] = []
    end = -1
    for start, stop, val in hits:
        if start >= end:
            out.append((val, start))
            end = stop
    return out


_EACH = re.compile(r"\b(?:each|apiece|per platform|every one|respectively)\b", re.IGNORECASE)


def _period(text: str) -> str | None:
    return next((p for rx, p in _PERIODS if re.search(rx, text, re.IGNORECASE)), None)


def _pair(keys: list[tuple[str, int]], values: list[tuple[int, Any]], s: str) -> list[tuple[str, Any, str]] | None:
    """Pair the keys (platforms) of one sentence with its values (amounts, numbers):
    ``[(key, value, the key's part of s)]``, or ``None`` when the sentence states one
    condition.

    * key value key value ... ("Meta at $40k and Google at $20k"): each key with the value
      after it, before the next key;
    * value key value key ... ("$40k for Meta and $20k for Google"): each key with the
      value before it;
    * keys then one value with "each" ("Meta and Google at $20k each"): every key gets it.

    Distinct keys only; any other arrangement is one condition (``None``)."""
    distinct = list(dict.fromkeys(k for k, _ in keys))
    if len(distinct) < 2 or len(distinct) != len(keys):
        return None
    if len(values) == 1 and _EACH.search(s) and values[0][0] > keys[-1][1]:
        return [(k, values[0][1], s) for k, _ in keys]
    if len(values) != len(keys):
        return None
    ev = sorted([(pos, 0, i) for i, (_, pos) in enumerate(keys)] + [(pos, 1, j) for j, (pos, _) in enumerate(values)])
    kinds = [e[1] for e in ev]
    n = len(keys)
    bounds = [pos for pos, _, _ in ev] + [len(s)]
    if kinds == [0, 1] * n:  # key first
        return [(keys[i][0], values[i][1], s[bounds[2 * i]:bounds[2 * i + 2]]) for i in range(n)]
    if kinds == [1, 0] * n:  # value first
        return [(keys[i][0], values[i][1], s[bounds[2 * i]:bounds[2 * i + 2]]) for i in range(n)]
    return None


def _title(s: str, n: int = 8) -> str:
    words = re.sub(r"^\s*(?:please|also|and|so|ok|okay|oh|hey|btw)[,:]?\s+", "", s, flags=re.IGNORECASE).split()
    t = " ".join(words[:n]).rstrip(".,;:!")
    return (t[:1].upper() + t[1:]) if t else s[:60]


def _num_text(v: Decimal) -> str:
    return format(v.normalize(), "f")


class RuleExtractor:
    """Deterministic extractor (module docstring).

    :param platforms: extra platform names -> platform local name (added to the built-in
        synonyms); the tenant's ``mk:Platform`` individuals are matched by local name.
    :param metrics: extra metric names -> ``mk:Metric`` local name.
    """

    name = "rules"

    def __init__(self, *, platforms: dict[str, str] | None = None, metrics: dict[str, str] | None = None) -> None:
        self.platforms = {**_PLATFORMS, **{k.casefold(): v for k, v in (platforms or {}).items()}}
        self.metrics = {**_METRICS, **{k.casefold(): v for k, v in (metrics or {}).items()}}
        names = "|".join(re.escape(k) for k in sorted(self.metrics, key=len, reverse=True))
        #: a clause boundary before a second metric with its own comparison: "keep ROAS above 3
        #: and CPA under $50", "CPA under $50, ROAS above 3"
        self._metric_clause = re.compile(
            r"(?:,\s*(?:and\s+|also\s+|plus\s+)?|\s+(?:and|also|plus)\s+)(?:(?:the|our|a|keep|hold)\s+)?"
            r"(?=(?:" + names + r")(?![\w-])\s*(?:(?:must|should|needs? to|has to)\s+(?:stay|be|remain)\s+|stays?\s+|"
            r"is\s+)?(?:under|below|above|over|at least|at most|(?:no\s+)?(?:more|less|greater|lower|higher)\s+than|"
            r">=|<=|>|<|=))",
            re.IGNORECASE)

    def clauses(self, s: str) -> list[str]:
        """``s`` split further before each metric that carries its own comparison (one
        target per metric: "keep ROAS above 3 and CPA under $50" is two)."""
        parts = [p.strip() for p in self._metric_clause.split(s)]
        return [p for p in parts if p]

    # -- one sentence ---------------------------------------------------------------
    def budget(self, s: str) -> Candidate | None:
        """The first budget cap stated in ``s``, or ``None`` (see :meth:`budgets`)."""
        found = self.budgets(s)
        return found[0] if found else None

    def budgets(self, s: str) -> list[Candidate]:
        """Every budget cap stated in ``s``: one per platform that carries its own amount
        ("cap Meta at $40k and Google at $20k a month" is two caps; "$40k for Meta, $20k
        for Google" too), or one amount for several platforms with "each" ("cap Meta and
        Google at $20k each"). One amount over several platforms without "each" ("$40k a
        month across Meta and Google") is a combined cap, which no per-platform memory
        states: nothing is extracted. A period stated inside a platform's part is its own,
        else the sentence's."""
        if s.rstrip().endswith("?") or _NOT_STANDING.search(s):
            return []
        if not _CAP_CUE.search(s) or not _SPEND_WORD.search(s):
            return []
        plats = _find_all(self.platforms, s)
        monies = [m for m in _MONEY.finditer(s) if (_amount(m) or 0) > 0]
        if not plats or not monies:
            return []
        sentence_period = _period(s)
        pairs = _pair(plats, [(m.start(), m) for m in monies], s)
        if pairs is None:
            if len({p for p, _ in plats}) > 1 and len(monies) == 1:
                return []  # one amount over several platforms ("$40k across Meta and Google"): no per-platform cap
            pairs = [(plats[0][0], monies[0], s)]  # one cap as said: the first platform, the first amount
        out: list[Candidate] = []
        for platform, money, part in pairs:
            period = _period(part) or sentence_period
            amount = _amount(money)
            if period is None or amount is None or amount <= 0:
                continue
            out.append(Candidate(
                kind="objective", subclass="BudgetConstraintMemory", importance=5, confidence=0.9,
                label=f"{platform.capitalize()} {period} spend cap",
                content=s.strip(),
                properties={"platform": platform, "amount": _num_text(amount), "currency": _currency(money),
                            "period": period},
            ))
        return out

    def target(self, s: str) -> Candidate | None:
        """A KPI target stated in ``s``, or ``None``."""
        if s.rstrip().endswith("?") or _NOT_STANDING.search(s):
            return None
        met = _find(self.metrics, s)
        if met is None or not _TARGET_CUE.search(s):
            return None
        metric, pos = met
        # the target value: the first number after the metric name (else anywhere)
        after = s[pos:]
        m = _NUMBER.search(after) or _NUMBER.search(s)
        if m is None:
            return None
        try:
            value = Decimal(m.group("num").replace(",", "."))
        except InvalidOperation:
            return None
        if re.search(r"\bis\s+(?:at\s+)?" + re.escape(m.group(0).strip()), s, re.IGNORECASE) and not re.search(
                r"\b(?:target|goal)\b", s, re.IGNORECASE):
            return None  # "our ROAS is 2.5": a measurement, not a target
        plat = _find(self.platforms, s)
        props: dict[str, Any] = {"metric": metric, "target_value": _num_text(value)}
        if plat is not None:
            props["platform"] = plat[0]
        label = f"{metric} target" + (f" on {plat[0].capitalize()}" if plat is not None else "")
        return Candidate(kind="objective", subclass="PerformanceTargetMemory", importance=4, confidence=0.9,
                         label=label, content=s.strip(), properties=props)

    def targets(self, s: str) -> list[Candidate]:
        """Every KPI target stated in ``s``: one metric with its own value per platform
        ("keep ROAS above 3 on Meta and above 4 on Google" is two targets; several metrics
        are split before, by :meth:`clauses`), else the one :meth:`target`."""
        one = self.target(s)
        if one is None:
            return []
        mets = _find_all(self.metrics, s)
        plats = _find_all(self.platforms, s)
        if len({m for m, _ in mets}) != 1 or len(plats) < 2:
            return [one]
        start = mets[0][1]
        nums = [(m.start(), m) for m in _NUMBER.finditer(s) if m.start() > start and m.group("num")]
        pairs = _pair(plats, nums, s)
        if pairs is None:
            return [one]
        out = []
        for platform, m, _ in pairs:
            try:
                value = Decimal(m.group("num").replace(",", "."))
            except InvalidOperation:
                return [one]
            props = {**one.properties, "target_value": _num_text(value), "platform": platform}
            out.append(one.model_copy(update={"label": f"{props['metric']} target on {platform.capitalize()}",
                                              "properties": props}))
        return out

    def preference(self, s: str) -> Candidate | None:
        """An explicit preference stated in ``s``, or ``None``."""
        if s.rstrip().endswith("?") or not _PREF_CUE.search(s) or len(s.split()) < 3:
            return None
        return Candidate(kind="preference", importance=3, confidence=0.8, label=_title(s), content=s.strip())

    # -- a tail -----------------------------------------------------------------------
    def extract(self, tail: Sequence[Any], known: Sequence[Any] = (), tool_schema: dict[str, Any] | None = None,
                ) -> list[Candidate]:
        """Candidates from the user turns of ``tail`` (``Turn``-like: ``role``, ``text``,
        ``order``, ``speaker``), one per stated condition, in order."""
        out: list[Candidate] = []
        for t in tail:
            if getattr(t, "role", "user") != "user":
                continue
            for sentence in sentences(getattr(t, "text", "") or ""):
                parts = self.clauses(sentence)
                # the clauses only where each states a target (else the sentence as said)
                if not (len(parts) > 1 and all(self.target(p) is not None for p in parts[1:])):
                    parts = [sentence]
                found: list[Candidate | None] = []
                for p in parts:
                    found.extend(self.budgets(p) or self.targets(p) or [self.preference(p)])
                for c in found:
                    if c is not None:
                        out.append(c.model_copy(update={"turns": [int(getattr(t, "order", 0))],
                                                        "owner": getattr(t, "speaker", None)}))
        return out

    def extract_text(self, text: str) -> list[Candidate]:
        """Candidates from one user utterance (convenience for tests and benchmarks)."""
        from types import SimpleNamespace

        return self.extract([SimpleNamespace(role="user", text=text, order=0, speaker=None)])
