"""Hostile requests against the web app (Starlette's test client): escaping and headers,
nothing created by a GET or another site, JSON limits, short echoes, bounds, slots, quotas."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx2")

from starlette.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from bergen_env.web import Limits, TableManager  # noqa: E402
from bergen_env.web.app import create_app  # noqa: E402
from bergen_env.web.guard import MAX_JSON_DEPTH  # noqa: E402
from bergen_env.web.i18n import STATIC  # noqa: E402
from bergen_env.web.options import OPTION_LIMITS  # noqa: E402

JSON = {"content-type": "application/json"}
HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def client_for(address: str = "203.0.113.1", **kwargs: Any) -> tuple[TestClient, TableManager]:
    kwargs.setdefault("agents", {"greedy": "greedy", "random": "random"})
    kwargs.setdefault("pace", 0)
    manager = TableManager(**kwargs)
    return TestClient(create_app(manager), client=(address, 40000)), manager


def other_client(manager: TableManager, address: str) -> TestClient:
    return TestClient(create_app(manager), client=(address, 40000))


def new_table(client: TestClient, **body: Any):
    body.setdefault("seats", ["person", "greedy"])
    return client.post("/api/tables", json=body)


def assert_secure(response) -> None:
    for name, value in HEADERS.items():
        assert response.headers.get(name) == value, (response.request.url, name)
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp


# ---------------------------------------------------------------------- escaping and headers


def test_every_answer_has_the_security_headers() -> None:
    client, _ = client_for()
    with client:
        token = new_table(client).json()["seats"][0]["link"]
        answers = [
            client.get(path)
            for path in (
                "/",
                "/play?num_players=2",
                token,
                "/replay",
                "/rules?lang=fi",
                "/rules?lang=xx",
                "/api/meta",
                "/static/table.js",
                "/static/i18n.json",
                "/api" + token,
                "/api/s/nope",
                "/no/such/page",
            )
        ]
        answers += [
            client.post("/api/tables", content=b"x", headers={"content-type": "text/plain"}),
            client.post("/api/tables", json={"colour": 1}),
            new_table(client),
        ]
        for r in answers:
            assert_secure(r)


def test_reflected_values_are_escaped() -> None:
    client, _ = client_for()
    attack = "<img src=x onerror=alert(document.domain)>"
    r = client.get("/rules", params={"lang": attack})
    assert r.status_code == 400
    assert "<img" not in r.text and "&lt;img" in r.text
    assert r.headers["content-type"].startswith("text/html")
    r = client.post("/api/play", json={"query": {attack: "1"}})
    assert r.status_code == 400 and r.headers["content-type"] == "application/json"


def test_pages_have_no_inline_script_or_style() -> None:
    """What the CSP forbids is not in the pages: every script is a same-origin file."""
    pages = [p.read_text() for p in Path(STATIC).glob("*.html")]
    pages += [p.read_text() for p in (Path(STATIC) / "rules").glob("*.html")]
    client, _ = client_for()
    pages += [client.get(f"/rules?lang={lang}").text for lang in ("en", "ru")]
    for text in pages:
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert 'src="/static/' in tag, tag
        assert not re.search(r"<script\b[^>]*>\s*[^<\s]", text)  # no inline body
        assert not re.search(r"\son[a-z]+\s*=", text)  # no onclick= and kin
        assert "<style" not in text and " style=" not in text
    for script in Path(STATIC).glob("*.js"):
        text = script.read_text()
        assert "innerHTML" not in text and "eval(" not in text, script.name


# ---------------------------------------------------------------------- what creates a table


def test_nothing_is_created_by_a_get_or_another_site() -> None:
    client, manager = client_for()
    with client:
        for path in ("/play?num_players=2&opponents=greedy", "/play", "/api/tables", "/api/play"):
            r = client.get(path)
            assert r.status_code in (200, 405), path
        assert client.head("/play?num_players=2").status_code in (200, 405)
        body = json.dumps({"seats": ["person", "greedy"]})
        refused = [
            client.post("/api/tables", content=body, headers={"content-type": "text/plain"}),
            client.post(
                "/api/tables",
                content=b"seats=person",
                headers={"content-type": "application/x-www-form-urlencoded"},
            ),
            client.post("/api/tables", content=body),  # no content type at all
            client.post(
                "/api/tables", content=body, headers={**JSON, "origin": "https://evil.example"}
            ),
            client.post("/api/tables", content=body, headers={**JSON, "origin": "null"}),
            client.post(
                "/api/tables", content=body, headers={**JSON, "sec-fetch-site": "cross-site"}
            ),
            client.post(  # a null origin vouched for by anything but the same origin
                "/api/tables",
                content=body,
                headers={**JSON, "origin": "null", "sec-fetch-site": "same-site"},
            ),
            client.post(
                "/api/play",
                json={"query": {"num_players": "2"}},
                headers={"origin": "http://testserver.evil.example"},
            ),
        ]
        assert [r.status_code for r in refused] == [415, 415, 415, 403, 403, 403, 403, 403]
        assert refused[3].json()["code"] == "cross_site"
        assert not manager.tables
        # a form of this site's pages posts with a null origin (no referrer is sent), and the
        # browser's Sec-Fetch-Site, which no page can set, says it is this site's
        form = {**JSON, "origin": "null", "sec-fetch-site": "same-origin"}
        assert client.post("/api/tables", content=body, headers=form).status_code == 201
        same = client.post(
            "/api/tables", content=body, headers={**JSON, "origin": "http://testserver"}
        )
        assert same.status_code == 201 and len(manager.tables) == 2
        token = same.json()["seats"][0]["link"][3:]
        # a move from another site is refused too, and a socket opened by another site
        r = client.post(
            f"/api/s/{token}/move", json={"action": 0}, headers={"origin": "https://evil.example"}
        )
        assert r.status_code == 403
        socket = client.websocket_connect(f"/ws/s/{token}", headers={"origin": "https://a.example"})
        with pytest.raises(WebSocketDisconnect) as closed, socket as ws:
            ws.receive_json()
        assert closed.value.code == 4403


# ---------------------------------------------------------------------- JSON bodies


def post_raw(client: TestClient, path: str, raw: bytes):
    return client.post(path, content=raw, headers=JSON)


def test_json_limits_answer_400_never_500() -> None:
    client, manager = client_for(limits=Limits(max_json_bytes=16 * 1024))
    with client:
        bodies = [
            b"[" * 100_000 + b"]" * 100_000,  # far too deep for the parser
            b'{"options": ' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"}",
            b'{"seed": ' + b"7" * 4400 + b"}",  # an integer of 4,400 digits
            b'{"seed": 1e999}',
            b'{"seed": NaN}',
            b'{"seed": -Infinity}',
            b"\xff\xfe{}",
            b"{not json",
            b"",
            b"[]",
            b'"text"',
        ]
        for raw in bodies:
            for path in ("/api/tables", "/api/play"):
                r = post_raw(client, path, raw)
                assert r.status_code in (400, 413), (raw[:20], r.status_code, r.text[:200])
                assert len(r.text) < 400
        assert not manager.tables


def test_errors_echo_a_short_excerpt_only() -> None:
    client, manager = client_for(limits=Limits(max_json_bytes=1 << 20))
    with client:
        token = new_table(client, seed=1).json()["seats"][0]["link"][3:]
        huge = "x" * 500_000
        answers = [
            client.post(f"/api/s/{token}/move", json={"action": huge}),
            client.post(f"/api/s/{token}/move", json={"action": [huge]}),
            client.post(f"/api/s/{token}/move", json={"action": 10**18}),
            client.post(f"/api/s/{token}/move", json={huge: 1}),
            client.post("/api/tables", json={"options": {huge: 1}}),
            client.post("/api/tables", json={"options": {"target": huge}}),
            client.post("/api/tables", json={"rules": huge}),
            client.post("/api/tables", json={"lang": huge}),
            client.post("/api/tables", json={"seats": [huge, huge]}),
            client.post("/api/tables", json={"seed": huge}),
            client.post("/api/play", json={"query": {"opponents": huge}}),
            client.post("/api/play", json={"query": {"target": huge}}),
            client.post("/api/replay", json={"text": huge}),
        ]
        for r in answers:
            assert 400 <= r.status_code < 500, r.text[:200]
            assert len(r.text) < 700, r.text[:200]
            assert (
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                not in r.text
            )
        assert len(manager.tables) == 1


def test_body_limits_by_length_and_by_stream() -> None:
    client, _ = client_for(limits=Limits(max_body_bytes=1000, max_json_bytes=500))
    r = post_raw(client, "/api/tables", b"{" + b" " * 2000 + b"}")
    assert r.status_code == 413 and r.json()["params"]["limit"] == 1000
    r = post_raw(client, "/api/tables", b'{"seats": ["person", "greedy"]' + b" " * 600 + b"}")
    assert r.status_code == 413 and r.json()["params"]["limit"] == 500

    def chunks():
        for _ in range(50):
            yield b" " * 100

    r = client.post("/api/tables", content=chunks(), headers=JSON)  # no content-length
    assert r.status_code == 413


# ---------------------------------------------------------------------- bounds


def test_every_integer_option_has_a_web_bound() -> None:
    client, manager = client_for()
    for name, top in OPTION_LIMITS.items():
        if name in ("sets", "hand_size"):
            continue  # the engine's own bounds are tighter than the web's
        r = client.post(
            "/api/tables", json={"seats": ["person", "greedy"], "options": {name: top + 1}}
        )
        assert r.status_code == 400 and f"<= {top}" in r.json()["error"], name
        r = client.post("/api/play", json={"query": {name: str(top + 1)}})
        assert r.status_code == 400 and name in r.json()["error"], name
    r = client.post("/api/tables", json={"options": {"target": 1_000_000_000}})
    assert r.status_code == 400 and r.json()["code"] == "bad_option"
    r = client.post("/api/tables", json={"options": {"target": 5.0}})
    assert r.status_code == 400
    r = client.post("/api/tables", json={"options": {"end_caps": 1}})
    assert r.status_code == 400
    assert not manager.tables
    meta = client.get("/api/meta").json()
    assert meta["option_limits"] == OPTION_LIMITS and meta["limits"]["max_hands"] >= 1


def test_a_match_ends_at_the_hand_cap_and_frees_its_slot() -> None:
    """A target nobody reaches cannot keep a table forever: the match ends after max_hands."""
    client, manager = client_for(limits=Limits(max_hands=3, max_tables=1))
    with client:
        body = {
            "seats": ["random", "random"],
            "options": {"target": 500, "domino_points": 0, "blocked_points": 0},
            "seed": 3,
        }
        r = client.post("/api/tables", json=body)
        assert r.status_code == 201
        table_id = r.json()["table"]
        with client.websocket_connect(f"/ws/w/{table_id}") as ws:
            for _ in range(2000):
                msg = ws.receive_json()
                if msg["over"]:
                    break
        assert msg["over"] and msg["end_reason"] == "hand_cap" and msg["hands_done"] == 3
        assert msg["winner"] is None
        assert not manager.tables  # the slot is free
        assert client.post("/api/tables", json=body).status_code == 201
        record = client.get(f"/api/w/{table_id}/replay")
        assert record.status_code == 200 and len(json.loads(record.text)["hands"]) == 3


def test_messages_do_not_grow_with_the_match() -> None:
    """Each message carries the hand being played and the last finished hand only."""
    client, manager = client_for()
    with client:
        from bergen_env.rules import Rules

        # a table of people takes no seed from a request; the operator's API does
        table = manager.create(Rules.preset("standard", target=60), ["person"] * 2, seed=2)
        tokens = list(table.row.tokens)
        sizes: dict[int, int] = {}
        for _ in range(3000):
            views = [client.get(f"/api/s/{t}").json() for t in tokens]
            if views[0]["over"]:
                break
            mover = next(v for v in views if v["turn"] == v["seat"])
            token = tokens[mover["seat"]]
            r = client.post(f"/api/s/{token}/move", json={"action": mover["legal"][0]["action"]})
            assert r.status_code == 200
            msg = r.json()
            assert "results" not in msg
            hands = msg["hands_done"]
            sizes[hands] = max(sizes.get(hands, 0), len(r.text))
        assert views[0]["over"] and len(sizes) >= 6, sizes
        early = max(sizes[h] for h in (1, 2))
        late = max(sizes[h] for h in sizes if h >= 4)
        assert late < 1.5 * early, sizes


# ---------------------------------------------------------------------- slots and quotas


def test_finished_tables_free_their_slot_and_stay_readable() -> None:
    client, manager = client_for(limits=Limits(max_tables=2), pace=0.01)
    with client:
        ids = []
        for seed in (1, 2):
            r = client.post("/api/tables", json={"seats": ["greedy", "random"], "seed": seed})
            assert r.status_code == 201
            ids.append(r.json()["table"])
        r = client.post("/api/tables", json={"seats": ["greedy", "random"]})
        assert r.status_code == 503 and r.headers["retry-after"]
        for table_id in ids:
            with client.websocket_connect(f"/ws/w/{table_id}") as ws:
                while not ws.receive_json()["over"]:
                    pass
        assert not manager.tables
        r = client.post("/api/tables", json={"seats": ["greedy", "random"]})
        assert r.status_code == 201
        for table_id in ids:  # still readable: the view, the replay, its frames
            assert client.get(f"/api/w/{table_id}").json()["over"]
            assert client.get(f"/api/w/{table_id}/replay").status_code == 200
            assert client.get(f"/api/w/{table_id}/frames").status_code == 200


def test_one_address_cannot_lock_out_another() -> None:
    limits = Limits(tables_per_address=2, max_tables=10)
    client, manager = client_for(limits=limits)
    with client:
        person = {"seats": ["person", "person"]}
        assert [client.post("/api/tables", json=person).status_code for _ in range(2)] == [201, 201]
        r = client.post("/api/tables", json=person)
        assert r.status_code == 429 and r.json()["code"] == "too_many_tables"
        assert int(r.headers["retry-after"]) > 0
        other = other_client(manager, "198.51.100.7")
        assert other.post("/api/tables", json=person).status_code == 201


def test_new_tables_per_address_are_rate_limited() -> None:
    clock = Clock()
    limits = Limits(creations_per_minute=3, tables_per_address=100)
    client, manager = client_for(limits=limits, clock=clock)
    person = {"seats": ["person", "person"]}
    assert [client.post("/api/tables", json=person).status_code for _ in range(3)] == [201] * 3
    r = client.post("/api/tables", json=person)
    assert r.status_code == 429 and r.json()["code"] == "too_many_new_tables"
    wait = int(r.headers["retry-after"])
    assert 1 <= wait <= 60 and r.json()["params"]["retry_after"] == wait
    assert other_client(manager, "198.51.100.9").post("/api/tables", json=person).is_success
    clock.now += wait
    assert client.post("/api/tables", json=person).status_code == 201
    assert client.post("/api/tables", json=person).status_code == 429


def test_open_sockets_are_bounded_per_address() -> None:
    client, manager = client_for(limits=Limits(sockets_per_address=3))
    with client:
        watch = new_table(client, seats=["person", "person"]).json()["watch"]
        sockets = [client.websocket_connect(f"/ws{watch}") for _ in range(3)]
        for ws in sockets:
            ws.__enter__()
            assert ws.receive_json()["type"] == "state"
        with client.websocket_connect(f"/ws{watch}") as ws:
            msg = ws.receive_json()
            assert msg["code"] == "too_many_sockets"
        sockets.pop().__exit__(None, None, None)
        with client.websocket_connect(f"/ws{watch}") as ws:  # one closed: room for one more
            assert ws.receive_json()["type"] == "state"
        for ws in sockets:
            ws.__exit__(None, None, None)


def finish_match(client: TestClient, token: str) -> dict[str, Any]:
    """Play a person's seat (first legal move) until the match is over; the last view."""
    for _ in range(4000):
        view = client.get(f"/api/s/{token}").json()
        if view["over"]:
            return view
        if view["turn"] == view["seat"]:
            move = {"action": view["legal"][0]["action"], "version": view["version"]}
            assert client.post(f"/api/s/{token}/move", json=move).status_code == 200
        else:  # the agent's move is on its way
            time.sleep(0.005)
    raise AssertionError("the match did not end")


