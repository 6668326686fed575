"""Bergen as an OpenSpiel game: agreement with the engine, ISMCTS, CFR (OpenSpiel's own checkers:
test_openspiel_conformance.py)."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from itertools import combinations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from bergen_env.actions import DRAW  # noqa: E402
from bergen_env.arena import run_tournament  # noqa: E402
from bergen_env.engine import BergenState  # noqa: E402
from bergen_env.errors import InvalidOptionError  # noqa: E402
from bergen_env.observation import OBS_SIZE, Encoder  # noqa: E402
from bergen_env.openspiel import game_parameters, state_from_view  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.tiles import NUM_TILES, TILES  # noqa: E402

SMALL = {"num_players": 2, "max_pip": 2, "hand_size": 2, "reserve": 0, "target": 2, "max_hands": 1}


def test_game_metadata() -> None:
    game = pyspiel.load_game("bergen", {"num_players": 3})
    assert game.num_players() == 3
    assert game.num_distinct_actions() == Rules.preset("standard").num_actions
    assert game.observation_tensor_shape() == [OBS_SIZE]
    assert game.get_type().chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    two_sets = pyspiel.load_game("bergen", {"rules": "double_set", "num_players": 2})
    assert two_sets.num_distinct_actions() == 65


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"rules": "nope"}, "'rules' must be one of"),
        ({"num_players": 5}, "num_players"),
        ({"players": 3}, "Unknown parameter .players.*num_players"),
        ({"rules": "fievs"}, "did you mean 'fives'"),
        ({"options": "target=3"}, "Unknown parameter 'options'"),
        ({"tagret": 3}, "Unknown parameter 'tagret'.*target"),
        ({"target": True}, "Wrong type for parameter target"),
        ({"end_caps": 2}, "'end_caps' must be 1 \\(on\\), 0 \\(off\\) or -1"),
        ({"reserve": -2}, "option 'reserve' must be >= 0"),
        ({"max_pip": 7}, "max_pip"),
        ({"max_pip": 1, "hand_size": 3}, "max_pip=1 leaves 3"),
    ],
)
def test_bad_parameters_are_named(params: dict, message: str) -> None:
    with pytest.raises((InvalidOptionError, pyspiel.SpielError, RuntimeError), match=message):
        pyspiel.load_game("bergen", params)


def engine_match(rules: Rules, seed: int) -> tuple[list, BergenState]:
    """A random match in the engine, as the chance and player actions OpenSpiel would see."""
    rng = np.random.default_rng(seed)
    state = BergenState(rules, seed=seed)
    actions: list[int] = []
    hand = -1
    while not state.terminal:
        if state.hand_number != hand:  # a new hand: its deal, seat by seat, ascending
            hand = state.hand_number
            for seat in range(rules.num_players):
                actions += sorted(state.hand_tiles(seat))
        action = int(rng.choice(state.legal_actions()))
        actions.append(action)
        if action == DRAW:
            actions.append(state.boneyard[state.bone_pos])  # the draw's chance outcome
        state.apply_action(action)
    return actions, state


@pytest.mark.parametrize(
    "rules",
    [
        Rules.preset("standard"),
        Rules.preset("traditional", num_players=3),
        Rules.preset("standard", num_players=4, partnerships=True, target=8),
        Rules.preset("standard", voluntary_draw=True, leftover_penalty=1, target=10),
    ],
    ids=lambda r: f"{r.name}-{r.num_players}p",
)
@pytest.mark.parametrize("seed", range(3))
def test_returns_equal_the_engines_on_the_same_deals(rules: Rules, seed: int) -> None:
    actions, engine = engine_match(rules, seed)
    game = pyspiel.load_game("bergen", game_parameters(rules))
    state = game.new_initial_state()
    encoder = Encoder(rules)
    for action in actions:
        if not state.is_chance_node():
            assert action in state.legal_actions()
        else:
            assert action in dict(state.chance_outcomes())
        state.apply_action(action)
    assert state.is_terminal()
    assert state.returns() == engine.returns()
    assert state.engine.scores == engine.scores
    for seat in range(rules.num_players):
        np.testing.assert_array_equal(state.observation_tensor(seat), encoder.observe(engine, seat))


def test_one_set_deal_gives_every_hand_the_same_probability() -> None:
    game = pyspiel.load_game("bergen", SMALL)
    probs: Counter = Counter()

    def walk(state, p: float, depth: int) -> None:
        if depth == 2:  # seat 0's hand
            probs[tuple(state.history())] += p
            return
        for tile, q in state.chance_outcomes():
            walk(state.child(tile), p * q, depth + 1)

    walk(game.new_initial_state(), 1.0, 0)
    tiles = [t for t in range(NUM_TILES) if max(TILES[t]) <= 2]
    assert set(probs) == set(combinations(tiles, 2))
    assert all(math.isclose(p, 1 / math.comb(6, 2)) for p in probs.values())


def test_chance_outcomes_sum_to_one_along_a_match() -> None:
    game = pyspiel.load_game("bergen", {"rules": "double_set", "num_players": 2})
    state = game.new_initial_state()
    rng = np.random.default_rng(0)
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            assert math.isclose(sum(probs), 1.0)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))


def play_to_decision(game, seed: int, decisions: int):
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    done = 0
    while True:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        if done == decisions:
            return state
        state.apply_action(int(rng.choice(state.legal_actions())))
        done += 1


def test_information_state_hides_other_hands_and_resampling_keeps_it() -> None:
    game = pyspiel.load_game("bergen")
    state = play_to_decision(game, seed=4, decisions=9)
    player = state.current_player()
    other = 1 - player
    own = state.engine.hand_tiles(player)
    text = state.information_state_string(player)
    assert text.startswith(f"p{player} deal {player}:hand ")
    assert state.information_state_string(other) != text
    changed = 0
    for seed in range(5):
        sample = state.resample(player, np.random.default_rng(seed))
        assert sample.information_state_string(player) == text
        assert sample.observation_string(player) == state.observation_string(player)
        assert sample.engine.hand_tiles(player) == own
        changed += sample.engine.hand_tiles(other) != state.engine.hand_tiles(other)
        while not sample.is_terminal():  # the sample plays on to the end
            if sample.is_chance_node():
                sample.apply_action(sample.chance_outcomes()[0][0])
            else:
                sample.apply_action(sample.legal_actions()[0])
    assert changed >= 4


def test_state_from_view_matches_the_observation() -> None:
    rules = Rules.preset("standard", num_players=3)
    game = pyspiel.load_game("bergen", game_parameters(rules))
    state = play_to_decision(game, seed=2, decisions=7)
    seat = state.current_player()
    view = state.engine.public_view(seat)
    built = state_from_view(game, view, np.random.default_rng(0))
    assert built.current_player() == seat
    assert built.observation_string(seat) == state.observation_string(seat)
    assert built.legal_actions() == state.legal_actions()
    np.testing.assert_array_equal(built.observation_tensor(seat), state.observation_tensor(seat))


def test_ismcts_agent_is_legal_and_reproducible() -> None:
    rules = Rules.preset("standard", target=5)
    agents = ["openspiel:bot=ismcts,simulations=8", "heuristic"]
    first = run_tournament(agents, rules, matches=2, seed=3)  # the arena refuses illegal moves
    second = run_tournament(agents, rules, matches=2, seed=3)
    assert first.to_dict() == second.to_dict()
    assert first.agents[agents[0]].matches == 2


def test_ismcts_agent_rejects_bad_parameters() -> None:
    from bergen_env.agents import make_agent

    for spec in ("openspiel:bot=cfr", "openspiel:simulations=0", "openspiel:final=best"):
        with pytest.raises(ValueError, match="bad parameters"):
            make_agent(spec)


def test_cfr_lowers_the_exploitability_of_a_small_variant() -> None:
    game = pyspiel.load_game("bergen", SMALL)
    solver = pyspiel.CFRSolver(game)
    solver.evaluate_and_update_policy()
    first = pyspiel.exploitability(game, solver.average_policy())
    for _ in range(9):
        solver.evaluate_and_update_policy()
    tenth = pyspiel.exploitability(game, solver.average_policy())
    assert 0.0 <= tenth < first / 2


def test_state_from_view_takes_rules_built_without_a_preset() -> None:
    rules = Rules(**{**Rules.preset("traditional", num_players=3).to_dict(), "name": "custom"})
    game = pyspiel.load_game("bergen", game_parameters(rules))
    options = {k: v for k, v in rules.to_dict().items() if k != "name"}
    assert {k: v for k, v in game.variant.rules.to_dict().items() if k != "name"} == options
    state = play_to_decision(game, seed=1, decisions=4)
    seat = state.current_player()
    view = state.engine.public_view(seat)
    view = dataclasses.replace(view, rules=rules)
    built = state_from_view(game, view, np.random.default_rng(0))
    assert built.observation_string(seat) == state.observation_string(seat)
