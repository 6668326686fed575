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


def wait_until(page, expression: str, timeout: float = 30_000) -> None:
    """Poll ``expression`` in the page until it is true (the pages' CSP forbids Playwright's
    eval-based ``wait_for_function``; ``evaluate`` runs outside the page's policy)."""
    for _ in range(int(timeout / 20)):
        if page.evaluate(expression):
            return
        page.wait_for_timeout(20)
    raise AssertionError(f"not true within {timeout / 1000:g} s: {expression}")


def home_page(browser, base: str, lang: str, **page_args):
    """The home page in ``lang``, its menu of presets loaded."""
    page = browser.new_page(**page_args)
    page.goto(f"{base}/?lang={lang}")
    page.wait_for_selector("#preset option", state="attached")
    return page


def _version(page) -> int:
    return int(page.evaluate("document.body.dataset.version || -1"))


def test_quick_start_match_to_the_end(browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    manager = TableManager(pace=0.01)
    with running_server(manager) as base:
        page = browser.new_page(viewport={"width": 1200, "height": 820})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{base}/play?num_players=2&opponents=greedy&seed=7&lang=en")
        page.wait_for_url("**/s/**")  # the link's page made the table with a JSON POST
        moves = 0
        shots = 0
        shots_table = False
        for _ in range(2000):
            wait_until(
                page,
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
            wait_until(page, f"Number(document.body.dataset.version) > {before}")
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
        page = home_page(browser, base, "fi")
        assert page.locator("#quick").inner_text() == "Pelaa heti tietokonetta vastaan"
        page.select_option("#lang", "ru")
        assert page.locator("#quick").inner_text() == "Играть сейчас против компьютера"
        page.goto(f"{base}/rules?lang=cs")
        assert "Petice" in page.locator("h1").inner_text()
        page.close()


def test_new_table_form(browser):
    """The home page's form makes a 3-player table with two people: the creator lands in their
    own seat, the friend's link and the spectators' labelled there, each with a copy button."""
    with running_server(TableManager(pace=0.01)) as base:
        page = home_page(browser, base, "en")
        page.select_option("#players", "3")
        page.select_option("select[name=seat1]", "person")
        page.select_option("select[name=seat2]", "heuristic")
        page.locator("#create details summary").click()  # the rule options
        page.fill("input[name=target]", "5")
        page.locator("#create button[type=submit]").click()
        page.wait_for_url("**/s/**")
        page.wait_for_selector("#share[open] .share-row")
        assert page.evaluate("document.body.dataset.seat") == "0"
        rows = page.locator("#share .share-row")
        assert rows.count() == 2  # the friend and the spectators; not the creator's own link
        assert rows.nth(0).locator(".share-label").inner_text() == "For Seat 2 (Person)"
        assert rows.nth(1).locator(".share-label").inner_text() == "Spectators"
        friend = rows.nth(0).locator("input").input_value()
        assert "/s/" in friend and friend not in page.url
        rows.nth(0).locator(".copy").click()
        wait_until(page, "document.querySelector('#share .copy').textContent === 'Copied'", 5000)
        assert page.locator("#scores").inner_text().count("/ 5") == 3
        other = browser.new_page()
        other.goto(friend)
        wait_until(other, "document.body.dataset.seat === '1'")
        assert other.locator("#share").is_hidden()  # a friend is handed no links
        other.close()
        page.close()


def test_every_option_in_words_on_a_russian_phone(browser):
    """The form's options read as labels, hints and value names in the page's language."""
    with running_server(TableManager(pace=0.01)) as base:
        page = home_page(browser, base, "ru", viewport=PHONE)
        page.select_option("#preset", "fives")
        page.locator("#create details summary").click()
        text = page.locator("#create").inner_text()
        for code in ("hand_size", "blocked_rule", "play_scoring", "german", "headers", "Fives"):
            assert code not in text, code
        assert "Очки по ходу игры" in text and "Пятёрки (сумма концов кратна 5)" in text
        assert page.locator("#preset option[value=draw]").inner_text() == "Домино (стандарт)"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        page.screenshot(path=str(ARTIFACTS / "options-ru-phone.png"), full_page=True)
        page.close()


def test_log_lines_in_the_page_for_each_person(browser):
    """The page's own code (describe.js) builds each line of web_lines.EXPECTED."""
    import json

    from web_lines import CASES, EXPECTED, GAMES

    with running_server(TableManager(pace=0.01)) as base:
        page = home_page(browser, base, "en")
        got = page.evaluate(
            """async ([cases, games, langs]) => {
              const i18n = await import("/static/i18n.js");
              const d = await import("/static/describe.js");
              const out = {};
              for (const lang of langs) {
                i18n.setLang(lang);
                out[lang] = {};
                for (const [name, [what, game, item]] of Object.entries(cases)) {
                  const msg = games[game];
                  out[lang][name] = what === "event" ? d.eventText(msg, item)
                    : d.resultLines(msg, item).at(-1);
                }
              }
              return out;
            }""",
            json.loads(json.dumps([CASES, GAMES, list(EXPECTED)])),
        )
        assert got == EXPECTED
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


# ---------------------------------------------------------------------- people and attacks

PHONE = {"width": 390, "height": 844}


def _people_table(manager, seed: int, **options):
    from bergen_env.rules import Rules

    rules = Rules.preset("double_set", num_players=2, **options)
    return manager.create(rules, ["person", "person"], seed=seed)


def _long_line(manager, length: int):
    """A person-person table whose line holds at least ``length`` tiles (moves made directly)."""
    for seed in range(40):
        table = _people_table(manager, seed)
        while not table.over and table.hands_done == 0:
            if len(table.state.line) >= length:
                return table
            legal = table.state.legal_actions()
            plays = [a for a in legal if a < 56]
            table.move(table.state.current_player, (plays or legal)[0])
    raise AssertionError(f"no line of {length} tiles in 40 deals")


def test_phone_layout_snake_line_and_header(browser):
    manager = TableManager(pace=0.01)
    with running_server(manager) as base:
        table = _long_line(manager, 16)
        seat = table.state.current_player
        page = browser.new_page(viewport=PHONE)
        page.goto(f"{base}/s/{table.seats[seat].token}?lang=ru")  # the longest texts
        page.wait_for_selector(".line-svg")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        svg = page.locator(".line-svg")
        assert int(svg.get_attribute("data-rows")) >= 2  # the line wraps
        unit = float(svg.get_attribute("data-unit"))
        assert 2 * unit >= 32  # a tile along the line is at least 32 px
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.locator("#share summary").click()  # fold the friends' links: the line in view
        page.screenshot(path=str(ARTIFACTS / "phone.png"))  # docs/img/web-phone.png
        page.set_viewport_size({"width": 360, "height": 740})
        page.wait_for_timeout(300)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        assert page.evaluate("document.querySelector('header').scrollWidth") <= 360
        page.close()
        desktop = browser.new_page(viewport={"width": 1366, "height": 900})
        desktop.goto(f"{base}/s/{table.seats[seat].token}?lang=en")
        desktop.wait_for_selector(".line-svg")
        assert float(desktop.locator(".line-svg").get_attribute("data-unit")) >= 16
        assert desktop.evaluate("document.documentElement.scrollWidth") <= 1366
        desktop.close()


def test_one_move_in_flight_and_errors_in_the_page_language(browser):
    import httpx2 as httpx

    manager = TableManager(pace=0.01)
    with running_server(manager) as base:
        table = _people_table(manager, 3)
        seat = table.state.current_player
        token = table.seats[seat].token
        page = browser.new_page(viewport=PHONE)
        page.goto(f"{base}/s/{token}?lang=fi")
        page.wait_for_selector("#status.go")
        # three clicks before any answer: one move reaches the server
        page.evaluate(
            "() => { const b = document.querySelector('.tile-btn.legal');"
            " b.click(); b.click(); b.click(); }"
        )
        wait_until(page, "!document.querySelector('#status.go')")
        page.wait_for_timeout(300)
        assert len(table.state.moves) == 1
        assert page.locator("#notice").is_hidden()
        # the other seat moves; then this seat tries a move while another tab made one first
        other = table.seats[1 - seat].token
        view = httpx.get(f"{base}/api/s/{other}").json()
        httpx.post(f"{base}/api/s/{other}/move", json={"action": view["legal"][0]["action"]})
        page.wait_for_selector("#status.go")

        def another_tab_first(route):  # moves until the turn passes to the other seat
            for _ in range(30):
                mine = httpx.get(f"{base}/api/s/{token}").json()
                if mine["turn"] != mine["seat"]:
                    break
                action = mine["legal"][0]["action"]
                httpx.post(f"{base}/api/s/{token}/move", json={"action": action})
            route.continue_()

        page.route("**/move", another_tab_first)
        page.locator(".act, .tile-btn.legal").first.click()
        if page.locator("#choose").is_visible():
            page.locator(".end-btn").first.click()
        page.wait_for_selector("#notice:not([hidden])")
        text = page.locator("#notice").inner_text()
        # the server said seat index 1 - seat; the page numbers seats from 1, in Finnish
        assert text == f"Ei ole sinun vuorosi: vuorossa on paikka {2 - seat}.", text
        page.close()


def test_rematch_keeps_the_people_and_every_page_follows(browser):
    import httpx2 as httpx

    manager = TableManager(pace=0.01)
    with running_server(manager) as base:
        table = _people_table(manager, 5, target=3)
        tokens = [s.token for s in table.seats]
        pages = []
        for token in tokens:
            page = browser.new_page(viewport={"width": 1200, "height": 820})
            page.goto(f"{base}/s/{token}?lang=en")
            page.wait_for_selector("#status")
            pages.append(page)
        for _ in range(500):  # both people play by the API until the match ends
            views = [httpx.get(f"{base}/api/s/{t}").json() for t in tokens]
            if views[0]["over"]:
                break
            mover = next(v for v in views if v["turn"] == v["seat"])
            httpx.post(
                f"{base}/api/s/{tokens[mover['seat']]}/move",
                json={"action": mover["legal"][0]["action"]},
            )
        for page in pages:
            page.wait_for_selector("#over:not([hidden])")
            assert page.locator("#last-hand .previous-log li").count() > 0  # the hand's log
        pages[1].screenshot(path=str(ARTIFACTS / "match-over-rematch.png"))
        pages[1].locator("#again").click()
        for index, page in enumerate(pages):
            wait_until(page, "document.body.dataset.match === '1'")
            assert page.locator("#over").is_hidden()
            assert page.evaluate("document.body.dataset.seat") == str(1 - index)  # rotated
        assert table.row.tokens == tokens[::-1] and table.row.match == 1
        for page in pages:
            page.close()


def test_attacks_in_a_real_browser(browser):
    """The reflected-XSS link runs nothing; another site cannot frame the game or start one."""
    manager = TableManager(pace=0.01)
    with running_server(manager) as base:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{base}/rules?lang=<img src=x onerror=alert(document.domain)>")
        page.wait_for_timeout(300)
        assert dialogs == [] and page.locator("img").count() == 0
        page.set_content(
            f'<iframe src="{base}/play?num_players=2&opponents=greedy"></iframe>'
            f'<form method="post" action="{base}/api/tables" enctype="text/plain">'
            '<input name=\'{"seats": ["person", "greedy"], "x": "\' value=\'"}\'></form>'
        )
        page.wait_for_timeout(500)
        page.evaluate("document.forms[0].submit()")
        page.wait_for_timeout(800)
        assert not manager.tables
        page.close()


def test_a_seat_page_opened_again_takes_the_updates(browser):
    """Over a seat link's socket bound the newest page wins: the oldest is told the seat was
    opened elsewhere and stops; spectators have their own bound and cannot crowd out the
    seats."""
    from bergen_env.web import Limits

    manager = TableManager(pace=0.01, limits=Limits(sockets_per_seat=1, spectators_per_table=1))
    with running_server(manager) as base:
        table = _people_table(manager, 3)
        token = table.seats[0].token
        watcher = browser.new_page(viewport=PHONE)
        watcher.goto(f"{base}/w/{table.id}")  # the one spectator socket
        first = browser.new_page(viewport=PHONE)
        first.goto(f"{base}/s/{token}")  # the seat's one socket, although spectators are full
        wait_until(first, "document.body.dataset.version !== undefined")
        page = browser.new_page(viewport=PHONE)
        page.goto(f"{base}/s/{token}")
        wait_until(page, "document.body.dataset.version !== undefined")
        first.wait_for_selector("#notice:not([hidden])")
        assert (
            first.locator("#notice").inner_text().startswith("This seat was opened in another page")
        )
        assert page.locator("#notice").is_hidden()
        assert table.connections(token) == 1
        page.close()
        first.close()
        watcher.close()


#: Redraws the whole page as a new view does (choosing the page's language again).
REDRAW = (
    "(() => { const s = document.getElementById('lang'); s.dispatchEvent(new Event('change')); })()"
)


def test_phone_taps_through_a_whole_match_while_messages_arrive(browser):
    """A person against two agents that answer at once, on a phone: every turn is a real tap
    on a tile (or on draw or pass), found and tapped while the agents' moves stream in over
    the socket. No tap is lost (each one makes a move, also one on a tile found before the
    page was redrawn), each version is drawn once, and a spectator's page says that it is
    watching."""
    manager = TableManager(pace=0)
    with running_server(manager) as base:
        context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{base}/play?num_players=3&opponents=greedy,random&lang=ru")
        page.wait_for_url("**/s/**")
        wait_until(page, "document.body.dataset.version !== undefined")
        (table,) = manager.tables.values()
        watcher = browser.new_page(viewport={"width": 1200, "height": 820})
        watcher.goto(f"{base}/w/{table.id}?lang=en")
        watcher.wait_for_selector("#watching:not([hidden])")
        assert watcher.locator("#watching").inner_text() == (
            "Watching: spectators see the table, not the hands."
        )
        assert watcher.locator("#me").is_hidden()
        first = _version(page)
        taps = 0
        hand_end_shot = False
        redrawn_under_finger = False
        for _ in range(1000):
            wait_until(
                page,
                "document.body.dataset.over === 'true' || "
                "document.querySelector('#status.go') !== null",
            )
            if page.evaluate("document.body.dataset.over") == "true":
                break
            before = _version(page)
            if not hand_end_shot and page.locator("#last-hand .revealed svg").count():
                page.locator("#last-hand").scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / "hand-end-phone.png"))
                hand_end_shot = True
            tiles = page.locator(".tile-btn.legal")
            if tiles.count() and not redrawn_under_finger:
                # the tile is found, the page redraws (as a view arriving would), then the tap
                # reads where the tile is: it is still the same button, still in the page
                tile = tiles.first.element_handle()
                page.evaluate(REDRAW)
                tile.tap()
                redrawn_under_finger = True
                if page.locator("#choose").is_visible():
                    page.locator(".end-btn").last.tap()
            elif tiles.count():
                tiles.first.tap()
                if page.locator("#choose").is_visible():
                    page.locator(".end-btn").last.tap()
            else:
                page.locator(".act").first.tap()
            taps += 1
            # a lost tap leaves the version where it was
            wait_until(page, f"Number(document.body.dataset.version) > {before}", 10_000)
        else:
            pytest.fail("the match did not end")
        seat = int(page.evaluate("document.body.dataset.seat"))
        record = table.replay_record()
        mine = sum(e["seat"] == seat for hand in record["hands"] for e in hand["events"])
        assert taps == mine  # every tap made a move, and only one
        renders = int(page.evaluate("document.body.dataset.renders")) - 1  # REDRAW's
        assert renders <= _version(page) - first + 1, (renders, first, _version(page))
        assert redrawn_under_finger
        # every deal is secret and fresh, so a match may be short: a few taps are a whole match
        assert taps > 0 and errors == []
        page.locator("#over").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "match-over-phone.png"))
        wait_until(watcher, "document.body.dataset.over === 'true'")
        watcher.screenshot(path=str(ARTIFACTS / "watching-desktop.png"))
        watcher.close()
        context.close()


def test_share_box_on_phone_and_desktop(browser):
    """Screens of the creator's first view: the friends' links above the table."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with running_server(TableManager(pace=0.01)) as base:
        for name, viewport, lang in (
            ("share-phone-ru.png", PHONE, "ru"),
            ("share-desktop.png", {"width": 1366, "height": 900}, "en"),
        ):
            page = home_page(browser, base, lang, viewport=viewport)
            page.select_option("#players", "4")
            for seat in range(1, 4):
                page.select_option(f"select[name=seat{seat}]", "person" if seat < 3 else "greedy")
            page.locator("#create button[type=submit]").click()
            page.wait_for_selector("#share[open] .share-row")
            assert page.locator("#share .share-row").count() == 3  # two friends, spectators
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
            page.screenshot(path=str(ARTIFACTS / name))
            page.close()
