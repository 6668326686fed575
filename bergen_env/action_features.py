"""Features of one action in one observation: what the table looks like after a play.

A policy network that scores each legal action with one shared function of these features
(:class:`~bergen_env.policy_file.PolicyNetwork` with an action scorer) learns a pattern once
for every tile and end, where a plain output layer learns each of the 65 actions apart. The
features are read from the observation alone (:mod:`bergen_env.observation`), so a policy that
uses them still acts from what its seat may know.

For a play (``2*t + e``, or the double play ``58 + n``), with ``x``/``y`` the numbers showing on
the left/right end after it (a double play leaves ``n``/``n``):

==================  =====  ================================================================
view                size   meaning
==================  =====  ================================================================
new_left            7      one-hot ``x``
new_right           7      one-hot ``y``
header_tile         28     one-hot of ``[x|y]``: the tile that would make a header next
new_end_doubles     2      1 where an end is a double end after the play
header_copies       2      copies of ``[x|y]`` unseen, and still in the own hand
new_end_voids       6      relative seats 1, 2, 3 known void in ``x``, then in ``y``
points              1      the points the play scores now (the observation's ``play_points``)
tile                2      the played tile's pips / 12, and 1 for a double
tile_id             28     one-hot of the played tile
follow              2      own tiles left that hold ``x``, that hold ``y``
hand_left           1      own tiles left
numbers_left        1      distinct numbers among the own tiles left
unseen_fitting      2      unseen tiles that hold ``x``, that hold ``y``
kind                4      one-hot: play, draw, pass, double play
weight_left         2      pips left in the own hand / 12, doubles left
==================  =====  ================================================================

A draw or a pass has only its ``kind`` set.
"""

from __future__ import annotations

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, NUM_ACTIONS_TWO_SETS, PASS
from bergen_env.observation import OBS_SIZE, OBS_SLICES
from bergen_env.tiles import (
    CONTAINS,
    DOUBLE_ID,
    IS_DOUBLE,
    NUM_NUMBERS,
    NUM_TILES,
    OTHER_HALF,
    PIPS,
    TILE_ID,
    TILES,
)

#: The name of this feature set, recorded in policy files that use it.
FEATURES_NAME = "afterstate-1"
ACTION_FEATURE_LAYOUT: tuple[tuple[str, int], ...] = (
    ("new_left", NUM_NUMBERS),
    ("new_right", NUM_NUMBERS),
    ("header_tile", NUM_TILES),
    ("new_end_doubles", 2),
    ("header_copies", 2),
    ("new_end_voids", 6),
    ("points", 1),
    ("tile", 2),
    ("tile_id", NUM_TILES),
    ("follow", 2),
    ("hand_left", 1),
    ("numbers_left", 1),
    ("unseen_fitting", 2),
    ("kind", 4),
    ("weight_left", 2),
)
NUM_ACTION_FEATURES = sum(size for _, size in ACTION_FEATURE_LAYOUT)

_LOW = np.array([a for a, _ in TILES])
_HIGH = np.array([b for _, b in TILES])
_OTHER = np.array(OTHER_HALF).reshape(NUM_TILES, NUM_NUMBERS)
#: ``_HEADER[x, y]``: the tile ``[x|y]`` that makes a header on ends ``x`` and ``y``.
_HEADER = np.array([[TILE_ID[(x, y)] for y in range(NUM_NUMBERS)] for x in range(NUM_NUMBERS)])
#: ``_HOLDS[n, t]``: 1 where tile ``t`` has a half ``n`` (:data:`CONTAINS` as a matrix).
_HOLDS = ((np.array(CONTAINS)[:, None] >> np.arange(NUM_TILES)) & 1).astype(np.float32)
_PIPS = np.array(PIPS, np.float32)
_DOUBLE = np.array(IS_DOUBLE, np.float32)
_DOUBLE_IDS = np.array(DOUBLE_ID)
_EYE_NUMBERS = np.eye(NUM_NUMBERS, dtype=np.float32)
_EYE_TILES = np.eye(NUM_TILES, dtype=np.float32)
_S = OBS_SLICES


