"""The arena on the web: the API's answers and quotas, then a real ``bergen-web --arena`` server
that takes two shipped policies and refuses a broken file, is stopped mid-queue, resumes after
its restart, and serves a leaderboard with intervals and a play link that opens a table."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra: pip install 'bergen_env[web]'")
pytest.importorskip("uvicorn", reason="the web extra: pip install 'bergen_env[web]'")
httpx2 = pytest.importorskip("httpx2", reason="the web extra: pip install 'bergen_env[web]'")

from starlette.testclient import TestClient  # noqa: E402
from test_web_server import alive, descendants  # noqa: E402
from web_server import answering, free_port  # noqa: E402

from bergen_env.arena_store import ArenaStore  # noqa: E402
from bergen_env.web import Limits, TableManager  # noqa: E402
from bergen_env.web.app import create_app  # noqa: E402
from bergen_env.web.arena_runner import AGENT_PREFIX, ArenaRunner, ArenaSettings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ROOT / "policies"
FILE = {"content-type": "application/octet-stream"}
#: Matches a pair plays on the real server: a small budget, so the test is quick.
MATCHES = 20


def shipped(name: str) -> bytes:
    return (POLICIES / f"{name}.safetensors").read_bytes()


def client(**settings: object) -> TestClient:
    runner = ArenaRunner(ArenaStore(":memory:"), ArenaSettings(matches=2, bootstrap=20, **settings))
    return TestClient(create_app(TableManager(limits=Limits()), arena=runner))


def test_without_an_arena_its_routes_say_so() -> None:
    with TestClient(create_app(TableManager())) as c:
        r = c.get("/api/arena")
        assert r.status_code == 404 and r.json()["code"] == "no_arena"
        assert c.post("/api/arena", json={}).json()["code"] == "no_arena"
        assert c.get("/api/meta").json()["arena"] is False


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", "is empty"),
        (b"\x80\x04\x95junk", "pickle"),
        (b"PK\x03\x04" + b"\x00" * 40, "zip archive"),
        (b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ", "no 'bergen_policy' header"),
    ],
)
def test_a_bad_file_is_a_400_naming_the_problem_in_one_line(body: bytes, words: str) -> None:
    with client() as c:
        r = c.post("/api/arena", content=body, headers=FILE)
    assert r.status_code == 400 and r.json()["code"] == "bad_policy", r.text
    error = r.json()["error"]
    assert words in error and "\n" not in error and "Traceback" not in r.text


def test_the_upload_must_be_a_file_within_the_size_bound() -> None:
    with client(max_file_bytes=100_000) as c:
        r = c.post("/api/arena", content=b"{}", headers={"content-type": "application/json"})
        assert r.status_code == 415 and r.json()["code"] == "file_only"
        r = c.post("/api/arena", content=shipped("standard_2p"), headers=FILE)
        assert r.status_code == 413 and r.json()["params"]["limit"] == 100_000
        r = c.post("/api/arena?name=" + "x" * 41, content=b"x", headers=FILE)
        assert r.status_code == 400 and r.json()["code"] == "bad_name"


def test_one_entry_per_file_its_page_and_its_play_link() -> None:
    with client() as c:
        r = c.post("/api/arena?name=Ada", content=shipped("standard_2p"), headers=FILE)
        assert r.status_code == 201, r.text
        entry = r.json()
        assert entry["new"] and entry["queued"] == 10 and entry["name"] == "Ada"
        again = c.post("/api/arena?name=Bob", content=shipped("standard_2p"), headers=FILE)
        assert again.status_code == 200 and not again.json()["new"]
        assert again.json()["sha256"] == entry["sha256"] and again.json()["name"] == "Ada"
        sha = entry["sha256"]
        # the file kept is the one sent, byte for byte (the check answers without the bytes)
        assert c.app.state.arena.store.policy_path(sha).read_bytes() == shipped("standard_2p")
        page = c.get(f"/api/arena/{sha}").json()
        assert page["play"] == entry["play"] and page["rules"]["num_players"] == 2
        assert c.get("/api/arena/" + "0" * 64).status_code == 404
        assert c.get("/api/arena/" + "Z" * 64).json()["code"] == "no_policy"
        for path in ("/arena", f"/arena/{sha}"):
            html = c.get(path)
            assert html.status_code == 200 and "/static/arena.js" in html.text
        assert c.get("/arena/<script>").status_code == 404
        meta = c.get("/api/meta").json()
        assert meta["arena"] and not [a for a in meta["agents"] if a.startswith(AGENT_PREFIX)]
        # the play link opens a table with the policy in the other seat
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(entry["play"]).query))
        table = c.post("/api/play", json={"query": query})
        assert table.status_code == 201, table.text
        view = c.get("/api/s/" + table.json()["open"].removeprefix("/s/")).json()
        assert AGENT_PREFIX + sha[:12] in json.dumps(view)


def test_the_api_shows_the_exploitability_measured_and_nothing_elsewhere() -> None:
    from test_arena_exploit import exploit_result

    from bergen_env.arena_exploit import check_exploit

    with client() as c:
        sha = c.post("/api/arena", content=shipped("standard_2p"), headers=FILE).json()["sha256"]
        store = c.app.state.arena.store
        entry = store.policy(sha)
        store.set_exploit(sha, check_exploit(exploit_result(), entry, base=ROOT))
        page = c.get(f"/api/arena/{sha}").json()
        assert page["exploit"]["gain"] == 0.18 and page["exploit"]["gain_ci95"] == [0.04, 0.32]
        assert page["exploit"]["matches"] == 200 and "result" not in page["exploit"]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # the pairs are played and the board is fitted
            boards = c.get("/api/arena").json()["boards"]
            entries = {e["agent"]: e for b in boards for e in b["entries"]}
            if f"file:{sha}" in entries and not c.get("/api/arena").json()["queued"]:
                break
            time.sleep(0.5)
        shown = {a: e["exploit"] for a, e in entries.items()}
        assert shown.pop(f"file:{sha}")["gain_ci95"] == [0.04, 0.32]
        assert shown and set(shown.values()) == {None}  # the anchors: nothing measured


def test_a_changed_option_travels_in_the_play_link() -> None:
    from bergen_env.rules import Rules
    from bergen_env.web.arena_api import play_link

    link = play_link(Rules.preset("standard", target=21), "ab" * 32)
    assert "target=21" in link and "rules=standard" in link and "opponents=arena-abab" in link


def test_quotas_per_address_and_a_bounded_queue() -> None:
    with client(submissions_per_hour=1) as c:
        assert c.post("/api/arena", content=shipped("standard_2p"), headers=FILE).status_code == 201
        r = c.post("/api/arena", content=shipped("scratch_2p"), headers=FILE)
        assert r.status_code == 429 and r.json()["code"] == "too_many_policies"
        assert "retry-after" in r.headers
        # the file stored already is still answered
        assert c.post("/api/arena", content=shipped("standard_2p"), headers=FILE).status_code == 200
    with client(uploads_per_minute=2) as c:
        for _ in range(2):
            c.post("/api/arena", content=b"", headers=FILE)
        r = c.post("/api/arena", content=b"", headers=FILE)
        assert r.status_code == 429 and r.json()["code"] == "too_many_requests"
    with client(max_queued=1) as c:
        assert c.post("/api/arena", content=shipped("standard_2p"), headers=FILE).status_code == 201
        r = c.post("/api/arena", content=shipped("scratch_2p"), headers=FILE)
        assert r.status_code == 503 and r.json()["code"] == "arena_busy"


def _form(data: bytes, name: str | None = None, field: str = "file") -> dict:
    """The ``files`` and ``data`` of a multipart form holding ``data`` as a file."""
    return {
        "files": {field: ("mine.safetensors", data, "application/octet-stream")},
        "data": {"name": name} if name is not None else {},
    }


def test_a_multipart_form_is_taken_as_the_raw_file_is() -> None:
    """The file field of a form (the /arena page's form) is checked, kept and refused as the raw
    body is, under the same quotas; a browser asking for HTML is sent to the policy's page."""
    pytest.importorskip("python_multipart", reason="the web extra: pip install 'bergen_env[web]'")
    with client(uploads_per_minute=7) as c:
        r = c.post("/api/arena", **_form(shipped("standard_2p"), "Ada"))
        assert r.status_code == 201 and r.json()["name"] == "Ada" and r.json()["queued"] == 10
        raw = c.post("/api/arena", content=shipped("standard_2p"), headers=FILE)
        assert raw.status_code == 200 and raw.json()["sha256"] == r.json()["sha256"]
        pickled = b"\x80\x04\x95junk"
        by_form = c.post("/api/arena", **_form(pickled))
        by_body = c.post("/api/arena", content=pickled, headers=FILE)
        assert by_form.status_code == by_body.status_code == 400
        assert by_form.json() == by_body.json() and "pickle" in by_form.json()["error"]
        missing = c.post("/api/arena", **_form(shipped("scratch_2p"), field="policy"))
        assert missing.status_code == 400 and "no file field 'file'" in missing.json()["error"]
        bad_name = c.post("/api/arena", **_form(shipped("scratch_2p"), "x" * 41))
        assert bad_name.status_code == 400 and bad_name.json()["code"] == "bad_name"
        html = c.post(
            "/api/arena",
            **_form(shipped("scratch_2p")),
            headers={"accept": "text/html,application/xhtml+xml"},
            follow_redirects=False,
        )
        assert html.status_code == 303 and html.headers["location"].startswith("/arena/")
        sha = html.headers["location"].removeprefix("/arena/")
        assert c.get(f"/api/arena/{sha}").json()["name"] == "anonymous"
        over = c.post("/api/arena", **_form(shipped("scratch_2p")))  # the 8th this minute
        assert over.status_code == 429 and over.json()["code"] == "too_many_requests"
    with client(max_file_bytes=100_000) as c:
        r = c.post("/api/arena", **_form(shipped("standard_2p")))
        assert r.status_code == 413 and r.json()["code"] == "body_too_large"


def _raw_upload(app, data: bytes, length: int) -> tuple[int, int, dict]:
    """POST ``data`` to ``/api/arena`` as an ASGI server would (from 10.0.0.1, saying
    ``length`` bytes): the answer's status, how many times the app read the body, the answer."""
    import asyncio

    reads, sent = 0, []

    async def receive() -> dict:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    headers = [(b"host", b"testserver"), (b"content-length", str(length).encode())]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/arena",
        "raw_path": b"/api/arena",
        "root_path": "",
        "query_string": b"",
        "headers": headers + [(b"content-type", b"application/octet-stream")],
        "client": ("10.0.0.1", 5000),
        "server": ("testserver", 80),
        "state": {},
    }
    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], reads, json.loads(body)


