"""Diagnostics for rule programs: one record per problem, with location and a stable code.

All problems of a file are collected into one report (as nemo does) and raised
together as :class:`reckon.RuleSyntaxError` (parse errors) or
:class:`reckon.RuleSetInvalid` (well-formedness, prefixes, stratification).

Stable codes (never renumber; add new ones at the end):

======  ==========================================================================
code    meaning
======  ==========================================================================
SRL001  syntax error (unexpected token / character)
SRL002  unknown prefix in a prefixed name
SRL003  unsafe head variable: a head variable is not bound by the body
SRL004  FILTER uses a variable not bound before it
SRL005  SET expression uses a variable not bound before it
SRL006  SET assigns a variable already bound earlier in the body
SRL007  NOT body is not well-formed given the variables bound before it
SRL008  negation / run-once rule in a recursive cycle: not stratifiable (cycle named)
SRL009  IMPORTS cannot be resolved
SRL010  variable in a DATA block
SRL011  unsupported feature in this position (e.g. path in head)
SRL012  aggregate (Reckon extension) not well-formed
SRL013  invalid literal / IRI (e.g. bad escape, relative IRI without BASE)
======  ==========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Diagnostic", "CODES"]

CODES: dict[str, str] = {
    "SRL001": "syntax error",
    "SRL002": "unknown prefix",
    "SRL003": "every variable in the head must be bound in the body",
    "SRL004": "every variable in a FILTER must be bound before the FILTER",
    "SRL005": "every variable in a SET expression must be bound before the SET",
    "SRL006": "SET must introduce a new variable",
    "SRL007": "NOT body is not well-formed",
    "SRL008": "negation or run-once rule inside a recursive dependency cycle cannot be stratified",
    "SRL009": "IMPORTS cannot be resolved",
    "SRL010": "variables are not allowed in a DATA block",
    "SRL011": "unsupported construct in this position",
    "SRL012": "aggregate is not well-formed",
    "SRL013": "invalid literal or IRI",
}


@dataclass(frozen=True)
class Diagnostic:
    """One problem in a rule program.

    :ivar code: stable code from :data:`CODES` (e.g. ``"SRL003"``).
    :ivar message: one line a person can act on, naming the variable / prefix / cycle.
    :ivar file: file name, or ``"<string>"`` for text given inline.
    :ivar line: 1-based line number (0 when unknown).
    :ivar column: 1-based column number (0 when unknown).
    """

    code: str
    message: str
    file: str = "<string>"
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.code} {self.message}"
