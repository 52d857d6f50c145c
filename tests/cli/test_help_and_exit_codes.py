"""The CLI as a new user meets it: `--version`, `-h` on every verb, help text that renders
as written (no rich-markup swallowing of `[a-z0-9]`, no `<bool>` placeholder on flags),
each documented exit code, error messages without class names, `--as` required, and
read-only verbs that create nothing."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import EXAMPLES, run_cli
from tests.conftest import REPO

T = ("--tenant", "acme")
OP = ("--as", "dana", "--operator", "--member-of", "growth")
_BOX = re.compile(r"[│╭╮╰╯─┃━┏┓┗┛]")


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    monkeypatch.delenv("RECKON_AS", raising=False)
    monkeypatch.delenv("RECKON_TENANT", raising=False)


def _flat(text: str) -> str:
    return " ".join(_BOX.sub(" ", text).split())


def _commands() -> list[tuple[list[str], Any]]:
    """Every command path of the app with its raw (unpolished) click command."""
    import typer

    from reckon.cli._app import app, command

    command()  # registers every verb module
    raw = typer.main.get_command(app)
    out: list[tuple[list[str], Any]] = []

    def walk(c: Any, path: list[str]) -> None:
        out.append((path, c))
        for name, sub in sorted(getattr(c, "commands", {}).items()):
            walk(sub, path + [name])

    walk(raw, [])
    return out


COMMANDS = _commands()


def test_every_verb_is_covered() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    for verb in ("", "remember", "bundle", "sparql", "explain", "serve", "mcp", "tenant create", "token create",
                 "rules check", "demo", "onboard", "load"):
        assert verb in names, verb
    assert len(names) > 25


def test_each_verb_module_registers_the_verbs_the_map_gives_it() -> None:
    """A command line builds only its verb's module (``VERB_MODULES``): every top-level
    verb is in the map, and a fresh process that imports only a module's entry has all
    the verbs the map gives that module (so no verb is ever missing from its own run)."""
    import json
    import subprocess
    import sys

    from reckon.cli._app import VERB_MODULES

    top = {p[0] for p, _ in COMMANDS if len(p) == 1}
    assert top == set(VERB_MODULES), top ^ set(VERB_MODULES)
    by_module: dict[str, list[str]] = {}
    for verb, mod in VERB_MODULES.items():
        by_module.setdefault(mod, []).append(verb)
    code = ("import json, sys\n"
            "from reckon.cli._app import command\n"
            "cmd = command([sys.argv[1]])\n"
            "print(json.dumps(sorted(cmd.commands)))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "engine")}
    for mod, verbs in sorted(by_module.items()):
        p = subprocess.run([sys.executable, "-c", code, verbs[0]], capture_output=True, text=True, env=env,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        built = set(json.loads(p.stdout))
        assert set(verbs) <= built, (mod, set(verbs) - built)
        assert built < top or mod == "_rules", (mod, built)  # not every verb: only what the module needs


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) or "reckon" for p, _ in COMMANDS])
def test_help_renders_every_help_text_as_written(tmp_path: Path, path: list[str]) -> None:
    raw = dict((tuple(p), c) for p, c in COMMANDS)[tuple(path)]
    short, long = run_cli(tmp_path, *path, "-h"), run_cli(tmp_path, *path, "--help")
    assert short.code == 0 and long.code == 0, short.err
    assert short.out == long.out
    out = _flat(short.out)
    assert out.startswith("Usage: reckon")
    assert "<bool>" not in out  # flags take no value
    import inspect

    texts = [raw.help or ""] + [p.help for p in raw.params if getattr(p, "help", None)]
    for t in texts:
        for para in inspect.cleandoc(t).split("\n\n"):
            want = " ".join(para.split())
            assert want in out, (want, out)  # every word, bracket and dollar sign as written
    assert not (tmp_path / "tenants").exists()  # asking for help creates nothing


def test_patterns_in_help_are_not_swallowed_as_markup(tmp_path: Path) -> None:
    out = _flat(run_cli(tmp_path, "tenant", "create", "-h").out)
    assert "^[a-z0-9][a-z0-9_-]{0,62}$" in out
    out = _flat(run_cli(tmp_path, "sparql", "-h").out)
    assert "<urn:reckon:graph:schema|memories|business|inferred>" in out
    out = _flat(run_cli(tmp_path, "remember", "-h").out)
    assert "--prop -p <str>..." in out and "--replace Confirm" in out  # a flag: no placeholder


def test_mcp_help_names_every_tool_the_server_serves(tmp_path: Path) -> None:
    """`reckon mcp -h` listed only the four memory tools; the server serves 18."""
    from reckon.api._neighbour_tools import NEIGHBOUR_TOOL_NAMES
    from reckon.api._tools import TOOL_NAMES
    from reckon.api._turn_tools import TURN_TOOL_NAMES

    out = _flat(run_cli(tmp_path, "mcp", "-h").out)
    words = set(re.findall(r"[a-z_]+", out))
    assert [n for n in (*TOOL_NAMES, *TURN_TOOL_NAMES, *NEIGHBOUR_TOOL_NAMES) if n not in words] == []


def test_version(tmp_path: Path) -> None:
    import reckon

    for flag in ("--version", "-V"):
        r = run_cli(tmp_path, flag)
        assert r.code == 0 and r.out == f"reckon {reckon.__version__}\n"
    assert not (tmp_path / "tenants").exists()


def test_root_help_documents_exit_codes_and_the_data_dir(tmp_path: Path) -> None:
    out = _flat(run_cli(tmp_path, "-h").out)
    assert "Exit codes: 0 ok; 1 validation failed" in out and "3 internal error" in out
    assert "RECKON_DATA_DIR" in out and "reckon.Engine()" in out and "RECKON_AS" in out


# ------------------------------------------------------------------ exit codes


@pytest.fixture(scope="module")
def onboarded(tmp_path_factory: pytest.TempPathFactory, _hashing_embedder: None) -> tuple[Path, dict[str, str]]:
    from reckon.api import Engine
    from reckon.onboarding import onboard

    d = tmp_path_factory.mktemp("exit")
    result = onboard(Engine(d), EXAMPLES / "acme.yaml")
    return d, result.memories


_CLASS_PREFIX = re.compile(r"^(\w+ )*?[A-Z][a-z]+[A-Z]\w*:")


def _msg(r: Any) -> str:
    first = (r.err.strip().splitlines() or [""])[0]
    assert not _CLASS_PREFIX.match(first), first  # never "NotAuthorized: ..." or "error: UnknownTenant: ..."
    return first


def test_exit_1_for_an_invalid_memory_whichever_layer_found_it(onboarded: tuple[Path, dict[str, str]],
                                                              tmp_path: Path) -> None:
    d, _ = onboarded
    before = sorted(p.name for p in (d / "tenants").iterdir())
    cases = {
        "model: blank label": ("remember", *T, *OP, "-k", "fact", "-s", "company", "-l", "   "),
        "shapes: amount": ("remember", *T, *OP, "-k", "objective", "-s", "company", "-i", "4", "-l", "Neg cap",
                           "--subclass", "BudgetConstraintMemory", "-p", "platform=google", "-p", "amount=-5",
                           "-p", "currency=USD", "-p", "period=monthly"),
        "shapes: currency": ("remember", *T, *OP, "-k", "objective", "-s", "company", "-i", "4", "-l", "Odd cap",
                             "--subclass", "BudgetConstraintMemory", "-p", "platform=google", "-p", "amount=5",
                             "-p", "currency=dollars", "-p", "period=monthly"),
    }
    for name, args in cases.items():
        r = run_cli(d, *args)
        assert r.code == 1, (name, r.err)
        assert _msg(r).startswith("invalid memory: "), (name, r.err)
    fact = onboarded[1]["fact"]
    r = run_cli(d, "update", fact, *T, *OP, "--label", "   ")
    assert r.code == 1 and _msg(r).startswith("invalid memory: ") and "label" in r.err
    bad = tmp_path / "bad.yaml"
    text = (EXAMPLES / "acme.yaml").read_text().replace("tenant: acme", "tenant: bad-seed")
    bad.write_text(text.replace('amount: "40000"', 'amount: "-40000"'))
    r = run_cli(d, "onboard", str(bad))
    assert r.code == 1 and _msg(r).startswith("invalid memory: objective:")
    bad.write_text(text.replace("  importance: 5\n  subclass: BudgetConstraintMemory",
                                "  importance: 7\n  subclass: BudgetConstraintMemory"))
    r = run_cli(d, "onboard", str(bad))
    assert r.code == 1 and "importance" in _msg(r)
    assert sorted(p.name for p in (d / "tenants").iterdir()) == before  # nothing left behind


def test_exit_2_for_an_option_value_outside_its_choices_or_range_in_every_verb(
        onboarded: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """``reckon --help``: 2 for a bad option value -- the same for every verb and option
    with enumerated values or a range, checked before anything is opened or written."""
    d, ids = onboarded
    fact = ids["fact"]
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n\nThe warehouse closes at six.\n")
    data = tmp_path / "d.ttl"
    data.write_text("@prefix : <http://ex/> . :a :p :b .\n")
    R = ("-k", "fact", "-s", "company", "-l", "x")
    cases = {
        "remember --kind": (("remember", *T, *OP, "-k", "wish", "-s", "company", "-l", "x"), "--kind"),
        "remember --scope": (("remember", *T, *OP, "-k", "fact", "-s", "galaxy", "-l", "x"), "--scope"),
        "remember --source": (("remember", *T, *OP, *R, "--source", "rumour"), "--source"),
        "remember --importance": (("remember", *T, *OP, *R, "-i", "9"), "--importance"),
        "remember --importance 0": (("remember", *T, *OP, *R, "-i", "0"), "--importance"),
        "remember --confidence": (("remember", *T, *OP, *R, "--confidence", "2"), "--confidence"),
        "remember --confidence nan": (("remember", *T, *OP, *R, "--confidence", "nan"), "--confidence"),
        "remember --confidence -0.1": (("remember", *T, *OP, *R, "--confidence", "-0.1"), "--confidence"),
        "update --kind": (("update", fact, *T, *OP, "--kind", "wish"), "--kind"),
        "update --importance": (("update", fact, *T, *OP, "--importance", "0"), "--importance"),
        "update --confidence": (("update", fact, *T, *OP, "--confidence", "1.5"), "--confidence"),
        "supersede --kind": (("supersede", fact, *T, *OP, "--kind", "wish", "-l", "y"), "--kind"),
        "supersede --source": (("supersede", fact, *T, *OP, "--source", "rumour", "-l", "y"), "--source"),
        "memories --kind": (("memories", *T, "--kind", "wish"), "--kind"),
        "memories --scope": (("memories", *T, "--scope", "galaxy"), "--scope"),
        "search --kind": (("search", "budget", *T, "--as", "dana", "--kind", "wish"), "--kind"),
        "search --scope": (("search", "budget", *T, "--as", "dana", "--scope", "galaxy"), "--scope"),
        "index --scope": (("index", str(doc), *T, "--as", "dana", "--scope", "galaxy"), "--scope"),
        "index --importance": (("index", str(doc), *T, "--as", "dana", "--importance", "1"), "--importance"),
        "load --kind": (("load", str(data), *T, "--kind", "bogus"), "--kind"),
        "experience --outcome": (("experience", "record", "a task", *T, "--as", "dana", "--outcome", "meh"),
                                 "--outcome"),
    }
    before = run_cli(d, "tenant", "export", "acme").out
    for name, (args, option) in cases.items():
        r = run_cli(d, *args)
        assert r.code == 2, (name, r.code, r.err)
        assert f"Invalid value for '{option}'" in r.err, (name, r.err)
    assert run_cli(d, "tenant", "export", "acme").out == before  # nothing was written


def test_the_cli_choices_are_the_models(tmp_path: Path) -> None:
    from reckon.cli._app import KIND_CHOICES, SCOPE_CHOICES, SOURCE_CHOICES
    from reckon.memory.models import KINDS, SCOPES, SOURCES

    assert sorted(KIND_CHOICES) == sorted(KINDS)
    assert sorted(SCOPE_CHOICES) == sorted(SCOPES)
    assert sorted(SOURCE_CHOICES) == sorted(SOURCES)


def test_exit_1_for_rules_and_non_conformant_data(tmp_path: Path) -> None:
    bad = tmp_path / "bad.srl"
    bad.write_text("PREFIX : <http://ex/>\nRULE { ?x :p ?y } WHERE { ?x :q ?z }\n")
    r = run_cli(tmp_path, "rules", "check", str(bad))
    assert r.code == 1 and "SRL" in r.err


def test_exit_2_for_usage_and_input_errors(onboarded: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    d, ids = onboarded
    cases = {
        "unknown option": (("remember", "--colour", "red"), "No such option"),
        "missing --as": (("remember", *T, "-k", "fact", "-l", "x"), "Missing option '--as'"),
        "unknown tenant": (("bundle", "--tenant", "nope", "--as", "dana"), "error: no tenant 'nope'"),
        "bad tenant id": (("bundle", "--tenant", "../etc", "--as", "dana"), "error: "),
        "unknown memory": (("get", "0" * 32, *T), "error: no memory"),
        "missing file": (("load", str(tmp_path / "missing.csv"), *T), "error: no such file"),
        "not authorized": (("remember", *T, "--as", "lee", "-k", "fact", "-s", "company", "-l", "x"),
                           "not authorized: member 'lee'"),
        "update refused": (("sparql", *T, "INSERT DATA { <urn:a> <urn:b> <urn:c> }"), "error: SPARQL update"),
        "query does not parse": (("sparql", *T, "SELECT WHERE {"), "error: "),
        "restore as member": (("restore", ids["fact"], *T, "--as", "lee"), "not authorized: "),
        "not inferred": (("explain", *T, f"<urn:reckon:acme:memory:{ids['fact']}> a rk:Nothing"), "not inferred: "),
    }
    for name, (args, prefix) in cases.items():
        r = run_cli(d, *args)
        assert r.code == 2, (name, r.code, r.err)
        msg = _msg(r) if not prefix[0].isupper() else r.err
        assert prefix in msg, (name, r.err)


def test_a_pending_conflict_exits_2_with_the_way_forward(onboarded: tuple[Path, dict[str, str]]) -> None:
    d, _ = onboarded
    first = run_cli(d, "remember", *T, *OP, "-k", "preference", "-s", "company", "-l", "Report day",
                    "-c", "Reports go out on Monday.")
    assert first.code == 0, first.err
    # the agent (not a person) writes the same label: ask before overwriting a human's memory
    r = run_cli(d, "remember", *T, *OP, "--source", "agent_tool", "-k", "preference", "-s", "company",
                "-l", "Report day", "-c", "Reports go out on Friday.")
    assert r.code == 2, r.err
    assert r.err.startswith("conflict: memory 'Report day' would replace")
    cid = re.search(r"--replace --conflict-id ([0-9a-f]+)", r.err).group(1)
    ok = run_cli(d, "remember", *T, *OP, "--source", "agent_tool", "-k", "preference", "-s", "company",
                 "-l", "Report day", "-c", "Reports go out on Friday.", "--replace", "--conflict-id", cid)
    assert ok.code == 0, ok.err


def test_exit_3_for_an_internal_error_names_it_as_a_bug(onboarded: tuple[Path, dict[str, str]],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    d, _ = onboarded
    from reckon.api import _tenant

    def boom(self: Any, *a: Any, **k: Any) -> Any:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(_tenant.Tenant, "context", boom)
    r = run_cli(d, "bundle", *T, "--as", "dana")
    assert r.code == 3 and r.err.startswith("internal error (please report it): RuntimeError: simulated bug")


def test_exit_3_for_a_store_failure(onboarded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    d, _ = onboarded
    from reckon._errors import StoreError
    from reckon.api import _tenant

    def fail(self: Any, *a: Any, **k: Any) -> Any:
        raise StoreError("lock timeout after 30 s")

    monkeypatch.setattr(_tenant.Tenant, "sparql_outcome", fail)
    r = run_cli(d, "sparql", *T, "ASK { ?s ?p ?o }")
    assert r.code == 3 and r.err.startswith("store error: lock timeout")


def test_as_comes_from_the_environment_but_never_from_a_default(onboarded: tuple[Path, dict[str, str]],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    d, _ = onboarded
    for verb in (("bundle", *T), ("search", "report", *T), ("mcp", *T)):
        r = run_cli(d, *verb)
        assert r.code == 2 and "Missing option '--as'" in r.err, verb
    monkeypatch.setenv("RECKON_AS", "lee")
    r = run_cli(d, "bundle", *T)
    assert r.code == 0 and r.out.startswith("# Memory context for lee")


# ------------------------------------------------------------------ read-only verbs create nothing


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of every file, except the recall layer's vector cache: a ranking
    read may embed a memory that was not embedded yet and append its vector there (a
    cache fill keyed by the text's hash, never data; see ``reckon.recall.vectors``), and
    then rewrite the recall snapshot so that the next process opens with that vector
    (``docs.npz``, written under a temporary name: a cache of the store; see
    ``reckon.recall.tenant_index``)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))
            if p.is_file() and not (p.parent.name == "recall"
                                    and (p.name.startswith(("vectors-", ".docs.npz.")) or p.name == "docs.npz"))}


READ_VERBS: list[tuple[str, ...]] = [
    ("tenant", "list"),
    ("tenant", "validate", "acme"),
    ("tenant", "export", "acme", "-o", "OUT"),
    ("memories", *T, "--all"),
    ("bundle", *T, "--as", "dana"),
    ("search", "weekly report", *T, "--as", "dana"),
    ("sparql", *T, "SELECT ?s WHERE { ?s a rk:Company }"),
    ("token", "list", *T),
    ("explain", *T, "--memory", "MEMORY", "--property", "a"),
    ("get", "MEMORY", *T),
    ("history", "MEMORY", *T),
]


def test_read_only_verbs_create_no_data_directory(tmp_path: Path) -> None:
    fresh = tmp_path / "never-created"
    for verb in READ_VERBS:
        args = [a.replace("MEMORY", "0" * 32).replace("OUT", str(tmp_path / "export.trig")) for a in verb]
        r = run_cli(fresh, *args)
        assert r.code in (0, 2), (verb, r.err)
        assert not fresh.exists(), verb


def test_read_only_verbs_leave_an_existing_tenant_untouched(onboarded: tuple[Path, dict[str, str]],
                                                           tmp_path: Path) -> None:
    d, ids = onboarded
    run_cli(d, "bundle", *T, "--as", "dana")  # warm: a first open may repair derived caches once
    before = _tree(d)
    for verb in READ_VERBS:
        args = [a.replace("MEMORY", ids["objective"]).replace("OUT", str(tmp_path / "export.trig")) for a in verb]
        r = run_cli(d, *args)
        assert r.code == 0, (verb, r.err)
        assert _tree(d) == before, verb


def test_a_setting_out_of_range_is_an_invalid_setting_not_a_memory(tmp_path: Path) -> None:
    d = tmp_path / "d"
    assert run_cli(d, "tenant", "create", "acme").code == 0
    for value in ("1.5", "-0.2"):
        r = run_cli(d, "tenant", "settings", "set", "acme", "near_limit_threshold", "--", value)
        assert r.code == 1, r.err
        msg = _msg(r)
        assert msg.startswith("invalid setting: near_limit_threshold = "), msg
        assert "memory" not in msg
    r = run_cli(d, "tenant", "settings", "get", "acme", "near_limit_threshold")
    assert r.code == 0 and "0.8" in r.out  # the refused values left the default in place


def test_a_negative_number_is_a_value_in_every_command() -> None:
    """``-1`` / ``-0.5`` / ``-1e3`` is a value wherever a command takes one (click alone
    reads it as an unknown short option and needs ``--`` before it); an unknown option
    like ``-x`` is still refused."""
    from reckon.cli._app import click_context, command

    root = command()
    seen = 0

    def walk(c: Any) -> None:
        nonlocal seen
        ctx = click_context(c)
        for value in ("-1", "-0.5", "-1e3"):
            opts, largs, _ = c.make_parser(ctx).parse_args([value])
            taken = [v for v in opts.values() if v == value or (isinstance(v, tuple) and value in v)]
            assert largs == [value] or taken, (c.name, value)  # an argument's value, or left for one
        with pytest.raises(Exception, match="No such option: -x"):
            c.make_parser(ctx).parse_args(["-x"])
        seen += 1
        for sub in getattr(c, "commands", {}).values():
            walk(sub)

    walk(root)
    assert seen == len(COMMANDS)


def test_a_bad_value_exits_by_its_kind_in_every_verb_that_takes_a_data_value(
        onboarded: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """``reckon --help``: 1 when the model or the shapes refuse a memory's value (wrong
    type or out of range alike) or the shapes refuse a setting of the right type (out of
    range); 2 for a setting, amount or KPI value not of its type (``settings set ...
    near_limit_threshold high`` as ``spend set meta lots``), an option value click checks
    (``--importance 9``) or an unknown name; nothing changes."""
    d, ids = onboarded
    cap = ids["objective"]
    assert run_cli(d, "tenant", "create", "fresh").code == 0
    S = ("tenant", "settings", "set", "fresh")
    cases: dict[str, tuple[tuple[str, ...], int, str]] = {
        "setting: not an integer": ((*S, "live_context_cap", "abc"), 2, "invalid setting: live_context_cap"),
        "setting: a fraction": ((*S, "live_context_cap", "0.5"), 2, "invalid setting: live_context_cap"),
        "setting: negative, no --": ((*S, "live_context_cap", "-1"), 1, "invalid setting: live_context_cap"),
        "setting: not a decimal": ((*S, "near_limit_threshold", "high"), 2, "invalid setting: near_limit_threshold"),
        "setting: negative decimal": ((*S, "near_limit_threshold", "-0.2"), 1,
                                      "invalid setting: near_limit_threshold"),
        "setting: not a boolean": ((*S, "refuse_inconsistent", "maybe"), 2, "invalid setting: refuse_inconsistent"),
        "setting: unknown name": ((*S, "near_limit", "0.5"), 2, "error: setting: unknown setting"),
        "spend: not a decimal": (("spend", "set", "meta", "lots", "-t", "fresh"), 2, "error: "),
        "kpi: not a decimal": (("kpi", "set", "ROAS", "lots", "-t", "fresh"), 2, "error: "),
        "supersede --prop": (("supersede", cap, *T, *OP, "-l", "Cap 2", "-p", "amount=lots"), 1, "invalid memory: "),
        "supersede --prop negative": (("supersede", cap, *T, *OP, "-l", "Cap 3", "-p", "amount=-5"), 1,
                                      "invalid memory: "),
        "update --prop": (("update", cap, *T, *OP, "-p", "amount=lots"), 1, "invalid memory: "),
        "remember --prop": (("remember", *T, *OP, "-k", "objective", "-s", "company", "-i", "4", "-l", "Cap 4",
                             "--subclass", "BudgetConstraintMemory", "-p", "platform=google", "-p", "amount=lots",
                             "-p", "currency=USD", "-p", "period=monthly"), 1, "invalid memory: "),
        "remember --importance": (("remember", *T, *OP, "-k", "fact", "-s", "company", "-l", "x", "-i", "9"), 2,
                                  "Usage:"),
    }
    def export() -> str:
        r = run_cli(d, "memories", *T, "--all")
        assert r.code == 0, r.err
        return r.out

    before = export()
    settings = run_cli(d, "tenant", "settings", "get", "fresh").out
    for name, (args, code, start) in cases.items():
        r = run_cli(d, *args)
        assert r.code == code, (name, r.code, r.err)
        assert r.err.strip().startswith(start) or _msg(r).startswith(start), (name, r.err)
    assert run_cli(d, "tenant", "settings", "get", "fresh").out == settings
    assert export() == before
    r = run_cli(d, *S, "near_limit_threshold", "0.75")
    assert r.code == 0 and "-> 0.75" in r.out
