"""Datalog over RDF: SRL / RDFox rule parsing, well-formedness, stratification,
semi-naive materialization, incremental maintenance (DRed) and explanation.

Pipeline (each stage imports only the ones before it)::

    model -> diagnostics -> srl / dlog (parse) -> wellformed -> stratify
          -> expr -> evaluate (semi-naive) -> maintain (DRed) -> explain
"""

from reckon.datalog.evaluate import Delta, Inconsistency, Limits, Reasoner, materialize
from reckon.datalog.loader import load_rules
from reckon.datalog.stratify import check_program, stratify


def __getattr__(name: str) -> object:
    # the SRL parser (and its tokenizer's regular expressions) load on first use: a
    # program from the compiled-program cache needs no parsing (reckon.datalog._cache)
    if name == "parse_srl":
        from reckon.datalog.srl import parse_srl

        return parse_srl
    raise AttributeError(f"module 'reckon.datalog' has no attribute {name!r}")

# Note: the package attribute ``stratify`` is the function (it shadows the submodule of
# the same name as an attribute); ``from reckon.datalog.stratify import ...`` still
# imports from the module.
__all__ = [
    "Delta",
    "Inconsistency",
    "Limits",
    "Reasoner",
    "check_program",
    "load_rules",
    "materialize",
    "parse_srl",
    "stratify",
]
