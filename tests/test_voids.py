"""Known voids (numbers a seat is known not to hold) are sound and as exact as the rules allow."""

import numpy as np
import pytest

from bergen_env import DRAW, PASS, BergenState, Rules
from bergen_env.tiles import NUMBER_BITS

CONFIGS = [
    dict(rules="standard", num_players=2),
    dict(rules="standard", num_players=4, partnerships=True),
    dict(rules="traditional", num_players=3),
    dict(rules="double_set", num_players=2),
    dict(rules="standard", num_players=3, voluntary_draw=True),
]


def _held_numbers(state: BergenState, seat: int) -> int:
    bits = 0
    for t, count in enumerate(state.hands[seat]):
        if count:
            bits |= NUMBER_BITS[t]
    return bits


def _random_steps(config: dict, seed: int, steps: int):
    """Yield (state before, action, state after) over random play."""
    kwargs = dict(config)
    rules = Rules.preset(kwargs.pop("rules"), **kwargs)
    rng = np.random.default_rng(seed)
    state = BergenState(rules, seed=seed)
    for _ in range(steps):
        if state.terminal:
            break
        legal = state.legal_actions()
        action = legal[int(rng.integers(len(legal)))]
        before = state.clone()
        state.apply_action(action)
        yield before, action, state


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_voids_are_sound(config: dict) -> None:
    """A seat never holds a number it is marked void in."""
    checked = 0
    for seed in range(20):
        for _, _, state in _random_steps(config, seed, 400):
            for seat in range(state.num_players):
                assert not state.voids[seat] & _held_numbers(state, seat)
                checked += 1
    assert checked > 1000


def _draw_runs(config: dict, seeds: range):
    """(voids before, ends, run length, voids after the play) for draw runs ended by a play."""
    for seed in seeds:
        run, start_voids, runner = 0, 0, None
        for before, action, after in _random_steps(config, seed, 600):
            p = before.current_player
            if p != runner:  # a run ends when the hand ends during it or the turn moves on
                run, runner = 0, p
            if action == DRAW and after.hand_number == before.hand_number:
                if run == 0:
                    start_voids = before.voids[p]
                run += 1
                continue
            if run and action != PASS and after.hand_number == before.hand_number:
                ends = (1 << before.end_num[0]) | (1 << before.end_num[1])
                yield start_voids, ends, run, after.voids[p]
            run = 0
            if after.hand_number != before.hand_number:
                runner = None


def test_forced_draws_then_play_keep_the_end_numbers_void() -> None:
    found_single_with_prior = found_multi = 0
    for prior, ends, run, voids in _draw_runs(CONFIGS[0], range(300)):
        if run == 1:
            assert voids == prior | ends  # the played tile is the one drawn: the hand is as before
            found_single_with_prior += bool(prior & ~ends)
        else:
            assert voids == ends  # earlier drawn tiles may hold the old void numbers
            found_multi += 1
    assert found_single_with_prior and found_multi


def test_voluntary_draw_reveals_nothing() -> None:
    runs = list(_draw_runs(CONFIGS[4], range(200)))
    assert runs
    assert all(voids == 0 for *_, voids in runs)
