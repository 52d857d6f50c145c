"""Rule-set evaluation: semi-naive materialization, incremental maintenance, explain.

Semantics: SRL draft (``../shared/conformance/srl-spec/sparql12-rl/index.html``),
sections "Rule Set Evaluation", "Evaluation of a Rule" and "Evaluation of a Rule Set":

* the evaluation graph starts as the base graph ``G0`` plus the ``DATA`` triples;
* strata (:func:`reckon.datalog.stratify.check_program`) are evaluated in order; in each
  stratum the run-once rules (``SL.once``: assignment, aggregate or head blank node)
  are evaluated once, then the general rules (``SL.general``) repeatedly until no new
  triple is inferred;
* a rule body is evaluated element by element (``evalRuleElements``); ``WHERE DATA``
  bodies and ``NOT DATA`` negations match ``G0`` only (the spec passes ``G0`` as ``GD``);
* head blank nodes are fresh per solution (CHANGES.md 2026-08-24);
* the result, the *inference graph*, is every triple of the evaluation graph that is
  not in ``G0`` (``DATA`` triples included).

Implementation (not SPARQL over Oxigraph, see DESIGN.md "Rules"): terms are
dictionary-encoded as ints, facts are ``(s, p, o)`` int tuples held in hash indexes
(:mod:`reckon.datalog._factstore`); each rule body is compiled once per semi-naive
variant into nested loops (:mod:`reckon.datalog._plan`). General rules run semi-naively:
after one full round, a rule is re-run once per body atom ``i`` that can match the
previous round's new facts, with atom ``i`` over that delta and the other atoms over
the full store (standard semi-naive: correct, duplicates only cost time). Only atoms
that can match the head of a general rule *of the same stratum* get delta variants:
other predicates are fixed while the stratum runs.

Each derived fact records the evaluation round in which it was first added (its
*rank*); :meth:`Reasoner.explain` uses ranks to pick a well-founded derivation.

Incremental maintenance (:meth:`Reasoner.apply`) is in :mod:`reckon.datalog.maintain`
(DRed, Gupta, Mumick & Subrahmanian 1993, "Maintaining views incrementally").

Example::

    >>> from pyoxigraph import NamedNode as N, Triple
    >>> from reckon.datalog.srl import parse_srl
    >>> rs = parse_srl("PREFIX : <http://ex/> RULE { ?x :anc ?z } WHERE { ?x :par ?y . ?y :anc ?z } "
    ...                "RULE { ?x :anc ?y } WHERE { ?x :par ?y }")
    >>> r = Reasoner(rs)
    >>> r.load([Triple(N("http://ex/a"), N("http://ex/par"), N("http://ex/b")),
    ...         Triple(N("http://ex/b"), N("http://ex/par"), N("http://ex/c"))])
    >>> len(r.inferred())
    3
    >>> d = r.apply(delete=[Triple(N("http://ex/b"), N("http://ex/par"), N("http://ex/c"))])
    >>> len(d.removed), len(r.inferred())
    (2, 1)
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any

from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable

from reckon.datalog import _cache
from reckon.datalog import expr as _expr
from reckon.datalog._columns import LazyRanks, RankColumns, TermColumns, numpy_for, rank_columns, term_columns
from reckon.datalog._columns import Ranks as _Ranks
from reckon.datalog._factstore import BNODE, IRI, LITERAL, TRIPLE, Fact, FactStore, TermDictionary
from reckon.datalog._guard import Guard
from reckon.datalog._plan import PlanCompiler, RuleInfo, prepare_rule
from reckon.datalog.model import INTERNAL, Aggregate, Negation, RuleSet, TriplePattern, TripleTermPattern
from reckon.datalog.stratify import matches

if TYPE_CHECKING:  # pragma: no cover
    from reckon.datalog.explain import Explanation

__all__ = ["NOTHING", "Delta", "Inconsistency", "Limits", "Reasoner", "materialize"]

RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
NOTHING = NamedNode("http://www.w3.org/2002/07/owl#Nothing")
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
"""``owl:Nothing``: ``?x rdf:type owl:Nothing`` is how a rule program states an
inconsistency (the RDFox convention; ``rules/owl2rl.srl``, ``rules/rdfs.srl``)."""

_NAME_KINDS = bytes(int(k in (IRI, BNODE)) for k in range(256))
"""``bytes.translate`` table: 1 for the term kinds whose value is in a state's name column."""


@dataclass(frozen=True)
class Limits:
    """Documented limits of one evaluation (``load`` or ``apply``), and what they cost.

    :ivar max_derived: most facts the evaluation graph may hold beyond the base graph
        (counted over the whole state, ``DATA`` triples included). Default 20,000,000;
        at ~0.5 KB per fact (:data:`~reckon.datalog._guard.BYTES_PER_FACT`) that is
        ~10 GB, so on most machines the byte budget stops a runaway first.
    :ivar max_rounds: most evaluation rounds of one stratum (one round = one pass of
        the run-once rules, or one semi-naive iteration of the general rules). Default
        100,000; a round of a small program costs microseconds to milliseconds.
    :ivar max_bytes: most bytes one evaluation may add to the process's resident memory
        (RSS). ``None`` (default): 4 GiB (:data:`~reckon.datalog._guard.DEFAULT_MAX_BYTES`,
        ~8M derived facts; LUBM(10) needs ~1.2 GB), and at most 75 % of what the process
        can still take when the evaluation starts (available memory, cgroup limit,
        ``RLIMIT_RSS`` / ``RLIMIT_DATA``; under ``RLIMIT_AS`` the virtual size must also
        stay under 75 % of it). Checked after every round, with a growth check (the next
        round, as large as this one, must fit), and inside a round that collects more
        facts than the budget leaves room for. Reading the RSS costs ~5 µs per round.
    :ivar max_term_depth: most levels of triple-term nesting that rule heads may build
        (``<<( ?x :p <<( ... )>> )>>``), counted from the terms of the data. Default 256.

    A program that grows without bound — heads building ever-deeper triple terms, a
    cross product of millions of facts, blank nodes minted forever — stops with
    :class:`~reckon._errors.ResourceLimit` (an
    :class:`~reckon._errors.EvaluationLimitExceeded`) naming the limit and the rule,
    while the process is healthy; the reasoner keeps its previous state.
    """

    max_derived: int = 20_000_000
    max_rounds: int = 100_000
    max_bytes: int | None = None
    max_term_depth: int = 256


@dataclass(frozen=True)
class Delta:
    """A change of the inference graph (derived triples not in the base graph).

    :ivar added: triples that entered the inference graph.
    :ivar removed: triples that left it.
    """

    added: frozenset[Triple] = frozenset()
    removed: frozenset[Triple] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


