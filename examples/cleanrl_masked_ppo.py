"""Masked PPO in one file, CleanRL style, on ``gymnasium.make_vec`` (sync) with masks from infos.

    python examples/cleanrl_masked_ppo.py --total-timesteps 200000
    python examples/cleanrl_masked_ppo.py --total-timesteps 512 --num-steps 64   # a smoke run
    python examples/cleanrl_masked_ppo.py --save my_policy.safetensors   # keep the actor

Each env is one learner seat against ``--opponent`` in a whole Bergen match (reward +1 for a won
match, -1 for a lost one). The legal actions come from ``infos["action_mask"]``, an
``(num_envs, A)`` int8 array; the policy's logits of illegal actions are set to a large negative
number before sampling. Under Gymnasium's default autoreset ("next step") the step after an
episode's end only resets that env: its action is ignored and its mask is all ones, so those
transitions are left out of the loss below (``valid``).

``--save PATH`` writes the actor as a portable policy file (numpy only to play; the file is
written only if its logits match the torch actor's), so the duplicate-deal arena can judge it:
``python -m bergen_env.training.evaluate --agents policy:PATH heuristic --matches 2000 --seed 0``.

Needs the ``[train]`` extra (torch).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import bergen_env  # noqa: F401  (registers bergen_env/Bergen-v0)
from bergen_env.policy_file import save_policy_file


@dataclass
class Args:
    seed: int = 1
    """seed of torch and the envs"""
    total_timesteps: int = 200_000
    """env steps in total (all envs)"""
    num_envs: int = 4
    """parallel envs of the sync vector env"""
    num_steps: int = 256
    """steps per env per rollout"""
    opponent: str = "random"
    """the other seat: an agent string (random, greedy, heuristic, ...)"""
    learning_rate: float = 3e-4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    eval_episodes: int = 100
    """matches of the final greedy evaluation against the opponent"""
    torch_threads: int = 1
    """torch CPU threads (small networks run fastest on one)"""
    save: str = ""
    """write the actor here as a portable policy file (.safetensors); empty: do not"""


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return Args(**vars(parser.parse_args()))


def layer(inp: int, out: int, std: float = np.sqrt(2)) -> nn.Linear:
    lin = nn.Linear(inp, out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
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

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, ...]:
        logits = self.actor(x).masked_fill(~mask, -1e8)  # illegal actions: probability 0
        dist = Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def main() -> None:
    args = parse_args()
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(args.total_timesteps // batch_size, 1)

    # --- seeding (torch here; the envs from reset(seed=...))
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)

    # --- envs: masks arrive in infos["action_mask"]
    envs = gym.make_vec(
        "bergen_env/Bergen-v0",
        num_envs=args.num_envs,
        vectorization_mode="sync",
        opponents=[args.opponent],
    )
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    obs_size = envs.single_observation_space.shape[0]
    num_actions = envs.single_action_space.n
    agent = Agent(obs_size, num_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # --- rollout storage
    obs = torch.zeros((args.num_steps, args.num_envs, obs_size))
    masks = torch.zeros((args.num_steps, args.num_envs, num_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    start = time.time()
    next_obs_np, infos = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs_np)
    next_mask = torch.as_tensor(infos["action_mask"]).bool()
    next_done = torch.zeros(args.num_envs)
    returns: list[float] = []
    global_step = 0
    for iteration in range(1, num_iterations + 1):
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            actions[step], logprobs[step], values[step] = action, logprob, value.flatten()
            next_obs_np, reward, terminated, truncated, infos = envs.step(action.numpy())
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.as_tensor(next_obs_np)
            next_mask = torch.as_tensor(infos["action_mask"]).bool()
            next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32)
            if "episode" in infos:
                returns.extend(infos["episode"]["r"][infos["_episode"]].tolist())

        # --- GAE; a step whose observation ended an episode is the autoreset step: not learned
        with torch.no_grad():
            next_value = agent.get_value(next_obs).flatten()
            advantages = torch.zeros_like(rewards)
            lastgaelam = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                nextnonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                nextvalues = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns_t = advantages + values
        valid = (dones == 0).reshape(-1)
        b_obs, b_masks = obs.reshape(-1, obs_size)[valid], masks.reshape(-1, num_actions)[valid]
        b_actions, b_logprobs = actions.reshape(-1)[valid], logprobs.reshape(-1)[valid]
        b_advantages, b_returns = advantages.reshape(-1)[valid], returns_t.reshape(-1)[valid]

        # --- PPO update
        n = len(b_obs)
        for _ in range(args.update_epochs):
            perm = torch.randperm(n)
            for lo in range(0, n, minibatch_size):
                mb = perm[lo : lo + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb]
                )
                ratio = (newlogprob - b_logprobs[mb]).exp()
                adv = b_advantages[mb]
                adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-8)
                pg_loss = torch.max(
                    -adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                v_loss = 0.5 * ((newvalue.flatten() - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        recent = np.mean(returns[-100:]) if returns else float("nan")
        print(
            f"iteration {iteration}/{num_iterations}  steps {global_step}  "
            f"episodes {len(returns)}  mean return (last 100) {recent:+.3f}  "
            f"sps {int(global_step / (time.time() - start))}"
        )
    envs.close()

    # --- greedy evaluation: the most probable legal action, one env
    env = gym.make("bergen_env/Bergen-v0", opponents=[args.opponent])
    wins = 0
    for episode in range(args.eval_episodes):
        o, info = env.reset(seed=10_000 + episode)
        done = False
        while not done:
            with torch.no_grad():
                logits = agent.actor(torch.as_tensor(o))
            logits[~torch.as_tensor(info["action_mask"]).bool()] = -torch.inf
            o, r, terminated, truncated, info = env.step(int(logits.argmax()))
            done = terminated or truncated
        wins += r > 0
    print(f"greedy policy vs {args.opponent}: won {wins} of {args.eval_episodes} matches")

    if args.save:
        # the actor's Linear layers in order, each followed by the activation named here;
        # the file is written only if its numpy network gives the actor's logits on b_obs
        linears = [m for m in agent.actor if isinstance(m, nn.Linear)]
        with torch.no_grad():
            check = (b_obs.numpy(), agent.actor(b_obs).numpy())
        path = save_policy_file(
            args.save,
            env.unwrapped.rules,
            [m.weight.detach().numpy() for m in linears],
            [m.bias.detach().numpy() for m in linears],
            ["tanh", "tanh", "identity"],
            {"source": "examples/cleanrl_masked_ppo.py", "args": dataclasses.asdict(args)},
            check=check,
        )
        print(f"saved the actor to {path}")


if __name__ == "__main__":
    main()
