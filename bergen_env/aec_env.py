"""Bergen as a PettingZoo AEC environment.

==================  ==============================================================
Import              ``import bergen_env; env = bergen_env.env(num_players=2)``
Actions             Discrete(58); Discrete(65) with two sets (``rules="double_set"``)
Agents              ``player_0 ... player_{n-1}`` (seat i is ``player_i``)
Observation shape   ``{"observation": (240,) float32, "action_mask": (A,) int8}``
Observation values  counts, one-hots and flags; see ``bergen_env.observation``
State shape         (255,) float32, every hand included (centralized critics)
Rewards             ``reward="match"``: +1 / -1/(sides-1) at the end; ``"points"``: dense
==================  ==============================================================

Bergen is a point-scoring draw-domino game for 2-4 players or 2 partnerships (seats 0 & 2
against 1 & 3): you score when your play leaves both ends of the line showing the same
number. The rules are ``bergen_env/RULES.md`` (docs/rules.md); every option is a keyword argument.

Arguments
---------
``num_players`` (2-4, default 2 or the given ``Rules``'), ``partnerships`` (4 players only),
``rules`` (a preset name of :data:`bergen_env.rules.PRESETS`: ``"standard"``, ``"traditional"``,
``"double_set"``, ``"draw"`` or ``"fives"``; or a :class:`bergen_env.Rules`), any rule option
(RULES.md, "Options") as an override (``lead="highest"``, ``domino_points=5``, ...),
``reward`` (``"match"`` or ``"points"``), ``max_hands`` (a match still running after this many
hands is truncated, reward 0; default 2000), ``render_mode`` (``"ansi"`` or ``"human"``: the
whole table as text; ``"rgb_array"``: the view of the agent on turn as a ``(544, 960, 3)`` uint8
image, other hands face down; drawn with Pillow).

Actions
-------
``2*t + e`` plays canonical tile ``t`` on end ``e`` (0 left, 1 right; on the empty line only
end 0), ``56`` draws the first boneyard tile (the same player then acts again), ``57`` passes,
``58 + n`` plays both ``[n|n]`` at once (two sets only). The first move of a hand is the forced
lead of the lowest (or highest) double.

Action mask
-----------
``observe(agent)["action_mask"]`` is 1 for the legal actions of the agent on turn and all
zeros for every other agent; it is never all zeros for the agent on turn.

Observation
-----------
One flat float32 vector from the observer's seat (own seat first, then the others in turn
order, padded to 4 seats): own hand, line, unseen tiles, both ends and their double flags,
whose turn, partner, hand sizes, the numbers each seat is known not to hold (exactly
inferred from its passes and forced draws), boneyard size and drawable count, each side's
score relative to the target. Nothing from other hands or the boneyard order.
Layout: ``bergen_env.observation``.

Rewards
-------
``"match"`` (default): zero until the match ends; then every agent of the winning side gets
+1 and every agent of each other side -1/(sides-1). ``"points"``: after every step each agent
gets its side's score change minus the mean change of the other sides (zero-sum, dense).
``infos[agent]["scores"]`` holds every side's match score after every step.

Illegal actions and reset options
---------------------------------
``env()``: an illegal action ends the match (the offender gets -1, every other agent 0, with a
warning; PettingZoo's ``TerminateIllegalWrapper``); an action outside ``0..A-1`` raises
``IllegalActionError`` naming it and the legal actions. ``raw_env()`` raises
``IllegalActionError`` for both. ``reset(options={"deals": [...]})`` plays scripted deals (see
:func:`bergen_env.engine.validate_deal`); other reset options are ignored with one warning
naming them. An unknown keyword argument is an ``InvalidOptionError`` naming the closest valid
one and listing them all.

Version history
---------------
* v0: initial release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from bergen_env.actions import action_str, check_action_id
from bergen_env.engine import BergenState, PublicView
from bergen_env.env_options import DEFAULT_MAX_HANDS, EnvOptions, reset_deals
from bergen_env.errors import GameOverError, IllegalActionError
from bergen_env.observation import OBS_SIZE, STATE_SIZE, Encoder, obs_bounds
from bergen_env.render import render_text
from bergen_env.render_image import render_rgb
from bergen_env.rules import Rules
from bergen_env.validation import keyword_names


def env(**kwargs: Any) -> AECEnv:
    """The Bergen AEC env with PettingZoo's classic wrappers: an illegal action ends the match
    (the offender loses, with a warning); an action outside ``0..A-1`` raises
    ``IllegalActionError`` naming it and the legal ones."""
    aec = raw_env(**kwargs)
    aec = TerminateIllegalWrapper(aec, illegal_reward=-1)
    aec = AssertOutOfBoundsWrapper(aec)
    aec = OrderEnforcingWrapper(aec)
    return aec


class _UnwrappedAttribute:
    """Reads one per-step attribute (``agent_selection``, ``terminations``, ...) of the
    unwrapped env directly, for the wrappers that :func:`env` applies.

    PettingZoo's wrappers forward these reads through ``__getattr__``: a failed lookup and a
    Python call per layer, read dozens of times per step. This
    is a non-data descriptor, so an attribute set on the wrapper itself still shadows it, and
    before ``reset`` it defers to ``OrderEnforcingWrapper.__getattr__``, which raises.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, wrapper: Any, owner: type | None = None) -> Any:
        if wrapper is None:
            return self
        return getattr(wrapper._raw_env, self.name)


