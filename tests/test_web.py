"""The web app through Starlette's test client: whole matches, refused moves, what a seat sees,
reconnecting, expiry, limits, replays and the language catalog."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx2")

from starlette.testclient import TestClient  # noqa: E402
from test_hidden_information import hidden_swap  # noqa: E402
from web_lines import CASES, EXPECTED, KEYS  # noqa: E402

from bergen_env.engine import BergenState  # noqa: E402
from bergen_env.replay import MatchRecorder, write_jsonl  # noqa: E402
from bergen_env.rules import PRESETS, RULE_OPTIONS, Rules  # noqa: E402
from bergen_env.web import DEFAULT_AGENTS, Limits, TableManager
from bergen_env.web.app import create_app  # noqa: E402
from bergen_env.web.i18n import LANGUAGES, catalog  # noqa: E402
from bergen_env.web.i18n import text as ui_text  # noqa: E402
from bergen_env.web.replay_frames import place, replay_frames  # noqa: E402

SEATINGS = ((2, False), (3, False), (4, True))
FAST_AGENTS = DEFAULT_AGENTS | {"search": "search:samples=4"}  # the menu, a quicker search


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_client(**kwargs: Any) -> tuple[TestClient, TableManager]:
    manager = TableManager(agents=dict(FAST_AGENTS), pace=0, **kwargs)
    return TestClient(create_app(manager)), manager


def play(client: TestClient, query: str):
    """What the page of a ``/play?query`` link does: POST the link's query to ``/api/play``."""
    return client.post("/api/play", json={"query": dict(parse_qsl(query))})


def seat_token(response) -> str:
    assert response.status_code == 201, response.text
    return re.search(r"/s/([^?]+)", response.json()["open"]).group(1)


def watched_table(response) -> str:
    assert response.status_code == 201, response.text
    return response.json()["open"].split("/w/")[1]


def play_through(client: TestClient, tokens: list[str]) -> dict[str, Any]:
    """Play every person seat's first legal move whenever it is on turn, to the match end."""
    sockets = {}
    seat_of = {}
    for token in tokens:
        seat_of[token] = client.get(f"/api/s/{token}").json()["seat"]
    last = None
    for _ in range(5000):
        states = [client.get(f"/api/s/{t}").json() for t in tokens]
        last = states[0]
        if last["over"]:
            break
        mover = next((t for t, s in zip(tokens, states) if s["turn"] == s["seat"]), None)
        if mover is None:  # an agent is on turn: wait for an update newer than this view
            ws = sockets.get(tokens[0])
            if ws is None:
                ws = sockets[tokens[0]] = client.websocket_connect(f"/ws/s/{tokens[0]}").__enter__()
            # the test client's socket holds one unread message (it has no buffer): skip old ones
            while (msg := ws.receive_json())["version"] <= last["version"]:
                assert msg["type"] == "state"
            continue
        state = states[tokens.index(mover)]
        assert state["legal"], "on turn with no legal move"
        r = client.post(f"/api/s/{mover}/move", json={"action": state["legal"][-1]["action"]})
        assert r.status_code == 200, r.text
    for ws in sockets.values():
        ws.__exit__(None, None, None)
    assert last is not None and last["over"], "the match did not end"
    return last


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_whole_match_against_agents(preset: str, players: int, partnerships: bool) -> None:
    client, manager = make_client()
    with client:
        r = play(
            client,
            f"rules={preset}&num_players={players}&partnerships={partnerships}"
            "&opponents=greedy&seed=5",
        )
        token = seat_token(r)
        final = play_through(client, [token])
        table = manager.by_token(token)[0]
        assert final["scores"] == table.state.scores
        assert final["winner"] == table.state.winner
        # every point is explained: plays' points plus hand-end points add up to the scores
        record = client.get(f"/api/w/{final['table']}/replay").text
        rec = json.loads(record)
        assert rec["format"] == "bergen-replay/1" and rec["final_scores"] == final["scores"]
        frames = client.get(f"/api/w/{final['table']}/frames").json()["frames"]
        assert frames[-1]["scores"] == final["scores"]


