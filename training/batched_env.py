"""``vec_env: batched``: the learner's envs are the batched engine, as an SB3 ``VecEnv``.

:class:`BatchedVecEnv` is a thin adapter over :class:`bergen_env.vector.BergenLearnerVectorEnv`
(one learner seat per row, the other seats played inside the batch), so MaskablePPO trains on
it unchanged: ``action_masks`` comes from the batch's ``infos["action_mask"]``, a finished
match's last observation is ``terminal_observation`` (with ``TimeLimit.truncated`` for a match
cut at ``max_hands``), and every finished match's return and length go to ``infos[i]["episode"]``
as SB3's ``Monitor`` writes them.

Opponents. The rows are split into blocks of consecutive rows, each a ``BergenLearnerVectorEnv``
with fixed opponents: one block per entry of ``opponents`` (block ``k``'s opponent seats play
entries ``k, k+1, ...`` cyclically, so with 3 or 4 players every entry plays every seat), and,
with self-play on, ``round(selfplay_prob * n_envs)`` rows of league blocks whose opponent seats
play frozen snapshots of the learner (:mod:`bergen_env.training.league`), drawn anew at every
rollout by prioritized fictitious self-play (a match running at a rollout's start finishes
against the newly drawn snapshot). Before the first snapshot a league block plays uniform random
legal actions. With ``partner: learner`` the partner seat of every block plays the newest snapshot.
The batched env plays :data:`BATCHED_OPPONENTS`; a config naming another opponent is refused
by :func:`check_batched` (``vec_env: subproc`` plays every agent).

The adapter's :meth:`~BatchedVecEnv.state_dict` (every block's arrays, the episode statistics
and the league's results) makes a checkpoint's exact resume, as ``bergen_env.training.resume_state``
does for process envs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from bergen_env.vector import BergenLearnerVectorEnv

from .config import TrainConfig
from .config_checks import ConfigError
from .league import FrozenPolicy, League, LeagueSeat

#: The opponents the batched env plays (others need ``vec_env: subproc``).
BATCHED_OPPONENTS = ("random", "greedy")
#: Rewards of the batched env.
BATCHED_REWARDS = ("match", "points", "win")


def check_batched(cfg: TrainConfig, source: str) -> None:
    """A :class:`ConfigError` naming what ``vec_env: batched`` cannot run in ``cfg``."""
    for name in cfg.opponents:
        if name not in BATCHED_OPPONENTS:
            raise ConfigError(
                f"{source}: key 'opponents': {name!r} has no batched version (the batched env "
                f"plays {', '.join(BATCHED_OPPONENTS)}); set vec_env: subproc to train "
                "against it"
            )
    if cfg.reward not in BATCHED_REWARDS:
        raise ConfigError(
            f"{source}: key 'reward': {cfg.reward!r} is not a reward of the batched env "
            f"({', '.join(BATCHED_REWARDS)}); set vec_env: subproc for it"
        )
    league_rows = league_size(cfg)
    scripted = cfg.n_envs - league_rows
    if scripted < len(cfg.opponents) or (cfg.selfplay_start >= 0 and league_rows < 1):
        raise ConfigError(
            f"{source}: key 'n_envs': vec_env: batched gives each opponent its own rows; "
            f"n_envs={cfg.n_envs} leaves {scripted} row(s) for {len(cfg.opponents)} "
            f"opponent(s) and {league_rows} for self-play (selfplay_prob={cfg.selfplay_prob})"
        )


def league_size(cfg: TrainConfig) -> int:
    """The rows whose opponents are league snapshots (0 without self-play)."""
    if cfg.selfplay_start < 0 or cfg.selfplay_prob <= 0:
        return 0
    return max(1, round(cfg.selfplay_prob * cfg.n_envs))


class BatchedVecEnv(VecEnv):
    """``cfg``'s training envs as one batch; see the module docstring."""

    def __init__(self, cfg: TrainConfig) -> None:
        n = cfg.num_players
        league_rows = league_size(cfg)
        scripted_rows = cfg.n_envs - league_rows
        self.league = League(cfg.pool_size, cfg.pfsp_exponent, seed=cfg.seed + 7919)
        self.newest = LeagueSeat(seed=cfg.seed + 104_729)  # the partner with partner: learner
        learner_partner = cfg.partnerships and cfg.partner == "learner"
        plans: list[tuple[int, list[Any], LeagueSeat | None]] = []
        k_count = len(cfg.opponents)
        for k, rows in enumerate(np.array_split(np.arange(scripted_rows), k_count)):
            seats: list[Any] = [cfg.opponents[(k + s) % k_count] for s in range(n - 1)]
            plans.append((len(rows), seats, None))
        if league_rows:
            blocks = min(2, league_rows)  # two snapshots a rollout when there are rows for them
            for b, rows in enumerate(np.array_split(np.arange(league_rows), blocks)):
                seat = LeagueSeat(seed=cfg.seed * 10_007 + b)
                plans.append((len(rows), [seat] * (n - 1), seat))
        self.blocks: list[BergenLearnerVectorEnv] = []
        self.league_seats: list[LeagueSeat | None] = []
        env_kwargs = cfg.env_block_kwargs()
        for size, seats, league_seat in plans:
            if learner_partner:
                seats[1] = self.newest  # relative seat 2: the partner
            self.blocks.append(
                BergenLearnerVectorEnv(
                    size,
                    opponents=seats,
                    learner_seat="random",
                    auto_forced=cfg.auto_forced,
                    **env_kwargs,
                )
            )
            self.league_seats.append(league_seat)
        self.bounds = np.cumsum([0] + [b.num_envs for b in self.blocks])
        first = self.blocks[0]
        super().__init__(cfg.n_envs, first.single_observation_space, first.single_action_space)
        self.default_seed = cfg.seed
        self.sides = first.rules.num_sides
        self._actions: np.ndarray | None = None
        self._masks = np.zeros((cfg.n_envs, first.rules.num_actions), dtype=np.bool_)
        self._returns = np.zeros(cfg.n_envs, dtype=np.float64)
        self._lengths = np.zeros(cfg.n_envs, dtype=np.int64)
        self._t0 = time.time()

    # ------------------------------------------------------------------ VecEnv

    def reset(self) -> np.ndarray:
        seed = self._seeds[0] if self._seeds[0] is not None else self.default_seed
        obs = []
        for k, block in enumerate(self.blocks):
            o, infos = block.reset(seed=seed * 1_000 + k)
            obs.append(o)
            self._masks[self.bounds[k] : self.bounds[k + 1]] = infos["action_mask"]
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._reset_seeds()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._join(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        actions, self._actions = self._actions, None
        if actions is None:
            raise RuntimeError("step_wait() without step_async()")
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        obs, rewards, dones = [], [], []
        for k, block in enumerate(self.blocks):
            lo, hi = self.bounds[k], self.bounds[k + 1]
            o, r, term, trunc, info = block.step(actions[lo:hi])
            obs.append(o)
            rewards.append(r)
            done = term | trunc
            dones.append(done)
            self._masks[lo:hi] = info["action_mask"]
            if done.any():
                self._finish(k, lo, r, term, trunc, info, infos)
            else:
                self._returns[lo:hi] += r
                self._lengths[lo:hi] += 1
        return (
            self._join(obs),
            np.concatenate(rewards) if len(rewards) > 1 else rewards[0],
            np.concatenate(dones) if len(dones) > 1 else dones[0],
            infos,
        )

    def _finish(
        self,
        k: int,
        lo: int,
        r: np.ndarray,
        term: np.ndarray,
        trunc: np.ndarray,
        info: dict[str, Any],
        infos: list[dict[str, Any]],
    ) -> None:
        """Book a step of block ``k`` in which matches ended (episode statistics, infos)."""
        hi = lo + len(r)
        self._returns[lo:hi] += r
        self._lengths[lo:hi] += 1
        ended = np.flatnonzero(term | trunc)
        final = info["final_info"]
        elapsed = round(time.time() - self._t0, 6)
        for i in ended:
            row = lo + i
            infos[row] = {
                "terminal_observation": info["final_obs"][i],
                "TimeLimit.truncated": bool(trunc[i] and not term[i]),
                "episode": {
                    "r": round(float(self._returns[row]), 6),
                    "l": int(self._lengths[row]),
                    "t": elapsed,
                },
            }
        self._returns[lo + ended] = 0.0
        self._lengths[lo + ended] = 0
        seat = self.league_seats[k]
        if seat is not None and seat.taken >= 0 and "winner" in final:
            done = ended[term[ended]]
            winner = final["winner"][done]
            own = final["seat"][done] % self.sides
            score = np.where(winner < 0, 0.5, (winner == own).astype(np.float64))
            self.league.record(seat.taken, score)

    def _join(self, parts: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions in every row (bool, ``(n_envs, A)``)."""
        return self._masks.copy()

    def close(self) -> None:
        for block in self.blocks:
            block.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == "render_mode":
            return [None] * len(list(self._get_indices(indices)))
        raise AttributeError(f"BatchedVecEnv has no per-env attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"BatchedVecEnv has no per-env attribute {attr_name!r} to set")

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> Any:
        if method_name == "action_masks":  # sb3-contrib stacks this (a copy): one (n, A) array
            return self._masks if indices is None else self._masks[list(self._get_indices(indices))]
        raise AttributeError(f"BatchedVecEnv has no per-env method {method_name!r}")

    def has_attr(self, attr_name: str) -> bool:
        return attr_name in ("action_masks", "render_mode")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs

    # ------------------------------------------------------------------ self-play league

    def add_snapshot(self, steps: int, policy: FrozenPolicy) -> None:
        """A new league snapshot (also the partner of ``partner: learner``)."""
        self.league.add(steps, policy)
        self.newest.play(steps, policy)

    def draw_league(self) -> None:
        """Each league block draws the snapshot it plays until the next draw (PFSP)."""
        for seat in self.league_seats:
            if seat is not None:
                index = self.league.draw()
                if index >= 0:
                    seat.play(self.league.steps[index], self.league.policies[index])

    # ------------------------------------------------------------------ exact resume

    def state_dict(self) -> dict[str, Any]:
        """Everything the batch's future depends on (numpy arrays and plain values)."""
        return {
            "blocks": [block.state_dict() for block in self.blocks],
            "masks": self._masks.copy(),
            "returns": self._returns.copy(),
            "lengths": self._lengths.copy(),
            "league": self.league.state(),
            "seats": [
                (s.taken, s.rng.bit_generator.state) if s is not None else None
                for s in (*self.league_seats, self.newest)
            ],
        }

    def load_state_dict(self, state: dict[str, Any]) -> bool:
        """Put back :meth:`state_dict`'s state; ``False`` (nothing changed) if it does not fit
        (another ``n_envs``, opponents or rules)."""
        blocks = state["blocks"]
        if len(blocks) != len(self.blocks) or len(state["masks"]) != self.num_envs:
            return False
        try:
            for block, saved in zip(self.blocks, blocks):
                block.load_state_dict(saved)
        except ValueError:
            return False
        self._masks[:] = state["masks"]
        self._returns[:] = state["returns"]
        self._lengths[:] = state["lengths"]
        self.league.load_state(state["league"])
        for seat, saved in zip((*self.league_seats, self.newest), state["seats"]):
            if seat is not None and saved is not None:
                taken, rng = saved
                seat.rng.bit_generator.state = rng
                seat.play(taken, self.league.policy_at(taken))
        return True
