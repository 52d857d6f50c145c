"""The inspector in a real browser: headless Chromium (the system's ``/usr/bin/chromium``,
Debian package ``chromium``) driven by Playwright for Python, against ``uvicorn`` serving
the demo tenant (``reckon demo``'s month of spend, then a refresh to $34,000 of the $40,000
Meta cap). Signs in through the login form, finds the cap ``near_limit`` in the bundle,
opens its proof tree by clicking the status, runs the SPARQL console; hostile memory text
never executes. Screenshots are written to ``test-artifacts/inspector/`` (or
``$RECKON_TEST_ARTIFACTS``).

Needs Chromium and the ``playwright`` package (test extra; never ``playwright install``:
the system browser is used). Under ``CI=true`` a missing browser or package fails the
suite; elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import io
import os
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

CHROMIUM = os.environ.get("RECKON_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(os.environ.get("RECKON_TEST_ARTIFACTS", REPO / "test-artifacts")) / "inspector"


def _need(ok: bool, why: str) -> None:
    if ok:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests need {why} (CI=true: not skipped)")
    pytest.skip(f"browser tests need {why}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _need(Path(CHROMIUM).is_file() or shutil.which(CHROMIUM) is not None,
          f"Chromium at {CHROMIUM} (apt-get install chromium, or set RECKON_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "the playwright package (pip install -e '.[test]')")
        raise
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory, _hashing_embedder: None) -> Iterator[dict[str, Any]]:
    """uvicorn on a free loopback port over the demo tenant, with an operator token."""
    import uvicorn
    from rich.console import Console

    from reckon import ConflictPending, Principal
    from reckon.api import Engine
    from reckon.cli._demo import run_demo
    from reckon.server.auth import TokenStore
    from reckon.server.http import create_app

    d = tmp_path_factory.mktemp("inspector-demo")
    run_demo(d, out=Console(file=io.StringIO()))
    eng = Engine(d)
    acme = eng.tenant("acme")
    acme.set_spend("meta", 34000, period_start=date(2026, 3, 1))  # a spend refresh: 85 % of the cap
    cap = next(m for m in acme.memories() if m.subclass == "BudgetConstraintMemory")
    assert cap.status["budgetStatus"] == "near_limit"
    hostile = []
    for payload in ('<img src=x onerror="window.__xss=1">', "<script>window.__xss=1</script>"):
        fields = dict(principal=Principal.operator("dana"), kind="fact", scope="company", importance=4,
                      source="operator", label=f"Hostile note {payload}", content=f"Said: {payload}")
        try:
            hostile.append(acme.remember(**fields).id)
        except ConflictPending as c:
            hostile.append(acme.remember(**fields, conflict_resolution="keep_both", conflict_id=c.conflict_id).id)
    _, token = TokenStore(d).create("acme", person="dana", role="operator", label="browser test")
    server = uvicorn.Server(uvicorn.Config(create_app(eng, wall_clock=False), host="127.0.0.1", port=0, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield {"url": f"http://127.0.0.1:{port}", "token": token, "cap": cap, "hostile": hostile}
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000
    return path


@pytest.fixture
def page(browser: Any, demo_server: dict[str, Any]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(demo_server["url"] + "/")
    assert "/ui/login" in pg.url
    pg.fill("#token", demo_server["token"])
    pg.click("button[type=submit]")
    pg.wait_for_url(demo_server["url"] + "/")
    yield pg
    assert pg.evaluate("window.__xss === undefined"), "stored text ran as script"
    assert dialogs == [] and errors == []
    context.close()


def test_sign_in_lands_on_the_overview_and_the_cookie_is_httponly(page: Any, demo_server: dict[str, Any]) -> None:
    assert page.locator("h1").inner_text() == "Acme Outdoor Co."
    assert "2026-03-31" in page.locator(".clock").inner_text()
    assert page.evaluate("document.cookie") == ""  # HttpOnly: scripts cannot read the token
    cookies = page.context.cookies()
    assert [c["name"] for c in cookies] == ["reckon_inspector"] and cookies[0]["httpOnly"]
    assert cookies[0]["sameSite"] == "Strict"
    _shot(page, "01-overview")


def test_bundle_shows_the_cap_near_limit_and_the_status_opens_its_proof_tree(page: Any,
                                                                             demo_server: dict[str, Any]) -> None:
    cap = demo_server["cap"]
    page.click("nav >> text=Bundle")
    page.wait_for_url("**/ui/bundle")
    text = page.locator("#bundle-text").inner_text()
    assert f"[{cap.id}] Meta monthly spend cap" in text
    assert "status: near_limit — 85 % ($34,000 of $40,000" in text
    item = page.locator(f'li.item[data-memory="{cap.id}"]')
    status = item.locator("a.status-text")
    assert status.inner_text().startswith("near_limit — 85 %")
    _shot(page, "02-bundle")
    status.click()
    page.wait_for_url(f"**/ui/memories/{cap.id}#derived")
    budget = page.locator('li.derived-fact[data-name="budgetStatus"] > details')
    assert budget.locator("summary .status-value").inner_text() == "mk:NearLimit"
    budget.locator("> summary").click()  # toggles it (the #derived fragment opened the statuses)
    budget.locator("> summary").click()
    assert budget.evaluate("d => d.open")
    proof = budget.locator("details.proof").first
    assert proof.is_visible()
    assert "rule:budget-status-near-limit" in proof.locator("> summary").inner_text()
    assert "FILTER(34000 <= 40000 && 34000 >= 0.8 * 40000)" in proof.inner_text()
    # a nested support opens on click: the current spend, down to the asserted spend record
    nested = proof.locator("details.proof").first
    assert not nested.evaluate("d => d.open")
    nested.locator("> summary").click()
    assert nested.evaluate("d => d.open")
    assert "mk:amount 34000" in nested.inner_text() and "[asserted]" in nested.inner_text()
    _shot(page, "03-proof-tree")
    page.click("button.collapse-all")
    assert not budget.evaluate("d => d.open")


def test_sparql_console_returns_rows(page: Any) -> None:
    page.click("nav >> text=SPARQL")
    page.wait_for_url("**/ui/sparql")
    page.fill("textarea[name=query]", "SELECT ?label ?status WHERE { ?m a rk:ActiveMemory ; rdfs:label ?label ; "
                                      "mk:budgetStatus ?s . ?s rdfs:label ?status }")
    page.click("form.sparql button[type=submit]")
    page.wait_for_selector("table.results")
    rows = page.locator("table.results tbody tr")
    assert rows.count() == 1
    assert rows.first.locator("td").nth(0).inner_text() == "Meta monthly spend cap"
    assert rows.first.locator("td").nth(1).inner_text() == "near_limit"
    assert page.locator("table.results thead th").all_inner_texts() == ["label", "status"]
    _shot(page, "04-sparql")


def test_lanes_search_and_hostile_text_stays_text(page: Any, demo_server: dict[str, Any]) -> None:
    page.click("nav >> text=Lanes")
    page.wait_for_url("**/ui/lanes")
    assert page.locator("section.lane").count() >= 4
    for mid in demo_server["hostile"]:
        card = page.locator(f'article.card[data-memory="{mid}"]')
        assert "Hostile note <" in card.locator(".card-title").inner_text()
    assert page.locator("img").count() == 0
    page.fill("input[name=q]", "Meta spend cap")
    page.click("form.filters button[type=submit]")
    page.wait_for_selector("table.scores")
    first = page.locator("table.scores tbody tr").first
    assert "Meta monthly spend cap" in first.inner_text()
    _shot(page, "05-lanes-search")
    page.goto(demo_server["url"] + f"/ui/memories/{demo_server['hostile'][0]}")
    assert page.locator("h1.memory-title").inner_text().startswith("Hostile note <img")
    _shot(page, "06-hostile-memory")


def test_business_page_draws_spend_over_time(page: Any) -> None:
    page.click("nav >> text=Business")
    page.wait_for_url("**/ui/business")
    lines = page.locator("svg.chart polyline.line")
    assert lines.count() == 2  # google and meta, a point per day of the replay
    assert len(lines.nth(1).get_attribute("points").split()) >= 28
    assert "Meta monthly spend cap: $40,000" in page.locator("svg.chart").text_content()
    box = page.locator("svg.chart").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100
    _shot(page, "07-business")
