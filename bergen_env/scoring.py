"""The scoring rule of every game, state-free: the one place the engine and the agents read it.

Points during play (``play_scoring``, RULES.md "Scoring during play"):

- ``headers`` (Bergen): after a play, ends showing the same number make a header worth 2, 3 or
  4 by the number of double ends (:data:`HEADER_BY_DOUBLES`); a double play 5; the opening
  double 2. End caps (:func:`cap_header`) lower a header near the target.
- ``fives`` (Fives): the *count* of the ends (a plain end counts its number, a double end both
  halves; a single-tile line the tile's pips) scores ``count / 5`` when it is a positive
  multiple of 5; a play of ``[0|0]`` never scores.
- ``none`` (Draw): nothing.

Points for winning a hand (``out_scoring``, RULES.md "Points for winning a hand"): ``fixed``
(``domino_points`` / ``blocked_points``, with ``leftover_penalty``), ``pips`` (the pips left in
the other sides' hands) or ``pips_fives`` (those pips rounded to the nearest 5, divided by 5).

The engine's hot path reads :data:`PLAY_POINTS`, a table built from :func:`line_points`.

>>> line_points("headers", 16, 5, 5, False, False)  # [2|5] leaves 5 ... 5: a double header
2
>>> line_points("fives", 16, 5, 6, False, True)  # ends 5 and [3|3]: 5 + 6 = 11, nothing
0
>>> opening_points("fives", 27), opening_points("fives", 0)  # [6|6] opens with 12; [0|0]
(0, 0)
>>> out_points("pips_fives", 36), out_points("pips_fives", 38)
(7, 8)
"""

from __future__ import annotations

from collections.abc import Sequence

from bergen_env.actions import DOUBLE_PLAY
from bergen_env.tiles import IS_DOUBLE, NUM_NUMBERS, NUM_TILES, OTHER_HALF, PIPS, TILE_ID, TILES

PLAY_SCORINGS = ("headers", "fives", "none")
OUT_SCORINGS = ("fixed", "pips", "pips_fives")

#: Header points by the number of double ends after the play (RULES.md, "Headers").
HEADER_BY_DOUBLES = (2, 3, 4)
#: The opening double is a double header (its one tile is both ends).
OPENING_HEADER = 2
#: A double play (both ``[n|n]`` of two sets in one move).
DOUBLE_PLAY_HEADER = 5
#: Tile id of ``[0|0]``: in Fives its play never scores.
DOUBLE_BLANK = TILE_ID[(0, 0)]
#: Fives scores a count that is a positive multiple of this, ``count // FIVE`` points.
FIVE = 5


def header_points(e0: int, e1: int, d0: bool, d1: bool) -> int:
    """Header points (before end caps) of ends ``e0``/``e1`` with double flags ``d0``/``d1``."""
    return HEADER_BY_DOUBLES[d0 + d1] if e0 == e1 else 0


def fives_count(e0: int, e1: int, d0: bool, d1: bool) -> int:
    """The Fives count of two ends: a plain end counts its number, a double end twice it."""
    return e0 * (1 + d0) + e1 * (1 + d1)


def fives_points(count: int) -> int:
    """Points of a Fives count: ``count / 5`` for a positive multiple of 5, else 0."""
    return count // FIVE if count > 0 and count % FIVE == 0 else 0


def line_points(play_scoring: str, tile: int, e0: int, e1: int, d0: bool, d1: bool) -> int:
    """Points (before end caps) of playing ``tile`` on a line that then shows these ends.

    Not for the opening play (see :func:`opening_points`) or a double play.
    """
    if play_scoring == "headers":
        return header_points(e0, e1, d0, d1)
    if play_scoring == "fives":
        return 0 if tile == DOUBLE_BLANK else fives_points(fives_count(e0, e1, d0, d1))
    if play_scoring == "none":
        return 0
    raise ValueError(f"unknown play_scoring {play_scoring!r}; choose one of {PLAY_SCORINGS}")


def opening_points(play_scoring: str, tile: int) -> int:
    """Points (before end caps) of ``tile`` laid as the first tile of a hand.

    ``headers``: the opening double is a double header (2); any other tile shows two different
    numbers. ``fives``: the count of a single-tile line is the tile's pips.
    """
    if play_scoring == "headers":
        return OPENING_HEADER if IS_DOUBLE[tile] else 0
    if play_scoring == "fives":
        return 0 if tile == DOUBLE_BLANK else fives_points(PIPS[tile])
    if play_scoring == "none":
        return 0
    raise ValueError(f"unknown play_scoring {play_scoring!r}; choose one of {PLAY_SCORINGS}")


def double_play_points(play_scoring: str) -> int:
    """Points (before end caps) of the double play (two sets, ``headers`` only)."""
    return DOUBLE_PLAY_HEADER if play_scoring == "headers" else 0


def play_index(tile: int, e0: int, e1: int, d0: bool, d1: bool) -> int:
    """Index into a :data:`PLAY_POINTS` table: the tile played and the ends it leaves."""
    return ((tile * NUM_NUMBERS + e0) * NUM_NUMBERS + e1) * 4 + 2 * d0 + d1


