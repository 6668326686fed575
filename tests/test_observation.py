"""The observation's play_points view and the engine's action_points agree with real scoring."""

import numpy as np
import pytest

from bergen_env import BergenState, Encoder, Rules
from bergen_env.observation import OBS_SIZE, obs_bounds

CONFIGS = [
    ("standard", dict(num_players=2)),
    ("standard", dict(num_players=2, target=5)),  # end caps and domino-to-target often
    ("traditional", dict(num_players=3)),
    ("double_set", dict(num_players=2)),
    ("standard", dict(num_players=4, partnerships=True, domino_points=5)),
    ("fives", dict(num_players=2)),
    ("fives", dict(num_players=3, target=8)),  # the count reaching the target often
    ("draw", dict(num_players=4)),
]


@pytest.mark.parametrize(("preset", "kwargs"), CONFIGS)
def test_action_points_match_the_score_change(preset: str, kwargs: dict) -> None:
    rules = Rules.preset(preset, **kwargs)
    rng = np.random.default_rng(0)
    scored = 0
    for seed in range(30):
        state = BergenState(rules, seed=seed)
        while not state.terminal and state.hand_number < 30:
            side = state.side_of[state.current_player]
            for action in state.legal_actions():
                after = state.clone()
                after.apply_action(action)
                gained = after.scores[side] - state.scores[side]
                # blocked points and leftover penalties are not what the play scores, nor is
                # a pips award for going out (it depends on hidden hands)
                ended = after.hand_results[len(state.hand_results) :]
                if ended and (ended[0].reason == "blocked" or rules.out_scoring != "fixed"):
                    gained -= ended[0].points[side]
                assert state.action_points(action) == gained, (seed, action)
                scored += gained > 0
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.integers(len(legal)))])
    assert scored > 50 or rules.play_scoring == "none"  # Draw scores nothing during play


def test_play_points_view_is_zero_off_turn_and_within_bounds() -> None:
    rules = Rules.preset("standard", num_players=3)
    encoder = Encoder(rules)
    low, high = obs_bounds(rules)
    rng = np.random.default_rng(1)
    state = BergenState(rules, seed=1)
    while not state.terminal:
        for seat in range(3):
            obs = encoder.observe(state, seat)
            assert obs.shape == (OBS_SIZE,)
            assert np.all(obs >= low) and np.all(obs <= high)
            points = Encoder.views(obs)["play_points"]
            if seat != state.current_player:
                assert not points.any()
            else:
                expected = [
                    state.action_points(a) for a in range(rules.num_actions) if state.is_legal(a)
                ]
                assert sorted(points[points > 0]) == sorted(p for p in expected if p > 0)
        legal = state.legal_actions()
        state.apply_action(legal[int(rng.integers(len(legal)))])