def wait_until_freed(manager: Any) -> None:
    """Wait (at most 10 s) until no table is live: a finished match's slot is freed once its end
    is recorded, which a page polling the table may see a moment after the match is over."""
    deadline = time.monotonic() + 10
    while manager.tables and time.monotonic() < deadline:
        time.sleep(0.005)
    assert not manager.tables


def test_a_rematch_counts_against_the_creators_quotas() -> None:
    """Finished tables cannot be collected and rematched into more live tables than a
    creation would allow: per-address tables, then the creation rate."""
    limits = Limits(tables_per_address=2, max_hands=1, creations_per_minute=100)
    client, manager = client_for(limits=limits)
    with client:
        first = new_table(client).json()["seats"][0]["link"][3:]
        finish_match(client, first)
        wait_until_freed(manager)
        for _ in range(2):
            assert new_table(client).status_code == 201
        r = client.post(f"/api/s/{first}/rematch", json={})
        assert r.status_code == 429 and r.json()["code"] == "too_many_tables", r.text
        assert len(manager.tables) == 2 and manager.by_token(first)[0].row.match == 0
    clock = Clock()
    limits = Limits(tables_per_address=100, max_hands=1, creations_per_minute=2)
    client, manager = client_for(limits=limits, clock=clock)
    with client:
        first = new_table(client).json()["seats"][0]["link"][3:]
        finish_match(client, first)
        assert new_table(client).status_code == 201
        r = client.post(f"/api/s/{first}/rematch", json={})
        assert r.status_code == 429 and r.json()["code"] == "too_many_new_tables", r.text
        clock.now += 60
        assert client.post(f"/api/s/{first}/rematch", json={}).status_code == 200


