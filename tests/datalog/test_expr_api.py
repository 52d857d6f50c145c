"""reckon.datalog.expr: EBV, variables and slots, the evaluation context (NOW, BNODE,
UUID, base IRI), and the expressions of the SRL conformance eval tests."""

from __future__ import annotations

import re

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Triple, Variable, parse

from reckon.datalog.expr import EvalContext, ExprError, compile_expr, compile_filter, ebv, evaluate
from reckon.datalog.model import Call, TripleTermPattern
from tests.conftest import shared_path
from tests.datalog._sparql_expr import parse_expr

XSD = "http://www.w3.org/2001/XMLSchema#"
EX = "http://example/"


def lit(value: str, dt: str) -> Literal:
    return Literal(value, datatype=NamedNode(XSD + dt))


# --- SPARQL 1.1 section 17.2.2 effective boolean value --------------------

EBV_CASES = [
    ("bool-true", lit("true", "boolean"), True),
    ("bool-false", lit("false", "boolean"), False),
    ("bool-one", lit("1", "boolean"), True),
    ("bool-zero", lit("0", "boolean"), False),
    ("bool-invalid-is-false", lit("TRUE", "boolean"), False),
    ("string-nonempty", Literal("abc"), True),
    ("string-empty", Literal(""), False),
    ("xsd-string-empty", lit("", "string"), False),
    ("int-zero", lit("0", "integer"), False),
    ("int-nonzero", lit("-3", "integer"), True),
    ("decimal-zero", lit("0.0", "decimal"), False),
    ("double-zero", lit("0.0E0", "double"), False),
    ("double-neg-zero", lit("-0", "double"), False),
    ("double-nan", lit("NaN", "double"), False),
    ("double-inf", lit("INF", "double"), True),
    ("float-small", lit("1e-30", "float"), True),
    ("derived-int", lit("5", "unsignedShort"), True),
    ("int-invalid-is-false", lit("abc", "integer"), False),
    ("byte-out-of-range-is-false", lit("999", "byte"), False),
]


@pytest.mark.parametrize(("term", "expected"), [c[1:] for c in EBV_CASES], ids=[c[0] for c in EBV_CASES])
def test_ebv(term: Literal, expected: bool) -> None:
    assert ebv(term) is expected


EBV_ERRORS = [
    ("iri", NamedNode(EX + "a")),
    ("bnode", BlankNode("b")),
    ("lang-string", Literal("a", language="en")),
    ("unknown-datatype", Literal("a", datatype=NamedNode(EX + "t"))),
    ("datetime", lit("2020-01-01T00:00:00Z", "dateTime")),
    ("triple-term", Triple(NamedNode(EX + "s"), NamedNode(EX + "p"), NamedNode(EX + "o"))),
]


@pytest.mark.parametrize("term", [c[1] for c in EBV_ERRORS], ids=[c[0] for c in EBV_ERRORS])
def test_ebv_type_error(term: object) -> None:
    with pytest.raises(ExprError):
        ebv(term)  # type: ignore[arg-type]


# --- variables, slots, compile_expr ----------------------------------------

X, Y, Z = Variable("x"), Variable("y"), Variable("z")


def test_evaluate_reads_bindings() -> None:
    e = parse_expr("?x * ?y + 1")
    out = evaluate(e, {X: lit("6", "integer"), Y: lit("7", "integer")}, EvalContext())
    assert out == lit("43", "integer")


def test_unbound_variable_is_an_error() -> None:
    with pytest.raises(ExprError, match="unbound"):
        evaluate(parse_expr("?x + 1"), {}, EvalContext())


def test_unbound_variable_inside_or_is_tolerated() -> None:
    # SPARQL 17.2: an error on one side of || is masked by true on the other
    assert evaluate(parse_expr("?x || true"), {}, EvalContext()) == lit("true", "boolean")


def test_compile_expr_uses_slots() -> None:
    f = compile_expr(parse_expr("IF(?x > ?y, ?x, ?y)"), {X: 2, Y: 0})
    ctx = EvalContext()
    assert f((lit("5", "integer"), None, lit("9", "integer")), ctx) == lit("9", "integer")
    assert f((lit("5", "integer"), None, lit("1", "integer")), ctx) == lit("5", "integer")
    with pytest.raises(ExprError):
        f((lit("5", "integer"), None, None), ctx)  # ?x unbound (None) in the row


def test_compile_expr_variable_without_slot_is_unbound() -> None:
    f = compile_expr(parse_expr("?z"), {X: 0})
    with pytest.raises(ExprError):
        f((lit("1", "integer"),), EvalContext())


