"""The Bergen AEC env: PettingZoo state checks, determinism, spaces, rendering and registration
(PettingZoo's ``api_test`` and ``seed_test`` run as shipped in ``test_conformance.py``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test.state_test import test_state as pz_state_test
from pettingzoo.test.state_test import test_state_space as pz_state_space_test

import bergen_env
from bergen_env.rules import PRESETS

SEATINGS = ((2, False), (3, False), (4, False), (4, True))
CONFIGS = [(preset, n, p) for preset in PRESETS for n, p in SEATINGS]
IDS = [f"{preset}-{n}p{'-partners' if p else ''}" for preset, n, p in CONFIGS]

#: Random 4-player traditional / double_set matches can run for thousands of hands; a small cap
#: keeps every match (and the suite) short and exercises truncation as well.
MAX_HANDS = 12


def make_env(preset: str, num_players: int, partnerships: bool, **kwargs: Any):
    return bergen_env.env(
        rules=preset,
        num_players=num_players,
        partnerships=partnerships,
        max_hands=MAX_HANDS,
        **kwargs,
    )


@pytest.mark.parametrize(("preset", "num_players", "partnerships"), CONFIGS, ids=IDS)
def test_pettingzoo_state(preset: str, num_players: int, partnerships: bool) -> None:
    # state_test() itself also wants a parallel env, which a turn-based game does not have;
    # these are its two AEC parts. Random actions may be illegal: the wrapper then ends the match.
    env = make_env(preset, num_players, partnerships)
    pz_state_space_test(env)
    pz_state_test(env, num_cycles=100)
    raw = bergen_env.raw_env(rules=preset, num_players=num_players, partnerships=partnerships)
    raw.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(200):  # legal play: the state stays in its space
        if raw.game.terminal:
            break
        assert raw.state_space.contains(raw.state())
        mask = raw.observe(raw.agent_selection)["action_mask"]
        raw.step(int(rng.choice(np.flatnonzero(mask))))


# --------------------------------------------------------------------------- determinism


def play_match(env, seed: int, action_seed: int, limit: int = 20_000) -> list[tuple]:
    """Play random legal actions (from a seeded Generator); record everything the agents see."""
    rng = np.random.default_rng(action_seed)
    env.reset(seed=seed)
    trace = []
    for agent in env.agent_iter(limit):
        obs, reward, term, trunc, info = env.last()
        trace.append((agent, obs, reward, term, trunc, dict(info), dict(env.rewards)))
        legal = np.flatnonzero(obs["action_mask"])
        env.step(None if term or trunc else int(rng.choice(legal)))
    return trace


@pytest.mark.parametrize(
    ("preset", "num_players", "partnerships"),
    [("standard", 2, False), ("traditional", 3, False), ("double_set", 4, True)],
)
def test_same_seed_same_match(preset: str, num_players: int, partnerships: bool) -> None:
    for seed in (0, 1, 7):
        a = play_match(make_env(preset, num_players, partnerships), seed, 100 + seed)
        b = play_match(make_env(preset, num_players, partnerships), seed, 100 + seed)
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert data_equivalence(x, y)
        assert a[-1][3] or a[-1][4]  # the match ended or was cut off


def test_different_seeds_differ() -> None:
    a = play_match(make_env("standard", 2, False), 0, 5)
    b = play_match(make_env("standard", 2, False), 1, 5)
    assert not all(data_equivalence(x, y) for x, y in zip(a, b))


def test_reset_with_same_seed_repeats_and_without_seed_continues() -> None:
    env = make_env("standard", 3, False)
    first = play_match(env, 4, 9)
    again = play_match(env, 4, 9)
    assert all(data_equivalence(x, y) for x, y in zip(first, again, strict=True))
    raw = bergen_env.raw_env()
    raw.reset(seed=4)
    hands = [raw.game.hand_tiles(p) for p in range(2)]
    raw.reset()  # no seed: the env's generator goes on, a fresh deal
    assert [raw.game.hand_tiles(p) for p in range(2)] != hands


# --------------------------------------------------------------------------- spaces and masks


@pytest.mark.parametrize(("preset", "num_players", "partnerships"), CONFIGS, ids=IDS)
def test_spaces_and_masks_under_random_play(
    preset: str, num_players: int, partnerships: bool
) -> None:
    env = bergen_env.raw_env(
        rules=preset, num_players=num_players, partnerships=partnerships, max_hands=MAX_HANDS
    )
    size = 65 if preset == "double_set" else 58
    assert env.possible_agents == [f"player_{i}" for i in range(num_players)]
    for agent in env.possible_agents:
        assert env.action_space(agent).n == size
        assert env.observation_space(agent)["action_mask"].shape == (size,)
        assert env.observation_space(agent)["observation"].shape == (bergen_env.OBS_SIZE,)
    env.reset(seed=11)
    rng = np.random.default_rng(11)
    sides = env.rules.num_sides
    for _ in range(3000):
        if env.game.terminal or any(env.truncations.values()):
            break
        on_turn = env.agent_selection
        assert on_turn == f"player_{env.game.current_player}"
        for agent in env.possible_agents:
            obs = env.observe(agent)
            assert obs["action_mask"].dtype == np.int8
            assert obs["observation"].dtype == np.float32
            assert env.observation_space(agent).contains(obs)
            if agent == on_turn:
                assert obs["action_mask"].any()
                assert set(np.flatnonzero(obs["action_mask"])) == set(env.game.legal_actions())
            else:
                assert not obs["action_mask"].any()
            assert len(env.infos[agent]["scores"]) == sides
            assert tuple(env.infos[agent]["scores"]) == tuple(env.game.scores)
        mask = env.observe(on_turn)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    else:
        pytest.fail("the match neither ended nor was cut off")


def test_illegal_action_raises_on_raw_env_and_ends_wrapped_env() -> None:
    raw = bergen_env.raw_env()
    raw.reset(seed=0)
    legal = raw.game.legal_actions()
    illegal = next(a for a in range(58) if a not in legal)
    with pytest.raises(bergen_env.IllegalActionError, match="player_"):
        raw.step(illegal)
    with pytest.raises(bergen_env.IllegalActionError):
        raw.step(58)  # out of range for one set
    env = bergen_env.env()
    env.reset(seed=0)
    agent = env.agent_selection
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(illegal)
    assert all(env.terminations.values())
    assert env.rewards[agent] == -1


# --------------------------------------------------------------------------- render, registry


def test_render_ansi_names_line_ends_hands_and_scores() -> None:
    env = bergen_env.raw_env(num_players=3, render_mode="ansi")
    env.reset(seed=2)
    mask = env.observe(env.agent_selection)["action_mask"]
    env.step(int(np.flatnonzero(mask)[0]))
    text = env.render()
    assert isinstance(text, str)
    scores = env.game.scores
    for side, score in enumerate(scores):
        assert f"side {side}: {score}" in text
    assert "line" in text and "ends" in text and "boneyard" in text
    for seat in range(3):
        assert f"player_{seat}" in text


def test_render_human_prints(capsys: pytest.CaptureFixture[str]) -> None:
    env = bergen_env.raw_env(render_mode="human")
    env.reset(seed=0)
    assert "side 0" in capsys.readouterr().out


def test_registered_with_pettingzoo() -> None:
    assert "bergen_env/Bergen-v0" in pettingzoo.aec_registry
    env = pettingzoo.make("aec", "bergen_env/Bergen-v0", num_players=3)
    env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert env.unwrapped.rules.num_players == 3


def test_state_and_raw_game_require_reset() -> None:
    env = bergen_env.raw_env()
    with pytest.raises(RuntimeError, match="reset"):
        env.state()
    env.reset(seed=0)
    state = env.state()
    assert state.shape == (bergen_env.STATE_SIZE,) and state.dtype == np.float32
