"""Decisions per second of each scripted agent on one core, and milliseconds per search decision.

Positions come from real random matches of standard Bergen, 2 players unless ``--players`` and
``--partnerships`` say otherwise (every decision of those matches, including forced ones; the
table also reports decisions with a real choice). Times are CPU time of this process
(``time.process_time``), so other load on the machine matters less.

    python benchmarks/agents_speed.py [--positions 300] [--seed 0] [--repeat 1] [--json PATH]
        [--players 2] [--partnerships]

With ``--repeat N`` every agent is timed N times, the agents taking turns, and each figure is the
median of the N runs (``ms_per_choice_runs`` keeps them all): on a shared machine one run can be
off by a fifth.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

from bergen_env.agents import make_agent
from bergen_env.engine import BergenState, PublicView
from bergen_env.observation import Encoder
from bergen_env.rules import Rules

AGENTS = ("random", "greedy", "heuristic", "search")


def collect_positions(
    rules: Rules, count: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray, PublicView]]:
    """``(observation, mask, view)`` at every decision of random matches until ``count``."""
    rng = np.random.default_rng(seed)
    encoder = Encoder(rules)
    out = []
    match = 0
    while len(out) < count:
        s = BergenState(rules, seed=seed + match)
        match += 1
        while not s.terminal and len(out) < count:
            p = s.current_player
            out.append((encoder.observe(s, p), s.legal_mask(), s.public_view(p)))
            legal = s.legal_actions()
            s.apply_unchecked(legal[rng.integers(len(legal))])
    return out


def time_agent(spec: str, rules: Rules, positions: list, seed: int) -> dict[str, float]:
    """CPU seconds for every position and for those with two or more legal actions, and the
    mean deals a search played per real choice (None for agents that do not sample)."""
    agent = make_agent(spec)
    total = choice = 0.0
    choices = 0
    deals = 0 if hasattr(agent, "used") else None
    for i, (obs, mask, view) in enumerate(positions):
        agent.reset(rules, view.seat, np.random.default_rng([seed, i]))
        start = time.process_time()
        agent.act(obs, mask, view)
        elapsed = time.process_time() - start
        total += elapsed
        if len(view.legal_actions) > 1:
            choice += elapsed
            choices += 1
            if deals is not None:
                deals += agent.used
    n = len(positions)
    return {
        "positions": n,
        "decisions_per_s": n / total if total else float("inf"),
        "ms_per_decision": 1000.0 * total / n,
        "choice_positions": choices,
        "ms_per_choice": 1000.0 * choice / choices if choices else 0.0,
        "samples_per_choice": deals / choices if deals is not None and choices else None,
    }


def _median_run(runs: list[dict]) -> dict:
    """One agent's timings: each rate the median over ``runs``, the real-choice times all kept."""
    out = dict(runs[0])
    for key in ("decisions_per_s", "ms_per_decision", "ms_per_choice"):
        out[key] = float(np.median([r[key] for r in runs]))
    out["ms_per_choice_runs"] = [r["ms_per_choice"] for r in runs]
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=300, help="decisions to time per agent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeat", type=int, default=1, help="time every agent this many times (the median)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--partnerships", action="store_true", help="4 players in two teams of two")
    parser.add_argument(
        "--agents", nargs="+", default=list(AGENTS), metavar="SPEC", help="agent strings to time"
    )
    args = parser.parse_args(argv)
    if args.positions < 1:
        parser.error("--positions must be >= 1")
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    if args.partnerships and args.players != 4:
        parser.error("--partnerships needs --players 4")
    rules = Rules.preset("standard", num_players=args.players, partnerships=args.partnerships)
    positions = collect_positions(rules, args.positions, args.seed)
    runs: dict[str, list[dict]] = {spec: [] for spec in args.agents}
    for _ in range(args.repeat):
        for spec in args.agents:
            runs[spec].append(time_agent(spec, rules, positions, args.seed))
    results = {spec: _median_run(r) for spec, r in runs.items()}
    seating = f"{args.players}-player" + (" partnership" if args.partnerships else "")
    print(
        f"{seating} standard, {len(positions)} positions from random matches, CPU time, 1 core"
        + (f", median of {args.repeat} runs" if args.repeat > 1 else "")
    )
    width = max(12, *(len(spec) + 2 for spec in results))
    print(
        f"{'agent':<{width}}{'decisions/s':>14}{'ms/decision':>14}{'ms/choice':>12}"
        f"{'samples/choice':>16}"
    )
    for spec, r in results.items():
        samples = r["samples_per_choice"]
        print(
            f"{spec:<{width}}{r['decisions_per_s']:>14.1f}{r['ms_per_decision']:>14.3f}"
            f"{r['ms_per_choice']:>12.3f}{'-' if samples is None else f'{samples:.0f}':>16}"
        )
    report = {
        "config": {
            "rules": rules.to_dict(),
            "positions": len(positions),
            "seed": args.seed,
            "repeat": args.repeat,
            "timer": "process_time",
            "python": sys.version.split()[0],
            "machine": platform.machine(),
            "processor": platform.processor(),
        },
        "agents": results,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return report


if __name__ == "__main__":
    main()
