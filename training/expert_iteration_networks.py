"""Expert iteration's policy networks in torch: built from a config or a policy file, turned
into the portable policy file's arrays and back, and saved as a policy file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bergen_env.action_features import NUM_ACTION_FEATURES, action_features
from bergen_env.observation import OBS_SIZE
from bergen_env.policy_file import PolicyNetwork, read_policy_file, save_policy_file

from .expert_iteration_config import ExpertIterationConfig

#: Dense layers as plain arrays: (weights, biases, activations).
LayerArrays = tuple[list[np.ndarray], list[np.ndarray], list[str]]
#: A network as plain arrays (its layers, and its action scorer's or None): what a job receives.
NetworkArrays = tuple[LayerArrays, LayerArrays | None]


def policy_network(arrays: NetworkArrays) -> PolicyNetwork:
    """The numpy network of :func:`network_arrays`' arrays."""
    layers, scorer = arrays
    return PolicyNetwork(*layers, None if scorer is None else PolicyNetwork(*scorer))


class ScoredNetwork(torch.nn.Module):
    """A policy network with an action scorer, as :class:`PolicyNetwork` plays it: ``trunk``
    (every layer but the last), ``head`` (the last layer: one logit per action) and ``scorer``
    (the trunk's output and an action's features -> a term added to that action's logit)."""

    def __init__(
        self, trunk: torch.nn.Sequential, head: torch.nn.Linear, scorer: torch.nn.Sequential
    ) -> None:
        super().__init__()
        self.trunk, self.head, self.scorer = trunk, head, scorer

    def forward(self, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        hidden = self.trunk(obs)
        rows, actions = torch.nonzero(masks, as_tuple=True)
        features = action_features(obs[rows].numpy(), actions.numpy())
        extra = self.scorer(torch.cat([hidden[rows], torch.as_tensor(features)], dim=1))[:, 0]
        return self.head(hidden).index_put((rows, actions), extra, accumulate=True)


#: What :func:`build_network` returns: a plain network, or one with an action scorer.
Network = torch.nn.Sequential | ScoredNetwork


def policy_logits(net: Network, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """The logits of ``net`` for a batch (the masks feed an action scorer)."""
    return net(obs, masks) if isinstance(net, ScoredNetwork) else net(obs)


_ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}


def _dense_layers(sizes: list[int], activation: str) -> list[torch.nn.Module]:
    """Linear layers of ``sizes`` with ``activation`` between them (none after the last)."""
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(_ACTIVATIONS[activation]())
    return layers


def _torch_layers(
    weights: list[np.ndarray], biases: list[np.ndarray], activations: list[str]
) -> list[torch.nn.Module]:
    """Torch layers holding the arrays of :meth:`PolicyNetwork.arrays`."""
    layers: list[torch.nn.Module] = []
    for w, b, activation in zip(weights, biases, activations):
        linear = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(w))
            linear.bias.copy_(torch.as_tensor(b))
        layers.append(linear)
        if activation != "identity":
            layers.append(_ACTIVATIONS[activation]())
    return layers


def build_network(cfg: ExpertIterationConfig, num_actions: int) -> Network:
    """The policy network: ``init_policy``'s layers and weights (its scorer too), or random ones
    of ``net_arch``; with ``scorer``, a new action scorer whose last layer is zero."""
    torch.manual_seed(cfg.seed)
    scorer_layers = None
    if cfg.init_policy is None:
        layers = _dense_layers([OBS_SIZE, *cfg.net_arch, num_actions], cfg.activation)
    else:
        network = read_policy_file(cfg.init_policy).network
        layers = _torch_layers(*network.arrays())
        if network.scorer is not None:
            scorer_layers = _torch_layers(*network.scorer.arrays())
    if scorer_layers is None and not cfg.scorer:
        return torch.nn.Sequential(*layers)
    head = layers[-1]
    if scorer_layers is None:
        sizes = [head.in_features + NUM_ACTION_FEATURES, *cfg.scorer, 1]
        scorer_layers = _dense_layers(sizes, "relu")
        with torch.no_grad():
            scorer_layers[-1].weight.zero_()
            scorer_layers[-1].bias.zero_()
    trunk = torch.nn.Sequential(*layers[:-1])
    return ScoredNetwork(trunk, head, torch.nn.Sequential(*scorer_layers))


def network_arrays(net: Network) -> NetworkArrays:
    """``net`` as the portable format's arrays: its layers, and its scorer's (or None)."""
    if isinstance(net, ScoredNetwork):
        main = torch.nn.Sequential(*net.trunk, net.head)
        return _layer_arrays(main), _layer_arrays(net.scorer)
    return _layer_arrays(net), None


def _layer_arrays(net: torch.nn.Sequential) -> LayerArrays:
    """The dense layers of ``net`` as (weights, biases, activations) of the portable format."""
    weights, biases, activations = [], [], []
    modules = list(net)
    for i, m in enumerate(modules):
        if isinstance(m, torch.nn.Linear):
            nxt = modules[i + 1] if i + 1 < len(modules) else None
            weights.append(m.weight.detach().cpu().numpy().astype(np.float32))
            biases.append(m.bias.detach().cpu().numpy().astype(np.float32))
            activations.append(
                "relu"
                if isinstance(nxt, torch.nn.ReLU)
                else "tanh"
                if isinstance(nxt, torch.nn.Tanh)
                else "identity"
            )
    return weights, biases, activations


def numpy_network(net: Network) -> PolicyNetwork:
    """``net`` as the numpy network that plays policy files."""
    return policy_network(network_arrays(net))


def save_network(
    net: Network, cfg: ExpertIterationConfig, path: Path, extra: dict[str, Any]
) -> Path:
    """Write ``net`` as a portable policy file with the config as provenance."""
    provenance = {
        "source": "bergen_env.training.expert_iteration",
        "config": {"default": dataclasses.asdict(cfg)},
        **extra,
    }
    layers, scorer = network_arrays(net)
    return save_policy_file(path, cfg.make_rules(), *layers, provenance, scorer)