def test_a_refused_rematch_changes_nothing() -> None:
    client, manager = client_for(limits=Limits(max_hands=1))
    with client:
        token = new_table(client).json()["seats"][0]["link"][3:]
        finish_match(client, token)
        wait_until_freed(manager)
        table, _ = manager.by_token(token)
        before = (table.row.match, list(table.row.kinds), list(table.row.tokens), table.state)
        manager.agents.pop("greedy")  # the agent left the menu: the next deal is refused
        r = client.post(f"/api/s/{token}/rematch", json={})
        assert r.status_code == 400 and r.json()["code"] == "unknown_agent"
        after = (table.row.match, list(table.row.kinds), list(table.row.tokens), table.state)
        assert after == before and table.over and table.row.status == "finished"
        assert not manager.tables and manager.store.load(table.id).match == 0


def test_spectators_cannot_crowd_out_the_seats() -> None:
    """Spectator sockets have their own bound (4429 over it); a seat link over its bound closes
    its oldest socket instead (4409), so its owner's newest page always gets the updates."""
    limits = Limits(
        spectators_per_table=3,
        spectators_per_address=3,
        sockets_per_seat=2,
        sockets_per_address=100,
    )
    client, manager = client_for(limits=limits)
    with client:
        links = new_table(client, seats=["person", "person"]).json()
        seats = [s["link"] for s in links["seats"]]
        held = [client.websocket_connect(f"/ws{links['watch']}") for _ in range(3)]
        for ws in held:
            ws.__enter__()
            assert ws.receive_json()["type"] == "state"
        with client.websocket_connect(f"/ws{links['watch']}") as ws:
            assert ws.receive_json()["code"] == "too_many_sockets"
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_json()
            assert closed.value.code == 4429
        for link in seats:  # every seat still connects, up to its own bound
            mine = []
            for _ in range(2):
                ws = client.websocket_connect(f"/ws{link}")
                ws.__enter__()
                assert ws.receive_json()["type"] == "state"
                mine.append(ws)
            with client.websocket_connect(f"/ws{link}") as ws:  # the newest page wins
                assert ws.receive_json()["type"] == "state"
                assert mine[0].receive_json()["code"] == "opened_elsewhere"
                with pytest.raises(WebSocketDisconnect) as closed:
                    mine[0].receive_json()
                assert closed.value.code == 4409
            mine[0].__exit__(None, None, None)
            held += mine[1:]
        for ws in held:
            ws.__exit__(None, None, None)


