"""The server against clients that would tie it up, on a real uvicorn server on 127.0.0.1:
silent and slow connections, too many connections from one address, slow bodies; and
``bergen-web`` ending every process it started on SIGTERM and SIGINT."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from web_server import answering, free_port, running_server  # noqa: E402

from bergen_env.web import Limits, TableManager  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    return s


def closed_within(s: socket.socket, seconds: float, drip: bytes = b"") -> bool:
    """Whether the server closes ``s`` within ``seconds`` (sending ``drip`` every 0.2 s)."""
    deadline = time.monotonic() + seconds
    s.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            if s.recv(4096) == b"":
                return True
        except TimeoutError:
            pass
        except ConnectionError:
            return True
        if drip:
            try:
                s.sendall(drip)
            except OSError:
                return True
    return False


def get(base: str, path: str) -> int:
    s = connect(base)
    with s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        head = s.recv(64)
    return int(head.split()[1])


def test_silent_and_slow_connections_are_closed() -> None:
    """A connection that sends nothing, or drips its headers, or stays silent after an answer,
    is closed after the head deadline; a prompt request on a kept-alive connection works."""
    limits = Limits(header_seconds=1.0)
    with running_server(TableManager(limits=limits)) as base:
        silent = connect(base)
        dripping = connect(base)
        dripping.sendall(b"GET /api/meta HTTP/1.1\r\nHost: x\r\n")
        assert closed_within(silent, 5)
        assert closed_within(dripping, 5, drip=b"X-Slow: 1\r\n")
        kept = connect(base)
        kept.sendall(b"GET /api/meta HTTP/1.1\r\nHost: x\r\n\r\n")
        kept.settimeout(5)
        assert kept.recv(16).startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /api/meta HTTP/1.1\r\n")  # the next request's head never ends
        assert closed_within(kept, 5, drip=b"X-Slow: 1\r\n")
        for s in (silent, dripping, kept):
            s.close()


def test_a_request_head_is_bounded_in_size() -> None:
    with running_server(TableManager(limits=Limits(header_seconds=30.0))) as base:
        s = connect(base)
        with s:
            # 40 KiB of headers in one write: sent line by line, the server could refuse the
            # head and close while the rest still arrives (a broken pipe for the writer)
            lines = b"".join(b"X-Big: " + b"a" * 1000 + b"\r\n" for _ in range(40))
            s.sendall(b"GET /api/meta HTTP/1.1\r\nHost: x\r\n" + lines)
            s.settimeout(10)
            assert s.recv(64).startswith(b"HTTP/1.1 400")
            assert closed_within(s, 5)
        assert get(base, "/api/meta") == 200


def test_connections_are_bounded_per_address() -> None:
    """Over the bound, a new connection of the address is closed at once; WebSockets leave the
    count when they are upgraded; a freed slot serves again."""
    from websockets.sync.client import connect as ws_connect

    limits = Limits(connections_per_address=3, header_seconds=30.0)
    manager = TableManager(limits=limits, agents={"greedy": "greedy"}, pace=0)
    with running_server(manager) as base, contextlib.ExitStack() as stack:
        table = manager.create(manager_rules(), ["person", "greedy"])
        for _ in range(3):
            ws = stack.enter_context(ws_connect(f"ws{base[4:]}/ws/w/{table.id}"))
            assert json.loads(ws.recv(timeout=10))["type"] == "state"
        held = [connect(base) for _ in range(3)]
        time.sleep(0.2)
        extra = connect(base)
        assert closed_within(extra, 2)
        held.pop().close()
        time.sleep(0.2)
        assert get(base, "/api/meta") == 200
        for s in held:
            s.close()


def test_a_full_server_closes_its_longest_idle_connection_for_a_new_one() -> None:
    """Silent connections filling the server's bound cannot keep a newcomer out."""
    limits = Limits(max_connections=3, header_seconds=30.0)
    with running_server(TableManager(limits=limits)) as base:
        held = [connect(base) for _ in range(3)]
        time.sleep(0.2)
        assert get(base, "/api/meta") == 200
        assert closed_within(held[0], 2)
        assert not closed_within(held[1], 0.5) and not closed_within(held[2], 0.5)
        for s in held:
            s.close()


