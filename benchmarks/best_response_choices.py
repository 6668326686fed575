"""The best response's choices against a policy in the full game, beside plain search's.

    python -m benchmarks.best_response_choices --policy policy:policies/standard_2p.safetensors
        [--rules standard] [--matches 12] [--every 3] [--samples 30] [--responder-samples N]
        [--seed 5] [--json PATH]

Positions: every ``--every``-th real choice of each of ``--matches`` two-player matches of the
policy against itself (it plays its most probable action), once the other seat has played a tile
after the lead of the hand. At each, three players choose from the same public view: the best
response to the policy (:class:`~bergen_env.agents.best_response.BestResponseAgent`,
``--responder-samples`` deals a decision, by default ``--samples``; the heuristic in its own
playouts), plain search with ``--samples`` deals and the same playouts
(``search:samples=N,rollout=heuristic``) and the heuristic. Reported:

- how often they choose alike;
- each choice's value on the true deal, the mover then playing the heuristic and the other seat
  the policy to the end of the hand (search's leaf value: the match-win chance after the hand,
  in its units), the best response's minus plain search's and minus the heuristic's, with paired
  95% t-intervals over the positions;
- the share of the deals the best response searches that explain the policy's plays
  (:func:`explains`), beside the same best response with the uniform distribution as its model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from bergen_env.actions import DRAW, PASS
from bergen_env.agents import BestResponseAgent, SearchAgent, make_agent
from bergen_env.agents.base import Agent
from bergen_env.agents.match_value import win_table
from bergen_env.agents.search import leaf_value
from bergen_env.atomic_files import write_text
from bergen_env.engine import BergenState, PublicView
from bergen_env.rules import Rules
from bergen_env.stats import t_interval
from bergen_env.tiles import NUM_TILES


def top(policy: Agent, view: PublicView) -> int:
    """The policy's most probable action from ``view`` (what a point mass plays)."""
    p = policy.action_probabilities(view)
    return view.legal_actions[int(np.argmax(p))]


def self_play(policy: Agent, rules: Rules, seeds: Iterable[int]) -> Iterator[BergenState]:
    """Matches of ``policy`` against itself (its most probable actions), one per seed: a copy of
    the state before each move."""
    for seed in seeds:
        state = BergenState(rules, seed=seed)
        while not state.terminal:
            yield state.clone()
            legal = state.legal_actions()
            view = state.public_view(state.current_player)
            state.apply_action(legal[0] if len(legal) == 1 else top(policy, view))


def positions(
    states: Iterable[BergenState], every: int
) -> list[tuple[BergenState, list[BergenState]]]:
    """At every ``every``-th real choice of a match made once another seat has played a tile
    after the lead of the hand: the state and the states before each move of the hand so far."""
    out: list[tuple[BergenState, list[BergenState]]] = []
    before: list[BergenState] = []
    choices = 0
    for state in states:
        if not state.moves:  # a hand begins
            before = []
            choices = 0 if state.hand_number == 0 else choices
        before.append(state)
        if len(state.legal_actions()) > 1:
            choices += 1
            seat = state.current_player
            other_played = any(s != seat and a < DRAW for s, a in state.moves[1:])
            if choices % every == 0 and other_played:
                out.append((state, list(before)))
    return out


def explains(
    before: Sequence[BergenState], view: PublicView, theirs: Sequence[int], policy: Agent
) -> bool | None:
    """Whether ``policy`` (its most probable actions), holding ``theirs`` now in the other seat
    of a two-player hand, makes each of its plays of the hand whose hand then is certain (those
    after its last draw), each a real choice; None if it made no such play. Each play's state is
    rebuilt by the engine with that hand (``before``: the states before each move of the hand),
    independently of the likelihood the best response uses. The lead must be forced."""
    other = 1 - view.seat
    held = [0] * NUM_TILES
    for t in theirs:
        held[t] += 1
    checked = False
    for i in range(len(view.moves) - 1, 0, -1):
        seat, action = view.moves[i]
        if seat != other or action == PASS:
            continue
        if action == DRAW:
            break
        held[action >> 1] += 1
        past = before[i]
        mine = past.hand_tiles(view.seat)
        hand = [t for t in range(NUM_TILES) for _ in range(held[t])]
        rest = [
            t for t in range(NUM_TILES) if not held[t] and not past.line_counts[t] and t not in mine
        ]
        hands = [mine, hand] if view.seat == 0 else [hand, mine]
        state = BergenState.from_view(
            past.public_view(other), hands, rest, np.random.default_rng(0)
        )
        seen = state.public_view(other)
        if len(seen.legal_actions) < 2:
            continue
        checked = True
        if top(policy, seen) != action:
            return False
    return checked if checked else None