def test_an_upload_over_its_quota_or_size_is_refused_before_its_body_is_read() -> None:
    """A flood costs the server no reading: an address past its uploads a minute, and a body
    that says it is larger than the bound, are answered before the app reads a byte."""
    runner = ArenaRunner(ArenaStore(":memory:"), ArenaSettings(uploads_per_minute=1))
    app = create_app(TableManager(limits=Limits()), arena=runner)
    status, reads, _ = _raw_upload(app, b"", 0)
    assert status == 400 and reads >= 1  # the first is read (and refused: empty)
    data = shipped("standard_2p")
    status, reads, answer = _raw_upload(app, data, len(data))
    assert (status, reads, answer["code"]) == (429, 0, "too_many_requests")
    status, reads, answer = _raw_upload(app, data, runner.settings.max_file_bytes + 1)
    assert (status, reads, answer["code"]) == (413, 0, "body_too_large")
    runner.store.close()


def test_an_arena_without_workers_takes_and_queues_but_plays_nothing() -> None:
    with client(workers=0) as c:
        r = c.post("/api/arena", content=shipped("standard_2p"), headers=FILE)
        assert r.status_code == 201 and r.json()["queued"] == 10
        time.sleep(0.5)
        assert c.get("/api/arena").json()["queued"] == 10
        assert c.app.state.arena._pool is None  # no worker was started


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is a Linux policy")
@pytest.mark.parametrize(("niceness", "idle"), [(19, True), (5, False)])
def test_rating_workers_take_the_idle_policy_at_the_lowest_priority(
    niceness: int, idle: bool
) -> None:
    """At the default niceness a rating worker runs only on a core nothing else wants
    (``SCHED_IDLE``); an operator's lower niceness keeps the usual policy."""
    from bergen_env.web.arena_runner import _terminate

    runner = ArenaRunner(ArenaStore(":memory:"), ArenaSettings(niceness=niceness))
    pool = runner._executor()
    try:
        policy = pool.submit(os.sched_getscheduler, 0).result()
        nice = pool.submit(os.nice, 0).result()
    finally:
        _terminate(pool)
        runner.store.close()
    assert (policy == os.SCHED_IDLE) == idle
    assert nice == min(19, os.nice(0) + niceness)


