"""Masked PPO from a random network on the batched env: the controlled experiments of
``docs/experiments/2026-12-06-ppo-from-scratch.md``.

``examples/vector_ppo.py`` with the knobs those experiments turn: the reward (``match``,
``points`` or ``win``: the change of the learner's match-win chance read from
:func:`bergen_env.agents.match_value.win_table`, as the single-agent env's ``reward="win"``),
an opponent mix (rows split between batched opponents, e.g. ``random`` and ``greedy``,
optionally switched to a second mix at a step count), the step size's schedule, advantage
normalisation and width, and the critic's input (an asymmetric actor-critic's privileged
critic; the actor sees the observation only): ``--critic-state 1``, the observation and the
env's global state (every hand and the boneyard's contents, absolute seats); ``2``, the
observation and the hidden tiles relative to the learner (the next seats' hands in turn order,
then the boneyard's contents). Every ``--eval-every`` steps the deterministic policy (its most
probable legal action, as a policy file plays) plays ``--eval-matches`` fresh matches against
random and greedy, and the heuristic with ``--eval-heuristic 1`` (a learning curve, not
duplicate: the final numbers come from ``bergen_env.training.evaluate`` on the policy file that
``--save`` rewrites at every point); each point also gives the critic's mean explained variance
since the last one, of the λ-returns it is trained on and of the outcomes (the discounted
reward to the match's end, on the steps whose match ends within the rollout). One torch thread;
the CPU time is reported.

    python -m benchmarks.scratch_ppo --reward win --total-timesteps 2000000 --csv run.csv
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from bergen_env.agents.match_value import win_table
from bergen_env.observation import MAX_SEATS, OBS_SIZE, OBS_SLICES, STATE_SIZE, STATE_SLICES
from bergen_env.policy_file import save_policy_file
from bergen_env.rules import Rules
from bergen_env.tiles import NUM_TILES
from bergen_env.vector import BergenLearnerVectorEnv


@dataclass
class Args:
    num_envs: int = 256
    num_steps: int = 64
    total_timesteps: int = 2_000_000
    opponents: str = "random"  # "random", "greedy" or a mix "random:0.5,greedy:0.5"
    later_opponents: str = ""  # a mix switched to at --switch-at steps; empty: none
    switch_at: int = 0
    reward: str = "match"  # match | points | win
    seed: int = 1
    learning_rate: float = 2.5e-4
    anneal_lr: int = 0  # 1: linear to 0 over the run
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    norm_adv: int = 1
    width: int = 256
    critic_state: int = 0  # 1: the critic also reads the global state; 2: the hidden tiles
    eval_every: int = 500_000
    eval_matches: int = 1000
    eval_heuristic: int = 0  # 1: the curve also plays the batched heuristic (needs it in the env)
    csv: str = ""
    save: str = ""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    args = Args(**vars(parser.parse_args(argv)))
    if args.critic_state not in (0, 1, 2):
        parser.error(f"--critic-state must be 0, 1 or 2, got {args.critic_state}")
    if args.reward not in ("match", "points", "win"):
        parser.error(f"--reward must be match, points or win, got {args.reward!r}")
    return args


def parse_mix(text: str, num_envs: int) -> list[tuple[str, int]]:
    """``"random:0.5,greedy:0.5"`` -> ``[("random", 128), ("greedy", 128)]`` for 256 rows."""
    parts = [p.split(":") for p in text.split(",")]
    fracs = [float(p[1]) if len(p) > 1 else 1.0 for p in parts]
    total = sum(fracs)
    counts = [int(round(num_envs * f / total)) for f in fracs]
    counts[-1] = num_envs - sum(counts[:-1])
    return [(p[0], c) for p, c in zip(parts, counts, strict=True) if c > 0]


#: Entries of ``--critic-state 2``'s hidden tiles: 3 other seats' hands, the boneyard's contents.
HIDDEN_SIZE = MAX_SEATS * NUM_TILES


def hidden_columns(players: int) -> np.ndarray:
    """``(players, HIDDEN_SIZE)``: per learner seat, the global state's columns of the next
    seats' hands in turn order (an absent seat's all-zero block) and of the boneyard's contents."""
    hands, bone = STATE_SLICES["hands"].start, STATE_SLICES["boneyard_tiles"]
    out = []
    for seat in range(players):
        cols: list[int] = []
        for k in range(1, MAX_SEATS):
            other = (seat + k) % players if k < players else k
            cols += range(hands + other * NUM_TILES, hands + (other + 1) * NUM_TILES)
        out.append([*cols, *range(bone.start, bone.stop)])
    return np.array(out, dtype=np.int64)


