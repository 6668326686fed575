"""A bounded load test of the web app on localhost: many tables of agents and scripted people.

Starts ``bergen-web`` in a subprocess on 127.0.0.1 (agents without delay), creates ``--tables``
tables (half 2-player: a person against greedy; half 4-player partnerships: two people with
greedy and heuristic), and plays every person seat by a scripted client that listens on the
table's WebSocket and POSTs a random legal move whenever its seat is on turn. At the end every
table's replay is re-simulated through the engine and compared with what the clients saw:
every match finished, no move lost. Prints moves/s (every seat's moves over the wall time), the
latency of a person's move as the client sees it (POST to answer, which includes the client
process's own delays) and the server's share of it (its ``Server-Timing`` header).

    python -m benchmarks.web_load --tables 50 --seed 0

``--uploaders K`` adds K clients, each from its own loopback address (127.0.2.k), that upload
a replay file of one match of ``--upload-events`` events to ``/api/replay`` over and over while
the tables play, as fast as the server's rate limit lets them (after a 429 they wait its
``Retry-After``); before the tables start, one upload's wall time, the server's CPU time for it
(its process and worker processes) and the answer's size are measured.

``--arena MODE`` starts the server with a policy arena (no per-hour bound): ``busy``, one rating
worker kept busy from the start (an anchor file's pairs are queued at start-up) at the server's
default priority for it (niceness 19 and ``SCHED_IDLE``); ``niced``, the same at niceness 18
without ``SCHED_IDLE`` (a niceness alone: 18's weight is 18 against a niceness-0 process's
1024, 19's is 15); or ``queue``, an arena without rating workers (``--arena-workers 0``:
submissions are checked, kept and queued, nothing is played); or ``spin``, no arena but a
process beside the server that only spins, at the rating workers' priority (the control of
``busy``: what any process on a core the server leaves idle costs). ``--arena-flood K`` adds K
clients on one address (127.0.3.1), in a process of their own, that submit distinct valid
policy files to ``/api/arena`` over and over while the tables play (after a 429 they wait its
``Retry-After``); the result counts the submissions by status, the arena's queued pairs at the
end and the CPU seconds of the server's processes at niceness 18 or more (the rating workers;
measured when the benchmark runs at niceness 0) while the tables played.

    python -m benchmarks.web_load --tables 20 --arena busy --arena-flood 4

``--compare`` runs several such configurations in turn, ``--rounds`` times (A, B, C, A, B, C,
...: the machine's load drifts alike over all of them), each with a new server and the same
tables and seed, and prints one line per run and the median of each configuration's
percentiles. A configuration is ``MODE`` or ``MODE+K`` (K flooders); ``off`` is no arena. Each
run also says when its slowest 1% of moves were sent (the first, median and last, in seconds
after the tables started; a flood starts with them).

    python -m benchmarks.web_load --tables 50 --compare off,busy,queue+4,busy+4 --rounds 3

``--slow N`` measures connections instead of moves: N connections that send nothing and N that
send a header line every 2 s, each from its own loopback address (127.0.1.x), plus 100 silent
connections from one address; it reports how many the server still holds after 1 s and after
``--hold`` seconds, and whether ``GET /api/meta`` is answered meanwhile. ``--nofile K`` starts
the server with at most K open files (``ulimit -n``).

    python -m benchmarks.web_load --tables 10 --uploaders 3 --upload-events 35000
    python -m benchmarks.web_load --slow 50 --hold 150 --nofile 80
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import multiprocessing
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import numpy as np
import websockets

from bergen_env.engine import BergenState
from bergen_env.replay import MatchRecorder, resimulate
from bergen_env.rules import Rules
from bergen_env.web.agent_pool import lower_priority


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def person(
    http: httpx2.AsyncClient,
    ws_url: str,
    token: str,
    rng: np.random.Generator,
    latencies: list[float],
    server_ms: list[float],
    timeout: float,
    replies: list[float],
    errors: list[float],
    starts: list[float],
) -> dict:
    """Play one seat to the match end; returns the last view. ``replies``: in a 2-player
    table, the seconds from a move's answer to the seat's next turn (the agent's reply);
    ``starts``: when each move of ``latencies`` was sent (``time.perf_counter``)."""
    last: dict = {"version": -1}
    waiting_since: float | None = None
    async with websockets.connect(f"{ws_url}/ws/s/{token}", max_size=2**22) as ws:
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
            if msg.get("type") != "state":
                raise RuntimeError(f"seat {token[:6]}: {msg}")
            if msg["version"] <= last["version"]:
                continue
            last = msg
            back = last["over"] or last["turn"] == last["seat"]
            if waiting_since is not None and back:
                if len(last["seats"]) == 2:
                    replies.append(time.perf_counter() - waiting_since)
                waiting_since = None
            while not last["over"] and last["turn"] == last["seat"]:
                legal = last["legal"]
                action = legal[int(rng.integers(len(legal)))]["action"]
                start = time.perf_counter()
                move = {"action": action, "version": last["version"]}
                try:
                    r = await http.post(f"/api/s/{token}/move", json=move)
                except httpx2.TransportError:  # the connection failed: count it, look again
                    errors.append(time.perf_counter() - start)
                    last = (await http.get(f"/api/s/{token}")).json()
                    continue
                latencies.append(time.perf_counter() - start)
                starts.append(start)
                if r.status_code == 200:
                    server_ms.append(float(r.headers["server-timing"].split("dur=")[1]))
                if r.status_code != 200:
                    raise RuntimeError(f"move refused: {r.status_code} {r.text}")
                last = r.json()
                if not last["over"] and last["turn"] != last["seat"]:
                    waiting_since = time.perf_counter()
            if last["over"]:
                return last


def replay_text(events: int, seed: int) -> str:
    """One match of random legal moves (target out of reach) cut after ``events`` events,
    without the optional move texts."""
    rules = dataclasses.replace(Rules.preset("standard"), target=10**6)
    state = BergenState(rules, seed=seed)
    recorder = MatchRecorder(state, ["random", "random"], seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(events):
        seat, legal = state.current_player, state.legal_actions()
        action = int(legal[int(rng.integers(len(legal)))])
        state.apply_action(action)
        recorder.record(seat, action)
    record = recorder.finish()
    for hand in record["hands"]:  # the move texts are optional: the most events a body holds
        for event in hand["events"]:
            del event["move"]
    return json.dumps(record, separators=(",", ":")) + "\n"


def tree_cpu(pid: int, min_nice: int | None = None) -> float:
    """CPU seconds (user and system) of process ``pid`` and the processes below it (only those
    at niceness ``min_nice`` or more, if given)."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stats[int(entry)] = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
    tree, frontier = {pid}, {pid}
    while frontier:
        frontier = {p for p, st in stats.items() if int(st[1]) in frontier} - tree
        tree |= frontier
    if min_nice is not None:  # field 19 of /proc/PID/stat: the niceness
        tree = {p for p in tree if p in stats and int(stats[p][16]) >= min_nice}
    return sum(int(stats[p][11]) + int(stats[p][12]) for p in tree if p in stats) / ticks


async def one_upload(base: str, text: str, server_pid: int | None) -> dict:
    """One upload's wall time, the server's CPU time for it and the answer's size (the
    second of two: the first starts whatever the server starts at its first upload)."""
    transport = httpx2.AsyncHTTPTransport(local_address="127.0.2.250")
    async with httpx2.AsyncClient(base_url=base, transport=transport, timeout=120) as http:
        await http.post("/api/replay", json={"text": text})  # any worker process starts
        await asyncio.sleep(1.0)  # the server settles
        cpu = tree_cpu(server_pid) if server_pid else 0.0
        start = time.perf_counter()
        r = await http.post("/api/replay", json={"text": text})
        wall = time.perf_counter() - start
        cpu = tree_cpu(server_pid) - cpu if server_pid else float("nan")
    return {
        "upload_bytes": len(text.encode()),
        "upload_status": r.status_code,
        "upload_answer_bytes": len(r.content),
        "upload_wall_s": round(wall, 3),
        "upload_server_cpu_s": round(cpu, 2),
    }


async def keep_sending(
    send: Callable[[], Awaitable[httpx2.Response]], stop: asyncio.Event, counts: Counter
) -> None:
    """``send()`` over and over until ``stop`` is set, counting the answers by status and
    waiting as long as a refusal's ``Retry-After`` says."""
    while not stop.is_set():
        try:
            r = await send()
            counts[r.status_code] += 1
            if r.status_code in (429, 503):
                wait = float(r.headers.get("retry-after", 1))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)
        except httpx2.HTTPError:
            counts["error"] += 1
            await asyncio.sleep(0.1)


