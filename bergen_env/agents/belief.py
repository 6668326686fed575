"""A belief over hidden tiles: how likely a sampled deal makes the other seats' moves of this hand.

PIMC deals the hidden tiles uniformly among the splits consistent with the public view. Seats
do not play at random, though: a seat that left a header on the table probably did not hold it.
:class:`BeliefModel` scores a sampled deal by the log-likelihood of the other seats' observed
plays under an opponent model, a softmax with ``temperature`` over the
:class:`~bergen_env.agents.heuristic.HeuristicAgent`'s evaluation of every play the seat had.
A partner's plays (a seat of the observer's side) are scored with ``partner_temperature``
instead where it is given: a partner that plays unlike the heuristic (a searching one) is read
more loosely than the opponents.

Each past decision is rebuilt from the public moves alone: the ends, end doubles, line, hand
sizes, boneyard size, scores and every seat's voids at that moment (the observer's own included:
the mover saw them; :func:`~bergen_env.agents.sampling.public_voids`), and the seat's hand then,
which is its sampled hand now plus the tiles it played since. That hand is exact only after the
seat's last draw of the hand, or where every later draw of the seat was a single draw whose tile
it then played (a drawn tile's identity is hidden otherwise); only those plays are scored, and
the forced opening play is skipped too. Everything but the sampled hands comes from the view.
The scores are rebuilt backwards from the current ones (the view does not hold those the hand
began with); where an end cap may have cut a header near the target, more than one earlier score
fits, and the one with the header uncut is taken.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.sampling import public_voids
from bergen_env.agents.scoring import cap_header, raw_play
from bergen_env.engine import PublicView
from bergen_env.rules import Rules
from bergen_env.tiles import CONTAINS, DOUBLE_ID, NUM_TILES


@dataclasses.dataclass
class _SeatView:
    """The fields of a :class:`PublicView` that :meth:`HeuristicAgent.evaluate` reads."""

    rules: Rules
    seat: int
    hand_counts: list[int]
    unseen_counts: list[int]
    ends: tuple[int, int]
    end_doubles: tuple[bool, bool]
    hand_sizes: tuple[int, ...]
    boneyard_size: int
    drawable: int
    scores: tuple[int, ...]
    voids: tuple[int, ...]

    @property
    def side(self) -> int:
        return self.rules.side_of[self.seat]


@dataclasses.dataclass
class _Decision:
    """A scored past play: who, what, and the public state it was made in."""

    index: int
    seat: int
    action: int
    temperature: float  # of the softmax this seat's plays are scored with
    played_since: list[int]  # per tile: copies the seat played from this move on (inclusive)
    line_counts: list[int]  # per tile, before the move
    view: _SeatView  # hand_counts and unseen_counts are filled per deal


def _scores_before(rules: Rules, after: list[int], side: int, raw: int) -> None:
    """Undo a header of ``raw`` points (before caps) by ``side`` in ``after``, in place."""
    if not raw:
        return
    for capped in sorted({raw, min(raw, 2), 1}, reverse=True):
        before = after[side] - capped
        if cap_header(raw, rules.target - before, rules.end_caps) == capped:
            after[side] = before
            return
    after[side] -= raw  # unreachable for a consistent view; keep the best guess


class BeliefModel:
    """Log-likelihood of the other seats' observed plays of this hand given a sampled deal."""

    def __init__(
        self,
        view: PublicView,
        temperature: float,
        model: HeuristicAgent | None = None,
        partner_temperature: float | None = None,
    ) -> None:
        if not temperature > 0:
            raise ValueError(f"parameter 'temperature' must be > 0, got {temperature!r}")
        if partner_temperature is not None and not partner_temperature > 0:
            raise ValueError(
                f"parameter 'partner_temperature' must be > 0, got {partner_temperature!r}"
            )
        self.view = view
        self.temperature = float(temperature)
        self.partner_temperature = (
            self.temperature if partner_temperature is None else float(partner_temperature)
        )
        self.model = model if model is not None else HeuristicAgent()
        self.decisions = self._decisions(view, self.temperature, self.partner_temperature)
        self._cache: dict[tuple[int, tuple[int, ...]], float] = {}

    @staticmethod
    def _decisions(view: PublicView, temperature: float, partner: float) -> list[_Decision]:
        rules = view.rules
        n = rules.num_players
        moves = view.moves
        if rules.voluntary_draw or len(moves) < 2:
            return []
        # A single draw followed by a play of the same seat: the tile played is the one drawn.
        single = [
            a == DRAW
            and i + 1 < len(moves)
            and moves[i + 1][0] == seat
            and moves[i + 1][1] not in (DRAW, PASS)
            and not (i and moves[i - 1] == (seat, DRAW))
            for i, (seat, a) in enumerate(moves)
        ]
        # Public state before each move, walking forward; scores are rebuilt backwards.
        ends: tuple[int, int] | None = None
        flags = (False, False)
        line = [0] * NUM_TILES
        states = []
        raws = []
        for _, a in moves:
            states.append((ends, flags, list(line)))
            if a in (DRAW, PASS):
                raws.append(0)
                continue
            raw, ends, flags = raw_play(a, ends, flags, rules.play_scoring)
            raws.append(raw if states[-1][0] is not None else 0)  # the opening scores nothing
            for t in _tiles_of(a):
                line[t] += 1
        scores = list(view.scores)
        scores_at = [()] * len(moves)
        for i in range(len(moves) - 1, -1, -1):
            _scores_before(rules, scores, rules.side_of[moves[i][0]], raws[i])
            scores_at[i] = tuple(scores)
        sizes = list(view.hand_sizes)
        boneyard = view.boneyard_size
        played_since = [[0] * NUM_TILES for _ in range(n)]
        exact = [True] * n  # the seat's hand before this move is its hand now plus plays since
        out: list[_Decision] = []
        for i in range(len(moves) - 1, 0, -1):
            seat, a = moves[i]
            if a == DRAW:
                sizes[seat] -= 1
                boneyard += 1
                exact[seat] = exact[seat] and single[i]
                continue
            if a == PASS:
                continue
            drawn = single[i - 1]
            for t in _tiles_of(a):
                if not drawn:
                    played_since[seat][t] += 1
                sizes[seat] += 1
            if seat == view.seat or not exact[seat] or drawn:
                continue
            ends_i, flags_i, _ = states[i]
            voids = public_voids(rules, moves[:i])
            seat_view = _SeatView(
                rules=rules,
                seat=seat,
                hand_counts=[],
                unseen_counts=[],
                ends=ends_i,
                end_doubles=flags_i,
                hand_sizes=tuple(sizes),
                boneyard_size=boneyard,
                drawable=max(0, boneyard - rules.reserve),
                scores=scores_at[i],
                voids=voids,
            )
            mine = rules.side_of[seat] == rules.side_of[view.seat]
            out.append(
                _Decision(
                    i,
                    seat,
                    a,
                    partner if mine else temperature,
                    list(played_since[seat]),
                    states[i][2],
                    seat_view,
                )
            )
        out.reverse()
        return out

    def log_weight(self, hands: Sequence[Sequence[int]]) -> float:
        """Sum over the scored plays of log P(play | the seat's hand in ``hands``)."""
        total = 0.0
        sets = self.view.rules.sets
        for d in self.decisions:
            counts = list(d.played_since)
            for t in hands[d.seat]:
                counts[t] += 1
            key = (d.index, tuple(counts))
            value = self._cache.get(key)
            if value is None:
                value = self._log_prob(d, counts, sets)
                self._cache[key] = value
            total += value
        return total

    def _log_prob(self, d: _Decision, counts: list[int], sets: int) -> float:
        v = d.view
        e0, e1 = v.ends
        plays = []
        for t in range(NUM_TILES):
            if counts[t]:
                if CONTAINS[e0] >> t & 1:
                    plays.append(2 * t)
                if CONTAINS[e1] >> t & 1:
                    plays.append(2 * t + 1)
        if sets == 2 and e0 == e1 and counts[DOUBLE_ID[e0]] >= 2:
            plays.append(DOUBLE_PLAY + e0)
        if d.action not in plays:
            return -math.inf  # the deal contradicts the move (cannot happen for sampled deals)
        if len(plays) == 1:
            return 0.0
        line = d.line_counts
        view = dataclasses.replace(
            v, hand_counts=counts, unseen_counts=[sets - c - k for c, k in zip(counts, line)]
        )
        scaled = [self.model.evaluate(view, a) / d.temperature for a in plays]
        top = max(scaled)
        total = 0.0
        for x in scaled:  # a plain running sum, as the compiled weights add (not ``sum``)
            total += math.exp(x - top)
        return scaled[plays.index(d.action)] - (top + math.log(total))


def resample(log_weights: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray | None:
    """Systematic resampling: ``count`` indices into ``log_weights`` in proportion to their
    weights (one uniform draw from ``rng``), or None (no draw) when every weight is zero."""
    top = log_weights.max()
    if not np.isfinite(top):
        return None
    w = np.exp(log_weights - top)
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    points = (rng.random() + np.arange(count)) / count
    return np.searchsorted(cdf, points, side="right")


def _tiles_of(action: int) -> tuple[int, ...]:
    if action >= DOUBLE_PLAY:
        t = DOUBLE_ID[action - DOUBLE_PLAY]
        return (t, t)
    return (action >> 1,)