def action_features(observations: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """The features of taking ``actions[i]`` in ``observations[i]``: ``(n, NUM_ACTION_FEATURES)``
    float32 (see the module doc). ``observations`` is ``(n, OBS_SIZE)``; the actions must be
    legal in them (the features of an illegal play are meaningless, not an error)."""
    obs = np.asarray(observations, dtype=np.float32)
    actions = np.asarray(actions, dtype=np.int64)
    if obs.ndim != 2 or obs.shape[1] != OBS_SIZE or actions.shape != (obs.shape[0],):
        raise ValueError(
            f"action_features needs observations of shape (n, {OBS_SIZE}) and n actions, got "
            f"{obs.shape} and {actions.shape}"
        )
    if actions.size and (actions.min() < 0 or actions.max() >= NUM_ACTIONS_TWO_SETS):
        raise ValueError(
            f"action ids must be in 0..{NUM_ACTIONS_TWO_SETS - 1}, got {actions.min()} to "
            f"{actions.max()}"
        )
    n = len(actions)
    rows = np.arange(n)
    hand = obs[:, _S["hand"]]
    unseen = obs[:, _S["unseen"]]
    left = obs[:, _S["left_end"]].argmax(1)
    right = obs[:, _S["right_end"]].argmax(1)
    end_doubles = obs[:, _S["end_doubles"]]
    empty = obs[:, _S["line_empty"]][:, 0] > 0
    voids = obs[:, _S["voids"]].reshape(n, 4, NUM_NUMBERS)
    place = actions < DRAW
    double_play = actions >= DOUBLE_PLAY
    playing = place | double_play
    tile = np.where(place, actions >> 1, 0)
    tile = np.where(double_play, _DOUBLE_IDS[np.clip(actions - DOUBLE_PLAY, 0, 6)], tile)
    end = actions & 1
    rest = _OTHER[tile, np.where(end == 0, left, right)]  # -1 off a play: masked below
    x = np.where(empty | double_play, _LOW[tile], np.where(end == 0, rest, left))
    y = np.where(empty | double_play, _HIGH[tile], np.where(end == 0, right, rest))
    x, y = np.clip(x, 0, 6), np.clip(y, 0, 6)
    crossed = _DOUBLE[tile]
    x_double = np.where(empty | double_play | (end == 0), crossed, end_doubles[:, 0])
    y_double = np.where(empty | double_play | (end == 1), crossed, end_doubles[:, 1])
    left_after = hand.copy()
    left_after[rows, tile] -= np.where(place, 1.0, np.where(double_play, 2.0, 0.0))
    header = _HEADER[x, y]
    blocks = (
        _EYE_NUMBERS[x],
        _EYE_NUMBERS[y],
        _EYE_TILES[header],
        np.stack([x_double, y_double], 1),
        np.stack([unseen[rows, header], left_after[rows, header]], 1),
        np.stack([voids[rows, s, m] for s in (1, 2, 3) for m in (x, y)], 1),
        obs[:, _S["play_points"]][rows, actions][:, None],
        np.stack([_PIPS[tile] / 12.0, crossed], 1),
        _EYE_TILES[tile],
        np.stack([(left_after * _HOLDS[x]).sum(1), (left_after * _HOLDS[y]).sum(1)], 1),
        left_after.sum(1)[:, None],
        ((left_after @ _HOLDS.T) > 0).sum(1)[:, None],
        np.stack([(unseen * _HOLDS[x]).sum(1), (unseen * _HOLDS[y]).sum(1)], 1),
        None,  # kind: set for every action
        np.stack([(left_after * _PIPS).sum(1) / 12.0, (left_after * _DOUBLE).sum(1)], 1),
    )
    out = np.zeros((n, NUM_ACTION_FEATURES), np.float32)
    k = 0
    for (_, size), block in zip(ACTION_FEATURE_LAYOUT, blocks):
        if block is None:
            kinds = np.stack([place, actions == DRAW, actions == PASS, double_play], 1)
            out[:, k : k + size] = kinds
        else:
            out[:, k : k + size] = block.reshape(n, size) * playing[:, None]
        k += size
    return out


#: The column slice of each view of :func:`action_features`' rows.
ACTION_FEATURE_SLICES: dict[str, slice] = {}
_start = 0
for _name, _size in ACTION_FEATURE_LAYOUT:
    ACTION_FEATURE_SLICES[_name] = slice(_start, _start + _size)
    _start += _size
