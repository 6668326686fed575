"""Self-play by driving the AEC env directly: one policy plays every seat, each seat learns from
its own match result (REINFORCE with a learned baseline, masked logits).

    python examples/selfplay_aec.py --matches 5000
    python examples/selfplay_aec.py --matches 8 --batch 4 --eval-matches 4   # a smoke run

The loop is PettingZoo's ``agent_iter``: ``env.last()`` gives the agent on turn its observation,
its action mask and the reward it collected since its previous turn; an agent whose match is
over is stepped with ``None``. Every decision is stored under the seat that made it and, when the
match ends, labelled with that seat's return, so every seat (winner and losers) is credited, not
only the one who made the last move. Every ``--eval-every`` matches the policy plays player_0
against random play.

Needs torch (the ``[train]`` extra).
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
import torch
from pettingzoo import AECEnv
from torch import nn
from torch.distributions import Categorical

import bergen_env


class Policy(nn.Module):
    def __init__(self, obs_size: int, num_actions: int, hidden: int = 128) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_size, hidden), nn.ReLU())
        self.logits = nn.Linear(hidden, num_actions)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[Categorical, torch.Tensor]:
        h = self.body(obs)
        logits = self.logits(h).masked_fill(~mask, -1e8)  # illegal actions: probability 0
        return Categorical(logits=logits), self.value(h).squeeze(-1)


def play_match(
    env: AECEnv, policy: Policy, seed: int
) -> tuple[list[tuple[np.ndarray, np.ndarray, int]], list[float]]:
    """One self-play match: every decision ``(obs, mask, action)`` and its seat's return."""
    env.reset(seed=seed)
    gen = torch.Generator().manual_seed(seed)
    decisions: dict[str, list[tuple[np.ndarray, np.ndarray, int]]] = defaultdict(list)
    returns: dict[str, float] = defaultdict(float)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, _ = env.last()
        returns[agent] += reward
        if termination or truncation:
            env.step(None)
            continue
        mask = obs["action_mask"].astype(bool)
        with torch.no_grad():
            dist, _ = policy(torch.as_tensor(obs["observation"]), torch.as_tensor(mask))
        action = int(torch.multinomial(dist.probs, 1, generator=gen))
        decisions[agent].append((obs["observation"], mask, action))
        env.step(action)
    samples = [d for agent in decisions for d in decisions[agent]]
    labels = [returns[agent] for agent in decisions for _ in decisions[agent]]
    return samples, labels


def win_rate_vs_random(policy: Policy, matches: int, num_players: int) -> float:
    """Greedy ``policy`` as player_0, uniform random play in the other seats."""
    env = bergen_env.env(num_players=num_players)
    wins = 0
    for m in range(matches):
        env.reset(seed=1_000_000 + m)
        rng = np.random.default_rng(m)
        for agent in env.agent_iter():
            obs, reward, termination, truncation, _ = env.last()
            if termination or truncation:
                wins += agent == "player_0" and reward > 0
                env.step(None)
                continue
            mask = obs["action_mask"].astype(bool)
            if agent == "player_0":
                with torch.no_grad():
                    dist, _ = policy(torch.as_tensor(obs["observation"]), torch.as_tensor(mask))
                action = int(dist.probs.argmax())
            else:
                action = int(rng.choice(np.flatnonzero(mask)))
            env.step(action)
    return wins / matches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=5000, help="self-play matches in total")
    parser.add_argument("--batch", type=int, default=32, help="matches per update")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--eval-matches", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    env = bergen_env.env(num_players=args.players)
    obs_space = env.observation_space("player_0")["observation"]
    policy = Policy(obs_space.shape[0], env.action_space("player_0").n)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)

    played, next_eval = 0, args.eval_every
    while played < args.matches:
        samples, labels = [], []
        for _ in range(min(args.batch, args.matches - played)):
            s, g = play_match(env, policy, seed=args.seed * 1_000_003 + played)
            samples += s
            labels += g
            played += 1
        obs = torch.as_tensor(np.stack([s[0] for s in samples]))
        mask = torch.as_tensor(np.stack([s[1] for s in samples]))
        action = torch.as_tensor([s[2] for s in samples])
        ret = torch.as_tensor(labels, dtype=torch.float32)
        dist, value = policy(obs, mask)
        advantage = ret - value.detach()
        loss = (
            -(dist.log_prob(action) * advantage).mean()
            + 0.5 * ((value - ret) ** 2).mean()
            - args.ent_coef * dist.entropy().mean()
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if played >= next_eval or played >= args.matches:
            next_eval += args.eval_every
            rate = win_rate_vs_random(policy, args.eval_matches, args.players)
            print(f"matches {played}: loss {loss.item():+.4f}, win rate vs random {rate:.3f}")


if __name__ == "__main__":
    main()
