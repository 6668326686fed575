"""Durable tables: the SQLite store, restarts through the app, and ``kill -9`` of a real
``bergen-web`` process on 127.0.0.1 in the middle of a match (no acknowledged move is lost)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from starlette.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402
from web_server import free_port  # noqa: E402

from bergen_env.rules import Rules  # noqa: E402
from bergen_env.web import Limits, TableManager  # noqa: E402
from bergen_env.web.app import create_app  # noqa: E402
from bergen_env.web.store import FINISHED, SQLiteStore  # noqa: E402

AGENTS = {"greedy": "greedy", "random": "random"}


def server(path: Path, **kwargs) -> tuple[TestClient, TableManager]:
    kwargs.setdefault("pace", 0)
    manager = TableManager(agents=dict(AGENTS), store=SQLiteStore(str(path)), **kwargs)
    return TestClient(create_app(manager)), manager


def play_some(client: TestClient, tokens: list[str], moves: int) -> list[tuple[int, int]]:
    """``moves`` first-legal moves by whichever person is on turn; the moves made."""
    made = []
    for _ in range(moves):
        for _ in range(2000):  # an agent's move may be on its way to the disk
            views = [client.get(f"/api/s/{t}").json() for t in tokens]
            on_turn = [(t, v) for t, v in zip(tokens, views) if v["turn"] == v["seat"]]
            if on_turn:
                break
            time.sleep(0.005)
        token, mover = on_turn[0]
        action = mover["legal"][-1]["action"]
        r = client.post(f"/api/s/{token}/move", json={"action": action})
        assert r.status_code == 200, r.text
        made.append((mover["seat"], action))
    return made


def test_a_restart_restores_every_table_with_its_links(tmp_path) -> None:
    db = tmp_path / "tables.sqlite3"
    client, manager = server(db)
    with client:
        people = client.post("/api/tables", json={"seats": ["person", "person"]})
        tokens = [s["link"][3:] for s in people.json()["seats"]]
        made = play_some(client, tokens, 15)
        before = [client.get(f"/api/s/{t}").json() for t in tokens]
        agents = client.post(
            "/api/tables", json={"seats": ["person", "greedy"], "seed": 5, "lang": "fi"}
        )
        agent_token = agents.json()["seats"][0]["link"][3:]
        play_some(client, [agent_token], 3)
        agent_before = client.get(f"/api/s/{agent_token}").json()
    manager.store.close()

    client, manager = server(db)
    with client:  # a new process would do the same: restore at start-up
        assert len(manager.tables) == 2
        after = [client.get(f"/api/s/{t}").json() for t in tokens]
        for a, b in zip(before, after):
            # a page drops views older than its own: the restored table's versions are newer
            assert b.pop("version") > a.pop("version")
            assert a == b
        table = manager.by_token(tokens[0])[0]
        # the last move made, or (a hand ended with it) a new hand with no move yet
        assert table.state.moves[-1:] == made[-1:] or (not table.state.moves and table.hands_done)
        view = client.get(f"/api/s/{agent_token}").json()
        assert view["lang"] == "fi" and view["hand"] == agent_before["hand"]
        # the agent resumes its turns: the person can play on to the end
        for _ in range(3000):
            view = client.get(f"/api/s/{agent_token}").json()
            if view["over"]:
                break
            if view["turn"] == view["seat"]:
                action = view["legal"][0]["action"]
                client.post(f"/api/s/{agent_token}/move", json={"action": action})
            else:
                time.sleep(0.005)
        assert view["over"]
        table_id = agents.json()["table"]
    manager.store.close()

    client, manager = server(db)
    with client:  # the finished match stays as a replay; the live one is restored again
        assert list(manager.tables) == [people.json()["table"]]
        record = json.loads(client.get(f"/api/w/{table_id}/replay").text)
        assert record["final_scores"] == view["scores"]
        assert client.get(f"/api/s/{agent_token}").json()["over"]


def test_finished_matches_are_kept_for_the_documented_time(tmp_path) -> None:
    store = SQLiteStore(str(tmp_path / "t.sqlite3"))
    manager = TableManager(agents=dict(AGENTS), store=store, pace=0, limits=Limits(replay_days=2))
    table = manager.create(Rules.preset("standard"), ["person", "person"], seed=1)
    while not table.over:
        table.move(table.state.current_player, table.state.legal_actions()[0])
    row = store.load(table.id)
    assert row.status == FINISHED and store.replay(table.id)["final_scores"] == table.state.scores
    assert store.purge(row.ended - 1) == 0
    assert store.purge(time.time() + 3 * 86400) == 1
    assert store.load(table.id) is None and store.replay(table.id) is None
    assert store.find_token(table.row.tokens[0]) is None


def test_memory_store_keeps_nothing_and_says_so() -> None:
    client, manager = server(Path(":memory:"))
    with client:
        r = client.get("/api/s/unknown-token")
        assert r.status_code == 404 and "keeps no tables" in r.json()["error"]


def test_a_move_the_store_refuses_is_not_applied(tmp_path) -> None:
    client, manager = server(tmp_path / "t.sqlite3")
    with client:
        r = client.post("/api/tables", json={"seats": ["person", "person"]})
        tokens = [s["link"][3:] for s in r.json()["seats"]]
        table = manager.by_token(tokens[0])[0]
        seat = table.state.current_player
        moves = table.state.moves[:]

        def broken(*args) -> None:
            raise sqlite3.OperationalError("disk I/O error")

        manager.store.add_move = broken
        version = table.version
        action = table.state.legal_actions()[0]
        r = client.post(f"/api/s/{table.seats[seat].token}/move", json={"action": action})
        assert r.status_code == 503 and r.json()["code"] == "store_failed"
        assert table.state.moves == moves and table.version == version


# ---------------------------------------------------------------------- a real process


def start_server(db: Path, port: int, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "bergen_env.web.cli", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--db", str(db), "--pace", "0", *extra]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/meta", timeout=2)
            return proc
        except httpx.TransportError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stdout.read().decode()) from None
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("bergen-web did not start")


def test_kill_9_mid_match_loses_no_acknowledged_move(tmp_path) -> None:
    db = tmp_path / "tables.sqlite3"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(db, port)
    acked: list[tuple[int, int]] = []
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            r = http.post("/api/tables", json={"seats": ["person", "greedy"], "seed": 8})
            assert r.status_code == 201, r.text
            table_id = r.json()["table"]
            token = r.json()["seats"][0]["link"][3:]
            for _ in range(400):
                view = http.get(f"/api/s/{token}").json()
                if len(acked) >= 12 or view["over"]:
                    break
                if view["turn"] != view["seat"]:
                    time.sleep(0.01)
                    continue
                action = view["legal"][-1]["action"]
                r = http.post(f"/api/s/{token}/move", json={"action": action})
                assert r.status_code == 200, r.text
                acked.append((view["seat"], action))
            assert len(acked) >= 12
            os.kill(proc.pid, signal.SIGKILL)  # no shutdown of any kind
            proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    with sqlite3.connect(db) as con:  # what the disk holds after the kill
        kept = con.execute(
            "SELECT seat, action FROM moves WHERE table_id = ? AND seat = 0 ORDER BY number",
            (table_id,),
        ).fetchall()
    assert [tuple(m) for m in kept[: len(acked)]] == acked

    proc = start_server(db, port)
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            view = http.get(f"/api/s/{token}").json()
            assert view["table"] == table_id and view["error"] is None
            for _ in range(3000):  # the agent resumes and the match plays to its end
                view = http.get(f"/api/s/{token}").json()
                if view["over"]:
                    break
                if view["turn"] == view["seat"]:
                    http.post(f"/api/s/{token}/move", json={"action": view["legal"][0]["action"]})
                else:
                    time.sleep(0.01)
            assert view["over"]
            record = json.loads(http.get(f"/api/w/{table_id}/replay").text)
        played = [(e["seat"], e["action"]) for h in record["hands"] for e in h["events"]]
        assert [m for m in played if m[0] == 0][: len(acked)] == acked
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    with sqlite3.connect(db) as con:
        status = con.execute("SELECT status FROM tables WHERE id = ?", (table_id,)).fetchone()
    assert status == (FINISHED,)


def test_pages_are_told_what_happened_at_a_restart(tmp_path) -> None:
    """A durable server going down says it restarts (1012); one keeping nothing says so."""
    for db, code in ((tmp_path / "t.sqlite3", "restarting"), (Path(":memory:"), "stopping")):
        client, manager = server(db)
        with client:
            r = client.post("/api/tables", json={"seats": ["person", "person"]})
            token = r.json()["seats"][0]["link"][3:]
            with client.websocket_connect(f"/ws/s/{token}") as ws:
                assert ws.receive_json()["type"] == "state"
                client.portal.call(manager.close_all)  # what the server does when it stops
                while (msg := ws.receive_json())["type"] == "state":
                    pass
                assert msg["code"] == code
                with pytest.raises(WebSocketDisconnect) as closed:
                    ws.receive_json()
                assert closed.value.code == 1012


def test_quota_addresses_come_from_the_socket_unless_a_proxy_is_named(tmp_path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    body = {"seats": ["person", "person"]}
    for allow, expected in (
        ((), [201, 429, 429]),
        (("--forwarded-allow", "127.0.0.1"), [201, 201, 429]),
    ):
        proc = start_server(Path(":memory:"), port, "--tables-per-address", "1", *allow)
        try:
            codes = [
                httpx.post(
                    f"{base}/api/tables", json=body, headers={"x-forwarded-for": address}
                ).status_code
                for address in ("198.51.100.1", "198.51.100.2", "198.51.100.1")
            ]
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
        assert codes == expected, allow


def test_a_rematched_table_is_restored_at_its_match(tmp_path) -> None:
    db = tmp_path / "t.sqlite3"
    client, manager = server(db)
    with client:
        body = {"seats": ["person", "person"], "options": {"target": 3}}
        tokens = [s["link"][3:] for s in client.post("/api/tables", json=body).json()["seats"]]
        while not client.get(f"/api/s/{tokens[0]}").json()["over"]:
            play_some(client, tokens, 1)
        assert client.post(f"/api/s/{tokens[0]}/rematch", json={}).status_code == 200
        play_some(client, tokens, 5)
        before = [client.get(f"/api/s/{t}").json() for t in tokens]
    manager.store.close()
    client, manager = server(db)
    with client:
        after = [client.get(f"/api/s/{t}").json() for t in tokens]
        for a, b in zip(before, after):
            a.pop("version"), b.pop("version")
            assert a == b and b["match"] == 1
        assert [v["seat"] for v in after] == [1, 0]


def test_a_real_server_closes_a_socket_sent_a_large_message(tmp_path) -> None:
    """The sockets only listen: uvicorn's message limit is small (close 1009 above it)."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    port = free_port()
    proc = start_server(Path(":memory:"), port)
    try:
        links = httpx.post(
            f"http://127.0.0.1:{port}/api/tables", json={"seats": ["person", "person"]}
        ).json()
        with connect(f"ws://127.0.0.1:{port}/ws{links['watch']}") as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "state"
            ws.send("x" * 65536)
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_a_match_end_the_store_refuses_is_a_503_and_pages_hear_of_it(tmp_path) -> None:
    """The last move is kept; its end (the replay) fails: the mover gets a clear 503, every
    page is told, and the next sweep records the end and frees the slot."""
    client, manager = server(tmp_path / "t.sqlite3", limits=Limits(max_hands=1))
    with client:
        r = client.post("/api/tables", json={"seats": ["person", "person"]})
        tokens = [s["link"][3:] for s in r.json()["seats"]]
        table = manager.by_token(tokens[0])[0]
        kept = manager.store.add_replay

        def broken(*args) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        manager.store.add_replay = broken
        with client.websocket_connect(f"/ws/w/{table.id}") as ws:
            ws.receive_json()
            while True:
                seat = table.state.current_player
                action = table.state.legal_actions()[0]
                r = client.post(f"/api/s/{table.seats[seat].token}/move", json={"action": action})
                msg = ws.receive_json()
                if table.over:
                    break
                assert r.status_code == 200
            assert r.status_code == 503 and r.json()["code"] == "finish_failed", r.text
            assert msg["over"] and msg["version"] == table.version
        assert len(manager.store.moves(table.id, 0)) == table.moves_made  # the last move kept
        manager.store.add_replay = kept
        manager.expire()
        assert not manager.tables and manager.store.load(table.id).status == FINISHED
        assert client.get(f"/api/w/{table.id}/replay").status_code == 200