class RecordingResponse(BestResponseAgent):
    """A two-player best response that records, per playout, its view and the other seat's hand
    searched (``searched``: ``(view, tiles)``)."""

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self.searched: list[tuple[PublicView, list[int]]] = []

    def act(self, observation, action_mask, view):
        self._now = view
        return super().act(observation, action_mask, view)

    def playout_values(self, root, legal):
        other = 1 - self._now.seat
        tiles = [t for t, n in enumerate(root.hands[other]) for _ in range(n)]
        self.searched.append((self._now, tiles))
        return super().playout_values(root, legal)


def true_value(state: BergenState, action: int, own: Agent, policy: Agent) -> float:
    """``action``'s value on the true deal of ``state`` for the mover: then ``own`` moves the
    mover and ``policy`` (its most probable actions) the other seat to the end of the hand."""
    s, hand = state.clone(rng=np.random.default_rng(0)), state.hand_number
    me = s.current_player
    s.apply_action(action)
    while not s.terminal and s.hand_number == hand:
        legal = s.legal_actions()
        view = s.public_view(s.current_player)
        if len(legal) == 1:
            s.apply_action(legal[0])
        else:
            s.apply_action(
                own.act(None, None, view) if s.current_player == me else top(policy, view)
            )
    return leaf_value(s, s.rules.side_of[me], win_table(s.rules))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.best_response_choices", description=__doc__
    )
    p.add_argument(
        "--policy", required=True, help="a two-player policy that states its distribution"
    )
    p.add_argument("--rules", default="standard")
    p.add_argument("--matches", type=int, default=12)
    p.add_argument("--every", type=int, default=3, help="every n-th real choice of a match")
    p.add_argument("--samples", type=int, default=30, help="plain search's deals a decision")
    p.add_argument("--responder-samples", type=int, help="the best response's (default: --samples)")
    p.add_argument("--seed", type=int, default=5, help="the searches' seed")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    responder_samples = args.responder_samples or args.samples
    rules = Rules.preset(args.rules)
    if rules.num_players != 2 or rules.free_lead:
        raise SystemExit("this benchmark reads two-player rules with a forced lead")
    policy = make_agent(args.policy)
    policy.reset(rules, 0, np.random.default_rng(0))
    heuristic = make_agent("heuristic")
    heuristic.reset(rules, 0, np.random.default_rng(0))
    start = time.process_time()
    found = positions(self_play(policy, rules, range(args.matches)), args.every)
    choices, values = [], []
    explained: dict[str, list[bool]] = {"policy": [], "uniform": []}
    for k, (state, before) in enumerate(found):
        view = state.public_view(state.current_player)
        rng = (args.seed, k)
        picks = []
        for model in ("policy", "uniform"):
            responder = RecordingResponse(
                policy=args.policy if model == "policy" else "random", samples=responder_samples
            )
            responder.reset(rules, view.seat, np.random.default_rng(rng))
            action = responder.act(None, None, view)
            if model == "policy":
                picks.append(action)
            for _, theirs in responder.searched:
                verdict = explains(before, view, theirs, policy)
                if verdict is not None:
                    explained[model].append(verdict)
        search = SearchAgent(samples=args.samples, rollout="heuristic")
        search.reset(rules, view.seat, np.random.default_rng(rng))
        picks += [search.act(None, None, view), heuristic.act(None, None, view)]
        choices.append(picks)
        values.append([true_value(state, a, heuristic, policy) for a in picks])
    cpu = time.process_time() - start
    c, v = np.array(choices), np.array(values)
    result = {
        "policy": args.policy,
        "rules": args.rules,
        "positions": len(found),
        "samples": args.samples,
        "responder_samples": responder_samples,
        "agree_best_response_search": float(np.mean(c[:, 0] == c[:, 1])),
        "agree_best_response_heuristic": float(np.mean(c[:, 0] == c[:, 2])),
        "agree_search_heuristic": float(np.mean(c[:, 1] == c[:, 2])),
        "value_best_response_minus_search": t_interval(v[:, 0] - v[:, 1]),
        "value_best_response_minus_heuristic": t_interval(v[:, 0] - v[:, 2]),
        "explained": {k: [float(np.mean(x)), len(x)] for k, x in explained.items()},
        "cpu_seconds": cpu,
        "command": [
            "python",
            "-m",
            "benchmarks.best_response_choices",
            *(sys.argv[1:] if argv is None else argv),
        ],
    }
    print(json.dumps(result, indent=1))
    if args.json:
        write_text(args.json, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
