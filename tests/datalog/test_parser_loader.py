"""Rule loading (reckon.datalog.loader): formats, IMPORTS, shipped rule files.

Spec: SRL draft "Processing Imports": a processor MUST signal an error for an import
it does not support or cannot resolve, and MUST import a rule set only once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reckon._errors import RuleSetInvalid, RuleSyntaxError
from reckon._resources import resource_dir
from reckon.datalog.loader import load_rules, parse_rules

P = "PREFIX : <http://example/>\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def test_imports_are_resolved_recursively_once_each(tmp_path: Path) -> None:
    a = write(tmp_path, "a.srl", P + "IMPORTS <lib/b.srl>\nRULE :ra { ?x a :C } WHERE { ?x a :B }\n")
    write(tmp_path, "lib/b.srl", P + "IMPORTS <../a.srl>\nIMPORTS <c.srl>\nRULE :rb { ?x a :B } WHERE { ?x a :A }\n")
    write(tmp_path, "lib/c.srl", P + "DATA { :k a :A }\nIMPORTS <../a.srl>\n")
    rs = load_rules(a)
    assert [r.id.value for r in rs.rules] == ["http://example/ra", "http://example/rb"]
    assert len(rs.data) == 1
    assert [i.value for i in rs.imports] == [
        (tmp_path / "lib/b.srl").as_uri(),
        a.as_uri(),
        (tmp_path / "lib/c.srl").as_uri(),
        a.as_uri(),
    ]


def test_unresolvable_and_remote_imports_are_errors(tmp_path: Path) -> None:
    a = write(
        tmp_path,
        "a.srl",
        P + "IMPORTS <missing.srl>\nRULE { ?x a :C } WHERE { ?x a :B }\nIMPORTS <https://example.org/rules.srl>\n",
    )
    with pytest.raises(RuleSetInvalid) as ei:
        load_rules(a)
    got = [(d.code, d.line, d.column) for d in ei.value.diagnostics]
    assert got == [("SRL009", 2, 1), ("SRL009", 4, 1)]
    assert ei.value.diagnostics[1].message == (
        "IMPORTS <https://example.org/rules.srl> cannot be resolved: only local files (file: or relative IRIs) are supported"
    )


def test_syntax_error_in_an_imported_file(tmp_path: Path) -> None:
    a = write(tmp_path, "a.srl", P + "IMPORTS <b.srl>\n")
    write(tmp_path, "b.srl", P + "RULE { ?x :p } WHERE { }\n")
    with pytest.raises(RuleSyntaxError) as ei:
        load_rules(a)
    assert ei.value.diagnostics[0].file == str(tmp_path / "b.srl")


def test_formats_by_extension_are_merged_and_checked(tmp_path: Path) -> None:
    s = write(tmp_path, "x.srl", P + "RULE { ?x :safe 1 } WHERE { ?x :k 1 . NOT { ?x :status :bad } }\n")
    d = write(tmp_path, "y.dlog", "@prefix : <http://example/> .\n[?x, :status, :bad] :- [?x, :safe, 1] .\n")
    with pytest.raises(RuleSetInvalid) as ei:
        load_rules(s, d)  # the cycle spans the two files
    assert [x.code for x in ei.value.diagnostics] == ["SRL008"]
    assert len(load_rules(s, d, check=False).rules) == 2
    with pytest.raises(FileNotFoundError):
        load_rules(tmp_path / "nope.srl")


def test_shipped_rule_files_by_bare_name() -> None:
    shipped = sorted(p.name for p in resource_dir("rules").glob("*.srl"))
    assert "rdfs.srl" in shipped
    rs = load_rules("rdfs.srl")
    assert rs.rules and all(r.loc.file == str((resource_dir("rules") / "rdfs.srl").resolve()) for r in rs.rules)


def test_parse_rules_dispatches_on_format() -> None:
    a = parse_rules(P + "RULE { ?x a :B } WHERE { ?x a :A }", format="srl")
    b = parse_rules("@prefix : <http://example/> .\n:B[?x] :- :A[?x] .", format="dlog")
    assert a.rules == b.rules
    with pytest.raises(ValueError, match="unknown rule format"):
        parse_rules("", format="n3")
