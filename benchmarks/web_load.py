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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import httpx2
import numpy as np
import websockets

from bergen_env.replay import resimulate


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
) -> dict:
    """Play one seat to the match end; returns the last view. ``replies``: in a 2-player
    table, the seconds from a move's answer to the seat's next turn (the agent's reply)."""
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
                r = await http.post(f"/api/s/{token}/move", json={"action": action})
                latencies.append(time.perf_counter() - start)
                if r.status_code == 200:
                    server_ms.append(float(r.headers["server-timing"].split("dur=")[1]))
                if r.status_code != 200:
                    raise RuntimeError(f"move refused: {r.status_code} {r.text}")
                last = r.json()
                if not last["over"] and last["turn"] != last["seat"]:
                    waiting_since = time.perf_counter()
            if last["over"]:
                return last


async def run(args: argparse.Namespace, base: str) -> dict:
    ws_url = base.replace("http", "ws", 1)
    latencies: list[float] = []
    server_ms: list[float] = []
    replies: list[float] = []
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
                        )
                    )
        start = time.perf_counter()
        finals = await asyncio.gather(*jobs)
        elapsed = time.perf_counter() - start
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
        "seconds": round(elapsed, 2),
        "moves_per_s": round(moves / elapsed, 1),
        "person_move_ms_p50": round(float(np.percentile(lat, 50)), 2),
        "person_move_ms_p99": round(float(np.percentile(lat, 99)), 2),
        "server_ms_p50": round(float(np.percentile(server_ms, 50)), 3),
        "server_ms_p99": round(float(np.percentile(server_ms, 99)), 3),
        "greedy_replies": len(replies),
        "greedy_reply_ms_p50": round(float(np.percentile(reply, 50)), 2),
        "greedy_reply_ms_p99": round(float(np.percentile(reply, 99)), 2),
        "greedy_reply_ms_max": round(float(reply.max()), 2),
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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per match at most")
    parser.add_argument(
        "--url", help="use a server already running at this http://127.0.0.1:PORT (else start one)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.tables <= 500:
        parser.error("--tables must be in 1..500")
    if args.url:
        if not args.url.startswith(("http://127.", "http://localhost")):
            parser.error("--url must be a server on this machine (http://127.0.0.1:PORT)")
        result = asyncio.run(run(args, args.url.rstrip("/")))
        print(json.dumps(result, indent=1))
        return result
    with tempfile.TemporaryDirectory() as folder:
        args.db = args.db or os.path.join(folder, "bergen-web.sqlite3")
        return serve_and_run(args)


def serve_and_run(args: argparse.Namespace) -> dict:
    """Start a server on this machine, run the load against it, stop it."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.getcwd())
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
            str(2 * args.tables + 64),
            "--db",
            args.db,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
    )
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
        result = asyncio.run(run(args, base))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(json.dumps(result, indent=1))
    if result["unfinished"] or result["mismatched"]:
        raise SystemExit("FAILED: unfinished or mismatched matches")
    return result


if __name__ == "__main__":
    main()
