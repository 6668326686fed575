"""``greedy``: the play that scores the most points now.

Points are the header after end caps plus domino points when the play empties the hand; a play
that reaches the target beats everything. Ties go to the double, then the heavier tile, then the
lowest action id. Draw or pass is taken only when nothing can be played.
"""

from __future__ import annotations

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, NUM_PLAY_ACTIONS
from bergen_env.agents.base import Agent, point_mass
from bergen_env.agents.play_outcomes import play_outcome
from bergen_env.engine import PublicView
from bergen_env.tiles import IS_DOUBLE, PIPS


def is_play(action: int) -> bool:
    """Whether an action lays tiles (not a draw or a pass)."""
    return action < NUM_PLAY_ACTIONS or action >= DOUBLE_PLAY


def greedy_key(view: PublicView, action: int) -> tuple[int, int, int, int, int]:
    """Sort key of :class:`GreedyAgent` (larger is better)."""
    if not is_play(action):
        return (0, -1, 0, 0, -action)
    out = play_outcome(view, action)
    if action >= DOUBLE_PLAY:
        tile_double, pips = 1, 4 * (action - DOUBLE_PLAY)
    else:
        t = action >> 1
        tile_double, pips = int(IS_DOUBLE[t]), PIPS[t]
    return (int(out.wins), out.points, tile_double, pips, -action)


class GreedyAgent(Agent):
    """The most points now, with double / heavier tile / lowest id tie-breaks."""

    needs_observation = False  # decides from the public view alone

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"agent {self.name!r}: seat {view.seat} has no legal action")
        if len(legal) == 1:
            return legal[0]
        return max(legal, key=lambda a: greedy_key(view, a))

    def action_probabilities(self, view: PublicView) -> np.ndarray:
        """All on the action :meth:`act` plays, over ``view.legal_actions``."""
        return point_mass(view, self.act(None, None, view))