def test_a_slow_disk_does_not_stall_the_event_loop(tmp_path) -> None:
    """While one move waits for the disk, other requests are answered; the move is answered
    only once it is kept (committed before acknowledged)."""
    import threading

    release, waiting = threading.Event(), threading.Event()

    class SlowStore(SQLiteStore):
        def _write(self, sql: str, *rows) -> None:
            if sql.startswith("INSERT INTO moves"):
                with self._lock:  # the write's lock is held while the disk is slow
                    waiting.set()
                    assert release.wait(30)
            super()._write(sql, *rows)

    manager = TableManager(agents=dict(AGENTS), store=SlowStore(str(tmp_path / "t.db")), pace=0)
    client = TestClient(create_app(manager))
    with client:
        r = client.post("/api/tables", json={"seats": ["person", "person"]})
        tokens = [s["link"][3:] for s in r.json()["seats"]]
        table = manager.by_token(tokens[0])[0]
        mover = table.seats[table.state.current_player].token
        action = table.state.legal_actions()[0]
        answers: list[int] = []
        thread = threading.Thread(
            target=lambda: answers.append(
                client.post(f"/api/s/{mover}/move", json={"action": action}).status_code
            )
        )
        thread.start()
        try:
            assert waiting.wait(30)
            reads: list[int] = []
            reader = threading.Thread(
                target=lambda: reads.extend(
                    client.get(path).status_code
                    for path in ("/api/meta", f"/api/s/{tokens[1]}", "/api/s/unknown-link")
                )
            )
            reader.start()
            reader.join(20)
            assert reads == [200, 200, 404], "the event loop waited for the disk"
            assert not answers and not table.state.moves  # not acknowledged before it is kept
        finally:
            release.set()
            thread.join(30)
        assert answers == [200] and len(table.state.moves) == 1
        assert manager.store.moves(table.id, 0) == table.state.moves