#: ``PLAY_POINTS[play_scoring][play_index(...)]``: :func:`line_points` as a table.
PLAY_POINTS: dict[str, tuple[int, ...]] = {
    kind: tuple(
        line_points(kind, t, e0, e1, bool(code >> 1), bool(code & 1))
        for t in range(NUM_TILES)
        for e0 in range(NUM_NUMBERS)
        for e1 in range(NUM_NUMBERS)
        for code in range(4)
    )
    for kind in PLAY_SCORINGS
}

#: ``OPENING_POINTS[play_scoring][tile]``: :func:`opening_points` as a table.
OPENING_POINTS: dict[str, tuple[int, ...]] = {
    kind: tuple(opening_points(kind, t) for t in range(NUM_TILES)) for kind in PLAY_SCORINGS
}


def play_result(
    play_scoring: str,
    action: int,
    ends: tuple[int, int] | None,
    end_doubles: tuple[bool, bool],
) -> tuple[int, tuple[int, int], tuple[bool, bool]]:
    """``(points before end caps, new ends, new end flags)`` of a play action.

    ``action`` is ``2 * tile + end`` or a double play (``>= DOUBLE_PLAY``); ``ends`` is None on
    the empty line (the opening: the tile's two numbers become the ends).
    """
    if action >= DOUBLE_PLAY:
        n = action - DOUBLE_PLAY
        return double_play_points(play_scoring), (n, n), (True, True)
    t, e = action >> 1, action & 1
    dbl = bool(IS_DOUBLE[t])
    if ends is None:
        a, b = TILES[t]
        return opening_points(play_scoring, t), (a, b), (dbl, dbl)
    num = [ends[0], ends[1]]
    flags = [bool(end_doubles[0]), bool(end_doubles[1])]
    num[e] = OTHER_HALF[t * NUM_NUMBERS + ends[e]]
    flags[e] = dbl
    points = line_points(play_scoring, t, num[0], num[1], flags[0], flags[1])
    return points, (num[0], num[1]), (flags[0], flags[1])


def play_count(action: int, ends: tuple[int, int] | None, end_doubles: tuple[bool, bool]) -> int:
    """The Fives count of the line after a play action (arguments as :func:`play_result`): a
    single-tile line counts the tile's pips, a longer one its ends (:func:`fives_count`).

    >>> play_count(2 * TILE_ID[(3, 3)], None, (False, False))  # [3|3] opens: 6, not 12
    6
    >>> play_count(2 * TILE_ID[(2, 5)], (2, 5), (False, False))  # [2|5] on the 2: ends 5 and 5
    10
    """
    if ends is None and action < DOUBLE_PLAY:
        return PIPS[action >> 1]
    _, after, doubles = play_result("none", action, ends, end_doubles)
    return fives_count(after[0], after[1], doubles[0], doubles[1])


def cap_header(header: int, need: int, end_caps: bool) -> int:
    """A header's value after end caps (RULES.md, "End caps") for a side ``need`` points from
    the target.

    ``need <= 2``: 1 point; ``need == 3``: at most 2. Without ``end_caps`` the header itself.
    """
    if not header or not end_caps:
        return header
    if need <= 2:
        return 1
    if need == 3:
        return min(header, 2)
    return header


def out_points(out_scoring: str, pips: int, fixed: int = 0) -> int:
    """What the winner of a hand scores: ``fixed`` (the domino or blocked points), ``pips`` (the
    other sides' pips) or ``pips_fives`` (those pips rounded to the nearest 5, divided by 5)."""
    if out_scoring == "fixed":
        return fixed
    if out_scoring == "pips":
        return pips
    if out_scoring == "pips_fives":
        return (pips + FIVE // 2) // FIVE
    raise ValueError(f"unknown out_scoring {out_scoring!r}; choose one of {OUT_SCORINGS}")


def leftover_penalties(penalty: int, tiles_left: Sequence[int], winner: int | None) -> list[int]:
    """Per side, the (non-positive) leftover penalty of RULES.md ("Leftover penalty"):
    ``penalty`` per tile held, for every side but the hand's winner."""
    return [0 if side == winner else -penalty * left for side, left in enumerate(tiles_left)]


def blocked_winner(rule: str, tallies: Sequence[tuple[int, int, int]]) -> int | None:
    """The side that wins a blocked hand under ``rule`` (RULES.md, "Blocked hands"), None on a tie.

    ``tallies[side] = (doubles, pips, lowest double or 7)``.

    >>> blocked_winner("german", [(1, 10, 2), (0, 30, 7)])
    1
    >>> blocked_winner("pips", [(1, 10, 2), (0, 10, 7)]) is None
    True
    """
    sides = range(len(tallies))

    def best(candidates: Sequence[int], key: int, highest: bool = False) -> list[int]:
        values = [tallies[s][key] for s in candidates]
        target = max(values) if highest else min(values)
        return [s for s in candidates if tallies[s][key] == target]

    def single(candidates: list[int]) -> int | None:
        return candidates[0] if len(candidates) == 1 else None

    if rule == "pips":
        return single(best(sides, 1))
    if rule == "german":
        return single(best(best(sides, 0), 1))
    if rule == "american":
        without = [s for s in sides if tallies[s][0] == 0]
        if without:
            return single(best(without, 1))
        return single(best(sides, 2))
    if rule == "most_doubles":
        most = best(sides, 0, highest=True)
        if tallies[most[0]][0] == 0:
            return single(best(sides, 1))
        return single(best(most, 2))
    raise ValueError(f"unknown blocked_rule {rule!r}")
