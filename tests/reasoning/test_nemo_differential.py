"""Differential test: Reckon and nemo compute the same RDFS + OWL 2 RL closure.

nemo (``nmo_python``, Rust) runs ``rules/rdfs.srl`` + ``rules/owl2rl.srl`` translated by
``bench/srl_to_nemo.py`` (the engine ``bench/reasoning.py`` compares Reckon with). On one
department of LUBM(1) + the univ-bench ontology (~8.6k triples) the two closures have the
same size and the same triples up to blank-node names (nemo renames blank nodes); the
rules the translation leaves out (Reckon's datatype functions) derive nothing here.
"""

from __future__ import annotations

from pathlib import Path

import nmo_python  # test dependency (pyproject.toml [test]): the benchmark's peer
from bench.lubm import base_triples, write_ntriples  # tests/reasoning/conftest.py puts the repo root on sys.path
from pyoxigraph import BlankNode

from tests.reasoning.conftest import closure, load_shipped


def _ground(triples):  # type: ignore[no-untyped-def]
    return {t for t in triples if not any(isinstance(x, BlankNode) for x in (t.subject, t.object))}


def test_nemo_closure_equals_reckon_closure_on_one_department(lubm_dir, tmp_path: Path) -> None:
    from bench.reasoning import _from_nemo, _rdf_only
    from bench.srl_to_nemo import translate

    from reckon.datalog._datatypes import SUPPORTED

    base = base_triples(lubm_dir, subjects=("Department0-University0",))
    data = write_ntriples(base, tmp_path / "dept.nt")
    program = load_shipped("rdfs.srl", "owl2rl.srl")
    ours = closure(program, base)
    nemo = translate(program, str(data), tuple(sorted(SUPPORTED)))
    assert set(nemo.dropped) == {f"<urn:reckon:rule:{n}>" for n in (
        "rdfD-canonical", "rdfD-canonical-form", "rdfD-ill-typed", "rdfD-disjoint", "rdfD-not-subclass", "eq-diff1-values", "dt-range-meet",
        "dt-restriction-base", "dt-restriction-facet", "dt-restriction-last", "dt-restriction-step")}
    engine = nmo_python.NemoEngine(nmo_python.load_string(nemo.text))
    engine.reason()
    theirs = _rdf_only(_from_nemo(engine.result(nemo.predicate)))
    assert len(theirs) == len(ours) > len(base)
    assert _ground(theirs) == _ground(ours)
