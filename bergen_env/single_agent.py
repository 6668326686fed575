"""Bergen as a single-agent Gymnasium env: one learner seat, the other seats played by agents.

==================  ==============================================================
Import              ``gymnasium.make("bergen_env/Bergen-v0", opponents=["random"])``
Class               ``bergen_env.single_agent.BergenSingleAgentEnv``
Actions             Discrete(58); Discrete(65) with two sets (``rules="double_set"``)
Observation         Box(240,) float32, the learner's view (``bergen_env.observation``)
Action mask         ``info["action_mask"]``: int8 (A,) after ``reset`` and every ``step``;
                    ``env.action_masks()``: bool (A,), the learner's legal actions
Rewards             ``"match"``: +1 / -1/(sides-1) at the end; ``"points"``, ``"shaped"``, ``"win"``
Episode             one whole match (truncated after ``max_hands`` hands)
==================  ==============================================================

The env drives the engine (:class:`~bergen_env.engine.BergenState`) directly: after the
learner's action the opponents play until the learner has a decision again or the match is over,
so a match that ends on an opponent's move ends the learner's episode with that result.

Arguments
---------
``num_players``, ``partnerships``, ``rules`` and every rule option (as in the AEC env);
``opponents``: one entry per other seat, in turn order after the learner (a single entry is used
for every other seat). In partnerships the second entry is the learner's partner. An entry is an
agent string for :func:`bergen_env.agents.make_agent` (one agent per seat), an
:class:`~bergen_env.agents.Agent` instance, or a callable with no arguments returning an Agent,
called at every ``reset`` (self-play pools, a frozen copy of the learner as partner).
``learner_seat``: ``"random"`` (drawn each episode from the env's seeded RNG) or a seat number.
``auto_forced``: play the learner's forced moves (exactly one legal action) automatically.
``reward``: ``"match"`` (default) or ``"points"`` (the learner's side's score change minus the
mean change of the other sides, summed over the learner's move and the opponents' replies; the
first step's reward includes the changes before the learner's first decision, so an episode's
rewards sum to the final score difference); ``"shaped"`` (the ``"points"`` reward divided by
the target, plus the ``"match"`` reward when the match ends: a dense signal for training whose
sum is the match result plus the final score difference over the target); ``"win"`` (the change
of the learner's side's chance to win the match, read from the match-win table of
:func:`bergen_env.agents.match_value.win_table` after every learner step, scaled by
``sides / (sides - 1)``: a dense signal whose undiscounted sum is exactly the ``"match"`` reward,
and which values points by what they do for the match, not the margin; rule sets with more than
``MAX_STATES`` score combinations have no table and are refused).
``max_hands``: a match still running after this many hands is truncated (reward 0 in
``"match"`` mode). ``illegal_action``: ``"lose"`` (default, as the AEC ``env()``: the episode
ends as a lost match, reward -1, and ``info["illegal_action"]`` holds the action; no warning,
the result reports it, so a training run or ``check_env`` stays quiet) or ``"raise"`` (an
``IllegalActionError`` naming the action and the legal ones; for debugging). An action outside
``0..A-1`` always raises.
``render_mode``: ``"ansi"`` (the whole table as text) or ``"rgb_array"`` (the learner's view as
a ``(544, 960, 3)`` uint8 image: :mod:`bergen_env.render_image`, drawn with Pillow).

``action_space.sample()`` without a mask draws a legal action of the current position (its
pickled form is a plain ``Discrete``, so a vector env's batched space samples without masks:
its illegal draws follow ``illegal_action``). Gymnasium's ``check_env`` samples one action
*before* a seeded reset and plays it after (where it is mostly illegal); the default ``"lose"``
lets it pass without a warning.

Opponents are asked ``act(observation, action_mask, view)``; an agent class can set
``needs_observation = False`` and/or ``needs_view = False`` to receive ``None`` instead (the
env then skips encoding that input). Their actions are
checked with ``is_legal``; an illegal one raises ``IllegalActionError`` naming the agent.

Masks in ``info`` and vector envs
---------------------------------
``info["action_mask"]`` holds the learner's legal actions while the episode runs, so
``gymnasium.make_vec("bergen_env/Bergen-v0", num_envs=k)`` (sync or async) gives
``infos["action_mask"]`` as a ``(k, A)`` int8 array. At the step that ends the episode
(terminated, truncated or lost by an illegal action) it is all ones: no decision is left, and
under Gymnasium's default autoreset the next step of that env only resets it and ignores the
action, so any action is accepted (pgx's convention). A mask row is therefore never all zeros.
``action_masks()`` (for sb3-contrib's ``MaskablePPO``) is all False once the episode is over.

``reset(options={"deals": [...]})`` passes scripted deals to the engine (see
:func:`bergen_env.engine.validate_deal`); other reset options are ignored with one warning
naming them. An unknown keyword argument is an ``InvalidOptionError`` naming the closest valid
one and listing them all.
``info`` holds ``scores`` (per side), ``seat`` (the learner's), ``hand``, ``action_mask``
(above) and, at the end, ``winner`` (side or None).

Version history
---------------
* v0: initial release.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from bergen_env.actions import action_str, check_action_id
from bergen_env.agents.base import Agent, make_agent
from bergen_env.agents.match_value import WinTable, reward_table
from bergen_env.engine import BergenState
from bergen_env.env_options import DEFAULT_MAX_HANDS, EnvOptions, reset_deals
from bergen_env.env_options import REWARD_MODES as AEC_REWARD_MODES
from bergen_env.errors import GameOverError, IllegalActionError, InvalidOptionError
from bergen_env.observation import Encoder, obs_bounds
from bergen_env.render import render_text
from bergen_env.render_image import render_rgb
from bergen_env.rules import Rules
from bergen_env.validation import check_choice, invalid, is_int, keyword_names

REWARD_MODES = (*AEC_REWARD_MODES, "shaped", "win")
ILLEGAL_ACTION_MODES = ("raise", "lose")
#: Redeals allowed when a match ends before the learner's first decision (tiny targets).
_MAX_RESET_TRIES = 1000

OpponentSpec = str | Agent | Callable[[], Agent]


class BergenSingleAgentEnv(gym.Env):
    """One learner seat against agents in the other seats; see the module docstring."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        num_players: int = 2,
        partnerships: bool | None = None,
        rules: str | Rules = "standard",
        opponents: Sequence[OpponentSpec] = ("random",),
        learner_seat: str | int = "random",
        auto_forced: bool = True,
        reward: str = "match",
        max_hands: int | None = DEFAULT_MAX_HANDS,
        illegal_action: str = "lose",
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        opts = EnvOptions.resolve(
            rules,
            num_players,
            partnerships,
            reward,
            max_hands,
            render_mode,
            reward_modes=REWARD_MODES,
            render_modes=self.metadata["render_modes"],
            env_keywords=keyword_names(type(self).__init__),
            **overrides,
        )
        self.options = opts
        self.rules = opts.rules
        n = self.rules.num_players
        check_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
        if learner_seat != "random" and not (is_int(learner_seat) and 0 <= learner_seat < n):
            raise invalid("learner_seat", f"'random' or a seat in 0..{n - 1}", learner_seat)
        self._win_table: WinTable | None = None
        if reward == "win":
            self._win_table = reward_table(self.rules)
        if isinstance(opponents, (str, Agent)) or callable(opponents):
            raise InvalidOptionError(
                f"option 'opponents' must be a list (one entry per other seat), got {opponents!r}"
            )
        specs = list(opponents)
        if len(specs) == 1:
            specs = specs * (n - 1)
        if len(specs) != n - 1:
            raise InvalidOptionError(
                f"option 'opponents' needs 1 or {n - 1} entries for {n} players, got {len(specs)}"
            )
        self._specs: list[OpponentSpec] = []
        for spec in specs:
            if isinstance(spec, str):
                make_agent(spec)  # fail now on a bad name
            elif not isinstance(spec, Agent) and not callable(spec):
                raise InvalidOptionError(
                    f"option 'opponents': {spec!r} is not an agent string, Agent or callable"
                )
            self._specs.append(spec)
        # String specs become one agent per opponent slot, built once and reset every match.
        self._fixed: list[Agent | None] = [
            make_agent(s) if isinstance(s, str) else s if isinstance(s, Agent) else None
            for s in self._specs
        ]
        self.opponents: list[Agent] = []
        self.learner_seat_option = learner_seat
        self.auto_forced = bool(auto_forced)
        self.reward_mode = opts.reward
        self.illegal_action = illegal_action
        self.max_hands = opts.max_hands
        self.render_mode = opts.render_mode

        num_actions = self.rules.num_actions
        low, high = obs_bounds(self.rules)
        self.observation_space = spaces.Box(low=low, high=high, shape=low.shape, dtype=np.float32)
        self.action_space = LegalActionSpace(num_actions, self._sample_mask)
        self._encoder = Encoder(self.rules)
        self._mask = np.zeros(num_actions, dtype=np.int8)
        self._opp_mask = np.zeros(num_actions, dtype=np.int8)
        self.game: BergenState | None = None
        self.seat = 0
        self._agent_of_seat: list[Agent | None] = [None] * n
        self._needs: list[tuple[bool, bool]] = [(True, True)] * n
        self._side = 0
        self._illegal = False
        self._ignored_reset_options: set[str] = set()

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        deals = reset_deals(options, self._ignored_reset_options)
        rng = self.np_random
        n = self.rules.num_players
        self._illegal = False
        for _ in range(_MAX_RESET_TRIES):
            if self.learner_seat_option == "random":
                self.seat = int(rng.integers(n))
            else:
                self.seat = int(self.learner_seat_option)
            self._side = self.rules.side_of[self.seat]
            self._seat_opponents(rng)
            self.game = BergenState(self.rules, seed=rng, deals=deals)
            self._advance()
            if not self.game.terminal and not self._truncated():
                break
            if deals is not None:
                raise InvalidOptionError(
                    "reset(options={'deals': ...}): the scripted deals end the match before the "
                    f"learner (player_{self.seat}) has a decision"
                )
        else:
            raise RuntimeError(
                f"every one of {_MAX_RESET_TRIES} matches ended before the learner's first "
                f"decision; the rules {self.rules.describe()} leave the learner nothing to play"
            )
        # "points": score changes before the learner's first decision count in its first reward
        self._last_scores = [0] * self.rules.num_sides
        self._last_value = self._win_value([0] * self.rules.num_sides) if self._win_table else 0.0
        return self._observe_with_info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        game = self.game
        if game is None:
            raise RuntimeError("call reset() before step()")
        if game.terminal or self._truncated() or self._illegal:
            raise GameOverError("the episode is over: call reset() before step()")
        try:
            a = check_action_id(action, self.rules.num_actions)
        except IllegalActionError as exc:
            raise IllegalActionError(
                f"{exc} for the learner (player_{self.seat}); "
                f"legal actions: {game.legal_actions_text()}"
            ) from None
        if not game.is_legal(a):
            if self.illegal_action == "lose":
                return self._lose_illegal(a)
            legal = game.legal_actions_text()
            raise IllegalActionError(
                f"action {a} ({action_str(a)}) is illegal for the learner (player_{self.seat}); "
                f"legal actions: {legal}"
            )
        game.apply_unchecked(a)
        self._advance()
        terminated = game.terminal
        truncated = not terminated and self._truncated()
        if self.reward_mode == "win":
            value = self._win_value(game.scores)
            sides = self.rules.num_sides
            reward = (value - self._last_value) * sides / (sides - 1)
            self._last_value = value
        elif self.reward_mode != "match":
            reward = self._points_reward(self._last_scores)
            self._last_scores = game.scores[:]
            if self.reward_mode == "shaped":
                reward /= self.rules.score_scale
                if terminated:
                    reward += game.returns()[self.seat]
        elif terminated:
            reward = game.returns()[self.seat]
        else:
            reward = 0.0
        obs, info = self._observe_with_info()
        return obs, float(reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as a bool array (all False once the episode is over)."""
        game = self.game
        if game is None or game.terminal or game.current_player != self.seat or self._illegal:
            return np.zeros(self.rules.num_actions, dtype=bool)
        return game.legal_mask(self._mask).astype(bool)

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the whole table as text; ``"rgb_array"``: the learner's view as an image
        (:func:`bergen_env.render_image.render_rgb`)."""
        if self.render_mode is None:
            gym.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'"
            )
            return None
        if self.game is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "rgb_array":
            return render_rgb(self.game, self.seat)
        return render_text(self.game)

    # ------------------------------------------------------------------ internals

    def _sample_mask(self) -> np.ndarray | None:
        """The int8 legal mask that ``action_space.sample()`` draws from (None: no game)."""
        if self.game is None or self.game.terminal or self.game.current_player != self.seat:
            return None
        return self.game.legal_mask()

    def _lose_illegal(self, a: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """End the episode as a lost match after an illegal learner action (no warning: the
        loss and ``info["illegal_action"]`` report it, as any other result)."""
        self._illegal = True
        obs, info = self._observe_with_info()
        info["illegal_action"] = a
        return obs, -1.0, True, False, info

    def _seat_opponents(self, rng: np.random.Generator) -> None:
        """Place the opponents in the seats after the learner and start their match."""
        n = self.rules.num_players
        self.opponents = []
        agent_of_seat: list[Agent | None] = [None] * n
        needs: list[tuple[bool, bool]] = [(False, False)] * n
        for k, (spec, fixed) in enumerate(zip(self._specs, self._fixed)):
            agent = fixed if fixed is not None else spec()  # type: ignore[operator]
            if not isinstance(agent, Agent):
                raise InvalidOptionError(
                    f"option 'opponents': callable {spec!r} returned {agent!r}, not an Agent"
                )
            seat = (self.seat + 1 + k) % n
            agent.reset(self.rules, seat, np.random.default_rng(int(rng.integers(2**63))))
            agent_of_seat[seat] = agent
            needs[seat] = (
                bool(getattr(agent, "needs_observation", True)),
                bool(getattr(agent, "needs_view", True)),
            )
            self.opponents.append(agent)
        self._agent_of_seat = agent_of_seat
        self._needs = needs

    def _truncated(self) -> bool:
        return self.max_hands is not None and self.game.hand_number >= self.max_hands

    def _advance(self) -> None:
        """Play opponents (and the learner's forced moves) until the learner must choose."""
        game = self.game
        learner = self.seat
        agents = self._agent_of_seat
        mask = self._opp_mask
        encoder = self._encoder
        max_hands = self.max_hands
        while not game.terminal:
            if max_hands is not None and game.hand_number >= max_hands:
                return
            p = game.current_player
            if p == learner:
                if not self.auto_forced:
                    return
                legal = game.legal_actions()
                if len(legal) != 1:
                    return
                game.apply_unchecked(legal[0])
                continue
            need_obs, need_view = self._needs[p]
            game.legal_mask(mask)
            a = agents[p].act(
                encoder.observe(game, p) if need_obs else None,
                mask,
                game.public_view(p) if need_view else None,
            )
            if not game.is_legal(a):
                legal = game.legal_actions_text()
                raise IllegalActionError(
                    f"opponent {agents[p]!r} in seat {p} chose illegal action {a!r}; "
                    f"legal actions: {legal}"
                )
            game.apply_unchecked(int(a))

    def _observe_with_info(self) -> tuple[np.ndarray, dict[str, Any]]:
        """The learner's observation and ``info`` (one legal-action list serves both)."""
        game, seat = self.game, self.seat
        legal = game.legal_actions() if game.current_player == seat else ()
        return self._encoder.observe(game, seat, legal), self._make_info(legal)

    def _points_reward(self, before: list[int]) -> float:
        scores = self.game.scores
        own = scores[self._side] - before[self._side]
        total = sum(scores) - sum(before)
        others = self.rules.num_sides - 1
        return own - (total - own) / others

    def _win_value(self, scores: Sequence[int]) -> float:
        """The learner's side's chance to win the match (its result once the match is over)."""
        game, sides = self.game, self.rules.num_sides
        if game.terminal:  # +1 / -1/(sides-1) / 0 mapped to 1 / 0 / 1/sides
            return (game.returns()[self.seat] * (sides - 1) + 1.0) / sides
        return self._win_table.of_side(scores, self._side)

    def _make_info(self, legal: Sequence[int]) -> dict[str, Any]:
        game = self.game
        info = {
            "scores": tuple(game.scores),
            "seat": self.seat,
            "hand": game.hand_number,
            "action_mask": self._info_mask(legal),
        }
        if game.terminal:
            info["winner"] = game.winner
        return info

    def _info_mask(self, legal: Sequence[int]) -> np.ndarray:
        """``info["action_mask"]`` (a new int8 array): the learner's ``legal`` actions while the
        episode runs; all ones once it has ended (no decision is left, and a vector env's next
        step only resets this env and ignores the action), so it is never all zeros."""
        game = self.game
        if game.terminal or self._illegal or self._truncated():
            return np.ones(self.rules.num_actions, dtype=np.int8)
        return game.legal_mask(legal=legal)


class LegalActionSpace(spaces.Discrete):
    """``Discrete(n)`` whose ``sample()`` without a mask draws from the current legal actions."""

    def __init__(self, n: int, mask_fn: Callable[[], np.ndarray | None]) -> None:
        super().__init__(n)
        self._mask_fn = mask_fn

    def sample(self, mask: np.ndarray | None = None, probability: np.ndarray | None = None) -> Any:
        if mask is None and probability is None:
            mask = self._mask_fn()
        return super().sample(mask=mask, probability=probability)

    def __reduce__(self) -> tuple[Any, ...]:
        return (spaces.Discrete, (int(self.n),))  # the pickled space is a plain Discrete