class MixedEnv:
    """Rows split between learner envs with different batched opponents; adds ``reward="win"``
    and the critic's extra inputs (``critic_state``, as ``--critic-state``)."""

    def __init__(
        self, mix: str, num_envs: int, reward: str, seed: int, critic_state: int = 0
    ) -> None:
        base = "match" if reward == "win" else reward
        self.envs = [
            BergenLearnerVectorEnv(num_envs=c, opponents=o, reward=base, seed=seed + 1000 * k)
            for k, (o, c) in enumerate(parse_mix(mix, num_envs))
        ]
        self.rules = self.envs[0].rules
        self.critic_state = critic_state
        self.extra_size = (0, STATE_SIZE, HIDDEN_SIZE)[critic_state]
        if critic_state == 2:
            self._state = np.zeros((num_envs, STATE_SIZE), dtype=np.float32)
            self._hidden = hidden_columns(self.rules.num_players)
        self.win = reward == "win"
        if self.win:
            table = win_table(self.rules)
            self.table = table.table.astype(np.float32)
            self.scores = OBS_SLICES["scores"]
            self.value = np.zeros(num_envs, dtype=np.float32)

    def _chance(self, obs: np.ndarray) -> np.ndarray:
        s = np.rint(obs[:, self.scores] * self.rules.target).astype(np.int64)
        own, other = np.clip(s[:, 0], 0, None), np.clip(s[:, 1], 0, None)
        return self.table[own, other]

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        outs = [e.reset() for e in self.envs]
        obs = np.concatenate([o for o, _ in outs])
        if self.win:
            self.value = self._chance(obs)
        return obs, np.concatenate([i["action_mask"] for _, i in outs]).astype(bool)

    def critic_features(self, out: np.ndarray) -> None:
        """Write every row's extra critic inputs into ``out`` (N, ``extra_size``), in place."""
        states = out if self.critic_state == 1 else self._state
        lo = 0
        for e in self.envs:
            e.state(out=states[lo : lo + e.num_envs])
            lo += e.num_envs
        if self.critic_state == 2:
            seats = np.concatenate([e.seats for e in self.envs])
            out[:] = np.take_along_axis(self._state, self._hidden[seats], axis=1)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        outs, lo = [], 0
        for e in self.envs:
            outs.append(e.step(actions[lo : lo + e.num_envs]))
            lo += e.num_envs
        obs = np.concatenate([o[0] for o in outs])
        reward = np.concatenate([o[1] for o in outs])
        term = np.concatenate([o[2] for o in outs])
        trunc = np.concatenate([o[3] for o in outs])
        mask = np.concatenate([o[4]["action_mask"] for o in outs]).astype(bool)
        result = reward.copy()  # the match result on the rows that ended (match reward)
        if self.win:
            # 2 sides: reward = 2 * change of the win chance; an ended match's chance is its result
            chance = self._chance(obs)
            ended = term | trunc
            after = np.where(ended, (result + 1.0) / 2.0, chance)
            after = np.where(trunc, self.value, after)
            reward = (2.0 * (after - self.value)).astype(np.float32)
            self.value = chance
        return obs, reward, term, trunc, mask, result


