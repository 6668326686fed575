"""The strength ladder of the scripted agents: duplicate tournaments between neighbouring rungs.

    python -m benchmarks.ladder [--matches 2000] [--workers 2] [--seed 0] [--json PATH]
                                [--players 2] [--partnerships] [--rules standard]
                                [--pair A B ...]

Each pair plays ``--matches`` duplicate matches (same deals, seats rotated) under the preset
``--rules`` (default ``standard``; also ``draw`` and ``fives``); the table gives the first
agent's match-win rate with its 95% Wilson interval and the wall time of the pair. With 3 or 4
individual players the first agent plays against that many copies of the second
(``--players 3 --pair search heuristic``: search against two heuristics).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bergen_env.arena import agent_names, run_tournament
from bergen_env.rules import Rules

DEFAULT_PAIRS = (
    ("greedy", "random"),
    ("heuristic", "random"),
    ("heuristic", "greedy"),
    ("search", "heuristic"),
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ladder", description=__doc__)
    p.add_argument("--matches", type=int, default=2000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--players", type=int, default=2)
    p.add_argument(
        "--partnerships",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="4 players in two teams (default: on for draw and fives)",
    )
    p.add_argument("--rules", default="standard")
    p.add_argument(
        "--pair",
        dest="pairs",
        nargs=2,
        action="append",
        metavar=("A", "B"),
        help="agent strings of one rung (repeatable; default: the whole ladder)",
    )
    p.add_argument("--json", type=Path, help="write every pair's result here")
    args = p.parse_args(argv)
    rules = Rules.preset(args.rules, num_players=args.players, partnerships=args.partnerships)
    out: dict[str, dict] = {}
    rows = []
    for first, second in args.pairs or DEFAULT_PAIRS:
        start = time.perf_counter()
        copies = 1 if rules.partnerships else args.players - 1
        lineup = [first, *[second] * copies]
        result = run_tournament(
            lineup,
            rules,
            matches=args.matches,
            seed=args.seed,
            workers=args.workers,
            progress=True,
        )
        elapsed = time.perf_counter() - start
        stats = result.agents[agent_names(lineup)[0]]
        lo, hi = stats.ci95
        rows.append(
            f"| {first} | {second} | {stats.matches} | {stats.match_win_rate:.3f} "
            f"| [{lo:.3f}, {hi:.3f}] | {elapsed:.0f} s |"
        )
        out[f"{first} vs {second}"] = result.to_dict()
        print(result.table(), flush=True)
    seats = f"{args.players}p" + (" partnerships" if rules.partnerships else "")
    print(f"\n{args.rules} {seats}, duplicate, seed {args.seed}, {args.workers} worker(s)")
    print("| agent | opponent | matches | win rate | 95% CI | wall |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
