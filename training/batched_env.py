"""``vec_env: batched``: the learner's envs are the batched engine, as an SB3 ``VecEnv``.

:class:`BatchedVecEnv` is a thin adapter over :class:`bergen_env.vector.BergenLearnerVectorEnv`
(one learner seat per row, the other seats played inside the batch), so MaskablePPO trains on
it unchanged: ``action_masks`` comes from the batch's ``infos["action_mask"]``, a finished
match's last observation is ``terminal_observation`` (with ``TimeLimit.truncated`` for a match
cut at ``max_hands``), and every finished match's return and length go to ``infos[i]["episode"]``
as SB3's ``Monitor`` writes them.

Opponents. Every other seat of every match draws its opponent anew when the match starts
(:meth:`~bergen_env.vector.BergenLearnerVectorEnv.set_opponents`): one of ``opponents``
uniformly, as the process envs do, and once the self-play league holds snapshots
(:mod:`bergen_env.training.league`), a snapshot with probability ``selfplay_prob``, which one by
prioritized fictitious self-play. The odds are refreshed at every rollout's start and when a
snapshot is added; a running match finishes against the opponents it started with. With
``partner: learner`` the partner seat plays the newest snapshot (a scripted opponent before the
first). Any opponent :func:`~bergen_env.agents.batch_opponents.batch_opponent` can batch is
allowed; :func:`check_batched` refuses the others by name (``vec_env: subproc`` plays every
agent).

With the network on CUDA (:func:`~bergen_env.training.device.pins_memory` of the config's
``device``), the observations and action masks are handed out in page-locked host memory, two
buffers of each used in turn, so that :class:`~bergen_env.training.device.OverlappedMaskablePPO`
copies them to the GPU without blocking; on the CPU they are ordinary arrays.

The adapter's :meth:`~BatchedVecEnv.state_dict` (the batch's arrays, its roster of opponents,
the episode statistics and the league's results) makes a checkpoint's exact resume, as
``bergen_env.training.resume_state`` does for process envs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from bergen_env.agents.batch_opponents import batch_opponent
from bergen_env.errors import InvalidOptionError
from bergen_env.rules import build_rules
from bergen_env.vector import BergenLearnerVectorEnv

from .config import TrainConfig
from .config_checks import ConfigError
from .device import host_array, pins_memory
from .league import FrozenPolicy, League
from .selfplay import snapshot_path

#: Rewards of the batched env.
BATCHED_REWARDS = ("match", "points", "win")


def check_batched(cfg: TrainConfig, source: str) -> None:
    """A :class:`ConfigError` naming what ``vec_env: batched`` cannot run in ``cfg``."""
    rules = build_rules(
        cfg.rules, num_players=cfg.num_players, partnerships=cfg.partnerships, **cfg.rule_overrides
    )
    for name in cfg.opponents:
        try:
            batch_opponent(name, rules)
        except InvalidOptionError as exc:
            raise ConfigError(
                f"{source}: key 'opponents': {name!r} cannot play in the batched env ({exc}); "
                "set vec_env: subproc to train against it"
            ) from None
    if cfg.reward not in BATCHED_REWARDS:
        raise ConfigError(
            f"{source}: key 'reward': {cfg.reward!r} is not a reward of the batched env "
            f"({', '.join(BATCHED_REWARDS)}); set vec_env: subproc for it"
        )


class BatchedVecEnv(VecEnv):
    """``cfg``'s training envs as one batch; see the module docstring. ``snapshot_dir``: where
    the run's snapshots live (a resumed match may still play one the league has dropped);
    ``pinned``: hand out observations and masks in pinned memory (default: when ``cfg.device``
    is a CUDA device torch can reach)."""

    def __init__(
        self, cfg: TrainConfig, snapshot_dir: Path | None = None, pinned: bool | None = None
    ) -> None:
        self.cfg, self.snapshot_dir = cfg, snapshot_dir
        self.league = League(cfg.pool_size, cfg.pfsp_exponent)
        self._snapshots: dict[int, FrozenPolicy] = {}  # step taken -> snapshot, in the roster
        self._plan = self._seat_plan()
        self.env = BergenLearnerVectorEnv(
            cfg.n_envs,
            opponents=self._resolve(self._plan[0]),
            learner_seat="random",
            auto_forced=cfg.auto_forced,
            **cfg.env_block_kwargs(),
        )
        self._roster_taken = self._taken_of_roster()
        super().__init__(
            cfg.n_envs, self.env.single_observation_space, self.env.single_action_space
        )
        self.default_seed = cfg.seed
        self.sides = self.env.rules.num_sides
        # the seats whose results the league books: the learner's opponents (not its partner)
        self._opponent_cols = [s for s in range(1, cfg.num_players) if s % self.sides]
        self._actions: np.ndarray | None = None
        self.pinned = pins_memory(cfg.device) if pinned is None else pinned
        # two buffers each, in turn: SB3 reads a step's arrays until the step after it returns
        shape = (cfg.n_envs, self.env.rules.num_actions)
        self._mask_buffers = [host_array(shape, np.bool_, self.pinned) for _ in range(2)]
        self._masks = self._mask_buffers[0]
        obs_shape = (cfg.n_envs, *self.env.single_observation_space.shape)
        self._obs_buffers = (
            [host_array(obs_shape, np.float32, True) for _ in range(2)] if self.pinned else []
        )
        self._turn = 0  # which buffer of each the next step writes
        self._returns = np.zeros(cfg.n_envs, dtype=np.float64)
        self._lengths = np.zeros(cfg.n_envs, dtype=np.int64)
        self._t0 = time.time()

    # ------------------------------------------------------------------ VecEnv

    def reset(self) -> np.ndarray:
        seed = self._seeds[0] if self._seeds[0] is not None else self.default_seed
        obs, infos = self.env.reset(seed=seed * 1_000)
        obs = self._hand_out(obs, infos["action_mask"])
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._reset_seeds()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        actions, self._actions = self._actions, None
        if actions is None:
            raise RuntimeError("step_wait() without step_async()")
        # the opponents of the matches that may end in this step (a new match draws anew)
        played = self.env.seat_opponents[:, self._opponent_cols].copy() if self.league else None
        obs, r, term, trunc, info = self.env.step(actions)
        obs = self._hand_out(obs, info["action_mask"])
        self._returns += r
        self._lengths += 1
        done = term | trunc
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.any():
            self._finish(term, trunc, info, infos, played)
        return obs, r, done, infos

    def _hand_out(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Put a step's masks (and, pinned, its observations) in the next buffers in turn; the
        observations to return."""
        self._masks = self._mask_buffers[self._turn]
        self._masks[:] = masks
        if self.pinned:
            np.copyto(self._obs_buffers[self._turn], obs)
            obs = self._obs_buffers[self._turn]
        self._turn ^= 1
        return obs

    def _finish(
        self,
        term: np.ndarray,
        trunc: np.ndarray,
        info: dict[str, Any],
        infos: list[dict[str, Any]],
        played: np.ndarray | None,
    ) -> None:
        """Book a step in which matches ended (episode statistics, infos, league results)."""
        ended = np.flatnonzero(term | trunc)
        final = info["final_info"]
        elapsed = round(time.time() - self._t0, 6)
        for row in ended:
            infos[row] = {
                "terminal_observation": info["final_obs"][row],
                "TimeLimit.truncated": bool(trunc[row] and not term[row]),
                "episode": {
                    "r": round(float(self._returns[row]), 6),
                    "l": int(self._lengths[row]),
                    "t": elapsed,
                },
            }
        self._returns[ended] = 0.0
        self._lengths[ended] = 0
        if played is not None and "winner" in final:
            done = ended[term[ended]]
            winner = final["winner"][done]
            own = final["seat"][done] % self.sides
            score = np.where(winner < 0, 0.5, (winner == own).astype(np.float64))
            taken = self._roster_taken[played[done]]  # (matches, opponent seats)
            for step in np.unique(taken[taken >= 0]):
                self.league.record(int(step), score[(taken == step).any(axis=1)])

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions in every row (bool, ``(n_envs, A)``)."""
        return self._masks.copy()

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == "render_mode":
            return [None] * len(list(self._get_indices(indices)))
        raise AttributeError(f"BatchedVecEnv has no per-env attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"BatchedVecEnv has no per-env attribute {attr_name!r} to set")

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> Any:
        if method_name == "action_masks":  # one (n, A) array, the current buffer: unchanged
            # until the step after next (sb3-contrib stacks it, a copy; OverlappedMaskablePPO not)
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
        self._snapshots[steps] = policy
        self.refresh_league()

    def refresh_league(self) -> None:
        """Draw the matches that start from now on by the league's current odds."""
        self._plan = self._seat_plan()
        self.env.set_opponents(self._resolve(self._plan[0]), self._plan[1])
        self._roster_taken = self._taken_of_roster()
        playing = set(self.league.steps) | {int(t) for t in self._roster_taken if t >= 0}
        self._snapshots = {t: p for t, p in self._snapshots.items() if t in playing}

    def _seat_plan(self) -> tuple[list[list[str | int]], list[list[float]]]:
        """Per other seat, its candidates (an ``opponents`` name, or a snapshot by the step it
        was taken at) and their odds."""
        cfg = self.cfg
        scripted: list[str | int] = list(cfg.opponents)
        odds = [1.0 / len(scripted)] * len(scripted)
        if len(self.league) and cfg.selfplay_prob > 0:
            p = cfg.selfplay_prob
            odds = [(1.0 - p) * w for w in odds] + [p * float(w) for w in self.league.weights()]
            scripted = scripted + list(self.league.steps)
        seats, weights = [scripted] * (cfg.num_players - 1), [odds] * (cfg.num_players - 1)
        if cfg.partnerships and cfg.partner == "learner" and len(self.league):
            seats[1], weights[1] = [self.league.steps[-1]], [1.0]  # relative seat 2
        return seats, weights

    def _resolve(self, seats: list[list[str | int]]) -> list[list[Any]]:
        """The plan's candidates as opponents: a name as itself, a snapshot as its one
        :class:`FrozenPolicy` (the env knows an object by identity)."""
        return [[c if isinstance(c, str) else self._snapshots[c] for c in seat] for seat in seats]

    def _taken_of_roster(self) -> np.ndarray:
        """Per roster entry of the env, the step its snapshot was taken at (-1: scripted)."""
        steps = {id(p): t for t, p in self._snapshots.items()}
        return np.array([steps.get(id(k), -1) for k in self.env.opponent_keys], dtype=np.int64)

    # ------------------------------------------------------------------ exact resume

    def state_dict(self) -> dict[str, Any]:
        """Everything the batch's future depends on (numpy arrays and plain values)."""
        return {
            "env": self.env.state_dict(),
            "roster": self._roster_names(),
            "plan": self._plan,
            "masks": self._masks.copy(),
            "returns": self._returns.copy(),
            "lengths": self._lengths.copy(),
            "league": self.league.state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> bool:
        """Put back :meth:`state_dict`'s state; ``False`` (nothing changed) if it does not fit
        (another ``n_envs``, opponents or rules, or a snapshot file gone)."""
        if len(state["masks"]) != self.num_envs or not self._load_snapshots(state["roster"]):
            return False
        # the roster in the saved order, so that the saved per-row roster indices hold
        self.env.set_opponents([self._resolve([state["roster"]])[0]])
        try:
            self.env.load_state_dict(state["env"])
        except ValueError:  # another rule set or reward: back to this env's own odds
            self.env.set_opponents(self._resolve(self._plan[0]), self._plan[1])
            return False
        self._masks[:] = state["masks"]
        self._returns[:] = state["returns"]
        self._lengths[:] = state["lengths"]
        self.league.load_state(state["league"])
        self._plan = state["plan"]
        self.env.set_opponents(self._resolve(self._plan[0]), self._plan[1])
        self._roster_taken = self._taken_of_roster()
        return True

    def _roster_names(self) -> list[str | int]:
        """The env's roster: each entry's ``opponents`` name or its snapshot's step."""
        keys = self.env.opponent_keys
        return [k if isinstance(k, str) else int(t) for k, t in zip(keys, self._roster_taken)]

    def _load_snapshots(self, roster: list[str | int]) -> bool:
        """Hold every snapshot ``roster`` names (one the league dropped from its file)."""
        for taken in (k for k in roster if not isinstance(k, str)):
            if taken not in self._snapshots:
                policy = self.league.policy_at(taken)
                if policy is None:
                    if self.snapshot_dir is None:
                        return False
                    path = snapshot_path(self.snapshot_dir, taken)
                    if not path.is_file():
                        return False
                    policy = FrozenPolicy.from_file(path)
                self._snapshots[taken] = policy
        return True