class Agent(nn.Module):
    """Actor and critic MLPs; the critic reads ``critic_size`` inputs (the observation, or the
    observation and the global state)."""

    def __init__(self, obs_size: int, num_actions: int, width: int, critic_size: int) -> None:
        super().__init__()

        def layer(i: int, o: int, std: float = np.sqrt(2)) -> nn.Linear:
            lin = nn.Linear(i, o)
            nn.init.orthogonal_(lin.weight, std)
            nn.init.constant_(lin.bias, 0.0)
            return lin

        self.critic = nn.Sequential(
            layer(critic_size, width),
            nn.Tanh(),
            layer(width, width),
            nn.Tanh(),
            layer(width, 1, 1.0),
        )
        self.actor = nn.Sequential(
            layer(obs_size, width),
            nn.Tanh(),
            layer(width, width),
            nn.Tanh(),
            layer(width, num_actions, 0.01),
        )

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def act(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        c: torch.Tensor,
        action: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Action, log-probability, entropy from observations ``x``; value from critic inputs
        ``c``."""
        logits = self.actor(x).masked_fill(~mask, -1e8)
        dist = Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(c)


def evaluate(agent: Agent, opponent: str, matches: int, seed: int) -> float:
    """Win rate of the most probable legal action over ``matches`` fresh matches."""
    env = BergenLearnerVectorEnv(num_envs=matches, opponents=opponent, seed=seed)
    obs, infos = env.reset()
    mask = infos["action_mask"].astype(bool)
    result = np.full(matches, np.nan)
    with torch.no_grad():
        while np.isnan(result).any():
            logits = agent.actor(torch.from_numpy(obs)).numpy()
            actions = np.where(mask, logits, -np.inf).argmax(1)
            obs, reward, term, trunc, infos = env.step(actions)
            mask = infos["action_mask"].astype(bool)
            new = (term | trunc) & np.isnan(result)
            result[new] = reward[new] > 0
    return float(result.mean())


def _mean(pairs: Sequence[tuple[float, float]], k: int) -> float:
    return round(float(np.mean([p[k] for p in pairs])), 3) if pairs else float("nan")


def explained_variance(target: torch.Tensor, values: torch.Tensor) -> float:
    var = target.var().item()
    return 1.0 - (target - values).var().item() / var if var > 0 else 0.0


def outcomes(
    rewards: torch.Tensor, done_buf: torch.Tensor, next_done: torch.Tensor, gamma: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per step of a rollout, the discounted reward to its match's end, and whether that end
    falls within the rollout (``done_buf[t]``: a match ended before step ``t``)."""
    out = torch.zeros_like(rewards)
    known = torch.zeros_like(rewards, dtype=torch.bool)
    run = torch.zeros(rewards.shape[1])
    seen = torch.zeros(rewards.shape[1], dtype=torch.bool)
    for step in reversed(range(rewards.shape[0])):
        ended = (next_done if step == rewards.shape[0] - 1 else done_buf[step + 1]).bool()
        run = rewards[step] + gamma * run * ~ended
        seen = seen | ended
        out[step], known[step] = run, seen
    return out, known


class Curve:
    """The learning curve's points: printed, kept and written to ``args.csv`` as they come."""

    def __init__(self, args: Args) -> None:
        self.args = args
        self.rows: list[dict[str, float]] = []
        self.handle = open(args.csv, "w", newline="") if args.csv else None  # noqa: SIM115
        self.writer: csv.DictWriter | None = None

    def point(
        self, agent: Agent, steps: int, cpu: float, explained: Sequence[tuple[float, float]]
    ) -> None:
        """Evaluate ``agent``; ``explained``: the critic's explained variance of the λ-returns
        and of the outcomes in every update since the last point (their means are written)."""
        matches = self.args.eval_matches
        row = {
            "steps": steps,
            "cpu_s": round(cpu, 1),
            "explained_var": _mean(explained, 0),
            "explained_var_outcome": _mean(explained, 1),
            "vs_random": evaluate(agent, "random", matches, 10_000),
            "vs_greedy": evaluate(agent, "greedy", matches, 20_000),
        }
        if self.args.eval_heuristic:
            row["vs_heuristic"] = evaluate(agent, "heuristic", matches, 30_000)
        self.rows.append(row)
        print(row, flush=True)
        if self.handle is not None:
            if self.writer is None:
                self.writer = csv.DictWriter(self.handle, fieldnames=list(row))
                self.writer.writeheader()
            self.writer.writerow(row)
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def train(args: Args) -> list[dict[str, float]]:
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    env = MixedEnv(args.opponents, args.num_envs, args.reward, args.seed, args.critic_state)
    n, t_len = args.num_envs, args.num_steps
    obs_size, num_actions = OBS_SIZE, env.rules.num_actions
    state_size = env.extra_size
    agent = Agent(obs_size, num_actions, args.width, obs_size + state_size)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    obs_buf = torch.zeros((t_len, n, obs_size))
    mask_buf = torch.zeros((t_len, n, num_actions), dtype=torch.bool)
    act_buf = torch.zeros((t_len, n), dtype=torch.long)
    logp_buf, rew_buf = torch.zeros((t_len, n)), torch.zeros((t_len, n))
    done_buf, val_buf = torch.zeros((t_len, n)), torch.zeros((t_len, n))
    state_buf = torch.zeros((t_len, n, state_size))
    next_state = torch.zeros((n, state_size))  # the env writes the critic's inputs into it

    def critic_input(o: torch.Tensor, st: torch.Tensor) -> torch.Tensor:
        return torch.cat([o, st], dim=-1) if state_size else o

    obs, mask = env.reset()
    if state_size:
        env.critic_features(next_state.numpy())
    next_obs, next_mask, next_done = torch.from_numpy(obs), torch.from_numpy(mask), torch.zeros(n)
    batch = n * t_len
    minibatch = batch // args.num_minibatches
    iterations = max(1, args.total_timesteps // batch)
    curve = Curve(args)
    cpu0 = time.process_time()
    next_eval = 0
    switched = False
    explained: list[tuple[float, float]] = []
    for iteration in range(1, iterations + 1):
        steps = (iteration - 1) * batch
        if steps >= next_eval:
            cpu = time.process_time() - cpu0
            curve.point(agent, steps, cpu, explained)
            explained.clear()
            cpu0 += time.process_time() - cpu0 - cpu  # evaluation CPU is not training CPU
            next_eval += args.eval_every
            if args.save and steps > 0:
                save(agent, env.rules, obs_buf[0, :512], args, steps)
        if args.later_opponents and not switched and steps >= args.switch_at:
            env = MixedEnv(args.later_opponents, n, args.reward, args.seed + 7, args.critic_state)
            obs, mask = env.reset()
            if state_size:
                env.critic_features(next_state.numpy())
            next_obs, next_mask = torch.from_numpy(obs), torch.from_numpy(mask)
            next_done = torch.zeros(n)
            switched = True
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (
                1.0 - (iteration - 1) / iterations
            )
        results: list[float] = []
        for step in range(t_len):
            obs_buf[step], mask_buf[step], done_buf[step] = next_obs, next_mask, next_done
            state_buf[step] = next_state
            with torch.no_grad():
                action, logp, _, value = agent.act(
                    next_obs, next_mask, critic_input(next_obs, next_state)
                )
            act_buf[step], logp_buf[step], val_buf[step] = action, logp, value
            obs, reward, term, trunc, mask, result = env.step(action.numpy())
            rew_buf[step] = torch.from_numpy(reward)
            done = term | trunc
            results.extend(result[term].tolist())
            if state_size:
                env.critic_features(next_state.numpy())
            next_obs, next_mask = torch.from_numpy(obs), torch.from_numpy(mask)
            next_done = torch.from_numpy(done.astype(np.float32))

        with torch.no_grad():
            next_value = agent.value(critic_input(next_obs, next_state))
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
        b_state = state_buf.reshape(batch, -1)
        b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
        order = np.arange(batch)
        kls = []
        for epoch in range(args.update_epochs):
            np.random.default_rng(args.seed * 100_003 + iteration * 31 + epoch).shuffle(order)
            for lo in range(0, batch, minibatch):
                idx = torch.from_numpy(order[lo : lo + minibatch])
                _, logp, entropy, value = agent.act(
                    b_obs[idx], b_mask[idx], critic_input(b_obs[idx], b_state[idx]), b_act[idx]
                )
                logratio = logp - b_logp[idx]
                ratio = logratio.exp()
                with torch.no_grad():
                    kls.append(((ratio - 1) - logratio).mean().item())
                mb_adv = b_adv[idx]
                if args.norm_adv:
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
        ev = explained_variance(b_ret, val_buf.reshape(-1))
        outcome, known = outcomes(rew_buf, done_buf, next_done, args.gamma)
        explained.append((ev, explained_variance(outcome[known], val_buf[known])))
        if iteration % 10 == 0 or iteration == iterations:
            print(
                f"iter {iteration}/{iterations} steps {iteration * batch:,} "
                f"cpu {time.process_time() - cpu0:.0f}s "
                f"result {np.mean(results) if results else float('nan'):+.3f} "
                f"kl {np.mean(kls):.4f} ent {entropy.mean().item():.3f} ev {ev:.3f}",
                flush=True,
            )
    curve.point(agent, iterations * batch, time.process_time() - cpu0, explained)
    curve.close()
    if args.save:
        save(agent, env.rules, b_obs[:512], args, iterations * batch)
    return curve.rows


def save(agent: Agent, rules: Rules, obs: torch.Tensor, args: Args, steps: int) -> None:
    """Write the actor to ``args.save`` as a portable policy file (checked on ``obs``)."""
    linears = [m for m in agent.actor if isinstance(m, nn.Linear)]
    with torch.no_grad():
        check = (obs.numpy(), agent.actor(obs).numpy())
    path = save_policy_file(
        args.save,
        rules,
        [m.weight.detach().numpy() for m in linears],
        [m.bias.detach().numpy() for m in linears],
        ["tanh", "tanh", "identity"],
        {"source": "benchmarks/scratch_ppo.py", "args": dataclasses.asdict(args), "steps": steps},
        check=check,
    )
    print(f"saved the actor after {steps:,} steps to {path}", flush=True)


def main(argv: Sequence[str] | None = None) -> list[dict[str, float]]:
    return train(parse_args(argv))


if __name__ == "__main__":
    main()