class _CheckedUnwrappedAttribute(_UnwrappedAttribute):
    """For ``OrderEnforcingWrapper``: before ``reset`` its ``__getattr__`` raises instead."""

    def __get__(self, wrapper: Any, owner: type | None = None) -> Any:
        if wrapper is None:
            return self
        if not wrapper._has_reset:
            raise AttributeError(self.name)  # the wrapper's __getattr__ raises the real error
        return getattr(wrapper._raw_env, self.name)


class _DirectReads:
    """The per-step attributes of an AEC env, read from the unwrapped env (see above)."""

    def __init__(self, env: AECEnv, *args: Any, **kwargs: Any) -> None:
        super().__init__(env, *args, **kwargs)
        self._raw_env = env.unwrapped

    def action_space(self, agent: str) -> spaces.Space:
        return self._raw_env.action_space(agent)  # no wrapper of env() changes the spaces

    def observation_space(self, agent: str) -> spaces.Space:
        return self._raw_env.observation_space(agent)

    agent_selection = _UnwrappedAttribute()
    agents = _UnwrappedAttribute()
    rewards = _UnwrappedAttribute()
    _cumulative_rewards = _UnwrappedAttribute()
    terminations = _UnwrappedAttribute()
    truncations = _UnwrappedAttribute()
    infos = _UnwrappedAttribute()


