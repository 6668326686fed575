"""Expert iteration's fit: search's action values as soft targets, the held-out split and the
cross-entropy fit of the network."""

from __future__ import annotations

import numpy as np
import torch

from bergen_env.stop import check_stop

from .expert_iteration_collection import Decisions
from .expert_iteration_config import ExpertIterationConfig
from .expert_iteration_networks import Network, policy_logits


def soft_targets(values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(values / temperature)`` over each row's legal actions; 0 on illegal ones."""
    masks = np.asarray(masks, dtype=bool)
    if not masks.any(axis=1).all():
        raise ValueError("soft_targets: a decision has no legal action")
    z = np.where(masks, np.asarray(values, dtype=np.float64) / temperature, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def split_matches(data: Decisions, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the fitted and held-out decisions: whole matches are held out."""
    rng = np.random.default_rng(seed)
    matches = np.unique(data.match)
    n_held = max(1, int(round(len(matches) * fraction)))
    held = np.isin(data.match, rng.choice(matches, size=n_held, replace=False))
    return np.flatnonzero(~held), np.flatnonzero(held)


def masked_log_softmax(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over the legal actions (``-inf`` on the illegal ones)."""
    return torch.log_softmax(logits.masked_fill(~masks, float("-inf")), dim=1)


def imitation_loss(
    logits: torch.Tensor, masks: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """The mean over a batch of the cross-entropy of the masked policy to ``targets`` (see
    :func:`soft_targets`)."""
    # targets are 0 where logp is -inf: count those terms as 0
    logp = masked_log_softmax(logits, masks).masked_fill(~masks, 0.0)
    return -(targets * logp).sum(dim=1).mean()


def fit(
    net: Network,
    data: Decisions,
    train_idx: np.ndarray,
    cfg: ExpertIterationConfig,
    seed: int,
) -> float:
    """Fit ``net`` to the soft targets of ``data[train_idx]`` with Adam at ``learning_rate``;
    returns the last epoch's loss."""
    rng = np.random.default_rng(seed)
    obs = torch.as_tensor(data.obs)
    masks = torch.as_tensor(data.masks)
    targets = torch.as_tensor(soft_targets(data.values, data.masks, cfg.temperature))
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate)
    net.train()
    loss_mean = float("nan")
    for _ in range(cfg.epochs):
        order = torch.as_tensor(rng.permutation(train_idx))
        total, count = 0.0, 0
        for start in range(0, len(order), cfg.batch_size):
            check_stop()
            idx = order[start : start + cfg.batch_size]
            logits = policy_logits(net, obs[idx], masks[idx])
            loss = imitation_loss(logits, masks[idx], targets[idx])
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            optimizer.step()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
        loss_mean = total / max(count, 1)
    net.eval()
    return loss_mean
