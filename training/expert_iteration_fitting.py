"""Expert iteration's fit: search's action values as soft targets, the held-out split and the
cross-entropy fit of the network (with the regret and value terms, mirror images and renamed
numbers the config asks for)."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from bergen_env.symmetry import relabel_gathers
from bergen_env.tiles import NUM_NUMBERS

from .expert_iteration_collection import Decisions
from .expert_iteration_config import ExpertIterationConfig
from .expert_iteration_networks import Network, hidden_and_logits, hidden_width


def _scaled_gaps(
    values: np.ndarray, masks: np.ndarray, temperature: float, name: str
) -> np.ndarray:
    """``(max_b v(b) - v(a)) / temperature`` over each row's legal actions, ``inf`` on illegal
    ones (float64); ``name`` is the caller, named in the error for a row with no legal action."""
    masks = np.asarray(masks, dtype=bool)
    if not masks.any(axis=1).all():
        raise ValueError(f"{name}: a decision has no legal action")
    z = np.where(masks, np.asarray(values, dtype=np.float64) / temperature, -np.inf)
    return z.max(axis=1, keepdims=True) - z


def soft_targets(values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(values / temperature)`` over each row's legal actions; 0 on illegal ones."""
    p = np.exp(-_scaled_gaps(values, masks, temperature, "soft_targets"))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def target_values(targets: np.ndarray, values: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Each row's value under its soft target (:func:`soft_targets`): ``sum_a target(a) v(a)``."""
    return (targets * np.where(masks, values, 0.0)).sum(axis=1).astype(np.float32)


def scaled_regrets(values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """Each legal action's regret (the row's best value minus its value) over ``temperature``;
    0 on illegal ones."""
    gaps = _scaled_gaps(values, masks, temperature, "scaled_regrets")
    return np.where(np.isfinite(gaps), gaps, 0.0).astype(np.float32)


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
    logits: torch.Tensor,
    masks: torch.Tensor,
    targets: torch.Tensor,
    regrets: torch.Tensor | None,
    regret_weight: float = 0.0,
) -> torch.Tensor:
    """The mean over a batch of the cross-entropy of the masked policy to ``targets`` (see
    :func:`soft_targets`), plus ``regret_weight`` times its expected ``regrets`` (see
    :func:`scaled_regrets`)."""
    # targets are 0 where logp is -inf: count those terms as 0
    logp = masked_log_softmax(logits, masks).masked_fill(~masks, 0.0)
    loss = -(targets * logp).sum(dim=1).mean()
    if regret_weight:  # the policy is 0 on the illegal actions, whose regret is 0 too
        if regrets is None:
            raise ValueError("imitation_loss: regret_weight > 0 needs the regrets")
        loss = loss + regret_weight * (logp.exp() * masks * regrets).sum(dim=1).mean()
    return loss


def make_optimizer(
    net: torch.nn.Module, cfg: ExpertIterationConfig, steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler | None]:
    """AdamW over ``net``'s parameters at ``learning_rate`` with ``weight_decay`` (plain Adam at
    0), and with ``lr_schedule`` ``cosine`` the scheduler that takes the step size to 0 over
    ``steps`` minibatches."""
    optimizer = torch.optim.AdamW(
        net.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay
    )
    if cfg.lr_schedule == "constant":
        return optimizer, None
    return optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)


class Relabelling:
    """Every renaming of the numbers 0..6 as gather indices, to show minibatches relabelled."""

    def __init__(self, num_actions: int) -> None:
        perms = np.array(list(itertools.permutations(range(NUM_NUMBERS))), dtype=np.int64)
        g_obs, g_act = relabel_gathers(perms)
        self.obs = torch.as_tensor(g_obs)
        self.actions = torch.as_tensor(g_act[:, :num_actions])

    def apply(
        self, batch: list[torch.Tensor | None], fraction: float, rng: np.random.Generator
    ) -> list[torch.Tensor | None]:
        """``[obs, per-action arrays...]`` with a ``fraction`` of the rows relabelled, each by
        a permutation drawn uniformly (row 0 of the table is the identity)."""
        rows = len(batch[0])
        pick = rng.integers(len(self.obs), size=rows) * (rng.random(rows) < fraction)
        pick = torch.as_tensor(pick)
        out: list[torch.Tensor | None] = [batch[0].gather(1, self.obs[pick])]
        acts = self.actions[pick]
        out += [None if x is None else x.gather(1, acts) for x in batch[1:]]
        return out


def fit(
    net: Network,
    data: Decisions,
    train_idx: np.ndarray,
    cfg: ExpertIterationConfig,
    seed: int,
) -> float:
    """Fit ``net`` to the soft targets of ``data[train_idx]`` (and their mirror images with
    ``mirror``; a ``relabel`` fraction of each minibatch with its numbers renamed), plus
    ``regret_weight`` times the expected regret and ``value_weight`` times a value head's
    squared error; returns the last epoch's loss."""
    rng = np.random.default_rng(seed)
    if cfg.mirror:
        images = data.mirror_images(train_idx)
        train_idx = np.concatenate([train_idx, len(data) + np.arange(len(images))])
        data = Decisions.concatenate([data, images])
    obs = torch.as_tensor(data.obs)
    masks = torch.as_tensor(data.masks)
    soft = soft_targets(data.values, data.masks, cfg.temperature)
    targets = torch.as_tensor(soft)
    regrets = (  # only when the loss uses them: an array as large as the values
        torch.as_tensor(scaled_regrets(data.values, data.masks, cfg.temperature))
        if cfg.regret_weight
        else None
    )
    value_head, state_values = None, None
    if cfg.value_weight:
        value_head = torch.nn.Linear(hidden_width(net), 1)
        state_values = torch.as_tensor(target_values(soft, data.values, data.masks))
    relabelling = Relabelling(data.masks.shape[1]) if cfg.relabel else None
    steps = cfg.epochs * -(-len(train_idx) // cfg.batch_size)
    trained = torch.nn.ModuleList([net] if value_head is None else [net, value_head])
    optimizer, schedule = make_optimizer(trained, cfg, steps)
    net.train()
    loss_mean = float("nan")
    for _ in range(cfg.epochs):
        order = torch.as_tensor(rng.permutation(train_idx))
        total, count = 0.0, 0
        for start in range(0, len(order), cfg.batch_size):
            idx = order[start : start + cfg.batch_size]
            batch = [obs[idx], masks[idx], targets[idx]]
            batch.append(None if regrets is None else regrets[idx])
            if relabelling is not None:
                batch = relabelling.apply(batch, cfg.relabel, rng)
            hidden, logits = hidden_and_logits(net, batch[0], batch[1])
            loss = imitation_loss(logits, batch[1], batch[2], batch[3], cfg.regret_weight)
            if value_head is not None:
                predicted = value_head(hidden)[:, 0]
                value_loss = torch.nn.functional.mse_loss(predicted, state_values[idx])
                loss = loss + cfg.value_weight * value_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained.parameters(), 1.0)
            optimizer.step()
            if schedule is not None:
                schedule.step()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
        loss_mean = total / max(count, 1)
    net.eval()
    return loss_mean
