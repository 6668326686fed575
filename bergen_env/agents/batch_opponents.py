"""Opponents for the batched learner env (:class:`~bergen_env.vector.BergenLearnerVectorEnv`):
every agent kind that can play a whole batch at once, named by the strings of
:func:`~bergen_env.agents.base.make_agent`.

:func:`batch_opponent` turns an agent string (or an agent, or a batch function) into a
:class:`BatchOpponent`, which plays one of two ways:

- **compiled** (``random``, ``greedy``, ``heuristic``, ``tuned``): the env plays it inside its
  numba loop over the rows, reading the batched state itself (the heuristic reads the player's
  hand, the line, the hand sizes, the voids, the boneyard's size and the scores: more than the
  observation holds); ``heuristic`` and ``tuned`` are
  :func:`~bergen_env.agents.compiled.heuristic_policy.heuristic_action` with the agent's weights.
- **batch function** (``policy:PATH``, an agent with an ``act_batch`` method, such as
  ``training``'s ``ppo:PATH``, or any callable): the env calls
  ``f(observations, action_masks) -> actions`` once per round with every row whose seat on turn
  it plays (``(M, 240)`` float32 observations of that seat, ``(M, A)`` int8 masks, ``(M,)``
  integer actions back). A frozen network for self-play is such a function.

The decisions are the scalar agents' on the same positions (``tests/test_vector_opponents.py``),
but for ``random``, which draws from the row's own stream instead of the agent's generator.
Kinds that cannot be batched (:data:`SCALAR_KINDS`, and agents without ``act_batch``) are
refused with a :class:`~bergen_env.errors.InvalidOptionError` that names them and the batchable
kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bergen_env.agents.base import Agent, make_agent, parse_agent_spec
from bergen_env.agents.greedy import GreedyAgent
from bergen_env.agents.heuristic import WEIGHT_NAMES, HeuristicAgent
from bergen_env.agents.random_agent import RandomAgent
from bergen_env.agents.tuned_heuristic import TunedHeuristicAgent
from bergen_env.errors import InvalidOptionError
from bergen_env.rules import Rules

#: A batch function: ``(observations (M, 240) float32, action_masks (M, A) int8) -> (M,) ints``.
BatchPolicy = Callable[[np.ndarray, np.ndarray], Any]

#: :attr:`BatchOpponent.code` values: the compiled kinds, then a batch function.
RANDOM, GREEDY, HEURISTIC, FUNCTION = range(4)
#: The library's agent kinds a batched env plays (a plugin kind whose agents have
#: ``act_batch``, such as ``training``'s ``ppo``, a callable and such an agent are batchable too).
BATCHABLE_KINDS = ("random", "greedy", "heuristic", "tuned", "policy")
#: The library's agent kinds that decide one position at a time (search over deals).
SCALAR_KINDS = ("search", "best_response", "openspiel")


@dataclass(frozen=True, eq=False)
class BatchOpponent:
    """One opponent of a batched env: a compiled kind (``code`` with ``weights``, the heuristic's
    in :data:`~bergen_env.agents.heuristic.WEIGHT_NAMES` order) or a batch ``function``."""

    name: str
    code: int
    weights: np.ndarray
    function: BatchPolicy | None = None

    def __repr__(self) -> str:
        return f"BatchOpponent({self.name!r})"


def batch_opponent(spec: str | Agent | BatchPolicy | BatchOpponent, rules: Rules) -> BatchOpponent:
    """The :class:`BatchOpponent` of ``spec`` for matches of ``rules``.

    ``spec``: an agent string (``"heuristic:threat=1.5"``, ``"tuned"``, ``"policy:PATH"``), an
    :class:`~bergen_env.agents.base.Agent` (random, greedy, heuristic, tuned, or one with an
    ``act_batch(observations, action_masks)`` method such as ``PolicyAgent``), a batch function,
    or a :class:`BatchOpponent`. The agent is reset for ``rules`` first, so a policy trained for
    other rules or ``tuned`` on rules without tuned weights is refused here, by name.
    """
    if isinstance(spec, BatchOpponent):
        return spec
    if isinstance(spec, str):
        kind, _ = _parsed(spec)
        if kind in SCALAR_KINDS:
            raise InvalidOptionError(_not_batchable(repr(spec), kind))
        agent = _built(spec)
    elif isinstance(spec, Agent):
        agent = spec
    elif callable(spec):
        name = getattr(spec, "__qualname__", None) or type(spec).__name__
        return BatchOpponent(name, FUNCTION, _no_weights(), spec)
    else:
        raise InvalidOptionError(
            f"option 'opponents': an opponent is an agent string, an agent or a callable "
            f"(observations, action_masks) -> actions, got {spec!r}"
        )
    try:
        agent.reset(rules, 0, np.random.default_rng(0))
    except ValueError as exc:  # tuned on no preset, a policy trained for other rules
        raise InvalidOptionError(f"option 'opponents': {exc}") from None
    name = agent.name
    kind = type(agent)
    if kind is RandomAgent:
        return BatchOpponent(name, RANDOM, _no_weights())
    if kind is GreedyAgent:
        return BatchOpponent(name, GREEDY, _no_weights())
    if kind in (HeuristicAgent, TunedHeuristicAgent):
        weights = np.array([agent.weights[w] for w in WEIGHT_NAMES], dtype=np.float64)
        return BatchOpponent(name, HEURISTIC, weights)
    act_batch = getattr(agent, "act_batch", None)
    if callable(act_batch):
        return BatchOpponent(name, FUNCTION, _no_weights(), act_batch)
    raise InvalidOptionError(_not_batchable(f"agent {name!r}", kind.__name__))


def _parsed(spec: str) -> tuple[str, dict[str, Any]]:
    try:
        return parse_agent_spec(spec)
    except ValueError as exc:
        raise InvalidOptionError(f"option 'opponents': {exc}") from None


def _built(spec: str) -> Agent:
    try:
        return make_agent(spec)
    except ValueError as exc:  # bad parameters, a missing policy file
        raise InvalidOptionError(f"option 'opponents': {exc}") from None


def _not_batchable(what: str, kind: str) -> str:
    return (
        f"option 'opponents': {what} (kind {kind!r}) cannot play a batch; batched opponents are "
        f"the kinds {', '.join(BATCHABLE_KINDS)}, an agent with act_batch, or a callable "
        f"(observations, action_masks) -> actions (a frozen network for self-play)"
    )


def _no_weights() -> np.ndarray:
    return np.zeros(len(WEIGHT_NAMES), dtype=np.float64)
