"""No hidden tile leaks: rearranging what a seat cannot see changes neither its observation nor
any scripted agent's decision.

The hidden tiles of an observer are the other seats' hands (partner included) and the undrawn
boneyard (reserve included, and its order). A swap keeps every hand size and every seat's known
voids (a seat that passed on a number never receives a tile with it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bergen_env import BergenState, Encoder, Rules, raw_env
from bergen_env.agents import make_agent, registered_agents
from bergen_env.engine import _bits_of
from bergen_env.rules import PRESETS
from bergen_env.tiles import NUM_TILES, TILES
from tests.scored_policy import scored_policy_file

SEATINGS = ((2, False), (3, False), (4, False), (4, True))
CONFIGS = [(preset, n, p) for preset in PRESETS for n, p in SEATINGS]
#: One setting per seating kind, for the slower agent checks.
SMALL_CONFIGS = [("standard", 2, False), ("traditional", 3, False), ("double_set", 4, True)]
#: Small settings for the slow agents (a PIMC search with few samples).
AGENT_SPECS = {
    "search": "search:samples=8",
    "openspiel": "openspiel:bot=ismcts,simulations=4",
    "best_response": "best_response:policy=heuristic,samples=6",
    "search-heuristic": "search:samples=8,rollout=heuristic,belief=1",
    "search-rounds": "search:samples=12,batch=3,rollout=heuristic,belief=1",
    "search-partner": "search:samples=12,rollout=heuristic,belief=1,partner_temperature=2",
    "search-history": (
        "search:samples=12,batch=3,rollout=heuristic,belief=1,prune=true,history=sampled"
    ),
}
#: Configurations checked besides one agent per kind (names of ``AGENT_SPECS``).
EXTRA_KINDS = ["search-heuristic", "search-rounds"]
#: Positions per match for the slow agents (ISMCTS through the OpenSpiel game); others: 160.
POSITION_LIMITS = {"openspiel": 50}
#: Decisions a kind must make over the five matches (fewer positions, fewer decisions).
MIN_DECISIONS = {"openspiel": 15}


def _fits(voids: int, tile: int) -> bool:
    a, b = TILES[tile]
    return not (voids >> a & 1 or voids >> b & 1)


def hidden_swap(
    s: BergenState, observer: int, rng: np.random.Generator, swaps: int = 12
) -> BergenState | None:
    """A copy of ``s`` with ``observer``'s hidden tiles rearranged, or None if nothing can move.

    Random transpositions between the other hands and the undrawn boneyard that respect every
    seat's voids, then a shuffle of the undrawn boneyard's order.
    """
    if s.lead_tile is not None:  # the forced lead reveals who holds the lead double: keep it
        return None
    c = s.clone()
    others = [seat for seat in range(s.num_players) if seat != observer]
    held = {seat: c.hand_tiles(seat) for seat in others}
    bone = list(c.boneyard[c.bone_pos :])
    slots = [(seat, i) for seat in others for i in range(len(held[seat]))]
    slots += [(-1, i) for i in range(len(bone))]

    def get(slot: tuple[int, int]) -> int:
        seat, i = slot
        return bone[i] if seat < 0 else held[seat][i]

    def put(slot: tuple[int, int], tile: int) -> None:
        seat, i = slot
        if seat < 0:
            bone[i] = tile
        else:
            held[seat][i] = tile

    def allowed(slot: tuple[int, int], tile: int) -> bool:
        return slot[0] < 0 or _fits(c.voids[slot[0]], tile)

    moved = 0
    for _ in range(swaps * 20):
        if moved >= swaps or len(slots) < 2:
            break
        i, j = rng.choice(len(slots), size=2, replace=False)
        x, y = slots[i], slots[j]
        tx, ty = get(x), get(y)
        if x[0] == y[0] or tx == ty or not (allowed(x, ty) and allowed(y, tx)):
            continue
        put(x, ty)
        put(y, tx)
        moved += 1
    rng.shuffle(bone)
    for seat in others:
        row = [0] * NUM_TILES
        for t in held[seat]:
            row[t] += 1
        c.hands[seat] = row
    c.hand_bits = [_bits_of(row) for row in c.hands]
    c.boneyard = list(c.boneyard[: c.bone_pos]) + bone
    assert c.hand_len == s.hand_len
    if (c.hands, c.boneyard) == (s.hands, s.boneyard):  # the swaps undid each other
        return None
    return c


def positions(rules: Rules, seed: int, every: int = 1, limit: int = 400):
    """Random-play positions of a match (the state object is reused: copy what you keep)."""
    s = BergenState(rules, seed=seed)
    rng = np.random.default_rng(seed + 1)
    for step in range(limit):
        if s.terminal:
            return
        if step % every == 0:
            yield s
        legal = s.legal_actions()
        s.apply_action(legal[int(rng.integers(len(legal)))])


@pytest.mark.parametrize(("preset", "num_players", "partnerships"), CONFIGS)
def test_observation_ignores_hidden_tiles(
    preset: str, num_players: int, partnerships: bool
) -> None:
    rules = Rules.preset(
        preset,
        num_players=num_players,
        partnerships=partnerships,
        voluntary_draw=preset != "standard",
    )
    encoder, other_encoder = Encoder(rules), Encoder(rules)
    env = raw_env(rules=rules)
    env.reset(seed=0)
    rng = np.random.default_rng(num_players)
    swapped = 0
    for seed in range(12 if rules.single_hand else 3):  # a Draw match is one short hand
        for s in positions(rules, seed, every=2, limit=300):
            for observer in range(num_players):
                c = hidden_swap(s, observer, rng)
                if c is None:
                    continue
                swapped += 1
                assert (c.hands, c.boneyard) != (s.hands, s.boneyard)
                np.testing.assert_array_equal(
                    encoder.observe(s, observer), other_encoder.observe(c, observer)
                )
                assert s.public_view(observer) == c.public_view(observer)
                agent = env.possible_agents[observer]
                env._game = s
                seen = env.observe(agent)
                env._game = c
                seen_swapped = env.observe(agent)
                for key in ("observation", "action_mask"):
                    np.testing.assert_array_equal(seen[key], seen_swapped[key])
    assert swapped > 100


def test_swap_is_detected_by_the_global_state() -> None:
    """The swap really moves hidden tiles: the full state (which sees them) changes."""
    rules = Rules.preset("standard", num_players=3)
    encoder = Encoder(rules)
    rng = np.random.default_rng(0)
    changed_hands = 0
    for s in positions(rules, seed=4, every=3):
        c = hidden_swap(s, 0, rng)
        if c is not None:
            assert c.hands[0] == s.hands[0]
            if c.hands[1:] != s.hands[1:]:
                changed_hands += 1
                assert not np.array_equal(encoder.state(s), encoder.state(c))
    assert changed_hands > 5


def agent_spec(kind: str) -> str:
    return AGENT_SPECS.get(kind, kind)


@pytest.mark.parametrize("kind", [*registered_agents(), *EXTRA_KINDS])
@pytest.mark.parametrize(("preset", "num_players", "partnerships"), SMALL_CONFIGS)
def test_agent_decisions_ignore_hidden_tiles(
    kind: str, preset: str, num_players: int, partnerships: bool
) -> None:
    try:
        make_agent(agent_spec(kind))
    except ValueError as exc:  # e.g. a kind that needs a policy file
        pytest.skip(f"agent kind {kind!r} needs parameters: {exc}")
    _check_decisions_ignore_hidden_tiles(
        kind, Rules.preset(preset, num_players=num_players, partnerships=partnerships)
    )


def test_partner_belief_ignores_hidden_tiles() -> None:
    """``partner_temperature`` needs partners: checked in the partnership seating alone."""
    rules = Rules.preset("double_set", num_players=4, partnerships=True)
    _check_decisions_ignore_hidden_tiles("search-partner", rules)


def test_sampled_history_ignores_hidden_tiles() -> None:
    """``history="sampled"`` walks the others' draws back from each sampled deal (here with
    pruned rounds): checked where seats draw the most (two sets)."""
    rules = Rules.preset("double_set", num_players=3)
    _check_decisions_ignore_hidden_tiles("search-history", rules)


def _check_decisions_ignore_hidden_tiles(kind: str, rules: Rules) -> None:
    encoder = Encoder(rules)
    rng = np.random.default_rng(11)
    decisions = 0
    for seed in range(5):
        for s in positions(rules, seed, limit=POSITION_LIMITS.get(kind, 160)):
            seat = s.current_player
            if len(s.legal_actions()) < 2:
                continue
            c = hidden_swap(s, seat, rng)
            if c is None:
                continue
            actions = []
            for state in (s, c):
                agent: Any = make_agent(agent_spec(kind))
                agent.reset(rules, seat, np.random.default_rng(seed))
                obs = encoder.observe(state, seat)
                actions.append(agent.act(obs, state.legal_mask(), state.public_view(seat)))
            assert actions[0] == actions[1], f"{kind} decided differently after a hidden swap"
            assert actions[0] in s.legal_actions()
            decisions += 1
    assert decisions > MIN_DECISIONS.get(kind, 60)


@pytest.mark.parametrize(("preset", "num_players", "partnerships"), SMALL_CONFIGS)
def test_scored_policy_ignores_hidden_tiles(
    tmp_path: Path, preset: str, num_players: int, partnerships: bool
) -> None:
    """A policy network with an action scorer (random weights, so every feature moves its
    choice) decides from the observation alone."""
    rules = Rules.preset(preset, num_players=num_players, partnerships=partnerships)
    path = scored_policy_file(tmp_path, hidden=16, width=8, rules=rules)
    _check_decisions_ignore_hidden_tiles(f"policy:{path}", rules)