def test_a_replay_asked_for_as_the_match_ends_waits_for_its_record(tmp_path) -> None:
    """Pages see the match over once its last move is applied; a replay asked for before the
    record reaches the disk is answered with that record, not "the match is still played"."""
    import threading

    release, writing = threading.Event(), threading.Event()

    class SlowStore(SQLiteStore):
        def add_replay(self, *args) -> None:
            writing.set()
            assert release.wait(30)
            super().add_replay(*args)

    store = SlowStore(str(tmp_path / "t.db"))
    manager = TableManager(agents=dict(AGENTS), store=store, pace=0, limits=Limits(max_hands=1))
    client = TestClient(create_app(manager))
    with client:
        r = client.post("/api/tables", json={"seats": ["person", "person"]})
        table = manager.by_token(r.json()["seats"][0]["link"][3:])[0]
        last: list[int] = []
        while not writing.is_set():
            seat = table.state.current_player
            action = table.state.legal_actions()[0]
            token = table.seats[seat].token
            mover = threading.Thread(
                target=lambda t=token, a=action: last.append(
                    client.post(f"/api/s/{t}/move", json={"action": a}).status_code
                )
            )
            mover.start()
            while mover.is_alive() and not writing.is_set():
                mover.join(0.01)
        assert client.get(f"/api/w/{table.id}").json()["over"]  # the page already sees it
        answers: list[Any] = []
        asker = threading.Thread(
            target=lambda: answers.append(client.get(f"/api/w/{table.id}/replay"))
        )
        asker.start()
        asker.join(0.5)
        assert asker.is_alive() and not answers, "the replay did not wait for the record"
        release.set()
        asker.join(30)
        mover.join(30)
        assert last[-1] == 200 and answers[0].status_code == 200, answers[0].text
        record = json.loads(answers[0].text)
        assert sum(len(h["events"]) for h in record["hands"]) == table.moves_made


