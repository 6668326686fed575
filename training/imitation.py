"""Imitation warm start: fit the PPO policy to a scripted teacher before reinforcement learning.

PPO from a random network spends most of a laptop budget rediscovering what a rule player knows
(play the header tile, do not open a header for the next seat). With ``imitation_teacher`` set,
``bergen_env.training.train`` first plays ``imitation_decisions`` learner decisions with the teacher
in the learner's seat (same env, opponents and reward as training), then fits the network to them:

- the policy head by cross-entropy with the teacher's action (masked logits, as PPO acts);
- the value head by regression on the discounted return (``gamma``) that followed each decision,
  so PPO's first advantages are not computed from an untrained critic.

Both heads are fitted together (``vf_coef`` weighs the value loss) for ``imitation_epochs``
passes with Adam (``imitation_lr``); 5% of the matches are held out to report the agreement with
the teacher. Collection runs in ``imitation_workers`` processes, in jobs whose env, opponents and
teacher are seeded from the run's seed and the job's index, so the data (whatever the worker
count) and the fitted network are reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from bergen_env.agents.base import make_agent
from bergen_env.single_agent import BergenSingleAgentEnv
from bergen_env.stop import check_stop, pool_results

from .config import TrainConfig
from .run_folder import forked_pool
from .selfplay import build_opponents


@dataclass
class TeacherData:
    """Learner decisions of the teacher: observations, masks, actions and returns that followed."""

    obs: np.ndarray  # float32 (N, OBS_SIZE)
    masks: np.ndarray  # bool (N, num_actions)
    actions: np.ndarray  # int64 (N,)
    returns: np.ndarray  # float32 (N,)
    match: np.ndarray  # int64 (N,): index of the match each decision belongs to

    def __len__(self) -> int:
        return len(self.actions)


def collect_teacher_data(cfg: TrainConfig, decisions: int, seed: int) -> TeacherData:
    """Play whole matches with ``cfg.imitation_teacher`` in the learner seat until ``decisions``.

    The last match is played to its end, so slightly more decisions may be returned.
    """
    if cfg.imitation_teacher is None:
        raise ValueError("collect_teacher_data: the config has no 'imitation_teacher'")
    # the training opponents (scripted only: no snapshots exist yet), drawn anew every match
    opponents = build_opponents(cfg, rank=seed % 100_003, snapshot_dir=None)
    env = BergenSingleAgentEnv(opponents=opponents, learner_seat="random", **cfg.env_kwargs())
    teacher = make_agent(cfg.imitation_teacher)
    rng = np.random.default_rng(seed)
    obs_rows: list[np.ndarray] = []
    mask_rows: list[np.ndarray] = []
    actions: list[int] = []
    returns: list[float] = []
    match_ids: list[int] = []
    gamma = cfg.gamma
    match = 0
    while len(actions) < decisions:
        obs, _ = env.reset(seed=int(rng.integers(2**63)))
        teacher.reset(env.rules, env.seat, np.random.default_rng(int(rng.integers(2**63))))
        rewards: list[float] = []
        done = False
        while not done:
            mask = env.action_masks()
            view = env.game.public_view(env.seat)
            a = int(teacher.act(obs, mask.astype(np.int8), view))
            obs_rows.append(obs)
            mask_rows.append(mask)
            actions.append(a)
            match_ids.append(match)
            obs, reward, terminated, truncated, _ = env.step(a)
            rewards.append(reward)
            done = terminated or truncated
        g = 0.0
        tail: list[float] = []
        for r in reversed(rewards):
            g = r + gamma * g
            tail.append(g)
        returns.extend(reversed(tail))
        match += 1
    return TeacherData(
        obs=np.asarray(obs_rows, dtype=np.float32),
        masks=np.asarray(mask_rows, dtype=bool),
        actions=np.asarray(actions, dtype=np.int64),
        returns=np.asarray(returns, dtype=np.float32),
        match=np.asarray(match_ids, dtype=np.int64),
    )


#: Decisions per collection job: jobs are seeded by index, so the data do not depend on workers.
JOB_DECISIONS = 10_000


def _collect_job(args: tuple[TrainConfig, int, int]) -> TeacherData:
    cfg, decisions, seed = args
    torch.set_num_threads(1)
    return collect_teacher_data(cfg, decisions, seed)


def collect_parallel(cfg: TrainConfig, decisions: int, seed: int) -> TeacherData:
    """:func:`collect_teacher_data` in jobs of ``JOB_DECISIONS`` over ``imitation_workers``.

    Job ``k`` is seeded by ``SeedSequence(seed)``'s ``k``-th child whatever the worker count, so
    the data are the same for any ``imitation_workers``. A progress bar counts decisions.
    """
    from tqdm import tqdm

    n_jobs = -(-decisions // JOB_DECISIONS)
    seeds = np.random.SeedSequence(seed).generate_state(n_jobs).tolist()
    jobs = [
        (cfg, min(JOB_DECISIONS, decisions - k * JOB_DECISIONS), int(seeds[k]))
        for k in range(n_jobs)
    ]
    parts: list[TeacherData] = []
    with tqdm(total=decisions, desc="teacher data", unit="decision") as bar:
        if cfg.imitation_workers == 1:
            for job in jobs:
                check_stop()
                part = _collect_job(job)
                parts.append(part)
                bar.update(len(part))
        else:
            with forked_pool(cfg.imitation_workers) as pool:
                for part in pool_results(pool.imap(_collect_job, jobs)):
                    parts.append(part)
                    bar.update(len(part))
    offsets = np.cumsum([0] + [int(p.match.max()) + 1 for p in parts[:-1]])
    return TeacherData(
        obs=np.concatenate([p.obs for p in parts]),
        masks=np.concatenate([p.masks for p in parts]),
        actions=np.concatenate([p.actions for p in parts]),
        returns=np.concatenate([p.returns for p in parts]),
        match=np.concatenate([p.match + off for p, off in zip(parts, offsets)]),
    )


def fit_policy(
    policy: Any,
    data: TeacherData,
    epochs: int,
    lr: float,
    batch_size: int,
    vf_coef: float,
    seed: int,
    log: Any = None,
) -> dict[str, float]:
    """Fit an SB3 ``MaskableActorCriticPolicy`` to ``data``; returns held-out metrics.

    ``log(epoch, metrics)`` is called after every epoch (metrics: train loss, held-out
    cross-entropy, agreement with the teacher and value error).
    """
    rng = np.random.default_rng(seed)
    matches = np.unique(data.match)
    held = set(rng.choice(matches, size=max(1, len(matches) // 20), replace=False).tolist())
    is_held = np.fromiter((m in held for m in data.match), dtype=bool, count=len(data))
    train_idx = np.flatnonzero(~is_held)
    test_idx = np.flatnonzero(is_held)
    device = policy.device  # the decisions go where the network is, once
    obs = torch.as_tensor(data.obs, device=device)
    masks = torch.as_tensor(data.masks, device=device)
    actions = torch.as_tensor(data.actions, device=device)
    returns = torch.as_tensor(data.returns, device=device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    policy.set_training_mode(True)
    metrics: dict[str, float] = {}
    for epoch in range(epochs):
        order = torch.as_tensor(rng.permutation(train_idx), device=device)
        total, count = 0.0, 0
        for start in range(0, len(order), batch_size):
            check_stop()
            idx = order[start : start + batch_size]
            values, log_prob, _ = policy.evaluate_actions(obs[idx], actions[idx], masks[idx])
            loss = -log_prob.mean() + vf_coef * torch.nn.functional.mse_loss(
                values.flatten(), returns[idx]
            )
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
        metrics = {"train_loss": total / max(count, 1), **_held_out(policy, data, test_idx)}
        if log is not None:
            log(epoch, metrics)
    policy.set_training_mode(False)
    return metrics


@torch.no_grad()
def _held_out(policy: Any, data: TeacherData, idx: np.ndarray) -> dict[str, float]:
    """Cross-entropy, agreement with the teacher's action and value RMSE on decisions ``idx``."""
    policy.set_training_mode(False)
    device = policy.device
    obs = torch.as_tensor(data.obs[idx], device=device)
    masks = torch.as_tensor(data.masks[idx], device=device)
    actions = torch.as_tensor(data.actions[idx], device=device)
    returns = torch.as_tensor(data.returns[idx], device=device)
    values, log_prob, _ = policy.evaluate_actions(obs, actions, masks)
    dist = policy.get_distribution(obs, action_masks=masks)
    chosen = dist.distribution.probs.argmax(dim=1)
    policy.set_training_mode(True)
    return {
        "test_cross_entropy": float(-log_prob.mean()),
        "test_agreement": float((chosen == actions).float().mean()),
        "test_value_rmse": float(torch.sqrt(torch.mean((values.flatten() - returns) ** 2))),
    }


def imitation_warm_start(model: Any, cfg: TrainConfig, log: Any = None) -> dict[str, float]:
    """Collect the teacher's decisions and fit ``model.policy`` to them (see the module doc)."""
    data = collect_parallel(cfg, cfg.imitation_decisions, seed=cfg.seed + 7919)
    return fit_policy(
        model.policy,
        data,
        epochs=cfg.imitation_epochs,
        lr=cfg.imitation_lr,
        batch_size=cfg.imitation_batch_size,
        vf_coef=cfg.vf_coef,
        seed=cfg.seed,
        log=log,
    ) | {"decisions": float(len(data)), "matches": float(len(np.unique(data.match)))}