@dataclass(frozen=True)
class Inconsistency:
    """A clash the rules found: the node that is an instance of ``owl:Nothing``.

    :ivar node: the term x of the fact ``x rdf:type owl:Nothing``.
    :ivar rule: the rule that concluded it (its IRI, e.g.
        ``<urn:reckon:rule:cax-dw>``), or ``"asserted"`` when the base graph states it.
    :ivar facts: the clashing facts: the body facts of that rule's derivation (e.g.
        ``:A owl:disjointWith :B``, ``:x rdf:type :A``, ``:x rdf:type :B``).
    :ivar explanation: the derivation tree (``None`` when asserted).
    """

    node: object
    rule: str
    facts: tuple[object, ...] = ()
    explanation: Any = None

    @property
    def triple(self) -> Triple:
        """``node rdf:type owl:Nothing``."""
        return Triple(self.node, RDF_TYPE, NOTHING)  # type: ignore[arg-type]

    def render(self) -> str:
        """Rule, clashing facts and explanation tree as indented text."""
        if self.explanation is None:
            return f"{self.node} rdf:type owl:Nothing\n  asserted in the base graph"
        text: str = self.explanation.render()
        return text


@dataclass
class _State:
    """Everything ``load`` builds and ``apply`` maintains (swapped in on success)."""

    full: FactStore
    base: FactStore
    data: set[Fact]
    rank: dict[Fact, int] = field(default_factory=_Ranks)
    clock: int = 1
    outputs: dict[int, set[Fact]] = field(default_factory=dict)
    """Run-once non-monotone rule index -> every head instance of its last full
    evaluation (valid until one of its inputs changes; see maintain)."""


@dataclass
class _StratumInfo:
    """Static facts about one stratum used to skip or choose maintenance work.

    Predicate-id sets are ``None`` when a variable predicate makes them "any predicate".

    :ivar reads: predicates read by positive body atoms over the evaluation graph.
    :ivar heads: predicates of head templates.
    :ivar closed: rule index -> predicates read inside NOT / AGGREGATE over the
        evaluation graph (only rules that have such elements).
    :ivar base_reads: rule index -> predicates read from ``G0`` (``WHERE DATA`` atoms,
        ``NOT DATA``; only rules that read ``G0``).
    :ivar delta_atoms: rule index -> (body index, predicate id) of the atoms that can
        match a head of a general rule of the same stratum (semi-naive variants).
    :ivar atoms: (rule, body index, predicate id) of every positive atom over the
        evaluation graph (maintenance deltas).
    :ivar base_atoms: the same for the atoms of :attr:`~reckon.datalog._plan.RuleInfo.base_monotone`
        ``WHERE DATA`` rules, which read the base graph (maintained from its deltas).
    :ivar base_atom_preds: predicates of ``base_atoms`` (``None`` = any).
    """

    rules: list[RuleInfo]
    reads: set[int] | None
    heads: set[int] | None
    closed: dict[int, set[int] | None]
    base_reads: dict[int, set[int] | None]
    delta_atoms: dict[int, list[tuple[int, int | None]]]
    atoms: list[tuple[RuleInfo, int, int | None]]
    base_atoms: list[tuple[RuleInfo, int, int | None]] = field(default_factory=list)
    base_atom_preds: set[int] | None = field(default_factory=set)


