"""The arena's pages in a real browser (Debian's headless Chromium driven by Playwright), on a
phone and on a desktop: the leaderboard with its intervals, a policy's page and its play button,
and the submit form with a good and a broken file, with its script and without. Screenshots go
to ``tests/artifacts/web/``."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web extra: pip install 'bergen_env[web]'")
pytest.importorskip("uvicorn", reason="the web extra: pip install 'bergen_env[web]'")
httpx2 = pytest.importorskip("httpx2", reason="the web extra: pip install 'bergen_env[web]'")
pytest.importorskip("playwright.sync_api", reason="playwright drives the browser tests")

import test_web_browser as web_browser  # noqa: E402
from test_arena_exploit import exploit_result  # noqa: E402
from test_web_browser import ARTIFACTS, CHROMIUM, PHONE, wait_until  # noqa: E402
from web_server import running_server  # noqa: E402

from bergen_env.arena_exploit import check_exploit  # noqa: E402
from bergen_env.arena_store import ArenaStore, check_submission  # noqa: E402
from bergen_env.duplicate_pairs import PairOutcome  # noqa: E402
from bergen_env.web import TableManager  # noqa: E402
from bergen_env.web.arena_runner import ArenaRunner, ArenaSettings  # noqa: E402

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason="Debian's chromium is not installed (apt-get install chromium)",
)

ROOT = Path(__file__).resolve().parents[1]
DESKTOP = {"width": 1366, "height": 900}
STRENGTH = {"random": 1.0, "greedy": 2.0, "heuristic": 3.5, "tuned": 3.5}


#: The headless Chromium of the browser tests (a module-scoped fixture).
browser = web_browser.browser


def rated_arena() -> tuple[ArenaRunner, str]:
    """An arena whose one submission's pairs are all stored (outcomes drawn from fixed odds)."""
    store = ArenaStore(":memory:")
    data = (ROOT / "policies" / "standard_2p.safetensors").read_bytes()
    entry, _ = store.add_policy(check_submission(data), "Ada Lovelace")
    rng = np.random.default_rng(0)
    strength = {**STRENGTH, entry.id: 3.0}
    for job in store.plan(entry, 400, rivals=0):
        p = strength[job.a] / (strength[job.a] + strength[job.b])
        chars = "".join("2" if rng.random() < p else "0" for _ in range(400))
        store.record(job.id, PairOutcome(chars, (chars.count("2"), 0), 2, 1, 1), 1.0)
    store.set_exploit(entry.sha256, check_exploit(exploit_result(), entry, base=ROOT))
    return ArenaRunner(store, ArenaSettings(matches=4, bootstrap=100)), entry.sha256


def _boards_ready(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        boards = httpx2.get(f"{base}/api/arena").json()["boards"]
        if boards and boards[0]["entries"]:
            return
        time.sleep(0.2)
    raise AssertionError("the arena's board was not fitted")


@pytest.mark.parametrize(("viewport", "lang"), [(PHONE, "ru"), (DESKTOP, "en")])
def test_the_leaderboard_and_a_policy_page_on_a_phone_and_a_desktop(browser, viewport, lang):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    arena, sha = rated_arena()
    with running_server(TableManager(pace=0), arena=arena) as base:
        _boards_ready(base)
        page = browser.new_page(viewport=viewport)
        page.goto(f"{base}/arena?lang={lang}")
        page.wait_for_selector("table.arena-board tbody tr")
        rows = page.locator("table.arena-board tbody tr")
        assert rows.count() == 5
        text = page.locator("#boards").inner_text()
        assert "Ada Lovelace" in text and "1000" in text and "[1000, 1000]" in text
        gains = page.locator("td.exploit").all_inner_texts()  # measured for the policy alone
        assert sorted(gains) == ["", "", "", "", "+0.180 [+0.040, +0.320]"]
        if lang == "ru":
            assert "Рейтинг" in text and "Арена стратегий" in page.title()
        else:
            assert page.locator("svg.interval").count() == 5  # the chart of intervals
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        color = "getComputedStyle(document.querySelector('table.arena-board td')).color"
        assert page.evaluate(color) != "rgb(255, 255, 255)"  # dark text on the white table
        page.screenshot(path=str(ARTIFACTS / f"arena-{lang}.png"), full_page=True)

        page.locator(f'a[href^="/arena/{sha}"]').click()
        page.wait_for_selector("#pairs tbody tr")
        assert page.locator("#pairs tbody tr").count() == 4
        assert sha in page.locator("#policy-facts").inner_text()
        assert "1" in page.locator("#policy-rating").inner_text()
        assert "+0.180 [+0.040, +0.320]" in page.locator("#policy-exploit").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=str(ARTIFACTS / f"arena-policy-{lang}.png"), full_page=True)
        page.locator("#play").click()  # a table against the policy, the person's seat
        page.wait_for_url("**/s/**")
        page.wait_for_selector("#hand")
        page.close()


def test_the_submit_form_takes_a_file_and_names_a_refusal(browser, tmp_path: Path):
    arena, _ = rated_arena()
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x80\x04not a policy")
    with running_server(TableManager(pace=0), arena=arena) as base:
        page = browser.new_page(viewport=DESKTOP)
        page.goto(f"{base}/arena?lang=fi")
        page.wait_for_selector("#submit")
        page.set_input_files("#file", str(broken))
        page.click("#submit button")
        wait_until(page, "!document.getElementById('notice').hidden")
        notice = page.locator("#notice").inner_text()
        assert notice.startswith("Tiedosto hylättiin:") and "pickle" in notice
        page.set_input_files("#file", str(ROOT / "policies" / "scratch_2p.safetensors"))
        page.fill("#name", "Grace")
        page.click("#submit button")
        wait_until(page, "document.getElementById('notice').className === 'notice info'")
        assert "otteluparia" in page.locator("#notice").inner_text()
        page.close()
        # without scripts the form posts the file itself and lands on the policy's page
        page = browser.new_page(viewport=PHONE, java_script_enabled=False)
        page.goto(f"{base}/arena")
        assert page.locator("#submit").is_visible()
        page.set_input_files("#file", str(ROOT / "policies" / "standard_3p.safetensors"))
        page.fill("#name", "Ada")
        page.click("#submit button")
        page.wait_for_url("**/arena/*")
        sha = page.url.rsplit("/", 1)[1]
        entry = httpx2.get(f"{base}/api/arena/{sha}").json()
        assert entry["name"] == "Ada" and entry["rules"]["num_players"] == 3
        page.close()