async def uploader(base: str, k: int, text: str, stop: asyncio.Event, counts: Counter) -> None:
    """Upload ``text`` from address 127.0.2.k until ``stop`` is set."""
    transport = httpx2.AsyncHTTPTransport(local_address=f"127.0.2.{k + 1}")
    async with httpx2.AsyncClient(base_url=base, transport=transport, timeout=120) as http:
        await keep_sending(lambda: http.post("/api/replay", json={"text": text}), stop, counts)


#: The arenas ``--arena`` starts (see the module's docstring).
ARENA_MODES = ("off", "busy", "niced", "queue", "spin")
#: The modes without an arena.
NO_ARENA = ("off", "spin")
#: A process that only spins (the control of ``busy``).
SPIN = [sys.executable, "-c", "while True: pass"]
#: The least niceness of the server's rating workers (the server runs at 0).
RATING_NICE = 18
#: The anchor file whose pairs keep an ``--arena busy`` server's rating worker busy.
BUSY_ANCHOR = "policies/standard_2p.safetensors"


def policy_files(count: int) -> list[bytes]:
    """``count`` distinct valid policy files: the shipped 2-player policy, each with another
    provenance in its header (so another SHA-256)."""
    from safetensors import safe_open
    from safetensors.numpy import save

    from bergen_env.policy_file import HEADER_KEY

    with safe_open("policies/standard_2p.safetensors", framework="numpy") as f:
        header = json.loads(f.metadata()[HEADER_KEY])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (not a dict)
    out = []
    for i in range(count):
        header["provenance"] = {"source": f"web_load flood {i}"}
        out.append(save(tensors, metadata={HEADER_KEY: json.dumps(header)}))
    return out