def test_one_address_cannot_hold_every_spectator_socket() -> None:
    limits = Limits(spectators_per_table=32, spectators_per_address=2)
    client, manager = client_for(limits=limits)
    stranger = other_client(manager, "198.51.100.7")
    with client, stranger:
        watch = f"/ws{new_table(client).json()['watch']}"
        held = [client.websocket_connect(watch) for _ in range(2)]
        for ws in held:
            ws.__enter__()
            assert ws.receive_json()["type"] == "state"
        with client.websocket_connect(watch) as ws:
            assert ws.receive_json()["code"] == "too_many_sockets"
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_json()
            assert closed.value.code == 4429
        with stranger.websocket_connect(watch) as ws:  # another address still watches
            assert ws.receive_json()["type"] == "state"
        for ws in held:
            ws.__exit__(None, None, None)


def test_no_seed_at_a_table_of_people() -> None:
    """Whoever chose the seed would know the other people's hands and the boneyard."""
    client, manager = client_for()
    with client:
        for seats in (["person", "person"], ["person", "greedy", "person"]):
            r = new_table(client, seats=seats, num_players=len(seats), seed=7)
            assert r.status_code == 400 and r.json()["code"] == "seed_with_people", r.text
        r = client.post("/api/play", json={"query": {"seats": "person,person", "seed": "7"}})
        assert r.status_code == 400 and r.json()["code"] == "seed_with_people", r.text
        assert not manager.tables
        assert new_table(client, seats=["person", "greedy"], seed=7).status_code == 201
        assert new_table(client, seats=["person", "person"]).status_code == 201


