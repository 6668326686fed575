"""``random``: a uniformly random legal action, drawn from the agent's own seeded RNG."""

from __future__ import annotations

import numpy as np

from bergen_env.agents.base import Agent
from bergen_env.engine import PublicView


class RandomAgent(Agent):
    """Uniform over the legal actions of the mask."""

    needs_observation = False
    needs_view = False

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView) -> int:
        legal = np.flatnonzero(action_mask)
        if not len(legal):
            raise ValueError(f"agent {self.name!r}: the action mask has no legal action")
        if len(legal) == 1:
            return int(legal[0])
        return int(legal[self.rng.integers(len(legal))])

    def action_probabilities(self, view: PublicView) -> np.ndarray:
        """Uniform over ``view.legal_actions``."""
        return np.full(len(view.legal_actions), 1.0 / len(view.legal_actions))
