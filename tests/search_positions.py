"""Search test helpers: positions with a real choice, and checks shared by the search tests."""

from __future__ import annotations

import pickle

import numpy as np

from bergen_env import BergenState, Rules
from bergen_env.agents import make_agent
from bergen_env.agents.search import SearchAgent


def positions(rules: Rules, count: int, seed: int) -> list:
    """Public views of the player on turn with a real choice, from random matches."""
    rng = np.random.default_rng(seed)
    out, match = [], 0
    while len(out) < count:
        s = BergenState(rules, seed=seed + match)
        match += 1
        while not s.terminal and len(out) < count:
            legal = s.legal_actions()
            if len(legal) > 1 and rng.random() < 0.3:
                out.append(s.public_view(s.current_player))
            s.apply_action(legal[int(rng.integers(len(legal)))])
    return out


def assert_same_values(python: SearchAgent, compiled: SearchAgent, views: list, key: int) -> None:
    """Both agents give the same action values at every view, their streams advanced alike
    (each reset to ``default_rng([key, k])`` at the ``k``-th view)."""
    for k, view in enumerate(views):
        values = []
        for agent in (python, compiled):
            agent.reset(view.rules, view.seat, np.random.default_rng([key, k]))
            values.append(agent.action_values(view))
            values.append(agent.rng.random())  # the stream advanced the same way
        assert values[0] == values[2] and values[1] == values[3], (k, view.moves)


def assert_legal_reproducible_picklable(spec: str, views: list) -> None:
    """The agent of ``spec`` and a pickled copy choose the same legal action at every view
    (each reset to ``default_rng(k)`` at the ``k``-th view)."""
    agent = make_agent(spec)
    clone = pickle.loads(pickle.dumps(agent))
    for k, view in enumerate(views):
        chosen = []
        for a in (agent, clone):
            a.reset(view.rules, view.seat, np.random.default_rng(k))
            chosen.append(a.act(None, None, view))
        assert chosen[0] == chosen[1], (k, view.moves)
        assert chosen[0] in view.legal_actions