def flood_client(base: str) -> httpx2.AsyncClient:
    """A client that submits from 127.0.3.1."""
    transport = httpx2.AsyncHTTPTransport(local_address="127.0.3.1")
    return httpx2.AsyncClient(base_url=base, transport=transport, timeout=120)


async def flooder(
    http: httpx2.AsyncClient, files: list[bytes], stop: asyncio.Event, counts: Counter
) -> None:
    """Submit ``files`` in turn with ``http`` until ``stop`` is set."""
    headers = {"content-type": "application/octet-stream"}
    turn = itertools.cycle(files)
    async with http:
        await keep_sending(
            lambda: http.post("/api/arena", content=next(turn), headers=headers), stop, counts
        )


def flood_process(base: str, flooders: int, ready: Any, stop: Any, answers: Any) -> None:
    """In a process of its own (a flood comes from elsewhere, not from the clients that time
    the moves): ``flooders`` clients submit until ``stop`` is set; then their answers' counts
    by status go to the queue ``answers``. ``ready`` is set once the files and the clients are
    made (what the flood costs the server is measured, not the start of its clients)."""
    files = policy_files(64)
    counts: Counter = Counter()

    async def flood() -> None:
        done = asyncio.Event()

        async def watch() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.1)
            done.set()

        clients = [flood_client(base) for _ in range(flooders)]
        sending = [flooder(h, files[k::flooders], done, counts) for k, h in enumerate(clients)]
        ready.set()
        await asyncio.gather(watch(), *sending)

    asyncio.run(flood())
    answers.put(dict(counts))


