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

Arguments: ``num_envs``; ``opponents``: one opponent for every other seat, or a list with one
per other seat in turn order after the learner (in partnerships the second is the learner's
partner); an opponent is an agent string of a batchable kind (``"random"``, ``"greedy"``,
``"heuristic"``/``"heuristic:threat=1.5"``, ``"tuned"``, ``"policy:PATH"``; see
:mod:`bergen_env.agents.batch_opponents`), an agent with ``act_batch``, a callable
``f(observations, action_masks) -> actions`` over a batch (``(M, 240)`` float32, ``(M, A)``
int8, returning ``(M,)`` ints: a frozen policy for self-play), or a list of these, one drawn
for each match (uniformly; :meth:`~BergenLearnerVectorEnv.set_opponents` sets other odds);
``learner_seat``: ``"random"`` (drawn for every
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

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from bergen_env.actions import action_str
from bergen_env.agents.base import Agent
from bergen_env.agents.batch_opponents import (
    FUNCTION,
    BatchOpponent,
    BatchPolicy,
    batch_opponent,
)
from bergen_env.agents.compiled.opponent_moves import opponent_move
from bergen_env.agents.match_value import reward_table
from bergen_env.env_options import DEFAULT_MAX_HANDS, check_env_keywords
from bergen_env.errors import IllegalActionError, InvalidOptionError
from bergen_env.observation import OBS_SIZE, obs_bounds
from bergen_env.rules import Rules
from bergen_env.validation import keyword_names
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit, njit_borrowed, njit_inline
from bergen_env.vector.env import BergenVectorEnv

#: One opponent: an agent string, an agent, a batch function or a :class:`BatchOpponent`.
Opponent = str | Agent | BatchPolicy | BatchOpponent
#: A seat's opponent, or a list of them of which each match draws one.
OpponentSpec = Opponent | Sequence[Opponent]
REWARD_MODES = ("match", "points", "win")


class BergenLearnerVectorEnv(gym.vector.VectorEnv):
    """One learner seat per match against batched opponents; see the module docstring.

    ``opponent_roster``: the opponents in play (:class:`BatchOpponent`); ``seat_opponents``
    ``(N, players)``: per row, the roster index of the opponent at each seat relative to the
    learner in the current match (column 0, the learner's, unused).
    """

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
        self.opponent_roster: list[BatchOpponent] = []
        self.seat_opponents = np.zeros((self.num_envs, n), dtype=np.int64)
        self._keys: list[Any] = []  # what each roster entry was made from (held)
        self.set_opponents(opponents)
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
        self.single_state_space = self.batch.single_state_space
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
        #: per row, the roster index of the batch function its seat on turn waits for (-1: the
        #: learner's decision)
        self._waiting = np.full(size, -1, dtype=np.int64)
        #: the state before the current step (replayed for the final observations), and the
        #: actions of each round of batch functions
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

    def set_opponents(
        self,
        opponents: OpponentSpec | Sequence[OpponentSpec],
        weights: Sequence[Sequence[float] | None] | None = None,
    ) -> None:
        """Set the opponents (the constructor's forms) for the matches that start from now on;
        running matches end with the opponents they started with.

        ``weights``: the odds of the candidates of a seat that draws among several, in the
        shape of ``opponents``: one list per entry (None for an entry with one candidate), e.g.
        ``set_opponents([["heuristic", snapshot_a, snapshot_b]], weights=[[2, 1, 1]])``;
        without it, each candidate equally often."""
        n = self.rules.num_players
        entries = _seat_entries(opponents, n)
        odds = _entry_weights(weights, entries)
        if len(entries) == 1:
            entries, odds = entries * (n - 1), odds * (n - 1)
        # the roster: the new opponents, then the old ones running matches still play; an
        # opponent is known by its string, or else by the object itself (held, so it lives on)
        kept = self.opponent_roster
        running = kept and self.batch.has_reset
        still = {int(k) for k in np.unique(self.seat_opponents[:, 1:])} if running else set()
        roster: list[BatchOpponent] = []
        new_keys: list[Any] = []
        for spec in (c for seat in entries for c in seat):
            if _index(new_keys, spec) >= 0:
                continue
            old = _index(self._keys, spec)
            roster.append(kept[old] if old >= 0 else batch_opponent(spec, self.rules))
            new_keys.append(spec)
        remap = np.zeros(max(len(kept), 1), dtype=np.int64)
        for k in sorted(still):
            if _index(new_keys, self._keys[k]) < 0:
                roster.append(kept[k])
                new_keys.append(self._keys[k])
            remap[k] = _index(new_keys, self._keys[k])
        if running:
            self.seat_opponents[:, 1:] = remap[self.seat_opponents[:, 1:]]
        most = max(len(seat) for seat in entries)
        self._cands = np.zeros((n, most), dtype=np.int64)
        self._ncands = np.ones(n, dtype=np.int64)
        self._cum = np.ones((n, most), dtype=np.float64)
        for s, (seat, p) in enumerate(zip(entries, odds), start=1):
            self._cands[s, : len(seat)] = [_index(new_keys, c) for c in seat]
            self._ncands[s] = len(seat)
            self._cum[s, : len(seat)] = np.cumsum(p) / np.sum(p)
        self.opponent_roster, self._keys = roster, new_keys
        self.opponents = [seat[0] if len(seat) == 1 else list(seat) for seat in entries]
        self._codes = np.array([o.code for o in roster], dtype=np.int64)
        self._weights = np.stack([o.weights for o in roster])
        self._has_functions = bool((self._codes == FUNCTION).any())

    @property
    def opponent_keys(self) -> tuple[Any, ...]:
        """What each :attr:`opponent_roster` entry was made from (the string or the object
        given to :meth:`set_opponents`), in roster order."""
        return tuple(self._keys)

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
        self._rounds.clear()
        self._actions[:] = -1
        self._play(self._actions, self.batch.all_rows)
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
        try:
            b.raise_if_illegal(acts, b.all_rows)
        except IllegalActionError as exc:
            raise IllegalActionError(f"the learner: {exc}") from None
        self._keep_state()
        self._reward[:] = self._carry
        self._carry[:] = 0.0
        self._term[:] = False
        self._trunc[:] = False
        self._acted[:] = True
        self._play(acts, b.all_rows)
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

    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """Every row's global state at the learner's decision, ``(num_envs, STATE_SIZE)``
        float32: the AEC env's ``state()`` (all hands and the boneyard's contents, absolute
        seats; ``single_state_space``), for a centralized critic. ``out``: an array to write
        into, as :meth:`BergenVectorEnv.state`."""
        return self.batch.state(out)

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
        names = ("seats", "seat_opponents", "_seat_rng", "_acted", "_carry")
        return (*names, "_chance") if self._win_table is not None else names

    # ------------------------------------------------------------------ internals

    def _play(self, acts: np.ndarray, pending: np.ndarray) -> None:
        """Apply ``acts`` (-1: none) in the pending rows, then play every row until its learner
        must choose: the compiled opponents (and the learner's forced moves) in one compiled
        pass, the batch functions once a round for all the rows waiting for them."""
        b = self.batch
        b.masks_current = False
        while True:
            advance_rows(
                b.rule_array, self._codes, self._weights, self._cands, self._ncands, self._cum,
                self._seat_option, self.auto_forced, acts, pending, *b.state_arrays(),
                b.agent_rng, self._seat_rng, self.seats, self.seat_opponents, self._acted,
                self._reward, self._carry, self._term, self._trunc, b.masks, self._seat_rewards,
                self._ended, self._waiting,
            )  # fmt: skip
            if not self._has_functions:
                return
            pending = self._waiting >= 0
            if not pending.any():
                return
            b.observe_rows(pending, True)
            acts = self._actions
            for k in np.unique(self._waiting[pending]):
                rows = self._waiting == k
                acts[rows] = self._function_actions(self.opponent_roster[k], rows)
            self._rounds.append((acts.copy(), pending.copy()))

    def _function_actions(self, opponent: BatchOpponent, rows: np.ndarray) -> np.ndarray:
        """The actions of a batch function for its rows (legal, else a named error)."""
        b = self.batch
        masks = b.masks[rows]
        chosen = np.asarray(opponent.function(b.obs_buffer[rows], masks))
        if chosen.shape != (len(masks),) or chosen.dtype.kind not in "iu":
            raise IllegalActionError(
                f"opponent {opponent.name!r} must return one integer action per row, got "
                f"{chosen.dtype} {chosen.shape}"
            )
        inside = (chosen >= 0) & (chosen < b.num_actions)
        legal = inside & (masks[np.arange(len(masks)), np.where(inside, chosen, 0)] != 0)
        if not legal.all():
            j = int(np.argmin(legal))
            row, a = int(np.flatnonzero(rows)[j]), int(chosen[j])
            text = action_str(a) if 0 <= a < b.num_actions else "out of range"
            allowed = ", ".join(f"{x} ({action_str(x)})" for x in np.flatnonzero(masks[j]))
            raise IllegalActionError(
                f"opponent {opponent.name!r}: match {row}: action {a} ({text}) is illegal for "
                f"player_{b.current_player[row]}; legal actions: {allowed}"
            )
        return chosen

    def _learner_obs(self) -> np.ndarray:
        b = self.batch
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
        """Copy the state (and the streams, seats and opponents) that the coming step starts
        from."""
        b = self.batch
        live = (*b.state_arrays()[:-1], b.agent_rng, self.seats, self.seat_opponents)
        if not self._before:
            self._before = [a.copy() for a in live]
        else:
            for kept, a in zip(self._before, live):
                np.copyto(kept, a)
        self._rounds.clear()

    def _add_final(self, infos: dict[str, Any], rows: np.ndarray, acts: np.ndarray) -> None:
        """``final_obs`` / ``final_info`` and their masks for the matches that ended in ``rows``."""
        size, b = self.num_envs, self.batch
        *state, agent_rng, seats, seat_opponents = self._before
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
            b.rule_array, rows, acts, self._codes, self._weights, seat_opponents,
            self.auto_forced, recorded, waiting, *state, b.deals, agent_rng, seats, masks, obs,
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
        """A learner seat (and the opponents) for the new match of each row of ``rows``."""
        n = self.rules.num_players
        if self.learner_seat_option == "random":
            K.draw_seats(self._seat_rng, rows, n, self.seats)
        else:
            self.seats[rows] = int(self.learner_seat_option)
        draw_opponents_rows(
            rows, n, self._cands, self._ncands, self._cum, self._seat_rng, self.seat_opponents
        )


def _index(keys: list[Any], spec: Any) -> int:
    """Where ``spec`` is in ``keys`` (-1: nowhere): a string by its text, else by identity."""
    for k, key in enumerate(keys):
        if key is spec or (isinstance(spec, str) and isinstance(key, str) and key == spec):
            return k
    return -1


def _is_one(spec: Any) -> bool:
    return isinstance(spec, (str, Agent, BatchOpponent)) or callable(spec)


def _seat_entries(opponents: Any, n: int) -> list[list[Any]]:
    """``opponents`` as one list of candidates per entry (one entry, or one per other seat)."""
    if _is_one(opponents):
        entries = [opponents]
    elif isinstance(opponents, Sequence) and opponents:
        entries = list(opponents)
    else:
        raise InvalidOptionError(
            f"option 'opponents' must be an opponent or a list of them, got {opponents!r}"
        )
    if len(entries) not in (1, n - 1):
        raise InvalidOptionError(
            f"option 'opponents' needs 1 or {n - 1} entries for {n} players (one per other "
            f"seat; a list inside an entry is drawn from for each match), got {len(entries)}"
        )
    out = []
    for entry in entries:
        seat = [entry] if _is_one(entry) else entry
        if (
            not isinstance(seat, Sequence)
            or isinstance(seat, str)
            or not seat
            or not all(_is_one(c) for c in seat)
        ):
            raise InvalidOptionError(
                f"option 'opponents': each entry is an opponent (an agent string, an agent, a "
                f"callable (observations, action_masks) -> actions) or a non-empty list of "
                f"them, got {entry!r}"
            )
        out.append(list(seat))
    return out


def _entry_weights(weights: Any, entries: list[list[Any]]) -> list[np.ndarray]:
    """The odds of each entry's candidates (uniform without ``weights``)."""
    if weights is None:
        return [np.ones(len(seat)) for seat in entries]
    if not isinstance(weights, Sequence) or len(weights) != len(entries):
        raise InvalidOptionError(
            f"option 'weights' needs one list per opponents entry ({len(entries)}), got {weights!r}"
        )
    out = []
    for seat, w in zip(entries, weights):
        p = np.ones(len(seat)) if w is None else np.asarray(w, dtype=np.float64)
        if p.shape != (len(seat),) or not np.all(np.isfinite(p)) or p.min() < 0 or p.sum() <= 0:
            raise InvalidOptionError(
                f"option 'weights': {w!r} must be {len(seat)} finite numbers >= 0, not all 0, "
                f"one per candidate of {seat!r}"
            )
        out.append(p)
    return out


@njit_inline
def draw_opponents(i, n, cands, ncands, cum, seat_rng, seat_opponents):
    """The opponents of row ``i``'s new match: seat ``s`` (relative to the learner) plays
    ``cands[s, k]``, ``k`` drawn by the cumulative odds ``cum[s]`` from stream ``i`` of
    ``seat_rng`` (no draw for a seat with one candidate)."""
    for s in range(1, n):
        k = 0
        if ncands[s] > 1:
            u = np.float64(K.next_u64(seat_rng, i) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
            while k < ncands[s] - 1 and u >= cum[s, k]:
                k += 1
        seat_opponents[i, s] = cands[s, k]


@njit
def draw_opponents_rows(rows, n, cands, ncands, cum, seat_rng, seat_opponents):
    """:func:`draw_opponents` for every row of ``rows`` (a bool mask)."""
    for i in range(rows.shape[0]):
        if rows[i]:
            draw_opponents(i, n, cands, ncands, cum, seat_rng, seat_opponents)


@njit_borrowed
def advance_rows(
    r, codes, weights, cands, ncands, cum, seat_option, auto_forced, acts, pending, m, scores,
    hands, bits, hlen, voids, line, bone, rng, deals, agent_rng, seat_rng, seats, seat_opponents,
    acted, reward, carry, term, trunc, masks, seat_rewards, ended_flags, waiting,
):  # fmt: skip
    """Play every pending row: its action ``acts[i]`` first (none when negative), then the
    compiled opponents (``codes``/``weights`` of roster entry ``seat_opponents[i, seat relative
    to the learner]``) and the learner's forced moves (with ``auto_forced``) until the learner
    (``seats[i]``) has a real decision (``waiting[i] = -1``) or the seat on turn is a batch
    function (``waiting[i]``: its roster index). Each move's learner reward goes to ``reward``
    once it has acted in the match, else to ``carry``; a match that ends is flagged in
    ``term``/``trunc`` (when its learner acted) and its next match draws a learner seat
    (``seat_option`` < 0: random) and opponents (:func:`draw_opponents`)."""
    n = r[K.R_N]
    ended_term = ended_flags[0]
    ended_trunc = ended_flags[1]
    for i in range(m.shape[0]):
        if not pending[i]:
            continue
        a = acts[i]
        while True:
            if a >= 0:
                b0, b1, b2, b3 = scores[i, 0], scores[i, 1], scores[i, 2], scores[i, 3]
                K.apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a)
                K.finish_row(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals,
                             seat_rewards, ended_term, ended_trunc, b0, b1, b2, b3)  # fmt: skip
                gain = seat_rewards[i, seats[i]]
                if acted[i]:
                    reward[i] += gain
                else:
                    carry[i] += gain
                if ended_term[i] or ended_trunc[i]:
                    if acted[i]:
                        term[i] |= ended_term[i]
                        trunc[i] |= ended_trunc[i]
                    carry[i] = 0.0
                    acted[i] = False
                    seats[i] = K.below(seat_rng, i, n) if seat_option < 0 else seat_option
                    draw_opponents(i, n, cands, ncands, cum, seat_rng, seat_opponents)
            count = K.legal_mask(r, i, m, hands, bits, masks)
            rel = (m[i, K.CUR] - seats[i]) % n
            if rel == 0:
                if not (auto_forced and count == 1):
                    waiting[i] = -1
                    break
                a = K.random_row(masks, agent_rng, i)  # the only legal action: no draw
                continue
            o = seat_opponents[i, rel]
            if codes[o] == FUNCTION:
                waiting[i] = o
                break
            a = opponent_move(r, i, codes[o], weights[o], m, scores, hands, bits, hlen, voids,
                              line, masks, agent_rng)  # fmt: skip


#: The batch's state arrays (``BergenVectorEnv.state_arrays``, in order) and the buffers a
#: step's result is read from.
_BATCH_STATE = ("m", "scores", "hands", "bits", "hlen", "voids", "line", "bone", "rng", "deals")
_BATCH_BUFFERS = ("agent_rng", "masks", "obs_buffer", "current_player")


@njit_borrowed
def replay_final(
    r, rows, acts, codes, weights, seat_opponents, auto_forced, recorded, waiting, m, scores,
    hands, bits, hlen, voids, line, bone, rng, deals, agent_rng, seats, masks, out,
):  # fmt: skip
    """Replay each row ``i`` of ``rows`` from the state before a step up to the end of its
    match and write the learner's (``seats[i]``) observation of it into row ``i`` of ``out``
    (``masks``: scratch of the batch's shape): the learner's action ``acts[i]``, then the
    compiled opponents' and forced moves as :func:`advance_rows` plays them (drawing from the
    same streams) and the batch functions' as recorded per round (``recorded[k, i]`` where
    ``waiting[k, i]``)."""
    n = r[K.R_N]
    for i in rows:
        a = acts[i]
        k = 0
        while True:
            K.apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a)
            if m[i, K.TERMINAL] or (r[K.R_MAX_HANDS] and m[i, K.HAND_NO] >= r[K.R_MAX_HANDS]):
                break
            count = K.legal_mask(r, i, m, hands, bits, masks)
            rel = (m[i, K.CUR] - seats[i]) % n
            if rel == 0:
                if not (auto_forced and count == 1):
                    # a match that ended in the step has no real decision before its end
                    raise RuntimeError("replay_final: the learner must choose before the end")
                a = K.random_row(masks, agent_rng, i)
                continue
            o = seat_opponents[i, rel]
            if codes[o] == FUNCTION:
                while not waiting[k, i]:
                    k += 1
                a = recorded[k, i]
                k += 1
                continue
            a = opponent_move(r, i, codes[o], weights[o], m, scores, hands, bits, hlen, voids,
                              line, masks, agent_rng)  # fmt: skip
        masks[i] = 0
        if not m[i, K.TERMINAL] and m[i, K.CUR] == seats[i]:
            K.legal_mask(r, i, m, hands, bits, masks)
        K.encode(r, i, m, scores, hands, hlen, voids, line, bone, masks, seats[i], out)
