"""PPO on the batched Bergen env, CleanRL style: one file, every step visible.

The learner plays one seat of ``--num-envs`` matches at once against batched opponents
(:class:`bergen_env.vector.BergenLearnerVectorEnv`); illegal actions are masked out of the
policy's logits with ``infos["action_mask"]``. Needs the ``[vector]`` and ``[train]`` extras.

    python examples/vector_ppo.py --num-envs 256 --total-timesteps 2000000 --opponent random

``--opponent`` is any batched opponent: ``random``, ``greedy``, ``heuristic``, ``tuned`` or
``policy:PATH``.

Each iteration prints the steps per second and the mean reward of the matches that ended in it
(the ``match`` reward: +1 won, -1 lost with two sides). ``--save PATH`` writes the actor as a
portable policy file (written only if its logits match the torch actor's), for the arena:
``python -m bergen_env.training.evaluate --agents policy:PATH heuristic --matches 2000 --seed 0``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from bergen_env.agents.batch_opponents import batch_opponent
from bergen_env.policy_file import save_policy_file
from bergen_env.rules import Rules
from bergen_env.vector import BergenLearnerVectorEnv


@dataclass
class Args:
    num_envs: int = 256
    num_steps: int = 64
    total_timesteps: int = 2_000_000
    opponent: str = "random"
    num_players: int = 2
    rules: str = "standard"
    seed: int = 1
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    torch_threads: int = 1
    save: str = ""  # write the actor here as a portable policy file; empty: do not


def parse_args(argv: Sequence[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    args = Args(**vars(parser.parse_args(argv)))
    try:  # any batchable opponent: random, greedy, heuristic, tuned, policy:PATH
        rules = Rules.preset(args.rules, num_players=args.num_players)
        batch_opponent(args.opponent, rules)
    except ValueError as exc:  # (InvalidOptionError is one)
        parser.error(str(exc))
    return args


def layer(i: int, o: int, std: float = np.sqrt(2)) -> nn.Linear:
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """Separate actor and critic MLPs; the actor's logits are masked to the legal actions."""

    def __init__(self, obs_size: int, num_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer(obs_size, 256), nn.Tanh(), layer(256, 256), nn.Tanh(), layer(256, 1, 1.0)
        )
        self.actor = nn.Sequential(
            layer(obs_size, 256),
            nn.Tanh(),
            layer(256, 256),
            nn.Tanh(),
            layer(256, num_actions, 0.01),
        )

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def act(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        logits = self.actor(x).masked_fill(~mask, -1e8)
        dist = Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(x)


def train(args: Args) -> dict[str, float]:
    """Run PPO; return the last iteration's statistics."""
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env = BergenLearnerVectorEnv(
        num_envs=args.num_envs,
        opponents=args.opponent,
        rules=args.rules,
        num_players=args.num_players,
        seed=args.seed,
    )
    n, t_len = args.num_envs, args.num_steps
    obs_size = env.single_observation_space.shape[0]
    num_actions = env.single_action_space.n
    agent = Agent(obs_size, num_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    obs_buf = torch.zeros((t_len, n, obs_size))
    mask_buf = torch.zeros((t_len, n, num_actions), dtype=torch.bool)
    act_buf = torch.zeros((t_len, n), dtype=torch.long)
    logp_buf = torch.zeros((t_len, n))
    rew_buf = torch.zeros((t_len, n))
    done_buf = torch.zeros((t_len, n))
    val_buf = torch.zeros((t_len, n))

    obs, infos = env.reset()
    next_obs = torch.from_numpy(obs)
    next_mask = torch.from_numpy(infos["action_mask"].astype(bool))
    next_done = torch.zeros(n)
    batch = n * t_len
    minibatch = batch // args.num_minibatches
    iterations = max(1, args.total_timesteps // batch)
    stats: dict[str, float] = {}
    start = time.perf_counter()
    for iteration in range(1, iterations + 1):
        results: list[float] = []
        for step in range(t_len):
            obs_buf[step], mask_buf[step], done_buf[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs, next_mask)
            act_buf[step], logp_buf[step], val_buf[step] = action, logp, value
            obs, reward, term, trunc, infos = env.step(action.numpy())
            rew_buf[step] = torch.from_numpy(reward)
            done = term | trunc
            results.extend(reward[term].tolist())
            next_obs = torch.from_numpy(obs)
            next_mask = torch.from_numpy(infos["action_mask"].astype(bool))
            next_done = torch.from_numpy(done.astype(np.float32))

        # generalized advantage estimation (a finished match's value is 0)
        with torch.no_grad():
            next_value = agent.value(next_obs)
            adv = torch.zeros_like(rew_buf)
            last = torch.zeros(n)
            for step in reversed(range(t_len)):
                if step == t_len - 1:
                    alive, following = 1.0 - next_done, next_value
                else:
                    alive, following = 1.0 - done_buf[step + 1], val_buf[step + 1]
                delta = rew_buf[step] + args.gamma * following * alive - val_buf[step]
                last = delta + args.gamma * args.gae_lambda * alive * last
                adv[step] = last
            ret = adv + val_buf

        b_obs, b_mask = obs_buf.reshape(batch, -1), mask_buf.reshape(batch, -1)
        b_act, b_logp = act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
        order = np.arange(batch)
        for _ in range(args.update_epochs):
            np.random.default_rng(args.seed + iteration).shuffle(order)
            for lo in range(0, batch, minibatch):
                idx = torch.from_numpy(order[lo : lo + minibatch])
                _, logp, entropy, value = agent.act(b_obs[idx], b_mask[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                mb_adv = b_adv[idx]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_adv * ratio,
                    -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef),
                ).mean()
                v_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        elapsed = time.perf_counter() - start
        stats = {
            "iteration": iteration,
            "steps": iteration * batch,
            "sps": iteration * batch / elapsed,
            "matches": len(results),
            "mean_result": float(np.mean(results)) if results else float("nan"),
            "policy_loss": pg_loss.item(),
            "value_loss": v_loss.item(),
            "entropy": entropy.mean().item(),
        }
        print(
            f"iter {iteration}/{iterations}  steps {stats['steps']:,}  sps {stats['sps']:,.0f}  "
            f"matches {stats['matches']}  mean result {stats['mean_result']:+.3f}  "
            f"value loss {stats['value_loss']:.4f}  entropy {stats['entropy']:.3f}",
            flush=True,
        )
    if args.save:
        # the actor's Linear layers in order, each followed by the activation named here;
        # the file is written only if its numpy network gives the actor's logits on b_obs
        linears = [m for m in agent.actor if isinstance(m, nn.Linear)]
        with torch.no_grad():
            check = (b_obs.numpy(), agent.actor(b_obs).numpy())
        path = save_policy_file(
            args.save,
            env.rules,
            [m.weight.detach().numpy() for m in linears],
            [m.bias.detach().numpy() for m in linears],
            ["tanh", "tanh", "identity"],
            {"source": "examples/vector_ppo.py", "args": dataclasses.asdict(args)},
            check=check,
        )
        print(f"saved the actor to {path}")
    return stats


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    return train(parse_args(argv))


if __name__ == "__main__":
    main()
