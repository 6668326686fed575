"""How much ``belief=1``'s weights narrow the deals down, and whether they keep the true deal.

python -m benchmarks.belief_weights [--matches 40] [--deals 800] [--seed 1000]
    [--temperatures 0.5 0.2 0.1 0.05 0.02] [--history exact] [--json PATH]

Plays ``--matches`` 2-player ``standard`` matches between two ``heuristic`` seats (the opponent
model of ``belief=1`` is exactly right) and, at about 30% of seat 0's real choices, draws
``--deals`` deals of the hidden tiles with ``HiddenTileSampler`` (what ``search`` weighs) and
weighs them with :class:`~bergen_env.agents.belief.BeliefModel` at each temperature (with
``--history``: ``exact`` or ``sampled``, see :mod:`bergen_env.agents.belief`). Per temperature
it prints

- the effective sample size of the weights as a share of the deals, ``(Σw)² / Σw² / deals``
  (1: the other seat's plays rule nothing out; small: they pin the deal down), and
- the true deal's log-weight minus the best drawn deal's (0 or above: the true deal is among the
  likeliest; far below: the model rules the truth out), and
- the *true-place share*: for each tile in the other seat's hand, the weighted share of the deals
  that put it there, averaged over tiles and positions (the same deals unweighted give the
  ``uniform`` row: what the weights add is the difference).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from bergen_env.agents.belief import BeliefModel
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.engine import BergenState
from bergen_env.hidden_tiles import HiddenTileSampler
from bergen_env.rules import Rules


def measure(
    matches: int, deals: int, seed: int, temperatures: list[float], history: str = "exact"
) -> dict[str, Any]:
    """The effective sample shares, true-deal gaps and true-place shares at each temperature
    (see the module); the key ``"uniform"`` holds the true-place share of unweighted deals."""
    rules = Rules.preset("standard", num_players=2)
    rng = np.random.default_rng(seed)
    walks = np.random.default_rng([seed, 1])  # the walks' draws: the same positions and deals
    seats = [HeuristicAgent(), HeuristicAgent()]
    for seat, agent in enumerate(seats):
        agent.reset(rules, seat, np.random.default_rng([seed, seat]))
    shares: dict[float, list[float]] = {t: [] for t in temperatures}
    gaps: dict[float, list[float]] = {t: [] for t in temperatures}
    places: dict[float | str, list[float]] = {t: [] for t in [*temperatures, "uniform"]}
    for match in range(matches):
        s = BergenState(rules, seed=seed + match)
        while not s.terminal:
            view = s.public_view(s.current_player)
            if view.seat == 0 and len(view.legal_actions) > 1 and rng.random() < 0.3:
                sampler = HiddenTileSampler(view)
                pool = [sampler.sample(rng)[0] for _ in range(deals)]
                truth = [s.hand_tiles(q) for q in range(rules.num_players)]
                held = np.array([[t in hands[1] for t in truth[1]] for hands in pool], float)
                places["uniform"].append(float(held.mean()))
                for t in temperatures:
                    model = BeliefModel(view, t, history=history)
                    logw = np.array([model.log_weight(hands, walks) for hands in pool])
                    w = np.exp(logw - logw.max())
                    shares[t].append(float(w.sum() ** 2 / (w * w).sum() / deals))
                    gaps[t].append(model.log_weight(truth, walks) - float(logw.max()))
                    places[t].append(float((w @ held).mean() / w.sum()))
            s.apply_action(seats[s.current_player].act(None, None, view))
    rows = {}
    for t in temperatures:
        share, gap = np.array(shares[t]), np.array(gaps[t])
        rows[str(t)] = {
            "positions": len(share),
            "share_mean": float(share.mean()),
            "share_p10": float(np.percentile(share, 10)),
            "gap_median": float(np.median(gap)),
            "gap_p10": float(np.percentile(gap, 10)),
            "gap_min": float(gap.min()),
            "true_place": float(np.mean(places[t])),
        }
    rows["uniform"] = {
        "positions": len(places["uniform"]),
        "true_place": float(np.mean(places["uniform"])),
    }
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=40)
    parser.add_argument("--deals", type=int, default=800)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument(
        "--temperatures", type=float, nargs="+", default=[0.5, 0.2, 0.1, 0.05, 0.02]
    )
    parser.add_argument("--history", choices=["exact", "sampled"], default="exact")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.matches < 1 or args.deals < 1:
        parser.error("--matches and --deals must be >= 1")
    if any(not t > 0 for t in args.temperatures):
        parser.error("--temperatures must be > 0")
    rows = measure(args.matches, args.deals, args.seed, args.temperatures, args.history)
    print(
        f"2-player standard, heuristic against heuristic, {args.matches} matches, "
        f"{args.deals} deals per position, history={args.history}"
    )
    print(
        f"{'temperature':>12}{'positions':>11}{'ESS share':>11}{'p10':>7}"
        f"{'true-deal gap: median':>23}{'p10':>8}{'min':>9}{'true-place share':>18}"
    )
    for t, r in rows.items():
        if t == "uniform":
            print(f"{t:>12}{r['positions']:>11}{'':>11}{'':>7}{'':>23}{'':>8}{'':>9}", end="")
        else:
            print(
                f"{t:>12}{r['positions']:>11}{r['share_mean']:>11.3f}{r['share_p10']:>7.3f}"
                f"{r['gap_median']:>23.2f}{r['gap_p10']:>8.2f}{r['gap_min']:>9.2f}",
                end="",
            )
        print(f"{r['true_place']:>18.4f}")
    report = {"config": vars(args), "temperatures": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return report


if __name__ == "__main__":
    main()
