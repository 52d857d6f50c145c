"""Small user-facing fixes found by a second new-user check (one test per finding):

* ``reckon remember`` of a label the scope already holds updated that memory in place
  (dedup, seed §9.1) but printed ``remembered``, as for a new one;
* ``reckon get`` printed neither the memory's content nor whom it belongs to, its source
  or its times (only ``--json`` did);
* ``reckon tenant export -o DIR/x.trig`` with a directory that does not exist exited 3
  (store failure) instead of 2 (an input error naming the path);
* a malformed onboarding file's error quoted ``in "<unicode string>"`` instead of the
  file's line and column;
* ``reckon serve --host 256.1.1.1`` warmed the tenants, started, then exited 3 with
  ``[Errno -2] Name or service not known`` naming no host (a port in use likewise).

(The HTTP routes' unknown query parameters: ``tests/server/test_auth.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reckon.api import Engine
from tests.cli.conftest import run_cli


@pytest.fixture()
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RECKON_EMBEDDER", "hashing")
    d = tmp_path / "d"
    Engine(d).create_tenant("acme").close()
    return d


def _remember(d: Path, content: str) -> str:
    r = run_cli(d, "remember", "--tenant", "acme", "--as", "lee", "--kind", "fact", "--label", "Office city",
                "--content", content)
    assert r.code == 0, r.err
    return r.out


def test_a_restated_label_says_it_updated_the_memory(data: Path) -> None:
    first = _remember(data, "The office is in Berlin.")
    assert first.startswith("remembered ")
    mid = first.split()[1]
    again = _remember(data, "The office is in Paris.")
    assert again.startswith(f"updated (same label in this scope) {mid} ")
    assert json.loads(run_cli(data, "get", mid, "--tenant", "acme", "--json").out)["content"] == "The office is in Paris."


def test_get_shows_the_content_and_the_memory_s_metadata(data: Path) -> None:
    mid = _remember(data, "The office is in Berlin.").split()[1]
    r = run_cli(data, "get", mid, "--tenant", "acme")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].startswith(f"memory {mid} 'Office city' (fact, user, importance 3")
    assert "  content: The office is in Berlin." in lines
    assert "  shared with: owner lee" in lines
    assert any(x.startswith("  source: agent_tool, confidence ") for x in lines)
    assert any(x.startswith("  created 20") for x in lines)


def test_export_to_a_missing_directory_is_an_input_error(data: Path, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "x.trig"
    r = run_cli(data, "tenant", "export", "acme", "-o", str(target))
    assert r.code == 2 and "no writable directory" in r.err and str(target.parent) in r.err, (r.code, r.err)
    assert not target.parent.exists()
    r = run_cli(data, "tenant", "export", "acme", "-o", str(tmp_path))
    assert r.code == 2 and "is a directory" in r.err


def test_malformed_onboarding_yaml_names_the_file_line_and_column(data: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("company:\n  name: [Acme\n")
    r = run_cli(data, "onboard", str(bad))
    assert r.code == 2
    assert f"{bad}:3:1: not valid YAML: " in r.err and "<unicode string>" not in r.err, r.err


def test_serve_refuses_a_host_or_port_it_cannot_bind_before_anything_else(data: Path) -> None:
    import socket

    r = run_cli(data, "serve", "--host", "256.1.1.1", "--port", "8123")
    assert r.code == 2 and "--host '256.1.1.1'" in r.err, (r.code, r.err)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_cli(data, "serve", "--port", str(port))
    assert r.code == 2 and f"cannot bind 127.0.0.1:{port}" in r.err, (r.code, r.err)
