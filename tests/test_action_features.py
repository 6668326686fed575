"""The action features an action scorer reads: checked against the engine's own move."""

from __future__ import annotations

from itertools import islice

import numpy as np
import pytest

from bergen_env.action_features import (
    ACTION_FEATURE_LAYOUT,
    ACTION_FEATURE_SLICES,
    NUM_ACTION_FEATURES,
    action_features,
)
from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.observation import OBS_SIZE, OBS_SLICES
from bergen_env.rules import PRESETS, Rules
from bergen_env.tiles import IS_DOUBLE, NUM_NUMBERS, NUM_TILES, PIPS, TILE_ID, TILES
from tests.aec_decisions import aec_decisions

F = ACTION_FEATURE_SLICES


def positions(rules: Rules, seed: int, matches: int = 1, limit: int = 400):
    """(state, seat, observation, legal actions) at the first ``limit`` decisions of a few random
    matches."""
    decisions = aec_decisions(rules, seed, "random", matches)
    for state, seat, obs, mask in islice(decisions, limit):
        yield state, seat, obs, np.flatnonzero(mask)


@pytest.mark.parametrize(
    "rules",
    [Rules.preset(p, num_players=n) for p in PRESETS for n in (2, 4)],
    ids=lambda r: f"{r.name}-{r.num_players}",
)
def test_features_are_the_table_after_the_engine_plays_the_action(rules: Rules) -> None:
    checked = kinds = 0
    for game, seat, obs, legal in positions(rules, seed=11, matches=5):
        rows = action_features(np.repeat(obs[None], len(legal), 0), legal)
        hand = game.hands[seat]
        for a, row in zip(legal.tolist(), rows):
            kind = row[F["kind"]]
            kinds += 1
            if a in (DRAW, PASS):
                assert kind.tolist() == ([0, 1, 0, 0] if a == DRAW else [0, 0, 1, 0])
                assert not row[: F["kind"].start].any() and not row[F["weight_left"]].any()
                continue
            assert kind.tolist() == ([0, 0, 0, 1] if a >= DOUBLE_PLAY else [1, 0, 0, 0])
            tile = TILE_ID[(a - DOUBLE_PLAY,) * 2] if a >= DOUBLE_PLAY else a >> 1
            after = list(hand)
            after[tile] -= 2 if a >= DOUBLE_PLAY else 1
            assert row[F["tile_id"]].argmax() == tile
            tile_row = [PIPS[tile] / 12, float(IS_DOUBLE[tile])]
            assert row[F["tile"]].tolist() == pytest.approx(tile_row)
            assert row[F["points"]][0] == obs[OBS_SLICES["play_points"]][a]
            assert row[F["hand_left"]][0] == sum(after)
            numbers = {n for t, c in enumerate(after) if c for n in TILES[t]}
            assert row[F["numbers_left"]][0] == len(numbers)
            pips = sum(c * PIPS[t] for t, c in enumerate(after))
            assert row[F["weight_left"]].tolist() == pytest.approx(
                [pips / 12, sum(c for t, c in enumerate(after) if IS_DOUBLE[t])]
            )
            s = game.clone()
            number = s.hand_number
            s.apply_action(a)
            if s.terminal or s.hand_number != number:
                continue  # the play ended the hand: the next hand's table is another one
            x, y = s.end_num
            assert row[F["new_left"]].argmax() == x and row[F["new_left"]].sum() == 1
            assert row[F["new_right"]].argmax() == y and row[F["new_right"]].sum() == 1
            assert row[F["new_end_doubles"]].tolist() == [float(d) for d in s.end_dbl]
            header = TILE_ID[(x, y)]
            assert row[F["header_tile"]].argmax() == header
            unseen = obs[OBS_SLICES["unseen"]]
            assert row[F["header_copies"]].tolist() == [unseen[header], after[header]]
            voids = obs[OBS_SLICES["voids"]].reshape(4, NUM_NUMBERS)
            assert row[F["new_end_voids"]].tolist() == [
                voids[k, m] for k in (1, 2, 3) for m in (x, y)
            ]
            holds = [[t for t in range(NUM_TILES) if n in TILES[t]] for n in (x, y)]
            assert row[F["follow"]].tolist() == [sum(after[t] for t in h) for h in holds]
            assert row[F["unseen_fitting"]].tolist() == [sum(unseen[t] for t in h) for h in holds]
            checked += 1
    assert checked > 50 and kinds > checked


def test_two_sets_double_play_is_featured() -> None:
    rules = Rules.preset("double_set", num_players=2)
    seen = 0
    for _, _, obs, legal in positions(rules, seed=3, matches=12, limit=3000):
        for a in legal[legal >= DOUBLE_PLAY].tolist():
            n = a - DOUBLE_PLAY
            row = action_features(obs[None], np.array([a]))[0]
            assert row[F["new_left"]].argmax() == n == row[F["new_right"]].argmax()
            assert row[F["new_end_doubles"]].tolist() == [1.0, 1.0]
            seen += 1
    assert seen, "no double play came up: pick another seed"


def test_layout_and_bad_input() -> None:
    assert sum(size for _, size in ACTION_FEATURE_LAYOUT) == NUM_ACTION_FEATURES
    assert F["weight_left"].stop == NUM_ACTION_FEATURES
    obs = np.zeros((2, OBS_SIZE), np.float32)
    with pytest.raises(ValueError, match=r"shape \(n, 240\) and n actions"):
        action_features(obs[:, :10], np.array([56, 57]))
    with pytest.raises(ValueError, match="shape"):
        action_features(obs, np.array([56]))
    with pytest.raises(ValueError, match=r"action ids must be in 0..64, got 56 to 65"):
        action_features(obs, np.array([56, 65]))
    assert action_features(obs[:0], np.array([], dtype=int)).shape == (0, NUM_ACTION_FEATURES)
