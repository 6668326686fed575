"""The Bergen rules engine: a mutable match state with the OpenSpiel/pgx shape.

Pure Python and numpy only; no RL library. A :class:`BergenState` is a whole match (hands are
dealt one after another until a side reaches the target). Its API:

- ``current_player``, ``legal_actions()``, ``legal_mask(out)``, ``apply_action(a)``,
  ``apply_unchecked(a)`` (no legality check: for hot loops that apply only legal actions),
- ``terminal``, ``winner`` (side), ``returns()``, ``scores``, ``clone()``,
- ``public_view(seat)`` (what that seat may know) and ``from_view`` (a determinization).

Hands are bitmasks over tile ids plus per-tile counts (two sets have two copies of each tile),
so legality is a few integer ``&`` operations against precomputed tables.

>>> from bergen_env.rules import Rules
>>> s = BergenState(Rules.preset("standard"), seed=0)
>>> s.legal_actions() == [2 * s.lead_tile]
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import add, sub
from typing import Any

import numpy as np

from bergen_env.actions import (
    DOUBLE_PLAY,
    DRAW,
    NUM_PLAY_ACTIONS,
    PASS,
    action_str,
    check_action_id,
)
from bergen_env.errors import GameOverError, IllegalActionError, InvalidDealError
from bergen_env.rules import DOUBLE_LEADS, FREE_LEADS, Rules
from bergen_env.scoring import (
    HEADER_BY_DOUBLES,
    OPENING_POINTS,
    PLAY_POINTS,
    blocked_winner,
    cap_header,
    double_play_points,
    leftover_penalties,
    out_points,
)
from bergen_env.tiles import (
    CONTAINS,
    DOUBLE_ID,
    DOUBLES_MASK,
    IS_DOUBLE,
    MATCH_EITHER,
    NUM_NUMBERS,
    NUM_TILES,
    OTHER_HALF,
    PIPS,
    TILES,
    bits_to_tiles,
    parse_tile,
    tile_str,
)

#: ``_FULL_SET_COUNTS[sets]``: per tile id, the copies of each tile in play.
_FULL_SET_COUNTS = {sets: (sets,) * NUM_TILES for sets in (1, 2)}

#: ``TILE_POOLS[sets]``: every tile id once per set, the array a shuffle permutes (read-only).
TILE_POOLS = {sets: np.repeat(np.arange(NUM_TILES), sets) for sets in (1, 2)}
for _pool in TILE_POOLS.values():
    _pool.flags.writeable = False

#: A deal: ``(hands, boneyard)`` as lists of tile ids; a draw takes ``boneyard[0]``.
Deal = tuple[list[list[int]], list[int]]


@dataclass(frozen=True)
class HandResult:
    """How a hand ended and what it scored at its end (headers are not included)."""

    hand: int
    reason: str  # "domino" or "blocked"
    winner: int | None  # winning side, None when a blocked hand tied
    points: tuple[int, ...]  # per side: domino/blocked points and leftover penalties
    seat: int | None = None  # the seat that went out (domino)
    blocked_rule: str | None = None


@dataclass(frozen=True)
class PublicView:
    """What one seat may know: its own hand and everything public. Never other hands."""

    rules: Rules
    seat: int
    current_player: int
    hand: tuple[int, ...]  # own tiles, ascending, repeated for two copies
    hand_counts: tuple[int, ...]  # per tile id
    line: tuple[tuple[int, int], ...]  # oriented tiles, left to right
    line_counts: tuple[int, ...]  # per tile id
    unseen_counts: tuple[int, ...]  # per tile id: not in own hand and not on the line
    ends: tuple[int, int] | None  # (left, right) numbers, None before the first play
    end_doubles: tuple[bool, bool]
    hand_sizes: tuple[int, ...]  # per seat
    boneyard_size: int
    drawable: int  # boneyard tiles that may still be drawn (size minus reserve)
    scores: tuple[int, ...]  # per side
    voids: tuple[int, ...]  # per seat: 7-bit mask of numbers known not held
    moves: tuple[tuple[int, int], ...]  # (seat, action) of this hand so far
    hand_number: int
    lead_tile: int | None  # the forced opening tile, if the hand's first move is due
    legal_actions: tuple[int, ...]  # empty when it is not this seat's turn

    @property
    def side(self) -> int:
        """The viewing seat's side."""
        return self.rules.side_of[self.seat]


