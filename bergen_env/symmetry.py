"""The left-right mirror: a symmetry of the line that every rule set keeps.

Nothing in the rules tells the two ends of the line apart: swap them (the left end's number and
double flag with the right end's, and every play on the left end with the same tile's play on
the right end) and the rules treat the mirrored position exactly as the original, so it is worth
the same to every seat against players who mirror their moves too. (Agents that break ties
towards the lower action id, the left end, are not quite symmetric.) A policy fitted to labelled
positions can learn from each position's mirror image as well (data augmentation).

The mirror of a position is a position of the same game only once the line holds a tile: the
first tile of a hand is always laid with end 0 (:mod:`bergen_env.actions`), so a decision on an
empty line has no mirror image (:func:`mirrorable`). Under Bergen the lead is a double, whose two
ends match, so the mirror of a whole hand is the same hand with every later play's end swapped.

>>> int(MIRROR_ACTIONS[2 * 8 + 1]), int(MIRROR_ACTIONS[56])  # [1|2]>right -> [1|2]>left; draw
(16, 56)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, NUM_ACTIONS_TWO_SETS, NUM_PLAY_ACTIONS
from bergen_env.observation import MAX_SEATS, OBS_SIZE, OBS_SLICES
from bergen_env.tiles import MAX_PIP, NUM_NUMBERS, TILE_ID, TILES

#: ``MIRROR_ACTIONS[a]``: the mirror image of action ``a`` (``2*t + e`` -> ``2*t + 1 - e``; a
#: draw, a pass and a double play are their own images). Index with ``[:num_actions]``.
MIRROR_ACTIONS = np.arange(NUM_ACTIONS_TWO_SETS, dtype=np.int64)
MIRROR_ACTIONS[:NUM_PLAY_ACTIONS] ^= 1
MIRROR_ACTIONS.flags.writeable = False


def _observation_permutation() -> np.ndarray:
    perm = np.arange(OBS_SIZE, dtype=np.int64)
    left, right = OBS_SLICES["left_end"], OBS_SLICES["right_end"]
    perm[left], perm[right] = perm[right].copy(), perm[left].copy()
    doubles = OBS_SLICES["end_doubles"]
    perm[doubles] = perm[doubles][::-1].copy()
    points = OBS_SLICES["play_points"]
    perm[points] = perm[points][MIRROR_ACTIONS]
    perm.flags.writeable = False
    return perm


#: ``obs[..., MIRROR_OBSERVATION]`` is the observation of the mirrored position.
MIRROR_OBSERVATION = _observation_permutation()
_LINE_EMPTY = OBS_SLICES["line_empty"].start


def _observations(obs: np.ndarray) -> np.ndarray:
    """``obs`` as an array; raises unless its last axis is ``OBS_SIZE``."""
    obs = np.asarray(obs)
    if obs.shape[-1:] != (OBS_SIZE,):
        raise ValueError(f"observations must have last axis {OBS_SIZE}, got shape {obs.shape}")
    return obs


def mirror_observations(obs: np.ndarray) -> np.ndarray:
    """The observations (last axis ``OBS_SIZE``) of the mirrored positions (a new array)."""
    return _observations(obs)[..., MIRROR_OBSERVATION]


def mirror_actions(per_action: np.ndarray) -> np.ndarray:
    """Per-action arrays (masks, values, logits; last axis ``num_actions``) of the mirrored
    positions (a new array)."""
    per_action = np.asarray(per_action)
    n = per_action.shape[-1]
    if n < NUM_PLAY_ACTIONS + 2 or n > NUM_ACTIONS_TWO_SETS:
        raise ValueError(
            f"per-action arrays must have last axis {NUM_PLAY_ACTIONS + 2}..{NUM_ACTIONS_TWO_SETS}"
            f" (num_actions), got shape {per_action.shape}"
        )
    return per_action[..., MIRROR_ACTIONS[:n]]


def mirrorable(obs: np.ndarray) -> np.ndarray:
    """Whether each observation's position has a mirror image: the line holds a tile."""
    return _observations(obs)[..., _LINE_EMPTY] == 0


# ---------------------------------------------------------------------- relabelling numbers


def _tile_map(perm: np.ndarray) -> np.ndarray:
    """``out[t]``: the tile ``[perm[a]|perm[b]]`` of tile ``t = [a|b]``."""
    return np.array([TILE_ID[(int(perm[a]), int(perm[b]))] for a, b in TILES], dtype=np.int64)


def _action_map(perm: np.ndarray, tiles: np.ndarray) -> np.ndarray:
    """:func:`relabel_action_map` of a checked ``perm`` whose :func:`_tile_map` is ``tiles``."""
    out = np.arange(NUM_ACTIONS_TWO_SETS, dtype=np.int64)
    out[:NUM_PLAY_ACTIONS:2] = 2 * tiles
    out[1:NUM_PLAY_ACTIONS:2] = 2 * tiles + 1
    out[DOUBLE_PLAY:] = DOUBLE_PLAY + perm
    return out


def _relabel_maps(perm: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`relabel_observation_map` and :func:`relabel_action_map` of ``perm``, from one
    tile map."""
    perm = _check_permutation(perm)
    tiles = _tile_map(perm)
    actions = _action_map(perm, tiles)
    out = np.arange(OBS_SIZE, dtype=np.int64)
    for name in ("hand", "line", "unseen"):
        out[OBS_SLICES[name]] = OBS_SLICES[name].start + tiles
    for name in ("left_end", "right_end"):
        out[OBS_SLICES[name]] = OBS_SLICES[name].start + perm
    voids = OBS_SLICES["voids"].start
    for k in range(MAX_SEATS):
        out[voids + k * NUM_NUMBERS : voids + (k + 1) * NUM_NUMBERS] = (
            voids + k * NUM_NUMBERS + perm
        )
    out[OBS_SLICES["play_points"]] = OBS_SLICES["play_points"].start + actions
    return out, actions


def relabel_action_map(perm: Sequence[int]) -> np.ndarray:
    """``out[a]``: the action of the relabelled position that action ``a`` becomes when every
    number ``n`` is renamed ``perm[n]`` (a play keeps its end; a draw and a pass stay)."""
    perm = _check_permutation(perm)
    return _action_map(perm, _tile_map(perm))


def relabel_observation_map(perm: Sequence[int]) -> np.ndarray:
    """``out[i]``: the index that observation entry ``i`` moves to when every number ``n`` is
    renamed ``perm[n]``."""
    return _relabel_maps(perm)[0]


def _check_permutation(perm: Sequence[int]) -> np.ndarray:
    arr = np.asarray(perm)
    if arr.shape != (NUM_NUMBERS,) or sorted(arr.tolist()) != list(range(NUM_NUMBERS)):
        raise ValueError(f"a relabelling must be a permutation of 0..{MAX_PIP}, got {perm!r}")
    return arr.astype(np.int64)


def relabel_gathers(perms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gather indices of the relabellings ``perms`` (``(k, 7)``): ``obs[..., g_obs[i]]`` and
    ``per_action[..., g_act[i]]`` are the observation and per-action arrays of the position
    with every number ``n`` renamed ``perms[i][n]``."""
    maps = [_relabel_maps(p) for p in perms]
    g_obs = np.stack([np.argsort(obs_map) for obs_map, _ in maps])
    g_act = np.stack([np.argsort(act_map) for _, act_map in maps])
    return g_obs, g_act