async def run(args: argparse.Namespace, base: str, server_pid: int | None = None) -> dict:
    ws_url = base.replace("http", "ws", 1)
    latencies: list[float] = []
    starts: list[float] = []
    server_ms: list[float] = []
    replies: list[float] = []
    errors: list[float] = []
    limits = httpx2.Limits(max_connections=400, max_keepalive_connections=400)
    async with httpx2.AsyncClient(base_url=base, limits=limits, timeout=args.timeout) as http:
        for i in range(args.search_tables):  # agents-only tables that keep the agents busy
            body = {
                "seats": ["search", "search"],
                "seed": args.seed + 10_000 + i,
                "options": {"target": 500},  # long matches: busy for the whole run
            }
            (await http.post("/api/tables", json=body)).raise_for_status()
        if args.search_tables:  # let the search tables reach their steady state first
            await asyncio.sleep(args.warmup)
        tables = []
        for i in range(args.tables):
            if i % 2 == 0:
                body = {"num_players": 2, "seats": ["person", "greedy"], "seed": args.seed + i}
            else:
                body = {
                    "num_players": 4,
                    "partnerships": True,  # two people: the server deals (no seed)
                    "seats": ["person", "greedy", "person", "heuristic"],
                }
            r = await http.post("/api/tables", json=body)
            r.raise_for_status()
            tables.append(r.json())
        rng = np.random.default_rng(args.seed)
        jobs = []
        for t in tables:
            for s in t["seats"]:
                if s["link"]:
                    token = s["link"].split("/s/")[1]
                    jobs.append(
                        person(
                            http,
                            ws_url,
                            token,
                            np.random.default_rng(rng.integers(2**32)),
                            latencies,
                            server_ms,
                            args.timeout,
                            replies,
                            errors,
                            starts,
                        )
                    )
        upload: dict = {}
        stop, counts = asyncio.Event(), Counter()
        uploads = []
        if args.uploaders:
            text = replay_text(args.upload_events, args.seed)
            upload = await one_upload(base, text, server_pid)
            uploads = [
                asyncio.ensure_future(uploader(base, k, text, stop, counts))
                for k in range(args.uploaders)
            ]
        floods: Counter = Counter()
        if args.arena_flood:
            context = multiprocessing.get_context("spawn")
            ready, stop_flood, answers = context.Event(), context.Event(), context.Queue()
            flood = context.Process(
                target=flood_process, args=(base, args.arena_flood, ready, stop_flood, answers)
            )
            flood.start()
            if not await asyncio.to_thread(ready.wait, 120):
                raise RuntimeError("the flooding process did not start")
        # the rating workers are told apart by their niceness only when the server's is 0
        measure_idle = server_pid is not None and os.nice(0) == 0
        idle_cpu = tree_cpu(server_pid, RATING_NICE) if measure_idle else float("nan")
        start = time.perf_counter()
        finals = await asyncio.gather(*jobs)
        elapsed = time.perf_counter() - start
        idle_cpu = tree_cpu(server_pid, RATING_NICE) - idle_cpu if measure_idle else idle_cpu
        stop.set()
        await asyncio.gather(*uploads)
        if args.arena_flood:
            stop_flood.set()
            floods.update(await asyncio.to_thread(answers.get, True, 120))
            flood.join()
        arena_queued = (
            (await http.get("/api/arena")).json()["queued"] if args.arena not in NO_ARENA else 0
        )
        moves = 0
        lost = 0
        for t in tables:
            r = await http.get(f"/api/w/{t['table']}/replay")
            r.raise_for_status()
            record = json.loads(r.text)
            view = (await http.get(f"/api/w/{t['table']}")).json()
            if resimulate(record) != view["scores"] or not view["over"]:
                lost += 1
            moves += sum(len(h["events"]) for h in record["hands"])
    unfinished = sum(1 for f in finals if not f["over"])
    lat = np.array(latencies) * 1000
    # when the slowest 1% of moves were sent, in seconds after the tables started
    slowest = np.sort(np.array(starts)[lat >= np.percentile(lat, 99)] - start)
    reply = np.array(replies or [0.0]) * 1000
    return {
        "search_tables": args.search_tables,
        "agent_pool": args.agent_pool,
        "tables": args.tables,
        "person_seats": len(jobs),
        "unfinished": unfinished,
        "mismatched": lost,
        "moves": moves,
        "person_moves": len(latencies),
        "move_connection_errors": len(errors),
        "seconds": round(elapsed, 2),
        "moves_per_s": round(moves / elapsed, 1),
        "person_move_ms_p50": round(float(np.percentile(lat, 50)), 2),
        "person_move_ms_p99": round(float(np.percentile(lat, 99)), 2),
        "slowest_moves_sent_s": [round(float(q), 2) for q in np.quantile(slowest, [0, 0.5, 1])],
        "server_ms_p50": round(float(np.percentile(server_ms, 50)), 3),
        "server_ms_p99": round(float(np.percentile(server_ms, 99)), 3),
        "greedy_replies": len(replies),
        "greedy_reply_ms_p50": round(float(np.percentile(reply, 50)), 2),
        "greedy_reply_ms_p99": round(float(np.percentile(reply, 99)), 2),
        "greedy_reply_ms_max": round(float(reply.max()), 2),
        "uploaders": args.uploaders,
        **upload,
        "uploads_by_status": {str(k): v for k, v in sorted(counts.items(), key=str)},
        "arena": args.arena,
        "arena_flooders": args.arena_flood,
        "arena_submissions_by_status": {str(k): v for k, v in sorted(floods.items(), key=str)},
        "arena_queued_at_end": arena_queued,
        "rating_cpu_s": round(idle_cpu, 2),
    }


