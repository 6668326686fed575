"""The scoring rule has one home (``bergen_env.scoring``): what an agent predicts a play scores
equals what the engine scores, on random positions of every preset and seating."""

from __future__ import annotations

import numpy as np
import pytest

from bergen_env import BergenState, Rules
from bergen_env.actions import DOUBLE_PLAY, NUM_PLAY_ACTIONS
from bergen_env.agents.play_outcomes import play_outcome
from bergen_env.rules import PRESETS
from bergen_env.scoring import (
    DOUBLE_BLANK,
    OPENING_POINTS,
    PLAY_POINTS,
    cap_header,
    fives_points,
    line_points,
    opening_points,
    out_points,
    play_count,
    play_index,
    play_result,
)
from bergen_env.tiles import NUM_NUMBERS, NUM_TILES

SEATINGS = ((2, False), (3, False), (4, False), (4, True))
CONFIGS = [(preset, n, p) for preset in PRESETS for n, p in SEATINGS]
IDS = [f"{preset}-{n}p{'-partners' if p else ''}" for preset, n, p in CONFIGS]
#: Random matches per configuration; every legal play of every position is checked.
MATCHES = 6
MAX_HANDS = 12


def _is_play(a: int) -> bool:
    return a < NUM_PLAY_ACTIONS or a >= DOUBLE_PLAY


def check_predictions(s: BergenState) -> int:
    """Every legal play of ``s``: the agent's prediction, ``action_points`` and the engine agree.

    The engine's score change of the mover's side is compared after taking out what the play's
    own points cannot foresee: points of a hand end by a block, and (``out_scoring`` other than
    ``fixed``) the pips award of going out, which depends on hidden hands.
    """
    rules = s.rules
    view = s.public_view(s.current_player)
    side = view.side
    checked = 0
    for a in s.legal_actions():
        if not _is_play(a):
            continue
        out = play_outcome(view, a)
        after = s.clone()
        ended = len(after.hand_results)
        after.apply_unchecked(a)
        delta = after.scores[side] - s.scores[side]
        blocked_or_pips = False
        if len(after.hand_results) > ended:
            result = after.hand_results[-1]
            if result.reason == "blocked" or rules.out_scoring != "fixed":
                delta -= result.points[side]
                blocked_or_pips = True
        assert out.points == delta == s.action_points(a), (a, out, delta)
        assert out.goes_out == (
            after.hand_len[s.current_player] == 0
            or (len(after.hand_results) > ended and after.hand_results[-1].seat == s.current_player)
        )
        if out.wins:
            assert after.terminal and after.winner == side
        elif not blocked_or_pips:
            assert not (after.terminal and after.winner == side)
        checked += 1
    return checked


@pytest.mark.parametrize(("preset", "num_players", "partnerships"), CONFIGS, ids=IDS)
def test_predicted_points_equal_engine_points(
    preset: str, num_players: int, partnerships: bool
) -> None:
    rules = Rules.preset(preset, num_players=num_players, partnerships=partnerships)
    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(MATCHES):
        s = BergenState(rules, seed=seed)
        while not s.terminal and s.hand_number < MAX_HANDS:
            checked += check_predictions(s)
            legal = s.legal_actions()
            s.apply_unchecked(legal[int(rng.integers(len(legal)))])
    assert checked > 100


@pytest.mark.parametrize("preset", ["standard", "traditional"])
def test_predictions_near_the_target(preset: str) -> None:
    """End caps and a header or domino that reaches the target: scores close to it."""
    rules = Rules.preset(preset, target=4)
    rng = np.random.default_rng(3)
    for seed in range(20):
        s = BergenState(rules, seed=seed)
        while not s.terminal:
            check_predictions(s)
            legal = s.legal_actions()
            s.apply_unchecked(legal[int(rng.integers(len(legal)))])


def test_tables_are_the_functions() -> None:
    for kind, table in PLAY_POINTS.items():
        for t in range(NUM_TILES):
            assert OPENING_POINTS[kind][t] == opening_points(kind, t)
            for e0 in range(NUM_NUMBERS):
                for e1 in range(NUM_NUMBERS):
                    for d0 in (False, True):
                        for d1 in (False, True):
                            value = table[play_index(t, e0, e1, d0, d1)]
                            assert value == line_points(kind, t, e0, e1, d0, d1)


def test_caps_and_awards() -> None:
    assert [cap_header(3, need, True) for need in (1, 2, 3, 4)] == [1, 1, 2, 3]
    assert cap_header(3, 1, False) == 3
    assert cap_header(0, 1, True) == 0
    assert [out_points("pips_fives", p) for p in (0, 2, 3, 35, 36, 37, 38, 40)] == [
        0,
        0,
        1,
        7,
        7,
        7,
        8,
        8,
    ]
    assert out_points("pips", 38) == 38
    assert out_points("fixed", 38, fixed=2) == 2
    with pytest.raises(ValueError, match="out_scoring"):
        out_points("points", 3)
    with pytest.raises(ValueError, match="play_scoring"):
        line_points("all_fives", 0, 0, 0, False, False)


def test_play_count_is_what_a_fives_play_scores_by() -> None:
    """Every legal play of random Fives positions: ``play_count`` is the count whose points
    ``play_result`` gives (the web's score reasons read it)."""
    rules = Rules.preset("fives", num_players=3)
    rng = np.random.default_rng(5)
    checked = 0
    for match in range(4):
        s = BergenState(rules, seed=match)
        while not s.terminal and s.hand_number < MAX_HANDS:
            doubles = (bool(s.end_dbl[0]), bool(s.end_dbl[1]))
            for a in s.legal_actions():
                if _is_play(a) and a >> 1 != DOUBLE_BLANK:  # [0|0] never scores
                    count = play_count(a, s.ends, doubles)
                    assert fives_points(count) == play_result("fives", a, s.ends, doubles)[0]
                    checked += 1
            s.apply_action(int(rng.choice(s.legal_actions())))
    assert checked > 500
