"""Solve a small Bergen variant with OpenSpiel's CFR and report its exploitability.

    python -m benchmarks.openspiel_solve [--iterations 200] [--report 1 10 50 100 200]
        [--game GAME_STRING] [--plus] [--json PATH]

The variant (``--game``, an OpenSpiel game string) is by default
:data:`bergen_env.openspiel.SMALL_GAME`: 2 players, only the tiles whose halves are all <= 2
(the six tiles of a double-two set), hands of two, no reserve (both boneyard tiles may be
drawn), a target of 2 and one hand (a match the hand leaves undecided ends with zero returns).
OpenSpiel's CFR (``pyspiel.CFRSolver``, or CFR+ with ``--plus``) runs on the full game
tree; at each reported iteration the exact exploitability of its average policy is computed by
``pyspiel.exploitability`` (the mean over players of what a best response gains against it;
0 at a Nash equilibrium), with NashConv and the average policy's expected return for seat 0.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pyspiel

from bergen_env.openspiel import SMALL_GAME  # (importing it registers "bergen")


def tree_size(game: pyspiel.Game) -> tuple[int, int, int]:
    """(all nodes, decision nodes, information states) of the full game tree."""
    nodes = decisions = 0
    infosets: set[str] = set()
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        nodes += 1
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack.extend(state.child(a) for a, _ in state.chance_outcomes())
        else:
            decisions += 1
            infosets.add(state.information_state_string())
            stack.extend(state.child(a) for a in state.legal_actions())
    return nodes, decisions, len(infosets)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.openspiel_solve", description=__doc__)
    p.add_argument("--game", default=SMALL_GAME, help="an OpenSpiel game string")
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--report", type=int, nargs="+", default=[1, 10, 50, 100, 200])
    p.add_argument("--plus", action="store_true", help="CFR+ instead of vanilla CFR")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    game = pyspiel.load_game(args.game)
    start = time.perf_counter()
    nodes, decisions, infosets = tree_size(game)
    print(f"game: {game}")
    print(
        f"tree: {nodes} nodes, {decisions} decision nodes, {infosets} information states "
        f"({time.perf_counter() - start:.1f} s)"
    )
    solver = pyspiel.CFRPlusSolver(game) if args.plus else pyspiel.CFRSolver(game)
    name = "CFR+" if args.plus else "CFR"
    rows = []
    print(f"| {name} iterations | exploitability | NashConv | seat 0 expected return | wall s |")
    print("|---:|---:|---:|---:|---:|")
    start = time.perf_counter()
    for it in range(1, args.iterations + 1):
        solver.evaluate_and_update_policy()
        if it in args.report or it == args.iterations:
            policy = solver.average_policy()
            expl = pyspiel.exploitability(game, policy)
            conv = pyspiel.nash_conv(game, policy)
            value = pyspiel.expected_returns(game.new_initial_state(), policy, -1, True)[0]
            wall = time.perf_counter() - start
            rows.append(
                {"iterations": it, "exploitability": expl, "nash_conv": conv, "value0": value}
            )
            print(f"| {it} | {expl:.6f} | {conv:.6f} | {value:+.4f} | {wall:.0f} |", flush=True)
    if args.json:
        out = {
            "game": str(game),
            "solver": name,
            "nodes": nodes,
            "decision_nodes": decisions,
            "information_states": infosets,
            "rows": rows,
        }
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
