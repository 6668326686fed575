"""Search with compiled playouts: the same action values and decisions as with Python ones."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from bergen_env import Rules  # noqa: E402
from bergen_env.agents import make_agent  # noqa: E402
from bergen_env.agents.search import SearchAgent  # noqa: E402
from tests.search_positions import assert_same_values, positions  # noqa: E402

CONFIGS = [
    ("standard", dict(num_players=2)),
    ("standard", dict(num_players=2, target=5)),  # playouts that end the match
    ("standard", dict(num_players=3, voluntary_draw=True)),
    ("traditional", dict(num_players=3)),  # margin values, leftover penalties
    ("double_set", dict(num_players=2)),  # double plays, two copies
    ("double_set", dict(num_players=4, partnerships=True)),
    ("standard", dict(num_players=4, partnerships=True, reserve=0)),
    ("fives", dict(num_players=2)),  # the match-win table to 61, rotating leads
    ("fives", dict(num_players=3)),  # margin values
    ("fives", dict(num_players=4)),  # partnerships
    ("fives", dict(num_players=2, target=12)),  # playouts that reach the target
    ("draw", dict(num_players=2)),  # the single-hand match: wins, losses, tied blocks
    ("draw", dict(num_players=3)),
    ("draw", dict(num_players=4)),
    ("standard", dict(num_players=3, lead="rotate")),  # a free lead under headers
]


@pytest.mark.parametrize("rollout", ["public", "greedy"])
@pytest.mark.parametrize(("preset", "kwargs"), CONFIGS)
def test_compiled_playouts_give_the_same_values(preset: str, kwargs: dict, rollout: str) -> None:
    rules = Rules.preset(preset, **kwargs)
    python = SearchAgent(samples=12, rollout=rollout, playouts="python")
    compiled = SearchAgent(samples=12, rollout=rollout, playouts="compiled")
    assert_same_values(python, compiled, positions(rules, 12, seed=k_seed(preset, kwargs)), 5)


def k_seed(preset: str, kwargs: dict) -> int:
    return len(preset) * 31 + len(kwargs) * 7 + kwargs["num_players"]


@pytest.mark.parametrize(
    "spec", ["search:samples=20,belief=1", "search:samples=10,rollout=heuristic"]
)
def test_same_decisions_with_beliefs_and_through_make_agent(spec: str) -> None:
    rules = Rules.preset("standard", num_players=2)
    agents = [make_agent(f"{spec},playouts={p}") for p in ("python", "compiled")]
    for k, view in enumerate(positions(rules, 20, seed=4)):
        chosen = []
        for agent in agents:
            agent.reset(rules, view.seat, np.random.default_rng(k))
            chosen.append(agent.act(None, None, view))
        assert chosen[0] == chosen[1]


def test_auto_uses_compiled_playouts_where_they_exist() -> None:
    assert SearchAgent().compiled
    assert not SearchAgent(rollout="random").compiled
    assert not SearchAgent(playouts="python").compiled
    with pytest.raises(ValueError, match="playouts"):
        SearchAgent(playouts="fast")
    assert SearchAgent(rollout="heuristic").compiled
    with pytest.raises(ValueError, match="rollout"):
        SearchAgent(playouts="compiled", rollout="random")
