"""``bergen-web``: serve the browser game (127.0.0.1:8000 by default).

    bergen-web --port 8000 --pace 0.8 --agent net=policy:policies/standard_2p.safetensors

``--agent NAME=SPEC`` adds an agent to the menu a table may seat (any agent string the agent
registry knows). Only the server's operator names files: a person at a table picks from the menu.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bergen_env.agents.base import make_agent, parse_agent_spec, registered_agents
from bergen_env.web.tables import DEFAULT_AGENTS, PERSON, Limits, TableManager


def _agent_entry(text: str) -> tuple[str, str]:
    name, eq, spec = text.partition("=")
    if not eq or not name.strip() or not spec.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=SPEC, got {text!r}")
    if name.strip() == PERSON:
        raise argparse.ArgumentTypeError(f"{PERSON!r} is the seat kind of a person")
    return name.strip(), spec.strip()


def _check_agent(name: str, spec: str) -> None:
    kind, _ = parse_agent_spec(spec)
    if kind == "ppo" and kind not in registered_agents():
        try:
            import bergen_env.training.policies  # noqa: F401  (registers "ppo"; the train extra)
        except ImportError as exc:
            raise SystemExit(
                f"--agent {name}={spec}: 'ppo' needs the train extra ({exc})"
            ) from None
    try:  # built once now (a missing file fails here); each table checks it fits its rules
        make_agent(spec)
    except (ValueError, OSError) as exc:
        raise SystemExit(f"--agent {name}={spec}: {exc}") from None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="bergen-web", description="Serve the browser game (127.0.0.1:8000 by default)."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument(
        "--pace", type=float, default=0.8, help="seconds an agent waits before each move"
    )
    parser.add_argument(
        "--agent",
        type=_agent_entry,
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="add an agent to the menu, e.g. ppo2p=ppo:policies/standard_2p.zip",
    )
    parser.add_argument(
        "--max-tables", type=int, default=Limits.max_tables, help="tables held at once"
    )
    parser.add_argument(
        "--idle-minutes",
        type=float,
        default=Limits.idle_seconds / 60,
        help="remove a table after this many minutes with no move and nobody connected",
    )
    args = parser.parse_args(argv)
    if args.pace < 0 or args.max_tables < 1 or args.idle_minutes <= 0:
        parser.error("--pace must be >= 0, --max-tables >= 1 and --idle-minutes > 0")
    agents = dict(DEFAULT_AGENTS)
    for name, spec in args.agent:
        _check_agent(name, spec)
        agents[name] = spec
    try:
        import uvicorn
    except ImportError:
        sys.exit("bergen-web needs the web extra: pip install 'bergen_env[web]'")
    from bergen_env.web.app import create_app

    manager = TableManager(
        agents=agents,
        limits=Limits(max_tables=args.max_tables, idle_seconds=args.idle_minutes * 60),
        pace=args.pace,
    )
    print(f"Bergen in the browser: http://{args.host}:{args.port}/  (Ctrl+C stops)")
    uvicorn.run(create_app(manager), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
