"""Test helper: every decision of every seat in AEC matches played by one scripted agent."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

import bergen_env
from bergen_env.agents import make_agent
from bergen_env.engine import BergenState
from bergen_env.rules import Rules


def aec_decisions(
    rules: Rules, seed: int, agent: str, matches: int = 1
) -> Iterator[tuple[BergenState, int, np.ndarray, np.ndarray]]:
    """``(state, seat, observation, action mask)`` at each decision of ``matches`` AEC matches
    (seeds ``seed``, ``seed + 1``, ...) with every seat played by ``agent``; the state is the live
    one, valid until the next item."""
    player = make_agent(agent)
    for m in range(matches):
        env = bergen_env.env(rules=rules)
        env.reset(seed=seed + m)
        raw = env.unwrapped
        rng = np.random.default_rng(seed + m)
        for name in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            seat = int(name.rpartition("_")[2])
            yield raw.game, seat, obs["observation"].astype(np.float32), obs["action_mask"].copy()
            player.reset(rules, seat, rng)
            env.step(player.act(obs["observation"], obs["action_mask"], raw.public_view(name)))
