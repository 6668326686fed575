"""``BergenVectorEnv``: N matches as arrays, stepped together (the pgx shape).

>>> from bergen_env.vector import BergenVectorEnv
>>> env = BergenVectorEnv(num_envs=4, num_players=2, seed=0)
>>> obs, info = env.reset()
>>> obs["observation"].shape, obs["action_mask"].shape, info["current_player"].shape
((4, 240), (4, 58), (4,))
>>> actions = env.random_actions(obs["action_mask"])
>>> obs, rewards, terminations, truncations, info = env.step(actions)
>>> rewards.shape
(4, 2)

Every row is one match, for the seat on turn in it. A finished match restarts in the same
step: the returned observation is the new match's, ``rewards`` and ``terminations`` are the
finished one's. Each match has its own random stream, derived from ``seed`` and the row
number, so row ``i`` plays the same matches for the same actions whatever ``num_envs`` is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from bergen_env.actions import action_str
from bergen_env.engine import validate_deal
from bergen_env.env_options import DEFAULT_MAX_HANDS, EnvOptions, reset_deals
from bergen_env.errors import IllegalActionError, InvalidOptionError
from bergen_env.observation import OBS_SIZE, STATE_SIZE, obs_bounds
from bergen_env.rules import Rules
from bergen_env.tiles import NUM_TILES
from bergen_env.validation import check_bool, check_int, keyword_names
from bergen_env.vector import kernels as K

__all__ = ["BergenVectorEnv"]


class BergenVectorEnv:
    """``num_envs`` matches (any preset: Bergen, Draw, Fives) stepped together; see the module
    docstring.

    ``single_observation_space`` / ``single_action_space`` are one row's (the AEC env's
    spaces); ``observation_space`` / ``action_space`` the batch's; ``metadata`` says that a
    finished match restarts in the same step (Gymnasium's ``SAME_STEP`` autoreset).

    Arguments: ``num_envs``; ``rules`` (a preset name or :class:`~bergen_env.Rules`),
    ``num_players``, ``partnerships`` and every rule option as in the AEC env; ``reward``
    (``"match"``: +1 / -1/(sides-1) per seat when the match ends; ``"points"``: after every step
    each seat's side's score change minus the mean change of the other sides); ``max_hands``
    (a match still running after this many hands is truncated and restarted; None: never);
    ``seed``; ``observations`` (False: ``obs`` holds only ``"action_mask"``, for rollouts that
    need no encoding); ``copy`` (False: ``reset`` and ``step`` return the env's own buffers,
    overwritten by the next step, instead of new arrays: less memory traffic for large N);
    ``parallel`` (True: ``step`` shares the rows among numba's threads, ``numba.set_num_threads``;
    the same results).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        rules: str | Rules = "standard",
        num_players: int | None = None,
        partnerships: bool | None = None,
        seed: int | None = None,
        reward: str = "match",
        max_hands: int | None = DEFAULT_MAX_HANDS,
        observations: bool = True,
        copy: bool = True,
        parallel: bool = False,
        **overrides: Any,
    ) -> None:
        num_envs = check_int("num_envs", num_envs, minimum=1)
        options = EnvOptions.resolve(
            rules,
            num_players,
            partnerships,
            reward,
            max_hands,
            env_keywords=keyword_names(type(self).__init__),
            **overrides,
        )
        self.rules = options.rules
        reward, max_hands = options.reward, options.max_hands
        check_bool("copy", copy)
        check_bool("observations", observations)
        check_bool("parallel", parallel)
        self.parallel = parallel
        self.num_envs = n = int(num_envs)
        self.num_players = self.rules.num_players
        self.num_actions = self.rules.num_actions
        self.reward_mode = reward
        self.max_hands = max_hands
        self.observations = observations
        self.copy = copy
        self.rule_array = K.rule_vector(self.rules, max_hands, reward)
        self.initial_seed = seed
        self.m = np.zeros((n, K.NUM_FIELDS), dtype=np.int32)
        self.scores = np.zeros((n, K.MAX_SEATS), dtype=np.int32)
        self.hands = np.zeros((n, K.MAX_SEATS, NUM_TILES), dtype=np.int8)
        self.bits = np.zeros((n, K.MAX_SEATS), dtype=np.int64)
        self.hlen = np.zeros((n, K.MAX_SEATS), dtype=np.int32)
        self.voids = np.zeros((n, K.MAX_SEATS), dtype=np.int32)
        self.line = np.zeros((n, NUM_TILES), dtype=np.int8)
        self.bone = np.zeros((n, K.MAX_BONE), dtype=np.int8)
        self.rng = np.zeros(n, dtype=np.uint64)
        self.agent_rng = np.zeros(n, dtype=np.uint64)
        self.deals = np.zeros((n, 0, self.rules.num_tiles), dtype=np.int8)
        self.obs_buffer = np.zeros((n, OBS_SIZE), dtype=np.float32)
        self._state_buffer: np.ndarray | None = None  # made by the first state() call
        self.masks = np.zeros((n, self.num_actions), dtype=np.int8)
        self.current_player = np.zeros(n, dtype=np.int64)
        self.rewards_buffer = np.zeros((n, self.num_players), dtype=np.float32)
        self.terminated_buffer = np.zeros(n, dtype=np.bool_)
        self.truncated_buffer = np.zeros(n, dtype=np.bool_)
        self.all_rows = np.ones(n, dtype=np.bool_)
        self._bad_rows = np.zeros(n, dtype=np.bool_)  # the threaded check of the actions
        self.has_reset = False
        self.closed = False
        self._ignored_reset_options: set[str] = set()
        low, high = obs_bounds(self.rules)
        row_obs = {"action_mask": spaces.Box(0, 1, shape=(self.num_actions,), dtype=np.int8)}
        if observations:
            row_obs["observation"] = spaces.Box(low, high, shape=(OBS_SIZE,), dtype=np.float32)
        self.single_observation_space = spaces.Dict(row_obs)
        self.single_action_space = spaces.Discrete(self.num_actions)
        s_low, s_high = obs_bounds(self.rules, "state")
        #: The space of one row of :meth:`state` (the AEC env's ``state_space``).
        self.single_state_space = spaces.Box(s_low, s_high, shape=(STATE_SIZE,), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        #: Whether ``masks`` holds every row's mask of the current state (reset and step).
        self.masks_current = False

    # ------------------------------------------------------------------ API

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start a new match in every row. ``seed`` (or the constructor's, on the first reset)
        reseeds every row's stream; ``options={"deals": [deals_0, ..., deals_{N-1}]}`` gives
        row ``i`` the deals ``deals_i`` (the scalar env's list of ``{"hands", "boneyard"}``; None
        or ``[]`` for random deals) for the match this reset starts."""
        self.check_open()
        if seed is None and not self.has_reset:
            seed = self.initial_seed
        if seed is not None or not self.has_reset:
            self.seed(seed)
        deals = reset_deals(options, self._ignored_reset_options)
        self._load_deals(deals)
        K.reset_rows(self.rule_array, np.arange(self.num_envs), *self.state_arrays())
        self.has_reset = True
        self.observe_rows(self.all_rows)
        self.masks_current = True
        return self._obs_dict(), {
            "current_player": self.current_player.copy() if self.copy else self.current_player
        }

    def step(
        self, actions: Any
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Apply one action per row (for its seat on turn); see the module docstring."""
        self.check_open()
        if not self.has_reset:
            raise RuntimeError("call reset() before step()")
        acts = self.check_actions(actions)
        # copy=True: the masks buffer is the env's own, filled for every row by the last reset
        # or step, so one byte a row checks the actions
        self.raise_if_illegal(acts, self.all_rows, masked=self.copy and self.masks_current)
        # copy=True: the observations are written straight into a new array (no second pass)
        fresh = self.copy and self.observations
        obs = np.empty_like(self.obs_buffer) if fresh else self.obs_buffer
        kernel = K.step_observe_rows_parallel if self.parallel else K.step_observe_rows
        kernel(
            self.rule_array, acts, *self.state_arrays(), self.rewards_buffer,
            self.terminated_buffer, self.truncated_buffer, self.masks, obs,
            self.current_player, self.observations,
        )  # fmt: skip
        if fresh:
            return (
                {"observation": obs, "action_mask": self.masks.copy()},
                self.rewards_buffer.copy(),
                self.terminated_buffer.copy(),
                self.truncated_buffer.copy(),
                {"current_player": self.current_player.copy()},
            )
        if not self.copy:
            return (
                self._obs_dict(),
                self.rewards_buffer,
                self.terminated_buffer,
                self.truncated_buffer,
                {"current_player": self.current_player},
            )
        return (
            self._obs_dict(),
            self.rewards_buffer.copy(),
            self.terminated_buffer.copy(),
            self.truncated_buffer.copy(),
            {"current_player": self.current_player.copy()},
        )

    def random_actions(self, masks: Any) -> np.ndarray:
        """A uniform legal action per row of ``masks`` (any array-like of 0/1 or bools, shape
        ``(num_envs, A)``: numpy, a list, a CPU torch tensor; each row its own stream, seeded by
        ``reset``): the batched ``random`` agent."""
        rows = self.check_masks(masks)
        out = np.zeros(len(rows), dtype=np.int64)
        kernel = K.random_actions_parallel if self.parallel else K.random_actions
        kernel(rows, self.all_rows, self.agent_rng, out)
        empty = np.flatnonzero(out < 0)
        if len(empty):
            raise ValueError(f"masks: row {empty[0]} has no legal action")
        return out

    def close(self) -> None:
        """Close the env (it holds arrays only): ``reset`` and ``step`` afterwards raise."""
        self.closed = True

    def greedy_actions(self) -> np.ndarray:
        """The batched ``greedy`` agent's action in every row, for the seat on turn."""
        out = np.zeros(self.num_envs, dtype=np.int64)
        K.greedy_actions(
            self.rule_array, self.masks, self.all_rows, self.m, self.scores, self.hlen, out
        )
        return out

    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """Every row's global state (the AEC env's ``state()``: all hands and the boneyard's
        contents, absolute seats), ``(num_envs, STATE_SIZE)`` float32, for centralized critics.

        ``out``: a C-contiguous float32 array of that shape to write into (and return), e.g. a
        rollout buffer's row; without it, a new array (``copy=True``) or the env's buffer."""
        self.check_open()
        if not self.has_reset:
            raise RuntimeError("call reset() before state()")
        shape = (self.num_envs, STATE_SIZE)
        if out is None and self.copy:
            out = np.empty(shape, dtype=np.float32)
        elif out is None:
            if self._state_buffer is None:
                self._state_buffer = np.zeros(shape, dtype=np.float32)
            out = self._state_buffer
        elif (
            not isinstance(out, np.ndarray)
            or out.shape != shape
            or out.dtype != np.float32
            or not out.flags.c_contiguous
        ):
            got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
            raise ValueError(
                f"state: out must be a C-contiguous float32 array of shape {shape}, got {got}"
            )
        K.state_rows(
            self.rule_array, self.m, self.scores, self.hands, self.hlen, self.voids,
            self.line, self.bone, out,
        )  # fmt: skip
        return out

    @property
    def hand_number(self) -> np.ndarray:
        """Per row, the current match's hand number (from 0)."""
        return self.m[:, K.HAND_NO].astype(np.int64)

    def current_deal(self, i: int) -> dict[str, list[int]]:
        """The deal of row ``i``'s current hand (the scalar env's format, boneyard undrawn and
        drawn): replay it with ``BergenState(rules, deals=[...])``."""
        if not 0 <= i < self.num_envs:
            raise IndexError(f"row {i} is out of range 0..{self.num_envs - 1}")
        r = self.rules
        order = [int(t) for t in self.bone[i, : r.num_tiles]]
        size = r.hand_size
        hands = [sorted(order[s * size : (s + 1) * size]) for s in range(r.num_players)]
        return {"hands": hands, "boneyard": order[r.num_players * size :]}

    # ------------------------------------------------------------------ row-level access
    # For envs built on the batch (BergenLearnerVectorEnv): step or observe some rows only.
    # Buffers they fill (read them; the next call overwrites them): ``masks`` (N, A),
    # ``obs_buffer`` (N, OBS_SIZE), ``current_player`` (N,), ``rewards_buffer`` (N, players),
    # ``terminated_buffer`` and ``truncated_buffer`` (N,); ``all_rows`` is an all-True row mask.

    def seed(self, seed: int | None) -> None:
        """Reseed every row's stream (and the batched agents' streams) from ``seed``."""
        base = np.random.SeedSequence(seed).generate_state(2, np.uint64)
        K.seed_streams(base[0], 0, self.rng)
        K.seed_streams(base[1], 0, self.agent_rng)

    def state_arrays(self) -> tuple[np.ndarray, ...]:
        """The state arrays in the order the kernels take them (see ``kernels``)."""
        return (
            self.m, self.scores, self.hands, self.bits, self.hlen, self.voids,
            self.line, self.bone, self.rng, self.deals,
        )  # fmt: skip

    def _load_deals(self, deals: Sequence[Any] | None) -> None:
        n = self.num_envs
        if deals is None:
            self.deals = np.zeros((n, 0, self.rules.num_tiles), dtype=np.int8)
            self.m[:, K.DEALS] = 0
            return
        if len(deals) != n:
            raise InvalidOptionError(
                f"reset(options={{'deals': ...}}) needs one list of deals per match: got "
                f"{len(deals)} for num_envs={n}"
            )
        checked = [[validate_deal(d, self.rules) for d in (row or [])] for row in deals]
        most = max((len(row) for row in checked), default=0)
        self.deals = np.zeros((n, most, self.rules.num_tiles), dtype=np.int8)
        for i, row in enumerate(checked):
            for k, (hands, boneyard) in enumerate(row):
                self.deals[i, k] = [t for h in hands for t in h] + boneyard
            self.m[i, K.DEALS] = len(row)

    def check_masks(self, masks: Any) -> np.ndarray:
        """``masks`` (an array-like, see :meth:`random_actions`) as a contiguous int8 or bool
        ``(num_envs, A)`` array, or a one-line ``ValueError``."""
        rows = as_array("masks", masks, ValueError)
        shape = (self.num_envs, self.num_actions)
        kind_ok = rows.dtype.kind in "biu"
        if kind_ok and rows.dtype not in (np.int8, np.bool_):  # other ints: 0/1 only
            kind_ok = rows.size == 0 or (rows.min() >= 0 and rows.max() <= 1)
            rows = rows.astype(np.int8)
        if rows.shape != shape or not kind_ok:
            raise ValueError(
                f"masks must be 0/1 or bool values of shape {shape}, got {rows.dtype} {rows.shape}"
            )
        return np.ascontiguousarray(rows)

    def check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` (any array-like) as an int64 array of shape (N,), or
        ``IllegalActionError``."""
        acts = as_array("actions", actions, IllegalActionError)
        if acts.shape != (self.num_envs,) or acts.dtype.kind not in "iu":
            raise IllegalActionError(
                f"actions must be an integer array of shape ({self.num_envs},), got "
                f"{acts.dtype} {acts.shape}"
            )
        return acts.astype(np.int64, copy=False)

    def step_rows(self, acts: np.ndarray, active: np.ndarray) -> None:
        """Step the rows where ``active`` is True (all actions checked first); fills the
        reward and end buffers, restarts finished matches."""
        self.raise_if_illegal(acts, active)
        self.masks_current = False
        K.step_rows(
            self.rule_array,
            acts,
            active,
            *self.state_arrays(),
            self.rewards_buffer,
            self.terminated_buffer,
            self.truncated_buffer,
        )

    def raise_if_illegal(self, acts: np.ndarray, active: np.ndarray, masked: bool = False) -> None:
        """Raise ``IllegalActionError`` naming the first active row whose action is illegal for
        its seat on turn (``masked``: read the legality from ``masks``, filled for every row)."""
        if self.parallel:  # every row tested on the threads, then the first bad one found
            flags = self._bad_rows
            if masked:
                K.unmasked_rows_parallel(acts, self.masks, flags)
            else:
                K.illegal_rows_parallel(
                    self.rule_array, acts, active, self.m, self.hands, self.bits, flags
                )
            bad = int(np.argmax(flags)) if flags.any() else -1
        elif masked:
            bad = K.first_unmasked(acts, self.masks)
        else:
            bad = K.first_illegal(self.rule_array, acts, active, self.m, self.hands, self.bits)
        if bad >= 0:
            a = int(acts[bad])
            legal = [int(x) for x in np.flatnonzero(self.masks[bad])]
            text = action_str(a) if 0 <= a < self.num_actions else "out of range"
            raise IllegalActionError(
                f"match {bad}: action {a} ({text}) is illegal for "
                f"player_{self.current_player[bad]}; "
                f"legal actions: {', '.join(f'{x} ({action_str(x)})' for x in legal)}"
            )

    def observe_rows(self, active: np.ndarray, observations: bool | None = None) -> None:
        """Fill ``masks`` (and ``obs_buffer`` unless ``observations`` is False) for the seat on
        turn of the active rows."""
        K.observe_rows(
            self.rule_array, active, self.m, self.scores, self.hands, self.bits, self.hlen,
            self.voids, self.line, self.bone, self.masks, self.obs_buffer, self.current_player,
            self.observations if observations is None else observations,
        )  # fmt: skip

    def _obs_dict(self) -> dict[str, np.ndarray]:
        masks = self.masks.copy() if self.copy else self.masks
        if not self.observations:
            return {"action_mask": masks}
        return {
            "observation": self.obs_buffer.copy() if self.copy else self.obs_buffer,
            "action_mask": masks,
        }

    def check_open(self) -> None:
        """Raise if :meth:`close` was called."""
        if self.closed:
            raise RuntimeError(f"{self!r} is closed")

    def __repr__(self) -> str:
        return f"BergenVectorEnv({self.rules.name}, {self.num_players}p, num_envs={self.num_envs})"


def as_array(name: str, value: Any, error: type[Exception]) -> np.ndarray:
    """``value`` (numpy, a list, anything with ``__array__`` such as a CPU torch tensor) as a
    numpy array, or ``error`` in one line saying why not."""
    try:
        return np.asarray(value)
    except Exception as exc:  # e.g. a tensor on a GPU, ragged lists
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise error(f"{name} must be array-like (numpy, a list, a CPU tensor): {first}") from None
