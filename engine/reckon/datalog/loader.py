"""Load rule programs from files: format by extension, IMPORTS resolved, all checked.

Source: SRL draft ``index.html`` section "Processing Imports": support for imports is
optional and may be partial, but "an implementation that provides partial support
MUST signal an error if it encounters an import that it does not support", "MUST
signal an error if it can not resolve the import document, or if the document is not
syntactically valid", and "MUST only import a rule set once".

Reckon supports imports of local files only: a ``file:`` IRI, or a relative IRI
(resolved against the importing file's location, which is the default base), or the
IRI of a shipped rule file's name (``<rdfs.srl>`` resolves to the file next to the
importer first, then to ``reckon/_data/rules/rdfs.srl``). Nothing is fetched from the
network: any other IRI is refused with SRL009.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from reckon._errors import RuleSetInvalid, SchemaError
from reckon._resources import resource_dir
from reckon.datalog import _cache
from reckon.datalog.diagnostics import Diagnostic
from reckon.datalog.model import RuleSet

__all__ = ["load_rules", "parse_rules", "FORMATS"]

FORMATS = {".srl": "srl", ".rl": "srl", ".dlog": "dlog", ".datalog": "dlog"}
"""File extension -> rule syntax."""


def _check_rule_text(text: str, file: str) -> None:
    """Refuse a character no RDF text can hold anywhere in rule text (a constant holding
    it could never be derived into the store; :func:`reckon.store.terms.text_fault`).

    :raises RuleSyntaxError: SRL013 at its line and column.
    """
    from reckon.store.terms import text_fault

    fault = text_fault(text) if isinstance(text, str) else None
    if fault is None:
        return
    from reckon._errors import RuleSyntaxError

    at = int(fault.rsplit(" at character offset ", 1)[1].split(" ", 1)[0])
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    raise RuleSyntaxError([Diagnostic("SRL013", fault, file, line, col)])


def parse_rules(text: str, *, format: str = "srl", file: str = "<string>", base: str | None = None, check: bool = True) -> RuleSet:
    """Parse rule text in SRL (``format="srl"``) or the RDFox Datalog subset (``"dlog"``).

    IMPORTS are recorded in the result, not resolved (use :func:`load_rules` for files).

    :raises RuleSyntaxError: when the text does not parse (all errors listed).
    :raises RuleSetInvalid: unknown prefix; with ``check``, not well-formed.
    :raises ValueError: when ``format`` is neither ``"srl"`` nor ``"dlog"``.
    """
    _check_rule_text(text, file)
    if format == "srl":
        from reckon.datalog.srl import parse_srl

        return parse_srl(text, file=file, base=base, check=check)
    if format == "dlog":
        from reckon.datalog.dlog import parse_dlog

        return parse_dlog(text, file=file, base=base, check=check)
    raise ValueError(f"unknown rule format {format!r}; expected 'srl' or 'dlog'")


def load_rules(*paths: str | Path, check: bool = True) -> RuleSet:
    """Load, merge and check rule files.

    :param paths: ``.srl`` / ``.dlog`` files, or bare names of shipped rule files
        (``"rdfs.srl"``, ``"core.srl"``) looked up in ``resource_dir("rules")`` when no
        such file exists relative to the working directory.
    :param check: run :func:`reckon.datalog.stratify.check_program` (well-formedness
        and stratification) on the merged program.
    :returns: one :class:`~reckon.datalog.model.RuleSet`: rules of all files and their
        imports in load order (each file once), union of DATA triples; ``imports`` lists
        every IMPORTS IRI that was resolved.
    :raises RuleSyntaxError: a file or an imported file does not parse.
    :raises RuleSetInvalid: unknown prefix, unresolvable / unsupported import (SRL009),
        not well-formed or not stratifiable; every problem of the merged program listed.
    :raises FileNotFoundError: when a path given here does not exist.
    """
    parts: list[RuleSet] = []
    seen: set[Path] = set()
    problems: list[Diagnostic] = []
    for p in paths:
        _load(_locate(p), parts, seen, problems)
    merged = parts[0] if parts else RuleSet()
    for part in parts[1:]:
        merged = merged + part
    if check:
        try:
            _cache.check_program_cached(merged)
        except RuleSetInvalid as e:
            problems.extend(e.diagnostics)
    if problems:
        raise RuleSetInvalid(problems)
    return merged


def _locate(p: str | Path) -> Path:
    path = Path(p)
    if path.is_file():
        return path.resolve()
    if len(path.parts) == 1:
        try:
            shipped = resource_dir("rules") / path.name
        except SchemaError:
            shipped = None
        if shipped is not None and shipped.is_file():
            return shipped.resolve()
    raise FileNotFoundError(f"rule file not found: {p}")


def _load(path: Path, parts: list[RuleSet], seen: set[Path], problems: list[Diagnostic]) -> None:
    if path in seen:  # "MUST only import a rule set once"
        return
    seen.add(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise RuleSetInvalid([Diagnostic("SRL009", f"unknown rule file extension {path.suffix!r} (expected .srl or .dlog)", str(path), 0, 0)])
    text = path.read_text(encoding="utf-8")
    rs = _cache.load_parsed(str(path), fmt, text)
    if rs is None:
        rs = parse_rules(text, format=fmt, file=str(path), base=path.as_uri(), check=False)
        _cache.store_parsed(str(path), fmt, text, rs)
    parts.append(rs)
    locations: list[tuple[int, int]] | None = None
    for k, iri in enumerate(rs.imports):
        target = _import_target(iri.value, path)
        if target is None:
            if locations is None:
                locations = _imports_positions(text)
            line, col = locations[k] if k < len(locations) else (0, 0)
            problems.append(
                Diagnostic(
                    "SRL009",
                    f"IMPORTS <{iri.value}> cannot be resolved: only local files (file: or relative IRIs) are supported",
                    str(path), line, col,
                )
            )
            continue
        _load(target, parts, seen, problems)


def _imports_positions(text: str) -> list[tuple[int, int]]:
    from reckon.datalog._lexer import LineIndex, tokenize

    lines = LineIndex(text)
    return [lines.position(t.start) for t in tokenize(text) if t.kind == "NAME" and str(t.value).upper() == "IMPORTS"]


def _import_target(iri: str, importer: Path) -> Path | None:
    u = urlparse(iri)
    if u.scheme == "file":
        local = Path(unquote(u.path))
        if local.is_file():
            return local.resolve()
        shipped = _shipped(local.name)
        if shipped is not None and local.parent == importer.parent:
            return shipped
        return None
    return None


def _shipped(name: str) -> Path | None:
    try:
        p = resource_dir("rules") / name
    except SchemaError:
        return None
    return p.resolve() if p.is_file() else None
