"""What a play scores for the seat making it, read from its public view with the rules of
:mod:`bergen_env.scoring` (end caps, going out, reaching the target), and what a header tile
threatens on given ends.

Ends ``2 ... 5`` without doubles: the header tile ``[2|5]`` played there makes a double header
(both new ends show 5), worth 2 points before caps:

>>> header_threat_value((2, 5), (False, False))
2
"""

from __future__ import annotations

from typing import NamedTuple

from bergen_env.actions import DOUBLE_PLAY, NUM_PLAY_ACTIONS
from bergen_env.engine import PublicView
from bergen_env.scoring import HEADER_BY_DOUBLES, cap_header, play_result

__all__ = ["PlayOutcome", "header_threat_value", "play_outcome"]


class PlayOutcome(NamedTuple):
    """The result of one play for the seat making it."""

    header: int  # points of the play itself after end caps (header or Fives count; 0 if none)
    points: int  # those plus the fixed domino points of going out (``out_scoring='fixed'``)
    goes_out: bool  # the play empties the hand
    wins: bool  # the points bring the side to the target
    ends: tuple[int, int]  # end numbers after the play
    end_doubles: tuple[bool, bool]  # double-end flags after the play


def play_outcome(view: PublicView, action: int) -> PlayOutcome:
    """What ``action`` (a play by the viewing seat) scores now, with caps, domino and target.

    Under ``out_scoring='pips'``/``'pips_fives'`` the award for going out depends on hidden
    hands and is not in ``points`` (``goes_out`` tells it happens).
    """
    if action >= NUM_PLAY_ACTIONS and action < DOUBLE_PLAY:
        raise ValueError(f"action {action} is a draw or pass, not a play")
    rules = view.rules
    raw, ends, flags = play_result(rules.play_scoring, action, view.ends, view.end_doubles)
    score = view.scores[view.side]
    header = cap_header(raw, rules.target - score, rules.end_caps)
    used = 2 if action >= DOUBLE_PLAY else 1
    goes_out = view.hand_sizes[view.seat] == used
    points = header
    reaches = rules.has_target and score + header >= rules.target
    if goes_out and not reaches and rules.out_scoring == "fixed":
        points += rules.domino_points
    # going out wins a single-hand match (Draw): the hand's winner is the match's
    wins = (rules.has_target and score + points >= rules.target) or (goes_out and rules.single_hand)
    return PlayOutcome(header, points, goes_out, wins, ends, flags)


def header_threat_value(ends: tuple[int, int], end_doubles: tuple[bool, bool]) -> int:
    """Header points (before caps) the best play of the header tile ``[x|y]`` on these ends
    makes."""
    best = int(end_doubles[0] or end_doubles[1])
    if ends[0] == ends[1]:  # the double on either end: a double end plus the other end's flag
        return HEADER_BY_DOUBLES[1 + best]
    return HEADER_BY_DOUBLES[best]
