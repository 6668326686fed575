"""Scripted opponents and the agent interface. See :mod:`bergen_env.agents.base`.

Registered kinds: ``random``, ``greedy``, ``heuristic``, ``tuned`` (the heuristic with weights
tuned for the rules), ``search`` (PIMC), e.g.
``make_agent("search:samples=200")``, ``policy`` (a portable policy file,
``make_agent("policy:policies/standard_2p.safetensors")``), and ``openspiel`` (OpenSpiel's
ISMCTS through :mod:`bergen_env.openspiel`, ``make_agent("openspiel:bot=ismcts")``), and
``best_response`` (search that models the opponents as a given policy,
``make_agent("best_response:policy=heuristic")``; :mod:`bergen_env.agents.best_response`).
"""

from bergen_env.agents.base import (
    Agent,
    agent_factory,
    agent_kinds,
    make_agent,
    parse_agent_spec,
    register_agent,
    registered_agents,
)
from bergen_env.agents.best_response import BestResponseAgent, StatedPolicy
from bergen_env.agents.greedy import GreedyAgent
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.openspiel_bot import OpenSpielAgent
from bergen_env.agents.policy_agent import PolicyAgent
from bergen_env.agents.random_agent import RandomAgent
from bergen_env.agents.search import SearchAgent
from bergen_env.agents.tuned_heuristic import TunedHeuristicAgent

for _kind, _factory in (
    ("random", RandomAgent),
    ("greedy", GreedyAgent),
    ("heuristic", HeuristicAgent),
    ("tuned", TunedHeuristicAgent),
    ("search", SearchAgent),
    ("policy", PolicyAgent),
    ("openspiel", OpenSpielAgent),  # needs the openspiel extra (imported when built)
    ("best_response", BestResponseAgent),
):
    register_agent(_kind, _factory, overwrite=True)

__all__ = [
    "Agent",
    "BestResponseAgent",
    "GreedyAgent",
    "HeuristicAgent",
    "OpenSpielAgent",
    "PolicyAgent",
    "RandomAgent",
    "SearchAgent",
    "StatedPolicy",
    "TunedHeuristicAgent",
    "agent_factory",
    "agent_kinds",
    "make_agent",
    "parse_agent_spec",
    "register_agent",
    "registered_agents",
]
