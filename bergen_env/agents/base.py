"""The agent interface every policy implements, and the registry that builds agents from strings.

An agent is told the rules and its seat when a match starts (``reset``) and is then asked for an
action id each time its seat is on turn (``act``). It receives the flat observation and action
mask (what a learned policy uses) and the seat's :class:`~bergen_env.engine.PublicView` (what a
scripted player uses). Neither holds other hands or the boneyard order.

Agents are named by strings so configs and command lines can name them:
``"random"``, ``"heuristic"``, ``"search:samples=200"``, ``"search:samples=50,budget_ms=20"``.

>>> spec = parse_agent_spec("search:samples=200,rollout=greedy")
>>> spec
('search', {'samples': 200, 'rollout': 'greedy'})
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from bergen_env.engine import PublicView
from bergen_env.option_text import declared_types, parse_options
from bergen_env.rules import Rules
from bergen_env.validation import check_keywords, closest, keyword_names, takes_any_keyword


class Agent(ABC):
    """A policy for one seat. Subclasses implement :meth:`act`; :meth:`reset` is optional."""

    #: The string this agent was built from (set by :func:`make_agent`).
    name: str = "agent"
    #: Whether :meth:`act` reads the flat observation. Scripted agents that only use the view set
    #: this False; the arena then passes ``observation=None`` and skips encoding it.
    needs_observation: bool = True
    #: Whether :meth:`act` reads the :class:`PublicView`. Learned policies that act from the
    #: observation and mask alone set this False; the arena then passes ``view=None``.
    needs_view: bool = True
    #: Whether the agent plays only rules that equal a preset (``tuned``: its weights are tuned
    #: per preset); its :meth:`reset` raises ValueError for rules with a changed option.
    presets_only: bool = False

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        """Called at the start of every match with the rules, the seat and a seeded RNG."""
        self.rules = rules
        self.seat = seat
        self.rng = rng

    @abstractmethod
    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView) -> int:
        """The action id to play; must be legal (``action_mask[a] == 1``)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def point_mass(view: PublicView, action: int) -> np.ndarray:
    """The distribution of an agent that plays ``action`` for sure, over ``view.legal_actions``
    (the form of ``action_probabilities``, see :mod:`bergen_env.agents.best_response`)."""
    out = np.zeros(len(view.legal_actions))
    out[view.legal_actions.index(action)] = 1.0
    return out


def checked_legal_actions(
    name: str,
    observation: np.ndarray | None,
    obs_shape: tuple[int, ...],
    action_mask: np.ndarray,
    num_actions: int,
    mask_error: Callable[[tuple[int, ...]], Exception],
) -> np.ndarray:
    """The legal action ids of ``action_mask`` for an agent that acts from the observation.

    Raises ValueError naming agent ``name`` for an observation that is missing or not of
    ``obs_shape`` and for a mask with no legal action; ``mask_error(shape)`` for a mask whose
    shape is not ``(num_actions,)``.
    """
    if observation is None or np.shape(observation) != obs_shape:
        raise ValueError(
            f"agent {name!r} needs a {obs_shape} observation, got "
            f"{None if observation is None else np.shape(observation)}"
        )
    if np.shape(action_mask) != (num_actions,):
        raise mask_error(np.shape(action_mask))
    legal = np.flatnonzero(action_mask)
    if not len(legal):
        raise ValueError(f"agent {name!r}: the action mask has no legal action")
    return legal


AgentFactory = Callable[..., Agent]
_REGISTRY: dict[str, AgentFactory] = {}


def register_agent(kind: str, factory: AgentFactory, *, overwrite: bool = False) -> None:
    """Make ``kind`` (the part of an agent string before ``:``) build agents with ``factory``.

    ``factory`` gets the parsed keyword arguments of the string (``"search:samples=200"`` ->
    ``samples=200``); a factory for path-like kinds (``"ppo:PATH"``) receives ``path=...``.
    """
    if kind in _REGISTRY and not overwrite:
        raise ValueError(f"agent kind {kind!r} is already registered")
    _REGISTRY[kind] = factory


def registered_agents() -> list[str]:
    """The agent kinds that :func:`make_agent` knows."""
    return sorted(_REGISTRY)


def agent_factory(kind: str) -> AgentFactory | None:
    """The factory registered for ``kind``, or None if :func:`make_agent` does not know it."""
    return _REGISTRY.get(kind)


def parse_agent_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"kind:key=value,key=value"`` (or ``"kind:PATH"``) into the kind and kwargs.

    Each value is typed by the declared type of the registered factory's parameter, else by
    the text alone (:mod:`bergen_env.option_text`).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent is named by a non-empty string, got {spec!r}")
    kind, _, rest = spec.strip().partition(":")
    if rest and "=" not in rest:
        return kind, {"path": rest}
    factory = _REGISTRY.get(kind)
    declared = declared_types(factory) if factory is not None else {}
    kwargs = parse_options(
        rest,
        declared,
        label="parameter",
        error=ValueError,
        context=f"agent {spec!r}: ",
        any_name=True,
    )
    return kind, kwargs


def make_agent(spec: str) -> Agent:
    """Build an agent from its string, e.g. ``make_agent("search:samples=200")``."""
    kind, kwargs = parse_agent_spec(spec)
    if kind not in _REGISTRY:
        raise ValueError(
            f"unknown agent {spec!r}{closest(kind, registered_agents())}: known kinds are "
            f"{registered_agents()}"
            + (
                "; 'ppo' needs `import bergen_env.training.policies` (the [train] extra)"
                if kind == "ppo"
                else ""
            )
        )
    factory = _REGISTRY[kind]
    if not takes_any_keyword(factory):
        names = keyword_names(factory)
        check_keywords(
            kwargs, names, label="parameter", error=ValueError, context=f"agent {spec!r}: "
        )
    try:
        agent = factory(**kwargs)
    except (TypeError, ValueError) as exc:  # unknown keyword, or a value the agent rejects
        raise ValueError(f"agent {spec!r}: bad parameters ({exc})") from None
    agent.name = spec
    return agent