def test_every_error_code_has_a_text_in_every_language() -> None:
    source = "\n".join(p.read_text() for p in Path(STATIC).parent.glob("*.py"))
    codes = set(re.findall(r'TableError\(\s*\d+,\s*"(\w+)"', source))
    codes |= set(re.findall(r'_check_rate\(\s*\w+,\s*\w+,\s*"(\w+)"', source))
    catalog = json.loads((Path(STATIC) / "i18n.json").read_text())
    assert {"seed_with_people", "stale_view", "too_many_requests"} <= codes
    for lang, texts in catalog.items():
        assert not {c for c in codes if f"err_{c}" not in texts}, lang


def test_a_move_chosen_in_an_old_view_is_refused() -> None:
    """A move sent again after its answer was lost is not applied twice (409 stale_view)."""
    client, manager = client_for()
    with client:
        tokens = [
            s["link"][3:] for s in new_table(client, seats=["person", "person"]).json()["seats"]
        ]
        table = manager.by_token(tokens[0])[0]
        first = tokens[table.state.current_player]
        old = client.get(f"/api/s/{first}").json()
        move = {"action": old["legal"][0]["action"], "version": old["version"]}
        assert client.post(f"/api/s/{first}/move", json=move).status_code == 200
        other = next(t for t in tokens if t != first)
        while table.state.current_player != table.seat_of(first):  # the other seat moves
            view = client.get(f"/api/s/{other}").json()
            move2 = {"action": view["legal"][0]["action"], "version": view["version"]}
            assert client.post(f"/api/s/{other}/move", json=move2).status_code == 200
        made = len(table.state.moves)
        again = {"action": table.state.legal_actions()[0], "version": old["version"]}
        r = client.post(f"/api/s/{first}/move", json=again)
        assert r.status_code == 409 and r.json()["code"] == "stale_view", r.text
        assert r.json()["params"]["version"] == table.version
        assert len(table.state.moves) == made
        again["version"] = "7"
        assert client.post(f"/api/s/{first}/move", json=again).status_code == 400


