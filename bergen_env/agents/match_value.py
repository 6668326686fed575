"""What a score line is worth: the chance to win the match from it, for two sides.

A point is not worth the same everywhere: at 13-12 to 15 in standard Bergen a header makes 14-12
(capped to 1 point) and the leader's chance rises from about 0.52 to 0.76, while at 0-0 the same
2 points move it by 0.1. Search that ranks the end of a hand by the score margin plays the end of
a match badly; :func:`win_table` gives it the match-win probability instead.

The table is estimated once per rule set (and cached per process): ``HANDS`` fresh hands are
played by the heuristic agent in every seat and recorded as their scoring events in order
(headers before end caps, then the domino/blocked points and leftover penalties of the hand's end).
Replaying those events from every score pair, with end caps applied and the match ending the
moment a side reaches the target, gives the transition of each score pair over one hand; each
hand is used twice, once with the sides swapped, so the table is symmetric. The probabilities
then follow by value iteration (hands that score nothing, or lower scores under leftover
penalties, make the chain cyclic). Scores below ``-target`` are counted as ``-target``.
Only two sides (two players, or four in partnerships) are covered.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.scoring import cap_header
from bergen_env.engine import BergenState
from bergen_env.rules import Rules

#: Sampled hands per table (each is also used mirrored).
HANDS = 1000
#: Seed of the sampled hands: the table of a rule set is the same in every process.
SEED = 20261129
#: Value iteration stops when no probability moves by more than this.
TOLERANCE = 1e-9
MAX_ITERATIONS = 10_000

#: One scoring event: (side, points, is_header). Header points are before end caps.
Event = tuple[int, int, bool]


@dataclass(frozen=True)
class WinTable:
    """``table[a - low, b - low]``: the chance that a side with score ``a`` beats the side with
    ``b``, both below the target, at the start of a hand."""

    low: int
    target: int
    table: np.ndarray

    def __call__(self, own: int, other: int) -> float:
        low = self.low
        return float(self.table[max(own, low) - low, max(other, low) - low])


def hand_events(state: BergenState) -> list[Event]:
    """Play the current hand of ``state`` with the heuristic in every seat; its scoring events."""
    agent = HeuristicAgent()
    hand = state.hand_number
    sides = range(state.num_sides)
    events: list[Event] = []
    while not state.terminal and state.hand_number == hand:
        legal = state.legal_actions()
        if len(legal) == 1:
            a = legal[0]
        else:
            a = agent.act(None, None, state.public_view(state.current_player))
        before = state.scores[:]
        ended = len(state.hand_results)
        state._apply(a)
        over = len(state.hand_results) > ended
        end = state.hand_results[-1].points if over else (0,) * len(before)
        for side in sides:
            header = state.scores[side] - before[side] - end[side]
            if header:
                events.append((side, header, True))
        events.extend((side, end[side], False) for side in sides if end[side])
    return events


@lru_cache(maxsize=32)
def win_table(rules: Rules) -> WinTable:
    """The match-win table of a two-side rule set (see the module docstring)."""
    if rules.num_sides != 2:
        raise ValueError(
            f"win_table covers two sides only; these rules have {rules.num_sides} sides"
        )
    # Sampled at the score 0-0 of a target no side can reach: no end caps, no match end.
    free = rules.replace(target=10_000)
    rng = np.random.default_rng(SEED)
    samples: list[list[Event]] = []
    for _ in range(HANDS):
        events = hand_events(BergenState(free, seed=rng))
        samples.append(events)
        samples.append([(1 - side, points, header) for side, points, header in events])
    target = rules.target
    low = -target if rules.leftover_penalty else 0
    size = target - low
    grid_a, grid_b = np.meshgrid(np.arange(low, target), np.arange(low, target), indexing="ij")
    grid_a, grid_b = grid_a.ravel(), grid_b.ravel()
    states = size * size
    # A header's value after end caps, by its raw points and the need (which matters up to 4).
    capped = {
        points: np.array([cap_header(points, need, rules.end_caps) for need in range(5)])
        for points in {points for events in samples for _, points, header in events if header}
    }
    origin = np.arange(states)
    transitions = np.zeros(states * states)  # row: from, column: to (summed over hands)
    wins = np.zeros(states)  # hands in which side A (the row's first score) wins the match
    for events in samples:
        scores = [grid_a.copy(), grid_b.copy()]
        winner = np.full(states, -1)
        for side, points, header in events:
            own = scores[side]
            open_ = winner < 0
            gained = capped[points][np.clip(target - own, 0, 4)] if header else points
            own += np.where(open_, gained, 0)
            winner[open_ & (own >= target)] = side
        wins += winner == 0
        going = winner < 0
        nxt = (np.maximum(scores[0], low) - low) * size + np.maximum(scores[1], low) - low
        np.add.at(transitions, origin[going] * states + nxt[going], 1.0)
    transitions = transitions.reshape(states, states) / len(samples)
    wins /= len(samples)
    value = np.full(states, 0.5)
    for _ in range(MAX_ITERATIONS):
        new = wins + transitions @ value
        if np.max(np.abs(new - value)) < TOLERANCE:
            value = new
            break
        value = new
    return WinTable(low=low, target=target, table=value.reshape(size, size))
