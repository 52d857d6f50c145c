"""Recording and reading transcripts: conversations and their turns as RDF in the
tenant's ``urn:reckon:graph:transcripts`` graph (ontology/agent.ttl; seed 002
"Post-turn persistence", seed 003 §5).

Every turn is a node validated by ``ag:TurnShape`` (SHACL, the same validator as
memories) and written with its conversation in one store transaction per call, so a
batch of turns costs one commit and one reasoning pass. Turns are immutable and
idempotent by position: recording turn ``order`` of a conversation again with the same
text (or a turn whose ``external_id`` the conversation already holds) returns the
recorded turn and writes nothing, so a host may retry post-turn persistence freely.

Authorization (seed 001 "Poisoning defence": no forged authors): a member records user
turns only as themselves (``speaker`` defaults to, and must equal, their person id) and
never ``system`` turns; an operator (imports) may record any speaker and role.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from pyoxigraph import Literal, NamedNode, Quad, Triple, Variable

from reckon import vocab
from reckon._args import checked_methods
from reckon._errors import InvalidInput, NotAuthorized, ShapeViolation, UnknownMemory
from reckon.memory import _rdf as R
from reckon.memory.models import Principal
from reckon.store.graphs import MEMORIES, TRANSCRIPTS
from reckon.transcripts.models import INGESTIBLE, Conversation, Turn, TurnInput, parse_turn

__all__ = [
    "AG",
    "TranscriptService",
    "agent_iri",
    "conversation_iri",
    "turn_iri",
]

AG = vocab.AG


def ag(local: str) -> NamedNode:
    return NamedNode(AG + local)


T_TURN, T_CONV, T_AGENT = ag("Turn"), ag("Conversation"), ag("Agent")
P_CONV, P_ORDER, P_ROLE, P_SPEAKER = ag("conversation"), ag("order"), ag("role"), ag("speaker")
P_AT, P_TEXT, P_CAPTION, P_EXT = ag("at"), ag("text"), ag("caption"), ag("externalId")
P_THROUGH, P_PARTICIPANT = ag("extractedThrough"), ag("participant")
ROLE_IRI = {r: ag(f"{r.capitalize()}Role") for r in ("user", "assistant", "tool", "web", "system")}
IRI_ROLE = {v: k for k, v in ROLE_IRI.items()}
_SAFE = "-._~"
_BATCH = 2000

_Q_CONVERSATIONS = (
    vocab.sparql_prefixes("ag")
    + "SELECT ?c (COUNT(?t) AS ?n) (MAX(?o) AS ?last) (MAX(?at) AS ?lastAt) WHERE { "
    "GRAPH " + str(vocab.TRANSCRIPTS) + " { ?c a ag:Conversation . OPTIONAL { ?t ag:conversation ?c ; "
    "ag:order ?o ; ag:at ?at } } } GROUP BY ?c"
)
_Q_LAST = (
    vocab.sparql_prefixes("ag")
    + "SELECT ?c (MAX(?o) AS ?last) WHERE { GRAPH " + str(vocab.TRANSCRIPTS) + " { ?t ag:conversation ?c ; "
    "ag:order ?o } } GROUP BY ?c"
)
_LAST_MAX = 4096  # conversations whose highest order is kept
_LAST_GAP = 256  # generations past which the highest order is queried again, not followed
_Q_RECENT = (
    vocab.sparql_prefixes("ag")
    + "SELECT ?c ?t ?o WHERE { GRAPH " + str(vocab.TRANSCRIPTS) + " { ?t ag:conversation ?c ; ag:order ?o } } "
    "ORDER BY DESC(?o) LIMIT "
)


def conversation_iri(tenant: str, conversation: str) -> NamedNode:
    """``urn:reckon:<tenant>:conversation:<pct-encoded id>``."""
    return NamedNode(f"urn:reckon:{tenant}:conversation:{quote(conversation, safe=_SAFE)}")


def turn_iri(tenant: str, conversation: str, order: int) -> NamedNode:
    """``<conversation IRI>/turn/<order>``."""
    return NamedNode(f"{conversation_iri(tenant, conversation).value}/turn/{int(order)}")


def agent_iri(tenant: str, agent: str) -> NamedNode:
    """``urn:reckon:<tenant>:agent:<pct-encoded id>``."""
    return NamedNode(f"urn:reckon:{tenant}:agent:{quote(agent, safe=_SAFE)}")


def _conversation_id(iri: str) -> str:
    return unquote(iri.rsplit(":", 1)[-1].split("/", 1)[0])


@checked_methods
class TranscriptService:
    """Transcripts of one tenant.

    :param store: the tenant store.
    :param memory: the tenant's :class:`~reckon.memory.service.MemoryService` (SHACL
        validator, person nodes).
    :param clock: default time of a turn recorded without ``at`` (UTC).
    """

    def __init__(self, store: Any, memory: Any, *, clock: Any = None) -> None:
        self.store = store
        self.memory = memory
        self.tenant: str = store.tenant_id
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._last: dict[str, tuple[int, int]] = {}  # conversation -> (generation, its highest order)

    # ------------------------------------------------------------------ ids
    def turn_iri(self, turn: str) -> NamedNode:
        """A turn id (``"<conversation>/<order>"``) or IRI -> the turn's IRI.

        :raises UnknownMemory: when it is not a turn id of this tenant.
        """
        prefix = f"urn:reckon:{self.tenant}:conversation:"
        if isinstance(turn, str) and turn.startswith(prefix) and "/turn/" in turn:
            return NamedNode(turn)
        if isinstance(turn, str) and "/" in turn:
            conv, _, order = turn.rpartition("/")
            if conv and order.isdigit():
                return turn_iri(self.tenant, conv, int(order))
        raise UnknownMemory(f"no turn {turn!r} in tenant {self.tenant!r}")

    # ------------------------------------------------------------------ writes
    def record(self, turns: Sequence[Any], *, principal: Principal) -> list[Turn]:
        """Record turns (dicts of :class:`~reckon.transcripts.models.TurnInput` fields),
        validated one by one, committed together (one transaction per 2,000 turns).

        **All or nothing**: every turn is parsed, authorized and SHACL-validated before
        anything is written; the first bad one raises naming ``turns[i]`` and nothing is
        written. (A call of more than 2,000 turns commits in chunks of 2,000; each chunk is
        atomic and a re-run of the call is a no-op for the chunks already written.)

        :returns: the recorded turns, in input order (the existing turn for a repeat).
        :raises InvalidInput: a malformed turn, a new text at an existing position.
        :raises NotAuthorized: a member recording another person's user turn or a
            system turn.
        :raises ShapeViolation: a turn that does not conform to ``ag:TurnShape``.
        """
        if not isinstance(principal, Principal):
            raise InvalidInput("principal: a reckon Principal is required", field="principal")
        if isinstance(turns, (str, bytes, dict)) or not isinstance(turns, Sequence):
            raise InvalidInput("turns: a list of turns is required", field="turns")
        batch = isinstance(turns, Sequence) and len(turns) != 1
        parsed: list[TurnInput] = []
        for i, raw in enumerate(turns):
            t = parse_turn(raw, i if batch else None)
            t = self._authorize(t, principal, i if batch else None)
            parsed.append(t)
        out: list[Turn] = []
        for k in range(0, len(parsed), _BATCH):
            out.extend(self._record_chunk(parsed[k:k + _BATCH], k if batch else None))
        return out

    def _authorize(self, t: TurnInput, principal: Principal, index: int | None) -> TurnInput:
        where = f"turns[{index}]." if index is not None else ""
        if t.role == "user":
            speaker = t.speaker or principal.person
            if not principal.is_operator and speaker != principal.person:
                raise NotAuthorized(
                    f"{where}speaker: {principal.person!r} may record user turns only as themselves, "
                    f"not as {speaker!r} (an operator imports other people's turns)")
            return t.model_copy(update={"speaker": speaker})
        if t.role == "system" and not principal.is_operator:
            raise NotAuthorized(f"{where}role: only an operator may record system turns")
        if t.role == "assistant":
            return t.model_copy(update={"speaker": t.speaker or "assistant"})
        if t.speaker is not None and t.role in ("tool", "web"):
            raise InvalidInput(f"{where}speaker: {t.role} output has no speaker", field=f"{where}speaker")
        if not t.text and not t.caption:
            raise InvalidInput(f"{where}text: a turn needs text or a caption", field=f"{where}text")
        return t

    def _record_chunk(self, turns: list[TurnInput], offset: int | None) -> list[Turn]:
        # the store's write check (TenantStore.validator) validates every changed node at
        # commit: each turn is then checked once, there, and a violation is mapped back to
        # its turns[i]; without one, each turn is validated here before it is added
        checked_at_commit = getattr(self.store, "validator", None) is not None
        index_of: dict[str, int] = {}
        try:
            return self._record_chunk_txn(turns, offset, checked_at_commit, index_of)
        except ShapeViolation as exc:
            if offset is None or not exc.violations:
                raise
            i = index_of.get(str(exc.violations[0].get("focus_node", "")))
            if i is None or (exc.args and str(exc.args[0]).startswith(f"turns[{i + offset}]")):
                raise
            exc.args = (f"turns[{i + offset}]: {exc.args[0]}",) + tuple(exc.args[1:])
            raise

    def _record_chunk_txn(self, turns: list[TurnInput], offset: int | None, checked_at_commit: bool,
                          index_of: dict[str, int]) -> list[Turn]:
        result: list[Turn | None] = [None] * len(turns)
        with self.store.transaction() as txn:
            view = txn.view
            known: dict[str, tuple[dict[int, str], dict[str, int], int]] = {}
            created_people: set[NamedNode] = set()
            built: dict[tuple[str, int], Turn] = {}  # recorded earlier in this chunk (not committed yet)
            for i, t in enumerate(turns):
                where = f"turns[{i + offset}]." if offset is not None else ""
                if not t.text and not t.caption:
                    raise InvalidInput(f"{where}text: a turn needs text or a caption", field=f"{where}text")
                conv = conversation_iri(self.tenant, t.conversation)
                if t.conversation not in known:
                    # this chunk's turns of the conversation; committed ones are looked
                    # up by IRI / external id (a conversation's length costs nothing)
                    known[t.conversation] = ({}, {}, self.last_order(t.conversation, view=view))
                    if not view.contains(Quad(conv, R.A, T_CONV, TRANSCRIPTS)):
                        txn.add(Quad(conv, R.A, T_CONV, TRANSCRIPTS))
                by_order, by_ext, last = known[t.conversation]
                if t.external_id is not None:
                    o_ext = by_ext.get(t.external_id)
                    if o_ext is None:
                        o_ext = self._order_of_external(view, conv, t.external_id)
                    if o_ext is not None:
                        result[i] = built.get((t.conversation, o_ext)) or self._as_turn(
                            t, o_ext, existing_text=self._text_at(view, t.conversation, o_ext, by_order))
                        continue
                order = t.order if t.order is not None else last + 1
                recorded = self._text_at(view, t.conversation, order, by_order)
                if recorded is not None:
                    if recorded != t.text:
                        raise InvalidInput(
                            f"{where}order: turn {order} of conversation {t.conversation!r} is already recorded "
                            f"with other text; turns are immutable", field=f"{where}order")
                    result[i] = built.get((t.conversation, order)) or self._as_turn(t, order, existing_text=recorded)
                    continue
                at = t.at or self._clock()
                node = turn_iri(self.tenant, t.conversation, order)
                triples = [
                    Triple(node, R.A, T_TURN),
                    Triple(node, P_CONV, conv),
                    Triple(node, P_ORDER, Literal(str(order), datatype=R.X_INTEGER)),
                    Triple(node, P_ROLE, ROLE_IRI[t.role]),
                    Triple(node, P_AT, R.dt_literal(at)),
                    Triple(node, P_TEXT, Literal(t.text)),
                ]
                if t.caption:
                    triples.append(Triple(node, P_CAPTION, Literal(t.caption)))
                if t.external_id is not None:
                    triples.append(Triple(node, P_EXT, Literal(t.external_id)))
                if t.speaker is not None:
                    if t.role == "assistant":
                        sp = agent_iri(self.tenant, t.speaker)
                        if not view.contains(Quad(sp, R.A, T_AGENT, TRANSCRIPTS)):
                            txn.add(Quad(sp, R.A, T_AGENT, TRANSCRIPTS))
                    else:
                        sp = R.person_iri(self.tenant, t.speaker)
                        if sp not in created_people and not view.contains(Quad(sp, R.A, R.PERSON, MEMORIES)):
                            txn.add(Quad(sp, R.A, R.PERSON, MEMORIES))
                            created_people.add(sp)
                    triples.append(Triple(node, P_SPEAKER, sp))
                index_of[str(node)] = i
                index_of[node.value] = i
                if not checked_at_commit:
                    try:
                        self.memory._validate(node, triples + [Triple(conv, R.A, T_CONV)])  # noqa: SLF001
                    except Exception as exc:
                        if offset is not None and hasattr(exc, "args") and exc.args:
                            exc.args = (f"{where.rstrip('.')}: {exc.args[0]}",) + tuple(exc.args[1:])
                        raise
                for tr in triples:
                    txn.add(Quad(tr.subject, tr.predicate, tr.object, TRANSCRIPTS))
                by_order[order] = t.text
                if t.external_id is not None:
                    by_ext[t.external_id] = order
                known[t.conversation] = (by_order, by_ext, max(last, order))
                result[i] = built[(t.conversation, order)] = self._as_turn(t, order, at=at)
        return [r for r in result if r is not None]

    def _text_at(self, view: Any, conversation: str, order: int, chunk: dict[int, str]) -> str | None:
        """The text of turn ``order`` of ``conversation``: recorded earlier in this chunk
        (``chunk``) or committed; None when there is no such turn."""
        if order in chunk:
            return chunk[order]
        node = turn_iri(self.tenant, conversation, order)
        if not view.contains(Quad(node, R.A, T_TURN, TRANSCRIPTS)):
            return None
        texts = view.objects(node, P_TEXT, TRANSCRIPTS)
        return texts[0].value if texts else ""

    @staticmethod
    def _order_of_external(view: Any, conv: NamedNode, external_id: str) -> int | None:
        """The order of the committed turn of ``conv`` recorded with ``external_id``."""
        for node in view.subjects(P_EXT, Literal(external_id), TRANSCRIPTS):
            if isinstance(node, NamedNode) and conv in view.objects(node, P_CONV, TRANSCRIPTS):
                orders = view.objects(node, P_ORDER, TRANSCRIPTS)
                if orders:
                    return int(orders[0].value)
        return None

    def _as_turn(self, t: TurnInput, order: int, *, at: datetime | None = None,
                 existing_text: str | None = None) -> Turn:
        if existing_text is not None:
            return self.turn(turn_iri(self.tenant, t.conversation, order).value)
        node = turn_iri(self.tenant, t.conversation, order)
        return Turn(
            id=f"{t.conversation}/{order}", iri=node.value, conversation=t.conversation, order=order,
            role=t.role, speaker=t.speaker, at=(at or self._clock()).astimezone(UTC),
            text=t.text, caption=t.caption, external_id=t.external_id,
        )

    def set_watermark(self, txn: Any, conversation: str, order: int) -> None:
        """Inside a transaction: set the conversation's ``ag:extractedThrough`` to
        ``order`` (the highest turn processed by extraction)."""
        conv = conversation_iri(self.tenant, conversation)
        txn.remove_pattern(conv, P_THROUGH, None, TRANSCRIPTS)
        txn.add(Quad(conv, P_THROUGH, Literal(str(int(order)), datatype=R.X_INTEGER), TRANSCRIPTS))

    # ------------------------------------------------------------------ reads
    @staticmethod
    def _read(view: Any, node: NamedNode) -> Turn | None:
        d: dict[Any, Any] = {}
        for q in view.quads(node, None, None, TRANSCRIPTS):
            d[q.predicate] = q.object
        if d.get(R.A) != T_TURN:
            return None
        conv = _conversation_id(d[P_CONV].value)
        sp = d.get(P_SPEAKER)
        return Turn(
            id=f"{conv}/{int(d[P_ORDER].value)}", iri=node.value, conversation=conv,
            order=int(d[P_ORDER].value), role=IRI_ROLE[d[P_ROLE]],  # type: ignore[arg-type]
            speaker=R.slug_of(sp.value) if sp is not None else None,
            at=R.python_value(d[P_AT]), text=d[P_TEXT].value,
            caption=d[P_CAPTION].value if P_CAPTION in d else None,
            external_id=d[P_EXT].value if P_EXT in d else None,
        )

    def turn(self, turn: str) -> Turn:
        """One turn by id (``"<conversation>/<order>"``) or IRI.

        :raises UnknownMemory: when there is no such turn.
        """
        node = self.turn_iri(turn)
        with self.store.snapshot() as view:
            t = self._read(view, node)
        if t is None:
            raise UnknownMemory(f"no turn {turn!r} in tenant {self.tenant!r}")
        return t

    def turns(self, conversation: str, *, after: int = -1, roles: Sequence[str] | None = None,
              view: Any = None) -> list[Turn]:
        """Turns of ``conversation`` with order > ``after``, in order (``roles`` filters)."""
        conv = conversation_iri(self.tenant, conversation)
        with _maybe_snapshot(self.store, view) as v:
            nodes = v.subjects(P_CONV, conv, TRANSCRIPTS)
            out = [t for t in (self._read(v, n) for n in nodes if isinstance(n, NamedNode)) if t is not None]
        out = [t for t in out if t.order > after and (roles is None or t.role in roles)]
        out.sort(key=lambda t: t.order)
        return out

    def last_order(self, conversation: str, *, view: Any = None) -> int:
        """The highest order recorded in ``conversation`` (-1: none). Kept per conversation
        with the generation it was read at and followed through the commits since
        (``TenantStore.changes``: the orders they added), so a conversation's length costs
        nothing; queried again when a commit removed one of its turns, the commits are
        not known any more, or more than 256 generations passed."""
        conv = conversation_iri(self.tenant, conversation)
        with _maybe_snapshot(self.store, view) as v:
            gen = getattr(v, "generation", -1)
            with self._lock:
                got = self._last.get(conversation)
            last: int | None = None
            if got is not None and gen >= 0:
                g0, known = got
                if g0 == gen:
                    return known
                changes = getattr(self.store, "changes", None)
                commits = changes(g0, gen) if callable(changes) and 0 <= g0 < gen <= g0 + _LAST_GAP else None
                if commits is not None:
                    last = known
                    prefix = conv.value + "/turn/"
                    for c in commits:
                        if any(q.predicate == P_ORDER and q.subject.value.startswith(prefix) for q in c.removed):
                            last = None
                            break
                        for q in c.added:
                            if q.predicate == P_ORDER and q.subject.value.startswith(prefix):
                                last = max(last, int(q.object.value))
            if last is None:
                rows = list(v.query(_Q_LAST, substitutions={Variable("c"): conv}))
                last = int(rows[0]["last"].value) if rows and rows[0]["last"] is not None else -1
            if gen >= 0:
                with self._lock:
                    self._last.pop(conversation, None)
                    self._last[conversation] = (gen, last)
                    while len(self._last) > _LAST_MAX:
                        self._last.pop(next(iter(self._last)))
            return last

    def unprocessed(self, conversation: str) -> int:
        """Turns of ``conversation`` recorded after its extraction watermark
        (``Conversation.unprocessed`` without reading every turn)."""
        conv = conversation_iri(self.tenant, conversation)
        with self.store.snapshot() as v:
            through = v.objects(conv, P_THROUGH, TRANSCRIPTS)
            mark = int(through[0].value) if through else -1
            return max(0, self.last_order(conversation, view=v) - mark)

    def recent(self, conversation: str, n: int, *, view: Any = None) -> list[Turn]:
        """The last ``n`` turns of ``conversation`` (highest orders), oldest first; ``[]``
        for a conversation never recorded. Read by order down from :meth:`last_order`
        (O(n) for a conversation of any length); orders recorded with gaps wider than
        ``3 n`` are found by one sorted query instead."""
        if n <= 0:
            return []
        conv = conversation_iri(self.tenant, conversation)
        with _maybe_snapshot(self.store, view) as v:
            k = self.last_order(conversation, view=v)
            out: list[Turn] = []
            floor = k - 4 * n
            while k >= 0 and k > floor and len(out) < n:
                t = self._read(v, turn_iri(self.tenant, conversation, k))
                if t is not None:
                    out.append(t)
                k -= 1
            if len(out) < n and k >= 0:  # sparse orders: the store sorts them
                rows = v.query(_Q_RECENT + str(int(n)), substitutions={Variable("c"): conv})
                out = [t for t in (self._read(v, r["t"]) for r in rows if isinstance(r["t"], NamedNode))
                       if t is not None]
        out.sort(key=lambda t: t.order)
        return out

    def all_turns(self, view: Any = None) -> list[Turn]:
        """Every turn of the tenant, by conversation then order."""
        with _maybe_snapshot(self.store, view) as v:
            nodes = v.subjects(R.A, T_TURN, TRANSCRIPTS)
            out = [t for t in (self._read(v, n) for n in nodes if isinstance(n, NamedNode)) if t is not None]
        out.sort(key=lambda t: (t.conversation, t.order))
        return out

    def conversations(self) -> list[Conversation]:
        """Every conversation with its turn count, last order and time, participants and
        extraction watermark, sorted by id."""
        out = []
        with self.store.snapshot() as v:
            for r in v.query(_Q_CONVERSATIONS):
                out.append(self._conversation(v, r["c"], r))
        out.sort(key=lambda c: c.id)
        return out

    def conversation(self, conversation: str) -> Conversation:
        """One conversation (see :meth:`conversations`).

        :raises UnknownMemory: when it has never been recorded.
        """
        conv = conversation_iri(self.tenant, conversation)
        with self.store.snapshot() as v:
            if not v.contains(Quad(conv, R.A, T_CONV, TRANSCRIPTS)):
                raise UnknownMemory(f"no conversation {conversation!r} in tenant {self.tenant!r}")
            return self._conversation(v, conv, None)

    def _conversation(self, v: Any, conv: NamedNode, row: dict[str, Any] | None) -> Conversation:
        if row is None:
            orders = [int(o.value) for n in v.subjects(P_CONV, conv, TRANSCRIPTS)
                      for o in v.objects(n, P_ORDER, TRANSCRIPTS)]
            ats = [R.python_value(o) for n in v.subjects(P_CONV, conv, TRANSCRIPTS)
                   for o in v.objects(n, P_AT, TRANSCRIPTS)]
            n, last, last_at = len(orders), max(orders, default=-1), max(ats, default=None)
        else:
            n = int(row["n"].value)
            last = int(row["last"].value) if "last" in row else -1
            last_at = R.python_value(row["lastAt"]) if "lastAt" in row else None
        through = v.objects(conv, P_THROUGH, TRANSCRIPTS)
        parts = sorted(R.slug_of(p.value) for p in v.objects(conv, P_PARTICIPANT, None))
        return Conversation(
            id=_conversation_id(conv.value), iri=conv.value, turns=n, last_order=last, last_at=last_at,
            participants=parts, extracted_through=int(through[0].value) if through else -1,
        )

    def tail(self, conversation: str, *, view: Any = None) -> tuple[int, list[Turn]]:
        """The unprocessed tail: ``(watermark, ingestible turns after it)`` -- user and
        assistant turns only (tool, web and system output is never auto-ingested)."""
        conv = conversation_iri(self.tenant, conversation)
        with _maybe_snapshot(self.store, view) as v:
            through = v.objects(conv, P_THROUGH, TRANSCRIPTS)
            mark = int(through[0].value) if through else -1
            turns = self.turns(conversation, after=mark, view=v)
        return mark, [t for t in turns if t.role in INGESTIBLE]

    def visible(self, principal: Principal, conversation_participants: Sequence[str]) -> bool:
        """Whether ``principal`` may read a conversation: operators all; a member the
        conversations they spoke in."""
        return principal.is_operator or principal.person in conversation_participants


class _maybe_snapshot:
    """``with _maybe_snapshot(store, view) as v``: ``view`` if given, else a fresh snapshot."""

    def __init__(self, store: Any, view: Any) -> None:
        self.store, self.view = store, view
        self._cm: Any = None

    def __enter__(self) -> Any:
        if self.view is not None:
            return self.view
        self._cm = self.store.snapshot()
        return self._cm.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)


