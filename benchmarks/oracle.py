"""What seeing every hand is worth: an *oracle* search that cheats, against a fair agent.

    python -m benchmarks.oracle [--opponent random] [--matches 1000] [--seed 0] [--rollout greedy]
                                [--sees all|hands] [--samples 100]

A diagnostic, not an agent. With ``--sees all`` the oracle evaluates each legal action by one
playout on a clone of the **true** state (the opponent's hand and the boneyard order included)
with the search agent's rollout policy and leaf values, and plays the best. With ``--sees hands``
it knows the opponent's hand but not the boneyard order: each action's value is the mean over
``--samples`` shuffles of the undrawn tiles (search with perfect inference about the hands).
2-player standard Bergen, duplicate format (each deal sequence played twice, seats swapped). The
win rates bound what inference about the hidden tiles can add to the public-information agents
of the ladder, and show how far the luck of the deal caps any agent's win rate against a given
opponent.
"""

from __future__ import annotations

import argparse

import numpy as np
from tqdm import tqdm

from bergen_env.agents.base import make_agent
from bergen_env.agents.greedy import greedy_key
from bergen_env.agents.search import SearchAgent
from bergen_env.engine import BergenState
from bergen_env.rules import Rules
from bergen_env.stats import wilson_interval


def oracle_action(search: SearchAgent, state: BergenState, samples: int | None = None) -> int:
    """The action with the best playout value from the true state (ties: the greedy order).

    With ``samples``, the value is the mean over that many shuffles of the undrawn tiles (the
    hands stay true).
    """
    legal = state.legal_actions()
    if len(legal) == 1:
        return legal[0]
    view = state.public_view(state.current_player)
    if samples is None:
        values = search.playout_values(state, legal)
    else:
        rng = search.rng
        hands = [state.hand_tiles(seat) for seat in range(state.num_players)]
        undrawn = sorted(state.boneyard[state.bone_pos :])  # its order must not matter
        values = [0.0] * len(legal)
        for _ in range(samples):
            boneyard = [undrawn[i] for i in rng.permutation(len(undrawn))]
            root = BergenState.from_view(view, hands, boneyard, rng)
            for i, v in enumerate(search.playout_values(root, legal)):
                values[i] += v
    best = max(range(len(legal)), key=lambda i: (values[i], greedy_key(view, legal[i])))
    return legal[best]


def play(
    rules: Rules,
    oracle_seat: int,
    opponent: str,
    deal_seed: int,
    agent_seed: int,
    rollout: str,
    samples: int | None = None,
) -> bool:
    """One match; True when the oracle's side wins."""
    state = BergenState(rules, seed=np.random.default_rng(deal_seed))
    search = SearchAgent(samples=1, rollout=rollout)
    other = make_agent(opponent)
    rngs = np.random.default_rng(agent_seed).spawn(2)
    search.reset(rules, oracle_seat, rngs[0])
    other.reset(rules, 1 - oracle_seat, rngs[1])
    while not state.terminal:
        seat = state.current_player
        if seat == oracle_seat:
            a = oracle_action(search, state, samples)
        else:
            a = other.act(np.zeros(0), state.legal_mask(), state.public_view(seat))
        state.apply_unchecked(a)
    return state.winner == rules.side_of[oracle_seat]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.oracle", description=__doc__)
    p.add_argument("--opponent", default="random", help="agent string of the fair opponent")
    p.add_argument("--matches", type=int, default=1000, help="matches (an even number)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rollout", default="greedy", choices=["greedy", "public", "random"])
    p.add_argument(
        "--sees",
        default="all",
        choices=["all", "hands"],
        help="all: every hand and the boneyard order; hands: every hand, not the boneyard",
    )
    p.add_argument("--samples", type=int, default=100, help="boneyard shuffles with --sees hands")
    args = p.parse_args(argv)
    if args.matches < 2 or args.matches % 2:
        p.error("--matches must be an even number >= 2")
    if args.samples < 1:
        p.error("--samples must be >= 1")
    samples = args.samples if args.sees == "hands" else None
    make_agent(args.opponent)  # a bad agent string fails now
    rules = Rules.preset("standard")
    seeds = np.random.SeedSequence(args.seed).generate_state(args.matches)
    wins = 0
    for g in tqdm(range(args.matches // 2), desc="deal groups", unit="group"):
        for seat in (0, 1):
            wins += play(
                rules,
                seat,
                args.opponent,
                int(seeds[2 * g]),
                int(seeds[2 * g + 1]),
                args.rollout,
                samples,
            )
    low, high = wilson_interval(wins, args.matches)
    print(
        f"oracle search (sees {'every hand and the boneyard' if samples is None else 'every hand'},"
        f" rollout={args.rollout}) vs {args.opponent}: "
        f"{wins / args.matches:.3f} [{low:.3f}, {high:.3f}] over {args.matches} duplicate matches"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
