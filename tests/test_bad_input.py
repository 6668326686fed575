"""Bad input gets a clear error naming the problem: actions, options, deals, out-of-order calls."""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

import gymnasium
import numpy as np
import pytest

import bergen_env
from bergen_env import (
    BergenState,
    GameOverError,
    IllegalActionError,
    InvalidDealError,
    InvalidOptionError,
    Rules,
    raw_env,
    tile_str,
)
from bergen_env.actions import action_str
from bergen_env.agents import make_agent


def legal_of(env: Any) -> list[int]:
    return np.flatnonzero(env.observe(env.agent_selection)["action_mask"]).tolist()


def started(make: Any = raw_env, moves: int = 3, seed: int = 0, **kwargs: Any) -> Any:
    """An env ``moves`` actions into a match (first legal action each time)."""
    env = make(**kwargs)
    env.reset(seed=seed)
    for _ in range(moves):
        env.step(legal_of(env)[0])
    return env


def assert_names_legal(message: str, legal: list[int]) -> None:
    assert "legal actions:" in message
    listed = message.split("legal actions:")[1]
    assert [int(x) for x in re.findall(r"(\d+) \(", listed)] == legal
    for a in legal:
        assert action_str(a) in listed


# ---------------------------------------------------------------------- actions on raw_env


@pytest.mark.parametrize("rules", ["standard", "double_set"])
@pytest.mark.parametrize("moves", [0, 1, 5])
def test_illegal_action_names_action_and_legal_ones(rules: str, moves: int) -> None:
    env = started(moves=moves, rules=rules, num_players=3)
    legal = legal_of(env)
    illegal = [a for a in range(env.rules.num_actions) if a not in legal]
    before = env.observe(env.agent_selection)["observation"]
    for a in illegal:
        with pytest.raises(IllegalActionError) as info:
            env.step(a)
        message = str(info.value)
        assert f"action {a} ({action_str(a)}) is illegal for {env.agent_selection}" in message
        assert_names_legal(message, legal)
    # nothing changed: the same agent is on turn with the same observation
    assert legal_of(env) == legal
    np.testing.assert_array_equal(env.observe(env.agent_selection)["observation"], before)


@pytest.mark.parametrize(
    ("rules", "action"),
    [
        ("standard", -1),
        ("standard", 58),
        ("standard", 64),
        ("double_set", 65),
        ("standard", 10**12),
    ],
)
def test_out_of_range_action_names_action_and_legal_ones(rules: str, action: int) -> None:
    env = started(rules=rules, moves=2)
    with pytest.raises(IllegalActionError, match=rf"action {action} is out of range") as info:
        env.step(action)
    assert_names_legal(str(info.value), legal_of(env))


@pytest.mark.parametrize(
    "action",
    [
        1.0,
        np.float32(2.0),
        "3",
        "draw",
        None,
        True,
        False,
        np.bool_(True),
        [2],
        np.array([2]),
        np.array(2.0),
        2 + 0j,
    ],
    ids=repr,
)
def test_non_integer_action_is_rejected(action: Any) -> None:
    env = started(moves=1)
    with pytest.raises(IllegalActionError, match="action must be an integer in 0..57") as info:
        env.step(action)
    assert repr(action) in str(info.value)
    assert_names_legal(str(info.value), legal_of(env))


NUMPY_INTS = [
    np.int64,
    np.int32,
    np.int16,
    np.uint8,
    np.intp,
    np.array,
    lambda a: np.array(a, dtype=np.uint16),
]


@pytest.mark.parametrize("make", [raw_env, bergen_env.env], ids=["raw_env", "env"])
@pytest.mark.parametrize("convert", NUMPY_INTS, ids=lambda c: getattr(c, "__name__", "array16"))
def test_numpy_integer_actions_are_accepted(make: Any, convert: Any) -> None:
    plain, numpy_env = make(rules="double_set"), make(rules="double_set")
    plain.reset(seed=4)
    numpy_env.reset(seed=4)
    for _ in range(30):
        a = legal_of(plain)[-1]
        plain.step(a)
        numpy_env.step(convert(a))
        for agent in plain.possible_agents:
            np.testing.assert_array_equal(
                plain.observe(agent)["observation"], numpy_env.observe(agent)["observation"]
            )
    assert plain.game.moves == numpy_env.game.moves