def test_quotas_count_an_ipv6_slash_64_as_one_address() -> None:
    limits = Limits(tables_per_address=1)
    client, manager = client_for("2001:db8:1:2::1", limits=limits)
    with client:
        person = {"seats": ["person", "person"]}
        assert client.post("/api/tables", json=person).status_code == 201
        same = other_client(manager, "2001:db8:1:2:ffff::9")
        r = same.post("/api/tables", json=person)
        assert r.status_code == 429 and r.json()["code"] == "too_many_tables"
        assert other_client(manager, "2001:db8:1:3::1").post("/api/tables", json=person).is_success


def test_replay_uploads_are_rate_limited_per_address() -> None:
    clock = Clock()
    client, manager = client_for(limits=Limits(replays_per_minute=2), clock=clock)
    with client:
        body = {"text": '{"format": "x"}\n'}
        assert [client.post("/api/replay", json=body).status_code for _ in range(2)] == [400] * 2
        r = client.post("/api/replay", json=body)
        assert r.status_code == 429 and r.json()["code"] == "too_many_requests"
        assert 1 <= int(r.headers["retry-after"]) <= 60
        assert (
            other_client(manager, "198.51.100.3").post("/api/replay", json=body).status_code == 400
        )
        clock.now += 30
        assert client.post("/api/replay", json=body).status_code == 400


def test_unknown_names_are_named_as_everywhere_else() -> None:
    """The web's unknown-name error is the library's message (bergen_env.validation)."""
    from bergen_env.rules import RULE_OPTIONS
    from bergen_env.validation import unknown_message

    client, _ = client_for()
    with client:
        r = new_table(client, options={"targte": 50})
        assert r.status_code == 400 and r.json()["code"] == "unknown_option"
        assert r.json()["error"] == unknown_message(["targte"], RULE_OPTIONS, "rule option")
        assert "did you mean 'target'" in r.json()["error"]
