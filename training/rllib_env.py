"""Bergen as an RLlib ``MultiAgentEnv`` for turn-based play (RLlib's current API stack).

==================  ==============================================================
Class               ``bergen_env.training.rllib_env.BergenMultiAgentEnv(config)``
Registered as       ``"bergen_multi"`` (after :func:`register_bergen_env`)
Agents              ``player_i`` for every learning seat i (scripted seats are not agents)
Observation         ``Dict({"observations": Box(240,) float32, "action_mask": Box(A,) float32})``
Actions             Discrete(58); Discrete(65) with two sets (``rules="double_set"``)
Rewards             those of the AEC env (``"match"`` or ``"points"``), summed per agent
==================  ==============================================================

The adapter drives the PettingZoo AEC env (:func:`bergen_env.raw_env`). Only the agent on turn
gets an observation at each step, so RLlib asks exactly that agent for an action; a seat that
draws gets the next observation too. An agent's reward is everything the AEC env paid it since its
previous action (the ``reward`` of ``AECEnv.last()`` at its turn), delivered with its next
observation. When the match ends (or is truncated after ``max_hands`` hands) every learning agent
gets a final observation (mask all zeros), its reward and its ``terminateds``/``truncateds``
flag; ``"__all__"`` is set then and only then. (RLlib drops an agent that ends a match without
ever having been on turn.)

The observation keys are those :class:`ActionMaskingTorchRLModule` (RLlib's action-masking
example module, ``ray.rllib.examples.rl_modules.classes.action_masking_rlm``) expects:
``"observations"`` (the flat observation of :mod:`bergen_env.observation`) and ``"action_mask"``
(1.0 for the legal actions of the agent on turn).

Config (a dict; RLlib passes ``env_config``)
--------------------------------------------
``num_players``, ``partnerships``, ``rules``, ``reward``, ``max_hands`` and any rule option, as in
:func:`bergen_env.raw_env`; ``scripted``: ``{seat: agent string}`` (e.g. ``{1: "heuristic"}``):
those seats are played inside the env by :func:`bergen_env.agents.make_agent` agents, whose RNGs
come from the env's seed. At least one seat must be learning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.tune.registry import register_env

from bergen_env.aec_env import raw_env
from bergen_env.agents import Agent, make_agent
from bergen_env.env_options import check_env_keywords
from bergen_env.errors import InvalidOptionError
from bergen_env.validation import is_int, keyword_names

ENV_NAME = "bergen_multi"
#: Observation keys of RLlib's action-masking RLModule.
OBS_KEY = "observations"
MASK_KEY = "action_mask"


def seat_of(agent_id: str) -> int:
    """The seat of an agent id ``player_i``."""
    prefix, _, number = str(agent_id).partition("_")
    if prefix != "player" or not number.isdigit():
        raise ValueError(f"agent id {agent_id!r} is not of the form 'player_<seat>'")
    return int(number)


def parse_scripted(scripted: Any, num_players: int) -> dict[int, str]:
    """Check a ``{seat: agent string}`` mapping (seats as ints or digit strings)."""
    if scripted is None:
        return {}
    if not isinstance(scripted, Mapping):
        raise InvalidOptionError(
            f"option 'scripted' must map seats to agent strings, got {scripted!r}"
        )
    out: dict[int, str] = {}
    for key, spec in scripted.items():
        seat = int(key) if isinstance(key, str) and key.isdigit() else key
        if not is_int(seat):
            raise InvalidOptionError(f"option 'scripted': seat {key!r} is not a seat number")
        if not 0 <= seat < num_players:
            raise InvalidOptionError(
                f"option 'scripted': seat {seat} is not in 0..{num_players - 1}"
            )
        if not isinstance(spec, str):
            raise InvalidOptionError(
                f"option 'scripted': seat {seat} needs an agent string, got {spec!r}"
            )
        make_agent(spec)  # fail fast on an unknown agent
        out[int(seat)] = spec
    if len(out) == num_players:
        raise InvalidOptionError("option 'scripted': every seat is scripted; none would learn")
    return out


class BergenMultiAgentEnv(MultiAgentEnv):
    """The AEC env as an RLlib multi-agent env; see the module docstring."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        kwargs = dict(config or {})
        check_env_keywords(kwargs, ["scripted", *keyword_names(raw_env.__init__)])
        scripted = kwargs.pop("scripted", None)
        self.aec = raw_env(**kwargs)
        self.rules = self.aec.rules
        n = self.rules.num_players
        self.scripted = parse_scripted(scripted, n)
        self._bots: dict[str, Agent] = {
            f"player_{seat}": make_agent(spec) for seat, spec in self.scripted.items()
        }
        self.possible_agents = [f"player_{i}" for i in range(n) if i not in self.scripted]
        self.agents = self.possible_agents[:]
        aec_space = self.aec.observation_space("player_0")["observation"]
        num_actions = self.rules.num_actions
        obs_space = spaces.Dict(
            {
                OBS_KEY: aec_space,
                MASK_KEY: spaces.Box(0.0, 1.0, shape=(num_actions,), dtype=np.float32),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(num_actions) for a in self.possible_agents}
        self._pending: dict[str, float] = {}
        self._agent_rng: np.random.Generator | None = None

    # ------------------------------------------------------------------ API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
        if seed is not None or self._agent_rng is None:
            self._agent_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        self.aec.reset(seed=seed, options=options)
        self.agents = self.possible_agents[:]
        self._pending = dict.fromkeys(self.possible_agents, 0.0)
        for name, bot in self._bots.items():
            bot.reset(self.rules, seat_of(name), self._agent_rng.spawn(1)[0])
        self._play_scripted()
        obs, _, _, _, infos = self._outputs()
        return obs, infos

    def step(self, action_dict: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        aec = self.aec
        if self._done():
            raise RuntimeError("step() called after the match ended: call reset() first")
        agent = aec.agent_selection
        if agent not in action_dict:
            raise ValueError(
                f"{agent} is on turn but the action dict has only {sorted(action_dict)}"
            )
        extra = set(action_dict) - {agent}
        if extra:
            raise ValueError(f"actions for agents not on turn: {sorted(extra)} ({agent} is)")
        self._aec_step(action_dict[agent])
        self._play_scripted()
        return self._outputs()

    # ------------------------------------------------------------------ internals

    def _done(self) -> bool:
        aec = self.aec
        first = aec.possible_agents[0]
        return aec.terminations[first] or aec.truncations[first]

    def _aec_step(self, action: Any) -> None:
        aec = self.aec
        aec.step(int(action))
        for a in self.possible_agents:
            self._pending[a] += aec.rewards[a]

    def _play_scripted(self) -> None:
        aec = self.aec
        while not self._done() and aec.agent_selection in self._bots:
            name = aec.agent_selection
            bot = self._bots[name]
            obs = aec.observe(name)
            view = aec.public_view(name) if getattr(bot, "needs_view", True) else None
            observation = obs["observation"] if bot.needs_observation else None
            self._aec_step(bot.act(observation, obs["action_mask"], view))

    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        raw = self.aec.observe(agent)
        return {OBS_KEY: raw["observation"], MASK_KEY: raw["action_mask"].astype(np.float32)}

    def _outputs(self) -> tuple[dict, dict, dict, dict, dict]:
        aec = self.aec
        if self._done():
            receivers = self.possible_agents
            terminated = bool(aec.terminations[aec.possible_agents[0]])
            truncated = not terminated
            self.agents = []
        else:
            receivers = [aec.agent_selection]
            terminated = truncated = False
        obs = {a: self._observe(a) for a in receivers}
        rewards = {}
        for a in receivers:
            rewards[a] = self._pending[a]
            self._pending[a] = 0.0
        infos = {a: dict(aec.infos[a]) for a in receivers}
        terminateds = {a: terminated for a in receivers}
        truncateds = {a: truncated for a in receivers}
        terminateds["__all__"] = terminated
        truncateds["__all__"] = truncated
        return obs, rewards, terminateds, truncateds, infos


# ---------------------------------------------------------------------- policy mapping


def shared_policy_mapping(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """Self-play: every seat plays the one policy ``"shared"``."""
    return "shared"


def side_policy_mapping(
    agent_id: str, episode: Any = None, *, side_of: tuple[int, ...], **kwargs: Any
) -> str:
    """One policy per side: seat i plays ``side_<side of i>`` (bind ``side_of`` with partial)."""
    return f"side_{side_of[seat_of(agent_id)]}"


def _make_env(config: Mapping[str, Any]) -> BergenMultiAgentEnv:
    return BergenMultiAgentEnv(config)


def register_bergen_env() -> str:
    """Register the env with RLlib's registry under :data:`ENV_NAME`; returns the name."""
    register_env(ENV_NAME, _make_env)
    return ENV_NAME
