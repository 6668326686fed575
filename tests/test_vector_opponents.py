"""The batched learner env's opponents (``bergen_env.agents.batch_opponents``): the scalar agents'
decisions on the same positions, mixed per seat, drawn per match, and named errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from bergen_env import Rules  # noqa: E402
from bergen_env.agents import PolicyAgent, make_agent  # noqa: E402
from bergen_env.agents.batch_opponents import (  # noqa: E402
    FUNCTION,
    HEURISTIC,
    batch_opponent,
)
from bergen_env.errors import IllegalActionError, InvalidOptionError  # noqa: E402
from bergen_env.observation import OBS_SIZE  # noqa: E402
from bergen_env.policy_file import save_policy_file  # noqa: E402
from bergen_env.single_agent import BergenSingleAgentEnv  # noqa: E402
from bergen_env.vector import BergenLearnerVectorEnv, BergenVectorEnv  # noqa: E402
from tests.scripted import random_deals  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ROOT / "policies"
#: Deals given per match; a longer match is truncated in both envs.
HANDS = 40


def random_policy_file(path: Path, rules: Rules, seed: int, scorer: bool = False) -> str:
    """A policy file of a random network for ``rules`` (with an action scorer if asked)."""
    rng = np.random.default_rng(seed)
    sizes = [OBS_SIZE, 64, 64, rules.num_actions]
    w = [rng.normal(0, 1 / np.sqrt(a), (b, a)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]
    b = [rng.normal(0, 0.1, n).astype(np.float32) for n in sizes[1:]]
    extra = None
    if scorer:
        from bergen_env.action_features import NUM_ACTION_FEATURES

        s_sizes = [64 + NUM_ACTION_FEATURES, 16, 1]
        extra = (
            [rng.normal(0, 0.3, (o, i)).astype(np.float32) for i, o in zip(s_sizes, s_sizes[1:])],
            [np.zeros(o, dtype=np.float32) for o in s_sizes[1:]],
            ["relu", "identity"],
        )
    return str(save_policy_file(path, rules, w, b, ["relu", "relu", "identity"], scorer=extra))


def _policy(name: str) -> str:
    return f"policy:{POLICIES / name}.safetensors"


#: (preset, rule options, learner seat, opponents per seat after the learner, reward).
#: ``{random}``/``{scorer}``/``{mirror}``: a random network's policy file for the rules.
CASES = [
    ("standard", dict(num_players=2), 1, ["greedy"], "match"),
    ("traditional", dict(num_players=3), 2, ["greedy"], "points"),
    ("double_set", dict(num_players=4, partnerships=True), 0, ["greedy"], "match"),
    ("fives", dict(num_players=2), 0, ["greedy"], "points"),
    ("fives", dict(num_players=3), 1, ["greedy"], "match"),
    ("draw", dict(num_players=4, partnerships=True), 3, ["greedy"], "match"),
    ("draw", dict(num_players=2), 1, ["greedy"], "points"),
    ("standard", dict(num_players=2), 1, ["heuristic"], "match"),
    ("standard", dict(num_players=2), 0, [_policy("expert_2p")], "points"),
    ("standard", dict(num_players=3), 2, ["tuned", _policy("standard_3p")], "match"),
    (
        "standard",
        dict(num_players=4, partnerships=True),
        3,
        ["heuristic:threat=1.5,partner=0.8", _policy("partners_4p"), "tuned"],
        "points",
    ),
    ("standard", dict(num_players=2, voluntary_draw=True, reserve=0), 0, ["heuristic"], "match"),
    ("standard", dict(num_players=4), 1, ["greedy", "{scorer}", "heuristic"], "match"),
    ("traditional", dict(num_players=4, partnerships=True), 0, ["tuned"], "match"),
    ("double_set", dict(num_players=3), 1, ["heuristic", "{mirror}"], "points"),
    (
        "double_set",
        dict(num_players=4, partnerships=True),
        2,
        ["tuned", "{random}", "tuned"],
        "match",
    ),
    ("fives", dict(num_players=2), 0, ["tuned"], "points"),
    ("fives", dict(num_players=2), 1, [_policy("fives_2p")], "match"),
    ("fives", dict(num_players=3), 0, ["heuristic", "tuned"], "match"),
    (
        "fives",
        dict(num_players=4, partnerships=True),
        1,
        ["tuned", "{scorer}", "heuristic"],
        "match",
    ),
    ("draw", dict(num_players=2), 1, [_policy("draw_2p")], "match"),
    ("draw", dict(num_players=3), 2, ["tuned", "heuristic"], "points"),
    ("draw", dict(num_players=4), 0, ["tuned", "greedy", "{mirror}"], "match"),
    ("draw", dict(num_players=4, partnerships=True), 3, ["heuristic"], "match"),
]


def _id(case: tuple) -> str:
    preset, kw, seat, opponents, reward = case
    seating = f"{kw['num_players']}p" + ("-partners" if kw.get("partnerships") else "")
    names = "+".join(o.rpartition("/")[2].partition(":")[0] for o in opponents)
    return f"{preset}-{seating}-{names}"


def _resolved(opponents: list[str], rules: Rules, tmp_path: Path) -> list[str]:
    out = []
    for k, spec in enumerate(opponents):
        if spec.startswith("{"):
            path = random_policy_file(tmp_path / f"net{k}", rules, k, scorer=spec == "{scorer}")
            spec = f"policy:path={path},mirror=true" if spec == "{mirror}" else f"policy:{path}"
        out.append(spec)
    return out


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_batched_opponents_play_the_scalar_agents_moves(case: tuple, tmp_path: Path) -> None:
    """Same deals, same learner moves: every observation, mask, reward and end of the batched
    env is the scalar env's with the scalar agents in the other seats, so every opponent
    decision on the way was the same (a different one changes the next observation)."""
    preset, kw, seat, opponents, reward = case
    rules = Rules.preset(preset, **kw)
    opponents = _resolved(opponents, rules, tmp_path)
    rows = 16 if rules.single_hand else 6  # a Draw match is one short hand
    deals = [random_deals(rules, HANDS, seed) for seed in range(rows)]
    env = BergenLearnerVectorEnv(
        num_envs=rows,
        opponents=opponents,
        learner_seat=seat,
        rules=rules,
        reward=reward,
        seed=0,
        max_hands=HANDS,
    )
    obs, infos = env.reset(options={"deals": deals})
    singles = []
    live = [True] * rows
    for i in range(rows):
        single = BergenSingleAgentEnv(
            rules=rules,
            num_players=rules.num_players,
            partnerships=rules.partnerships,
            opponents=[make_agent(spec) for spec in opponents],
            learner_seat=seat,
            reward=reward,
            max_hands=HANDS,
        )
        singles.append(single)
        try:
            o, _ = single.reset(seed=i, options={"deals": deals[i]})
        except InvalidOptionError:  # the deals end the match before the learner's decision
            live[i] = False  # (the batched env starts another match there)
            continue
        np.testing.assert_array_equal(obs[i], o)
        np.testing.assert_array_equal(infos["action_mask"][i], single.action_masks())
    pick = np.random.default_rng(0)
    compared = 0
    while any(live):
        actions = np.array([pick.choice(np.flatnonzero(row)) for row in infos["action_mask"]])
        obs, rewards, term, trunc, infos = env.step(actions)
        for i in np.flatnonzero(live):
            o, r, t, tr, _ = singles[i].step(int(actions[i]))
            compared += 1
            assert rewards[i] == pytest.approx(r, abs=1e-6)
            assert (term[i], trunc[i]) == (t, tr)
            if t or tr:
                live[i] = False
            else:
                np.testing.assert_array_equal(obs[i], o)
                np.testing.assert_array_equal(infos["action_mask"][i], singles[i].action_masks())
    assert compared > 30


@pytest.mark.parametrize("name", ["standard_2p", "expert_2p"])
def test_policy_act_batch_is_act_row_by_row(name: str) -> None:
    rules = Rules.preset("standard", num_players=2)
    env = BergenVectorEnv(num_envs=256, rules=rules, seed=3)
    obs, _ = env.reset()
    for _ in range(5):
        obs, *_ = env.step(env.random_actions(obs["action_mask"]))
    agent = PolicyAgent(POLICIES / f"{name}.safetensors")
    batch = agent.act_batch(obs["observation"], obs["action_mask"])
    rows = [agent.act(o, m, None) for o, m in zip(obs["observation"], obs["action_mask"])]
    assert batch.tolist() == rows


def test_strings_resolve_to_compiled_kinds_and_functions() -> None:
    rules = Rules.preset("fives", num_players=3)
    tuned = batch_opponent("tuned", rules)
    assert tuned.code == HEURISTIC
    agent = make_agent("tuned")
    agent.reset(rules, 0, np.random.default_rng(0))
    assert tuned.weights.tolist() == list(agent.weights.values())
    assert batch_opponent("heuristic:threat=2", rules).weights[0] == 2.0
    policy = batch_opponent(_policy("standard_2p"), Rules.preset("standard", num_players=2))
    assert policy.code == FUNCTION and policy.function is not None


@pytest.mark.parametrize(
    ("spec", "kwargs", "match"),
    [
        ("search:samples=4", {}, "kind 'search'.*cannot play a batch.*random, greedy, heuristic"),
        ("best_response:policy=heuristic", {}, "best_response"),
        ("nosuch", {}, "unknown agent 'nosuch'"),
        ("heuristic:threat=-1", {}, "threat"),
        ("tuned", dict(target=31), "no tuned heuristic weights"),
        (_policy("standard_2p"), dict(num_players=3), "standard_2p.safetensors.*2 players"),
        ("policy:nowhere.safetensors", {}, "nowhere.safetensors"),
    ],
)
def test_bad_opponents_are_named(spec: str, kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidOptionError, match=match):
        BergenLearnerVectorEnv(num_envs=2, opponents=spec, **kwargs)


def test_bad_odds_and_entries_are_named() -> None:
    with pytest.raises(InvalidOptionError, match="needs 1 or 1 entries"):
        BergenLearnerVectorEnv(num_envs=2, opponents=["random", "greedy"])
    with pytest.raises(InvalidOptionError, match="non-empty list"):
        BergenLearnerVectorEnv(num_envs=2, opponents=[[]])
    env = BergenLearnerVectorEnv(num_envs=2, opponents=[["random", "greedy"]])
    for weights in ([[1.0]], [[1, -1]], [[0, 0]], [[1, np.nan]], [[1, 2], [1, 2]]):
        with pytest.raises(InvalidOptionError, match="weights"):
            env.set_opponents([["random", "greedy"]], weights=weights)


def test_a_function_s_illegal_move_names_it() -> None:
    def last_action(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return np.full(len(masks), masks.shape[1] - 1)

    env = BergenLearnerVectorEnv(num_envs=4, opponents=[["heuristic", last_action]], seed=0)
    with pytest.raises(IllegalActionError, match="opponent 'test_a_function.*last_action'"):
        env.reset()
        for _ in range(50):
            env.step(np.array([np.flatnonzero(m)[0] for m in env.batch.masks]))


def _first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return masks.argmax(axis=1)


def _run(env: BergenLearnerVectorEnv, steps: int) -> list[np.ndarray]:
    """The opponents of every match started within ``steps`` steps (first-legal learner)."""
    obs, infos = env.reset()
    seen = [env.seat_opponents.copy()]
    for _ in range(steps):
        actions = infos["action_mask"].argmax(axis=1)
        obs, rewards, term, trunc, infos = env.step(actions)
        if (term | trunc).any():
            seen.append(env.seat_opponents[term | trunc].copy())
    return seen


def test_each_match_draws_its_opponents_by_the_odds_reproducibly() -> None:
    pool = [["greedy", "heuristic", _first_legal], "tuned"]

    def run() -> tuple[list[str], np.ndarray]:
        env = BergenLearnerVectorEnv(
            num_envs=64, num_players=3, opponents=pool, seed=5, max_hands=1
        )
        env.set_opponents(pool, weights=[[1, 2, 5], None])
        return [o.name for o in env.opponent_roster], np.concatenate(_run(env, 60))

    names, seen = run()
    assert names == ["greedy", "heuristic", "_first_legal", "tuned"]
    assert len(seen) > 1000 and (seen[:, 2] == 3).all()
    share = np.bincount(seen[:, 1], minlength=4)[:3] / len(seen)
    np.testing.assert_allclose(share, [1 / 8, 2 / 8, 5 / 8], atol=0.05)
    np.testing.assert_array_equal(run()[1], seen)


def test_new_opponents_play_from_the_next_match_on() -> None:
    env = BergenLearnerVectorEnv(num_envs=32, opponents="greedy", seed=1)
    obs, infos = env.reset()
    env.set_opponents("heuristic")
    assert [o.name for o in env.opponent_roster] == ["heuristic", "greedy"]
    assert (env.seat_opponents[:, 1] == 1).all()  # the running matches keep greedy
    started = np.zeros(32, dtype=bool)
    for _ in range(400):
        obs, rewards, term, trunc, infos = env.step(infos["action_mask"].argmax(axis=1))
        started |= term | trunc
        assert (env.seat_opponents[started, 1] == 0).all()
        assert (env.seat_opponents[~started, 1] == 1).all()
        if started.all():
            break
    assert started.all()
    env.set_opponents(["policy:" + str(POLICIES / "standard_2p.safetensors")])
    assert [o.name for o in env.opponent_roster][1:] == ["heuristic"]  # greedy is gone


def test_opponent_agents_and_batch_opponents_are_accepted(tmp_path: Path) -> None:
    rules = Rules.preset("standard", num_players=3)
    net = PolicyAgent(random_policy_file(tmp_path / "net", rules, 0))
    env = BergenLearnerVectorEnv(
        num_envs=8, rules=rules, opponents=[net, batch_opponent("tuned", rules)], seed=0
    )
    obs, infos = env.reset()
    for _ in range(30):
        obs, rewards, term, trunc, infos = env.step(infos["action_mask"].argmax(axis=1))
    assert env.opponent_roster[0].function == net.act_batch


def test_a_ppo_snapshot_plays_a_batch_as_it_plays_a_row() -> None:
    """``training``'s ``ppo`` agent (a frozen MaskablePPO network) as a batched opponent: the
    same actions as its ``act`` row by row, by the agent or by its string."""
    pytest.importorskip("sb3_contrib")
    from bergen_env.training.ppo_policies import load_policy

    path = POLICIES / "standard_2p.zip"  # this project's own file
    agent = load_policy(path, trust_pickle=True)
    rules = Rules.preset("standard", num_players=2)
    env = BergenVectorEnv(num_envs=128, rules=rules, seed=4)
    obs, _ = env.reset()
    for _ in range(6):
        obs, *_ = env.step(env.random_actions(obs["action_mask"]))
    batch = agent.act_batch(obs["observation"], obs["action_mask"])
    rows = [agent.act(o, m, None) for o, m in zip(obs["observation"], obs["action_mask"])]
    assert batch.tolist() == rows
    by_name = batch_opponent(f"ppo:path={path},trust_pickle=true", rules)
    assert by_name.code == FUNCTION
    learner = BergenLearnerVectorEnv(num_envs=8, rules=rules, opponents=[agent], seed=0)
    obs, infos = learner.reset()
    for _ in range(20):
        obs, rewards, term, trunc, infos = learner.step(infos["action_mask"].argmax(axis=1))


def test_opponents_are_told_apart_by_identity_and_strings_by_text() -> None:
    a, b = make_agent("heuristic:threat=2"), make_agent("heuristic:threat=3")
    env = BergenLearnerVectorEnv(num_envs=2, opponents=[[a, b, "greedy", a, "greedy"]])
    assert [o.weights[0] for o in env.opponent_roster[:2]] == [2.0, 3.0]
    assert len(env.opponent_roster) == 3
    env.set_opponents("heuristic")  # before any match: nothing old is kept
    assert [o.name for o in env.opponent_roster] == ["heuristic"]