class Reasoner:
    """Materializes a rule set over a base graph and keeps it up to date.

    :param ruleset: the rule set; checked with
        :func:`~reckon.datalog.stratify.check_program` (well-formed, stratifiable).
    :param limits: evaluation limits (:class:`Limits`).
    :param now: the ``xsd:dateTime`` literal ``NOW()`` returns, fixed for the life of the
        reasoner so that incremental results equal a fresh evaluation (default: the time
        of construction).
    :param refuse_inconsistent: when true, :meth:`apply` refuses a change after which the
        rules derive a new inconsistency (:meth:`inconsistencies`): it raises
        :class:`~reckon._errors.InconsistentGraph` and the reasoner is left exactly as
        before. :meth:`load` never refuses (an inconsistent base graph is reported, not
        rejected). Default off.
    :param refuse_when: a triple that, when the graph holds it after a change (asserted
        or derived), makes :meth:`apply` refuse the change like ``refuse_inconsistent``:
        the switch is data, e.g. a tenant setting ``rk:settings rk:refuseInconsistent
        true`` (:meth:`reckon.schema.program.Program.reasoner_factory`).
    :param canonical: the identity of literals (term -> term), e.g.
        :func:`reckon.store.terms.canonical_term` for a reasoner kept equal to a tenant
        store: every spelling of one value is one term, computed literals and rule
        constants come out in the store's form (see
        :class:`reckon.datalog._factstore.TermDictionary`). ``None``: RDF term equality.
    :param datatypes: the recognized datatypes D of the entailment regime (datatype
        IRIs; RDF 1.1 Semantics §7, a W3C test manifest's ``mf:recognizedDatatypes``).
        Outside D a literal's value is unknown: it is never ill-typed, equal to or
        different from another value, and its datatype IRI is a class like any other;
        ``xsd:string`` and ``rdf:langString`` are always recognized. The program's
        ``rki:recognizedDatatype`` ``DATA`` triples are restricted to D and the ``rkf:``
        datatype functions see only D (:class:`reckon.datalog.expr.EvalContext`).
        ``None`` (default): every datatype Reckon supports.
    :param drop_unread: keep out of the base graph every triple whose predicate no rule
        can read: when every body atom (also inside NOT, AGGREGATE and ``WHERE DATA``) and
        every head has a constant predicate, a triple of any other predicate can neither
        match a body nor equal a derived fact, so the inference graph, its deltas and its
        explanations are those of the whole base graph; :meth:`base` then returns only the
        triples kept. A memory's content, label, author and timestamps are such triples
        in a tenant: at 100k memories half the base facts and of the term dictionary,
        which a fresh process decodes before its first write (:meth:`restore_state`).
        Off when some predicate is a variable. Default off (:meth:`base` is the whole
        base graph).
    :raises RuleSetInvalid: when the rule set is not well-formed or not stratifiable.

    ``stats`` (updated by :meth:`load` / :meth:`apply`): ``strata`` (number),
    ``facts_per_stratum`` (new facts added per stratum), ``rounds_per_stratum``,
    ``seconds_per_stratum``, ``rounds`` (total), ``derived`` (facts beyond the base
    graph), ``seconds`` (wall time of the last call); after :meth:`apply` also
    ``maintained_strata`` and ``nonmonotone_rules`` (rules re-evaluated in full).

    Not thread-safe: callers serialize ``load`` / ``apply`` (the store layer's writer
    lock) and must not read while a call runs.
    """

    def __init__(
        self,
        ruleset: RuleSet,
        *,
        limits: Limits = Limits(),
        now: Literal | None = None,
        refuse_inconsistent: bool = False,
        canonical: Callable[[object], object] | None = None,
        datatypes: Iterable[str] | None = None,
        refuse_when: Triple | None = None,
        drop_unread: bool = False,
    ) -> None:
        strata = _cache.check_program_cached(ruleset)
        self._program = _cache.program_cache(ruleset)
        self.ruleset = ruleset
        self.limits = limits
        self.refuse_inconsistent = refuse_inconsistent
        self.refuse_when = refuse_when
        self.generalized = ruleset.generalized
        self._hidden_ids: set[int] = set()
        self._hidden_upto = 0
        self._ctx = _expr.EvalContext(now=now, base=ruleset.base, datatypes=None if datatypes is None else frozenset(datatypes))
        self._dic = TermDictionary(canonical)
        _intern_constants(self._dic, ruleset)  # stable ids: the generated plans (and their cache) do not depend on the data
        self._rules: list[RuleInfo] = []
        self._strata: list[list[RuleInfo]] = []
        order = {id(r): i for i, r in enumerate(ruleset.rules)}
        for si, st in enumerate(strata):
            infos = []
            for once, rules in ((True, st.once), (False, st.general)):
                for r in rules:
                    info = prepare_rule(order.get(id(r), len(order) + len(self._rules)), r, si, once)
                    infos.append(info)
            self._rules.extend(infos)
            self._strata.append(infos)
        self._rules.sort(key=lambda i: i.index)
        self._by_index = {i.index: i for i in self._rules}
        self._memo: dict[int, dict[tuple[int, ...], tuple[int, ...]]] = {}
        self._memo_rev: dict[int, tuple[int, tuple[int, ...]]] = {}
        self._data_ids = {self._dic.encode(t) for t in ruleset.data if self._recognized_data(t)}
        self._sinfo = [self._stratum_info(st) for st in self._strata]
        from reckon.datalog._plan import pattern_predicate

        self._const_atoms: dict[int, list[tuple[int, int]]] = {
            info.index: [
                (k, self._dic.intern(p))
                for k in info.atoms
                if (p := pattern_predicate(info.rule.body[k])) is not None  # type: ignore[arg-type]
            ]
            for info in self._rules
        }
        self.stats: dict[str, Any] = {}
        self._index_below = self._constant_predicates_only()
        self._read_preds: frozenset[object] | None = None
        if drop_unread and self._index_below is not None and all(si.heads is not None for si in self._sinfo):
            dic = self._dic
            keep: set[object] = {dic.terms[i] for i in range(self._index_below) if dic.kinds[i] == IRI}
            if refuse_when is not None:
                keep.add(refuse_when.predicate)
            self._read_preds = frozenset(keep)
        self._state = _State(self._store(), self._store(indexed=self._needs_base_index()), set())
        self._guard = Guard(limits, self._dic)
        self._compiler = PlanCompiler(
            self._dic, self._state.full, self._mint, self._ctx, self._guard, self.generalized, self._hidden_ids,
            self._program,
        )
        self.load(())

    def _constant_predicates_only(self) -> int | None:
        """The id below which every predicate a rule body can read lies (the dictionary's
        size once the rule constants are interned), or ``None`` when some body atom (also
        inside NOT / AGGREGATE, over the base graph or not) has a variable predicate: a
        plan then looks up whatever predicate the data binds. Predicates from the data
        only (ids above) are kept out of the fact stores' indexes
        (:attr:`FactStore.index_below <reckon.datalog._factstore.FactStore.index_below>`)."""
        for si in self._sinfo:
            parts = [si.reads, si.base_atom_preds, *si.closed.values(), *si.base_reads.values()]
            if any(x is None for x in parts) or any(pid is None for _, _, pid in (*si.atoms, *si.base_atoms)):
                return None
        return len(self._dic)

    def _readable(self, triples: Iterable[Triple]) -> list[Triple]:
        """The triples of ``triples`` the base graph keeps (``drop_unread``: those whose
        predicate a rule can read; else all)."""
        keep = self._read_preds
        if keep is None:
            return list(triples)
        return [t for t in triples if t.predicate in keep]

    def _store(self, facts: Iterable[Fact] = (), *, indexed: bool = True, fresh: bool = False) -> FactStore:
        return FactStore(facts, indexed=indexed, fresh=fresh, index_below=self._index_below)

    def _recognized_data(self, t: Triple) -> bool:
        """A program ``DATA`` triple is kept unless it declares ``ddd rki:recognizedDatatype``
        for a datatype outside the regime's recognized datatypes (``datatypes=``)."""
        d = self._ctx.datatypes
        if d is None or t.predicate.value != INTERNAL + "recognizedDatatype":
            return True
        s = t.subject
        return not isinstance(s, NamedNode) or s.value in d or s.value in (_XSD_STRING, _LANG_STRING)

    # -- public API -------------------------------------------------------------

    def load(self, base: Iterable[Triple]) -> None:
        """Replace the base graph and materialize from scratch.

        :param base: the asserted triples (``G0``).
        :raises ResourceLimit: when a limit is hit (:class:`Limits`); the reasoner keeps
            its previous state.
        """
        with _no_cyclic_gc():
            self._load(base)

    def _load(self, base: Iterable[Triple]) -> None:
        t0 = time.perf_counter()
        dic = self._dic
        dic.materialize()  # every term of the base graph is looked up
        bstore = self._store(indexed=self._needs_base_index())
        bstore.add_all(dic.encode_all(self._readable(base)))
        if bstore.indexed:
            full = bstore.copy()
        else:
            full = self._store(bstore.facts, fresh=True)
        state = _State(full, bstore, set(self._data_ids))
        clock = state.clock
        for f in full.add_all(self._data_ids):
            state.rank[f] = clock
        state.clock += 1
        saved = (self._memo, self._memo_rev, self._compiler)
        self._memo, self._memo_rev = {}, {}
        self._compiler = PlanCompiler(
            dic, full, self._mint, self._ctx, self._guard, self.generalized, self._hidden_ids, self._program
        )
        stats = self._new_stats()
        self._hidden()
        self._guard.start()
        self._guard.before_round(len(full) - len(bstore))
        try:
            for si in range(len(self._strata)):
                self._run_stratum(state, si, stats)
        except BaseException:
            self._memo, self._memo_rev, self._compiler = saved
            raise
        self._state = state
        self._program.save()
        _warm_object_indexes(self._strata, full, dic)
        stats["derived"] = len(full) - len(bstore)
        stats["seconds"] = time.perf_counter() - t0
        self.stats = stats

    def apply(self, insert: Iterable[Triple] = (), delete: Iterable[Triple] = ()) -> Delta:
        """Change the base graph and maintain the inference graph incrementally.

        Deletions are applied before insertions (a triple in both ends up asserted).
        See :mod:`reckon.datalog.maintain` for exactly what is re-evaluated.

        :returns: the change of the inference graph.
        :raises ResourceLimit: when a limit is hit (:class:`Limits`); nothing changes.
        """
        from reckon.datalog.maintain import apply_changes

        insert, delete = self._readable(insert), list(delete)
        if len(insert) + len(delete) >= self.SETTLE_AT:
            self.settle()
        try:
            with _no_cyclic_gc():
                return apply_changes(self, insert, delete)
        finally:
            self._program.save()

    STATE_VERSION = 6
    """Version of :meth:`dump_state`'s format (bumped with any change of the layout).
    2: the term dictionary in columns (one list of IRI / blank-node strings, literal
    values with datatype numbers, sparse language tags, triple-term component ids)
    instead of one tuple per term: fewer objects to load, decoded by C-level maps.
    3: no sets, which :mod:`marshal` sorts as it writes them (a 10k-memory state dumped
    in 1.26 CPU s, 0.8 of them in the fact stores' sets): the fact stores as lists
    (:meth:`FactStore.to_lists <reckon.datalog._factstore.FactStore.to_lists>`), the
    run-once outputs and ``DATA`` facts as lists; the data's own predicates unindexed
    (:attr:`FactStore.index_below <reckon.datalog._factstore.FactStore.index_below>`).
    4: the fact stores' facts and index entries as buffers of C ints (one
    ``bytes`` each instead of a tuple per fact and a list per index key: reading them
    creates no objects, and an index entry no write reads is never decoded), with the
    machine's integer layout recorded.
    5: format 4 and whether the base graph holds only the triples a rule can read
    (``drop_unread``). A reasoner with ``drop_unread`` reads a state without it by
    dropping the unread facts (one pass over the facts); the other way round is refused
    (the triples are not there).
    6: everything read in place (:mod:`reckon.datalog._columns`): the terms as UTF-8
    blobs with offsets and a hash table of their written forms, each term decoded when
    first read; each fact store's facts as per-predicate sorted keys, found by binary
    search (the evaluation graph no longer written beside the base graph); the ranks
    beside the same keys; the helper-vocabulary ids listed. A restore builds no term,
    fact or rank object: a fresh process's first write on a 100k-memory tenant paid
    ~1 s of the 1.3 s for building them (format 5)."""

    READ_STATE_VERSIONS = (1, 3, 4, 5, STATE_VERSION)
    """The formats :meth:`restore_state` reads: 1 (sets, one tuple per term; what a
    tenant last written by an older engine holds), 3 (lists), 4 and 5 (buffers) are
    converted on reading, so an upgrade costs a restore, not a recompute."""

    def dump_state(self) -> bytes:
        """The materialization as bytes (:mod:`marshal` of ints, bytes, tuples, lists,
        dicts and strings: no pickle, nothing executable), for :meth:`restore_state` in
        another process with the same rule set (format :attr:`STATE_VERSION`): the term
        dictionary, the base and evaluation graphs and the ranks in columns
        (:mod:`reckon.datalog._columns`), the run-once rule outputs, the blank nodes
        minted so far. Whatever a restore left in its columns and nothing changed is
        written as it was read; the rest is sorted with numpy. The caller keys it by
        program and data (the store layer: ``TenantStore``'s reasoner state file)."""
        import marshal

        dic, st = self._dic, self._state
        np = numpy_for(len(st.full) + len(st.base))  # a small state is sorted without importing numpy
        terms, triples = term_columns(dic.terms, dic.kinds, dic.parts, dic.restored_columns(), np)
        payload = (
            self.STATE_VERSION, bytes(dic.kinds), terms, triples, sorted(self._hidden()),
            st.full.to_columns(np), st.base.to_columns(np), list(st.data), rank_columns(st.rank, np), st.clock,
            {k: list(v) for k, v in st.outputs.items()}, self._memo, self._memo_rev, self._read_preds is not None,
        )
        enabled = gc.isenabled()
        gc.disable()
        try:
            return marshal.dumps(payload)  # type: ignore[arg-type]  # typeshed's _Marshallable omits nested containers
        finally:
            if enabled:
                gc.enable()

    def restore_state(self, data: bytes) -> None:
        """Replace this reasoner's state by one :meth:`dump_state` wrote (for this rule
        set: the caller checks that; the rule constants' ids are checked here).

        :raises ValueError: when ``data`` is not a state of this format or does not fit
            this rule set (the reasoner is left as it was).
        """

        enabled = gc.isenabled()
        gc.disable()  # ~10^5 new containers: the cyclic collector would rescan them over and over
        try:
            self._restore_state(data)
            # the restored graph is long-lived and acyclic (ints, tuples, sets, dicts: freed
            # by reference counting): keep the cyclic collector from rescanning it
            gc.freeze()
        finally:
            if enabled:
                gc.enable()

    def _restore_state(self, data: bytes) -> None:
        import marshal

        try:
            loaded = marshal.loads(data)
            version = loaded[0]
        except (EOFError, ValueError, TypeError, IndexError, KeyError) as e:
            raise ValueError(f"not a reasoner state: {e}") from e
        if version not in self.READ_STATE_VERSIONS:
            raise ValueError("reasoner state of another format version")
        if version == self.STATE_VERSION:
            self._restore_columns(loaded)
            return
        try:
            if version == 1:
                loaded = (*self._from_version_3(self._from_version_1(loaded)), False)
            elif version == 3:
                loaded = (*self._from_version_3(loaded), False)
            elif version == 4:  # format 5 with every base triple kept
                loaded = (5, *loaded[1:], False)
            (version, kinds, names, values, dts, dt_names, langs, triples, full_parts, base_parts, data_f,
             rank, clock, outputs, memo, memo_rev, dropped) = loaded
        except (ValueError, TypeError) as e:
            raise ValueError(f"not a reasoner state: {e}") from e
        if dropped and self._read_preds is None:
            raise ValueError("reasoner state without the unread triples (drop_unread), for a reasoner that keeps them")
        if not isinstance(kinds, bytes):
            raise ValueError("reasoner state of another format version")
        dic = self._dic
        n0, n = len(dic.terms), len(kinds)
        try:
            # the kinds say which column each id reads next: IRIs and blank nodes share
            # ``names``; triple terms are built below, in id order (components come first)
            n_names = kinds.count(IRI) + kinds.count(BNODE)
            n_lits, n_triples = kinds.count(LITERAL), kinds.count(TRIPLE)
            if (n_names != len(names) or n_lits != len(values) or n_lits != len(dts)
                    or 3 * n_triples != len(triples) or n_names + n_lits + n_triples != n or n < n0):
                raise ValueError("columns do not match the kinds")
            dt_nodes = [NamedNode(d) for d in dt_names]
            lits: list[object] = [None if d < 0 else Literal(v, datatype=dt_nodes[d]) for v, d in zip(values, dts)]
            for j, (lang, direction) in langs.items():
                lits[j] = (Literal(values[j], language=lang, direction=_direction(direction)) if direction
                           else Literal(values[j], language=lang))
            if None in lits:
                raise ValueError("a language-tagged literal without its tag")
            name_it = iter(names)
            nodes: list[object] = [
                NamedNode(v) if k == IRI else BlankNode(v)
                for k, v in zip(kinds.translate(None, bytes((LITERAL, TRIPLE))), name_it)
            ] if kinds.count(BNODE) else list(map(NamedNode, names))
            columns = [iter(nodes), iter(nodes), iter(lits), iter([None] * n_triples)]
            columns[BNODE] = columns[IRI]
            decoded: list[object] = list(map(next, map(columns.__getitem__, kinds)))
            parts: dict[int, Fact] = {}
            if n_triples:
                tpos = [i for i, k in enumerate(kinds) if k == TRIPLE]
                for j, i in enumerate(tpos):
                    key = (triples[3 * j], triples[3 * j + 1], triples[3 * j + 2])
                    if not all(0 <= c < i for c in key):
                        raise ValueError("a triple term names a later id")
                    decoded[i] = Triple(decoded[key[0]], decoded[key[1]], decoded[key[2]])
                    parts[i] = key
        except (TypeError, ValueError, IndexError, SyntaxError, KeyError, AttributeError) as e:
            raise ValueError(f"reasoner state does not decode: {e}") from e
        for i in range(n0):
            k = kinds[i]
            if k != dic.kinds[i]:
                raise ValueError("reasoner state of another rule set (its constants differ)")
            same = (parts.get(i) == dic.parts.get(i)) if k == TRIPLE else (decoded[i] == dic.terms[i])
            if not same:
                raise ValueError("reasoner state of another rule set (its constants differ)")
        base = FactStore.from_lists(base_parts)
        full = FactStore.from_lists(full_parts, beside=base.facts)
        if base.indexed != self._needs_base_index() or not (full.index_below == base.index_below == self._index_below):
            raise ValueError("reasoner state of another rule set (base index, indexed predicates)")
        try:
            ranks = _Ranks(rank)
            outs = {k: set(v) for k, v in outputs.items()}
            data_set = set(data_f)
        except (TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"reasoner state does not decode: {e}") from e
        # commit: extend the dictionary in place (plans, guard and constant ids keep it);
        # an id already known (a constant, another spelling) keeps its entry
        new = decoded[n0:]
        ids = dict(zip(reversed(new), range(n - 1, n0 - 1, -1)))  # the first id of a term wins
        ids.update(dic.ids)
        dic.ids.clear()
        dic.ids.update(ids)  # into an empty dict: one copy of the table, not 10^5 inserts into a small one
        dic.terms.extend(new)
        dic.kinds.extend(kinds[n0:])
        for i, key in parts.items():
            if i >= n0:
                dic.parts[i] = key
                dic.triple_ids[key] = i
        if self._read_preds is not None and not dropped:  # a state that kept every base triple
            below = len(dic) if self._index_below is None else self._index_below  # set: drop_unread needs it
            also = {tid for t in self._read_preds if (tid := dic.lookup(t)) is not None and tid >= below}
            unread = [f for f in base.facts if f[1] >= below and f[1] not in also]
            base.facts.difference_update(unread)
            full.facts.difference_update(unread)
        self._state = _State(full, base, data_set, ranks, clock, outs)
        self._memo, self._memo_rev = memo, memo_rev
        # the helper-vocabulary IRIs (_hidden), found in the name column: no term is read
        name_ids = compress(range(n), kinds.translate(_NAME_KINDS))  # the id of each entry of names
        hidden = compress(name_ids, map(str.startswith, names, repeat(INTERNAL)))
        self._hidden_ids.clear()
        self._hidden_ids.update(i for i in hidden if kinds[i] == IRI)
        self._hidden_upto = n
        self._compiler = PlanCompiler(
            dic, full, self._mint, self._ctx, self._guard, self.generalized, self._hidden_ids, self._program
        )

    def _restore_columns(self, loaded: Any) -> None:
        """Restore a state of format 6: every column checked for size, the rule constants
        decoded and compared, then the columns handed to the dictionary, the fact stores
        and the ranks as they are (:mod:`reckon.datalog._columns`); nothing changes
        before all checks passed.

        :raises ValueError: as :meth:`restore_state`."""
        try:
            (_version, kinds, term_w, triples, hidden, full_parts, base_parts, data_f, rank_w, clock, outputs, memo,
             memo_rev, dropped) = loaded
        except (ValueError, TypeError) as e:
            raise ValueError(f"not a reasoner state: {e}") from e
        if dropped and self._read_preds is None:
            raise ValueError("reasoner state without the unread triples (drop_unread), for a reasoner that keeps them")
        dic = self._dic
        n0, n = len(dic.terms), len(kinds) if isinstance(kinds, bytes) else -1
        try:
            if not isinstance(kinds, bytes) or not isinstance(triples, list) or not isinstance(term_w, tuple):
                raise ValueError("columns of another shape")
            cols = TermColumns(term_w, kinds, _direction)
            if 3 * kinds.count(TRIPLE) != len(triples) or n < n0:
                raise ValueError("columns do not match the kinds")
            i, j = -1, 0
            while (i := kinds.find(TRIPLE, i + 1)) >= 0:  # a triple term's components come first
                if not all(isinstance(c, int) and 0 <= c < i for c in triples[j:j + 3]):
                    raise ValueError("a triple term names a later id")
                j += 3
            for i in range(n0):  # the rule constants, first in every dictionary of this rule set
                k = kinds[i]
                same = (k == dic.kinds[i]) and (
                    dic.parts.get(i) == tuple(triples[3 * (c := kinds.count(TRIPLE, 0, i)):3 * c + 3]) if k == TRIPLE
                    else cols.decode(i) == dic.terms[i])
                if not same:
                    raise ValueError("reasoner state of another rule set (its constants differ)")
            base = FactStore.from_columns(base_parts)
            full = FactStore.from_columns(full_parts)
            if base.indexed != self._needs_base_index() or not (
                    full.index_below == base.index_below == self._index_below):
                raise ValueError("reasoner state of another rule set (base index, indexed predicates)")
            ranks = LazyRanks.restored(RankColumns(rank_w))
            outs = {int(k): set(v) for k, v in outputs.items()}
            data_set = set(data_f)
            hidden_ids = set(hidden)
            if not isinstance(clock, int) or not isinstance(memo, dict) or not isinstance(memo_rev, dict):
                raise ValueError("a clock or memo of another shape")
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, UnicodeDecodeError) as e:
            raise ValueError(f"reasoner state does not decode: {e}") from e
        # commit: extend the dictionary in place (plans, guard and constant ids keep it)
        dic.restore_columns(cols, triples)
        if self._read_preds is not None and not dropped:  # a state that kept every base triple
            below = len(dic) if self._index_below is None else self._index_below
            also = {tid for t in self._read_preds if (tid := dic.lookup(t)) is not None and tid >= below}
            unread = [f for f in base.facts if f[1] >= below and f[1] not in also]
            base.facts.difference_update(unread)
            full.facts.difference_update(unread)
        self._state = _State(full, base, data_set, ranks, clock, outs)
        self._memo, self._memo_rev = memo, memo_rev
        self._hidden_ids.clear()
        self._hidden_ids.update(hidden_ids)
        self._hidden_upto = n
        self._compiler = PlanCompiler(
            dic, full, self._mint, self._ctx, self._guard, self.generalized, self._hidden_ids, self._program
        )

    def settle(self) -> None:
        """Decode whatever a restore left in its columns (terms, facts, ranks) into the
        plain containers, whose reads cost a hash lookup instead of a binary search:
        called before a change large enough for that to matter (:meth:`apply`)."""
        st = self._state
        self._dic.materialize()
        st.full.settle()
        st.base.settle()
        if type(st.rank) is LazyRanks:
            st.rank.materialize()

    SETTLE_AT = 2_000
    """Changed triples from which :meth:`apply` first calls :meth:`settle`."""

    def _from_version_3(self, loaded: Any) -> tuple[Any, ...]:
        """A format-3 payload (fact stores as lists) in the current layout.

        :raises ValueError: when it is not of that shape."""
        try:
            out = list(loaded)
            out[0] = self.STATE_VERSION
            out[8] = FactStore.upgrade_lists(out[8])
            out[9] = FactStore.upgrade_lists(out[9])
        except (TypeError, IndexError) as e:
            raise ValueError(f"not a format-3 reasoner state: {e}") from e
        return tuple(out)

    def _from_version_1(self, loaded: Any) -> tuple[Any, ...]:
        """A format-1 payload (one tuple per term: ``(value,)`` or ``(value, datatype,
        language, direction)`` or a triple term's component ids; fact stores as sets with
        every predicate indexed) in the layout of format 3, for :meth:`_from_version_3`.

        :raises ValueError: when it is not of that shape."""
        below = self._index_below

        def keep(p: int) -> bool:
            return below is None or p < below

        def store(parts: Any) -> tuple[Any, ...]:
            facts, spo, pos, count, pos_preds, pos_all, indexed = parts

            def index(ix: Any) -> dict[int, tuple[list[int], list[list[int]]]]:
                return {p: (list(d), list(map(list, d.values()))) for p, d in ix.items() if keep(p)}

            return ((False, list(facts)), index(spo), index(pos), {p: c for p, c in count.items() if keep(p)},
                    sorted(p for p in pos_preds if keep(p)), pos_all, indexed, below)

        try:
            _, terms, kinds, full_parts, base_parts, data_f, rank, clock, outputs, memo, memo_rev = loaded
            if not isinstance(kinds, bytes) or len(kinds) != len(terms):
                raise ValueError("terms and kinds of different lengths")
            names: list[str] = []
            values: list[str] = []
            dts: list[int] = []
            dt_table: dict[str, int] = {}
            langs: dict[int, tuple[str, str | None]] = {}
            triples: list[int] = []
            for k, enc in zip(kinds, terms):
                if k == IRI or k == BNODE:
                    names.append(enc[0])
                elif k == LITERAL:
                    value, dt, lang, direction = enc
                    if lang:
                        langs[len(values)] = (lang, direction)
                        dts.append(-1)
                    else:
                        dts.append(dt_table.setdefault(dt, len(dt_table)))
                    values.append(value)
                else:
                    triples.extend(enc)
            return (3, kinds, names, values, dts, list(dt_table), langs, triples, store(full_parts),
                    store(base_parts), list(data_f), rank, clock, {k: list(v) for k, v in outputs.items()}, memo,
                    memo_rev)
        except (TypeError, ValueError, AttributeError, IndexError) as e:
            raise ValueError(f"not a format-1 reasoner state: {e}") from e

    def mints_blank_nodes(self) -> bool:
        """True when a rule minted a blank node so far (two reasoners over one base
        graph then agree only up to blank-node names)."""
        return any(self._memo.values())

    def inferred(self) -> set[Triple]:
        """The SRL inference graph: triples of the evaluation graph not in the base graph.

        Facts that are not RDF triples (generalized triples, :attr:`RuleSet.generalized
        <reckon.datalog.model.RuleSet.generalized>`) and facts that mention helper
        vocabulary (:data:`reckon.datalog.model.INTERNAL`) stay internal: they are not
        returned here, nor in deltas."""
        self.settle()  # every fact is read: plain containers read them faster
        st = self._state
        base = st.base.facts
        decode = self._dic.decode
        visible = self._visible_filter()
        if visible is None:
            return {decode(f) for f in st.full.facts if f not in base}
        return {decode(f) for f in st.full.facts if f not in base and visible(f)}

    def _visible_filter(self) -> Any:
        """``f -> bool`` telling facts that belong in the inference graph, or ``None``
        when every fact does (no helper vocabulary, no generalized triples)."""
        hidden = self._hidden()
        if not hidden and not self.generalized:
            return None
        kinds = self._dic.kinds

        def visible(f: Fact) -> bool:
            s, p, o = f
            return not (s in hidden or p in hidden or o in hidden) and kinds[s] <= BNODE and kinds[p] == IRI

        return visible

    def _hidden(self) -> set[int]:
        """Ids of the helper-vocabulary IRIs interned so far (scanned incrementally: the
        dictionary only grows)."""
        dic = self._dic
        n = len(dic.terms)
        if self._hidden_upto < n:
            kinds, terms = dic.kinds, dic.terms
            for i in range(self._hidden_upto, n):
                if kinds[i] == IRI and terms[i].value.startswith(INTERNAL):  # type: ignore[attr-defined]
                    self._hidden_ids.add(i)
            self._hidden_upto = n
        return self._hidden_ids

    def inconsistencies(self) -> list[Inconsistency]:
        """The inconsistencies of the evaluation graph: every node x with
        ``x rdf:type owl:Nothing`` (asserted, or derived by a rule whose head is ``false``
        in OWL 2 RL, RDFox convention), with the rule, the clashing facts and the
        explanation; sorted by node. Literals in ``owl:Nothing`` (an ill-typed literal)
        are reported through the nodes that hold them (``rr:rdfD-holder``). Empty for a
        consistent graph."""
        return self._inconsistencies(None)

    def _inconsistencies(self, only: set[Fact] | None) -> list[Inconsistency]:
        dic, st = self._dic, self._state
        t, n = dic.lookup(RDF_TYPE), dic.lookup(NOTHING)
        if t is None or n is None:
            return []
        pos = st.full.pos.get(t)
        if pos is not None:
            nodes = set(pos.get(n, ()))
        else:
            nodes = {f[0] for f in st.full.facts if f[1] == t and f[2] == n}
        kinds = dic.kinds
        out: list[Inconsistency] = []
        for x in sorted(nodes, key=lambda i: str(dic.terms[i])):
            f = (x, t, n)
            if kinds[x] > BNODE or (only is not None and f not in only):
                continue
            node = dic.terms[x]
            if f in st.base.facts:
                out.append(Inconsistency(node, "asserted", (dic.decode(f),)))
                continue
            e = self.explain(dic.decode(f))
            out.append(Inconsistency(node, e.rule, tuple(s.triple for s in e.supports), e))
        return out

    def base(self) -> set[Triple]:
        """The base graph ``G0`` (asserted triples)."""
        self.settle()
        decode = self._dic.decode
        return {decode(f) for f in self._state.base.facts}

    def explain(self, triple: Triple) -> Explanation:
        """Why ``triple`` is inferred: rule, bindings and supports, recursively.

        :raises ExplainError: when ``triple`` is not in the inference graph.
        """
        from reckon.datalog.explain import explain

        return explain(self, triple)

    # -- evaluation -------------------------------------------------------------

    def _needs_base_index(self) -> bool:
        return any(
            r.rule.data or any(isinstance(e, Negation) and e.data for e in r.rule.body) for r in self._rules
        )

    def _new_stats(self) -> dict[str, Any]:
        n = len(self._strata)
        return {
            "strata": n,
            "facts_per_stratum": [0] * n,
            "rounds_per_stratum": [0] * n,
            "seconds_per_stratum": [0.0] * n,
            "rounds": 0,
        }

    def _mint(self, rule_index: int, key: tuple[int, ...], n: int) -> tuple[int, ...]:
        memo = self._memo.setdefault(rule_index, {})
        got = memo.get(key)
        if got is None:
            got = tuple(self._dic.new_blank_node() for _ in range(n))
            memo[key] = got
            for b in got:
                self._memo_rev[b] = (rule_index, key)
        return got

    def _pid(self, t: object) -> int | None:
        return None if t is None else self._dic.intern(t)

    def _stratum_info(self, rules: list[RuleInfo]) -> _StratumInfo:
        from reckon.datalog._plan import pattern_predicate

        def add(acc: set[int] | None, tp: TriplePattern) -> set[int] | None:
            p = pattern_predicate(tp)
            if p is None or acc is None:
                return None
            acc.add(self._dic.intern(p))
            return acc

        reads: set[int] | None = set()
        heads: set[int] | None = set()
        closed: dict[int, set[int] | None] = {}
        base_reads: dict[int, set[int] | None] = {}
        atoms: list[tuple[RuleInfo, int, int | None]] = []
        base_atoms: list[tuple[RuleInfo, int, int | None]] = []
        base_atom_preds: set[int] | None = set()
        for info in rules:
            r = info.rule
            for tp in r.head:
                heads = add(heads, tp)
            for k, e in enumerate(r.body):
                if isinstance(e, TriplePattern):
                    if r.data and info.base_monotone:
                        base_atoms.append((info, k, self._pid(pattern_predicate(e))))
                        base_atom_preds = add(base_atom_preds, e)
                    elif r.data:
                        base_reads[info.index] = add(base_reads.get(info.index, set()), e)
                    else:
                        reads = add(reads, e)
                        atoms.append((info, k, self._pid(pattern_predicate(e))))
                elif isinstance(e, (Negation, Aggregate)):
                    from_base = r.data or (isinstance(e, Negation) and e.data)
                    target = base_reads if from_base else closed
                    for x in e.elements:
                        if isinstance(x, TriplePattern):
                            target[info.index] = add(target.get(info.index, set()), x)
                    target.setdefault(info.index, set())
        general_heads = [tp for info in rules if not info.once for tp in info.rule.head]
        delta_atoms: dict[int, list[tuple[int, int | None]]] = {}
        known = self._program.get_static("delta_atoms") or {}
        computed: dict[int, list[int]] = {}
        for info in rules:
            if info.once or info.rule.data:
                continue
            ks = known.get(info.index)
            if ks is None:
                ks = [
                    k for k in info.atoms
                    if any(matches(info.rule.body[k], h) for h in general_heads)  # type: ignore[arg-type]
                ]
                computed[info.index] = ks
            delta_atoms[info.index] = [(k, self._pid(pattern_predicate(info.rule.body[k]))) for k in ks]
        if computed:
            self._program.put_static("delta_atoms", {**known, **computed})
        return _StratumInfo(rules, reads, heads, closed, base_reads, delta_atoms, atoms, base_atoms, base_atom_preds)

    def _starved(self, info: RuleInfo, full: FactStore, base: FactStore, skip: int | None = None) -> bool:
        """Whether a positive body atom of ``info`` (other than atom ``skip``, the delta
        atom) has a constant predicate with no fact: the body has no solution, so its plan
        is neither compiled nor run (most OWL 2 RL rules, on data without their vocabulary)."""
        store = base if info.rule.data else full
        spo = store.spo
        for k, pid in self._const_atoms[info.index]:
            if k != skip and pid not in spo:
                return True
        return False

    def _check_limits(self, state: _State, rounds: int, culprit: str, new: int = 0) -> None:
        self._guard.after_round(len(state.full) - len(state.base), new, rounds, culprit)

    def _add(self, state: _State, facts: Iterable[Fact], net: Any = None, fresh: bool = False) -> list[Fact]:
        added = state.full.add_all(facts, fresh=fresh)
        if added:
            state.rank.update(dict.fromkeys(added, state.clock))
            if net is not None:
                for f in added:
                    net.added(f)
        state.clock += 1
        return added

    def _run_stratum(self, state: _State, si: int, stats: dict[str, Any], net: Any = None) -> None:
        """Evaluate stratum ``si`` from its inputs (SRL "Evaluation of a Rule Set").

        With ``net`` (maintenance), additions are reported to it.
        """
        t0 = time.perf_counter()
        sinfo = self._sinfo[si]
        full, base = state.full, state.base
        mode = "new"
        rounds = 0
        n0 = len(full)
        comp = self._compiler
        once = [i for i in sinfo.rules if i.once]
        general = [i for i in sinfo.rules if not i.once]
        culprit = ""
        if once:
            new: set[Fact] = set()
            best = 0
            for info in once:
                before = len(new)
                if self._starved(info, full, base):
                    if info.nonmonotone:
                        state.outputs[info.index] = set()
                    continue
                if info.nonmonotone:
                    out: set[Fact] = set()
                    comp.plan(info, None, "all").fn(full, None, base, out)  # type: ignore[union-attr]
                    state.outputs[info.index] = out
                    new.update(f for f in out if f not in full.facts)
                else:
                    comp.plan(info, None, mode).fn(full, None, base, new)  # type: ignore[union-attr]
                if len(new) - before >= best:
                    best, culprit = len(new) - before, info.rule.name
            added = self._add(state, new, net, fresh=True)
            rounds += 1
            self._check_limits(state, rounds, culprit, len(added))
        if general:
            new = set()
            best = 0
            for info in general:
                if self._starved(info, full, base):
                    continue
                before = len(new)
                comp.plan(info, None, mode).fn(full, None, base, new)  # type: ignore[union-attr]
                if len(new) - before > best:
                    best, culprit = len(new) - before, info.rule.name
            added = self._add(state, new, net, fresh=True)
            rounds += 1
            self._check_limits(state, rounds, culprit, len(added))
            while added:
                delta = FactStore(added, fresh=True)
                dpreds = delta.spo
                new = set()
                best = 0
                for info in general:
                    before = len(new)
                    for k, pid in sinfo.delta_atoms.get(info.index, ()):
                        if (pid is not None and pid not in dpreds) or self._starved(info, full, base, k):
                            continue
                        comp.plan(info, k, mode).fn(full, delta, base, new)  # type: ignore[union-attr]
                    if len(new) - before > best:
                        best, culprit = len(new) - before, info.rule.name
                added = self._add(state, new, net, fresh=True)
                rounds += 1
                self._check_limits(state, rounds, culprit, len(added))
        stats["facts_per_stratum"][si] += len(full) - n0
        stats["rounds_per_stratum"][si] += rounds
        stats["seconds_per_stratum"][si] += time.perf_counter() - t0
        stats["rounds"] += rounds


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Keep Python's cyclic garbage collector off while a materialization runs.

    The evaluation graph is millions of small containers (index sets and dicts, fact
    tuples) that hold no reference cycle: reference counting frees them. Each
    collection of the oldest generation traverses every one of them, and a growing
    graph triggers one every time it grows by a quarter: measured on LUBM(5), single
    rounds that add 45k facts took 0.5-0.7 s instead of 0.08 s. Restored on exit
    (the collector then runs as usual; the few cycles made meanwhile, e.g. compiled
    plans, are collected then)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _direction(name: str) -> Any:
    from pyoxigraph import BaseDirection

    return BaseDirection.RTL if name == str(BaseDirection.RTL.value) else BaseDirection.LTR


