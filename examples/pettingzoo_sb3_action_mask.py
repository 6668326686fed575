"""PettingZoo's "SB3: Action Masked PPO" tutorial pattern on the Bergen AEC env.

    python examples/pettingzoo_sb3_action_mask.py --steps 20480
    python examples/pettingzoo_sb3_action_mask.py --steps 256 --eval-games 4   # a smoke run

One MaskablePPO model plays every seat of ``bergen_env.env()`` (self-play with a shared policy):
a wrapper makes the AEC env look like a Gymnasium env whose observation is the observation of
the agent on turn, and ``ActionMasker`` hands MaskablePPO the ``action_mask`` of that agent. As
in the tutorial, each step returns the reward that the agent who just moved has collected, so
only the mover of a match's last move sees its result; the self-play loop in
``selfplay_aec.py`` credits every seat. The model is then evaluated against random play.

Needs the ``[train]`` extra (torch, stable-baselines3, sb3-contrib).
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium as gym
import numpy as np
import pettingzoo.utils
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.wrappers import ActionMasker

import bergen_env


class SB3ActionMaskWrapper(pettingzoo.utils.BaseWrapper, gym.Env):
    """The AEC env as a Gymnasium env for SB3: the observation of the agent on turn."""

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed, options)
        first = self.possible_agents[0]  # every agent has the same spaces
        self.observation_space = super().observation_space(first)["observation"]
        self.action_space = super().action_space(first)
        return self.observe(self.agent_selection), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        mover = self.agent_selection
        super().step(action)
        return (
            self.observe(self.agent_selection),
            self._cumulative_rewards[mover],
            self.terminations[mover],
            self.truncations[mover],
            self.infos[mover],
        )

    def observe(self, agent: str) -> np.ndarray:
        return super().observe(agent)["observation"]

    def action_mask(self) -> np.ndarray:
        return super().observe(self.agent_selection)["action_mask"]


def train(steps: int, seed: int) -> MaskablePPO:
    env = SB3ActionMaskWrapper(bergen_env.env(num_players=2))
    env.reset(seed=seed)  # sets the spaces
    env = ActionMasker(env, lambda e: e.action_mask())
    model = MaskablePPO("MlpPolicy", env, n_steps=256, batch_size=64, seed=seed, verbose=0)
    model.learn(total_timesteps=steps)
    return model


def evaluate(model: MaskablePPO, games: int) -> float:
    """The model as player_1 against uniform random play as player_0: its match-win rate."""
    env = bergen_env.env(num_players=2)
    wins = 0
    for game in range(games):
        env.reset(seed=game)
        rng = np.random.default_rng(game)
        for agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            if termination or truncation:
                action = None
                if agent == "player_1":
                    wins += reward > 0  # +1 for a won match
            elif agent == "player_0":
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            else:
                action = int(
                    model.predict(
                        obs["observation"], action_masks=obs["action_mask"], deterministic=True
                    )[0]
                )
            env.step(action)
    env.close()
    return wins / games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_480)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-games", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = train(args.steps, args.seed)
    rate = evaluate(model, args.eval_games)
    print(f"trained {args.steps} steps; win rate vs random as player_1: {rate:.3f}")


if __name__ == "__main__":
    main()