def test_the_upload_path_loosens_nothing_else() -> None:
    """Another site's page may not submit; the file body and its larger bound hold for
    ``/api/arena`` alone."""
    big = b"x" * (Limits().max_body_bytes + 1)
    with client() as c:
        r = c.post("/api/arena", content=b"x", headers={**FILE, "origin": "http://evil.example"})
        assert r.status_code == 403 and r.json()["code"] == "cross_site"
        r = c.post("/api/replay", content=b"x", headers=FILE)
        assert r.status_code == 415 and r.json()["code"] == "json_only"
        r = c.post("/api/tables", content=big, headers={"content-type": "application/json"})
        assert r.status_code == 413
        r = c.post("/api/arena", content=big, headers=FILE)  # within the arena's 4 MiB
        assert r.status_code == 400 and r.json()["code"] == "bad_policy"


def test_load_benchmark_with_an_arena_flood() -> None:
    """benchmarks/web_load.py on two tables while one address submits policy files: every
    match finished and checked, the submissions met the per-address bound."""
    pytest.importorskip("websockets", reason="the web extra: pip install 'bergen_env[web]'")
    from benchmarks import web_load

    out = web_load.main(["--tables", "2", "--timeout", "120", "--arena-flood", "2"])
    assert out["unfinished"] == 0 and out["mismatched"] == 0 and out["person_moves"] > 0
    statuses = out["arena_submissions_by_status"]
    assert statuses.get("201", 0) >= 1 and set(statuses) <= {"201", "429"}, statuses


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_load_benchmark_spin_control_runs_beside_the_server_and_ends() -> None:
    """``--arena spin``: a spinning process at the rating workers' priority runs while the
    tables play and is gone afterwards."""
    pytest.importorskip("websockets", reason="the web extra: pip install 'bergen_env[web]'")
    from benchmarks import web_load

    command = b"".join(a.encode() + b"\0" for a in web_load.SPIN)

    def spinners() -> list[int]:
        """The spinning processes below this test's process (not another run's)."""
        found = []
        for pid in descendants(os.getpid()):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/cmdline").read_bytes() == command:
                    found.append(pid)
        return found

    seen: list[list[int]] = []
    real_run = web_load.run

    async def watched(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.append([os.getpriority(os.PRIO_PROCESS, pid) for pid in spinners()])
        return await real_run(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(web_load, "run", watched)
        out = web_load.main(["--tables", "2", "--timeout", "120", "--arena", "spin"])
    assert out["unfinished"] == 0 and out["arena"] == "spin"
    assert seen == [[19]]  # one spinner, at niceness 19, while the tables played
    assert spinners() == []


def test_load_benchmark_configurations_are_named() -> None:
    pytest.importorskip("websockets", reason="the web extra: pip install 'bergen_env[web]'")
    from benchmarks.web_load import parse_config

    assert parse_config("off") == ("off", 0) and parse_config(" busy+4") == ("busy", 4)
    assert parse_config("queue+0") == ("queue", 0) and parse_config("niced") == ("niced", 0)
    assert parse_config("spin") == ("spin", 0)
    for bad in ("off+2", "spin+1", "fast", "busy+x", "busy+-1"):
        with pytest.raises(ValueError, match="MODE|flooders need an arena"):
            parse_config(bad)


# ---------------------------------------------------------------------- a real server


def _serve(port: int, db: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bergen_env.web.cli", "--port", str(port), "--pace", "0"]
        + ["--db", str(db.with_suffix(".tables")), "--workers", "1", "--arena", str(db)]
        + ["--arena-anchor", str(POLICIES / "standard_2p.safetensors")]
        + ["--arena-matches", str(MATCHES), "--arena-bootstrap", "50", "--arena-rivals", "1"]
        # the server's own priority: on a busy machine, niceness 19 would wait for every job
        + ["--arena-niceness", "0"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _counts(db: Path) -> tuple[int, int, int]:
    """(jobs, results, queued jobs) in the arena file, read beside the server."""
    with sqlite3.connect(db, timeout=10) as con:
        jobs = con.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
        results = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        queued = con.execute("SELECT COUNT(*) FROM jobs WHERE state = 'queued'").fetchone()[0]
    return jobs, results, queued


def _submit(base: str, path: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bergen_env.web.arena_cli", "submit", str(path)]
        + ["--server", base, "--name", name],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
        assert server.stdout is not None
        server.stdout.close()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_a_real_server_rates_two_policies_across_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite3"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(shipped("expert_2p")[:5000])
    seen: dict[int, str] = {}
    server = _serve(port, db)
    try:
        c = answering(base)
        out = _submit(base, POLICIES / "expert_2p.safetensors", "expert_2p")
        assert out.returncode == 0, out.stderr
        shas = {"expert_2p": out.stdout.split()[0]}
        assert "new entry" in out.stdout and f"{base}/arena/{shas['expert_2p']}" in out.stdout
        deadline = time.monotonic() + 120  # some pairs stored ...
        while _counts(db)[1] < 2 and time.monotonic() < deadline:
            seen |= descendants(server.pid)
            time.sleep(0.05)
        # ... then the second policy queues its pairs and the server stops at once
        second = c.post("/api/arena?name=scratch_2p", content=shipped("scratch_2p"), headers=FILE)
        assert second.status_code == 201, second.text
        shas["scratch_2p"] = second.json()["sha256"]
        seen |= descendants(server.pid)
        c.close()
        _stop(server)
        jobs, results, queued = _counts(db)
        assert results >= 2 and queued > 0 and jobs == results + queued
        deadline = time.monotonic() + 10  # no worker outlives the server
        while time.monotonic() < deadline and any(alive(*p) for p in seen.items()):
            time.sleep(0.1)
        assert not [p for p in seen.items() if alive(*p)]

        server = _serve(port, db)
        c = answering(base)
        refused = _submit(base, broken, "x")
        assert refused.returncode == 2 and "not a readable safetensors file" in refused.stderr
        raw = c.post("/api/arena", content=broken.read_bytes(), headers=FILE)
        assert raw.status_code == 400 and "\n" not in raw.json()["error"]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            arena = c.get("/api/arena").json()
            board = arena["boards"][0] if arena["boards"] else {"entries": []}
            if (
                arena["queued"] == 0
                and board["entries"]
                and not any(e["queued"] for e in board["entries"])
            ):
                break
            time.sleep(0.5)
        assert arena["queued"] == 0, arena
        jobs_after, results_after, _ = _counts(db)
        assert jobs_after == jobs and results_after == jobs  # each pair once, none lost
        entries = {e["name"]: e for e in board["entries"]}
        assert set(entries) == {
            "random",
            "greedy",
            "heuristic",
            "tuned",
            "standard_2p",
            "expert_2p",
            "scratch_2p",
        }
        assert entries["random"]["rating"] == 1000.0 and entries["standard_2p"]["anchor"]
        for e in board["entries"]:
            lo, hi = e["interval"]
            assert lo <= e["rating"] <= hi and e["matches"] >= 5 * MATCHES
        expert = entries["expert_2p"]
        assert expert["sha256"] == shas["expert_2p"] and not expert["anchor"]
        assert set(expert["against_anchors"]) == {
            "random",
            "greedy",
            "heuristic",
            "tuned",
            "standard_2p",
        }
        # the play button's link opens a table against the policy, after the restart too
        page = c.get(f"/api/arena/{shas['expert_2p']}").json()
        assert len(page["pairs"]) >= 5 and page["entry"]["rating"] == expert["rating"]
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page["play"]).query))
        table = c.post("/api/play", json={"query": query})
        assert table.status_code == 201, table.text
        c.close()
    finally:
        _stop(server)
        for pid, started in seen.items():  # only the processes this test's servers started
            if alive(pid, started):
                os.kill(pid, signal.SIGKILL)