def _intern_constants(dic: TermDictionary, ruleset: RuleSet) -> None:
    """Intern every constant term of the rules, in rule order, before any data."""
    from pyoxigraph import Variable

    from reckon.datalog.model import Assignment, Call, Filter, TripleTermPattern

    def term(t: object) -> None:
        if isinstance(t, TripleTermPattern):
            term(t.s)
            term(t.p)
            term(t.o)
        elif isinstance(t, Call):
            if not isinstance(t.name, str):
                term(t.name)
            for a in t.args:
                term(a)
        elif t is not None and not isinstance(t, Variable):
            dic.intern(t)

    def elements(es: Iterable[object]) -> None:
        for e in es:
            if isinstance(e, TriplePattern):
                term(e.s)
                term(e.p)
                term(e.o)
            elif isinstance(e, (Filter, Assignment)):
                term(e.expr)
            elif isinstance(e, (Negation, Aggregate)):
                elements(e.elements)
                if isinstance(e, Aggregate):
                    term(e.expr)

    for rule in ruleset.rules:
        elements(rule.head)
        elements(rule.body)


def materialize(ruleset: RuleSet, base: Iterable[Triple], *, limits: Limits = Limits()) -> set[Triple]:
    """The SRL inference graph of ``ruleset`` over ``base``, evaluated from scratch.

    :raises RuleSetInvalid: when the rule set is not well-formed or not stratifiable.
    :raises ResourceLimit: when a limit is hit (:class:`Limits`).
    """
    r = Reasoner(ruleset, limits=limits)
    r.load(base)
    return r.inferred()


