"""Scripted opponents and the agent interface. See :mod:`bergen_env.agents.base`.

Registered kinds: ``random``, ``greedy``, ``heuristic`` and ``search`` (PIMC), e.g.
``make_agent("search:samples=200")``.
"""

from bergen_env.agents.base import (
    Agent,
    agent_factory,
    make_agent,
    parse_agent_spec,
    register_agent,
    registered_agents,
)
from bergen_env.agents.greedy import GreedyAgent
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.random_agent import RandomAgent
from bergen_env.agents.search import SearchAgent

for _kind, _factory in (
    ("random", RandomAgent),
    ("greedy", GreedyAgent),
    ("heuristic", HeuristicAgent),
    ("search", SearchAgent),
):
    register_agent(_kind, _factory, overwrite=True)

__all__ = [
    "Agent",
    "GreedyAgent",
    "HeuristicAgent",
    "RandomAgent",
    "SearchAgent",
    "agent_factory",
    "make_agent",
    "parse_agent_spec",
    "register_agent",
    "registered_agents",
]
