"""The agent interface every policy implements, and the registry that builds agents from strings.

An agent is told the rules and its seat when a match starts (``reset``) and is then asked for an
action id each time its seat is on turn (``act``). It receives the flat observation and action
mask (what a learned policy uses) and the seat's :class:`~bergen_env.engine.PublicView` (what a
scripted player uses). Neither holds other hands or the boneyard order.

Agents are named by strings so configs and command lines can name them:
``"random"``, ``"heuristic"``, ``"search:samples=200"``, ``"search:samples=50,budget_ms=20"``.
Other installed packages add kinds through the ``bergen_env.agents`` entry-point group (each
entry: the kind = ``"module:factory"``), loaded the first time their kind is asked for; this
project's ``bergen_env.training`` adds ``ppo`` and ``rllib`` that way, so the library never
imports it.

>>> spec = parse_agent_spec("search:samples=200,rollout=greedy")
>>> spec
('search', {'samples': 200, 'rollout': 'greedy'})
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import cache
from importlib.metadata import EntryPoint, entry_points
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


#: The entry-point group through which installed packages add agent kinds (pyproject.toml:
#: ``[project.entry-points."bergen_env.agents"]``, ``kind = "module:factory"``).
ENTRY_POINT_GROUP = "bergen_env.agents"


@cache
def _plugin_kinds() -> dict[str, EntryPoint]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP` by kind (read once, not loaded)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def registered_agents() -> list[str]:
    """The agent kinds registered so far: the built-in ones and the plugin kinds already loaded."""
    return sorted(_REGISTRY)


def agent_kinds() -> list[str]:
    """Every kind :func:`make_agent` can build: the registered ones and the installed plugins'."""
    return sorted(set(_REGISTRY) | set(_plugin_kinds()))


def agent_factory(kind: str) -> AgentFactory | None:
    """The factory of ``kind`` (an installed plugin's is loaded and registered now), or None.

    Raises ValueError naming the kind and its entry point if the plugin cannot be imported (its
    package's message says what is missing, e.g. an extra)."""
    if kind in _REGISTRY or kind not in _plugin_kinds():
        return _REGISTRY.get(kind)
    entry = _plugin_kinds()[kind]
    try:
        factory = entry.load()
    except ImportError as exc:
        origin = f"{entry.dist.name}'s " if entry.dist is not None else ""
        raise ValueError(
            f"agent kind {kind!r} ({origin}entry point {entry.value!r}) cannot be loaded: {exc}"
        ) from exc
    register_agent(kind, factory, overwrite=True)
    return factory


def parse_agent_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"kind:key=value,key=value"`` (or ``"kind:PATH"``) into the kind and kwargs.

    Each value is typed by the declared type of the registered factory's parameter, else by
    the text alone (:mod:`bergen_env.option_text`); a plugin kind not loaded yet is not loaded
    here (:func:`make_agent` loads it first, so its values are always typed).
    """
    kind = _kind(spec)
    return kind, _parameters(spec, _REGISTRY.get(kind))


def _kind(spec: str) -> str:
    """The kind of an agent string (the text before ``:``); ValueError for no string."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent is named by a non-empty string, got {spec!r}")
    return spec.strip().partition(":")[0]


def _parameters(spec: str, factory: AgentFactory | None) -> dict[str, Any]:
    """The keyword arguments of an agent string, typed by ``factory``'s declared types."""
    rest = spec.strip().partition(":")[2]
    if rest and "=" not in rest:
        return {"path": rest}
    return parse_options(
        rest,
        declared_types(factory) if factory is not None else {},
        label="parameter",
        error=ValueError,
        context=f"agent {spec!r}: ",
        any_name=True,
    )


def make_agent(spec: str) -> Agent:
    """Build an agent from its string, e.g. ``make_agent("search:samples=200")``."""
    kind = _kind(spec)
    factory = agent_factory(kind)  # a plugin's is loaded first, so its types type the values
    kwargs = _parameters(spec, factory)
    if factory is None:
        raise ValueError(
            f"unknown agent {spec!r}{closest(kind, agent_kinds())}: known kinds are {agent_kinds()}"
        )
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
