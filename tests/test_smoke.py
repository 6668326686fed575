"""A first end-to-end check: every preset plays random matches to the end through the env."""

import numpy as np
import pytest

import bergen_env


@pytest.mark.parametrize("rules", ["standard", "traditional", "double_set"])
def test_random_match_ends(rules: str) -> None:
    env = bergen_env.env(rules=rules, num_players=3)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
    assert not env.agents
