"""``bergen-web``: serve the browser game (127.0.0.1:8000 by default).

    bergen-web --port 8000 --db tables.sqlite3 --agent net=policy:policies/standard_2p.safetensors

``--agent NAME=SPEC`` adds an agent to the menu a table may seat (any agent string the agent
registry knows; a trained network as a portable ``policy:`` file). Only the server's operator
names files: a person at a table picks from the menu.

``--arena FILE`` also runs the policy arena (``docs/arena.md``): people submit policy files,
which play duplicate matches against the anchors at the lowest priority and get a rating
(``--arena-ray [ADDRESS]``: as Ray tasks, on a local Ray instance or a cluster).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from bergen_env.agents.base import make_agent, parse_agent_spec, registered_agents
from bergen_env.arena_store import SCRIPTED_ANCHORS, ArenaStore, SubmissionError
from bergen_env.command_line import USER_ERROR, ArgumentParser
from bergen_env.errors import install_hint
from bergen_env.ray_tasks import LOCAL, RayJoinError, cluster_cpus, join
from bergen_env.web.agent_pool import AgentPool, default_workers
from bergen_env.web.arena_runner import ArenaRunner, ArenaSettings
from bergen_env.web.options import PERSON
from bergen_env.web.store import SQLiteStore
from bergen_env.web.tables import DEFAULT_AGENTS, Limits, TableManager

#: The table store's file when ``--db`` is not given (in the working directory).
DEFAULT_DB = "bergen-web.sqlite3"


def _agent_entry(text: str) -> tuple[str, str]:
    name, eq, spec = text.partition("=")
    if not eq or not name.strip() or not spec.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=SPEC, got {text!r}")
    if name.strip() == PERSON:
        raise argparse.ArgumentTypeError(f"{PERSON!r} is the seat kind of a person")
    return name.strip(), spec.strip()


def _exit(message: str) -> NoReturn:
    """End the program on a user error: the one-line ``message`` on stderr, exit status 2 (as
    every command of the package)."""
    print(message, file=sys.stderr)
    raise SystemExit(USER_ERROR)


def _check_agent(name: str, spec: str) -> None:
    kind, _ = parse_agent_spec(spec)
    if kind not in registered_agents():
        hint = (
            "; serve a trained network as a portable policy file: "
            "`bergen-export-policy MODEL.zip` writes MODEL.safetensors, then "
            f"--agent {name}=policy:MODEL.safetensors"
            if kind == "ppo"
            else ""
        )
        _exit(
            f"--agent {name}={spec}: unknown agent kind {kind!r}; known: "
            f"{registered_agents()}{hint}"
        )
    try:  # built once now (a missing file fails here); each table checks it fits its rules
        make_agent(spec)
    except (ValueError, OSError) as exc:
        _exit(f"--agent {name}={spec}: {exc}")


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="bergen-web", description="Serve the browser game (127.0.0.1:8000 by default)."
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8000, help="port to listen on")
    p.add_argument(
        "--pace", type=float, default=0.8, help="seconds an agent waits before each move"
    )
    p.add_argument(
        "--agent",
        type=_agent_entry,
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="add an agent to the menu, e.g. net=policy:policies/standard_2p.safetensors",
    )
    p.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"the table store, an SQLite file (default ./{DEFAULT_DB}); :memory: keeps nothing",
    )
    p.add_argument(
        "--max-tables", type=int, default=Limits.max_tables, help="tables played at once"
    )
    p.add_argument(
        "--tables-per-address",
        type=int,
        default=Limits.tables_per_address,
        help="tables played at once that one client address created",
    )
    p.add_argument(
        "--creations-per-minute",
        type=float,
        default=Limits.creations_per_minute,
        help="new tables per client address and minute (429 above it)",
    )
    p.add_argument(
        "--sockets-per-address",
        type=int,
        default=Limits.sockets_per_address,
        help="open WebSockets of one client address (pages and spectators)",
    )
    p.add_argument(
        "--connections-per-address",
        type=int,
        default=Limits.connections_per_address,
        help="open HTTP connections of one client address (more are closed at once)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=Limits.max_connections,
        help="open HTTP connections of the server (keep it under `ulimit -n`)",
    )
    p.add_argument(
        "--idle-minutes",
        type=float,
        default=Limits.idle_seconds / 60,
        help="a table with no move for this many minutes expires",
    )
    p.add_argument(
        "--replay-days",
        type=float,
        default=Limits.replay_days,
        help="finished matches stay readable as replays this many days",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        help=f"worker processes for slow agents (default: cores - 1, here {default_workers()})",
    )
    p.add_argument(
        "--agent-pool",
        choices=("processes", "threads"),
        default="processes",
        help="where slow agents think: worker processes (default) or threads of the server",
    )
    arena = p.add_argument_group("the policy arena (docs/arena.md)")
    arena.add_argument(
        "--arena",
        metavar="FILE",
        help="run the policy arena, kept in this SQLite file (/arena, /api/arena)",
    )
    arena.add_argument(
        "--arena-anchor",
        action="append",
        default=[],
        metavar="POLICY_FILE",
        help="a policy file every submission of its rules plays besides the scripted anchors "
        "(repeatable; e.g. each of policies/*.safetensors)",
    )
    arena.add_argument(
        "--arena-anchor-agent",
        action="append",
        default=[],
        metavar="SPEC",
        help="an agent string every submission plays besides random, greedy, heuristic and "
        "tuned (repeatable; e.g. search:samples=100, without a time budget)",
    )
    arena.add_argument(
        "--arena-workers",
        type=int,
        default=None,
        help=f"processes that play the arena's pairs, at the lowest priority (default "
        f"{ArenaSettings.workers}; 0: submissions are taken and queued, nothing is played "
        f"until a start with workers)",
    )
    arena.add_argument(
        "--arena-ray",
        nargs="?",
        const=LOCAL,
        default=None,
        metavar="ADDRESS",
        help="play the arena's pairs as Ray tasks, as many at once as the cluster has CPUs "
        "(instead of --arena-workers): a local Ray instance without ADDRESS (or 'local'), "
        "'auto' for the cluster this machine joined with 'ray start', or a cluster's HOST:PORT "
        "(needs the [ray] extra)",
    )
    arena.add_argument(
        "--arena-niceness",
        type=int,
        default=ArenaSettings.niceness,
        help="how much lower the arena workers' scheduling priority is than the server's "
        "(19: they take only CPU nothing else wants; 0 on a machine that only rates)",
    )
    arena.add_argument(
        "--arena-matches",
        type=int,
        default=ArenaSettings.matches,
        help="duplicate matches per pair (rounded up to whole deal groups)",
    )
    arena.add_argument(
        "--arena-rivals",
        type=int,
        default=ArenaSettings.rivals,
        help="other submissions each new policy plays (a random sample)",
    )
    arena.add_argument(
        "--arena-bootstrap",
        type=int,
        default=ArenaSettings.bootstrap,
        help="bootstrap replicates of each leaderboard's intervals",
    )
    arena.add_argument(
        "--arena-per-hour",
        type=int,
        default=ArenaSettings.submissions_per_hour,
        help="new policy files one client address may submit per hour",
    )
    arena.add_argument(
        "--arena-max-queued",
        type=int,
        default=ArenaSettings.max_queued,
        help="queued pairs beyond which new submissions are refused (503)",
    )
    p.add_argument(
        "--forwarded-allow",
        default="",
        metavar="IPS",
        help="comma-separated addresses of trusted reverse proxies whose X-Forwarded-For "
        "names the client (default: none; the client is the socket's address)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> None:
    p = parser()
    args = p.parse_args(argv)
    positive = (
        args.max_tables,
        args.tables_per_address,
        args.creations_per_minute,
        args.sockets_per_address,
        args.connections_per_address,
        args.max_connections,
    )
    if args.pace < 0 or min(positive) <= 0 or args.idle_minutes <= 0 or args.replay_days <= 0:
        p.error(
            "--pace must be >= 0; --max-tables, --tables-per-address, --creations-per-minute, "
            "--sockets-per-address, --connections-per-address, --max-connections, "
            "--idle-minutes and --replay-days > 0"
        )
    if args.workers < 0:
        p.error("--workers must be >= 0 (0: one per core)")
    if args.arena_ray is not None and args.arena_workers is not None:
        p.error("--arena-ray replaces --arena-workers (Ray plays a pair on every CPU it has)")
    if args.arena_ray is not None and not args.arena:
        p.error("--arena-ray needs --arena FILE")
    if args.arena_workers is None:
        args.arena_workers = ArenaSettings.workers
    counts = (args.arena_matches, args.arena_bootstrap, args.arena_max_queued)
    if min(counts) < 1 or min(args.arena_workers, args.arena_rivals, args.arena_per_hour) < 0:
        p.error(
            "--arena-matches, --arena-bootstrap and --arena-max-queued must be >= 1; "
            "--arena-workers, --arena-rivals and --arena-per-hour >= 0"
        )
    if not 0 <= args.arena_niceness <= 19:
        p.error(f"--arena-niceness must be in 0..19, got {args.arena_niceness}")
    if (args.arena_anchor or args.arena_anchor_agent) and not args.arena:
        p.error("--arena-anchor and --arena-anchor-agent need --arena FILE")
    for spec in args.arena_anchor_agent:
        try:
            if parse_agent_spec(spec)[0] == "policy":
                raise ValueError("a policy file is an anchor by --arena-anchor FILE")
            make_agent(spec)
        except (ValueError, OSError) as exc:
            p.error(f"--arena-anchor-agent {spec}: {exc}")
    agents = dict(DEFAULT_AGENTS)
    for name, spec in args.agent:
        _check_agent(name, spec)
        agents[name] = spec
    try:
        import uvicorn
    except ImportError:
        _exit(f"bergen-web needs the web extra: {install_hint('web')}")
    if args.arena_ray is not None:  # before any file is opened: a missing Ray is one line
        try:
            join(args.arena_ray, "--arena-ray")
        except RayJoinError as exc:
            _exit(f"bergen-web: {exc}")
    from bergen_env.web.app import create_app

    try:
        store = SQLiteStore(args.db)
    except OSError as exc:
        _exit(str(exc))
    limits = Limits(
        max_tables=args.max_tables,
        tables_per_address=args.tables_per_address,
        creations_per_minute=args.creations_per_minute,
        sockets_per_address=args.sockets_per_address,
        connections_per_address=args.connections_per_address,
        max_connections=args.max_connections,
        idle_seconds=args.idle_minutes * 60,
        replay_days=args.replay_days,
    )
    pool = AgentPool(args.workers or None, processes=args.agent_pool == "processes")
    manager = TableManager(agents=agents, limits=limits, pace=args.pace, store=store, pool=pool)
    arena = None
    if args.arena:
        arena = _arena(args)
    proxies = [a.strip() for a in args.forwarded_allow.split(",") if a.strip()]
    print(f"Bergen in the browser: http://{args.host}:{args.port}/  (Ctrl+C stops)", flush=True)
    from bergen_env.web.serving import server_config

    config = server_config(
        create_app(manager, arena=arena),
        limits,
        proxies,
        host=args.host,
        port=args.port,
        log_level="warning",
    )
    uvicorn.Server(config).run()  # the app's shutdown ends the agent pool's processes
    store.close()
    if arena is not None:
        arena.store.close()


def _arena(args: argparse.Namespace) -> ArenaRunner:
    """The arena the flags ask for, its anchors stored and queued; exits naming a problem."""
    settings = ArenaSettings(
        workers=args.arena_workers if args.arena_ray is None else cluster_cpus(),
        ray=args.arena_ray,
        matches=args.arena_matches,
        rivals=args.arena_rivals,
        bootstrap=args.arena_bootstrap,
        submissions_per_hour=args.arena_per_hour,
        max_queued=args.arena_max_queued,
        niceness=args.arena_niceness,
        anchors=tuple(dict.fromkeys([*SCRIPTED_ANCHORS, *args.arena_anchor_agent])),
    )
    try:
        runner = ArenaRunner(ArenaStore(args.arena), settings)
    except OSError as exc:
        _exit(str(exc))
    for path in args.arena_anchor:
        try:
            runner.add_anchor_file(path)
        except (OSError, SubmissionError) as exc:
            _exit(f"--arena-anchor {path}: {exc}")
    return runner


if __name__ == "__main__":
    main()
