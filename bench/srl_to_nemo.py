"""Translate an SRL rule set (``reckon.datalog.model.RuleSet``) into a nemo program.

For ``bench/reasoning.py``: nemo (https://github.com/knowsys/nemo, ``nmo_python``) runs
the *same* RDFS + OWL 2 RL program as Reckon. Triples live in one ternary predicate
``t(?s, ?p, ?o)``; the base graph is imported from N-Triples into ``base`` and copied into
``t``; ``WHERE DATA`` atoms read ``base``; ``DATA`` blocks become facts. A body atom with
a variable predicate reads ``tv``, the facts of ``t`` whose predicate is not helper
vocabulary (``urn:reckon:internal:``), as Reckon's variable-predicate patterns do. A triple pattern
whose object is a triple term of helper vocabulary (``?u o2r:chain <<( ?n o2r:to ?v )>>``,
owl2rl.srl's prp-spo2 / prp-key helpers) becomes a ternary helper predicate
(``h_chain_to(?u, ?n, ?v)``): nemo has no triple terms.

Filters map onto nemo built-ins: ``isIRI`` -> ``ISIRI(?x) = true``, ``isBLANK`` ->
``ISNULL(?x) = true`` (nemo reads blank nodes as nulls), ``isLiteral`` -> neither,
``sameTerm`` -> ``=``, ``!`` of those by their negation, ``&&`` by conjunction and ``||``
by one nemo rule per disjunct; numeric ``?k = 0``, ``SET(?d := DATATYPE(?lt))``,
``rkf:isDatatype`` (a join with the recognized datatypes). A rule that needs anything
else — Reckon's datatype value functions (``rkf:canonicalLiteral``, ``rkf:inValueSpace``,
``rkf:differentValues`` ...) — is left out and named in ``dropped``: nemo has no such
functions, so its program lacks dt-eq / value-based inconsistency checks. On LUBM (string
literals only, all canonical, no clash) those rules derive nothing, so both engines compute
the same closure.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable

__all__ = ["NemoProgram", "translate"]

RKF = "urn:reckon:fn:"
INTERNAL = "urn:reckon:internal:"
XSD = "http://www.w3.org/2001/XMLSchema#"


@dataclass
class NemoProgram:
    """The nemo text, the rules left out (name -> reason) and the triple predicate."""

    text: str
    dropped: dict[str, str] = field(default_factory=dict)
    predicate: str = "t"


class _Unsupported(Exception):
    pass


def _term(t: object) -> str:
    if isinstance(t, Variable):
        return "?" + t.value.replace("-", "_")
    if isinstance(t, NamedNode):
        return f"<{t.value}>"
    if isinstance(t, Literal):
        lex = t.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        if t.language:
            return f'"{lex}"@{t.language}'
        return f'"{lex}"^^<{t.datatype.value}>'
    if isinstance(t, BlankNode):
        raise _Unsupported("blank node in a rule")
    raise _Unsupported(f"term {t!r}")


_VIEWS: dict[tuple[str, str], str] = {}
_SELECTIONS: list[str] = []


def _view(rel: str, p: NamedNode) -> str:
    """The binary predicate holding the (s, o) pairs of ``rel`` facts with predicate p."""
    key = (rel, p.value)
    got = _VIEWS.get(key)
    if got is None:
        got = _VIEWS[key] = f"{rel}_{_local(p)}_{len(_VIEWS)}"
    return got


def _atom(tp: object, rel: str, head: bool = False) -> str:
    from reckon.datalog.model import TripleTermPattern

    s, p, o = tp.s, tp.p, tp.o  # type: ignore[attr-defined]
    if isinstance(o, TripleTermPattern) and isinstance(p, NamedNode) and isinstance(o.p, NamedNode):
        name = "h_" + _local(p) + "_" + _local(o.p)
        return f"{name}({_term(s)}, {_term(o.s)}, {_term(o.o)})"
    if any(isinstance(x, (TripleTermPattern, Triple)) for x in (s, p, o)):
        raise _Unsupported("triple term")
    if not head and isinstance(p, NamedNode):
        # vertical partitioning: a body atom with a constant predicate reads that
        # predicate's binary relation (nemo joins on a ternary relation with many
        # rules are pathological: tens of seconds for 8k triples)
        return f"{_view(rel, p)}({_term(s)}, {_term(o)})"
    if not head and rel == "t":
        # a variable predicate never matches helper vocabulary (Reckon hides facts whose
        # predicate is in urn:reckon:internal: from variable-predicate patterns)
        return f"tv({_term(s)}, {_term(p)}, {_term(o)})"
    return f"{rel}({_term(s)}, {_term(p)}, {_term(o)})"


def _local(iri: NamedNode) -> str:
    v = iri.value
    for sep in ("#", "/", ":"):
        if sep in v:
            v = v.rsplit(sep, 1)[1]
    return "".join(c if c.isalnum() else "_" for c in v)


def _kind(name: str, arg: object, positive: bool) -> list[list[str]]:
    x = _term(arg)
    if name == "ISIRI":
        return [[f"ISIRI({x}) = {'true' if positive else 'false'}"]]
    if name == "ISBLANK":
        return [[f"ISNULL({x}) = {'true' if positive else 'false'}"]]
    if name == "ISLITERAL":
        if positive:
            return [[f"ISIRI({x}) = false", f"ISNULL({x}) = false"]]
        return [[f"ISIRI({x}) = true"], [f"ISNULL({x}) = true"]]
    raise _Unsupported(name)


def _dnf(e: object, positive: bool = True) -> list[list[str]]:
    """The filter as a disjunction of conjunctions of nemo body literals."""
    from reckon.datalog.model import Call

    if isinstance(e, Call) and isinstance(e.name, str):
        name = e.name.upper()
        if name == "!":
            return _dnf(e.args[0], not positive)
        if name in ("&&", "||"):
            conj = (name == "&&") == positive
            parts = [_dnf(a, positive) for a in e.args]
            if conj:
                return [list(itertools.chain.from_iterable(c)) for c in itertools.product(*parts)]
            return [c for p in parts for c in p]
        if name in ("ISIRI", "ISBLANK", "ISLITERAL"):
            return _kind(name, e.args[0], positive)
        if name == "SAMETERM" or name in ("=", "!="):
            eq = (name != "!=") == positive
            a, b = e.args
            return [[f"{_term(a)} {'=' if eq else '!='} {_term(b)}"]]
        if name in ("<", ">", "<=", ">="):
            op = name if positive else {"<": ">=", ">": "<=", "<=": ">", ">=": "<"}[name]
            a, b = e.args
            return [[f"{_term(a)} {op} {_term(b)}"]]
    if isinstance(e, Call) and isinstance(e.name, NamedNode) and e.name.value == RKF + "isDatatype" and positive:
        return [[f"recognized({_term(e.args[0])})"]]
    raise _Unsupported(f"filter {e}")


def _rule(rule: object) -> list[str]:
    from reckon.datalog.model import Assignment, Call, Filter, TriplePattern

    heads = [_atom(tp, "t", head=True) for tp in rule.head]  # type: ignore[attr-defined]
    rel = "base" if rule.data else "t"  # type: ignore[attr-defined]
    body: list[list[str]] = [[]]
    extra: list[str] = []
    atoms = [e for e in rule.body if isinstance(e, TriplePattern)]  # type: ignore[attr-defined]
    for e in rule.body:  # type: ignore[attr-defined]
        if isinstance(e, TriplePattern):
            a = _atom(e, rel)
            if isinstance(e.p, Variable):
                # a variable-predicate atom whose predicate a constant-predicate atom
                # restricts (`?p rdf:type owl:InverseFunctionalProperty . ?x1 ?p ?y`): read
                # a selection of t instead, so that nemo never joins all of t with itself
                # (prp-ifp alone: 10 s on 8k triples without it)
                guard = next((g for g in atoms if isinstance(g.p, NamedNode) and e.p in (g.s, g.o)), None)
                if guard is not None:
                    name = f"sel_{len(_SELECTIONS)}"
                    _SELECTIONS.append(name)
                    args = f"{_term(e.s)}, {_term(e.p)}, {_term(e.o)}"
                    extra.append(f"{name}({args}) :- {_atom(guard, rel)}, {a} .")
                    a = f"{name}({args})"
            body = [b + [a] for b in body]
        elif isinstance(e, Filter):
            alts = _dnf(e.expr)
            body = [b + alt for b in body for alt in alts]
        elif isinstance(e, Assignment):
            x = e.expr
            if isinstance(x, Call) and x.name == "DATATYPE" and isinstance(x.args[0], Variable):
                v = _term(x.args[0])
                body = [b + [f"ISIRI({v}) = false", f"ISNULL({v}) = false", f"{_term(e.var)} = DATATYPE({v})"] for b in body]
            else:
                raise _Unsupported(f"SET {x}")
        else:
            raise _Unsupported(type(e).__name__)
    # one rule per head atom; a head atom that repeats a variable (`t(?x, owl:sameAs, ?x)`)
    # goes through a helper predicate: nmo_python 0.10 drops the facts of a second rule
    # with such a head over the same relation (tests/reasoning/test_nemo_differential.py
    # compares the closures)
    out: list[str] = []
    for b in body:
        for h, tp in zip(heads, rule.head):  # type: ignore[attr-defined]
            vs = [t for t in (tp.s, tp.p, tp.o) if isinstance(t, Variable)]
            if len(vs) != len(set(vs)):
                name = f"rep_{len(_SELECTIONS)}"
                _SELECTIONS.append(name)
                args = ", ".join(_term(v) for v in dict.fromkeys(vs))
                out.append(f"{name}({args}) :- {', '.join(b)} .")
                out.append(f"{h} :- {name}({args}) .")
            else:
                out.append(f"{h} :- {', '.join(b)} .")
    return out + extra


def translate(ruleset: object, base_path: str, recognized: tuple[str, ...] = ()) -> NemoProgram:
    """The nemo program of ``ruleset`` over the N-Triples file ``base_path``.

    :param recognized: datatype IRIs for ``rkf:isDatatype`` (``recognized(dt)`` facts).
    """
    lines = [f'@import base :- ntriples{{resource="{base_path}"}} .', "t(?s, ?p, ?o) :- base(?s, ?p, ?o) ."]
    for dt in recognized:
        lines.append(f"recognized(<{dt}>) .")
    for t in ruleset.data:  # type: ignore[attr-defined]
        try:
            lines.append(f"t({_term(t.subject)}, {_term(t.predicate)}, {_term(t.object)}) .")
        except _Unsupported:
            continue
    dropped: dict[str, str] = {}
    _VIEWS.clear()
    _SELECTIONS.clear()
    for rule in ruleset.rules:  # type: ignore[attr-defined]
        try:
            lines.extend(_rule(rule))
        except _Unsupported as e:
            dropped[rule.name] = str(e)
    for (rel, p), name in _VIEWS.items():
        lines.append(f"{name}(?s, ?o) :- {rel}(?s, <{p}>, ?o) .")
    internal = sorted({p for _, p in _VIEWS if p.startswith(INTERNAL)}
                      | {t.predicate.value for t in ruleset.data if t.predicate.value.startswith(INTERNAL)}  # type: ignore[attr-defined]
                      | {tp.p.value for r in ruleset.rules for tp in r.head  # type: ignore[attr-defined]
                         if isinstance(tp.p, NamedNode) and tp.p.value.startswith(INTERNAL)})
    lines.extend(f"internal(<{p}>) ." for p in internal)
    lines.append("tv(?s, ?p, ?o) :- t(?s, ?p, ?o), ~internal(?p) .")
    return NemoProgram("\n".join(lines) + "\n", dropped)
