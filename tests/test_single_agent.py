"""The single-agent Gymnasium env: API checks, rewards on opponents' moves, forced moves, errors."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import bergen_env
from bergen_env.agents.base import Agent
from bergen_env.engine import BergenState
from bergen_env.errors import GameOverError, IllegalActionError, InvalidOptionError
from bergen_env.observation import OBS_SIZE, Encoder
from bergen_env.rules import Rules
from bergen_env.single_agent import BergenSingleAgentEnv


class FirstLegal(Agent):
    """A test-local legal agent: the lowest legal action id."""

    needs_observation = False
    needs_view = False

    def act(self, observation, action_mask, view) -> int:
        return int(np.flatnonzero(action_mask)[0])


class Cheater(FirstLegal):
    """Always plays PASS, legal or not."""

    def act(self, observation, action_mask, view) -> int:
        return bergen_env.PASS


def play_episode(env: BergenSingleAgentEnv, seed: int) -> tuple[float, int, dict]:
    """Play the lowest legal action until the end; return (total reward, steps, last info)."""
    env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        action = int(np.flatnonzero(env.action_masks())[0])
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        steps += 1
        if terminated or truncated:
            return total, steps, info


CONFIGS = [
    dict(num_players=2),
    dict(num_players=3, opponents=["random", "greedy"]),
    dict(num_players=4, partnerships=True, learner_seat=1),
    dict(num_players=2, rules="double_set", reward="points"),
    dict(num_players=2, auto_forced=False, lead="highest", domino_points=5, reward="shaped"),
    dict(num_players=3, rules="traditional", opponents=[FirstLegal(), lambda: FirstLegal()]),
    dict(num_players=3, reward="win", opponents=["greedy"]),
    dict(num_players=4, partnerships=True, rules="traditional", reward="win", learner_seat=3),
    dict(num_players=2, rules="fives", reward="win", opponents=["greedy"]),
    dict(num_players=4, rules="fives", reward="shaped", learner_seat=1),
    dict(num_players=3, rules="draw", reward="points"),
    dict(num_players=4, rules="draw", learner_seat=2),
]


@pytest.mark.parametrize("kwargs", CONFIGS)
def test_check_env(kwargs: dict) -> None:
    env = gymnasium.make("bergen_env/Bergen-v0", illegal_action="lose", **kwargs)
    check_env(env.unwrapped)
    obs, info = env.reset(seed=1)
    assert obs.shape == (OBS_SIZE,) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize("kwargs", CONFIGS)
def test_episodes_end_with_match_result(kwargs: dict) -> None:
    env = BergenSingleAgentEnv(**kwargs)
    for seed in range(3):
        total, _, info = play_episode(env, seed)
        game = env.game
        assert game.terminal and info["winner"] == game.winner
        side = env.rules.side_of[env.seat]
        others = [s for i, s in enumerate(game.scores) if i != side]
        diff = game.scores[side] - sum(others) / len(others)
        result = game.returns()[env.seat]
        if env.reward_mode == "match":
            assert total == result
        elif env.reward_mode == "points":  # own side's score minus the mean of the others'
            assert total == pytest.approx(diff)
        elif env.reward_mode == "win":  # the match-win chance's changes add up to the result
            assert total == pytest.approx(result, abs=1e-9)
        else:
            assert total == pytest.approx(result + diff / env.rules.target)


@pytest.mark.parametrize("kwargs", [dict(num_players=2), dict(num_players=3)])
def test_win_reward_is_the_change_of_the_match_win_chance(kwargs: dict) -> None:
    from bergen_env.agents.match_value import win_table

    env = BergenSingleAgentEnv(reward="win", opponents=["heuristic"], **kwargs)
    table = win_table(env.rules)
    sides = env.rules.num_sides
    nonzero = 0
    for seed in range(5):
        env.reset(seed=seed)
        side = env.rules.side_of[env.seat]

        def chance(scores: tuple[int, ...], side: int = side) -> float:
            return table(*(scores[(side + j) % sides] for j in range(sides)))

        before = chance((0,) * sides)  # the first step also holds the changes before it
        while True:
            _, reward, terminated, truncated, info = env.step(
                int(np.flatnonzero(env.action_masks())[-1])
            )
            if terminated:
                after = 1.0 if info["winner"] == side else 0.0
            else:
                after = chance(info["scores"])
            assert reward == pytest.approx((after - before) * sides / (sides - 1))
            nonzero += reward != 0.0 and not terminated
            before = after
            if terminated or truncated:
                break
    assert nonzero > 10  # scoring moves the chance during the match, not only at its end


def test_loss_on_an_opponents_move_reaches_the_learner() -> None:
    env = BergenSingleAgentEnv(opponents=["greedy"], learner_seat=0)
    found = 0
    for seed in range(60):
        total, _, info = play_episode(env, seed)
        last_seat, _ = env.game.moves[-1]
        if last_seat != 0:
            found += 1
            assert info["winner"] == 1
            assert total == -1.0  # the match ended on the opponent's move, the learner lost
    assert found >= 5


def test_learner_seat_random_is_seeded_and_varies() -> None:
    env = BergenSingleAgentEnv(num_players=3)
    seats = [env.reset(seed=s)[1]["seat"] for s in range(30)]
    assert set(seats) == {0, 1, 2}
    assert seats == [env.reset(seed=s)[1]["seat"] for s in range(30)]


@pytest.mark.parametrize("auto_forced", [True, False])
def test_auto_forced(auto_forced: bool) -> None:
    env = BergenSingleAgentEnv(num_players=2, auto_forced=auto_forced, learner_seat=0)
    forced_seen = 0
    for seed in range(5):
        env.reset(seed=seed)
        done = False
        while not done:
            mask = env.action_masks()
            assert env.game.current_player == 0 and mask.any()
            forced_seen += int(mask.sum() == 1)
            _, _, term, trunc, _ = env.step(int(np.flatnonzero(mask)[0]))
            done = term or trunc
    if auto_forced:
        assert forced_seen == 0
    else:
        assert forced_seen > 0


def test_same_seed_same_trajectory() -> None:
    runs = []
    for _ in range(2):
        env = BergenSingleAgentEnv(num_players=3, opponents=["random"])
        obs, _ = env.reset(seed=7)
        trace = [obs]
        rng = np.random.default_rng(0)
        for _ in range(40):
            a = int(rng.choice(np.flatnonzero(env.action_masks())))
            obs, r, term, trunc, info = env.step(a)
            trace += [obs, r, info["scores"]]
            if term or trunc:
                trace.append(env.reset()[0])
        runs.append(trace)
    for x, y in zip(*runs):
        np.testing.assert_array_equal(x, y)


def test_scripted_deal_passthrough() -> None:
    rules = Rules.preset("standard")
    deal = {
        "hands": [[0, 1, 2, 3, 4, 5], [7, 8, 9, 10, 11, 12]],
        "boneyard": list(range(13, 28)) + [6],
    }
    env = BergenSingleAgentEnv(learner_seat=0, auto_forced=False, opponents=[FirstLegal()])
    obs, _ = env.reset(seed=0, options={"deals": [deal]})
    expected = Encoder(rules).observe(BergenState(rules, seed=0, deals=[deal]), 0)
    np.testing.assert_array_equal(obs, expected)
    assert list(np.flatnonzero(env.action_masks())) == [0]  # the learner leads [0|0]
    with pytest.warns(UserWarning, match="ignores option.*'deal' .did you mean 'deals'"):
        env.reset(options={"deal": [deal]})


def test_illegal_learner_action_names_it_and_the_legal_ones() -> None:
    env = BergenSingleAgentEnv(learner_seat=0, auto_forced=False, illegal_action="raise")
    env.reset(seed=0)
    legal = np.flatnonzero(env.action_masks())
    bad = next(a for a in range(58) if a not in legal)
    with pytest.raises(IllegalActionError, match=rf"action {bad} .*illegal.*legal actions: "):
        env.step(bad)
    with pytest.raises(IllegalActionError, match="out of range"):
        env.step(99)


def test_illegal_action_lose_mode_ends_the_episode() -> None:
    env = BergenSingleAgentEnv(learner_seat=0, auto_forced=False, illegal_action="lose")
    env.reset(seed=0)
    bad = next(a for a in range(58) if not env.action_masks()[a])
    _, reward, terminated, truncated, info = env.step(bad)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, bad)
    assert not env.action_masks().any()
    with pytest.raises(GameOverError):
        env.step(0)


def test_action_space_sample_is_legal_and_pickles_plain() -> None:
    import pickle

    env = BergenSingleAgentEnv(num_players=4, partnerships=True)
    env.reset(seed=3)
    env.action_space.seed(0)
    for _ in range(20):
        assert env.action_masks()[env.action_space.sample()]
    plain = pickle.loads(pickle.dumps(env.action_space))
    assert type(plain) is gymnasium.spaces.Discrete and plain.n == 58


def test_illegal_opponent_action_names_the_agent() -> None:
    env = BergenSingleAgentEnv(opponents=[Cheater()], learner_seat=0)
    with pytest.raises(IllegalActionError, match="Cheater.*seat 1.*illegal action 57"):
        for seed in range(5):
            play_episode(env, seed)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(opponents=["random", "random"]), "needs 1 or 1 entries"),
        (dict(opponents="random"), "must be a list"),
        (dict(opponents=["nobody"]), "unknown agent 'nobody'"),
        (dict(opponents=[3]), "not an agent string"),
        (dict(learner_seat=2), "learner_seat"),
        (dict(reward="score"), "reward"),
        (dict(max_hands=0), "max_hands"),
        (dict(num_players=3, rules="traditional", reward="win"), "reward='win'.*27000"),
        (dict(illegal_action="ignore"), "illegal_action"),
        (dict(target=0), "target"),
    ],
)
def test_bad_options(kwargs: dict, match: str) -> None:
    with pytest.raises((InvalidOptionError, ValueError), match=match):
        BergenSingleAgentEnv(**kwargs)


def test_callable_opponent_must_return_an_agent() -> None:
    env = BergenSingleAgentEnv(opponents=[lambda: "random"])
    with pytest.raises(InvalidOptionError, match="not an Agent"):
        env.reset(seed=0)


def test_max_hands_truncates() -> None:
    env = BergenSingleAgentEnv(max_hands=1, learner_seat=0)
    total, _, info = play_episode(env, 0)
    assert env.game.hand_number == 1 and not env.game.terminal
    assert total == 0.0 and "winner" not in info
