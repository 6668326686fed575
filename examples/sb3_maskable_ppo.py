"""MaskablePPO (sb3-contrib) on the registered env through SB3's ``make_vec_env``, defaults only.

    python examples/sb3_maskable_ppo.py --total-timesteps 200000
    python examples/sb3_maskable_ppo.py --total-timesteps 512 --eval-episodes 4   # a smoke run

``make_vec_env("bergen_env/Bergen-v0")`` builds the envs (Monitor-wrapped, in a DummyVecEnv);
MaskablePPO reads each env's legal actions from its ``action_masks()`` method, so no wrapper is
needed. ``--save`` writes SB3's own zip (``model.save``), which plays in the arena and in the
terminal as ``ppo:PATH``; the script prints the command. Loading a zip unpickles it, so the
command says ``--trust-pickle`` (a file you made); to share the policy, convert it without
unpickling with ``bergen-export-policy PATH`` and play ``policy:PATH.safetensors``.

Needs the ``[train]`` extra (torch, stable-baselines3, sb3-contrib).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.env_util import make_vec_env

import bergen_env  # noqa: F401  (registers bergen_env/Bergen-v0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--total-timesteps", type=int, default=200_000)
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--opponent", default="random", help="agent string of the other seat")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=200)
    parser.add_argument("--save", default=None, help="save the policy here (a .zip)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    env_kwargs = {"opponents": [args.opponent]}
    vec_env = make_vec_env(
        "bergen_env/Bergen-v0", n_envs=args.n_envs, seed=args.seed, env_kwargs=env_kwargs
    )
    model = MaskablePPO("MlpPolicy", vec_env, n_steps=128, batch_size=128, seed=args.seed)
    model.learn(total_timesteps=args.total_timesteps)

    # the reward of a match is +1 (won) or -1 (lost): the mean return gives the win rate
    eval_env = make_vec_env("bergen_env/Bergen-v0", n_envs=1, seed=10_000, env_kwargs=env_kwargs)
    mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes)
    print(f"vs {args.opponent}: mean return {mean:+.3f}, win rate {(mean + 1) / 2:.3f}")

    if args.save:
        path = Path(args.save).with_suffix(".zip")
        model.save(path)
        print(f"saved {path}; evaluate it with:")
        print(f"bergen-evaluate --agents ppo:{path} greedy --matches 200 --trust-pickle")


if __name__ == "__main__":
    main()