class TerminateIllegalWrapper(_DirectReads, wrappers.TerminateIllegalWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` with direct attribute reads."""


class AssertOutOfBoundsWrapper(_DirectReads, wrappers.AssertOutOfBoundsWrapper):
    """PettingZoo's ``AssertOutOfBoundsWrapper`` with direct attribute reads, raising
    ``IllegalActionError`` (naming the action and the legal ones) instead of a bare assert."""

    def step(self, action: Any) -> None:
        raw = self._raw_env
        agent = raw.agent_selection
        if not (action is None and (raw.terminations[agent] or raw.truncations[agent])):
            try:
                check_action_id(action, raw.rules.num_actions)
            except IllegalActionError as exc:
                raise IllegalActionError(
                    f"{exc} for {agent}; legal actions: {raw.game.legal_actions_text()}"
                ) from None
        wrappers.BaseWrapper.step(self, action)  # past PettingZoo's assert


class OrderEnforcingWrapper(_DirectReads, wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with direct attribute reads (after ``reset``)."""

    agent_selection = _CheckedUnwrappedAttribute()
    agents = _CheckedUnwrappedAttribute()
    rewards = _CheckedUnwrappedAttribute()
    terminations = _CheckedUnwrappedAttribute()
    truncations = _CheckedUnwrappedAttribute()
    infos = _CheckedUnwrappedAttribute()

    def __str__(self) -> str:
        return str(self.env)  # as PettingZoo's class prints itself: the env's name


class raw_env(AECEnv):
    """The bare Bergen AEC env: an illegal action raises ``IllegalActionError``."""

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": "bergen_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(
        self,
        num_players: int | None = None,
        partnerships: bool | None = None,
        rules: str | Rules = "standard",
        reward: str = "match",
        max_hands: int | None = DEFAULT_MAX_HANDS,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        super().__init__()
        opts = EnvOptions.resolve(
            rules,
            num_players,
            partnerships,
            reward,
            max_hands,
            render_mode,
            render_modes=self.metadata["render_modes"],
            env_keywords=keyword_names(type(self).__init__),
            **overrides,
        )
        self.options = opts
        self.rules = opts.rules
        self.reward_mode = opts.reward
        self.max_hands = opts.max_hands
        self.render_mode = opts.render_mode
        n = self.rules.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agents = self.possible_agents[:]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        num_actions = self._num_actions = self.rules.num_actions
        low, high = obs_bounds(self.rules)
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, shape=(OBS_SIZE,), dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(num_actions,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(num_actions) for a in self.possible_agents}
        s_low, s_high = obs_bounds(self.rules, "state")
        self.state_space = spaces.Box(low=s_low, high=s_high, shape=(STATE_SIZE,), dtype=np.float32)
        self._encoder = Encoder(self.rules)
        self._game: BergenState | None = None
        self._rng: np.random.Generator | None = None
        self._ignored_reset_options: set[str] = set()

    # ------------------------------------------------------------------ spaces

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ API

    @property
    def game(self) -> BergenState:
        """The engine state of the current match (read it; do not mutate it)."""
        if self._game is None:
            raise RuntimeError("the environment has not been reset: call reset() first")
        return self._game

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        deals = reset_deals(options, self._ignored_reset_options)
        self._game = BergenState(self.rules, seed=self._rng, deals=deals)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._update_infos()
        self.agent_selection = self.agents[self._game.current_player]
        if self.render_mode == "human":
            self.render()

    def step(self, action: Any) -> None:
        game = self.game
        if not self.agents:
            raise GameOverError(
                f"the match is over and every agent is done; action {action!r} cannot be "
                "applied: call reset()"
            )
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        try:
            a = check_action_id(action, self._num_actions)
        except IllegalActionError as exc:
            raise IllegalActionError(f"{exc} for {agent}; legal actions: {self._legal()}") from None
        if not game.is_legal(a):
            raise IllegalActionError(
                f"action {a} ({action_str(a)}) is illegal for {agent}; "
                f"legal actions: {self._legal()}"
            )
        self._cumulative_rewards[agent] = 0.0
        before = game.scores[:] if self.reward_mode == "points" else None
        game.apply_unchecked(a)
        if before is not None:
            self._points_rewards(before)
        if game.terminal:
            if before is None:  # "match" pays only here, so its rewards were all 0 until now
                for x, r in zip(self.agents, game.returns()):
                    self.rewards[x] = r
            for x in self.agents:
                self.terminations[x] = True
        elif self.max_hands is not None and game.hand_number >= self.max_hands:
            for x in self.agents:
                self.truncations[x] = True
        self._update_infos()
        self.agent_selection = self.agents[game.current_player]
        if before is not None or game.terminal:
            self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _legal(self) -> str:
        """The legal actions of the agent on turn, for error messages."""
        return self.game.legal_actions_text()

    def _points_rewards(self, before: list[int]) -> None:
        game = self.game
        delta = [now - old for now, old in zip(game.scores, before)]
        total = sum(delta)
        others = game.num_sides - 1
        for seat, x in enumerate(self.agents):
            d = delta[game.side_of[seat]]
            self.rewards[x] = float(d - (total - d) / others)

    def _update_infos(self) -> None:
        game = self.game
        scores = tuple(game.scores)
        for x in self.agents:
            info = self.infos[x]
            info["scores"] = scores
            info["hand"] = game.hand_number

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self.game
        seat = self.agent_name_mapping[agent]
        if seat == game.current_player and not (
            self.terminations.get(agent) or self.truncations.get(agent)
        ):
            legal = game.legal_actions()  # shared by the observation and the mask
            obs = self._encoder.observe(game, seat, legal)
            mask = game.legal_mask(legal=legal)
        else:
            obs = self._encoder.observe(game, seat, ())
            mask = np.zeros(self._num_actions, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    def state(self) -> np.ndarray:
        return self._encoder.state(self.game)

    def public_view(self, agent: str) -> PublicView:
        """The structured public view of ``agent``'s seat (for scripted agents and UIs)."""
        return self.game.public_view(self.agent_name_mapping[agent])

    def render(self) -> str | np.ndarray | None:
        """``"human"`` prints and ``"ansi"`` returns the whole table as text; ``"rgb_array"``
        returns the view of the agent on turn as an image (:mod:`bergen_env.render_image`)."""
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'"
            )
            return None
        if self.render_mode == "rgb_array":
            return render_rgb(self.game, self.game.current_player)
        text = render_text(self.game)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass
