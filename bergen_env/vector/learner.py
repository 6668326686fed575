"""``BergenLearnerVectorEnv``: a Gymnasium ``VectorEnv`` with one learner seat per match.

>>> from bergen_env.vector import BergenLearnerVectorEnv
>>> env = BergenLearnerVectorEnv(num_envs=8, opponents="greedy", seed=0)
>>> obs, infos = env.reset()
>>> obs.shape, infos["action_mask"].shape
((8, 240), (8, 58))

Each of the ``num_envs`` matches has one learner seat; the other seats are played inside the
batch by batched opponents, so every ``step`` returns at the learner's next decision in every
match. A match that ends restarts in the same step (Gymnasium's ``SAME_STEP`` autoreset): the
returned observation is the new match's first decision; ``rewards``, ``terminations`` and
``truncations`` are the finished match's.

Arguments: ``num_envs``; ``opponents``: ``"random"``, ``"greedy"`` or a callable
``f(observations, action_masks) -> actions`` over a batch (``(M, 240)`` float32, ``(M, A)``
int8, returning ``(M,)`` ints: a frozen policy for self-play), or a list with one of these per
other seat in turn order after the learner; ``learner_seat``: ``"random"`` (drawn for every
match from the row's stream) or a seat number; ``auto_forced`` (default True): the learner's
forced moves (exactly one legal action) are played for it; ``reward``: ``"match"`` (+1 /
-1/(sides-1) for the learner's side when the match ends), ``"points"`` (the learner's side's
score change minus the mean change of the other sides, summed over its move and the replies) or
``"win"`` (the change of the learner's side's chance to win the match, from the match-win table,
scaled by ``sides / (sides - 1)``: the single-agent env's ``"win"`` reward, whose sum is the
``"match"`` reward);
``max_hands``, ``seed`` and every rules argument as in :class:`BergenVectorEnv`.

``infos``: ``"action_mask"`` ``(N, A)`` int8, the learner's legal actions; ``"seat"`` ``(N,)``,
the learner's seat; each key with its ``"_key"`` mask (all True), as Gymnasium's vector envs
batch infos. A step that ends matches adds, as ``SyncVectorEnv`` in ``SAME_STEP`` mode does:
``"final_obs"`` (an object array: the learner's observation of the finished match in its row,
None elsewhere; bootstrap a truncated match from it), ``"final_info"`` (a dict: the finished
match's ``"action_mask"`` (all ones, no decision left), ``"seat"``, ``"scores"`` ``(N, sides)``,
``"hand"`` and, for a terminated match, ``"winner"`` (the winning side, -1 for none), each with
its ``"_key"`` mask), and the masks ``"_final_obs"`` and ``"_final_info"`` (True on the rows
whose match ended).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from bergen_env.agents.match_value import reward_table
from bergen_env.env_options import DEFAULT_MAX_HANDS, check_env_keywords
from bergen_env.errors import IllegalActionError, InvalidOptionError
from bergen_env.observation import OBS_SIZE, obs_bounds
from bergen_env.rules import Rules
from bergen_env.validation import keyword_names
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit_borrowed
from bergen_env.vector.env import BergenVectorEnv

BatchPolicy = Callable[[np.ndarray, np.ndarray], Any]
OpponentSpec = str | BatchPolicy
BUILTIN_OPPONENTS = ("random", "greedy")
REWARD_MODES = ("match", "points", "win")


class BergenLearnerVectorEnv(gym.vector.VectorEnv):
    """One learner seat per match against batched opponents; see the module docstring."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int,
        opponents: OpponentSpec | Sequence[OpponentSpec] = "random",
        learner_seat: str | int = "random",
        auto_forced: bool = True,
        rules: str | Rules = "standard",
        num_players: int | None = None,
        partnerships: bool | None = None,
        seed: int | None = None,
        reward: str = "match",
        max_hands: int | None = DEFAULT_MAX_HANDS,
        **overrides: Any,
    ) -> None:
        check_env_keywords(overrides, keyword_names(type(self).__init__))
        if reward not in REWARD_MODES:
            raise InvalidOptionError(
                f"option 'reward' must be one of {REWARD_MODES}, got {reward!r}"
            )
        self.reward_mode = reward
        if reward == "win":
            reward = "match"  # the batch's reward: the match's end maps to a chance of 1 or 0
        self.batch = BergenVectorEnv(
            num_envs,
            rules=rules,
            num_players=num_players,
            partnerships=partnerships,
            seed=seed,
            reward=reward,
            max_hands=max_hands,
            **overrides,
        )
        self.rules = self.batch.rules
        n = self.rules.num_players
        self.num_envs = self.batch.num_envs
        specs = [opponents] if isinstance(opponents, str) or callable(opponents) else opponents
        specs = list(specs)
        if len(specs) == 1:
            specs = specs * (n - 1)
        if len(specs) != n - 1:
            raise InvalidOptionError(
                f"option 'opponents' needs 1 or {n - 1} entries for {n} players, got {len(specs)}"
            )
        for spec in specs:
            if not (spec in BUILTIN_OPPONENTS or (callable(spec) and not isinstance(spec, str))):
                raise InvalidOptionError(
                    f"option 'opponents': each entry must be one of {BUILTIN_OPPONENTS} or a "
                    f"callable (observations, action_masks) -> actions, got {spec!r}"
                )
        self.opponents = specs
        self._needs_obs = any(callable(s) for s in specs)
        #: per relative seat (0, the learner's, unused): 0 random, 1 greedy (built-ins only)
        self._kinds = np.array([0] + [int(spec == "greedy") for spec in specs], dtype=np.int64)
        if learner_seat != "random" and not (
            isinstance(learner_seat, (int, np.integer))
            and not isinstance(learner_seat, bool)
            and 0 <= learner_seat < n
        ):
            raise InvalidOptionError(
                f"option 'learner_seat' must be 'random' or a seat in 0..{n - 1}, "
                f"got {learner_seat!r}"
            )
        if not isinstance(auto_forced, bool):
            raise InvalidOptionError(
                f"option 'auto_forced' must be True or False, got {auto_forced!r}"
            )
        self.learner_seat_option = learner_seat
        self._seat_option = -1 if learner_seat == "random" else int(learner_seat)
        self.auto_forced = auto_forced
        low, high = obs_bounds(self.rules)
        self.single_observation_space = spaces.Box(low, high, shape=(OBS_SIZE,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(self.rules.num_actions)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        size = self.num_envs
        self.seats = np.zeros(size, dtype=np.int64)
        self._seat_rng = np.zeros(size, dtype=np.uint64)
        self._acted = np.zeros(size, dtype=np.bool_)
        self._reward = np.zeros(size, dtype=np.float32)
        self._carry = np.zeros(size, dtype=np.float32)
        self._term = np.zeros(size, dtype=np.bool_)
        self._trunc = np.zeros(size, dtype=np.bool_)
        self._actions = np.zeros(size, dtype=np.int64)
        self._rows = np.arange(size)
        self._seat_rewards = np.zeros((size, K.MAX_SEATS), dtype=np.float32)
        self._ended = np.zeros((2, size), dtype=np.bool_)
        #: the state before the current step (replayed for the final observations), and the
        #: actions of each round of the Python advance (callable opponents)
        self._before: list[np.ndarray] = []
        self._rounds: list[tuple[np.ndarray, np.ndarray]] = []
        self._win_table = None
        if self.reward_mode == "win":
            self._win_table = reward_table(self.rules)
            #: per row, the learner's side's chance to win after its last step
            self._chance = np.zeros(size, dtype=np.float64)
            sides = self.rules.num_sides
            self._start_chance = self._chances(np.zeros((1, sides), np.int64), np.zeros(1))[0]

    # ------------------------------------------------------------------ API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a match in every row (``options={"deals": [...]}`` as in BergenVectorEnv)."""
        first = not self.batch.has_reset
        self.batch.reset(seed=seed, options=options)
        if seed is not None or first:
            base = np.random.SeedSequence(self.batch.initial_seed if seed is None else seed)
            K.seed_streams(base.generate_state(3, np.uint64)[2], 0, self._seat_rng)
        self._draw_seats(np.ones(self.num_envs, dtype=np.bool_))
        self._acted[:] = False
        self._carry[:] = 0.0
        self._reward[:] = 0.0
        self._term[:] = False
        self._trunc[:] = False
        if self._win_table is not None:
            self._chance[:] = self._start_chance
        self._advance()
        self._reward[:] = 0.0  # points scored before the first decision go to the first step
        return self._learner_obs(), self._infos()

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The learner's action in every match, then the opponents' replies."""
        b = self.batch
        b.check_open()
        if not b.has_reset:
            raise RuntimeError("call reset() before step()")
        acts = b.check_actions(actions)
        self._keep_state()
        self._reward[:] = self._carry
        self._carry[:] = 0.0
        self._term[:] = False
        self._trunc[:] = False
        self._acted[:] = True
        self._apply(acts, b.all_rows, "the learner")
        self._advance()
        infos = self._infos()
        ended = self._term | self._trunc
        if ended.any():
            self._add_final(infos, np.flatnonzero(ended), acts)
        if self._win_table is not None:
            self._win_rewards(infos, ended)
        return (
            self._learner_obs(),
            self._reward.copy(),
            self._term.copy(),
            self._trunc.copy(),
            infos,
        )

    def close(self, **kwargs: Any) -> None:
        """Close the env (it holds arrays only); ``reset``/``step`` afterwards raise."""
        if hasattr(self, "batch"):  # (also called by __del__ after a failed __init__)
            self.batch.close()
        super().close(**kwargs)

    def state_dict(self) -> dict[str, np.ndarray]:
        """Every array the batch's future depends on (the matches, their streams, the learner's
        seats and pending rewards), copied: :meth:`load_state_dict` of an env built with the
        same arguments continues step for step as this one (the opponents are the caller's)."""
        b = self.batch
        if not b.has_reset:
            raise RuntimeError("call reset() before state_dict()")
        arrays = dict(zip(_BATCH_STATE, b.state_arrays()))
        for name in _BATCH_BUFFERS:
            arrays[name] = getattr(b, name)
        for name in self._own_state():
            arrays[name] = getattr(self, name)
        return {name: np.array(a, copy=True) for name, a in arrays.items()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Put back what :meth:`state_dict` returned (shapes and dtypes checked)."""
        b = self.batch
        b.check_open()
        names = (*_BATCH_STATE, *_BATCH_BUFFERS, *self._own_state())
        missing = sorted(set(names) - set(state))
        if missing:
            raise ValueError(f"state_dict: missing arrays {missing}")
        for name in names:
            owner = b if name in _BATCH_STATE or name in _BATCH_BUFFERS else self
            mine, given = getattr(owner, name), np.asarray(state[name])
            if name == "deals":  # its length is the longest list of given deals
                setattr(b, name, np.array(given, dtype=mine.dtype, copy=True))
                continue
            if given.shape != mine.shape or given.dtype != mine.dtype:
                raise ValueError(
                    f"state_dict: array {name!r} is {given.dtype} {given.shape}, this env's "
                    f"{mine.dtype} {mine.shape} (another num_envs, rule set or reward?)"
                )
            np.copyto(mine, given)
        b.has_reset = True
        b.masks_current = True

    def _own_state(self) -> tuple[str, ...]:
        names = ("seats", "_seat_rng", "_acted", "_carry")
        return (*names, "_chance") if self._win_table is not None else names

    # ------------------------------------------------------------------ internals

    def _apply(self, acts: np.ndarray, active: np.ndarray, who: str) -> None:
        """Step the active rows and book each result for its learner."""
        b = self.batch
        try:
            b.step_rows(acts, active)
        except IllegalActionError as exc:
            raise IllegalActionError(f"{who}: {exc}") from None
        rows = self._rows[active]
        gained = b.rewards_buffer[rows, self.seats[rows]]
        acted = self._acted[rows]
        ended = b.terminated_buffer[rows] | b.truncated_buffer[rows]
        # before the learner's first decision of a match its gains wait for its first step
        self._reward[rows[acted]] += gained[acted]
        self._carry[rows[~acted]] += gained[~acted]
        done = rows[ended]
        if len(done):
            real = done[self._acted[done]]  # a match that ended before its learner acted
            self._term[real] |= b.terminated_buffer[real]  # (tiny targets) is replaced silently
            self._trunc[real] |= b.truncated_buffer[real]
            self._carry[done] = 0.0
            self._acted[done] = False
            fresh = np.zeros(self.num_envs, dtype=np.bool_)
            fresh[done] = True
            self._draw_seats(fresh)

    def _advance(self) -> None:
        """Opponents (and the learner's forced moves) play until the learner must choose."""
        if not self._needs_obs:  # built-in opponents only: one compiled pass over the rows
            b = self.batch
            K.advance_rows(
                b.rule_array, self._kinds, self._seat_option, self.auto_forced, *b.state_arrays(),
                b.agent_rng, self._seat_rng, self.seats, self._acted, self._reward, self._carry,
                self._term, self._trunc, b.masks, self._seat_rewards, self._ended,
            )  # fmt: skip
            return
        self._advance_in_python()

    def _advance_in_python(self) -> None:
        """:meth:`_advance` round by round, asking callable opponents for their rows."""
        b = self.batch
        n = self.rules.num_players
        masks, acts = b.masks, self._actions
        while True:
            b.observe_rows(b.all_rows, self._needs_obs)
            cur = b.current_player
            rel = (cur - self.seats) % n
            waiting = rel != 0
            if self.auto_forced:
                forced = (rel == 0) & (masks.sum(axis=1) == 1)
                waiting |= forced
            if not waiting.any():
                return
            if self.auto_forced and forced.any():
                acts[forced] = masks[forced].argmax(axis=1)
            for k, spec in enumerate(self.opponents, start=1):
                rows = rel == k
                if not rows.any():
                    continue
                if spec == "random":
                    K.random_actions(masks, rows, b.agent_rng, acts)
                elif spec == "greedy":
                    K.greedy_actions(b.rule_array, masks, rows, b.m, b.scores, b.hlen, acts)
                else:
                    chosen = np.asarray(spec(b.obs_buffer[rows], masks[rows]))
                    if chosen.shape != (int(rows.sum()),) or chosen.dtype.kind not in "iu":
                        raise IllegalActionError(
                            f"opponent {spec!r} must return one integer action per row, got "
                            f"{chosen.dtype} {chosen.shape}"
                        )
                    acts[rows] = chosen
            who = "an opponent" if not self.auto_forced else "an opponent or a forced move"
            self._rounds.append((acts.copy(), waiting.copy()))
            self._apply(acts, waiting, who)

    def _learner_obs(self) -> np.ndarray:
        b = self.batch
        if not self._needs_obs:
            b.observe_rows(b.all_rows, True)
        return b.obs_buffer.copy()

    def _infos(self) -> dict[str, Any]:
        every = np.ones(self.num_envs, dtype=np.bool_)
        return {
            "action_mask": self.batch.masks.copy(),
            "_action_mask": every,
            "seat": self.seats.copy(),
            "_seat": every.copy(),
        }

    # ------------------------------------------------------------------ the "win" reward

    def _chances(self, scores: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """Per row, the chance of seat ``seats[i]``'s side to win from the sides' ``scores``
        (rows of a running match: every score below the target)."""
        table, sides = self._win_table, self.rules.num_sides
        side = seats.astype(np.int64) % sides
        rows = np.arange(len(side))[:, None]
        turn = (side[:, None] + np.arange(sides)) % sides  # own side first, then turn order
        index = np.clip(scores[rows, turn], table.low, table.target - 1) - table.low
        return table.table[tuple(index.T)]

    def _win_rewards(self, infos: dict[str, Any], ended: np.ndarray) -> None:
        """Replace the step's ``match`` rewards by the change of the win chance."""
        sides = self.rules.num_sides
        now = self._chances(self.batch.scores[:, :sides], self.seats)
        if ended.any():
            final = infos["final_info"]
            at_end = np.where(
                self._term,
                (self._reward * (sides - 1) + 1.0) / sides,  # won 1, lost 0, no winner 1/sides
                self._chances(final["scores"], final["seat"]),  # (truncated: below the target)
            )
            now = np.where(ended, at_end, now)
        self._reward[:] = (now - self._chance) * (sides / (sides - 1))
        self._chance[:] = np.where(ended, self._start_chance, now)

    # ------------------------------------------------------------------ final observations
    # A finished match restarts inside the compiled step, so its last position is replayed
    # (replay_final) from the state kept before the step.

    def _keep_state(self) -> None:
        """Copy the state (and the streams and seats) that the coming step starts from."""
        b = self.batch
        live = (*b.state_arrays()[:-1], b.agent_rng, self.seats)  # the deals never change
        if not self._before:
            self._before = [a.copy() for a in live]
        else:
            for kept, a in zip(self._before, live):
                np.copyto(kept, a)
        self._rounds.clear()

    def _add_final(self, infos: dict[str, Any], rows: np.ndarray, acts: np.ndarray) -> None:
        """``final_obs`` / ``final_info`` and their masks for the matches that ended in ``rows``."""
        size, b = self.num_envs, self.batch
        *state, agent_rng, seats = self._before
        m, scores = state[0], state[1]
        if self._rounds:
            recorded = np.stack([a for a, _ in self._rounds])
            waiting = np.stack([w for _, w in self._rounds])
        else:
            recorded = np.zeros((0, size), dtype=np.int64)
            waiting = np.zeros((0, size), dtype=np.bool_)
        obs = np.zeros((size, OBS_SIZE), dtype=np.float32)
        masks = np.zeros((size, self.rules.num_actions), dtype=np.int8)
        replay_final(
            b.rule_array, rows, acts, self._kinds, self.auto_forced, self._needs_obs, recorded,
            waiting, *state, b.deals, agent_rng, seats, masks, obs,
        )  # fmt: skip
        final_obs = np.full(size, None, dtype=object)
        for i in rows:
            final_obs[i] = obs[i]
        ended = np.zeros(size, dtype=np.bool_)
        ended[rows] = True
        sides = self.rules.num_sides
        final_info = {
            "action_mask": np.zeros((size, self.rules.num_actions), dtype=np.int8),
            "_action_mask": ended,
            "seat": np.where(ended, seats, 0),
            "_seat": ended.copy(),
            "scores": np.where(ended[:, None], scores[:, :sides], 0).astype(np.int64),
            "_scores": ended.copy(),
            "hand": np.where(ended, m[:, K.HAND_NO], 0).astype(np.int64),
            "_hand": ended.copy(),
        }
        if self._term.any():  # (a key that no row has is left out, as Gymnasium does)
            final_info["winner"] = np.where(self._term, m[:, K.WINNER], -1).astype(np.int64)
            final_info["_winner"] = self._term.copy()
        final_info["action_mask"][rows] = 1
        infos.update(final_obs=final_obs, _final_obs=ended.copy(), final_info=final_info)
        infos["_final_info"] = ended.copy()

    def _draw_seats(self, rows: np.ndarray) -> None:
        n = self.rules.num_players
        if self.learner_seat_option == "random":
            K.draw_seats(self._seat_rng, rows, n, self.seats)
        else:
            self.seats[rows] = int(self.learner_seat_option)


#: The batch's state arrays (``BergenVectorEnv.state_arrays``, in order) and the buffers a
#: step's result is read from.
_BATCH_STATE = ("m", "scores", "hands", "bits", "hlen", "voids", "line", "bone", "rng", "deals")
_BATCH_BUFFERS = ("agent_rng", "masks", "obs_buffer", "current_player")


@njit_borrowed
def replay_final(
    r, rows, acts, kinds, auto_forced, use_recorded, recorded, waiting, m, scores, hands, bits,
    hlen, voids, line, bone, rng, deals, agent_rng, seats, masks, out,
):  # fmt: skip
    """Replay each row ``i`` of ``rows`` from the state before a step up to the end of its
    match and write the learner's (``seats[i]``) observation of it into row ``i`` of ``out``
    (``masks``: scratch of the batch's shape): the learner's action ``acts[i]``, then the
    opponents' and forced moves as ``advance_rows`` plays them (``seat_action``, drawing from
    the same streams) or, with ``use_recorded``, as recorded per round (``recorded[k, i]``
    where ``waiting[k, i]``)."""
    for i in rows:
        a = acts[i]
        k = 0
        while True:
            K.apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a)
            if m[i, K.TERMINAL] or (r[K.R_MAX_HANDS] and m[i, K.HAND_NO] >= r[K.R_MAX_HANDS]):
                break
            if use_recorded:
                while not waiting[k, i]:
                    k += 1
                a = recorded[k, i]
                k += 1
                continue
            count = K.legal_mask(r, i, m, hands, bits, masks)
            a = K.seat_action(r, i, kinds, seats, auto_forced, count, masks, m, scores, hlen,
                              agent_rng)  # fmt: skip
            if a < 0:  # a match that ended in the step has no real decision before its end
                raise RuntimeError("replay_final: the learner must choose before the match ends")
        masks[i] = 0
        if not m[i, K.TERMINAL] and m[i, K.CUR] == seats[i]:
            K.legal_mask(r, i, m, hands, bits, masks)
        K.encode(r, i, m, scores, hands, hlen, voids, line, bone, masks, seats[i], out)