class BergenState:
    """A Bergen match in progress. Create with rules and a seed (or a numpy Generator)."""

    __slots__ = (
        "rules",
        "num_players",
        "num_sides",
        "side_of",
        "_rng",
        "_rng_state",
        "_deals",
        "_pool",
        "hands",
        "hand_bits",
        "hand_len",
        "boneyard",
        "bone_pos",
        "line",
        "line_counts",
        "line_len",
        "end_num",
        "end_dbl",
        "voids",
        "scores",
        "hand_number",
        "current_player",
        "lead_tile",
        "terminal",
        "winner",
        "moves",
        "hand_results",
        "draw_limit",
        "_num_actions",
        "_play_points",
        "_headers",
        "_opening_points",
        "_target",
        "_voluntary_draw",
        "_two_sets",
        "_run_draws",
        "_run_voids",
    )

    def __init__(
        self,
        rules: Rules,
        seed: int | np.random.Generator | None = None,
        deals: Sequence[Any] | None = None,
    ) -> None:
        if not isinstance(rules, Rules):
            raise TypeError(f"rules must be a bergen_env.Rules, got {type(rules).__name__}")
        self.rules = rules
        self.num_players = rules.num_players
        self.num_sides = rules.num_sides
        self.side_of = rules.side_of
        self._cache_rules()
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self._deals = [validate_deal(d, rules) for d in deals] if deals else []
        self._deals.reverse()  # pop() from the end takes them in order
        self._pool = TILE_POOLS[rules.sets]
        #: Boneyard index up to which draws are allowed (``bone_pos < draw_limit``: the reserve
        #: stays undrawn). Public for fast policies that decide draws themselves.
        self.draw_limit = 0
        self.scores = [0] * self.num_sides
        self.hand_number = 0
        self.terminal = False
        self.winner: int | None = None
        self.hand_results: list[HandResult] = []
        self._start_hand()

    def _cache_rules(self) -> None:
        """Copy the rule values read on every step (``Rules`` derives some per access)."""
        self._num_actions = self.rules.num_actions
        self._voluntary_draw = self.rules.voluntary_draw
        self._two_sets = self.rules.double_play
        self._play_points = PLAY_POINTS[self.rules.play_scoring]
        self._headers = self.rules.play_scoring == "headers"
        self._opening_points = OPENING_POINTS[self.rules.play_scoring]
        #: The score that ends the match (none: beyond any score of a single hand).
        self._target = self.rules.target if self.rules.has_target else 1 << 30

    @property
    def rng(self) -> np.random.Generator:
        """The RNG that deals the next hands. A clone copies it lazily, on first use."""
        if self._rng is None:
            kind, state = self._rng_state
            bit_generator = kind()
            bit_generator.state = state
            self._rng = np.random.Generator(bit_generator)
            self._rng_state = None
        return self._rng

    @rng.setter
    def rng(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._rng_state = None

    # ------------------------------------------------------------------ dealing

    def _start_hand(self) -> None:
        """Deal the hand ``self.hand_number`` (redealing while no seat holds a double)."""
        n = self.num_players
        size = self.rules.hand_size
        while True:
            if self._deals:
                hands, boneyard = self._deals.pop()
            else:
                order = self.rng.permutation(self._pool).tolist()
                hands = [order[i * size : (i + 1) * size] for i in range(n)]
                boneyard = order[n * size :]
            counts = [[0] * NUM_TILES for _ in range(n)]
            for seat, tiles in enumerate(hands):
                row = counts[seat]
                for t in tiles:
                    row[t] += 1
            leader, lead_tile = _find_lead(counts, self.rules.lead, self.hand_number % n)
            if leader is not None:
                break
        self.hands = counts
        self.hand_bits = [_bits_of(row) for row in counts]
        self.hand_len = [size] * n
        self.boneyard = list(boneyard)
        self.bone_pos = 0
        self.draw_limit = len(self.boneyard) - self.rules.reserve
        self.line: list[tuple[int, int]] = []
        self.line_counts = [0] * NUM_TILES
        self.line_len = 0
        self.end_num = [0, 0]
        self.end_dbl = [False, False]
        self.voids = [0] * n
        self._run_draws = 0  # forced draws in a row by the player on turn
        self._run_voids = 0  # that player's voids before those draws
        self.moves: list[tuple[int, int]] = []
        self.current_player = leader
        self.lead_tile: int | None = lead_tile

    # ------------------------------------------------------------------ queries

    @property
    def drawable(self) -> int:
        """Boneyard tiles that may still be drawn (its size minus the reserve, at least 0)."""
        return max(0, self.draw_limit - self.bone_pos)

    @property
    def boneyard_size(self) -> int:
        """Tiles left in the boneyard (including the reserve)."""
        return len(self.boneyard) - self.bone_pos

    @property
    def ends(self) -> tuple[int, int] | None:
        """The (left, right) end numbers, None before the first play of the hand."""
        return (self.end_num[0], self.end_num[1]) if self.line_len else None

    def hand_tiles(self, seat: int) -> list[int]:
        """Tile ids in ``seat``'s hand, ascending (repeated for two copies)."""
        row = self.hands[seat]
        return [t for t in bits_to_tiles(self.hand_bits[seat]) for _ in range(row[t])]

    def has_playable(self, seat: int) -> bool:
        """Whether ``seat`` holds a tile that fits an open end (always True on the empty line)."""
        if not self.line_len:
            return True
        return bool(self.hand_bits[seat] & MATCH_EITHER[self.end_num[0] * 7 + self.end_num[1]])

    def legal_actions(self) -> list[int]:
        """Legal action ids of the player on turn, ascending; empty when the match is over."""
        if self.terminal:
            return []
        if self.lead_tile is not None:
            return [2 * self.lead_tile]
        p = self.current_player
        bits = self.hand_bits[p]
        if not self.line_len:  # a free lead (RULES.md, "Dealing and the lead"): any tile, end 0
            return [2 * t for t in bits_to_tiles(bits)]
        e0, e1 = self.end_num
        m0 = bits & CONTAINS[e0]
        m1 = bits & CONTAINS[e1]
        playable = m0 | m1
        out: list[int] = []
        m = playable
        while m:
            low = m & -m
            t = low.bit_length() - 1
            m ^= low
            if m0 & low:
                out.append(2 * t)
            if m1 & low:
                out.append(2 * t + 1)
        can_draw = self.bone_pos < self.draw_limit
        if can_draw and (not playable or self._voluntary_draw):
            out.append(DRAW)
        if not playable and not can_draw:
            out.append(PASS)
        if self._two_sets and e0 == e1 and self.hands[p][DOUBLE_ID[e0]] >= 2:
            out.append(DOUBLE_PLAY + e0)
        return out

    def legal_mask(
        self, out: np.ndarray | None = None, legal: Sequence[int] | None = None
    ) -> np.ndarray:
        """The legal actions as a 0/1 ``int8`` mask of length ``rules.num_actions``.

        ``legal``: the result of :meth:`legal_actions` if the caller already has it.
        """
        if legal is None:
            legal = self.legal_actions()
        if out is None:  # set bytes, then wrap them: cheaper than numpy item writes
            mask = bytearray(self._num_actions)
            for a in legal:
                mask[a] = 1
            return np.frombuffer(mask, dtype=np.int8)
        out.fill(0)
        for a in legal:
            out[a] = 1
        return out

    def legal_actions_text(self) -> str:
        """The legal actions as ``id (move)`` text, for error messages: ``"56 (draw)"``."""
        return ", ".join(f"{x} ({action_str(x)})" for x in self.legal_actions())

    def is_legal(self, action: int) -> bool:
        """Whether ``action`` is legal now (no exception for out-of-range ids)."""
        if self.terminal or not 0 <= action < self._num_actions:
            return False
        p = self.current_player
        if self.lead_tile is not None:
            return action == 2 * self.lead_tile
        if not self.line_len:  # a free lead: any own tile on end 0
            return action < NUM_PLAY_ACTIONS and not action & 1 and self.hands[p][action >> 1] > 0
        if action < NUM_PLAY_ACTIONS:
            t = action >> 1
            return bool(self.hand_bits[p] >> t & 1 and CONTAINS[self.end_num[action & 1]] >> t & 1)
        playable = self.has_playable(p)
        can_draw = self.bone_pos < self.draw_limit
        if action == DRAW:
            return can_draw and (not playable or self._voluntary_draw)
        if action == PASS:
            return not playable and not can_draw
        n = action - DOUBLE_PLAY
        e0, e1 = self.end_num
        return e0 == e1 == n and self.hands[p][DOUBLE_ID[n]] >= 2

    def action_points(self, action: int) -> int:
        """Points the player on turn scores by the legal ``action`` now, without applying it.

        The play's points (RULES.md: "Headers" after "End caps", or the "Fives count"), plus
        ``domino_points`` if the play empties the hand under ``out_scoring='fixed'`` (unless the
        play alone already reaches the target); 0 for a draw or a pass. A hand won under
        ``out_scoring='pips'``/``'pips_fives'`` scores the other hands' pips, which the player
        cannot know: that award is not included.
        """
        if action in (DRAW, PASS):
            return 0
        p = self.current_player
        used = 1
        if action >= DOUBLE_PLAY:
            points, used = double_play_points(self.rules.play_scoring), 2
        elif not self.line_len:
            points = self._opening_points[action >> 1]
        else:
            t, e = action >> 1, action & 1
            ends = [self.end_num[0], self.end_num[1]]
            flags = [self.end_dbl[0], self.end_dbl[1]]
            ends[e] = OTHER_HALF[t * 7 + ends[e]]
            flags[e] = IS_DOUBLE[t]
            points = self._play_points[
                ((t * 7 + ends[0]) * 7 + ends[1]) * 4 + 2 * flags[0] + flags[1]
            ]
        side = self.side_of[p]
        points = self._capped(side, points)
        rules = self.rules
        if (
            self.hand_len[p] == used
            and rules.out_scoring == "fixed"
            and points < self._target - self.scores[side]
        ):
            return points + rules.domino_points
        return points

    def _capped(self, side: int, header: int) -> int:
        """A header's value after end caps (RULES.md, "End caps") for ``side``."""
        if header and self.rules.end_caps:
            return cap_header(header, self.rules.target - self.scores[side], True)
        return header

    def returns(self) -> list[float]:
        """Per seat: +1 for the winning side, -1/(sides-1) for the others; zeros before the end."""
        if not self.terminal or self.winner is None:
            return [0.0] * self.num_players
        loss = -1.0 / (self.num_sides - 1)
        return [1.0 if self.side_of[s] == self.winner else loss for s in range(self.num_players)]

    # ------------------------------------------------------------------ acting

    def apply_action(self, action: int) -> None:
        """Apply a legal action of the player on turn; raise ``IllegalActionError`` otherwise."""
        if self.terminal:
            raise GameOverError(f"the match is over; action {action!r} cannot be applied")
        a = check_action_id(action, self._num_actions)
        if not self.is_legal(a):
            legal = self.legal_actions_text()
            raise IllegalActionError(
                f"action {a} ({action_str(a)}) is illegal for player_{self.current_player}; "
                f"legal actions: {legal}"
            )
        self.apply_unchecked(a)

    def apply_unchecked(self, a: int) -> None:
        """Apply ``a`` without checking it: for hot loops (playouts, envs that checked the mask).

        ``a`` must be a plain ``int`` from :meth:`legal_actions`; anything else corrupts the
        state silently. Use :meth:`apply_action` for input from outside.
        """
        p = self.current_player
        self.moves.append((p, a))
        if a < NUM_PLAY_ACTIONS:
            if self._run_draws:
                self._end_draw_run(p)
            self._play(p, a >> 1, a & 1)
        elif a == DRAW:
            t = self.boneyard[self.bone_pos]
            self.bone_pos += 1
            row = self.hands[p]
            row[t] += 1
            self.hand_bits[p] |= 1 << t
            self.hand_len[p] += 1
            if not self._voluntary_draw:  # a forced draw: no tile fitted either end
                if not self._run_draws:
                    self._run_voids = self.voids[p]
                self._run_draws += 1
            self.voids[p] = 0  # the drawn tile is unknown until the player acts again
            self._check_blocked()
        elif a == PASS:
            self._run_draws = 0  # voids[p] is 0 after draws; the pass shows both ends are void
            self.voids[p] |= (1 << self.end_num[0]) | (1 << self.end_num[1])
            self.current_player = (p + 1) % self.num_players
            self._check_blocked()
        else:
            if self._run_draws:
                self._end_draw_run(p)
            self._double_play(p, a - DOUBLE_PLAY)

    def _end_draw_run(self, p: int) -> None:
        """Exact voids after forced draws followed by a play (``voluntary_draw`` off).

        Before the run the hand held nothing fitting either end, and every drawn tile but the
        last did not fit either (or the player would have played it), so the played tile is the
        last one drawn. What is left holds neither end number; with a single draw it is exactly
        the hand before the run, so the earlier voids still hold too.
        """
        ends = (1 << self.end_num[0]) | (1 << self.end_num[1])
        self.voids[p] = ends | (self._run_voids if self._run_draws == 1 else 0)
        self._run_draws = 0

    def _remove(self, p: int, t: int) -> None:
        row = self.hands[p]
        row[t] -= 1
        if not row[t]:
            self.hand_bits[p] &= ~(1 << t)
        self.hand_len[p] -= 1
        self.line_counts[t] += 1
        self.line_len += 1

    def _play(self, p: int, t: int, e: int) -> None:
        dbl = IS_DOUBLE[t]
        end_num = self.end_num
        end_dbl = self.end_dbl
        if not self.line_len:  # the opening: both ends show the tile's numbers
            self.lead_tile = None
            a, b = TILES[t]
            end_num[0] = a
            end_num[1] = b
            end_dbl[0] = end_dbl[1] = dbl
            self.line.append((a, b))
            points = self._opening_points[t]
        else:
            n = end_num[e]
            other = OTHER_HALF[t * 7 + n]
            end_num[e] = other
            end_dbl[e] = dbl
            if e:
                self.line.append((n, other))
            else:
                self.line.insert(0, (other, n))
            if self._headers:  # the common Bergen case: only equal ends score
                points = (
                    HEADER_BY_DOUBLES[end_dbl[0] + end_dbl[1]] if end_num[0] == end_num[1] else 0
                )
            else:
                points = self._play_points[
                    ((t * 7 + end_num[0]) * 7 + end_num[1]) * 4 + 2 * end_dbl[0] + end_dbl[1]
                ]
        self._remove(p, t)
        self._after_play(p, points)

    def _double_play(self, p: int, n: int) -> None:
        t = DOUBLE_ID[n]
        self._remove(p, t)
        self._remove(p, t)
        self.end_dbl[0] = self.end_dbl[1] = True
        self.line.insert(0, (n, n))
        self.line.append((n, n))
        self._after_play(p, double_play_points(self.rules.play_scoring))

    def _after_play(self, p: int, points: int) -> None:
        side = self.side_of[p]
        if points and self._score(side, self._capped(side, points)):
            return
        if not self.hand_len[p]:
            self._end_hand("domino", side, seat=p)
            return
        self.current_player = (p + 1) % self.num_players
        self._check_blocked()

    def _score(self, side: int, points: int) -> bool:
        """Add points; end the match (and return True) when the side reaches the target."""
        self.scores[side] += points
        if self.scores[side] >= self._target:
            self.terminal = True
            self.winner = side
            return True
        return False

    def _check_blocked(self) -> None:
        if self.bone_pos < self.draw_limit:
            return
        fits = MATCH_EITHER[self.end_num[0] * 7 + self.end_num[1]]
        for bits in self.hand_bits:
            if bits & fits:
                return
        self._end_hand("blocked", blocked_winner(self.rules.blocked_rule, self.side_tallies()))

    def side_tallies(self) -> list[tuple[int, int, int]]:
        """Per side: (doubles held, pips held, lowest double held or 7 if none)."""
        tallies = [[0, 0, NUM_NUMBERS] for _ in range(self.num_sides)]
        for seat, row in enumerate(self.hands):
            tally = tallies[self.side_of[seat]]
            bits = self.hand_bits[seat]
            m = bits
            while m:
                low = m & -m
                t = low.bit_length() - 1
                m ^= low
                c = row[t]
                tally[1] += PIPS[t] * c
                if low & DOUBLES_MASK:
                    tally[0] += c
                    tally[2] = min(tally[2], TILES[t][0])
        return [(d, p, low) for d, p, low in tallies]

    def _end_hand(self, reason: str, winner: int | None, seat: int | None = None) -> None:
        points = [0] * self.num_sides
        rules = self.rules
        done = False
        if winner is not None:
            fixed = rules.domino_points if reason == "domino" else rules.blocked_points
            pips = 0
            if rules.out_scoring != "fixed":
                pips = sum(
                    tally[1] for side, tally in enumerate(self.side_tallies()) if side != winner
                )
            gain = out_points(rules.out_scoring, pips, fixed)
            points[winner] = gain
            done = self._score(winner, gain)
        if not done and rules.leftover_penalty:
            left = [0] * self.num_sides
            for s, size in enumerate(self.hand_len):
                left[self.side_of[s]] += size
            for side, loss in enumerate(leftover_penalties(rules.leftover_penalty, left, winner)):
                points[side] += loss
                self.scores[side] += loss
        if rules.single_hand and not self.terminal:  # the match is this one hand
            self.terminal = True
            self.winner = winner
        self.hand_results.append(
            HandResult(
                hand=self.hand_number,
                reason=reason,
                winner=winner,
                points=tuple(points),
                seat=seat,
                blocked_rule=rules.blocked_rule if reason == "blocked" else None,
            )
        )
        if not self.terminal:
            self.hand_number += 1
            self._start_hand()

    # ------------------------------------------------------------------ copies and views

    def clone(self, rng: np.random.Generator | None = None) -> BergenState:
        """An independent copy; its RNG is a copy of this one's unless ``rng`` is given."""
        c = object.__new__(BergenState)
        c.rules = self.rules
        c.num_players = self.num_players
        c.num_sides = self.num_sides
        c.side_of = self.side_of
        c._num_actions = self._num_actions
        c._voluntary_draw = self._voluntary_draw
        c._two_sets = self._two_sets
        c._play_points = self._play_points
        c._headers = self._headers
        c._opening_points = self._opening_points
        c._target = self._target
        if rng is not None:
            c.rng = rng
        elif self._rng is None:  # this state's own copy is still pending: share its snapshot
            c._rng, c._rng_state = None, self._rng_state
        else:  # snapshot the state now; the Generator is built only if the clone deals
            bit_generator = self._rng.bit_generator
            c._rng, c._rng_state = None, (type(bit_generator), bit_generator.state)
        c._deals = list(self._deals)
        c._pool = self._pool
        c.draw_limit = self.draw_limit
        c.hands = [row[:] for row in self.hands]
        c.hand_bits = self.hand_bits[:]
        c.hand_len = self.hand_len[:]
        c.boneyard = self.boneyard  # never mutated: draws advance bone_pos
        c.bone_pos = self.bone_pos
        c.line = self.line[:]
        c.line_counts = self.line_counts[:]
        c.line_len = self.line_len
        c.end_num = self.end_num[:]
        c.end_dbl = self.end_dbl[:]
        c.voids = self.voids[:]
        c._run_draws = self._run_draws
        c._run_voids = self._run_voids
        c.scores = self.scores[:]
        c.hand_number = self.hand_number
        c.current_player = self.current_player
        c.lead_tile = self.lead_tile
        c.terminal = self.terminal
        c.winner = self.winner
        c.moves = self.moves[:]
        c.hand_results = self.hand_results[:]
        return c

    def __copy__(self) -> BergenState:
        return self.clone()

    def __deepcopy__(self, memo: dict) -> BergenState:
        return self.clone()

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)

    def public_view(self, seat: int) -> PublicView:
        """What ``seat`` may know now (own hand, the line, public counts, scores, voids)."""
        if not 0 <= seat < self.num_players:
            raise ValueError(f"seat {seat} is out of range 0..{self.num_players - 1}")
        counts = tuple(self.hands[seat])
        on_line = tuple(self.line_counts)
        unseen = tuple(map(sub, _FULL_SET_COUNTS[self.rules.sets], map(add, counts, on_line)))
        return PublicView(
            rules=self.rules,
            seat=seat,
            current_player=self.current_player,
            hand=tuple(self.hand_tiles(seat)),
            hand_counts=counts,
            line=tuple(self.line),
            line_counts=on_line,
            unseen_counts=unseen,
            ends=self.ends,
            end_doubles=(self.end_dbl[0], self.end_dbl[1]),
            hand_sizes=tuple(self.hand_len),
            boneyard_size=self.boneyard_size,
            drawable=self.drawable,
            scores=tuple(self.scores),
            voids=tuple(self.voids),
            moves=tuple(self.moves),
            hand_number=self.hand_number,
            lead_tile=self.lead_tile,
            legal_actions=tuple(self.legal_actions())
            if seat == self.current_player and not self.terminal
            else (),
        )

    @classmethod
    def from_view(
        cls,
        view: PublicView,
        hands: Sequence[Sequence[int]],
        boneyard: Sequence[int],
        rng: np.random.Generator,
    ) -> BergenState:
        """A state consistent with ``view`` in which the hidden tiles are as given.

        ``hands[view.seat]`` must be the viewer's own hand; the other hands and the boneyard are
        a guess (a *determinization*) for search. Later hands are dealt from ``rng``.
        """
        rules = view.rules
        c = object.__new__(cls)
        c.rules = rules
        c.num_players = rules.num_players
        c.num_sides = rules.num_sides
        c.side_of = rules.side_of
        c._cache_rules()
        c.rng = rng
        c._deals = []
        c._pool = TILE_POOLS[rules.sets]
        c.hands = [[0] * NUM_TILES for _ in range(c.num_players)]
        for seat, tiles in enumerate(hands):
            for t in tiles:
                c.hands[seat][t] += 1
        c.hand_bits = [_bits_of(row) for row in c.hands]
        c.hand_len = [len(h) for h in hands]
        c.boneyard = list(boneyard)
        c.bone_pos = 0
        c.draw_limit = len(c.boneyard) - rules.reserve
        c.line = list(view.line)
        c.line_counts = list(view.line_counts)
        c.line_len = sum(view.line_counts)
        c.end_num = list(view.ends) if view.ends is not None else [0, 0]
        c.end_dbl = list(view.end_doubles)
        c.voids = list(view.voids)
        # trailing forced draws of the player on turn; their earlier voids are not in the view,
        # so a play after them restores only the end numbers (less informative, never wrong)
        c._run_draws = trailing_draws(view)
        c._run_voids = 0
        c.scores = list(view.scores)
        c.hand_number = view.hand_number
        c.current_player = view.current_player
        c.lead_tile = view.lead_tile
        c.terminal = False
        c.winner = None
        c.moves = list(view.moves)
        c.hand_results = []
        return c

    def __repr__(self) -> str:
        ends = self.ends
        return (
            f"BergenState({self.rules.name}, {self.num_players}p, hand {self.hand_number}, "
            f"scores {self.scores}, ends {ends}, to move player_{self.current_player}"
            f"{', over' if self.terminal else ''})"
        )


