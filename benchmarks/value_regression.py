"""Can a network learn which play is better from playout values? A diagnostic for PPO's plateau.

    python -m benchmarks.value_regression [--decisions 1000000] [--epochs 8] [--workers 2]
                                          [--seed 0] [--rollout heuristic] [--scale 20]
                                          [--fit-to AGENT]

The heuristic plays the learner seat of the 2-player training env of ``configs/standard_2p.yaml``
(its opponents). At each real choice, every legal action is valued by one playout on a clone of the
**true** state (every hand and the boneyard order) with search's playouts (``--rollout``; the
default: the heuristic plays every seat from its own view) and match-win leaf values, in units of
a match: ``2 P(win) - 1``. A network of the shipped policy's shape is fitted
to these values, centred per decision: a regression learns their mean given the observation,
i.e. the action values PIMC estimates by sampling, under the real distribution of hidden tiles.

With ``--fit-to search...`` the network is fitted instead to that agent's action values
(``action_values``: PIMC's means over its sampled deals, from the public view; far less noisy,
far costlier), and still scored on the exact-state playouts, as is that agent's own choice.

On held-out matches (5%) it reports the mean centred value of the network's choice and of the
heuristic's, and of a player that keeps the heuristic's choice unless the network predicts a gain
above a margin. The values are single playouts (noisy) but unbiased, and both players are scored
on the same playouts, so the differences measure how much better the fitted network chooses.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from bergen_env.agents.base import make_agent
from bergen_env.agents.search import ROLLOUTS, WIN_VALUE, SearchAgent
from bergen_env.single_agent import BergenSingleAgentEnv
from bergen_env.training.config import TrainConfig, load_config
from bergen_env.training.selfplay import build_opponents
from bergen_env.training.train import build_model, make_vec_env

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "standard_2p.yaml"
JOB_DECISIONS = 5000
MARGINS = (0.0, 0.01, 0.02, 0.05, 0.1)


def collect(job: tuple[TrainConfig, int, int, str, str | None]) -> tuple[np.ndarray, ...]:
    """``decisions`` real choices of the heuristic (whole matches): observations, values (NaN off
    the legal actions, centred later), the heuristic's actions, the number of matches, and the
    ``fit_to`` agent's action values (NaN off the legal actions; no rows without ``fit_to``)."""
    cfg, decisions, seed, rollout, fit_to = job
    torch.set_num_threads(1)
    opponents = build_opponents(cfg, rank=seed % 100_003, snapshot_dir=None)
    env = BergenSingleAgentEnv(opponents=opponents, learner_seat="random", **cfg.env_kwargs())
    teacher = make_agent("heuristic")
    valuer = SearchAgent(samples=1, rollout=rollout)
    searcher = None if fit_to is None else make_agent(fit_to)
    rng = np.random.default_rng(seed)
    scale = WIN_VALUE * env.rules.target
    num_actions = int(env.action_space.n)

    def row(legal: list[int], values: list[float]) -> np.ndarray:
        """Values of ``legal`` in match units, NaN off them."""
        out = np.full(num_actions, np.nan, dtype=np.float32)
        out[legal] = np.asarray(values) / scale
        return out

    obs_rows, value_rows, actions, fit_rows = [], [], [], []
    matches = 0
    while len(actions) < decisions:
        matches += 1
        obs, _ = env.reset(seed=int(rng.integers(2**63)))
        teacher.reset(env.rules, env.seat, np.random.default_rng(int(rng.integers(2**63))))
        valuer.reset(env.rules, env.seat, np.random.default_rng(int(rng.integers(2**63))))
        if searcher is not None:  # its own stream: the same decisions with or without it
            searcher.reset(env.rules, env.seat, np.random.default_rng([seed, matches]))
        done = False
        while not done:
            view = env.game.public_view(env.seat)
            legal = list(view.legal_actions)
            a = int(teacher.act(obs, env.action_masks().astype(np.int8), view))
            if len(legal) > 1:
                obs_rows.append(obs)
                value_rows.append(row(legal, valuer.playout_values(env.game, legal)))
                actions.append(a)
                if searcher is not None:
                    means = searcher.action_values(view)
                    fit_rows.append(row(legal, [means[x] for x in legal]))
            obs, _, terminated, truncated, _ = env.step(a)
            done = terminated or truncated
    return (
        np.asarray(obs_rows),
        np.asarray(value_rows),
        np.asarray(actions),
        np.asarray(matches),
        np.asarray(fit_rows, dtype=np.float32).reshape(-1, num_actions),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.value_regression", description=__doc__)
    p.add_argument("--decisions", type=int, default=1_000_000, help="real choices collected")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rollout", default="heuristic", choices=ROLLOUTS)
    p.add_argument("--scale", type=float, default=20.0, help="logits per unit of value")
    p.add_argument(
        "--fit-to", default=None, help="fit to this agent's action values (e.g. search:samples=200)"
    )
    args = p.parse_args(argv)
    if args.decisions < 2 * JOB_DECISIONS:
        p.error(f"--decisions must be >= {2 * JOB_DECISIONS}")
    for name in ("epochs", "workers"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if not args.scale > 0:
        p.error("--scale must be > 0")
    if args.fit_to is not None and not hasattr(make_agent(args.fit_to), "action_values"):
        p.error(f"--fit-to {args.fit_to!r}: the agent has no action values (use search:...)")
    cfg = load_config(CONFIG, ["n_envs=1", "vec_env=dummy", f"seed={args.seed}"])
    n_jobs = -(-args.decisions // JOB_DECISIONS)
    seeds = np.random.SeedSequence(args.seed).generate_state(n_jobs).tolist()
    jobs = [(cfg, JOB_DECISIONS, int(s), args.rollout, args.fit_to) for s in seeds]
    t0 = time.time()
    parts = []
    with (
        multiprocessing.get_context("fork").Pool(args.workers) as pool,
        tqdm(total=n_jobs * JOB_DECISIONS, desc="playout values", unit="decision") as bar,
    ):
        for part in pool.imap(collect, jobs):
            parts.append(part)
            bar.update(len(part[2]))
    obs, values, actions = (np.concatenate([part[i] for part in parts]) for i in range(3))
    matches = sum(int(part[3]) for part in parts)
    fit_values = values if args.fit_to is None else np.concatenate([part[4] for part in parts])
    collect_s = time.time() - t0

    legal = ~np.isnan(values)

    def centre(v: np.ndarray) -> np.ndarray:
        mean = np.where(legal, v, 0.0).sum(1, keepdims=True) / legal.sum(1, keepdims=True)
        return np.where(legal, v - mean, 0.0).astype(np.float32)

    centred, fit_target = centre(values), centre(fit_values)
    # hold out every 20th job: whole matches, so no hand is in both sets
    job = np.concatenate([np.full(len(part[2]), k) for k, part in enumerate(parts)])
    test, train = np.flatnonzero(job % 20 == 0), np.flatnonzero(job % 20 != 0)
    rng = np.random.default_rng(args.seed)

    torch.manual_seed(args.seed)
    model = build_model(cfg, make_vec_env(cfg, None), Path("."))
    policy = model.policy
    obs_t, legal_t, target_t = map(torch.as_tensor, (obs, legal, fit_target))
    n_legal = legal_t.sum(1).float()

    def centred_logits(idx: torch.Tensor) -> torch.Tensor:
        features = policy.extract_features(obs_t[idx], policy.pi_features_extractor)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features)) / args.scale
        m = legal_t[idx]
        return logits - (logits * m).sum(1, keepdim=True) / n_legal[idx, None]

    steps = args.epochs * -(-len(train) // 1024)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    for _ in tqdm(range(args.epochs), desc="fit", unit="epoch"):
        shuffled = torch.as_tensor(rng.permutation(train))
        for start in range(0, len(train), 1024):
            idx = shuffled[start : start + 1024]
            err = (centred_logits(idx) - target_t[idx]) * legal_t[idx]
            loss = ((err**2).sum(1) / n_legal[idx]).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            cosine.step()

    with torch.no_grad():
        pred = centred_logits(torch.as_tensor(test)).numpy()
    q = np.where(legal[test], centred[test], -np.inf)
    pred = np.where(legal[test], pred, -np.inf)
    rows = np.arange(len(test))
    teacher = actions[test]
    best = pred.argmax(1)

    def gain(choice: np.ndarray) -> str:
        """Mean held-out gain of ``choice`` over the heuristic's choice, ± its standard error."""
        diff = q[rows, choice] - q[rows, teacher]
        return f"{diff.mean():+.5f} ± {diff.std() / np.sqrt(len(diff)):.5f}"

    print(
        f"\n{len(actions)} real choices of the heuristic in {matches} matches "
        f"({len(actions) / matches:.1f} a match; {collect_s:.0f} s); centred values: standard "
        f"deviation {centred[legal].std():.3f}"
    )
    print(
        f"{len(test)} held out; centred "
        f"playout value (match units, 2 P(win) - 1) of the heuristic's choice "
        f"{q[rows, teacher].mean():.4f}, of the network's {q[rows, best].mean():.4f}, of the "
        f"best in hindsight {q.max(1).mean():.4f}"
    )
    if args.fit_to is not None:
        own = np.where(legal[test], fit_target[test], -np.inf).argmax(1)
        print(
            f"fitted to {args.fit_to}'s action values (centred: standard deviation "
            f"{fit_target[legal].std():.3f}); its own choice: gain over the heuristic {gain(own)}"
        )
    print(
        "\n| keep the heuristic's play unless the predicted gain is above | plays changed | "
        "gain over the heuristic (± s.e.) |\n|---|---|---|"
    )
    predicted = pred[rows, best] - pred[rows, teacher]
    for margin in MARGINS:
        choice = np.where(predicted > margin, best, teacher)
        print(f"| {margin} | {np.mean(choice != teacher):.3f} | {gain(choice)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