def damaged_store(tmp_path: Path, fill: bytes | None) -> tuple[Path, int]:
    """A store file of 12 live tables with some moves each, 8 KiB overwritten in its middle
    (``fill`` repeated, or random bytes); its path and size."""
    db = tmp_path / "damaged.sqlite3"
    limits = Limits(creations_per_minute=100, tables_per_address=100)
    client, manager = server(db, limits=limits)
    with client:
        for _ in range(12):
            links = client.post("/api/tables", json={"seats": ["person", "person"]}).json()
            play_some(client, [s["link"][3:] for s in links["seats"]], 20)
    manager.store.close()
    with sqlite3.connect(db) as con:  # the whole store in the file itself
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db.stat().st_size
    assert size > 32 * 1024
    with open(db, "r+b") as f:
        f.seek(size // 2 // 4096 * 4096)
        f.write(os.urandom(8192) if fill is None else fill * (8192 // len(fill)))
    return db, size


@pytest.mark.parametrize("fill", [None, b"\0", b"garbage!"])
def test_a_damaged_store_is_refused_at_start_up(tmp_path, fill: bytes | None) -> None:
    """The server does not start on a file damaged in its middle: a one-line error names --db
    and what to do, and the file is not written to (no table marked expired)."""
    db, size = damaged_store(tmp_path, fill)
    before = db.read_bytes()
    with pytest.raises(OSError) as refused:
        SQLiteStore(str(db))
    message = str(refused.value)
    assert message.startswith(f"--db {db}:") and "\n" not in message
    assert "damaged" in message and "move the file aside" in message
    run = subprocess.run(
        [sys.executable, "-m", "bergen_env.web.cli", "--db", str(db), "--port", str(free_port())],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and run.stderr.strip() == message, run.stderr[-2000:]
    assert db.read_bytes() == before


def test_a_failed_read_never_expires_a_table(tmp_path) -> None:
    """A table whose moves cannot be read at a restart stays live in the store (and is
    restored once the read works), instead of being told it expired."""
    db = tmp_path / "tables.sqlite3"
    client, manager = server(db)
    with client:
        links = client.post("/api/tables", json={"seats": ["person", "person"]}).json()
        tokens = [s["link"][3:] for s in links["seats"]]
        play_some(client, tokens, 5)
    manager.store.close()

    class Flaky(SQLiteStore):
        def moves(self, table: str, match: int) -> list[tuple[int, int]]:
            raise sqlite3.DatabaseError("database disk image is malformed")

    flaky = Flaky(str(db))
    manager = TableManager(agents=dict(AGENTS), store=flaky, pace=0)
    assert manager.restore() == 0
    assert flaky.load(links["table"]).status == "live"
    flaky.close()
    client, manager = server(db)
    with client:
        view = client.get(f"/api/s/{tokens[0]}").json()
        assert not view["over"] and sum(len(e) for e in [view["events"]]) == 5
