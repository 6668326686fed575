"""A person's match in a real browser: Debian's headless Chromium driven by Playwright.

Opens the quick start URL and clicks through a whole 2-player match against ``greedy``; the
screenshots go to ``tests/artifacts/web/`` (not committed). Nothing is downloaded: Playwright
drives the system's ``/usr/bin/chromium`` (``apt-get install chromium``; ``.ci/run`` does).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

from web_server import running_server  # noqa: E402

from bergen_env.web import TableManager  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent / "artifacts" / "web"

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason="Debian's chromium is not installed (apt-get install chromium)",
)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _version(page) -> int:
    return int(page.evaluate("document.body.dataset.version || -1"))


def test_quick_start_match_to_the_end(browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    manager = TableManager(pace=0.01)
    with running_server(manager) as base:
        page = browser.new_page(viewport={"width": 1200, "height": 820})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{base}/play?players=2&opponents=greedy&seed=7&lang=en")
        assert "/s/" in page.url
        moves = 0
        shots = 0
        shots_table = False
        for _ in range(2000):
            page.wait_for_function(
                "document.body.dataset.over === 'true' || "
                "document.querySelector('#status.go') !== null",
                timeout=30_000,
            )
            if page.evaluate("document.body.dataset.over") == "true":
                break
            before = _version(page)
            tiles = page.locator(".tile-btn.legal")
            if not shots_table and tiles.count() >= 2 and page.locator("#last-hand").is_visible():
                page.screenshot(path=str(ARTIFACTS / "table.png"))  # a hand ended, your turn
                shots_table = True
            if tiles.count():
                tiles.first.click()
                ends = page.locator(".end-btn")
                if page.locator("#choose").is_visible():
                    assert ends.count() == 2  # both ends fit: the page asks which
                    if shots < 1:
                        page.screenshot(path=str(ARTIFACTS / "choose-end.png"))
                        shots += 1
                    ends.last.click()
            else:
                page.locator(".act").first.click()  # draw or pass, the only legal moves
            page.wait_for_function(f"Number(document.body.dataset.version) > {before}")
            moves += 1
        else:
            pytest.fail("the match did not end")
        over = page.locator("#over")
        assert over.is_visible()
        assert "Match over" in over.inner_text()
        page.screenshot(path=str(ARTIFACTS / "match-over.png"))
        table_id = page.evaluate("location.pathname")  # the seat page
        assert table_id.startswith("/s/")
        # the finished table opens as a replay, every hand shown
        page.locator("#replay").click()
        page.wait_for_selector("#viewer:not([hidden])")
        page.locator("#last").click()
        assert "Move" in page.locator("#pos").inner_text()
        page.screenshot(path=str(ARTIFACTS / "replay.png"))
        assert moves > 5
        assert errors == []
        page.close()


def test_language_switch_and_rules_page(browser):
    manager = TableManager(pace=0.01)
    with running_server(manager) as base:
        page = browser.new_page()
        page.goto(f"{base}/?lang=fi")
        page.wait_for_selector("#preset option", state="attached")
        assert page.locator("#quick").inner_text() == "Pelaa heti tietokonetta vastaan"
        page.select_option("#lang", "ru")
        assert page.locator("#quick").inner_text() == "Играть сейчас против компьютера"
        page.goto(f"{base}/rules?lang=cs")
        assert "Petice" in page.locator("h1").inner_text()
        page.close()


def test_new_table_form(browser):
    """The home page's form makes a 3-player table with two people: it shows both links."""
    with running_server(TableManager(pace=0.01)) as base:
        page = browser.new_page()
        page.goto(f"{base}/?lang=en")
        page.wait_for_selector("#preset option", state="attached")
        page.select_option("#players", "3")
        page.select_option("select[name=seat1]", "person")
        page.select_option("select[name=seat2]", "heuristic")
        page.locator("#create details summary").click()  # the rule options
        page.fill("input[name=target]", "5")
        page.locator("#create button[type=submit]").click()
        page.wait_for_selector("#links:not([hidden])")
        links = page.locator("#links a")
        assert links.count() == 3  # two seats and the spectators
        links.first.click()
        page.wait_for_selector("#status")
        assert "/s/" in page.url
        assert page.locator("#scores").inner_text().count("/ 5") == 3
        page.close()


def test_tuned_leaves_the_menu_under_changed_options(browser):
    """``tuned`` plays unchanged presets only: the seat menu drops it once an option changes."""
    with running_server(TableManager(pace=0.01)) as base:
        page = browser.new_page()
        page.goto(f"{base}/?lang=en")
        page.wait_for_selector("select[name=seat1] option[value=tuned]", state="attached")
        seat = page.locator("select[name=seat1]")
        assert seat.locator("option[value=tuned]").inner_text() == "tuned heuristic"
        seat.select_option("tuned")
        page.locator("#create details summary").click()  # the rule options
        page.fill("input[name=target]", "5")
        assert seat.locator("option[value=tuned]").count() == 0
        assert seat.input_value() == "greedy"  # the seat's default choice instead
        default = page.locator("input[name=target]").get_attribute("data-default")
        page.fill("input[name=target]", default)
        assert seat.locator("option[value=tuned]").count() == 1
        page.close()
