"""The left-right mirror: a symmetry of the line that every rule set keeps.

Nothing in the rules tells the two ends of the line apart: swap them (the left end's number and
double flag with the right end's, and every play on the left end with the same tile's play on
the right end) and the rules treat the mirrored position exactly as the original, so it is worth
the same to every seat against players who mirror their moves too. (Agents that break ties
towards the lower action id, the left end, are not quite symmetric.) The agent option
``policy:path=FILE,mirror=true`` averages a network's logits for a position and for its mirror
image, a policy symmetric by construction.

The mirror of a position is a position of the same game only once the line holds a tile: the
first tile of a hand is always laid with end 0 (:mod:`bergen_env.actions`), so a decision on an
empty line has no mirror image (:func:`mirrorable`). Under Bergen the lead is a double, whose two
ends match, so the mirror of a whole hand is the same hand with every later play's end swapped.

>>> int(MIRROR_ACTIONS[2 * 8 + 1]), int(MIRROR_ACTIONS[56])  # [1|2]>right -> [1|2]>left; draw
(16, 56)
"""

from __future__ import annotations

import numpy as np

from bergen_env.actions import NUM_ACTIONS_TWO_SETS, NUM_PLAY_ACTIONS
from bergen_env.observation import OBS_SIZE, OBS_SLICES

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