def test_compile_filter_is_ebv_with_errors_false() -> None:
    # SPARQL 17.3: FILTER keeps a solution when the EBV is true; an error drops it
    f = compile_filter(parse_expr("1/?x"), {X: 0})
    ctx = EvalContext()
    assert f((lit("2", "integer"),), ctx) is True
    assert f((lit("0", "integer"),), ctx) is False  # division by zero
    assert f((lit("0.0", "double"),), ctx) is True  # 1/0e0 = INF
    assert f((None,), ctx) is False  # unbound
    g = compile_filter(parse_expr("?x"), {X: 0})
    assert g((Literal(""),), ctx) is False
    assert g((Literal("a"),), ctx) is True
    assert g((NamedNode(EX),), ctx) is False  # EBV of an IRI is an error


def test_bound() -> None:
    f = compile_expr(Call("BOUND", (X,)), {X: 0})
    assert f((None,), EvalContext()) == lit("false", "boolean")
    assert f((Literal("a"),), EvalContext()) == lit("true", "boolean")
    assert compile_expr(Call("BOUND", (Z,)), {X: 0})((None,), EvalContext()) == lit("false", "boolean")


def test_function_names_are_case_insensitive() -> None:
    ctx = EvalContext()
    assert evaluate(Call("sameTerm", (Literal("a"), Literal("a"))), {}, ctx) == lit("true", "boolean")
    assert evaluate(Call("isIRI", (NamedNode(EX),)), {}, ctx) == lit("true", "boolean")
    assert evaluate(Call("SAMETERM", (Literal("a"), Literal("b"))), {}, ctx) == lit("false", "boolean")


def test_unknown_function_and_wrong_arity_are_errors() -> None:
    ctx = EvalContext()
    with pytest.raises(ExprError, match="unknown function"):
        evaluate(Call("NOSUCH", (Literal("a"),)), {}, ctx)
    with pytest.raises(ExprError, match="unknown function"):
        evaluate(Call(NamedNode(EX + "f"), (Literal("a"),)), {}, ctx)
    with pytest.raises(ExprError, match="arguments"):
        evaluate(Call("STRLEN", (Literal("a"), Literal("b"))), {}, ctx)
    with pytest.raises(ExprError):
        evaluate(Call(NamedNode(XSD + "integer"), ()), {}, ctx)


def test_triple_term_expression_with_variables() -> None:
    e = TripleTermPattern(X, NamedNode(EX + "p"), Y)
    out = evaluate(e, {X: NamedNode(EX + "s"), Y: lit("1", "integer")}, EvalContext())
    assert out == Triple(NamedNode(EX + "s"), NamedNode(EX + "p"), lit("1", "integer"))
    with pytest.raises(ExprError):  # a literal cannot be the subject of a triple term
        evaluate(e, {X: Literal("s"), Y: lit("1", "integer")}, EvalContext())


def test_nested_triple_term_in_subject_is_an_error() -> None:
    inner = TripleTermPattern(X, NamedNode(EX + "p"), Y)
    outer = TripleTermPattern(inner, NamedNode(EX + "q"), NamedNode(EX + "o"))
    with pytest.raises(ExprError):
        evaluate(outer, {X: NamedNode(EX + "s"), Y: Literal("v")}, EvalContext())
    ok = TripleTermPattern(NamedNode(EX + "o"), NamedNode(EX + "q"), inner)
    got = evaluate(ok, {X: NamedNode(EX + "s"), Y: Literal("v")}, EvalContext())
    assert isinstance(got, Triple) and got.object == Triple(NamedNode(EX + "s"), NamedNode(EX + "p"), Literal("v"))


# --- evaluation context ------------------------------------------------------


def test_now_is_fixed_per_context() -> None:
    fixed = lit("2026-01-02T03:04:05Z", "dateTime")
    ctx = EvalContext(now=fixed)
    assert evaluate(parse_expr("NOW()"), {}, ctx) == fixed
    assert evaluate(parse_expr("YEAR(NOW())"), {}, ctx) == lit("2026", "integer")


def test_now_default_is_current_utc_and_stable() -> None:
    ctx = EvalContext()
    a = evaluate(parse_expr("NOW()"), {}, ctx)
    b = evaluate(parse_expr("NOW()"), {}, ctx)
    assert a == b
    assert isinstance(a, Literal) and a.datatype == NamedNode(XSD + "dateTime")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", a.value)
    assert evaluate(parse_expr("TZ(NOW())"), {}, ctx) == Literal("Z")


def test_bnode_with_label_is_stable_within_a_solution() -> None:
    ctx = EvalContext()
    f = compile_expr(parse_expr('BNODE("a")'), {})
    g = compile_expr(parse_expr('BNODE("b")'), {})
    first = f((), ctx)
    assert isinstance(first, BlankNode)
    assert f((), ctx) == first
    assert g((), ctx) != first
    ctx.new_solution()
    assert f((), ctx) != first


