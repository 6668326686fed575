"""What an action scores now, computed from the engine's tables (shared by greedy and heuristic).

Playing ``[2|5]`` (tile 16) on the left end of a line showing ``2 ... 5`` makes a double header:

>>> raw_play(2 * 16, (2, 5), (False, False))
(2, (5, 5), (False, False))
>>> cap_header(3, need=3, end_caps=True)
2
"""

from __future__ import annotations

from typing import NamedTuple

from bergen_env.actions import DOUBLE_PLAY, NUM_PLAY_ACTIONS
from bergen_env.engine import PublicView
from bergen_env.tiles import IS_DOUBLE, OTHER_HALF, TILE_ID, TILES

#: Header points by the number of double ends after the play (RULES.md §6).
HEADER_BY_DOUBLES = (2, 3, 4)
DOUBLE_PLAY_HEADER = 5


class PlayOutcome(NamedTuple):
    """The result of one play for the seat making it."""

    header: int  # header points after end caps (0 if none)
    points: int  # header plus domino points
    goes_out: bool  # the play empties the hand
    wins: bool  # the play brings the side to the target
    ends: tuple[int, int]  # end numbers after the play
    end_doubles: tuple[bool, bool]  # double-end flags after the play


def cap_header(header: int, need: int, end_caps: bool) -> int:
    """A header's value after end caps (RULES.md §6) for a side ``need`` points from the target."""
    if not header or not end_caps:
        return header
    if need <= 2:
        return 1
    if need == 3:
        return min(header, 2)
    return header


def raw_play(
    action: int, ends: tuple[int, int] | None, end_doubles: tuple[bool, bool]
) -> tuple[int, tuple[int, int], tuple[bool, bool]]:
    """``(header before caps, new ends, new end_doubles)`` of a play action (not draw/pass)."""
    if action >= DOUBLE_PLAY:
        n = action - DOUBLE_PLAY
        return DOUBLE_PLAY_HEADER, (n, n), (True, True)
    t, e = action >> 1, action & 1
    dbl = IS_DOUBLE[t]
    if ends is None:  # the opening tile: both ends show its numbers
        a, b = TILES[t]
        return 2, (a, b), (dbl, dbl)
    num = [ends[0], ends[1]]
    flags = [end_doubles[0], end_doubles[1]]
    num[e] = OTHER_HALF[t * 7 + ends[e]]
    flags[e] = dbl
    header = HEADER_BY_DOUBLES[flags[0] + flags[1]] if num[0] == num[1] else 0
    return header, (num[0], num[1]), (flags[0], flags[1])


def play_outcome(view: PublicView, action: int) -> PlayOutcome:
    """What ``action`` (a play by the viewing seat) scores now, with caps, domino and target."""
    if action >= NUM_PLAY_ACTIONS and action < DOUBLE_PLAY:
        raise ValueError(f"action {action} is a draw or pass, not a play")
    rules = view.rules
    raw, ends, flags = raw_play(action, view.ends, view.end_doubles)
    score = view.scores[view.side]
    header = cap_header(raw, rules.target - score, rules.end_caps)
    used = 2 if action >= DOUBLE_PLAY else 1
    goes_out = view.hand_sizes[view.seat] == used
    points = header
    if score + header < rules.target and goes_out:
        points += rules.domino_points
    return PlayOutcome(header, points, goes_out, score + points >= rules.target, ends, flags)


def header_tile(ends: tuple[int, int]) -> int:
    """The one tile that makes a header on these ends (``[x|y]``; the double when x == y)."""
    return TILE_ID[ends]


def header_threat_value(ends: tuple[int, int], end_doubles: tuple[bool, bool]) -> int:
    """Header points (before caps) the best play of :func:`header_tile` on these ends makes."""
    best = int(end_doubles[0] or end_doubles[1])
    if ends[0] == ends[1]:  # the double on either end: a double end plus the other end's flag
        return HEADER_BY_DOUBLES[1 + best]
    return HEADER_BY_DOUBLES[best]