def test_two_people_and_a_spectator() -> None:
    client, manager = make_client()
    with client:
        r = client.post(
            "/api/tables",
            json={"num_players": 3, "seats": ["person", "heuristic", "person"]},
        )
        assert r.status_code == 201, r.text
        out = r.json()
        links = [s["link"] for s in out["seats"] if s["link"]]
        assert len(links) == 2 and out["seats"][1]["link"] is None
        tokens = [link.split("/s/")[1] for link in links]
        host = client.get(f"/api/s/{tokens[0]}").json()
        assert host["share"]["watch"] == out["watch"]  # the host hands out the links
        assert "share" not in client.get(f"/api/s/{tokens[1]}").json()
        final = play_through(client, tokens)
        watch = client.get(f"/api/{out['watch'][1:]}").json()
        assert watch["seat"] is None and watch["hand"] is None and watch["legal"] == []
        assert watch["scores"] == final["scores"] and watch["over"]


def test_agents_only_table_is_watched() -> None:
    client, manager = make_client()
    with client:
        table_id = watched_table(play(client, "seats=greedy,search&seed=2"))
        with client.websocket_connect(f"/ws/w/{table_id}") as ws:
            for _ in range(5000):
                msg = ws.receive_json()
                if msg["over"]:
                    break
        assert msg["over"] and msg["hand"] is None


