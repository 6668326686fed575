"""Evaluate agents against each other: a duplicate tournament with intervals, table, JSON/CSV/PNG.

    bergen-evaluate --agents policy:policies/standard_2p.safetensors heuristic --matches 2000
    bergen-evaluate --agents greedy random heuristic --players 3 --json out.json
    bergen-evaluate --agents heuristic random --players 4 --partnerships \\
        --rules traditional --rule-override target=10 --workers 2 --plot winrates.png

An agent is a scripted name (``random``, ``greedy``, ``heuristic``, ``search:samples=200``), a
portable policy file ``policy:PATH.safetensors`` (numpy only), a MaskablePPO zip ``ppo:PATH`` or
an RLlib checkpoint ``rllib:PATH`` (both unpickled, so only with ``--trust-pickle``; they need the
train and rllib extras). Without ``--rules`` the rules are those the policies among the agents
were trained for (a policy file records them), or ``standard`` for 2 players if there is none;
policies trained for other rules than those played are refused, by name. The format and the
statistics are described in :mod:`bergen_env.arena`; the same ``--seed`` gives the same numbers
whatever ``--workers`` is, and on Ray (``--ray``, docs/scale.md).
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("evaluate"))

import argparse
import csv
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bergen_env.agents import make_agent
from bergen_env.arena import TournamentResult, run_tournament, seat_lineups
from bergen_env.atomic_files import atomic_path, check_writable, write_text
from bergen_env.env_options import DEFAULT_MAX_HANDS
from bergen_env.errors import BergenError
from bergen_env.rules import Rules

from .cli import (
    ArgumentParser,
    UsageError,
    add_rules_arguments,
    check_match_arguments,
    register_policy_kinds,
    require_extra,
    rules_from_arguments,
    run,
    trust_pickle,
)
from .ray_option import add_ray_argument, join_ray

PROG = "bergen-evaluate"


CSV_FIELDS = (
    "name",
    "matches",
    "wins",
    "unfinished",
    "match_win_rate",
    "ci95_lo",
    "ci95_hi",
    "mean_points_per_match",
    "mean_points_per_hand",
    "hand_win_rate",
    "hands",
    "hands_ended",
    "hands_won",
    "headers",
    "header_points",
    "blocked_won",
    "mean_match_hands",
    "rating",
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = ArgumentParser(
        prog=PROG,
        description="Play a duplicate tournament between agents and report win rates with "
        "95% Wilson intervals, points, headers, head-to-head and ratings.",
    )
    p.add_argument(
        "--agents",
        nargs="+",
        required=True,
        metavar="AGENT",
        help="agent strings: random, greedy, heuristic, search:samples=200, "
        "policy:FILE.safetensors, ppo:PATH and rllib:PATH (with --trust-pickle)",
    )
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="allow ppo:PATH zips and rllib:PATH checkpoints, which are unpickled and so can run "
        "code: only for your own files (share policies as policy:FILE.safetensors instead)",
    )
    add_rules_arguments(p)
    p.add_argument("--matches", type=int, default=2000, help="matches (rounded up to groups)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    add_ray_argument(p, "the deal groups")
    p.add_argument("--no-duplicate", action="store_true", help="fresh deals for every match")
    p.add_argument(
        "--max-hands",
        type=int,
        default=DEFAULT_MAX_HANDS,
        help=f"unfinished after this many hands (default {DEFAULT_MAX_HANDS})",
    )
    p.add_argument("--json", type=Path, help="write the results as JSON")
    p.add_argument("--csv", type=Path, help="write one row per agent as CSV")
    p.add_argument("--plot", type=Path, help="write a PNG of win rates with 95%% intervals")
    p.add_argument("--replays", type=Path, help="write every match as a JSON line")
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (one is shown when tqdm is installed)",
    )
    return p.parse_args(argv)


def check_agents(agents: list[str], rules: Rules) -> None:
    """Build every agent once and reset it for these rules: unknown names, missing policy files
    and policies trained for other rules fail here, before any match."""
    for spec in agents:
        try:
            make_agent(spec).reset(rules, 0, np.random.default_rng(0))
        except (ValueError, OSError, BergenError) as exc:
            message = str(exc)
            raise UsageError(message if spec in message else f"agent {spec!r}: {message}") from None


def write_csv(result: TournamentResult, path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for name, s in result.agents.items():
            row = {k: v for k, v in s.to_dict().items() if k in CSV_FIELDS}
            row["ci95_lo"], row["ci95_hi"] = s.ci95
            row["rating"] = result.ratings[name]
            writer.writerow(row)


def write_plot(result: TournamentResult, path: Path) -> None:
    """A bar chart of match-win rates with their 95% Wilson intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result.agents)
    rates = np.array([result.agents[n].match_win_rate for n in names])
    lo = np.array([result.agents[n].ci95[0] for n in names])
    hi = np.array([result.agents[n].ci95[1] for n in names])
    c = result.config
    fig, ax = plt.subplots(figsize=(1.6 * len(names) + 2.5, 4.0))
    ax.bar(names, rates, yerr=[rates - lo, hi - rates], capsize=6, color="tab:blue", alpha=0.8)
    sides = 2 if c["partnerships"] else c["num_players"]
    ax.axhline(1.0 / sides, color="grey", linestyle="--", linewidth=1, label="even share")
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("match-win rate (95% Wilson CI)")
    ax.set_title(
        f"{c['rules']['name']}, {c['num_players']}p{' partnerships' if c['partnerships'] else ''}"
        f", {c['matches']} matches, seed {c['seed']}"
    )
    ax.legend(loc="upper right")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: exit status 0, or 2 after a one-line error on stderr."""
    return run(PROG, tournament, argv)


def tournament(argv: Sequence[str] | None = None) -> int:
    """Check the arguments (a user error is a :class:`UsageError`), play and report."""
    args = parse_args(argv)
    check_match_arguments(args, ("matches", "workers", "max_hands"))
    register_policy_kinds(args.agents)
    if args.trust_pickle:
        args.agents = trust_pickle(args.agents)
    rules = rules_from_arguments(args, args.agents)
    try:
        seat_lineups(len(args.agents), rules)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_agents(args.agents, rules)
    if args.plot:
        require_extra("train", "--plot", ["matplotlib"])
    for flag in ("json", "csv", "plot", "replays"):  # unwritable: an error now, not after
        if getattr(args, flag) is not None:
            check_writable(getattr(args, flag), f"--{flag}")
    if args.ray is not None:
        join_ray(args.ray)
    result = run_tournament(
        args.agents,
        rules,
        matches=args.matches,
        seed=args.seed,
        duplicate=not args.no_duplicate,
        workers=args.workers,
        progress=not args.no_progress and importlib.util.find_spec("tqdm") is not None,
        replays=args.replays,
        max_hands=args.max_hands,
        backend="processes" if args.ray is None else "ray",
    )
    print(result.table())
    if args.json:
        data = result.to_dict()
        data["config"]["command"] = [PROG, *(sys.argv[1:] if argv is None else argv)]
        write_text(args.json, json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.csv:
        write_csv(result, args.csv)
        print(f"wrote {args.csv}")
    if args.plot:
        write_plot(result, args.plot)
        print(f"wrote {args.plot}")
    return 0