# ---------------------------------------------------------------------- actions through env()


@pytest.mark.parametrize(("num_players", "partnerships"), [(2, False), (3, False), (4, True)])
def test_wrapped_illegal_move_ends_match_with_penalty(num_players: int, partnerships: bool) -> None:
    env = started(bergen_env.env, moves=4, num_players=num_players, partnerships=partnerships)
    offender = env.agent_selection
    illegal = next(a for a in range(58) if a not in legal_of(env))
    env.step(illegal)  # PettingZoo's TerminateIllegalWrapper: warns, ends the match
    assert all(env.terminations.values())
    assert env.rewards == {a: (-1 if a == offender else 0) for a in env.possible_agents}
    finals = {}
    for agent in env.agent_iter():
        _, reward, term, _, _ = env.last()
        assert term
        finals[agent] = reward
        env.step(None)
    assert finals[offender] == -1
    assert not env.agents


@pytest.mark.parametrize("action", [-1, 58, 999, 1.5, None, "4"], ids=repr)
def test_wrapped_out_of_bounds_action_names_it_and_the_legal_ones(action: Any) -> None:
    env = started(bergen_env.env, moves=2)
    legal = legal_of(env)
    with pytest.raises(IllegalActionError) as info:
        env.step(action)
    message = str(info.value)
    assert repr(action) in message or f"action {action} " in message
    assert f"for {env.agent_selection}" in message
    assert_names_legal(message, legal)
    assert legal_of(env) == legal  # nothing changed


# ---------------------------------------------------------------------- options and deals


BAD_OPTIONS: list[tuple[dict[str, Any], str]] = [
    (dict(num_players=5), "num_players"),
    (dict(num_players=1), "num_players"),
    (dict(num_players="2"), "num_players"),
    (dict(num_players=2, partnerships=True), "partnerships"),
    (dict(num_players=4, partnerships="yes"), "partnerships"),
    (dict(rules="bogus"), "rules"),
    (dict(rules=3), "rules"),
    (dict(reserve=-1), "reserve"),
    (dict(hand_size=0), "hand_size"),
    (dict(hand_size=14, reserve=1), "hand_size"),
    (dict(num_players=4, hand_size=7, reserve=1), "reserve"),
    (dict(rules="double_set", num_players=4, hand_size=14, reserve=1), "hand_size"),
    (dict(sets=3), "sets"),
    (dict(lead="middle"), "lead"),
    (dict(blocked_rule="chinese"), "blocked_rule"),
    (dict(target=0), "target"),
    (dict(target=1.5), "target"),
    (dict(domino_points=-1), "domino_points"),
    (dict(blocked_points=-2), "blocked_points"),
    (dict(leftover_penalty=-1), "leftover_penalty"),
    (dict(end_caps=1), "end_caps"),
    (dict(voluntary_draw="yes"), "voluntary_draw"),
    (dict(spinner=True), "spinner"),
    (dict(reward="dense"), "reward"),
    (dict(max_hands=0), "max_hands"),
    (dict(max_hands=True), "max_hands"),
    (dict(max_hands=2.5), "max_hands"),
    (dict(render_mode="video"), "render_mode"),
    (dict(rules=Rules.preset("standard", num_players=3), num_players=4), "num_players"),
    (dict(rules=Rules.preset("standard", num_players=4), partnerships=True), "partnerships"),
]


@pytest.mark.parametrize("make", [raw_env, bergen_env.env], ids=["raw_env", "env"])
@pytest.mark.parametrize(("kwargs", "name"), BAD_OPTIONS, ids=lambda x: repr(x)[:60])
def test_bad_option_raises_value_error_naming_it(make: Any, kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(name)):
        make(**kwargs)


def test_given_rules_keep_their_seating() -> None:
    rules = Rules.preset("traditional", num_players=4, partnerships=True)
    env = raw_env(rules=rules, target=5)
    assert env.rules == rules.replace(target=5)
    assert env.possible_agents == [f"player_{i}" for i in range(4)]


