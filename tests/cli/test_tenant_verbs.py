"""``reckon tenant create|list|delete|export|import|validate`` and ``reckon onboard``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import EXAMPLES, run_cli


def test_create_list_delete(tmp_path: Path) -> None:
    r = run_cli(tmp_path, "tenant", "create", "beta", "--company", "Beta Ltd")
    assert r.code == 0, r.err
    assert "created tenant beta" in r.out
    r = run_cli(tmp_path, "tenant", "list", "--json")
    assert r.code == 0 and json.loads(r.out) == ["beta"]
    rows = run_cli(tmp_path, "sparql", "--tenant", "beta", "--format", "json",
                   "SELECT ?n WHERE { ?c a <https://reckon.dev/ns/core#Company> ; "
                   "<http://www.w3.org/2000/01/rdf-schema#label> ?n }")
    assert [b["n"]["value"] for b in json.loads(rows.out)["results"]["bindings"]] == ["Beta Ltd"]
    # main errors: the same id again, an invalid id, deleting an unknown tenant
    again = run_cli(tmp_path, "tenant", "create", "beta")
    assert again.code == 2 and "already exists" in again.err
    bad = run_cli(tmp_path, "tenant", "create", "../evil")
    assert bad.code == 2 and "tenant id" in bad.err.lower()
    assert run_cli(tmp_path, "tenant", "delete", "nope", "--yes").code == 2
    r = run_cli(tmp_path, "tenant", "delete", "beta", "--yes")
    assert r.code == 0
    assert json.loads(run_cli(tmp_path, "tenant", "list", "--json").out) == []


def test_unknown_tenant_is_an_input_error(tmp_path: Path) -> None:
    r = run_cli(tmp_path, "memories", "--tenant", "ghost")
    assert r.code == 2
    assert "ghost" in r.err


def test_export_import_validate(acme: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    data_dir, ids = acme
    out = tmp_path / "acme.trig"
    r = run_cli(data_dir, "tenant", "export", "acme", "--output", str(out))
    assert r.code == 0, r.err
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# reckon-export-version: 2\n")
    r = run_cli(data_dir, "tenant", "import", "acme-copy", str(out))
    assert r.code == 0, r.err
    assert "5 memories" in r.out
    # the copy has the same memories (renamed into the new tenant) with the same derived statuses
    r = run_cli(data_dir, "memories", "--tenant", "acme-copy", "--json")
    copy = {m["label"]: m for m in json.loads(r.out)}
    orig = {m["label"]: m for m in json.loads(run_cli(data_dir, "memories", "--tenant", "acme", "--json").out)}
    assert sorted(copy) == sorted(orig)
    assert all(m["iri"].startswith("urn:reckon:acme-copy:memory:") for m in copy.values())
    assert {k: m["status"] for k, m in copy.items()} == {k: m["status"] for k, m in orig.items()}
    r = run_cli(data_dir, "tenant", "validate", "acme-copy", "--json")
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["conforms"] is True and report["memories"] == 5 and report["inferred"] > 0
    # main error: importing something that is not an export
    junk = tmp_path / "junk.trig"
    junk.write_text("<urn:a> <urn:b> <urn:c> .\n")
    r = run_cli(data_dir, "tenant", "import", "acme-junk", str(junk))
    assert r.code == 2 and "reckon-export-version" in r.err
    assert "acme-junk" not in json.loads(run_cli(data_dir, "tenant", "list", "--json").out)


def test_verified_extraction_wipes_only_after_verifying(acme: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    data_dir, _ = acme
    assert run_cli(data_dir, "tenant", "create", "leaving").code == 0
    assert run_cli(data_dir, "tenant", "export", "leaving", "--wipe").code == 2  # needs --output
    out = tmp_path / "leaving.trig"
    r = run_cli(data_dir, "tenant", "export", "leaving", "--output", str(out), "--wipe")
    assert r.code == 0, r.err
    assert "verified" in r.err
    assert "leaving" not in json.loads(run_cli(data_dir, "tenant", "list", "--json").out)
    assert out.read_text().startswith("# reckon-export-version: 2")


def test_validate_reports_a_non_conformant_memory_with_exit_1(acme: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    from pyoxigraph import Literal, NamedNode, Quad

    from reckon.api import Engine
    from reckon.store import MEMORIES

    data_dir, ids = acme
    out = tmp_path / "x.trig"
    assert run_cli(data_dir, "tenant", "export", "acme", "--output", str(out)).code == 0
    assert run_cli(data_dir, "tenant", "import", "broken", str(out)).code == 0
    t = Engine(data_dir).tenant("broken")
    m = NamedNode(f"urn:reckon:broken:memory:{ids['fact']}")
    imp = NamedNode("https://reckon.dev/ns/core#importance")
    # bypass the write path (which validates) to plant an invalid importance
    t.store.validator = None  # a raw write past the shapes (the facade would refuse it): what validate must find
    with t.store.transaction() as txn:
        txn.remove_pattern(m, imp, None, MEMORIES)
        txn.add(Quad(m, imp, Literal("9", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#integer")), MEMORIES))
    t.store.close()
    r = run_cli(data_dir, "tenant", "validate", "broken")
    assert r.code == 1
    assert ids["fact"] in r.err and "importance" in r.err


def test_onboard_creates_tenant_with_seed_memories(tmp_path: Path) -> None:
    r = run_cli(tmp_path, "onboard", str(EXAMPLES / "acme.yaml"), "--tenant", "shop", "--json")
    assert r.code == 0, r.err
    result = json.loads(r.out)
    assert result["tenant"] == "shop" and result["created"] is True
    assert {"objective", "fact", "preference"} <= set(result["memories"])
    got = json.loads(run_cli(tmp_path, "get", result["memories"]["objective"], "--tenant", "shop", "--json").out)
    assert got["subclass"] == "BudgetConstraintMemory" and got["source"] == "onboarding"
    assert got["properties"]["amount"] == "40000" and got["author"] == "dana"  # a decimal: its exact text
    # onboarding the same tenant again is refused
    again = run_cli(tmp_path, "onboard", str(EXAMPLES / "acme.yaml"), "--tenant", "shop")
    assert again.code == 2 and "tenant 'shop' already exists (pass --existing to add to it)" in again.err


@pytest.mark.parametrize("drop", [("preference",), ("objective", "fact"), ("objective", "fact", "preference")])
def test_onboard_refuses_a_file_missing_seeds_and_names_them(tmp_path: Path, drop: tuple[str, ...]) -> None:
    import yaml

    spec = yaml.safe_load((EXAMPLES / "acme.yaml").read_text())
    for k in drop:
        del spec[k]
    f = tmp_path / "partial.yaml"
    f.write_text(yaml.safe_dump(spec))
    r = run_cli(tmp_path, "onboard", str(f))
    assert r.code == 2
    err = " ".join(r.err.split())
    assert f"missing {', '.join(drop)}" in err
    assert json.loads(run_cli(tmp_path, "tenant", "list", "--json").out) == []


def test_onboard_leaves_no_tenant_when_a_seed_is_invalid(tmp_path: Path) -> None:
    import yaml

    spec = yaml.safe_load((EXAMPLES / "acme.yaml").read_text())
    spec["objective"]["properties"]["amount"] = "-5"
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(spec))
    r = run_cli(tmp_path, "onboard", str(f))
    assert r.code == 1  # shape violation
    assert "objective" in r.err and "amount" in r.err
    assert json.loads(run_cli(tmp_path, "tenant", "list", "--json").out) == []


def test_validate_reports_an_inferred_graph_that_differs_from_recomputation(tmp_path: Path) -> None:
    """A derived triple planted in the stored inferred graph (bypassing the store API) is
    found by comparing with materialization from scratch: exit 1, the triple named."""
    from pyoxigraph import NamedNode, Quad, Store

    from reckon.store import INFERRED

    assert run_cli(tmp_path, "tenant", "create", "drift").code == 0
    assert run_cli(tmp_path, "tenant", "validate", "drift").code == 0
    store = Store(str(tmp_path / "tenants" / "drift" / "store"))
    store.add(Quad(NamedNode("urn:reckon:drift:company"), NamedNode("https://reckon.dev/ns/marketing#budgetStatus"),
                   NamedNode("https://reckon.dev/ns/marketing#OverBudget"), INFERRED))
    store.flush()
    del store
    r = run_cli(tmp_path, "tenant", "validate", "drift", "--json")
    assert r.code == 1
    report = json.loads(r.out)
    assert report["conforms"] is False and report["violations"] == []
    assert report["inferred_extra"] == [
        "<urn:reckon:drift:company> <https://reckon.dev/ns/marketing#budgetStatus> "
        "<https://reckon.dev/ns/marketing#OverBudget>"]


def test_validate_checks_the_recall_index_against_the_store(tmp_path: Path) -> None:
    """A snapshot of the recall index that lies about the store (it claims the current
    generation but lacks a memory) is reported by `tenant validate` (exit 1) and rebuilt,
    so the next validate conforms."""
    import json as _json

    from reckon.recall.tenant_index import SNAPSHOT

    assert run_cli(tmp_path, "tenant", "create", "rx").code == 0
    ids = []
    for label in ("Report format", "Headline length"):
        r = run_cli(tmp_path, "remember", "--tenant", "rx", "--as", "dana", "--operator", "--kind", "preference",
                    "--scope", "company", "--importance", "3", "--label", label, "--content", f"{label} notes",
                    "--json")
        assert r.code == 0, r.err
        ids.append(_json.loads(r.out)["id"])
    r = run_cli(tmp_path, "tenant", "validate", "rx", "--json")
    assert r.code == 0, r.out + r.err
    rc = _json.loads(r.out)["recall"]
    assert rc["documents"] == 2 and rc["conforms"] and rc["missing"] == rc["extra"] == rc["stale"] == []
    # a snapshot that claims the current generation but lacks ids[0] (the version 1 form,
    # which is still read)
    from reckon.api import Engine
    from reckon.recall.tenant_index import LEGACY_SNAPSHOT

    t = Engine(tmp_path).tenant("rx")
    kept = t.recall.document(t.get(ids[1]))
    gen = t.store.generation()
    t.store.release()
    rdir = tmp_path / "tenants" / "rx" / "recall"
    (rdir / SNAPSHOT).unlink()
    (rdir / LEGACY_SNAPSHOT).write_text(_json.dumps({"version": 1, "tenant": "rx", "generation": gen,
                                                     "docs": [{**kept, "time": kept["time"].isoformat()}]}))
    r = run_cli(tmp_path, "tenant", "validate", "rx")
    assert r.code == 1 and f"recall index missing: {ids[0]}" in r.err
    assert "1 missing, 0 extra and 0 stale" in r.out
    assert run_cli(tmp_path, "tenant", "validate", "rx").code == 0
