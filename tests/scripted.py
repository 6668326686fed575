"""Helpers for scripted tests: fixed deals from ``(a, b)`` pairs and scripted steps with checks.

A deal lists every seat's hand and the *front* of the boneyard (the tiles drawn first, in
order); :func:`make_deal` appends every remaining tile of the set(s) in canonical order, so a
test only writes the tiles that matter.

:func:`step` plays one action (text such as ``"[1|3]>left"``, ``"draw"``, ``"pass"``,
``"[3|3]+[3|3]"`` or an id) through a ``raw_env`` and checks, after the step, ``agent_selection``,
every agent's ``infos[agent]["scores"]``, the legal set of the agent on turn (with all-zero masks
for everyone else) and the rewards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from bergen_env import BergenState, Rules, action_str, parse_action, parse_tile, raw_env
from bergen_env.tiles import NUM_TILES

Pair = tuple[int, int]


def make_deal(
    rules: Rules, hands: Sequence[Sequence[Pair | int]], boneyard: Sequence[Pair | int] = ()
) -> dict[str, list[int]]:
    """A full deal: ``hands`` as given, the boneyard starts with ``boneyard`` and then holds
    every tile not yet used, in canonical order."""
    counts = [rules.sets] * NUM_TILES
    out_hands = [[parse_tile(t) for t in hand] for hand in hands]
    front = [parse_tile(t) for t in boneyard]
    for t in [t for h in out_hands for t in h] + front:
        counts[t] -= 1
        assert counts[t] >= 0, f"the scripted deal uses tile {t} too often"
    rest = [t for t in range(NUM_TILES) for _ in range(counts[t])]
    return {"hands": out_hands, "boneyard": front + rest}


def new_env(deals: Sequence[dict], seed: int = 0, **kwargs: object) -> raw_env:
    """A ``raw_env`` reset with the scripted ``deals`` (random deals follow)."""
    env = raw_env(**kwargs)
    env.reset(seed=seed, options={"deals": list(deals)})
    return env


def action_id(action: str | int) -> int:
    return parse_action(action) if isinstance(action, str) else int(action)


def legal_set(env: raw_env, agent: str | None = None) -> set[str]:
    """The legal actions of ``agent`` (default: the agent on turn) as printed strings."""
    mask = env.observe(agent or env.agent_selection)["action_mask"]
    return {action_str(int(a)) for a in np.flatnonzero(mask)}


def check_masks(env: raw_env, legal: Iterable[str]) -> None:
    """The agent on turn may do exactly ``legal``; every other agent's mask is all zeros."""
    on_turn = env.agent_selection
    assert legal_set(env) == set(legal), f"{on_turn}: {sorted(legal_set(env))}"
    for agent in env.possible_agents:
        mask = env.observe(agent)["action_mask"]
        assert mask.dtype == np.int8
        if agent != on_turn:
            assert not mask.any(), f"{agent} is not on turn but has a non-zero mask"


def step(
    env: raw_env,
    action: str | int,
    *,
    scores: Sequence[int],
    next: int | None = None,
    legal: Iterable[str] | None = None,
    rewards: Sequence[float] | None = None,
) -> None:
    """Play ``action`` for the agent on turn and check the position after it.

    ``next`` is the seat expected on turn (``agent_selection``), ``legal`` its legal actions,
    ``scores`` every side's match score (checked in every agent's infos), ``rewards`` every
    agent's reward of this step.
    """
    a = action_id(action)
    before = env.agent_selection
    assert env.observe(before)["action_mask"][a] == 1, (
        f"{action_str(a)} is not legal for {before}: {sorted(legal_set(env))}"
    )
    env.step(a)
    for agent in env.possible_agents:
        assert tuple(env.infos[agent]["scores"]) == tuple(scores), (
            f"after {action_str(a)}: {agent} sees scores {env.infos[agent]['scores']}, "
            f"expected {tuple(scores)}"
        )
    if next is not None:
        assert env.agent_selection == f"player_{next}", (
            f"after {action_str(a)}: {env.agent_selection} on turn, expected player_{next}"
        )
    if legal is not None:
        check_masks(env, legal)
    if rewards is not None:
        got = [env.rewards[agent] for agent in env.possible_agents]
        assert got == list(rewards), f"after {action_str(a)}: rewards {got}, expected {rewards}"


def play(state: BergenState, actions: Iterable[str | int]) -> None:
    """Apply scripted actions to an engine state (each must be legal)."""
    for action in actions:
        state.apply_action(action_id(action))


def engine_legal(state: BergenState) -> set[str]:
    """The engine's legal actions as printed strings."""
    return {action_str(a) for a in state.legal_actions()}


def random_deals(rules: Rules, count: int, seed: int) -> list[dict]:
    """``count`` random valid deals (the scalar env's ``{"hands", "boneyard"}`` format) drawn
    from the scalar engine's own dealing."""
    out = []
    for k in range(count):
        state = BergenState(rules, seed=seed * 1000 + k)
        hands = [state.hand_tiles(s) for s in range(rules.num_players)]
        out.append({"hands": hands, "boneyard": list(state.boneyard)})
    return out
