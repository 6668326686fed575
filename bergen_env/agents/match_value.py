"""What a score line is worth: the chance to win the match from it.

A point is not worth the same everywhere: at 13-12 to 15 in standard Bergen a header makes 14-12
(capped to 1 point) and the leader's chance rises from about 0.52 to 0.76, while at 0-0 the same
2 points move it by 0.1. Search that ranks the end of a hand by the score margin plays the end of
a match badly; :func:`win_table` gives it the match-win probability instead.

The table is estimated once per rule set (and cached per process): ``HANDS`` fresh hands are
played by the heuristic agent in every seat and recorded as their scoring events in order
(headers before end caps, then the domino/blocked points and leftover penalties of the hand's end).
Replaying those events from every combination of the sides' scores, with end caps applied and
the match ending the moment a side reaches the target, gives the transition of each score
combination over one hand; each hand is used once per rotation of the sides (turn order kept:
with two sides, once as played and once mirrored), so no side is favoured. The probabilities then
follow by value iteration over the sparse transitions (hands that score nothing, or lower scores
under leftover penalties, make the chain cyclic). Scores below ``-target`` are counted as
``-target``. Any number of sides is covered up to ``MAX_STATES`` score combinations (two sides
under every preset, Fives' 61 included; three or four individual players under the standard
preset). The events of Fives are its counts during play, then the hand-end award. A single-hand
match (Draw) has no table: the hand decides it. :func:`table_from_events` builds a table from
any recorded hands (``benchmarks/win_table_calibration.py`` records those of real matches).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.engine import BergenState
from bergen_env.errors import InvalidOptionError
from bergen_env.rules import Rules
from bergen_env.scoring import cap_header

#: Sampled hands per table (each is also used mirrored).
HANDS = 1000
#: Seed of the sampled hands: the table of a rule set is the same in every process.
SEED = 20261129
#: Value iteration stops when no probability moves by more than this.
TOLERANCE = 1e-9
MAX_ITERATIONS = 10_000
#: Tables with more score combinations are not built (search's ``value=auto`` uses the margin).
MAX_STATES = 20_000
#: Sampled hands whose transitions are merged at a time (bounds the memory of the build).
CHUNK = 200

#: One scoring event: (side, points, is_header). Header points are before end caps.
Event = tuple[int, int, bool]


@dataclass(frozen=True)
class WinTable:
    """``table[a - low, b - low, ...]``: the chance that the side with score ``a`` wins the match
    against the sides with ``b, ...`` (the sides after it in turn order), every score below the
    target, at the start of a hand."""

    low: int
    target: int
    table: np.ndarray

    def __call__(self, own: int, *others: int) -> float:
        if len(others) != self.table.ndim - 1:
            raise ValueError(
                f"this table has {self.table.ndim} sides: give the own score and "
                f"{self.table.ndim - 1} other score(s), got {len(others)}"
            )
        low = self.low
        return float(self.table[(max(own, low) - low, *(max(x, low) - low for x in others))])

    def of_side(self, scores: Sequence[int], side: int) -> float:
        """The chance of ``side`` given every side's score (the others read in turn order)."""
        n = len(scores)
        return self(scores[side], *(scores[(side + k) % n] for k in range(1, n)))


def table_low(rules: Rules) -> int:
    """The lowest score a table of ``rules`` tells apart (below zero under leftover penalties)."""
    return -rules.target if rules.leftover_penalty else 0


def table_states(rules: Rules) -> int:
    """The score combinations of the table of ``rules`` (it is built up to ``MAX_STATES``)."""
    return (rules.target - table_low(rules)) ** rules.num_sides


def has_table(rules: Rules) -> bool:
    """Whether :func:`win_table` covers ``rules``: a match of hands to a target, small enough.

    A single-hand match (Draw) has none: a playout reaches its end, and the winner is known.
    """
    return rules.has_target and not rules.single_hand and table_states(rules) <= MAX_STATES


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
        state.apply_unchecked(a)
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
    """The match-win table of a rule set (see the module docstring)."""
    _check_rules(rules)
    # Sampled at the score 0-0 of a target no side can reach: no end caps, no match end.
    free = rules.replace(target=10_000)
    rng = np.random.default_rng(SEED)
    hands = [hand_events(BergenState(free, seed=rng)) for _ in range(HANDS)]
    return table_from_events(rules, every_rotation(hands, rules.num_sides))