def a_deal(rules: Rules, seed: int = 0) -> dict[str, list[str]]:
    """A valid deal (as tile text) taken from a seeded engine."""
    s = BergenState(rules, seed=seed)
    return {
        "hands": [[tile_str(t) for t in s.hand_tiles(seat)] for seat in range(rules.num_players)],
        "boneyard": [tile_str(t) for t in s.boneyard],
    }


def _no_double_deal() -> dict[str, list[str]]:
    singles = [tile_str(t) for t in range(28) if tile_str(t)[1] != tile_str(t)[3]]
    doubles = [f"[{n}|{n}]" for n in range(7)]
    return {"hands": [singles[:6], singles[6:12]], "boneyard": singles[12:] + doubles}


def _edit(change: Any) -> dict[str, Any]:
    deal = a_deal(Rules.preset("standard"))
    change(deal)
    return deal


BAD_DEALS: list[tuple[Any, str]] = [
    ("not a deal", "must be a dict"),
    (_edit(lambda d: d.update(extra=[])), "exactly the keys"),
    (_edit(lambda d: d["hands"].append([])), "3 hands, expected 2"),
    (_edit(lambda d: d["hands"][0].__setitem__(0, "[7|7]")), "bad tile"),
    (_edit(lambda d: d["hands"][1].__setitem__(2, "[3/4]")), "bad tile"),
    (_edit(lambda d: d["boneyard"].append(d["hands"][0].pop())), "seat 0 5 tiles"),
    (_edit(lambda d: d["boneyard"].pop()), "boneyard has 15 tiles, expected 16"),
    (_edit(lambda d: d["boneyard"].__setitem__(0, d["hands"][0][0])), "wrong counts"),
    (_no_double_deal(), "no seat a double"),
]


@pytest.mark.parametrize("make", [raw_env, bergen_env.env], ids=["raw_env", "env"])
@pytest.mark.parametrize(("deal", "problem"), BAD_DEALS, ids=[p for _, p in BAD_DEALS])
def test_bad_deal_raises_value_error_naming_it(make: Any, deal: Any, problem: str) -> None:
    env = make()
    with pytest.raises(InvalidDealError, match=re.escape(problem)):
        env.reset(seed=0, options={"deals": [a_deal(env.rules, 1), deal]})
    assert issubclass(InvalidDealError, ValueError)


def test_valid_deal_is_played() -> None:
    rules = Rules.preset("standard", num_players=3)
    deal = a_deal(rules, seed=7)
    env = raw_env(num_players=3)
    env.reset(seed=123, options={"deals": [deal]})
    for seat in range(3):
        assert [tile_str(t) for t in env.game.hand_tiles(seat)] == deal["hands"][seat]


@pytest.mark.parametrize("make", [raw_env, bergen_env.env], ids=["raw_env", "env"])
@pytest.mark.parametrize("option", ["options", "deal"])
def test_unknown_reset_option_is_ignored_with_one_warning(make: Any, option: str) -> None:
    """As Gymnasium's and PettingZoo's envs, reset ignores options it does not use; it says so
    once per env, naming the option (with the closest used one) and the options it uses."""
    env, plain = make(), make()
    plain.reset(seed=0)
    with pytest.warns(UserWarning, match=rf"ignores option\(s\) '{option}'.*\['deals'\]") as seen:
        env.reset(seed=0, options={option: True})
    assert len(seen) == 1 and ("did you mean 'deals'" in str(seen[0].message)) == (option == "deal")
    assert env.game.hand_tiles(0) == plain.game.hand_tiles(0)  # the option changed nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=0, options={option: True})  # warned once


# ---------------------------------------------------------------------- out-of-order calls


@pytest.mark.parametrize("make", [raw_env, bergen_env.env], ids=["raw_env", "env"])
def test_step_before_reset_is_an_error(make: Any) -> None:
    env = make()
    with pytest.raises((RuntimeError, AssertionError), match="reset"):
        env.step(0)


def test_raw_observe_before_reset_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        raw_env().observe("player_0")


def ended(make: Any) -> Any:
    """An env whose match just ended (target 1: the capped opening header wins)."""
    env = make(target=1)
    env.reset(seed=0)
    env.step(legal_of(env)[0])
    assert all(env.terminations.values())
    return env


