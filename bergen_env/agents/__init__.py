"""Scripted opponents and the agent interface. See :mod:`bergen_env.agents.base`."""

from bergen_env.agents.base import (
    Agent,
    make_agent,
    parse_agent_spec,
    register_agent,
    registered_agents,
)

__all__ = ["Agent", "make_agent", "parse_agent_spec", "register_agent", "registered_agents"]