def _warm_object_indexes(strata: list[list[RuleInfo]], full: FactStore, dic: TermDictionary) -> None:
    """Build now the object indexes that incremental maintenance will look facts up by.

    Maintenance checks a fact with the rule head bound to it (``maintain``: over-deletion
    and rederivation). A body atom ``?y ?a ?z`` whose predicate variable comes from a
    schema atom (``?a rdfs:range ?x``, rdfs3) and whose object is bound by the head then
    needs the object index of every such predicate ``a``: built lazily, that is a scan of
    the whole relation at the first deletion (most of the first 100-fact deletion on
    LUBM(10)). Built here, it is paid once by the materialization, like any index.
    """
    for infos in strata:
        for info in infos:
            rule = info.rule
            atoms = [e for e in rule.body if isinstance(e, TriplePattern)]
            for tpl in rule.head:
                hv = tpl.variables()
                for a in atoms:
                    v = a.p
                    if not isinstance(v, Variable) or v in hv or not isinstance(a.o, Variable) \
                            or a.o not in hv or (isinstance(a.s, Variable) and a.s in hv):
                        continue
                    for b in atoms:
                        if b is a or isinstance(b.p, (Variable, TripleTermPattern)):
                            continue
                        pid = dic.lookup(b.p)
                        sp = full.spo.get(pid) if pid is not None else None
                        if sp is None:
                            continue
                        if b.s == v:
                            values: set[int] = set(sp)
                        elif b.o == v:
                            values = set().union(*sp.values())
                        else:
                            continue
                        for x in values:
                            if x in full.spo:
                                full.need_pos(x)