# ---------------------------------------------------------------------- pure helpers


def trailing_draws(view: PublicView) -> int:
    """The forced draws in a row that the player on turn has just made (0 with
    ``voluntary_draw``, where a draw is no forced one): what ``from_view`` restores."""
    if view.rules.voluntary_draw:
        return 0
    run = 0
    for seat, action in reversed(view.moves):
        if seat != view.current_player or action != DRAW:
            break
        run += 1
    return run


def _bits_of(row: list[int]) -> int:
    bits = 0
    for t, c in enumerate(row):
        if c:
            bits |= 1 << t
    return bits


def lead_of(
    rules: Rules, hands: Sequence[Sequence[int]], hand_number: int
) -> tuple[int | None, int | None]:
    """The seat that leads hand ``hand_number`` dealt ``hands`` (tile ids per seat) and its
    double, or ``(None, None)`` when no seat holds a double and the hand is dealt again."""
    counts = [[0] * NUM_TILES for _ in hands]
    for row, tiles in zip(counts, hands):
        for t in tiles:
            row[t] += 1
    return _find_lead(counts, rules.lead, hand_number % len(hands))


def _find_lead(counts: list[list[int]], lead: str, first: int) -> tuple[int | None, int | None]:
    """The seat that leads and the tile it must lead (RULES.md, "Dealing and the lead").

    ``(seat, None)`` for a free lead (any tile); ``(None, None)`` when nobody holds the double
    a ``lowest``/``highest``/``highest_any`` lead needs (a redeal).
    """
    if lead == "rotate":
        return first, None
    n = len(counts)
    numbers = range(NUM_NUMBERS) if lead == "lowest" else range(NUM_NUMBERS - 1, -1, -1)
    for num in numbers:
        t = DOUBLE_ID[num]
        for k in range(n):
            seat = (first + k) % n
            if counts[seat][t]:
                return seat, (None if lead in FREE_LEADS else t)
    return None, None


