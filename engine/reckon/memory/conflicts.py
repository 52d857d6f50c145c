"""Semantic conflict detection for new memories (seed 003 §9, mechanism 2).

On a substantive new memory, a *judge* is shown the existing same-scope active memories
(the candidates, chosen by the service) and says which of them the newcomer would
**replace**. Replacement means "the same subject and attribute with a different value"
(a changed budget cap, "keep emails short" after "write long detailed emails"), never
"similar words": two turns of one chat, or "weekly report by platform" and "weekly
report with totals", are related and both stay. The judge is pluggable
(:class:`ConflictJudge`, injected with ``Engine(..., judge=...)``); the default is
:class:`ContradictionJudge`:

* **subclass memories** -- identifying properties (single-valued IRI properties, e.g. a
  budget's platform and period, a target's metric): a same-class candidate conflicts
  exactly when every such property both carry has the same value. Literal values (the
  amount, the goal, free text) are what a replacement changes, so they do not count.
* **plain memories** -- candidates of the same kind whose similarity to the newcomer
  is at least ``candidate_threshold`` (cosine of sentence embeddings when the judge has
  an ``encoder``, else of word-count vectors), then the deterministic contradiction test
  :func:`contradiction` must name a reason: an antonym across the two texts ("short" /
  "long"), a flipped polarity ("do" / "don't"), a different value of one attribute in
  the same frame (``$40k`` / ``$50k``, "weekly" / "monthly", "bullet" / "numbered"), or
  a change marker ("no longer", "instead", "switched to") over the same frame.
  Similarity alone never replaces.

:class:`LexicalJudge` (word-count cosine >= 0.5, the judge before issue 11) is kept for
callers that want "similar means conflict"; an optional model judge through an
OpenAI-compatible client lives in :mod:`reckon.capture.judge`.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ConflictJudge",
    "ContradictionJudge",
    "LexicalJudge",
    "Subject",
    "Verdict",
    "conflict_digest",
    "content_tokens",
    "contradiction",
    "cosine",
    "jaccard",
    "tokens",
]

_WORD = re.compile(r"\d+(?:[.,]\d+)*|\w+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or so that the this to was "
    "we were will with our us i you your my me".split()
)


@dataclass(frozen=True)
class Subject:
    """What a judge sees of a memory.

    :ivar id: memory id (hex); empty for the newcomer.
    :ivar label: label text.
    :ivar content: content text.
    :ivar subclass: subclass IRI or ``None``.
    :ivar keys: identifying properties: property IRI -> the value's IRI.
    :ivar kind: ``"preference"`` / ``"fact"`` / ``"objective"`` / ``"context"`` (``None``
        = unknown: compared with every kind).
    :ivar source: where it came from (``"extraction"``, ``"operator"`` ...), ``None`` if unknown.
    """

    id: str
    label: str
    content: str
    subclass: str | None = None
    keys: dict[str, str] = field(default_factory=dict)
    kind: str | None = None
    source: str | None = None

    @property
    def text(self) -> str:
        """Label and content as one text (the content alone when it starts with the label)."""
        if self.content.startswith(self.label):
            return self.content
        return f"{self.label}. {self.content}" if self.content else self.label


@dataclass(frozen=True)
class Verdict:
    """Why a candidate would be replaced: its id and a short reason
    (``"antonym short/long"``, ``"same identifying properties"`` ...)."""

    id: str
    reason: str


@runtime_checkable
class ConflictJudge(Protocol):
    """Decides which candidates a new memory would replace.

    A judge may also say ``needs_shared_word = True`` (an attribute or property): it never
    finds a conflict between two texts that share no word token (a word-count cosine
    below its threshold), so the write path may offer it only the candidates that share
    a token with the new memory (:class:`LexicalJudge`, :class:`ContradictionJudge`
    without an encoder). Judges without the attribute see every candidate.

    A judge may say ``pairwise = True``: its verdict on a candidate depends on the new
    memory and that candidate only, never on the other candidates offered with it, and
    is the same every time it is asked (:class:`LexicalJudge`,
    :class:`ContradictionJudge`); the bundle's precedence then remembers verdicts per
    pair (:mod:`reckon.recall.precedence`).
    """

    def judge(self, new: Subject, candidates: Sequence[Subject]) -> list[str]:
        """Ids of the candidates ``new`` would replace (a subset of ``candidates``)."""
        ...


SIMILARITY_THRESHOLD = 0.5
"""Word-count cosine at or above which two plain memories are about the same thing: the
:class:`LexicalJudge`'s default and the bundle's cross-scope precedence test."""


def cosine_matrix(texts: Sequence[str]) -> Any:
    """All pairwise word-count cosines of ``texts`` (the :class:`LexicalJudge`'s measure)
    as a ``float64`` array ``(n, n)``, in one matrix product."""
    import numpy as np

    counts = [Counter(tokens(t)) for t in texts]
    # a token of one text only adds to that text's norm, never to a dot product: the
    # matrix keeps the shared tokens (a bundle's texts share few), the norms all of them
    df = Counter(t for c in counts for t in c)
    vocab = {t: j for j, t in enumerate(sorted(t for t, n in df.items() if n > 1))}
    mat = np.zeros((len(texts), max(1, len(vocab))), dtype=np.float64)
    norms = np.zeros(len(texts), dtype=np.float64)
    for r, c in enumerate(counts):
        sq = 0
        for t, v in c.items():
            sq += v * v
            j = vocab.get(t)
            if j is not None:
                mat[r, j] = v
        norms[r] = sq ** 0.5
    norms[norms == 0] = 1.0
    mat /= norms[:, None]
    out = mat @ mat.T
    # the diagonal is the cosine of a text with itself: 1 (0 for a text without tokens)
    np.fill_diagonal(out, [1.0 if c else 0.0 for c in counts])
    return out


def tokens(text: str) -> list[str]:
    """Case-folded NFKC word tokens without stop words; decimals (``2.5``, ``40,000``) stay one token."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return [w for w in _WORD.findall(t) if w not in _STOP]


def jaccard(a: str, b: str) -> float:
    """Token-set Jaccard similarity in [0, 1]."""
    sa, sb = set(tokens(a)), set(tokens(b))
    if not sa and not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def cosine(a: str, b: str) -> float:
    """Cosine similarity of word-count vectors in [0, 1]."""
    ca, cb = Counter(tokens(a)), Counter(tokens(b))
    if not ca or not cb:
        return 0.0
    dot = sum(v * cb.get(k, 0) for k, v in ca.items())
    return dot / (math.sqrt(sum(v * v for v in ca.values())) * math.sqrt(sum(v * v for v in cb.values())))


class LexicalJudge:
    """Default judge: identifying properties for subclass memories, word-count cosine
    over label + content otherwise (see module docstring).

    :param threshold: cosine similarity at or above which two memories conflict.
    """

    pairwise = True  # each candidate judged on its own (ConflictJudge)

    def __init__(self, threshold: float = SIMILARITY_THRESHOLD, *, cache_size: int = 100_000) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        self.threshold = threshold
        self._cache: dict[str, tuple[Counter[str], float]] = {}
        self._cache_size = cache_size

    @property
    def needs_shared_word(self) -> bool:
        """Two texts without a shared token have cosine 0 < threshold: never a conflict."""
        return self.threshold > 0

    def _vector(self, text: str) -> tuple[Counter[str], float]:
        """Word counts and their norm, memoised by text (candidates recur on every write)."""
        hit = self._cache.get(text)
        if hit is None:
            c = Counter(tokens(text))
            hit = (c, math.sqrt(sum(v * v for v in c.values())))
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[text] = hit
        return hit

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of word-count vectors (same as :func:`cosine`, memoised)."""
        ca, na = self._vector(a)
        cb, nb = self._vector(b)
        if not na or not nb:
            return 0.0
        if len(ca) > len(cb):
            ca, cb = cb, ca
        return sum(v * cb.get(k, 0) for k, v in ca.items()) / (na * nb)

    def judge(self, new: Subject, candidates: Sequence[Subject]) -> list[str]:
        out: list[str] = []
        new_text = f"{new.label} {new.content}"
        for c in candidates:
            if new.subclass is not None and c.subclass == new.subclass:
                shared = set(new.keys) & set(c.keys)
                if shared:
                    if all(new.keys[k] == c.keys[k] for k in shared):
                        out.append(c.id)
                    continue
            if self.similarity(new_text, f"{c.label} {c.content}") >= self.threshold:
                out.append(c.id)
        return out


# ---------------------------------------------------------------------------------------
# the deterministic contradiction test
# ---------------------------------------------------------------------------------------

#: a run of letters/digits, joined by inner ``. , : _ -`` (``40,000``, ``2.5``, ``9:30``,
#: ``inv-2041``, ``4f3a-9b1c``), with an optional ``#`` / currency prefix and ``%`` suffix
_CONTENT = re.compile(r"#?[$€£¥]?[^\W_]+(?:[.,:_-][^\W_]+)*%?", re.UNICODE)
_PLAIN_NUMBER = re.compile(r"[$€£¥]?\d+(?:[.,]\d+)*(?:k|m|bn|%|x)?")
_TIME = re.compile(r"(\d{1,2})(?::(\d{2}))?(am|pm)|(\d{1,2}):(\d{2})")
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")
_UNIT = re.compile(r"(\d+(?:\.\d+)?)([a-z]{1,3})")
_VERSION = re.compile(r"v\d+(?:\.\d+)*")
_HAS_DIGIT = re.compile(r"\d")
_HAS_ALPHA = re.compile(r"[^\W\d_]")
_CONTRACTIONS = (("won't", "will not"), ("can't", "can not"), ("shan't", "shall not"), ("n't", " not"),
                 ("’", "'"))
#: Function words that carry no subject, attribute or value (negators are kept).
_FUNCTION = frozenset(
    "a an the and or but if then so as at by for from in into of on onto to with about than that this these "
    "those it its it's is are was were be been being am do does did doing done have has had having will "
    "would shall should can could may might must i me my mine we us our ours you your yours he him his she "
    "her hers they them their theirs there here what which who whom whose when where why how just also "
    "very really too quite some any each such own same other s t ll re ve d m o y oh ok okay hey hi wow yeah "
    "well like get got let please thanks thank".split()
) - {"like"}
_MULT = {"k": 1e3, "m": 1e6, "bn": 1e9}


def _number(tok: str) -> str | None:
    """``"$40k"`` / ``"40,000"`` / ``"40000.0"`` -> ``"#40000"``; ``"15%"`` -> ``"#15%"``; else ``None``."""
    t = tok.strip().lstrip("$€£¥").replace(" ", "")
    suffix = ""
    for sfx in ("bn", "k", "m", "%", "x"):
        if t.endswith(sfx):
            t, suffix = t[: -len(sfx)], sfx
            break
    if not t or not t[0].isdigit():
        return None
    t = t.replace(",", "") if t.count(",") and all(len(g) == 3 for g in t.split(",")[1:]) else t.replace(",", ".")
    try:
        v = float(t)
    except ValueError:
        return None
    if suffix in _MULT:
        v *= _MULT[suffix]
        suffix = ""
    return f"#{v:g}{suffix}"


def _stem(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def content_tokens(text: str) -> list[str]:
    return list(_content_tokens(text))


def _names_things(previous: tuple[str, ...]) -> bool:
    """Whether the run(s) before a number name numbered things ("order", "ad set")."""
    from reckon.memory._lexicon import IDENTIFIER_HEADS

    heads = [previous[-1]] if previous else []
    if len(previous) >= 2:
        heads += [previous[-2] + previous[-1]]  # "ad set" -> "adset"
    return any(h in IDENTIFIER_HEADS or _stem(h) in IDENTIFIER_HEADS for h in heads)


def _classify(run: str, previous: tuple[str, ...]) -> list[str]:
    """Content tokens of one :data:`_CONTENT` run (see :func:`_content_tokens`);
    ``previous``: the runs before it."""
    if run.startswith("#"):
        rest = run[1:]
        if rest.isdigit():
            return ["@" + rest]  # "#1234": a number that names a thing
        run = rest
    if not _HAS_DIGIT.search(run):
        return [_stem(w) for w in run.split("-") if w and w not in _FUNCTION and len(w) > 1] if "-" in run else (
            [] if run in _FUNCTION or len(run) <= 1 else [_stem(run)])
    if run[0].isdigit() and not run.endswith("%") and _names_things(previous):
        return ["@" + run]  # "order 1234", "room 12", "seat 14c", "account 5512-0093": which thing, not a value
    if _PLAIN_NUMBER.fullmatch(run):
        n = _number(run)
        return [] if n is None else [n]
    m = _TIME.fullmatch(run)
    if m:
        if m.group(3):
            return [f"#{int(m.group(1))}:{m.group(2) or '00'}{m.group(3)}"]
        return [f"#{int(m.group(4))}:{m.group(5)}"]
    m = _ORDINAL.fullmatch(run)
    if m:
        return [f"#{int(m.group(1))}"]
    if _VERSION.fullmatch(run):
        return ["#" + run]  # "v2" / "v3": versions of one thing
    m = _UNIT.fullmatch(run)
    if m:
        return [f"#{float(m.group(1)):g}{m.group(2)}"]  # "40gb", "5min": a quantity
    groups = re.split(r"[-_]", run)
    if _HAS_ALPHA.search(run) or (len(groups) > 1 and all(g.isdigit() for g in groups) and (
            len(groups) > 2 or any(len(g) > 1 and g[0] == "0" for g in groups))):
        # letters and digits mixed, or digit groups no range has (555-123-4567, 5512-0093): an identifier
        return ["@" + run]
    return [n for n in (_number(x) for x in re.split(r"[:_-]", run) if x) if n is not None]


@functools.lru_cache(maxsize=65_536)
def _content_tokens(text: str) -> tuple[str, ...]:
    """Content tokens of ``text`` for the contradiction test, in order: NFKC, case-folded,
    contractions expanded ("don't" -> "do not"), function words dropped, plurals
    stemmed (``emails`` -> ``email``), values normalised (``$40k`` and ``40,000`` ->
    ``#40000``, ``9am`` -> ``#9:00am``, ``3rd`` -> ``#3``, ``40gb`` -> ``#40gb``, ``v2`` ->
    ``#v2``) and **identifiers** marked ``@``: a token mixing letters and digits
    (``4f3a9c``, ``inv-2041``, ``q3``), a ``#``-prefixed number, or a bare number after a
    noun that names numbered things (``order 1234``, ``room 12``:
    :data:`reckon.memory._lexicon.IDENTIFIER_HEADS`). Negators ("not", "never" ...) are kept."""
    t = unicodedata.normalize("NFKC", text).casefold()
    for a, b in _CONTRACTIONS:
        t = t.replace(a, b)
    t = re.sub(r"(\d)\s+(k|m|bn|%|am|pm)(?![^\W_])", r"\1\2", t)  # "$40 k", "15 %", "9 am"
    out: list[str] = []
    runs = _CONTENT.findall(t)
    for i, run in enumerate(runs):
        out.extend(_classify(run, tuple(runs[max(0, i - 2):i])))
    return tuple(out)


@functools.lru_cache(maxsize=65_536)
def _marked_words(text: str) -> tuple[frozenset[str], bool]:
    """The raw lower-case words of ``text`` and whether it holds a change phrase."""
    from reckon.memory._lexicon import CHANGE_PHRASES

    words = [w.strip(".,;:!?\"'()") for w in text.casefold().replace("’", "'").split()]
    phrase = any(tuple(words[i:i + len(p)]) == p for p in CHANGE_PHRASES for i in range(len(words) - len(p) + 1))
    return frozenset(words), phrase


def contradiction(old: str, new: str) -> str | None:
    """Whether ``new`` states a different value for the subject and attribute ``old``
    states -- the deterministic test of :class:`ContradictionJudge`.

    Both texts are reduced to :func:`content_tokens`; ``shared`` are the tokens in both,
    the *differences* those in one only. When each text names an identified thing the
    other does not (``order 4f3a9c`` / ``order 9b1c2d``, ``ticket 5521`` / ``ticket 5522``)
    they are about two subjects and nothing is returned. Otherwise a reason is returned
    when the two share a frame and differ in a way that changes a value:

    * ``antonym x/y`` -- one difference on each side is an antonym pair
      (:data:`reckon.memory._lexicon.ANTONYMS`: short/long, above/below, prefer/avoid ...),
      at least one token is shared and at most three other differences remain;
    * ``polarity`` -- exactly one text is negated, at least two tokens are shared and at
      most one other difference remains ("send the report on Friday" / "do not send the
      report on Friday");
    * ``value a/b`` -- both sides differ in a number (``#40000`` / ``#50000``) or in
      members of one closed value class (weekday, month, frequency, channel, format, list
      style, colour, currency, language), at least two tokens are shared (one when
      nothing else differs: "the budget is $40k" / "$50k") and at most two other
      differences remain;
    * ``change marker`` -- ``new`` says a value changed ("no longer", "instead",
      "anymore", "switched to", "from now on" ...; :data:`reckon.memory._lexicon.CHANGE_PHRASES`),
      shares at least two tokens with ``old`` and covers at least 60 % of ``old``'s tokens.

    :returns: the reason, or ``None`` when the texts do not contradict (related, similar,
        refining, about another subject).
    """
    lex = _lexicon()
    fa, fb = _facts(old), _facts(new)
    sa, sb = fa.tokens, fb.tokens
    shared = (sa & sb) - lex.negators
    if not shared:
        return None
    if (fa.ids - sb) and (fb.ids - sa):
        return None  # each names a thing the other does not ("order 4f3a" / "order 9b1c"): two subjects
    only_a, only_b = sa - sb - lex.negators - lex.additive, sb - sa - lex.negators - lex.additive
    additive = bool((sb - sa) & lex.additive)

    def one_subject(xa: set[str] | frozenset[str], xb: set[str] | frozenset[str]) -> bool:
        # beyond the changed value, at most one side may bring other content words
        # (light verbs aside): both doing so is another subject ("Dana" / "Lee", "search"
        # / "display", "growth team" / "design team")
        return not ((only_a - xa - lex.frame_verbs) and (only_b - xb - lex.frame_verbs))

    if not additive:
        # antonyms across the differences (only tokens that have antonyms can pair)
        for x in sorted(only_a & fa.opposable):
            ys = lex.antonyms_of(x) & only_b
            if ys:
                y = min(ys)
                if len(only_a - {x}) + len(only_b - {y}) <= 3 and one_subject({x}, {y}):
                    return f"antonym {x}/{y}"
        # flipped polarity over the same frame (an even number of negators cancels: "don't quit")
        rest = (only_a | only_b) - lex.change_markers
        if fa.negated != fb.negated and len(shared) >= 2 and len(rest) <= 1:
            return "polarity"
        # a different value of one attribute: a number, then each closed value class
        # both texts hold a member of (in the order of VALUE_CLASSES)
        pairs: list[tuple[set[str] | frozenset[str], set[str] | frozenset[str]]] = [
            (only_a & fa.numbers, only_b & fb.numbers)]
        pairs += [(only_a & members, only_b & members) for name, members in lex.value_classes
                  if name in fa.classes and name in fb.classes]
        for va, vb in pairs:
            # two shared tokens, or one when the value is the only difference ("the budget is $40k")
            frame = len(shared) >= 2 or not (rest - va - vb)
            if va and vb and frame and len(rest - va - vb) <= 2 and one_subject(va, vb):
                return f"value {min(va)}/{min(vb)}"
    # an explicit change of the old statement's frame
    if len(shared) < 2 or len(shared) < 0.6 * len(sa):
        return None
    words, phrase = _marked_words(new)
    old_words, _ = _marked_words(old)
    if phrase or (words & lex.change_markers) - old_words:
        return "change marker"
    return None


class _Lexicon:
    """The word lists of :mod:`reckon.memory._lexicon` the contradiction test uses, read
    once (on the first judgement, not at import)."""

    __slots__ = ("additive", "antonyms_of", "change_markers", "frame_verbs", "negators", "value_classes")

    def __init__(self) -> None:
        from reckon.memory import _lexicon as L

        self.additive, self.change_markers, self.frame_verbs = L.ADDITIVE, L.CHANGE_MARKERS, L.FRAME_VERBS
        self.negators = L.NEGATORS
        self.value_classes: tuple[tuple[str, frozenset[str]], ...] = tuple(L.VALUE_CLASSES.items())
        self.antonyms_of = L.antonyms_of


@functools.cache
def _lexicon() -> _Lexicon:
    return _Lexicon()


@dataclass(frozen=True, slots=True)
class _Facts:
    """What :func:`contradiction` needs of one text, computed once per text: its
    :func:`content_tokens` as a set, the identifiers (``@``) and values (``#``) among
    them, the tokens that have an antonym, the value classes it holds a member of, and
    whether it is negated (an odd number of negators)."""

    tokens: frozenset[str]
    ids: frozenset[str]
    numbers: frozenset[str]
    opposable: frozenset[str]
    classes: frozenset[str]
    negated: bool


@functools.lru_cache(maxsize=65_536)
def _facts(text: str) -> _Facts:
    lex = _lexicon()
    seq = _content_tokens(text)
    toks = frozenset(seq)
    return _Facts(
        tokens=toks,
        ids=frozenset(t for t in toks if t.startswith("@")),
        numbers=frozenset(t for t in toks if t.startswith("#")),
        opposable=frozenset(t for t in toks if lex.antonyms_of(t)),
        classes=frozenset(name for name, members in lex.value_classes if toks & members),
        negated=sum(t in lex.negators for t in seq) % 2 == 1,
    )


#: ``encoder(texts) -> float array (n, d)`` of L2-normalised sentence embeddings.
Encoder = Callable[[list[str]], Any]


class ContradictionJudge:
    """The default judge (module docstring): identifying properties for subclass
    memories; for plain memories, same-kind candidates at or above
    ``candidate_threshold`` similarity that :func:`contradiction` finds contradicted.

    :param encoder: sentence embedder (e.g. ``RecallIndex``'s MiniLM
        ``embedder.encode``): candidates by cosine of embeddings; ``None`` = cosine of
        word-count vectors (no model).
    :param candidate_threshold: minimum similarity of a candidate, in [0, 1]; default
        0.35 with an encoder (MiniLM cosine), 0.15 without.
    :raises ValueError: when the threshold is outside [0, 1].
    """

    pairwise = True  # each candidate judged on its own (ConflictJudge)

    def __init__(self, *, encoder: Encoder | None = None, candidate_threshold: float | None = None) -> None:
        if candidate_threshold is None:
            candidate_threshold = 0.35 if encoder is not None else 0.15
        if not 0.0 <= candidate_threshold <= 1.0:
            raise ValueError("candidate_threshold must be in [0, 1]")
        self.encoder = encoder
        self.candidate_threshold = candidate_threshold
        self._lexical = LexicalJudge(threshold=1.0)
        self._vectors: dict[str, Any] = {}  # text -> embedding (candidates recur on every write)
        self._vlock = threading.Lock()

    @property
    def needs_shared_word(self) -> bool:
        """Without an encoder candidates are ranked by word-count cosine: a candidate that
        shares no token with the new memory has similarity 0 < ``candidate_threshold``."""
        return self.encoder is None and self.candidate_threshold > 0

    def embed(self, texts: Sequence[str]) -> Any:
        """Embeddings of ``texts`` (float32 array (n, d)), memoised by text (100,000 at most).

        :raises Exception: whatever the encoder raises.
        """
        import numpy as np

        with self._vlock:
            todo = sorted({t for t in texts if t not in self._vectors})
        if todo:
            assert self.encoder is not None
            vecs = np.asarray(self.encoder(todo), dtype=np.float32)
            with self._vlock:
                if len(self._vectors) + len(todo) > 100_000:
                    self._vectors.clear()
                self._vectors.update(zip(todo, vecs))
        with self._vlock:
            return np.stack([self._vectors[t] for t in texts])

    def similarities(self, new: Subject, candidates: Sequence[Subject]) -> list[float]:
        """Similarity of ``new`` to each candidate, in [0, 1] (see ``encoder``)."""
        if not candidates:
            return []
        if self.encoder is not None:

            vecs = self.embed([new.text] + [c.text for c in candidates])
            return [max(0.0, float(x)) for x in vecs[1:] @ vecs[0]]
        return [self._lexical.similarity(new.text, c.text) for c in candidates]

    def verdicts(self, new: Subject, candidates: Sequence[Subject]) -> list[Verdict]:
        """The candidates ``new`` would replace, each with its reason."""
        out: list[Verdict] = []
        plain: list[Subject] = []
        for c in candidates:
            if new.subclass is not None and c.subclass == new.subclass:
                shared = set(new.keys) & set(c.keys)
                if shared:
                    if all(new.keys[k] == c.keys[k] for k in shared):
                        out.append(Verdict(c.id, "same identifying properties"))
                    continue
            if new.kind is not None and c.kind is not None and new.kind != c.kind:
                continue
            if (new.subclass is None) != (c.subclass is None):
                continue
            plain.append(c)
        new_text = new.text

        def reason(c: Subject) -> str | None:
            c_text = c.text
            why = contradiction(c_text, new_text)
            if why is None and c.content and new.content and (c.content, new.content) != (c_text, new_text):
                why = contradiction(c.content, new.content)  # titles may differ ("style" / "layout")
            return why

        if self.encoder is None:
            # both tests are pure: the (cheaper) contradiction test first, the word-count
            # similarity only of the candidates it names -- the same verdicts in the same order
            named = [(c, why) for c in plain if (why := reason(c)) is not None]
            sims = self.similarities(new, [c for c, _ in named])
            out += [Verdict(c.id, why) for (c, why), sim in zip(named, sims) if sim >= self.candidate_threshold]
            return out
        pool = [c for c, sim in zip(plain, self.similarities(new, plain)) if sim >= self.candidate_threshold]
        for c in pool:
            why = reason(c)
            if why is not None:
                out.append(Verdict(c.id, why))
        return out

    def judge(self, new: Subject, candidates: Sequence[Subject]) -> list[str]:
        return [v.id for v in self.verdicts(new, candidates)]


def conflict_digest(new_key: str, candidate_ids: Sequence[str]) -> str:
    """Stable conflict id: SHA-256 over the newcomer's canonical key and the sorted
    candidate ids, first 24 hex digits. The same write against the same candidates
    always yields the same id, in any process."""
    h = hashlib.sha256()
    h.update(new_key.encode("utf-8", "surrogatepass"))
    for cid in sorted(candidate_ids):
        h.update(b"\x00")
        h.update(cid.encode())
    return h.hexdigest()[:24]
