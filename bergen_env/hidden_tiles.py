"""Determinization: deal the tiles a seat cannot see, consistently with its public view.

The hidden tiles are every tile not in the viewer's hand and not on the line
(``view.unseen_counts``). They are split into the other seats' hands, with their exact sizes, and
the undrawn boneyard (reserve included), so that no seat gets a tile with a number it is known
to be void in. The voids are :func:`inferred_voids`: the engine's ``view.voids`` forget
everything at a draw, but the public move history tells more (see there).

Besides voids, :func:`excluded_tiles` rules out the doubles that would have led instead of the
opening double (for seats that have not drawn since), and, as a *soft* guess about a sensible
opponent, the header tile of ends on which a seat played without making a header.

Constrained seats are filled first, most excluded tiles first, each with the first tiles it may
hold from a uniformly shuffled pool; the other seats and the boneyard then take the rest in
shuffled order. This sequential fill can fail where a valid split exists (an earlier seat took a
tile a later one needed), so it is retried with fresh shuffles; after ``tries`` failures the soft
guesses are dropped, after ``tries`` more every constraint is dropped for that sample (a plain
shuffle), which keeps sampling total on any view.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bergen_env.actions import DRAW, PASS
from bergen_env.engine import PublicView
from bergen_env.rules import Rules
from bergen_env.scoring import play_result
from bergen_env.tiles import CONTAINS, DOUBLE_ID, NUM_NUMBERS, NUM_TILES, TILE_ID, TILES

DEFAULT_TRIES = 20


def inferred_voids(view: PublicView) -> tuple[int, ...]:
    """Per seat, a 7-bit mask of numbers it cannot hold, read from this hand's public moves
    (:func:`public_voids`). With ``voluntary_draw`` a draw says nothing, so the engine's own
    ``view.voids`` are returned. The viewer's own entry is left as given. Where the engine
    already tracks these draw runs in ``view.voids`` the result equals them; the union below keeps
    the sampler exact either way.
    """
    if view.rules.voluntary_draw:
        return view.voids
    voids, drawing = _voids_of(view.rules.num_players, view.moves)
    voids[view.seat] = view.voids[view.seat]
    # The engine's voids are facts too (e.g. from passes); keep both.
    return tuple(w if d else v | w for v, w, d in zip(voids, view.voids, drawing))


def public_voids(rules: Rules, moves: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    """Per seat, the 7-bit mask of numbers every seat knows it cannot hold after ``moves`` (one
    hand's public moves, without ``voluntary_draw``): the voids a seat's view held then.

    A seat draws only when no tile of its hand fits the ends ``x``/``y``, and the ends do not
    change while it draws. So every tile it drew except the last has neither ``x`` nor ``y``; if
    it then plays, the tile played is the last one drawn (its only tile that fits), and
    afterwards it again holds no ``x`` or ``y``. Numbers known before the draws survive only when
    a single tile was drawn and played (its hand is then what it was); a pass adds the two end
    numbers. A seat still drawing has none (its last drawn tile is unknown).
    """
    voids, drawing = _voids_of(rules.num_players, moves)
    return tuple(0 if d else v for v, d in zip(voids, drawing))


def _voids_of(n: int, moves: Sequence[tuple[int, int]]) -> tuple[list[int], list[bool]]:
    """:func:`public_voids` before its last step, and which seats are in a run of draws."""
    voids = [0] * n
    draws = [0] * n  # draws in the seat's current sequence
    before = [0] * n  # the seat's voids (plus the ends) when the sequence began
    ends: tuple[int, int] | None = None
    flags = (False, False)
    for seat, a in moves:
        if a == DRAW:
            bits = _ends_bits(ends)
            if not draws[seat]:
                before[seat] = voids[seat] | bits
            draws[seat] += 1
            voids[seat] = 0  # unknown until the sequence ends
        elif a == PASS:
            bits = _ends_bits(ends)
            voids[seat] = (bits if draws[seat] else voids[seat]) | bits
            draws[seat] = 0
        else:
            if draws[seat]:
                voids[seat] = before[seat] if draws[seat] == 1 else _ends_bits(ends)
                draws[seat] = 0
            _, ends, flags = play_result("headers", a, ends, flags)
    return voids, [d > 0 for d in draws]


def _ends_bits(ends: tuple[int, int] | None) -> int:
    return 0 if ends is None else (1 << ends[0]) | (1 << ends[1])


def beaten_lead_doubles(rules: Rules, moves: Sequence[tuple[int, int]]) -> int:
    """The bitmask over tile ids of the doubles no seat was dealt this hand, as the hand's lead
    shows: under ``lead=lowest`` the doubles below the opening one, under ``highest`` those
    above it (docs/rules.md, "Dealing and the lead"); 0 for the free leads (``highest_any``,
    ``rotate``) and before the lead."""
    if not moves or rules.free_lead:
        return 0
    number = TILES[moves[0][1] >> 1][0]  # the opening double [number|number]
    beaten = range(number) if rules.lead == "lowest" else range(number + 1, NUM_NUMBERS)
    doubles = 0
    for k in beaten:
        doubles |= 1 << DOUBLE_ID[k]
    return doubles


def excluded_tiles(view: PublicView) -> tuple[list[int], list[int]]:
    """Per seat, bitmasks over tile ids it is taken not to hold: ``(hard, soft)``.

    ``hard`` is certain: the numbers of :func:`inferred_voids`, and the doubles that would have
    led the hand instead of the opening double (lower ones with ``lead=lowest``, higher with
    ``highest``; no such inference for the free leads) for seats that have not
    drawn this hand. ``soft`` (header scoring only) assumes opponents take headers: a seat that
    played on ends ``x``/``y`` without making a header (and has not drawn since) is taken not to
    hold ``[x|y]``.
    """
    n = view.rules.num_players
    hard = [0] * n
    for s, void in enumerate(inferred_voids(view)):
        for num in range(NUM_NUMBERS):
            if void >> num & 1:
                hard[s] |= CONTAINS[num]
    soft = [0] * n
    drew = [False] * n
    moves = view.moves
    ends: tuple[int, int] | None = None
    flags = (False, False)
    headers = view.rules.play_scoring == "headers"
    for i, (seat, a) in enumerate(moves):
        if a == DRAW:
            drew[seat] = True
            soft[seat] = 0
        elif a != PASS:
            header, after, flags_after = play_result("headers", a, ends, flags)
            if headers and i and not header and ends is not None:
                soft[seat] |= 1 << TILE_ID[ends]
            ends, flags = after, flags_after
    doubles = beaten_lead_doubles(view.rules, moves)
    for s in range(n):
        if not drew[s]:
            hard[s] |= doubles
    hard[view.seat] = soft[view.seat] = 0
    return hard, soft


class HiddenTileSampler:
    """Samples ``(hands, boneyard)`` for :meth:`BergenState.from_view` from one public view."""

    def __init__(self, view: PublicView, tries: int = DEFAULT_TRIES, soft: bool = True) -> None:
        self.view = view
        self.tries = tries
        self.pool = np.array(
            [t for t in range(NUM_TILES) for _ in range(view.unseen_counts[t])], dtype=np.int64
        )
        n = view.rules.num_players
        self.others = [s for s in range(n) if s != view.seat]
        self.sizes = view.hand_sizes
        expected = sum(self.sizes[s] for s in self.others) + view.boneyard_size
        if expected != len(self.pool):
            raise ValueError(
                f"public view of seat {view.seat} is inconsistent: {len(self.pool)} unseen tiles "
                f"but other hands and boneyard hold {expected}"
            )
        hard, guesses = excluded_tiles(view)
        if not soft:  # no guess about how the others play: only what the rules rule out
            guesses = [0] * n
        #: Per seat, the tiles it is not dealt in the samples (hard and, with ``soft``, soft).
        self.excluded = [h | s for h, s in zip(hard, guesses)]
        self.levels = [self.excluded, hard, [0] * n]
        self.own = list(view.hand)
        #: Samples that dropped the soft guesses / every constraint.
        self.relaxed = 0
        self.fallbacks = 0

    def constrained_order(self, excluded: list[int]) -> list[int]:
        """The other seats with excluded tiles, in the order they are filled: most excluded
        tiles first, then by seat."""
        sizes = self.sizes
        return sorted(
            (s for s in self.others if excluded[s] and sizes[s]),
            key=lambda s: (-excluded[s].bit_count(), s),
        )

    def sample(self, rng: np.random.Generator) -> tuple[list[list[int]], list[int]]:
        """One split of the hidden tiles: every seat's hand (own included) and the boneyard."""
        n = self.view.rules.num_players
        sizes = self.sizes
        for level, excluded in enumerate(self.levels):
            order = self.constrained_order(excluded)
            for _ in range(self.tries if order else 1):
                rest = rng.permutation(self.pool).tolist()
                hands: list[list[int]] = [[] for _ in range(n)]
                ok = True
                for s in order:
                    out, size = excluded[s], sizes[s]
                    take: list[int] = []
                    keep: list[int] = []
                    for t in rest:
                        if len(take) < size and not out >> t & 1:
                            take.append(t)
                        else:
                            keep.append(t)
                    if len(take) < size:
                        ok = False
                        break
                    hands[s] = take
                    rest = keep
                if ok:
                    self.relaxed += level >= 1
                    self.fallbacks += level == 2
                    for s in self.others:
                        if s not in order:
                            hands[s] = rest[: sizes[s]]
                            rest = rest[sizes[s] :]
                    hands[self.view.seat] = self.own
                    return hands, rest
        raise AssertionError("unreachable: the unconstrained level always succeeds")