def test_refused_moves() -> None:
    client, manager = make_client()
    with client:
        token = seat_token(play(client, "seats=person,person"))
        table, seat = manager.by_token(token)
        other = table.seats[1 - seat].token
        state = client.get(f"/api/s/{token}").json()
        on_turn, waiting = (token, other) if state["turn"] == seat else (other, token)
        legal = client.get(f"/api/s/{on_turn}").json()["legal"]
        r = client.post(f"/api/s/{waiting}/move", json={"action": legal[0]["action"]})
        assert r.status_code == 409 and "not your turn" in r.json()["error"]
        illegal = next(a for a in range(56) if a not in {m["action"] for m in legal})
        r = client.post(f"/api/s/{on_turn}/move", json={"action": illegal})
        assert r.status_code == 422 and "not legal" in r.json()["error"]
        assert client.post(f"/api/s/{on_turn}/move", json={"action": 99}).status_code == 422
        assert client.post(f"/api/s/{on_turn}/move", json={"action": True}).status_code == 422
        r = client.post(f"/api/s/{on_turn}/move", json={"action": "[9|9]>left"})
        assert r.status_code == 422 and "9" in r.json()["error"]
        r = client.post(
            f"/api/s/{on_turn}/move",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 400 and "JSON" in r.json()["error"]
        assert client.post(f"/api/s/{on_turn}/move", json={"move": 1}).status_code == 400
        assert client.post("/api/s/not-a-token/move", json={"action": 1}).status_code == 404
        before = table.state.moves[:]
        assert table.state.moves == before  # nothing refused was applied
        r = client.post(f"/api/s/{on_turn}/move", json={"action": legal[0]["text"]})
        assert r.status_code == 200 and len(table.state.moves) == len(before) + 1


def test_bad_tables_name_the_problem() -> None:
    client, manager = make_client(limits=Limits(max_tables=1, max_body_bytes=1000))
    with client:
        r = play(client, "num_players=2&foo=1")
        assert r.status_code == 400 and "foo" in r.text and r.json()["code"] == "unknown_option"
        r = play(client, "num_players=2&target=-3")
        assert r.status_code == 400 and "target" in r.text
        r = play(client, "num_players=2&end_caps=maybe")
        assert r.status_code == 400 and "end_caps" in r.text
        r = play(client, "rules=nope")
        assert r.status_code == 400 and "nope" in r.text
        r = play(client, "opponents=wizard")
        assert r.status_code == 400 and "wizard" in r.text and r.json()["params"]["seat"] == 1
        r = play(client, "num_players=3&opponents=greedy,random,random")
        assert r.status_code == 400 and "opponents" in r.text
        r = client.post("/api/tables", json={"num_players": 2, "colour": "red"})
        assert r.status_code == 400 and "colour" in r.json()["error"]
        r = client.post("/api/tables", json={"options": {"sets": 3}})
        assert r.status_code == 400 and "sets" in r.json()["error"]
        r = client.post(
            "/api/tables", content=b"x" * 2000, headers={"content-type": "application/json"}
        )
        assert r.status_code == 413 and "1000" in r.json()["error"]
        assert play(client, "lang=xx").status_code == 400
        assert play(client, "").status_code == 201
        r = play(client, "")
        assert r.status_code == 503 and "limit" in r.text and r.headers["retry-after"] == "60"
        assert client.get("/api/s/unknown").status_code == 404
        assert client.get("/api/w/unknown").status_code == 404


def _message_without_version(table, seat):
    msg = table.snapshot(seat)
    msg.pop("version")
    return msg


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_seat_messages_ignore_hidden_tiles(preset: str, players: int, partnerships: bool) -> None:
    """The env's hidden-tile swap: a seat's message is the same whatever the hidden tiles are."""
    manager = TableManager(agents=dict(FAST_AGENTS), pace=0)
    rules = Rules.preset(preset, num_players=players, partnerships=partnerships)
    rng = np.random.default_rng(players)
    swapped = 0
    for seed in range(3):
        table = manager.create(rules, ["person"] * players, seed=seed)
        play_rng = np.random.default_rng(seed)
        for step in range(120):  # the first hands of the match
            if table.terminal:
                break
            s = table.state
            for seat in range(players) if step % 2 == 0 else ():
                c = hidden_swap(s, seat, rng)
                if c is None:
                    continue
                before = _message_without_version(table, seat)
                table.state = c
                after = _message_without_version(table, seat)
                table.state = s
                assert before == after
                assert before["hand"] == [[*TILES_OF(t), t] for t in s.hand_tiles(seat)]
                assert all(set(x) == {"seat", "kind", "side", "hand_size"} for x in before["seats"])
                assert isinstance(before["boneyard"], int)
                swapped += 1
            legal = s.legal_actions()
            table.move(s.current_player, legal[int(play_rng.integers(len(legal)))])
    assert swapped > 30


def TILES_OF(t: int) -> tuple[int, int]:
    from bergen_env.tiles import TILES

    return TILES[t]


def test_reconnect_loses_nothing() -> None:
    client, manager = make_client()
    with client:
        token = seat_token(play(client, "opponents=random&seed=11"))
        with client.websocket_connect(f"/ws/s/{token}") as ws:
            first = ws.receive_json()
        # the tab is closed; the same link brings back the same view
        again = client.get(f"/api/s/{token}").json()
        assert again["hand"] == first["hand"] and again["version"] >= first["version"]
        with client.websocket_connect(f"/ws/s/{token}") as ws:
            msg = ws.receive_json()
            assert msg["hand"] == again["hand"] and msg["events"] == again["events"]
            ws.send_text("hello")
            assert ws.receive_json()["type"] == "error"  # moves go to the API, said plainly
        final = play_through(client, [token])
        assert final["over"]


def test_idle_tables_expire_by_moves_not_sockets() -> None:
    clock = Clock()
    client, manager = make_client(limits=Limits(idle_seconds=60), clock=clock)
    with client:
        token = seat_token(play(client, "seats=person,person"))
        table = manager.by_token(token)[0]
        clock.now = 59
        assert manager.expire() == []
        on_turn = table.seats[table.state.current_player].token
        legal = client.get(f"/api/s/{on_turn}").json()["legal"]
        assert client.post(f"/api/s/{on_turn}/move", json={"action": legal[0]["action"]}).is_success
        clock.now = 100  # 41 s after the move: still live
        assert manager.expire() == []
        with client.websocket_connect(f"/ws/s/{token}") as ws:
            ws.receive_json()
            clock.now = 500  # an open socket does not keep a table without moves
            assert manager.expire() == [table.id]
            while (msg := ws.receive_json())["type"] == "state":
                pass
            assert msg["code"] == "expired" and "60 minutes" not in msg["error"]
            assert "1 minutes without a move" in msg["error"]
        r = client.get(f"/api/s/{token}")
        assert r.status_code == 410 and r.json()["code"] == "expired"
        with client.websocket_connect(f"/ws/s/{token}") as ws:
            assert ws.receive_json()["code"] == "expired"
        r = client.get("/api/s/never-made")
        assert r.status_code == 404 and r.json()["code"] == "unknown_link"
        assert "expired" not in r.json()["error"]  # an unknown link is not called expired


def test_replay_upload_and_frames(tmp_path) -> None:
    rules = Rules.preset("double_set", num_players=3)
    state = BergenState(rules, seed=4)
    rec = MatchRecorder(state, ["a", "b", "c"], seed=4)
    rng = np.random.default_rng(0)
    while not state.terminal:
        seat, legal = state.current_player, state.legal_actions()
        a = legal[int(rng.integers(len(legal)))]
        state.apply_action(a)
        rec.record(seat, a)
    path = tmp_path / "m.jsonl"
    write_jsonl(path, [rec.finish(), rec.finish()])
    client, _ = make_client()
    with client:
        text = path.read_text()
        r = client.post("/api/replay", json={"text": text, "match": 1})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["matches"] == 2 and out["final_scores"] == state.scores
        assert out["frames"][-1]["scores"] == state.scores
        r = client.post("/api/replay", json={"text": '{"format": "x"}\n'})
        assert r.status_code == 400 and "line 1" in r.json()["error"]
        assert client.post("/api/replay", json={"text": text, "match": 5}).status_code == 400
        bad = rec.finish()
        bad["final_scores"] = [99, 0, 0]
        r = client.post("/api/replay", json={"text": json.dumps(bad)})
        assert r.status_code == 400 and "final scores" in r.json()["error"]


@pytest.mark.parametrize("preset", PRESETS)
def test_place_lays_tiles_as_the_engine(preset: str) -> None:
    """The page's line (replays, ended hands) is the engine's line after every event."""
    rules = Rules.preset(preset, num_players=2)
    for seed in range(5):
        state = BergenState(rules, seed=seed)
        rng = np.random.default_rng(seed)
        line: list[tuple[int, int]] = []
        hand = 0
        while not state.terminal:
            legal = state.legal_actions()
            a = legal[int(rng.integers(len(legal)))]
            state.apply_action(a)
            if state.hand_number != hand:
                hand, line = state.hand_number, []
                continue
            if a < 56 or a >= 58:
                place(line, a)
            assert line == state.line


def test_frames_of_a_finished_table_show_every_hand() -> None:
    manager = TableManager(agents=dict(FAST_AGENTS), pace=0)
    table = manager.create(Rules.preset("standard"), ["person", "person"], seed=9)
    while not table.terminal:
        table.move(table.state.current_player, table.state.legal_actions()[0])
    frames = replay_frames(table.replay_record())["frames"]
    dealt = sum(1 for f in frames if f["event"] is None)
    assert dealt == table.hands_done
    assert sum(len(h) for h in frames[0]["hands"]) == 2 * table.rules.hand_size


def test_points_are_explained() -> None:
    """Each scoring play says why (a header with its number), and the points add up."""
    manager = TableManager(agents=dict(FAST_AGENTS), pace=0)
    table = manager.create(Rules.preset("standard", num_players=3), ["person"] * 3, seed=2)
    results = []
    while not table.terminal:
        table.move(table.state.current_player, table.state.legal_actions()[-1])
        if not table.events:  # a hand ended: the last result carries its whole log
            last = table.last_result
            assert last["hand"] == len(results) and last["events"][-1]["scores"] == last["scores"]
            results.append(last)
    assert len(results) == table.hands_done > 1
    headers = 0
    # events of finished hands are gone from the table; replay them from the record
    record = table.replay_record()
    state = BergenState(table.rules, seed=0, deals=[h["deal"] for h in record["hands"]])
    from bergen_env.web.messages import play_score_reason

    for hand in record["hands"]:
        for ev in hand["events"]:
            side = table.rules.side_of[ev["seat"]]
            before = state.scores[side]
            reason = (
                play_score_reason(table.rules, state, ev["action"])
                if ev["action"] not in (56, 57)
                else None
            )
            n = len(state.hand_results)
            state.apply_action(ev["action"])
            gained = (
                state.scores[side] - before - sum(r.points[side] for r in state.hand_results[n:])
            )
            if gained > 0:
                headers += 1
                assert reason["kind"] == "header" and reason["full"] >= gained
            elif reason is not None and not (state.terminal):
                assert reason["kind"] == "none" or reason["full"] >= 1
    assert headers > 0


def test_catalog_is_complete_in_every_language() -> None:
    cat = catalog()
    assert list(cat) == list(LANGUAGES)
    fields = {k: set(re.findall(r"\{(\w+)\}", v)) for k, v in cat["en"].items()}
    for lang, texts in cat.items():
        assert texts.keys() == cat["en"].keys(), lang
        for key, text in texts.items():
            assert set(re.findall(r"\{(\w+)\}", text)) == fields[key], (lang, key)
            assert text.strip(), (lang, key)
    for name in DEFAULT_AGENTS:  # every agent of the menu has its name in every language
        assert f"agent_{name}" in cat["en"], name
    client, _ = make_client()
    for lang in LANGUAGES:
        r = client.get(f"/rules?lang={lang}")
        assert r.status_code == 200 and "<h1>" in r.text
    assert client.get("/rules?lang=xx").status_code == 400


def _filled(lang: str, value: Any) -> Any:
    """A field of :data:`web_lines.KEYS` in ``lang``: a name (a tuple) or the value itself."""
    if not isinstance(value, tuple):
        return value
    if value == ("seat",):
        return ui_text(lang, "seat_n", n=2, kind=ui_text(lang, "agent_greedy"))
    if value == ("your_team",):
        return ui_text(lang, "your_team", seats="1+3")
    if value == ("team",):
        return ui_text(lang, "team_n", n=2, seats="2+4")
    return ui_text(lang, value[0])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_log_lines_are_grammatical_for_each_person(lang: str) -> None:
    """The catalog's lines for "you" and for another seat against a table of expected lines
    (the page's choice between them: test_web_browser.py)."""
    assert EXPECTED[lang].keys() == CASES.keys() == KEYS.keys()
    for case, (key, fields) in KEYS.items():
        line = ui_text(lang, key, **{k: _filled(lang, v) for k, v in fields.items()})
        assert line == EXPECTED[lang][case], (lang, case)


def test_every_rule_option_is_named_and_explained_in_every_language() -> None:
    """A label, a one-line hint and a name for each value, never a code name; the rules page
    lists them all."""
    client, _ = make_client()
    meta = client.get("/api/meta").json()
    for lang in LANGUAGES:
        texts = catalog()[lang]
        page = client.get(f"/rules?lang={lang}").text
        for name in meta["options"]:
            label, hint = texts[f"opt_{name}"], texts[f"hint_{name}"]
            for words in (label, hint):
                assert "_" not in words and "\n" not in words and words != name, (lang, name)
            assert f"<dt>{label}</dt><dd>{hint}</dd>" in page.replace("&#x27;", "'"), (lang, name)
            for value in meta["choices"].get(name, []):
                words = texts[f"val_{name}_{value}"]
                assert "_" not in words and words != value, (lang, name, value)
        assert "_" not in re.sub(r"<[^>]*>", "", page), lang  # no code name on the page


def test_game_names_in_each_language() -> None:
    """Draw and Fives by the names each language has for them (the standard game of domino
    that the Bergen rule texts compare with; the Serbian "Petice" for Fives in Czech)."""
    native = {
        "fi": ("Tavallinen domino", "Viitoset"),
        "nl": ("Gewoon domino", "Vijven"),
        "cs": ("Standardní domino", "Petice"),
        "ru": ("Домино (стандарт)", "Пятёрки"),
    }
    client, _ = make_client()
    for lang, (draw, fives) in native.items():
        assert (ui_text(lang, "preset_draw"), ui_text(lang, "preset_fives")) == (draw, fives)
        title = re.search("<h1>(.*)</h1>", client.get(f"/rules?lang={lang}").text).group(1)
        assert "Draw" not in title and "Fives" not in title, title
        assert draw.lower() in title.lower() and fives.lower() in title.lower(), title


def test_a_link_with_the_former_keywords_opens_the_table_it_meant() -> None:
    client, _ = make_client()
    token = seat_token(play(client, "players=3&preset=fives&opponents=greedy&seed=4"))
    view = client.get(f"/api/s/{token}").json()
    assert view["game"]["name"] == "fives" and len(view["seats"]) == 3
    r = play(client, "players=3&num_players=2")
    assert r.status_code == 400 and r.json()["code"] == "renamed_option", r.text
    r = client.post("/api/tables", json={"preset": "fives", "seats": ["person", "greedy"]})
    assert r.status_code == 400 and r.json()["code"] == "renamed_option"  # the API's own names


def test_a_new_table_opens_its_creators_seat() -> None:
    """The creator goes to their own seat; its page alone holds the friends' links."""
    client, _ = make_client()
    r = client.post("/api/tables", json={"num_players": 3, "seats": ["greedy", "person", "person"]})
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["open"] == out["seats"][1]["link"]
    mine = client.get(f"/api/{out['open'][1:]}").json()
    assert mine["seat"] == 1 and out["seats"][2]["link"] in {
        s["link"] for s in mine["share"]["seats"]
    }
    assert "share" not in client.get(f"/api/{out['seats'][2]['link'][1:]}").json()
    r = client.post("/api/tables", json={"seats": ["greedy", "random"]})
    assert r.json()["open"] == f"/w/{r.json()['table']}"


def test_meta_lists_every_preset_and_option() -> None:
    client, _ = make_client()
    meta = client.get("/api/meta").json()
    assert list(meta["presets"]) == list(PRESETS)
    assert meta["options"] == list(RULE_OPTIONS)
    assert set(meta["agents"]) == set(FAST_AGENTS)
    assert "tuned" in meta["agents"] and meta["presets_only"] == ["tuned"]
    for page in ("/", "/replay", "/static/table.js", "/static/i18n.json"):
        assert client.get(page).status_code == 200


def test_load_benchmark_small_run() -> None:
    """benchmarks/web_load.py on two tables: a real server, sockets, every match checked."""
    pytest.importorskip("websockets")
    from benchmarks import web_load

    out = web_load.main(["--tables", "2", "--timeout", "120"])
    assert out["unfinished"] == 0 and out["mismatched"] == 0 and out["person_moves"] > 0


def test_a_failing_agent_stops_its_table_visibly() -> None:
    from bergen_env.agents.base import register_agent

    class Broken:
        name = "broken"
        needs_observation = False
        needs_view = False

        def reset(self, rules, seat, rng) -> None:
            pass

        def act(self, observation, action_mask, view) -> int:
            return 57 if action_mask[57] == 0 else 0  # always illegal

    register_agent("broken_for_test", Broken, overwrite=True)
    client, manager = make_client()
    manager.agents["broken"] = "broken_for_test"
    with client:
        table_id = watched_table(play(client, "seats=broken,broken&seed=1"))
        table = manager.by_id(table_id)
        with client.websocket_connect(f"/ws/w/{table_id}") as ws:
            for _ in range(50):
                msg = ws.receive_json()
                if msg["error"]:
                    break
        assert "broken" in msg["error"] and "illegal" in msg["error"]
        assert not table.terminal


def test_cli_refuses_bad_agents(capsys: pytest.CaptureFixture[str]) -> None:
    """A bad ``--agent`` exits with status 2 and one line on stderr naming it."""
    from bergen_env.web import cli

    for argv, word in (
        (["--agent", "no-equals-sign"], "no-equals-sign"),
        (["--agent", "w=wizard"], "wizard"),
        (["--agent", "p=ppo:/nonexistent/policy.zip"], "ppo"),
    ):
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and word in err, err


def test_default_agent_menu_builds() -> None:
    from bergen_env.agents import make_agent
    from bergen_env.web import DEFAULT_AGENTS

    rules = Rules.preset("standard")
    state = BergenState(rules, seed=0)
    for name, spec in DEFAULT_AGENTS.items():
        agent = make_agent(spec)
        agent.reset(rules, state.current_player, np.random.default_rng(0))
        view = state.public_view(state.current_player)
        assert state.is_legal(agent.act(None, state.legal_mask(), view)), name


def test_an_agent_that_refuses_the_rules_is_a_clear_400() -> None:
    from bergen_env.agents.base import register_agent
    from bergen_env.agents.greedy import GreedyAgent

    class TwoPlayersOnly(GreedyAgent):
        def reset(self, rules, seat, rng) -> None:
            if rules.num_players != 2:
                raise ValueError(f"trained for 2 players, not {rules.num_players}")
            super().reset(rules, seat, rng)

    register_agent("two_only_for_test", TwoPlayersOnly, overwrite=True)
    client, manager = make_client()
    manager.agents["net"] = "two_only_for_test"
    r = play(client, "num_players=3&opponents=net")
    assert r.status_code == 400 and "trained for 2 players" in r.text and "seat 1" in r.text
    assert play(client, "num_players=2&opponents=net").status_code == 201


@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_a_match_against_tuned(players: int, partnerships: bool) -> None:
    """``tuned`` from the menu plays whole matches with the weights of the preset and seating."""
    from bergen_env.agents.tuned_heuristic import TUNED_WEIGHTS, TunedHeuristicAgent

    client, manager = make_client()
    with client:
        r = play(
            client,
            f"rules=draw&num_players={players}&partnerships={partnerships}&opponents=tuned&seed=4",
        )
        token = seat_token(r)
        table = manager.by_token(token)[0]
        for seat in table.seats[1:]:
            assert isinstance(seat.agent, TunedHeuristicAgent) and seat.kind == "tuned"
            weights = TUNED_WEIGHTS[("draw", players, partnerships)]
            assert seat.agent.weights == weights
        final = play_through(client, [token])
        assert final["over"] and final["error"] is None
        assert [s["kind"] for s in final["seats"][1:]] == ["tuned"] * (players - 1)


def test_tuned_under_changed_options_is_a_clear_400() -> None:
    """Rules with a changed option are no preset: ``tuned`` is refused before any table starts."""
    client, manager = make_client()
    with client:
        r = play(client, "num_players=2&opponents=tuned&target=5")
        assert r.status_code == 400
        assert (
            "seat 1: agent 'tuned' plays the presets' rules only" in r.text
            and "change an option" in r.text
        )
        r = client.post(
            "/api/tables",
            json={
                "num_players": 3,
                "seats": ["person", "heuristic", "tuned"],
                "options": {"target": 5},
            },
        )
        assert r.status_code == 400
        error = r.json()["error"]
        assert error.startswith("seat 2: agent 'tuned' plays the presets' rules only"), error
        assert "no tuned heuristic weights" in error
        assert not manager.tables  # nothing was created
        # the same options as the preset's are the preset: tuned plays them
        r = play(client, "rules=fives&num_players=2&opponents=tuned")
        assert r.status_code == 201


def test_rematch_with_an_agent_rotates_the_seats_and_the_agent_plays_on() -> None:
    client, manager = make_client()
    with client:
        body = {"seats": ["person", "greedy"], "seed": 6, "options": {"target": 3}}
        token = client.post("/api/tables", json=body).json()["seats"][0]["link"][3:]
        assert client.post(f"/api/s/{token}/rematch", json={}).json()["code"] == "match_not_over"
        final = play_through(client, [token])
        table = manager.by_id(final["table"])
        assert final["seat"] == 0 and not manager.tables  # finished: the slot is free
        r = client.post(f"/api/s/{token}/rematch", json={})
        assert r.status_code == 200, r.text
        view = r.json()
        assert view["seat"] == 1 and view["match"] == 1 and not view["over"]
        assert [s["kind"] for s in view["seats"]] == ["greedy", "person"]
        assert manager.tables[table.id] is table  # live again
        final = play_through(client, [token])
        assert final["over"] and final["match"] == 1 and final["error"] is None
        record = json.loads(client.get(f"/api/w/{table.id}/replay").text)
        assert record["agents"] == ["greedy", "person"]  # the second match's record