@pytest.mark.parametrize("make", [raw_env, bergen_env.env], ids=["raw_env", "env"])
@pytest.mark.parametrize("action", [0, 57, np.int64(3)], ids=repr)
def test_action_for_a_dead_agent_is_an_error(make: Any, action: Any) -> None:
    env = ended(make)
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(action)


def test_raw_step_after_every_agent_is_done_is_an_error() -> None:
    env = ended(raw_env)
    while env.agents:
        env.step(None)
    for action in (None, 0):
        with pytest.raises(GameOverError, match="reset"):
            env.step(action)
    env.reset(seed=1)  # and a reset starts a fresh match
    assert env.agents and not any(env.terminations.values())


def test_engine_apply_action_after_terminal_raises_game_over() -> None:
    s = BergenState(Rules.preset("standard", target=1), seed=0)
    s.apply_action(s.legal_actions()[0])
    assert s.terminal
    for action in (0, 56, 57):
        with pytest.raises(GameOverError, match=f"action {action} cannot be applied"):
            s.apply_action(action)


@pytest.mark.parametrize("action", [-1, 58, 1.0, None, "0"], ids=repr)
def test_engine_apply_action_rejects_bad_ids(action: Any) -> None:
    s = BergenState(Rules.preset("standard"), seed=0)
    with pytest.raises(IllegalActionError, match=re.escape(repr(action))):
        s.apply_action(action)


def test_engine_apply_action_rejects_illegal_naming_legal_ones() -> None:
    s = BergenState(Rules.preset("standard"), seed=0)
    legal = s.legal_actions()
    wrong = next(a for a in range(58) if a not in legal)
    with pytest.raises(IllegalActionError, match=rf"action {wrong} .* is illegal") as info:
        s.apply_action(wrong)
    assert_names_legal(str(info.value), legal)


# ---------------------------------------------------------------------- typos in keywords


def _vector_envs() -> tuple[Any, Any]:
    vector = pytest.importorskip("bergen_env.vector")
    return vector.BergenVectorEnv, vector.BergenLearnerVectorEnv


TYPOS = [
    # (what a user calls, the keyword it means, keywords the list must hold besides it)
    (lambda: bergen_env.env(num_player=2), "num_players", ["max_hands", "render_mode", "sets"]),
    (lambda: raw_env(rewrad="points"), "reward", ["num_players", "target"]),
    (
        lambda: gymnasium.make("bergen_env/Bergen-v0", opponent="greedy"),
        "opponents",
        ["learner_seat", "illegal_action", "target"],
    ),
    (lambda: gymnasium.make("bergen_env/Bergen-v0", targt=5), "target", ["opponents"]),
    (lambda: _vector_envs()[0](num_envs=2, observation=False), "observations", ["copy", "lead"]),
    (lambda: _vector_envs()[1](num_envs=2, opponent="greedy"), "opponents", ["learner_seat"]),
    (lambda: Rules.preset("standard", hand_sise=5), "hand_size", ["reserve"]),
    (lambda: Rules.preset().replace(targt=5), "target", ["num_players"]),
]


@pytest.mark.parametrize(("call", "meant", "listed"), TYPOS)
def test_unknown_keyword_names_the_closest_and_lists_all(
    call: Any, meant: str, listed: list[str]
) -> None:
    with pytest.raises(InvalidOptionError) as err:
        call()
    message = str(err.value)
    assert f"(did you mean {meant!r}?)" in message
    valid = re.search(r"valid [a-z ]+s: (\[.*\])$", message)
    assert valid, message
    assert {meant, *listed} <= set(ast.literal_eval(valid.group(1)))


def test_unknown_agent_parameter_names_the_closest_and_lists_all() -> None:
    expected = (
        r"agent 'search:sampels=5': unknown parameter 'sampels' \(did you mean 'samples'\?\); "
        r"valid parameters: \['samples', "
    )
    with pytest.raises(ValueError, match=expected):
        make_agent("search:sampels=5")
    with pytest.raises(ValueError, match=r"unknown agent 'serach' \(did you mean 'search'\?\)"):
        make_agent("serach")
    with pytest.raises(ValueError, match=r"valid parameters: \[\]"):
        make_agent("greedy:samples=5")
