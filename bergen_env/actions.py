"""The fixed action table: ids, printing and parsing.

Action ``2*t + e`` plays tile ``t`` on end ``e`` (0 left, 1 right); ``56`` draws; ``57`` passes;
``58 + n`` is the double play of both ``[n|n]`` (two sets only).

>>> action_str(2 * 8 + 1)
'[1|2]>right'
>>> parse_action("[1|2]>right")
17
>>> parse_action("draw"), parse_action("pass"), parse_action("[3|3]+[3|3]")
(56, 57, 61)
"""

from __future__ import annotations

import numpy as np

from bergen_env.errors import IllegalActionError, InvalidTileError
from bergen_env.tiles import IS_DOUBLE, NUM_NUMBERS, NUM_TILES, TILES, parse_tile, tile_str
from bergen_env.validation import is_int

NUM_PLAY_ACTIONS = 2 * NUM_TILES  # 56
DRAW = NUM_PLAY_ACTIONS  # 56
PASS = DRAW + 1  # 57
DOUBLE_PLAY = PASS + 1  # 58 + n
NUM_ACTIONS_TWO_SETS = DOUBLE_PLAY + NUM_NUMBERS  # 65
END_NAMES = ("left", "right")


def play_action(tile: int, end: int) -> int:
    """The id of playing ``tile`` on ``end`` (0 left, 1 right)."""
    if end not in (0, 1):
        raise IllegalActionError(f"end must be 0 (left) or 1 (right), got {end!r}")
    return 2 * tile + end


def action_str(action: int) -> str:
    """Print an action id: ``[a|b]>left``, ``draw``, ``pass`` or ``[n|n]+[n|n]``."""
    a = check_action_id(action, NUM_ACTIONS_TWO_SETS)
    if a < NUM_PLAY_ACTIONS:
        return f"{tile_str(a >> 1)}>{END_NAMES[a & 1]}"
    if a == DRAW:
        return "draw"
    if a == PASS:
        return "pass"
    n = a - DOUBLE_PLAY
    return f"[{n}|{n}]+[{n}|{n}]"


def parse_action(text: str) -> int:
    """Inverse of :func:`action_str` (also accepts ``[a|b]>0`` / ``[a|b]>1``)."""
    s = text.strip().lower()
    if s == "draw":
        return DRAW
    if s == "pass":
        return PASS
    try:
        if "+" in s:
            first, second = (parse_tile(part) for part in s.split("+"))
            if first != second or not IS_DOUBLE[first]:
                raise IllegalActionError(f"a double play needs the same double twice, got {text!r}")
            return DOUBLE_PLAY + TILES[first][0]
        if ">" in s:
            tile_text, end_text = s.rsplit(">", 1)
            end_text = end_text.strip()
            if end_text in ("left", "0", "l"):
                end = 0
            elif end_text in ("right", "1", "r"):
                end = 1
            else:
                raise IllegalActionError(f"unknown end {end_text!r} in action {text!r}")
            return play_action(parse_tile(tile_text), end)
    except InvalidTileError as exc:
        raise IllegalActionError(f"cannot parse action {text!r}: {exc}") from None
    raise IllegalActionError(
        f"cannot parse action {text!r}: expected '[a|b]>left', '[a|b]>right', 'draw' or 'pass'"
    )


def check_action_id(action: object, num_actions: int) -> int:
    """Return ``action`` as an int if it is an integer in ``0..num_actions-1``, else raise."""
    if type(action) is not int and not is_int(action):  # exact ints skip the general check
        if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
            action = action.item()
        else:
            raise IllegalActionError(
                f"action must be an integer in 0..{num_actions - 1}, got {action!r}"
            )
    a = int(action)
    if not 0 <= a < num_actions:
        raise IllegalActionError(f"action {a} is out of range 0..{num_actions - 1}")
    return a