def manager_rules():
    from bergen_env.rules import Rules

    return Rules.preset("standard")


def test_a_slow_body_gets_408() -> None:
    limits = Limits(body_seconds=1.0, header_seconds=30.0)
    with running_server(TableManager(limits=limits)) as base:
        s = connect(base)
        with s:
            s.sendall(
                b"POST /api/tables HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{"
            )
            s.settimeout(10)
            head = s.recv(4096)
        assert head.startswith(b"HTTP/1.1 408"), head[:200]
        assert b"body_too_slow" in head


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid`` (from /proc), with its start time (a pid can be reused)."""
    stats = {int(e.name): _stat(int(e.name)) for e in Path("/proc").iterdir() if e.name.isdigit()}
    found: dict[int, str] = {}
    frontier = {pid}
    while frontier:
        frontier = {p for p, st in stats.items() if st and int(st[1]) in frontier} - set(found)
        found |= {p: stats[p][19] for p in frontier}  # type: ignore[index]
    return found


def alive(pid: int, started: str) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (not a zombie)."""
    st = _stat(pid)
    return st is not None and st[19] == started and st[0] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_every_child_process(tmp_path: Path, stop: signal.Signals) -> None:
    """A server whose search table and replay upload started worker processes (the agent pool,
    the forkserver, the resource tracker) leaves none of them running when it is stopped."""
    from bergen_env.engine import BergenState
    from bergen_env.replay import MatchRecorder

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "bergen_env.web.cli", "--port", str(port), "--pace", "0"]
        + ["--db", str(tmp_path / "t.sqlite3"), "--workers", "1"]
        + ["--agent", "search=search:samples=8,budget_ms=50"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    seen: dict[int, str] = {}
    try:
        client = answering(base)
        links = client.post("/api/tables", json={"seats": ["person", "search"]}).json()
        token = links["seats"][0]["link"][3:]
        state = BergenState(manager_rules(), seed=1)
        recorder = MatchRecorder(state, ["a", "b"], seed=1)
        for _ in range(6):
            seat, action = state.current_player, state.legal_actions()[0]
            state.apply_action(action)
            recorder.record(seat, action)
        text = json.dumps(recorder.finish())
        assert client.post("/api/replay", json={"text": text}).status_code == 200
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until a search decision ran in the agent pool
            view = client.get(f"/api/s/{token}").json()
            if view["over"]:
                break
            if view["turn"] == view["seat"]:
                move = {"action": view["legal"][0]["action"], "version": view["version"]}
                client.post(f"/api/s/{token}/move", json=move)
            seen |= descendants(server.pid)
            if len(seen) >= 4 and view.get("hands_done", 0) + len(view.get("events", [])) > 6:
                break
            time.sleep(0.05)
        client.close()
        seen |= descendants(server.pid)
        assert len(seen) >= 3, seen  # the forkserver, the resource tracker and workers ran
        server.send_signal(stop)
        server.wait(timeout=60)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(*p) for p in seen.items()):
            time.sleep(0.1)
        assert not [p for p in seen.items() if alive(*p)]
    finally:
        if server.poll() is None:
            server.kill()
        for pid, started in seen.items():  # only the processes this server started
            if alive(pid, started):
                os.kill(pid, signal.SIGKILL)
        server.wait(timeout=10)
        assert server.stdout is not None
        server.stdout.close()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_the_worker_processes_run_before_the_server_answers(tmp_path: Path) -> None:
    """The agent pool's workers and the worker for heavy requests are started with the server,
    not at the first slow decision or upload while tables are being played."""
    from bergen_env.web.agent_pool import WORKER_NICENESS

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "bergen_env.web.cli", "--port", str(port), "--pace", "0"]
        + ["--db", str(tmp_path / "t.sqlite3"), "--workers", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        answering(f"http://127.0.0.1:{port}").close()
        nices = [st[16] for p in descendants(server.pid) if (st := _stat(p)) is not None]
        own_nice = os.getpriority(os.PRIO_PROCESS, 0)
        # one agent worker (--workers 1) and the worker for heavy requests, at lower priority
        assert nices.count(str(min(19, own_nice + WORKER_NICENESS))) == 2, nices
    finally:
        server.terminate()
        server.wait(timeout=60)
