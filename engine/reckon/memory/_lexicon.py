"""Word lists of the deterministic contradiction test (:mod:`reckon.memory.conflicts`).

General English, not tuned to any data set: antonym pairs of the attributes people state
preferences, facts and objectives about (length, tone, direction, frequency, time,
polarity of liking), negators, change markers ("no longer", "instead"), and closed value
classes (weekdays, months, frequencies, channels) whose members are alternative values of
one attribute. Tokens are the lower-cased, lightly stemmed forms
:func:`reckon.memory.conflicts.content_tokens` produces.
"""

from __future__ import annotations

__all__ = [
    "ADDITIVE",
    "ANTONYMS",
    "CHANGE_MARKERS",
    "CHANGE_PHRASES",
    "FRAME_VERBS",
    "IDENTIFIER_HEADS",
    "NEGATORS",
    "VALUE_CLASSES",
    "antonyms_of",
]

_PAIRS = """
short long | short lengthy | brief long | brief lengthy | brief detailed | concise detailed | concise verbose
concise lengthy | succinct detailed | terse detailed | short detailed | brief verbose | short verbose
formal casual | formal informal | formal relaxed | serious playful | serious funny | polite blunt
above below | over under | more less | more fewer | higher lower | high low | maximum minimum | max min
increase decrease | increase reduce | increase cut | raise lower | raise cut | grow shrink | expand shrink
scale pause | boost cut | up down | add remove | add drop | gain lose | rise fall | exceed below
start stop | begin stop | begin end | start end | enable disable | activate deactivate | launch pause
resume pause | continue stop | keep drop | keep remove | include exclude | include omit
allow forbid | allow ban | allow block | allow prohibit | permit forbid | accept reject | approve reject
approve deny | yes no | true false | on off | open closed | public private | visible hidden
always never | often rarely | frequently rarely | usually rarely
like dislike | like hate | love hate | love dislike | enjoy hate | enjoy dislike | prefer avoid | want avoid
favor avoid | favour avoid | prefer dislike | like avoid | love avoid
early late | earlier later | before after | first last | morning evening | morning night | morning afternoon
am pm | past future | older newer
light dark | hot cold | warm cold | big small | large small | huge tiny | wide narrow | thick thin
fast slow | quick slow | faster slower | quickly slowly | cheap expensive | inexpensive expensive
online offline | online office | virtual office | remote office | remote onsite | indoor outdoor | internal external
simple complex | simple complicated | plain fancy | minimal elaborate | basic advanced
broad narrow | general specific | positive negative | safe risky | conservative aggressive | strict lenient
strict loose | tight loose | rigid flexible | manual automatic | manual automated | sync async
with without | all none | everyone nobody | single multiple
profit loss | surplus deficit | married divorced | employed unemployed
buy sell | bought sold | lend borrow | vegetarian carnivore | vegan carnivore | spicy mild | loud quiet
"""

ANTONYMS: frozenset[frozenset[str]] = frozenset(
    frozenset(p.split()) for line in _PAIRS.strip().splitlines() for p in line.split("|") if len(p.split()) == 2
)
"""Unordered antonym pairs."""

_BY_WORD: dict[str, set[str]] = {}
for _p in ANTONYMS:
    _a, _b = tuple(_p)
    _BY_WORD.setdefault(_a, set()).add(_b)
    _BY_WORD.setdefault(_b, set()).add(_a)


def antonyms_of(word: str) -> frozenset[str]:
    """The antonyms of ``word`` in :data:`ANTONYMS` (empty when none)."""
    return frozenset(_BY_WORD.get(word, ()))


NEGATORS: frozenset[str] = frozenset(
    "not no never none nobody nothing neither nor without cannot stop avoid quit refuse".split()
)
"""Words that flip the polarity of a statement ("don't" is tokenised to "do not"); an
even number of them cancels ("don't quit")."""

CHANGE_MARKERS: frozenset[str] = frozenset("instead anymore".split())
"""Single words by which a speaker says a value changed."""

CHANGE_PHRASES: tuple[tuple[str, ...], ...] = (
    ("no", "longer"), ("from", "now", "on"), ("switched", "to"), ("switch", "to"), ("changed", "to"),
    ("change", "to"), ("now", "prefer"), ("now", "want"), ("not", "any", "more"), ("rather", "than"),
)
"""Phrases (lower-cased words of the raw text) by which a speaker says a value changed."""

ADDITIVE: frozenset[str] = frozenset("also too either additionally besides another".split())
"""Words by which a speaker adds to what was said rather than changing it ("not on
Mondays either", "high on Meta too")."""

FRAME_VERBS: frozenset[str] = frozenset(
    "keep make use write send set put go run want need like prefer should must ensure be stay remain "
    "try give show let hold maintain aim plan target".split()
)
"""Light and instruction verbs: a difference in them does not change the subject ("keep
emails short" / "write long emails" are about the same emails)."""

VALUE_CLASSES: dict[str, frozenset[str]] = {
    "weekday": frozenset("monday tuesday wednesday thursday friday saturday sunday weekday weekend".split()),
    "month": frozenset("january february march april may june july august september october november "
                       "december".split()),
    "frequency": frozenset("hourly daily weekly biweekly fortnightly monthly quarterly yearly annually "
                           "annual".split()),
    "channel": frozenset("email slack phone call sms text teams zoom meeting letter chat whatsapp".split()),
    "season": frozenset("spring summer autumn fall winter".split()),
    "format": frozenset("pdf csv excel spreadsheet slide slides deck doc docx markdown html video audio".split()),
    "list": frozenset("bullet bulleted numbered prose paragraph table chart graph".split()),
    "colour": frozenset("red orange yellow green blue purple pink black white grey gray brown".split()),
    "currency": frozenset("usd eur gbp jpy dollar euro pound yen".split()),
    "language": frozenset("english french german spanish italian portuguese dutch chinese japanese".split()),
}
"""Closed classes of alternative values of one attribute: two statements with the same
frame and different members of one class ("weekly" vs "monthly" reports) disagree."""


IDENTIFIER_HEADS: frozenset[str] = frozenset(
    "order ticket invoice issue case incident bug task request pr mr commit build job batch shipment package "
    "parcel account acct customer client user member employee item sku product part lot serial ref reference "
    "no number num id code room suite apartment apt unit flight gate seat table booking reservation "
    "contract policy claim transaction txn payment receipt quote proposal campaign ad adset creative "
    "experiment test cohort store branch warehouse truck vehicle device host server node cluster "
    "port container instance volume".split()
)
"""Nouns naming numbered things: a bare number right after one says *which* thing
("order 1234", "room 12", "customer 88213"), it is not the value of an attribute. Two
statements about different identified things are about different subjects."""
