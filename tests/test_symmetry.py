"""The left-right mirror (bergen_env.symmetry): a game played with every end swapped is seen,
by every seat, as the mirror image of the original game."""

from __future__ import annotations

import numpy as np
import pytest

from bergen_env.actions import DRAW, NUM_PLAY_ACTIONS, PASS
from bergen_env.engine import BergenState
from bergen_env.observation import OBS_SIZE, Encoder
from bergen_env.rules import PRESETS, Rules
from bergen_env.symmetry import (
    MIRROR_ACTIONS,
    MIRROR_OBSERVATION,
    mirror_actions,
    mirror_observations,
    mirrorable,
)
from bergen_env.tiles import IS_DOUBLE

SEATINGS = [(p, n) for p in PRESETS for n in (2, 3, 4)]


def test_the_mirror_is_an_involution() -> None:
    assert np.array_equal(MIRROR_ACTIONS[MIRROR_ACTIONS], np.arange(len(MIRROR_ACTIONS)))
    assert np.array_equal(MIRROR_OBSERVATION[MIRROR_OBSERVATION], np.arange(OBS_SIZE))
    assert MIRROR_ACTIONS[DRAW] == DRAW and MIRROR_ACTIONS[PASS] == PASS
    assert all(MIRROR_ACTIONS[2 * t] == 2 * t + 1 for t in range(NUM_PLAY_ACTIONS // 2))
    obs = np.random.default_rng(0).random((3, OBS_SIZE), dtype=np.float32)
    np.testing.assert_array_equal(mirror_observations(mirror_observations(obs)), obs)


def _mirrored_games(preset: str, players: int, seed: int) -> int:
    """Play one match (its first 400 moves: random play may never reach the target) with random
    legal actions, and beside it the same deals with every play after a hand's lead laid on the
    other end; check each seat's view of every position. Returns the positions checked."""
    rules = Rules.preset(preset, num_players=players)
    original, mirrored = BergenState(rules, seed), BergenState(rules, seed)
    encoder = Encoder(rules)
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(400):
        assert original.terminal == mirrored.terminal and original.scores == mirrored.scores
        if original.terminal:
            assert mirrored.winner == original.winner
            break
        legal = original.legal_actions()
        mask = original.legal_mask()
        if original.line_len == 0:  # the lead: the same tile on end 0 in both games
            assert mirrored.legal_actions() == legal
            doubles = [a for a in legal if a < NUM_PLAY_ACTIONS and IS_DOUBLE[a // 2]]
            if not doubles:  # a free lead of a plain tile: its mirror is not a position here
                return checked
            action = int(rng.choice(doubles))
            original.apply_action(action)
            mirrored.apply_action(action)
            continue
        np.testing.assert_array_equal(mirrored.legal_mask(), mirror_actions(mask))
        for seat in range(players):
            seen = encoder.observe(original, seat)
            assert mirrorable(seen)
            image = encoder.observe(mirrored, seat)
            np.testing.assert_array_equal(image, mirror_observations(seen))
        checked += 1
        action = int(rng.choice(legal))
        original.apply_action(action)
        mirrored.apply_action(int(MIRROR_ACTIONS[action]))
    return checked


@pytest.mark.parametrize(("preset", "players"), SEATINGS)
def test_a_game_with_every_end_swapped_is_seen_mirrored(preset: str, players: int) -> None:
    assert sum(_mirrored_games(preset, players, seed) for seed in range(4)) > 50


def test_an_empty_line_has_no_mirror_image() -> None:
    state = BergenState(Rules.preset("draw"), 0)
    obs = Encoder(state.rules).observe(state, state.current_player)
    assert not mirrorable(obs)
    assert mirrorable(np.stack([obs, mirror_observations(obs)])).tolist() == [False, False]


@pytest.mark.parametrize("shape", [(OBS_SIZE + 1,), (2, 10)])
def test_bad_shapes_are_named(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="last axis"):
        mirror_observations(np.zeros(shape))
    with pytest.raises(ValueError, match="last axis"):
        mirrorable(np.zeros(shape))
    with pytest.raises(ValueError, match="num_actions"):
        mirror_actions(np.zeros((2, 70)))