def test_bnode_without_label_is_fresh() -> None:
    ctx = EvalContext()
    f = compile_expr(parse_expr("BNODE()"), {})
    assert f((), ctx) != f((), ctx)


def test_bnode_label_must_be_a_simple_literal() -> None:
    with pytest.raises(ExprError):
        evaluate(parse_expr("BNODE(1)"), {}, EvalContext())


def test_uuid_and_struuid() -> None:
    ctx = EvalContext()
    u1, u2 = (evaluate(parse_expr("UUID()"), {}, ctx) for _ in range(2))
    assert isinstance(u1, NamedNode) and u1 != u2
    assert re.fullmatch(r"urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", u1.value)
    s = evaluate(parse_expr("STRUUID()"), {}, ctx)
    assert isinstance(s, Literal) and s.datatype == NamedNode(XSD + "string")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", s.value)


def test_iri_resolves_against_base() -> None:
    ctx = EvalContext(base="http://example/base/")
    assert evaluate(parse_expr('IRI("x")'), {}, ctx) == NamedNode("http://example/base/x")
    assert evaluate(parse_expr('IRI("http://other/y")'), {}, ctx) == NamedNode("http://other/y")


def test_relative_iri_without_base_is_an_error() -> None:
    with pytest.raises(ExprError):
        evaluate(parse_expr('IRI("not absolute")'), {}, EvalContext())


def test_hash_functions() -> None:
    ctx = EvalContext()
    assert evaluate(Call("MD5", (Literal("abc"),)), {}, ctx) == Literal("900150983cd24fb0d6963f7d28e17f72")
    assert evaluate(Call("SHA1", (Literal("abc"),)), {}, ctx) == Literal("a9993e364706816aba3e25717850c26c9cd0d89d")
    with pytest.raises(ExprError):
        evaluate(Call("MD5", (Literal("abc", language="en"),)), {}, ctx)


# --- expressions of the SRL conformance eval tests ---------------------------

EVAL = ("conformance", "srl-tests", "shacl12-test-suite", "tests", "sparql-rl", "eval")


def _result_objects(name: str, predicate: str) -> set[object]:
    path = shared_path(*EVAL, name)
    return {t.object for t in parse(path=str(path), format=__import__("pyoxigraph").RdfFormat.TURTLE)
            if t.predicate == NamedNode(EX + predicate)}


def test_srl_eval_assign_02_plus_one() -> None:
    # RULE { :s :p ?v1 } WHERE { :x :xv ?v SET( ?v1 := ?v + 1 ) } with :x :xv 1
    v = Variable("v")
    got = evaluate(parse_expr("?v + 1"), {v: lit("1", "integer")}, EvalContext())
    assert {got} == _result_objects("eval-assign-02-results.ttl", "p")


def test_srl_eval_assign_03_division_by_zero() -> None:
    with pytest.raises(ExprError):
        evaluate(parse_expr("1/0"), {}, EvalContext())


def test_srl_eval_assign_error_1_reciprocal() -> None:
    # SET ( ?z := 1/?o ) over :x2 :data 2 and :x0 :data 0: only :x2 gets :out 0.5
    o = Variable("o")
    f = compile_expr(parse_expr("1/?o"), {o: 0})
    ctx = EvalContext()
    assert {f((lit("2", "integer"),), ctx)} == _result_objects("eval-assign-error-1-results.ttl", "out")
    with pytest.raises(ExprError):
        f((lit("0", "integer"),), ctx)


def test_srl_eval_filter_error_1_ebv_of_reciprocal() -> None:
    # FILTER( 1/?o ): EBV of 0.5 is true; 1/0 is an error, so the solution is dropped
    o = Variable("o")
    f = compile_expr(parse_expr("1/?o"), {o: 0})
    ctx = EvalContext()
    assert ebv(f((lit("2", "integer"),), ctx)) is True
    with pytest.raises(ExprError):
        ebv(f((lit("0", "integer"),), ctx))
    assert _result_objects("eval-filter-error-1-results.ttl", "out") == {lit("2", "integer")}


def test_srl_eval_filter_01_greater_than() -> None:
    v = Variable("v")
    f = compile_expr(parse_expr("?v > 1"), {v: 0})
    ctx = EvalContext()
    kept = {n for n in ("1", "2") if ebv(f((lit(n, "integer"),), ctx))}
    assert {lit(n, "integer") for n in kept} == _result_objects("eval-filter-01-results.ttl", "q")
