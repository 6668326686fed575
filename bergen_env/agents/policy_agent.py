"""A portable policy file as an agent: ``make_agent("policy:policies/standard_2p.safetensors")``.

The file format is :mod:`bergen_env.policy_file` (arrays and a JSON header; nothing in it runs as
code). The agent plays the network's most probable legal action, computed in numpy, so it needs
neither torch nor Stable-Baselines3. It refuses rules, player counts or partnerships the policy
was not trained for; ``policy:path=FILE,allow_mismatch=true`` plays them with a warning.
``policy:path=FILE,mirror=true`` plays the mean of the network's logits for the position and for
its mirror image (:mod:`bergen_env.symmetry`; mapped back), a symmetric policy from any network.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import numpy as np

from bergen_env.agents.base import Agent, checked_legal_actions, point_mass
from bergen_env.engine import BergenState, PublicView
from bergen_env.observation import OBS_SIZE, Encoder
from bergen_env.policy_file import (
    PolicyFile,
    PolicyFileError,
    check_trained_rules,
    legal_actions_mask,
    masked_softmax,
    read_policy_file,
)
from bergen_env.rules import Rules
from bergen_env.symmetry import mirror_actions, mirror_observations, mirrorable
from bergen_env.validation import check_bool


class PolicyAgent(Agent):
    """Plays a portable policy file deterministically (the most probable legal action)."""

    needs_view = False  # acts from the observation and the mask only

    def __init__(
        self, path: str | Path | None = None, allow_mismatch: bool = False, mirror: bool = False
    ) -> None:
        if path is None:
            raise PolicyFileError("a policy agent needs the path of a policy file (policy:PATH)")
        for key, value in (("allow_mismatch", allow_mismatch), ("mirror", mirror)):
            check_bool(key, value, label="parameter", error=ValueError)
        self.policy = read_policy_file(path)
        self.path = str(path)
        self.allow_mismatch, self.mirror = allow_mismatch, mirror
        self.name = f"policy:{self.path}"

    @classmethod
    def from_policy_file(cls, policy: PolicyFile, allow_mismatch: bool = False) -> PolicyAgent:
        """An agent for a file already loaded (shares its read-only arrays)."""
        agent = cls.__new__(cls)
        agent.policy, agent.path = policy, policy.path
        agent.allow_mismatch, agent.mirror = allow_mismatch, False
        agent.name = f"policy:{policy.path}"
        return agent

    @property
    def trained_rules(self) -> Rules:
        """The rules the policy was trained for."""
        return self.policy.rules

    def __deepcopy__(self, memo: dict) -> PolicyAgent:
        """A second seat for the same policy: shares the (read-only) network."""
        twin = copy.copy(self)
        twin.__dict__.pop("rng", None)
        return twin

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        check_trained_rules(
            f"policy file {self.path!r}", self.trained_rules, rules, self.allow_mismatch
        )
        super().reset(rules, seat, rng)

    def logits(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The network's logits for one observation or a batch; with ``mirror``, their mean with
        the logits of each mirrored position that has an image, mapped back."""
        network = self.policy.network
        logits = network.logits(observation, action_mask)
        if not self.mirror:
            return logits
        has_image = mirrorable(observation)
        if not has_image.any():
            return logits
        image = network.logits(mirror_observations(observation), mirror_actions(action_mask))
        return np.where(has_image[..., None], (logits + mirror_actions(image)) / 2, logits)

    def probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The policy's distribution over actions (zero on illegal ones)."""
        legal = legal_actions_mask(action_mask)
        return masked_softmax(self.logits(observation, legal), legal)

    def action_probabilities(self, view: PublicView) -> np.ndarray:
        """All on the action :meth:`act` plays from ``view``'s observation, over
        ``view.legal_actions``."""
        observation, mask = observation_of_view(view)
        return point_mass(view, self.act(observation, mask, None))

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """:meth:`act` for a batch of rows at once (one forward pass): ``(M, 240)``
        observations, ``(M, A)`` masks, the ``(M,)`` actions (a batched env's opponent)."""
        legal = legal_actions_mask(action_masks)
        logits = self.logits(observations, legal)
        return np.where(legal, logits, -np.inf).argmax(axis=-1)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView | None) -> int:
        legal = checked_legal_actions(
            self.name,
            observation,
            (OBS_SIZE,),
            action_mask,
            self.policy.num_actions,
            lambda shape: PolicyFileError(
                f"policy file {self.path!r} has {self.policy.num_actions} actions but the "
                f"action mask has shape {shape}"
            ),
        )
        if len(legal) == 1:
            return int(legal[0])
        logits = self.logits(observation, action_mask)
        return int(legal[np.argmax(logits[legal])])


@functools.lru_cache(maxsize=16)
def _encoder(rules: Rules) -> Encoder:
    return Encoder(rules)


def observation_of_view(view: PublicView) -> tuple[np.ndarray, np.ndarray]:
    """The observation and action mask of ``view``'s seat (what the environment gives it).

    The observation reads only the seat's own hand and public counts, so the other hands and the
    boneyard of the state it is encoded from are placeholders of the right sizes.
    """
    hands = [[0] * size for size in view.hand_sizes]
    hands[view.seat] = list(view.hand)
    state = BergenState.from_view(view, hands, [0] * view.boneyard_size, _PLACEHOLDER_RNG)
    observation = _encoder(view.rules).observe(state, view.seat, view.legal_actions)
    mask = np.zeros(view.rules.num_actions, dtype=np.int8)
    mask[list(view.legal_actions)] = 1
    return observation, mask


#: Never drawn from: a placeholder state deals no further hand.
_PLACEHOLDER_RNG = np.random.default_rng(0)
