"""A self-play league for the batched env: frozen snapshots of the learner, drawn by how often
they still beat it (prioritized fictitious self-play, PFSP).

Every snapshot is a :class:`FrozenPolicy`: a copy of the learner's actor at the time it was
taken, played deterministically (the most probable legal action, as ``ppo:PATH`` plays) over a
whole batch of rows with one forward. :class:`League` keeps the ``pool_size`` most recent
snapshots and each one's results against the learner; :meth:`League.draw` picks a snapshot with
probability proportional to ``(1 - p) ** exponent`` (+ a small floor), where ``p`` is the
learner's win rate against it so far (a Beta(1, 1) prior: an unplayed snapshot counts as
``p = 0.5``). Snapshots the learner beats stop being drawn; those that still win are drawn
most. The batched env (:mod:`bergen_env.training.batched_env`) draws a snapshot for every match
by these odds.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

#: Weight every snapshot keeps whatever its results (so none is starved for good).
PFSP_FLOOR = 0.02


class FrozenPolicy(nn.Module):
    """The actor of a MaskablePPO policy, frozen: ``f(observations, action_masks) -> actions``
    (numpy in, numpy out; the argmax of the masked logits)."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.features = copy.deepcopy(policy.pi_features_extractor)
        self.body = copy.deepcopy(policy.mlp_extractor.policy_net)
        self.head = copy.deepcopy(policy.action_net)
        self.requires_grad_(False)
        self.eval()
        self.cpu()

    def __call__(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(observations, dtype=np.float32))
            logits = self.head(self.body(self.features(x)))
            legal = torch.from_numpy(np.ascontiguousarray(action_masks)).bool()
            return logits.masked_fill(~legal, -torch.inf).argmax(dim=1).numpy()

    @classmethod
    def from_file(cls, path: Path) -> FrozenPolicy:
        """A snapshot file this run wrote (an SB3 zip, unpickled: trusted as the run's own)."""
        from .ppo_policies import load_model

        model, _ = load_model(path, trust_pickle=True)
        return cls(model.policy)


class League:
    """Past snapshots of the learner and their results against it; see the module docstring."""

    def __init__(self, pool_size: int, exponent: float) -> None:
        self.pool_size, self.exponent = pool_size, float(exponent)
        self.steps: list[int] = []  # the step each snapshot was taken at, oldest first
        self.policies: list[FrozenPolicy] = []
        self.wins: list[float] = []  # the learner's wins (a draw counts half) against each
        self.games: list[int] = []

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, steps: int, policy: FrozenPolicy) -> None:
        """A new snapshot (the oldest leaves once there are ``pool_size``)."""
        self.steps.append(steps)
        self.policies.append(policy)
        self.wins.append(0.0)
        self.games.append(0)
        if len(self.steps) > self.pool_size:
            for kept in (self.steps, self.policies, self.wins, self.games):
                del kept[0]

    def win_rates(self) -> np.ndarray:
        """The learner's win rate against each snapshot (Beta(1, 1) prior)."""
        return (np.array(self.wins) + 1.0) / (np.array(self.games) + 2.0)

    def weights(self) -> np.ndarray:
        """The PFSP draw probabilities of the snapshots."""
        w = (1.0 - self.win_rates()) ** self.exponent + PFSP_FLOOR
        return w / w.sum()

    def policy_at(self, taken: int) -> FrozenPolicy | None:
        """The snapshot taken at step ``taken`` (None if the league no longer holds it)."""
        return self.policies[self.steps.index(taken)] if taken in self.steps else None

    def record(self, taken: int, learner_score: np.ndarray) -> None:
        """Book finished matches against the snapshot taken at step ``taken`` (the learner's
        score in each: 1 won, 0 lost, 0.5 drawn); one the league dropped is not booked."""
        if taken in self.steps and len(learner_score):
            index = self.steps.index(taken)
            self.wins[index] += float(np.sum(learner_score))
            self.games[index] += len(learner_score)

    def state(self) -> dict[str, Any]:
        """The results (the snapshots themselves are files of the run)."""
        return {"steps": list(self.steps), "wins": list(self.wins), "games": list(self.games)}

    def load_state(self, state: dict[str, Any]) -> None:
        """Put back :meth:`state`'s results for the snapshots this league holds."""
        kept = dict(zip(state["steps"], zip(state["wins"], state["games"])))
        for i, taken in enumerate(self.steps):
            self.wins[i], self.games[i] = kept.get(taken, (0.0, 0))
