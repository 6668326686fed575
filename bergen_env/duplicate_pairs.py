"""One pair of agents' duplicate matches, reduced to what a rating needs: outcomes per match.

Two sides (two players, or four in partnerships: an agent and a copy of it against the other
and its copy) play one duplicate tournament (:func:`bergen_env.arena.run_tournament`); three or
four individual players play two lineups of half the matches each on the same deals: the first
agent alone against copies of the second, then the other way round. Each match gives the first
agent's half-points over the match's *comparisons*, each of its seats against each of the
other's (one with two sides, two with three individual players, three with four): ``2`` when
it placed ahead (:func:`bergen_env.arena.placed_ahead`), ``1`` level, ``0`` behind, stored as
one character a match in (deal group, seating) order. The deal group is the bootstrap's unit
(:func:`bergen_env.ratings.fit_with_intervals`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bergen_env.arena import placed_ahead, run_tournament, seat_lineups
from bergen_env.ratings import PairPoints
from bergen_env.rules import Rules

#: The first agent's half-points in one match, as stored (at most 2 for each of 3 comparisons).
OUTCOME_CHARS = "0123456"


@dataclass(frozen=True)
class PairOutcome:
    """What one pair's duplicate matches produced, from the first agent's side."""

    outcomes: str  # per match, the first agent's half-points over its comparisons
    # matches won by each agent in the lineup where it sits alone against copies of the other
    # (with two sides: every match); a match without a winner counts for none
    wins: tuple[int, int]
    rotations: int  # seatings per deal group
    comparisons: int  # per match
    lineups: int  # 2: each agent sits alone against copies of the other in half the matches

    @property
    def matches(self) -> int:
        return len(self.outcomes)

    @property
    def score(self) -> float:
        """The first agent's share of the comparisons (a level one counts half)."""
        return sum(int(c) for c in self.outcomes) / (2 * self.comparisons * self.matches)

    def group_points(self) -> np.ndarray:
        """The first agent's half-points per deal group."""
        return group_points(self.outcomes, self.rotations)

    def points(self, i: int, j: int) -> PairPoints:
        """The pair as the rating fit reads it, the first agent being ``i``."""
        return PairPoints(i, j, self.group_points(), self.rotations * self.comparisons)


def group_points(outcomes: str, rotations: int) -> np.ndarray:
    """Half-points per deal group from the per-match characters (``rotations`` a group)."""
    points = np.frombuffer(outcomes.encode("ascii"), dtype=np.uint8) - ord("0")
    return points.reshape(-1, rotations).sum(axis=1).astype(np.int64)


def pair_lineups(a: str, b: str, rules: Rules) -> list[list[str]]:
    """The agents of each tournament a pair plays: ``[a, b]`` with two sides; with three or four
    individual players, ``a`` alone against copies of ``b``, then ``b`` alone against ``a``'s."""
    if rules.num_players == 2 or rules.partnerships:
        return [[a, b]]
    others = rules.num_players - 1
    return [[a] + [b] * others, [b] + [a] * others]


def pair_shape(rules: Rules) -> tuple[int, int]:
    """``(seatings per deal group, lineups)`` of every pair under ``rules``."""
    shape = pair_lineups("a", "b", rules)
    return len(seat_lineups(len(shape[0]), rules)), len(shape)


def whole_groups(matches: int, rules: Rules) -> int:
    """``matches`` rounded up to whole deal groups in each lineup of a pair under ``rules``."""
    rotations, lineups = pair_shape(rules)
    return math.ceil(matches / (rotations * lineups)) * rotations * lineups


def play_pair_outcome(
    a: str,
    b: str,
    rules: Rules,
    matches: int,
    seed: int,
    workers: int = 1,
    backend: str = "processes",
) -> PairOutcome:
    """Play ``a`` against ``b`` (agent strings) in duplicate: :func:`pair_lineups`, the same
    deals (from ``seed``) in each, ``matches`` in all (whole deal groups in each lineup)."""
    side_of = rules.side_of
    lineups = pair_lineups(a, b, rules)
    outcomes: list[str] = []
    wins = [0, 0]
    comparisons = rotations = 0
    for k, agents in enumerate(lineups):
        result = run_tournament(
            agents,
            rules,
            matches=matches // len(lineups),
            seed=seed,
            workers=workers,
            backend=backend,
        )
        rotations = int(result.config["rotations"])
        mine = {i for i, spec in enumerate(agents) if spec == a}  # agent indices of a's seats
        for r in result.records:
            sides_a = sorted({side_of[s] for s, i in enumerate(r.lineup) if i in mine})
            sides_b = sorted({side_of[s] for s, i in enumerate(r.lineup) if i not in mine})
            comparisons = len(sides_a) * len(sides_b)
            half = sum(2 * placed_ahead(r, x, y) for x in sides_a for y in sides_b)
            outcomes.append(OUTCOME_CHARS[int(half)])
            if k == 0:  # a alone (or, with two sides, every match)
                wins[0] += r.winner in sides_a
            if k == len(lineups) - 1:
                wins[1] += r.winner in sides_b
    return PairOutcome("".join(outcomes), (wins[0], wins[1]), rotations, comparisons, len(lineups))