def slow_clients(args: argparse.Namespace, base: str) -> dict:
    """How many silent and dripping connections the server holds, and whether it answers."""
    port = int(base.rsplit(":", 1)[1])

    def open_from(address: str) -> socket.socket | None:
        s = socket.socket()
        try:
            s.bind((address, 0))
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            return None
        s.setblocking(False)
        return s

    def still_open(s: socket.socket) -> bool:
        try:
            return s.recv(1) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def meta() -> str:
        try:
            return str(httpx2.get(f"{base}/api/meta", timeout=5).status_code)
        except httpx2.HTTPError as exc:
            return type(exc).__name__

    silent = [open_from(f"127.0.1.{i % 250 + 1}") for i in range(args.slow)]
    dripping = [open_from(f"127.0.1.{(args.slow + i) % 250 + 1}") for i in range(args.slow)]
    for s in dripping:
        if s is not None:
            s.send(b"GET /api/meta HTTP/1.1\r\nHost: x\r\n")
    crowd = [open_from("127.0.3.1") for _ in range(100)]
    time.sleep(1.0)
    groups = {"silent": silent, "dripping": dripping, "one_address": crowd}

    def held() -> dict[str, int]:
        return {k: sum(1 for s in v if s is not None and still_open(s)) for k, v in groups.items()}

    after_1s = held()
    meta_1s = meta()
    start = time.monotonic()
    while time.monotonic() - start < args.hold:
        for s in dripping:
            if s is not None and still_open(s):
                with contextlib.suppress(OSError):
                    s.send(b"X-Slow: 1\r\n")
        time.sleep(2.0)
    after_hold = held()
    meta_hold = meta()
    for v in groups.values():
        for s in v:
            if s is not None:
                s.close()
    return {
        "slow": args.slow,
        "hold_s": args.hold,
        "nofile": args.nofile,
        "open_after_1s": after_1s,
        "meta_after_1s": meta_1s,
        f"open_after_{args.hold:g}s": after_hold,
        f"meta_after_{args.hold:g}s": meta_hold,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument(
        "--search-tables",
        type=int,
        default=0,
        help="agents-only tables of two `search` agents playing during the run",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=5.0,
        help="seconds the search tables play before the measured tables start",
    )
    parser.add_argument(
        "--agent-pool",
        choices=("processes", "threads"),
        default="processes",
        help="the server's --agent-pool",
    )
    parser.add_argument(
        "--db",
        help="the server's table store, an SQLite file (default: a new file in a temporary "
        "directory, as a server keeps its tables; :memory: keeps nothing)",
    )
    parser.add_argument(
        "--uploaders", type=int, default=0, help="clients uploading a replay while tables play"
    )
    parser.add_argument(
        "--upload-events", type=int, default=35000, help="events of the uploaded match"
    )
    parser.add_argument(
        "--arena",
        choices=ARENA_MODES,
        help="the server's policy arena: busy (a rating worker busy from the start), niced (the "
        "same at niceness 18, without SCHED_IDLE), queue (no rating workers), spin (no arena; a "
        "process that spins at the rating workers' priority) or off (default: busy with "
        "--arena-flood, else off)",
    )
    parser.add_argument(
        "--arena-flood",
        type=int,
        default=0,
        help="clients on one address submitting policy files to the server's arena",
    )
    parser.add_argument(
        "--compare",
        help="configurations run in turn, e.g. off,busy,queue+4,busy+4 (MODE or MODE+FLOODERS)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --compare")
    parser.add_argument(
        "--slow", type=int, default=0, help="measure N silent and N dripping connections"
    )
    parser.add_argument("--hold", type=float, default=150.0, help="seconds --slow waits")
    parser.add_argument("--nofile", type=int, help="the server's limit of open files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per match at most")
    parser.add_argument(
        "--url", help="use a server already running at this http://127.0.0.1:PORT (else start one)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.tables <= 500:
        parser.error("--tables must be in 1..500")
    if args.arena is None:
        args.arena = "busy" if args.arena_flood else "off"
    if args.arena_flood and args.arena in NO_ARENA:
        parser.error("--arena-flood needs an arena (--arena busy, niced or queue)")
    if args.compare:
        try:
            configs = [parse_config(c) for c in args.compare.split(",")]
        except ValueError as exc:
            parser.error(f"--compare: {exc}")
        if args.url or args.slow or args.rounds < 1:
            parser.error("--compare starts its own servers (no --url or --slow); --rounds >= 1")
        return compare(args, configs)
    if args.url:
        if not args.url.startswith(("http://127.", "http://localhost")):
            parser.error("--url must be a server on this machine (http://127.0.0.1:PORT)")
        if args.slow:
            result = slow_clients(args, args.url.rstrip("/"))
        else:
            result = asyncio.run(run(args, args.url.rstrip("/")))
        print(json.dumps(result, indent=1))
        return result
    with tempfile.TemporaryDirectory() as folder:
        args.db = args.db or os.path.join(folder, "bergen-web.sqlite3")
        return serve_and_run(args)


def parse_config(text: str) -> tuple[str, int]:
    """``MODE`` or ``MODE+K`` of ``--compare`` as (arena mode, flooders)."""
    mode, _, flood = text.strip().partition("+")
    if mode not in ARENA_MODES or not (flood or "0").isdigit():
        raise ValueError(f"{text!r} is not MODE or MODE+FLOODERS (MODE: {', '.join(ARENA_MODES)})")
    if mode in NO_ARENA and flood not in ("", "0"):
        raise ValueError(f"{text!r}: flooders need an arena")
    return mode, int(flood or 0)


#: The columns of ``--compare``'s table: (heading, result key).
COLUMNS = (
    ("move p50 ms", "person_move_ms_p50"),
    ("move p99 ms", "person_move_ms_p99"),
    ("server p50 ms", "server_ms_p50"),
    ("server p99 ms", "server_ms_p99"),
)


def compare(args: argparse.Namespace, configs: list[tuple[str, int]]) -> dict:
    """Every configuration in turn, ``args.rounds`` times; a table of the runs and medians."""
    runs = []
    for round_ in range(args.rounds):
        for mode, flood in configs:
            run_args = argparse.Namespace(**{**vars(args), "arena": mode, "arena_flood": flood})
            load = os.getloadavg()[0]
            with tempfile.TemporaryDirectory() as folder:
                run_args.db = os.path.join(folder, "bergen-web.sqlite3")
                out = serve_and_run(run_args)
            runs.append({"round": round_, "config": _label(mode, flood), "load": load, **out})
    lines = [
        "| round | arena | flooders | load avg | "
        + " | ".join(h for h, _ in COLUMNS)
        + " | slowest 1% sent at s | person moves | rating CPU s | files 201 / 429 |",
        "|---" * (len(COLUMNS) + 8) + "|",
    ]
    for r in runs:
        statuses = r["arena_submissions_by_status"]
        files = (
            f"{statuses.get('201', 0)} / {statuses.get('429', 0)}" if r["arena_flooders"] else "—"
        )
        lines.append(
            f"| {r['round'] + 1} | {r['arena']} | {r['arena_flooders']} | {r['load']:.1f} | "
            + " | ".join(f"{r[k]:.0f}" for _, k in COLUMNS)
            + " | {:.2f} / {:.2f} / {:.2f}".format(*r["slowest_moves_sent_s"])
            + f" | {r['person_moves']} | {r['rating_cpu_s']:.1f} | {files} |"
        )
    medians = {}
    lines += ["", "| arena | flooders | " + " | ".join(h for h, _ in COLUMNS) + " |"]
    lines.append("|---" * (len(COLUMNS) + 2) + "|")
    for mode, flood in configs:
        mine = [r for r in runs if r["config"] == _label(mode, flood)]
        medians[_label(mode, flood)] = {
            k: float(np.median([r[k] for r in mine])) for _, k in COLUMNS
        }
        lines.append(
            f"| {mode} | {flood} | "
            + " | ".join(f"{medians[_label(mode, flood)][k]:.0f}" for _, k in COLUMNS)
            + " |"
        )
    print("\n".join(lines))
    return {"runs": runs, "medians": medians}


def _label(mode: str, flood: int) -> str:
    return f"{mode}+{flood}" if flood else mode


def serve_and_run(args: argparse.Namespace) -> dict:
    """Start a server on this machine, run the load against it, stop it."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    many = str(2 * args.tables + 64)
    cli = [sys.executable, "-m", "bergen_env.web.cli"]
    helps = subprocess.run([*cli, "--help"], env=env, capture_output=True, text=True).stdout
    extra = []
    if "--connections-per-address" in helps:  # a server that bounds HTTP connections
        extra = ["--connections-per-address", many] if not args.slow else []
        if args.nofile:  # the server's connections stay well under its open files
            extra += ["--max-connections", str(args.nofile // 2)]

    if args.arena not in NO_ARENA:  # the flood meets the per-minute bound, not the hour's
        arena = ":memory:" if args.db == ":memory:" else args.db + ".arena"
        extra += ["--arena", arena]
        extra += ["--arena-per-hour", "100000", "--arena-max-queued", "100000"]
        if args.arena in ("busy", "niced"):  # the anchor's pairs and the scripted round robin
            extra += ["--arena-anchor", BUSY_ANCHOR, "--arena-matches", "1000"]
            if args.arena == "niced":
                extra += ["--arena-niceness", "18"]
        else:
            extra += ["--arena-workers", "0"]

    def nofile() -> None:
        if args.nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))

    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bergen_env.web.cli",
            "--port",
            str(port),
            "--pace",
            "0",
            "--max-tables",
            str(args.tables + args.search_tables),
            "--agent-pool",
            args.agent_pool,
            # every table comes from this one client address: lift the per-address limits
            "--tables-per-address",
            str(args.tables + args.search_tables),
            "--creations-per-minute",
            str(max(60, 2 * (args.tables + args.search_tables))),
            "--sockets-per-address",
            many,
            "--db",
            args.db,
            *extra,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        preexec_fn=nofile,
    )
    spin = None
    if args.arena == "spin":  # at the rating workers' priority, for the server's whole life
        spin = subprocess.Popen(SPIN, preexec_fn=lambda: lower_priority(19, idle=True))
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx2.get(f"{base}/api/meta", timeout=1)
                break
            except httpx2.HTTPError:
                time.sleep(0.1)
        else:
            raise SystemExit("the server did not start")
        run_it = slow_clients if args.slow else lambda a, b: asyncio.run(run(a, b, server.pid))
        result = run_it(args, base)
    finally:
        server.terminate()
        server.wait(timeout=30)
        if spin is not None:
            spin.kill()
            spin.wait()
    print(json.dumps(result, indent=1))
    if not args.slow and (result["unfinished"] or result["mismatched"]):
        raise SystemExit("FAILED: unfinished or mismatched matches")
    return result


if __name__ == "__main__":
    main()
