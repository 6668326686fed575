"""Asymmetric actor-critic for MaskablePPO: the critic also reads the hidden tiles.

Match outcomes here are mostly the deal: a critic that sees only the learner's observation
explains a small part of the return's variance, so PPO's advantages are mostly noise. With
config ``critic: oracle`` the training env is built with ``privileged=True`` (its observation is
the learner's 240 entries followed by :meth:`bergen_env.observation.Encoder.hidden`: the other
hands, the boneyard's contents and its next tile) and the model uses :class:`OracleCriticPolicy`,
whose value network reads the whole vector and whose policy network reads only the first
``OBS_SIZE`` entries. The critic is used only in training (to compute advantages), so the policy
stays fair: it acts from the observation alone, and :class:`training.ppo_policies.PPOAgent` feeds it
plain observations. (As in PerfectDou's "perfect-training-imperfect-execution" and Pinto et al.
2017, "Asymmetric Actor Critic for Image-Based Robot Learning".)
"""

from __future__ import annotations

from typing import Any

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor, MlpExtractor
from torch import nn

from bergen_env.observation import HIDDEN_SIZE, OBS_SIZE


class SplitMlpExtractor(nn.Module):
    """Separate policy and value MLPs; the policy MLP reads only the first ``actor_dim`` inputs."""

    def __init__(
        self,
        feature_dim: int,
        actor_dim: int,
        net_arch: list[int] | dict[str, list[int]],
        activation_fn: type[nn.Module],
        device: torch.device | str = "auto",
    ) -> None:
        super().__init__()
        actor = MlpExtractor(actor_dim, net_arch, activation_fn, device)
        critic = MlpExtractor(feature_dim, net_arch, activation_fn, device)
        self.actor_dim = actor_dim
        self.policy_net = actor.policy_net
        self.value_net = critic.value_net
        self.latent_dim_pi = actor.latent_dim_pi
        self.latent_dim_vf = critic.latent_dim_vf

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        """The policy's latent from the observation part (the hidden part, if any, is cut)."""
        return self.policy_net(features[..., : self.actor_dim])

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features)


class OracleCriticPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy for ``Box(OBS_SIZE + HIDDEN_SIZE)`` inputs (``privileged=True`` envs).

    The actor reads the first ``OBS_SIZE`` entries, so it also acts on a plain observation.
    Features extractors other than the default (flatten) are refused: they would mix the
    hidden entries into the actor's input.
    """

    def __init__(self, observation_space: Any, *args: Any, **kwargs: Any) -> None:
        shape = tuple(observation_space.shape or ())
        if shape != (OBS_SIZE + HIDDEN_SIZE,):
            raise ValueError(
                f"OracleCriticPolicy needs observations of shape ({OBS_SIZE + HIDDEN_SIZE},) "
                f"(an env built with privileged=True), got {shape}"
            )
        extractor = kwargs.get("features_extractor_class", FlattenExtractor)
        if extractor is not FlattenExtractor:
            raise ValueError(
                f"OracleCriticPolicy works with the default FlattenExtractor only, got {extractor}"
            )
        super().__init__(observation_space, *args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SplitMlpExtractor(
            self.features_dim, OBS_SIZE, self.net_arch, self.activation_fn, self.device
        )
