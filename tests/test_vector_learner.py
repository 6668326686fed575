"""The single-learner batched VectorEnv against the single-agent env (``bergen_env.vector``)."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("numba")

from bergen_env import Rules  # noqa: E402
from bergen_env.agents.base import Agent  # noqa: E402
from bergen_env.errors import IllegalActionError, InvalidOptionError  # noqa: E402
from bergen_env.observation import Encoder  # noqa: E402
from bergen_env.single_agent import BergenSingleAgentEnv  # noqa: E402
from bergen_env.vector import BergenLearnerVectorEnv  # noqa: E402
from tests.scripted import random_deals  # noqa: E402


def test_callable_opponents_get_their_rows_and_random_seats_vary() -> None:
    calls = []

    def first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        assert observations.shape == (len(masks), 240) and observations.dtype == np.float32
        calls.append(len(masks))
        return masks.argmax(axis=1)

    env = BergenLearnerVectorEnv(
        num_envs=16, opponents=[first_legal, "random"], num_players=3, seed=1
    )
    obs, infos = env.reset()
    seats = set(infos["seat"].tolist())
    done = 0
    for _ in range(300):
        actions = np.array([np.flatnonzero(m)[0] for m in infos["action_mask"]])
        obs, rewards, term, trunc, infos = env.step(actions)
        assert (infos["action_mask"][np.arange(16), :].sum(axis=1) > 0).all()
        assert set(np.unique(rewards[term])) <= {1.0, -0.5}
        done += int(term.sum())
        seats |= set(infos["seat"].tolist())
    assert calls and done > 5 and seats == {0, 1, 2}


def test_same_seed_same_run() -> None:
    def run() -> list:
        env = BergenLearnerVectorEnv(num_envs=4, opponents="random", seed=9)
        obs, infos = env.reset()
        out = [obs]
        for _ in range(50):
            actions = np.array([np.flatnonzero(m)[-1] for m in infos["action_mask"]])
            obs, rewards, term, trunc, infos = env.step(actions)
            out += [obs, rewards, infos["seat"]]
        return out

    for a, b in zip(run(), run()):
        np.testing.assert_array_equal(a, b)


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidOptionError, match="'search'.*random, greedy, heuristic, tuned"):
        BergenLearnerVectorEnv(num_envs=2, opponents="search")
    with pytest.raises(InvalidOptionError, match="opponents"):
        BergenLearnerVectorEnv(num_envs=2, num_players=3, opponents=["random"] * 3)
    with pytest.raises(InvalidOptionError, match="learner_seat"):
        BergenLearnerVectorEnv(num_envs=2, learner_seat=2)
    env = BergenLearnerVectorEnv(num_envs=2, opponents=lambda o, m: np.full(len(m), 57), seed=0)
    with pytest.raises(IllegalActionError, match="opponent"):
        env.reset()
        for _ in range(20):
            env.step(np.array([np.flatnonzero(m)[0] for m in env.batch.masks]))


# ----------------------------------------------------------------- Gymnasium's conventions


class FirstLegal(Agent):
    """The first legal action: the scalar twin of a callable batch opponent."""

    def act(self, observation: Any, action_mask: np.ndarray, view: Any) -> int:
        return int(np.flatnonzero(action_mask)[0])


def first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return masks.argmax(axis=1)


@pytest.mark.parametrize(
    ("kwargs", "seat", "opponent"),
    [
        (dict(num_players=2), 1, "greedy"),
        (dict(num_players=3, rules="traditional", reward="points", max_hands=2), 2, "greedy"),
        (dict(num_players=4, partnerships=True, rules="double_set"), 0, "callable"),
        (dict(num_players=2, rules="fives", max_hands=3), 0, "callable"),
        (dict(num_players=4, partnerships=True, rules="draw"), 3, "greedy"),
        (dict(num_players=2, rules="fives", reward="points"), 1, "tuned"),
        (dict(num_players=3, max_hands=2), 0, "mixed"),
        (dict(num_players=4, partnerships=True, rules="traditional"), 2, "mixed"),
    ],
)
def test_final_obs_and_info_as_sync_vector_env_in_same_step_mode(
    kwargs: dict, seat: int, opponent: str
) -> None:
    """Same deals, same actions: the learner env's ``final_obs`` / ``final_info`` and their
    masks are those of ``SyncVectorEnv(autoreset_mode=SAME_STEP)`` over the scalar env."""
    env_kw = {k: v for k, v in kwargs.items() if k in ("reward", "max_hands")}
    rules_kw = {k: v for k, v in kwargs.items() if k not in env_kw}
    rules = Rules.preset(rules_kw.pop("rules", "standard"), **rules_kw)
    rows = 3
    deals = random_deals(rules, 40, 5)
    # mixed: a batch function and the compiled heuristic in alternate seats
    mixed = [first_legal, "heuristic"] * 2
    batch_opp = {"callable": first_legal, "mixed": mixed[: rules.num_players - 1]}.get(
        opponent, opponent
    )
    env = BergenLearnerVectorEnv(
        num_envs=rows, opponents=batch_opp, learner_seat=seat, rules=rules, seed=0, **env_kw
    )

    def scalar() -> BergenSingleAgentEnv:
        opps = {"callable": [FirstLegal()], "mixed": [FirstLegal(), "heuristic"] * 2}
        return BergenSingleAgentEnv(
            rules=rules,
            num_players=rules.num_players,
            partnerships=rules.partnerships,
            opponents=opps.get(opponent, [opponent])[: rules.num_players - 1],
            learner_seat=seat,
            **env_kw,
        )

    sync = gym.vector.SyncVectorEnv(
        [scalar] * rows, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    assert env.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
    obs, infos = env.reset(options={"deals": [deals] * rows})
    s_obs, s_infos = sync.reset(seed=0, options={"deals": deals})
    np.testing.assert_array_equal(obs, s_obs)
    np.testing.assert_array_equal(infos["action_mask"], s_infos["action_mask"])
    assert infos["_action_mask"].all() and infos["_seat"].all()
    live = np.ones(rows, dtype=bool)
    encoder = Encoder(rules)  # the AEC env's state()
    pick = np.random.default_rng(1)
    ended_somewhere = {"terminated": False, "truncated": False}
    while live.any():
        actions = np.array([pick.choice(np.flatnonzero(m)) for m in infos["action_mask"]])
        s_actions = np.array([pick.choice(np.flatnonzero(m)) for m in s_infos["action_mask"]])
        s_actions[live] = actions[live]  # the same matches while they last
        obs, rewards, term, trunc, infos = env.step(actions)
        s_obs, s_rewards, s_term, s_trunc, s_infos = sync.step(s_actions)
        np.testing.assert_allclose(rewards[live], s_rewards[live], atol=1e-6)
        assert (term[live] == s_term[live]).all() and (trunc[live] == s_trunc[live]).all()
        ended = (term | trunc) & live
        assert ("final_obs" in infos) == (term | trunc).any()
        if not ended.any():
            np.testing.assert_array_equal(obs[live], s_obs[live])
            state = env.state()
            for i in np.flatnonzero(live):  # the global state: the AEC env's, row by row
                game = sync.envs[i].unwrapped.game
                np.testing.assert_array_equal(state[i], encoder.state(game))
            continue
        for key in ("_final_obs", "_final_info"):
            assert (infos[key] == (term | trunc)).all()
            assert (infos[key][live] == s_infos[key][live]).all()
        final, s_final = infos["final_info"], s_infos["final_info"]
        for i in np.flatnonzero(ended):
            np.testing.assert_array_equal(infos["final_obs"][i], s_infos["final_obs"][i])
            for key in ("action_mask", "seat", "hand"):
                assert final[f"_{key}"][i] and s_final[f"_{key}"][i]
                np.testing.assert_array_equal(final[key][i], s_final[key][i])
            assert tuple(final["scores"][i]) == s_final["scores"][i]
            assert ("winner" in final) == ("winner" in s_final) == term.any()
            if term[i]:
                assert final["_winner"][i] and s_final["_winner"][i]
                winner = s_final["winner"][i]
                assert final["winner"][i] == (-1 if winner is None else winner)
            ended_somewhere["terminated" if term[i] else "truncated"] = True
        assert all(infos["final_obs"][i] is None for i in np.flatnonzero(~(term | trunc)))
        live &= ~ended
    assert ended_somewhere["truncated" if "max_hands" in env_kw else "terminated"]
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(actions)


def test_win_reward_is_the_change_of_the_match_win_chance() -> None:
    from bergen_env.agents.match_value import win_table

    table = win_table(Rules.preset("standard"))
    env = BergenLearnerVectorEnv(8, opponents="greedy", seed=2, reward="win")
    _, infos = env.reset()
    rng = np.random.default_rng(0)
    chance = np.full(8, table(0, 0))
    total, ended = np.zeros(8), 0
    for _ in range(150):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in infos["action_mask"]])
        _, rewards, term, trunc, infos = env.step(acts)
        scores = env.batch.scores
        for i in range(8):
            side = int(env.seats[i])
            if term[i]:  # won: chance 1, lost: 0
                now = float(infos["final_info"]["winner"][i] == infos["final_info"]["seat"][i])
            else:
                now = table(int(scores[i, side]), int(scores[i, 1 - side]))
            assert rewards[i] == pytest.approx(2 * (now - chance[i]), abs=1e-6)
            chance[i] = table(0, 0) if term[i] else now
        total += rewards
        ended += int(term.sum())
        assert not trunc.any()
    assert ended > 20


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(rules="draw", reward="win"), "option reward='win' needs a match-win table"),
        (dict(reward="shaped"), "option 'reward' must be one of ('match', 'points', 'win')"),
    ],
)
def test_rewards_without_a_batched_version_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=re.escape(message)):
        BergenLearnerVectorEnv(2, **kwargs)
