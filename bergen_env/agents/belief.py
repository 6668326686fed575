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
the mover saw them; :func:`~bergen_env.hidden_tiles.public_voids`), and the seat's hand then,
which is its sampled hand now plus the tiles it played since. That hand is exact only after the
seat's last draw of the hand, or where every later draw of the seat was a single draw whose tile
it then played (a drawn tile's identity is hidden otherwise); only those plays are scored. The
hand's opening play (the lead) is skipped, unless the model scores a lead that is a choice
(``scores_lead``, under the free leads ``highest_any`` and ``rotate``); the heuristic's softmax
does not. Everything but the sampled hands comes from the view.
The scores are rebuilt backwards from the current ones (the view does not hold those the hand
began with); where an end cap may have cut a header near the target, more than one earlier score
fits, and the one with the header uncut is taken.

With ``history="sampled"`` every play of the others is scored (after the lead, or from it).
Which of a seat's tiles it drew at which of its draws is then drawn per deal, by a walk back
through the seat's moves from its sampled hand: the tile played after a run of draws is the
run's last one; each other draw took one of the tiles the seat held right after it, chosen
uniformly among those that leave a history where the seat never held a tile that fit the ends
when it drew or passed, nor a double the lead shows nobody was dealt. The deal's weight is then
multiplied by the number of choices at each draw, which makes it an unbiased estimate of the
likelihood summed over every such history (each is equally likely before the plays are read). A
deal no history fits weighs 0.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.engine import PublicView
from bergen_env.hidden_tiles import beaten_lead_doubles, public_voids
from bergen_env.rules import Rules
from bergen_env.scoring import cap_header, play_result
from bergen_env.tiles import CONTAINS, DOUBLE_ID, NUM_TILES

#: What :class:`BeliefModel` scores: ``"exact"``, the plays made with a hand known exactly from
#: the deal; ``"sampled"``, every play, with the order of the seat's draws sampled per deal.
HISTORIES = ("exact", "sampled")
#: The events of a :class:`SeatHistory`: a play, a draw of the tile played next, another draw.
PLAY, KNOWN_DRAW, DRAW_SLOT = 0, 1, 2


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


@dataclasses.dataclass
class SeatHistory:
    """One other seat's moves of this hand, for the walk back of ``history="sampled"``.

    ``events`` run backwards (latest first), each ``(kind, move index, tile, second tile or -1,
    position in the model's decisions or -1)``: a :data:`PLAY` (both tiles of a double play), a
    :data:`KNOWN_DRAW` (the draw of the tile played next) or a :data:`DRAW_SLOT` (a draw whose
    tile the seat kept). ``voids`` holds ``(move index, tile mask)`` in move order: the tiles the
    seat did not hold at each of its draws and passes (those fitting the ends), and from move 0
    the doubles the lead shows nobody was dealt. ``futures`` holds ``(move index, deadline)`` of
    the tiles of its plays not made right after a draw, latest first.
    """

    seat: int
    events: list[tuple[int, int, int, int, int]]
    voids: list[tuple[int, int]]
    futures: list[tuple[int, int]]

    def deadline(self, tile: int, before: int | None = None) -> int:
        """The last move (before move ``before``, if given) at which the seat cannot have held
        ``tile``, or -1: a tile it held then (or holds now) was drawn after that move."""
        last = -1
        for index, mask in self.voids:
            if before is not None and index >= before:
                break
            if mask >> tile & 1:
                last = index
        return last


def seat_histories(view: PublicView, decisions: Sequence[_Decision]) -> list[SeatHistory]:
    """The :class:`SeatHistory` of every other seat, in seat order."""
    rules = view.rules
    moves = view.moves
    position = {d.index: k for k, d in enumerate(decisions)}
    ends: tuple[int, int] | None = None
    flags = (False, False)
    fitting = []  # per move, the tiles that fit the ends then
    for _, a in moves:
        fitting.append(0 if ends is None else CONTAINS[ends[0]] | CONTAINS[ends[1]])
        if a not in (DRAW, PASS):
            _, ends, flags = play_result(rules.play_scoring, a, ends, flags)
    lead = beaten_lead_doubles(rules, moves)
    out = []
    for p in range(rules.num_players):
        if p == view.seat:
            continue
        events = []
        voids = [(0, lead)] if lead else []
        for i, (seat, a) in enumerate(moves):
            if seat != p:
                continue
            if a == PASS:
                voids.append((i, fitting[i]))
            elif a == DRAW:
                voids.append((i, fitting[i]))
                nxt = moves[i + 1] if i + 1 < len(moves) else None
                if nxt is not None and nxt[0] == p and nxt[1] not in (DRAW, PASS):
                    events.append((KNOWN_DRAW, i, _tiles_of(nxt[1])[0], -1, -1))
                else:
                    events.append((DRAW_SLOT, i, -1, -1, -1))
            else:
                tiles = _tiles_of(a)
                second = tiles[1] if len(tiles) > 1 else -1
                events.append((PLAY, i, tiles[0], second, position.get(i, -1)))
        events.reverse()
        history = SeatHistory(p, events, voids, [])
        drawn = {index + 1 for kind, index, *_ in events if kind == KNOWN_DRAW}
        for kind, index, t0, t1, _ in events:
            if kind == PLAY and index not in drawn:
                for t in (t0,) if t1 < 0 else (t0, t1):
                    history.futures.append((index, history.deadline(t, index)))
        out.append(history)
    return out


def _scores_before(rules: Rules, after: list[int], side: int, raw: int) -> None:
    """Undo a header of ``raw`` points (before caps) by ``side`` in ``after``, in place. Without
    leftover penalties a score below zero is no candidate (scores never fall)."""
    if not raw:
        return
    low = -math.inf if rules.leftover_penalty else 0
    for capped in sorted({raw, min(raw, 2), 1}, reverse=True):
        before = after[side] - capped
        if before >= low and cap_header(raw, rules.target - before, rules.end_caps) == capped:
            after[side] = before
            return
    after[side] -= raw  # unreachable for a consistent view; keep the best guess


class BeliefModel:
    """Log-likelihood of the other seats' observed plays of this hand given a sampled deal."""

    #: Whether a free lead (:attr:`~bergen_env.rules.Rules.free_lead`, a choice) is scored too;
    #: a forced one never is.
    scores_lead = False

    def __init__(
        self,
        view: PublicView,
        temperature: float,
        model: HeuristicAgent | None = None,
        partner_temperature: float | None = None,
        history: str = "exact",
    ) -> None:
        if history not in HISTORIES:
            raise ValueError(f"parameter 'history' must be one of {HISTORIES}, got {history!r}")
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
        self.history = history
        sampled = history == "sampled"
        lead = self.scores_lead and view.rules.free_lead
        self.decisions = self._decisions(
            view, self.temperature, self.partner_temperature, sampled, lead
        )
        #: Per other seat, its moves for the walk back (``history="sampled"`` only).
        self.histories = seat_histories(view, self.decisions) if sampled and self.decisions else []
        self._cache: dict[tuple[int, tuple[int, ...]], float] = {}

    @staticmethod
    def _decisions(
        view: PublicView,
        temperature: float,
        partner: float,
        sampled: bool = False,
        lead: bool = False,
    ) -> list[_Decision]:
        rules = view.rules
        n = rules.num_players
        moves = view.moves
        first = 0 if lead else 1  # the first move scored: the lead, or the play after it
        if rules.voluntary_draw or len(moves) <= first:
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
            raw, ends, flags = play_result(rules.play_scoring, a, ends, flags)
            raws.append(raw)  # the opening's too: an opening double is a header
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
        for i in range(len(moves) - 1, first - 1, -1):
            seat, a = moves[i]
            if a == DRAW:
                sizes[seat] -= 1
                boneyard += 1
                exact[seat] = exact[seat] and single[i]
                continue
            if a == PASS:
                continue
            drawn = i > 0 and single[i - 1]
            for t in _tiles_of(a):
                if not drawn:
                    played_since[seat][t] += 1
                sizes[seat] += 1
            if seat == view.seat or not (sampled or exact[seat] and not drawn):
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

    def log_weight(
        self, hands: Sequence[Sequence[int]], rng: np.random.Generator | None = None
    ) -> float:
        """Sum over the scored plays of log P(play | the seat's hand in ``hands``). With
        ``history="sampled"`` the hands then come from one walk back per seat, drawn from
        ``rng`` (one ``rng.random()`` per draw with a choice), plus the log of the number of
        choices; -inf when no history fits the deal."""
        if self.histories:
            if rng is None:
                raise ValueError("history='sampled' weighs a deal with random draws: pass rng")
            total = 0.0
            for history in self.histories:
                total += self._walk(history, hands[history.seat], rng)
                if total == -math.inf:
                    break
            return total
        total = 0.0
        for d in self.decisions:
            counts = list(d.played_since)
            for t in hands[d.seat]:
                counts[t] += 1
            total += self._cached(d, counts)
        return total

    def _cached(self, d: _Decision, counts: list[int]) -> float:
        key = (d.index, tuple(counts))
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = self._log_prob(d, counts, self.view.rules.sets)
        return value

    def _walk(self, h: SeatHistory, hand: Sequence[int], rng: np.random.Generator) -> float:
        """The log-weight of one seat's history, walked back from ``hand`` (see the module)."""
        tiles = list(hand)  # the seat's hand at each point of the walk, with each tile's deadline
        deadlines = [h.deadline(t) for t in tiles]
        total = 0.0
        future = 0  # h.futures[future:] are still to come (released before the current move)
        for kind, index, t0, t1, k in h.events:
            if kind == PLAY:
                tiles.append(t0)
                deadlines.append(h.deadline(t0, index))
                if t1 >= 0:
                    tiles.append(t1)
                    deadlines.append(h.deadline(t1, index))
                if k >= 0:
                    counts = [0] * NUM_TILES
                    for t in tiles:
                        counts[t] += 1
                    total += self._cached(self.decisions[k], counts)
            elif kind == KNOWN_DRAW:
                last = len(tiles) - 1 - tiles[::-1].index(t0)
                del tiles[last], deadlines[last]
            else:
                while future < len(h.futures) and h.futures[future][0] > index:
                    future += 1
                choices = _draw_choices(h, index, deadlines, future)
                if not choices:
                    return -math.inf
                pick = choices[0]
                if len(choices) > 1:
                    pick = choices[int(rng.random() * len(choices))]
                    total += math.log(len(choices))
                del tiles[pick], deadlines[pick]
        if any(d >= 0 for d in deadlines):  # a tile that must have been drawn was dealt
            return -math.inf
        return total

    def _log_prob(self, d: _Decision, counts: list[int], sets: int) -> float:
        v = d.view
        plays = legal_plays(counts, v.ends, sets)
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


def legal_plays(counts: Sequence[int], ends: tuple[int, int] | None, sets: int) -> list[int]:
    """The play actions of a hand (``counts`` per tile) on ``ends``, in action-id order; with
    ``ends`` None (a free lead) every tile held, laid with end 0."""
    if ends is None:
        return [2 * t for t in range(NUM_TILES) if counts[t]]
    e0, e1 = ends
    plays = []
    for t in range(NUM_TILES):
        if counts[t]:
            if CONTAINS[e0] >> t & 1:
                plays.append(2 * t)
            if CONTAINS[e1] >> t & 1:
                plays.append(2 * t + 1)
    if sets == 2 and e0 == e1 and counts[DOUBLE_ID[e0]] >= 2:
        plays.append(DOUBLE_PLAY + e0)
    return plays


def _draw_choices(h: SeatHistory, index: int, deadlines: list[int], future: int) -> list[int]:
    """The positions in the hand (by ``deadlines``) of the tiles the draw at move ``index`` may
    have taken, leaving every tile with a deadline a later-walked draw after it; [] if none."""
    slots = [i for kind, i, *_ in h.events if kind == DRAW_SLOT and i <= index]
    due = [d for d in deadlines if d >= 0] + [d for _, d in h.futures[future:] if d >= 0]
    tight = -1  # every choice must have a deadline at or after the latest tight one
    for bound in set(due):
        need = sum(1 for d in due if d >= bound)  # tiles drawn after move ``bound``
        have = sum(1 for i in slots if i > bound)  # draws after it, this one included
        if need > have:
            return []
        if need == have and bound > tight:
            tight = bound
    return [j for j, d in enumerate(deadlines) if d < index and (tight < 0 or d >= tight)]


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