def validate_deal(deal: Any, rules: Rules) -> Deal:
    """Check a user deal against the rules; return it as tile ids. Raises ``InvalidDealError``."""
    if not isinstance(deal, dict) or set(deal) != {"hands", "boneyard"}:
        raise InvalidDealError(
            f"a deal must be a dict with exactly the keys 'hands' and 'boneyard', got {deal!r}"
        )
    n = rules.num_players
    raw_hands = deal["hands"]
    if len(raw_hands) != n:
        raise InvalidDealError(f"deal has {len(raw_hands)} hands, expected {n} (one per seat)")
    try:
        hands = [[parse_tile(t) for t in hand] for hand in raw_hands]
        boneyard = [parse_tile(t) for t in deal["boneyard"]]
    except ValueError as exc:
        raise InvalidDealError(f"deal has a bad tile: {exc}") from None
    for seat, hand in enumerate(hands):
        if len(hand) != rules.hand_size:
            raise InvalidDealError(
                f"deal gives seat {seat} {len(hand)} tiles, expected hand_size={rules.hand_size}"
            )
    if len(boneyard) != rules.boneyard_size:
        raise InvalidDealError(
            f"deal's boneyard has {len(boneyard)} tiles, expected {rules.boneyard_size}"
        )
    seen = [0] * NUM_TILES
    for t in [t for h in hands for t in h] + boneyard:
        seen[t] += 1
    wrong = [tile_str(t) for t in range(NUM_TILES) if seen[t] != rules.sets]
    if wrong:
        raise InvalidDealError(
            f"deal is not a split of {rules.sets} set(s): each tile must appear {rules.sets} "
            f"time(s); wrong counts for {', '.join(wrong)}"
        )
    if rules.lead in DOUBLE_LEADS and not any(IS_DOUBLE[t] for h in hands for t in h):
        raise InvalidDealError(
            f"deal gives no seat a double: nobody can lead under lead={rules.lead!r} "
            "(RULES.md, 'Dealing and the lead')"
        )
    return hands, boneyard