def reward_table(rules: Rules) -> WinTable:
    """:func:`win_table` for an env's ``reward="win"``: rules without a table are an
    :class:`~bergen_env.errors.InvalidOptionError` naming the option."""
    try:
        return win_table(rules)
    except ValueError as exc:
        raise InvalidOptionError(f"option reward='win' needs a match-win table: {exc}") from None


def every_rotation(hands: Sequence[Sequence[Event]], sides: int) -> list[list[Event]]:
    """Each hand's events once per rotation of the ``sides`` (turn order kept), hand by hand:
    hands recorded with every side alike, so a table of them favours none."""
    return [
        [((side + shift) % sides, points, h) for side, points, h in events]
        for events in hands
        for shift in range(sides)
    ]


def _check_rules(rules: Rules) -> None:
    """A clear error for rules without a table (see :func:`has_table`)."""
    if not rules.has_target or rules.single_hand:
        raise ValueError(
            f"win_table: a single-hand match or one without a target has no table "
            f"(single_hand={rules.single_hand}, target={rules.target})"
        )
    states = table_states(rules)
    if states > MAX_STATES:
        raise ValueError(
            f"win_table: {rules.num_sides} sides scoring {table_low(rules)}..{rules.target - 1} "
            f"make {states} score combinations, more than MAX_STATES={MAX_STATES}"
        )


def table_from_events(rules: Rules, samples: Sequence[Sequence[Event]]) -> WinTable:
    """The match-win table of side 0 when every hand is one of ``samples``, equally likely.

    Each sample is one hand's scoring events in order (as :func:`hand_events` records them, the
    sides numbered in turn order from the table's own side); the table is side 0's chance to
    win from every score combination at the start of a hand. :func:`win_table` gives it each
    hand once per rotation of the sides, so no side is favoured; hands recorded with a
    stronger player as side 0 give that player's chances instead.
    """
    _check_rules(rules)
    if not samples:
        raise ValueError("table_from_events: no hands given")
    sides = rules.num_sides
    target = rules.target
    low = table_low(rules)
    size = target - low
    states = table_states(rules)
    for events in samples:
        for side, points, _ in events:
            if not 0 <= side < sides:
                raise ValueError(
                    f"table_from_events: event ({side}, {points}) names side {side}; "
                    f"these rules have sides 0..{sides - 1}"
                )
    start = np.indices((size,) * sides).reshape(sides, -1) + low
    # A header's value after end caps, by its raw points and the need (which matters up to 4).
    capped = {
        points: np.array([cap_header(points, need, rules.end_caps) for need in range(5)])
        for points in {points for events in samples for _, points, header in events if header}
    }
    origin = np.arange(states, dtype=np.int64)
    wins = np.zeros(states)  # hands in which side 0 (the first score) wins the match
    merged: list[tuple[np.ndarray, np.ndarray]] = []  # (from * states + to, hands) per chunk
    codes: list[np.ndarray] = []
    for k, events in enumerate(samples):
        scores = [row.copy() for row in start]
        winner = np.full(states, -1)
        for side, points, header in events:
            own = scores[side]
            open_ = winner < 0
            gained = capped[points][np.clip(target - own, 0, 4)] if header else points
            own += np.where(open_, gained, 0)
            winner[open_ & (own >= target)] = side
        wins += winner == 0
        going = winner < 0
        nxt = np.ravel_multi_index(
            tuple(np.maximum(row[going], low) - low for row in scores), (size,) * sides
        )
        codes.append(origin[going] * states + nxt)
        if len(codes) == CHUNK or k == len(samples) - 1:
            merged.append(np.unique(np.concatenate(codes), return_counts=True))
            codes = []
    pairs, inverse = np.unique(np.concatenate([c for c, _ in merged]), return_inverse=True)
    hands = np.bincount(inverse, weights=np.concatenate([n for _, n in merged]))
    rows, cols = pairs // states, pairs % states
    probs = hands / len(samples)
    wins /= len(samples)
    value = np.full(states, 1.0 / sides)
    for _ in range(MAX_ITERATIONS):
        new = wins + np.bincount(rows, weights=probs * value[cols], minlength=states)
        if np.max(np.abs(new - value)) < TOLERANCE:
            value = new
            break
        value = new
    return WinTable(low=low, target=target, table=value.reshape((size,) * sides))
