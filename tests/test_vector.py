"""The batched engine against the scalar reference, move by move (``bergen_env.vector``)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("numba")

from bergen_env import BergenState, Rules  # noqa: E402
from bergen_env.aec_env import raw_env  # noqa: E402
from bergen_env.agents.greedy import GreedyAgent  # noqa: E402
from bergen_env.errors import IllegalActionError, InvalidDealError, InvalidOptionError  # noqa: E402
from bergen_env.vector import BergenVectorEnv  # noqa: E402
from tests.scripted import random_deals  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEATINGS = [(2, False), (3, False), (4, False), (4, True)]
CONFIGS = (
    [
        (preset, dict(num_players=n, partnerships=p))
        for preset in ("standard", "traditional", "double_set")
        for n, p in SEATINGS
    ]
    + [
        ("standard", dict(num_players=2, target=5, reward="points")),  # end caps, many resets
        (
            "standard",
            dict(num_players=3, lead="highest", blocked_rule="american", voluntary_draw=True),
        ),
        ("traditional", dict(num_players=2, blocked_rule="pips", target=6, max_hands=2)),
        ("double_set", dict(num_players=2, target=8, reward="points")),
        (
            "double_set",
            dict(num_players=4, partnerships=True, blocked_rule="german", end_caps=True),
        ),
    ]
    + [  # Draw and Fives (RULES.md §9): free and rotating leads, counts, pips, single hands
        (preset, dict(num_players=n, partnerships=p))
        for preset in ("draw", "fives")
        for n, p in SEATINGS
    ]
    + [
        ("fives", dict(num_players=2, target=15, reward="points")),  # the target reached mid-hand
        ("fives", dict(num_players=3, lead="highest_any", out_scoring="pips", max_hands=2)),
        ("draw", dict(num_players=2, reward="points")),
        ("draw", dict(num_players=3, single_hand=False, target=40, lead="rotate")),
        ("standard", dict(num_players=2, lead="rotate", play_scoring="fives", end_caps=False)),
        (
            "traditional",
            dict(
                num_players=4,
                lead="highest_any",
                out_scoring="pips_fives",
                domino_points=0,
                blocked_points=0,
                leftover_penalty=0,
            ),
        ),  # fmt: skip
    ]
)


def _config_id(config: tuple) -> str:
    preset, kw = config
    return preset + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def record(env: BergenVectorEnv, steps: int, options: dict | None = None) -> dict:
    """Play ``env`` (greedy in even rows, random in odd rows) and record every step and the
    deal of every hand, per row and match."""
    obs, info = env.reset(options=options)
    n = env.num_envs
    matches: list[list[list[dict]]] = [[[env.current_deal(i)]] for i in range(n)]
    hands = env.hand_number.copy()
    log = [dict(obs=obs, cur=info["current_player"], state=env.state())]
    for _ in range(steps):
        greedy = env.greedy_actions()
        actions = np.where(np.arange(n) % 2 == 0, greedy, env.random_actions(obs["action_mask"]))
        obs, rewards, term, trunc, info = env.step(actions)
        log.append(
            dict(
                obs=obs,
                cur=info["current_player"],
                state=env.state(),
                actions=actions,
                rewards=rewards,
                term=term,
                trunc=trunc,
                scores=env.scores.copy(),
                hand=env.hand_number,
            )  # fmt: skip
        )
        now = env.hand_number
        for i in range(n):
            if term[i] or trunc[i]:
                matches[i].append([env.current_deal(i)])
            elif now[i] != hands[i]:
                matches[i][-1].append(env.current_deal(i))
        hands = now.copy()
    return dict(log=log, matches=matches)


def replay_row(rec: dict, i: int, preset: str, kwargs: dict, events: Counter | None = None) -> int:
    """Replay row ``i`` in the AEC env, with its recorded deals, comparing every step;
    return the number of matches finished. ``events`` counts how they ended: ``"tie"`` (no
    winner), ``"mid_hand"`` (the target reached during play), ``"hand_end"``."""
    kw = dict(kwargs)
    aec = raw_env(rules=preset, **kw)
    sides = aec.rules.num_sides
    log, matches = rec["log"], rec["matches"][i]
    k = 0
    aec.reset(options={"deals": matches[0]})
    for t, entry in enumerate(log):
        where = f"row {i}, step {t}, match {k}"
        seat = aec.game.current_player
        assert entry["cur"][i] == seat, where
        view = aec.observe(aec.agent_selection)
        np.testing.assert_array_equal(entry["obs"]["action_mask"][i], view["action_mask"], where)
        np.testing.assert_array_equal(entry["obs"]["observation"][i], view["observation"], where)
        np.testing.assert_array_equal(entry["state"][i], aec.state(), where)
        if t + 1 == len(log):
            break
        nxt = log[t + 1]
        aec.step(int(nxt["actions"][i]))
        rewards = [aec.rewards[a] for a in aec.possible_agents]
        np.testing.assert_allclose(nxt["rewards"][i], rewards, rtol=0, atol=1e-6, err_msg=where)
        done = any(aec.terminations.values()), any(aec.truncations.values())
        assert (bool(nxt["term"][i]), bool(nxt["trunc"][i])) == done, where
        if any(done):
            if events is not None and done[0]:
                game = aec.game
                results = game.hand_results
                if game.winner is None:
                    events["tie"] += 1
                elif not results or results[-1].hand != game.hand_number:
                    events["mid_hand"] += 1
                else:
                    events["hand_end"] += 1
            k += 1
            aec.reset(options={"deals": matches[k]})
        else:
            assert list(nxt["scores"][i, :sides]) == aec.game.scores, where
            assert aec.game.hand_number == nxt["hand"][i], where
    return k


@pytest.mark.parametrize(("preset", "kwargs"), CONFIGS, ids=[_config_id(c) for c in CONFIGS])
def test_batch_agrees_with_the_aec_env_at_every_step(preset: str, kwargs: dict) -> None:
    env = BergenVectorEnv(num_envs=2, rules=preset, seed=7, **kwargs)
    rec = record(env, 500)
    for i in range(env.num_envs):
        replay_row(rec, i, preset, kwargs)
    hands = sum(len(m) for row in rec["matches"] for m in row)
    assert hands > 6  # several hands were dealt and compared


@pytest.mark.parametrize(
    ("preset", "kwargs", "event"),
    [
        ("draw", dict(num_players=2), "tie"),  # a blocked single hand with equal pips
        ("draw", dict(num_players=4), "tie"),
        ("fives", dict(num_players=2), "mid_hand"),  # 61 reached by a count during play
        ("fives", dict(num_players=2), "hand_end"),  # 61 reached by a won hand's pips
    ],
)
def test_rare_match_ends_agree_with_the_aec_env(preset: str, kwargs: dict, event: str) -> None:
    rows = 48
    env = BergenVectorEnv(num_envs=rows, rules=preset, seed=11, **kwargs)
    rec = record(env, 400 if preset == "draw" else 700)
    wanted = []  # the rows whose matches ended that way, found from the rewards alone
    for i in range(rows):
        ends = [e["rewards"][i] for e in rec["log"][1:] if e["term"][i]]
        if event == "tie":
            ends = [r for r in ends if not r.any()]
        if ends:
            wanted.append(i)
    events: Counter = Counter()
    for i in wanted[:12]:
        replay_row(rec, i, preset, kwargs, events)
    assert events[event] >= 1, events


def test_auto_resets_are_compared_too() -> None:
    kwargs = dict(num_players=2, target=3)
    env = BergenVectorEnv(num_envs=3, rules="standard", seed=1, **kwargs)
    rec = record(env, 300)
    finished = [replay_row(rec, i, "standard", kwargs) for i in range(3)]
    assert min(finished) >= 3


@pytest.mark.parametrize("preset", ["standard", "double_set", "draw", "fives"])
def test_given_deals_are_played_then_random_ones(preset: str) -> None:
    rules = Rules.preset(preset, num_players=2)
    deals = [random_deals(rules, 3, seed) for seed in range(3)]
    env = BergenVectorEnv(num_envs=3, rules=rules, seed=0)
    env.reset(options={"deals": deals})
    for i in range(3):
        got = env.current_deal(i)
        assert got["boneyard"] == deals[i][0]["boneyard"]
        assert got["hands"] == [sorted(h) for h in deals[i][0]["hands"]]
    rec = record(env, 400, options={"deals": deals})
    for i in range(3):
        first = rec["matches"][i][0]
        assert [d["boneyard"] for d in first[:3]] == [d["boneyard"] for d in deals[i][: len(first)]]
        replay_row(rec, i, preset, dict(num_players=2))


@pytest.mark.parametrize("preset", ["standard", "draw", "fives"])
def test_same_seed_same_batch_and_rows_independent_of_n(preset: str) -> None:
    kw = dict(rules=preset, num_players=3)
    small = record(BergenVectorEnv(num_envs=2, seed=3, **kw), 200)
    again = record(BergenVectorEnv(num_envs=2, seed=3, **kw), 200)
    large = record(BergenVectorEnv(num_envs=5, seed=3, **kw), 200)
    other = record(BergenVectorEnv(num_envs=2, seed=4, **kw), 200)
    for a, b, c in zip(small["log"], again["log"], large["log"]):
        np.testing.assert_array_equal(a["obs"]["observation"], b["obs"]["observation"])
        np.testing.assert_array_equal(a["obs"]["observation"], c["obs"]["observation"][:2])
    assert small["matches"] == again["matches"] == [row for row in large["matches"][:2]]
    assert small["matches"] != other["matches"]


def test_reset_seed_restarts_the_streams() -> None:
    env = BergenVectorEnv(num_envs=3, seed=5)
    first, _ = env.reset()
    deals = [env.current_deal(i) for i in range(3)]
    env.step(env.random_actions(first["action_mask"]))
    again, _ = env.reset(seed=5)
    assert [env.current_deal(i) for i in range(3)] == deals
    np.testing.assert_array_equal(first["observation"], again["observation"])
    env.reset()  # no seed: the streams continue, new deals
    assert [env.current_deal(i) for i in range(3)] != deals


@pytest.mark.parametrize("preset", ["double_set", "draw", "fives"])
def test_greedy_actions_are_the_greedy_agent_s(preset: str) -> None:
    rules = Rules.preset(preset, num_players=3)
    env = BergenVectorEnv(num_envs=4, rules=rules, seed=2)
    rec = record(env, 150)
    agent = GreedyAgent()
    agent.reset(rules, 0, np.random.default_rng(0))
    checked = 0
    for i in range(0, 4, 2):  # the greedy rows: replay them and ask the scalar agent
        matches = rec["matches"][i]
        state, k = BergenState(rules, deals=matches[0]), 0
        for entry in rec["log"][1:]:
            view = state.public_view(state.current_player)
            assert agent.act(None, None, view) == entry["actions"][i]
            checked += 1
            state.apply_action(int(entry["actions"][i]))
            if entry["term"][i]:
                k += 1
                state = BergenState(rules, deals=matches[k])
    assert checked == 300


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidOptionError, match="num_envs"):
        BergenVectorEnv(num_envs=0)
    with pytest.raises(InvalidOptionError, match="reward"):
        BergenVectorEnv(num_envs=1, reward="win")
    with pytest.raises(InvalidOptionError, match="max_hands"):
        BergenVectorEnv(num_envs=1, max_hands=0)
    with pytest.raises(InvalidOptionError, match="domino_pts"):
        BergenVectorEnv(num_envs=1, domino_pts=3)
    env = BergenVectorEnv(num_envs=2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    obs, _ = env.reset()
    with pytest.raises(InvalidOptionError, match="one list of deals per match"):
        env.reset(options={"deals": [[]]})
    with pytest.raises(InvalidDealError):
        env.reset(options={"deals": [[{"hands": [[0]], "boneyard": []}], []]})
    with pytest.warns(UserWarning, match="ignores option.*'deal'"):
        env.reset(options={"deal": []})
    obs, _ = env.reset()
    actions = env.random_actions(obs["action_mask"])
    actions[1] = 57 if obs["action_mask"][1, 57] == 0 else 0
    with pytest.raises(IllegalActionError, match="match 1: action"):
        env.step(actions)
    with pytest.raises(IllegalActionError, match="shape"):
        env.step(actions[:1])
    with pytest.raises(IllegalActionError, match="match 0: action 99"):
        env.step(np.array([99, 0]))


def test_copy_false_returns_the_env_s_buffers_with_the_same_values() -> None:
    copied = BergenVectorEnv(num_envs=3, seed=2, num_players=4, partnerships=True)
    shared = BergenVectorEnv(num_envs=3, seed=2, num_players=4, partnerships=True, copy=False)
    a, _ = copied.reset()
    b, _ = shared.reset()
    first = b["observation"]
    for _ in range(60):
        np.testing.assert_array_equal(a["observation"], b["observation"])
        np.testing.assert_array_equal(a["action_mask"], b["action_mask"])
        a, ra, *_ = copied.step(copied.random_actions(a["action_mask"]))
        b, rb, *_ = shared.step(shared.random_actions(b["action_mask"]))
        np.testing.assert_array_equal(ra, rb)
    assert b["observation"] is first  # one buffer, overwritten in place
    state = shared.state()
    assert shared.state() is state  # copy=False: the env's buffer
    np.testing.assert_array_equal(state, copied.state())
    assert copied.state() is not copied.state()


def test_state_writes_into_a_given_array_and_names_a_wrong_one() -> None:
    env = BergenVectorEnv(num_envs=4, seed=3, num_players=3)
    with pytest.raises(RuntimeError, match="reset"):
        env.state()
    env.reset()
    rows = np.zeros((2, 4, env.single_state_space.shape[0]), dtype=np.float32)
    target = rows[1]
    assert env.state(out=target) is target
    np.testing.assert_array_equal(rows[1], env.state())
    assert not rows[0].any()
    for row in rows[1]:
        assert env.single_state_space.contains(row)
    for bad in (rows[1].astype(np.float64), rows[:, 0], rows[1][:3], [[0.0]]):
        with pytest.raises(ValueError, match="out must be a C-contiguous float32 array"):
            env.state(out=bad)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_bergen_env_does_not_import_numba() -> None:
    done = _run(
        "import sys, bergen_env, bergen_env.agents, bergen_env.single_agent\n"
        "from bergen_env.agents import make_agent\n"
        "make_agent('search')\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
    )
    assert done.returncode == 0, done.stderr


def test_a_missing_numba_is_a_clear_error_and_search_falls_back() -> None:
    done = _run(
        "import sys\n"
        "sys.modules['numba'] = None  # as if the [vector] extra were not installed\n"
        "from bergen_env.agents.search import SearchAgent\n"
        "assert not SearchAgent().compiled\n"
        "try:\n"
        "    SearchAgent(playouts='compiled')\n"
        "except ValueError as exc:\n"
        "    assert 'bergen_env[vector]' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
        "import bergen_env.vector\n"
    )
    assert done.returncode != 0
    assert "ImportError" in done.stderr and "bergen_env[vector]" in done.stderr


# ----------------------------------------------------------------- Gymnasium's conventions


def test_spaces_metadata_and_close_as_gymnasium_vector_envs() -> None:
    env = BergenVectorEnv(num_envs=3, rules="double_set", num_players=4, seed=0)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    assert env.single_action_space == gym.spaces.Discrete(65)
    assert env.action_space.shape == (3,)
    obs, _ = env.reset()
    for i in range(3):
        row = {key: value[i] for key, value in obs.items()}
        assert env.single_observation_space.contains(row)
    assert env.observation_space.contains(obs)
    assert set(BergenVectorEnv(2, observations=False).single_observation_space) == {"action_mask"}
    env.close()
    env.close()  # closing twice is allowed
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()


def test_batched_helpers_take_any_array_like() -> None:
    torch = pytest.importorskip("torch")
    env = BergenVectorEnv(num_envs=4, seed=0)
    obs, _ = env.reset(seed=3)
    masks = obs["action_mask"]
    expected = env.random_actions(masks)
    for given in (masks.tolist(), masks.astype(bool), torch.from_numpy(masks), masks.astype(int)):
        env.reset(seed=3)
        np.testing.assert_array_equal(env.random_actions(given), expected)
    env.reset(seed=3)
    obs, *_ = env.step(torch.from_numpy(expected))  # actions as a tensor or a list too
    env.reset(seed=3)
    obs_list, *_ = env.step(expected.tolist())
    np.testing.assert_array_equal(obs["observation"], obs_list["observation"])


@pytest.mark.parametrize(
    ("masks", "match"),
    [
        (np.ones((3, 58), dtype=np.int8), r"shape \(4, 58\), got int8 \(3, 58\)"),
        (np.ones((4, 58)), "0/1 or bool values"),
        (np.full((4, 58), 2), "0/1 or bool values"),
        (np.zeros((4, 58), dtype=np.int8), "row 0 has no legal action"),
        ([[1, 0], [1]], "masks must be array-like"),
    ],
)
def test_batched_helpers_refuse_bad_masks_in_one_line(masks: object, match: str) -> None:
    env = BergenVectorEnv(num_envs=4, seed=0)
    env.reset()
    with pytest.raises(ValueError, match=match) as err:
        env.random_actions(masks)
    assert "\n" not in str(err.value)


def test_blocked_winner_on_packed_tallies_matches_the_rules() -> None:
    """The compiled winner of a blocked hand, each per-side tally packed into one integer
    (``kernels.side_field``), is ``scoring.blocked_winner``'s under every blocked rule, ties
    included, up to the largest tallies two sets allow."""
    from bergen_env.rules import BLOCKED_RULES
    from bergen_env.scoring import blocked_winner
    from bergen_env.vector import kernels as K

    def packed(values: list[int]) -> int:
        return sum(v << (K.SIDE_BITS * side) for side, v in enumerate(values))

    rng = np.random.default_rng(0)
    for _ in range(2000):
        sides = int(rng.integers(2, 5))
        small = rng.random() < 0.5  # few distinct values: many ties
        doubles = [int(rng.integers(0, 3 if small else 15)) for _ in range(sides)]
        pips = [int(rng.integers(0, 4 if small else K.MAX_PIPS + 1)) for _ in range(sides)]
        lowest = [int(rng.integers(0, 3)) if d else 7 for d in doubles]
        tallies = list(zip(doubles, pips, lowest))
        for k, rule in enumerate(BLOCKED_RULES):
            expected = blocked_winner(rule, tallies)
            got = K.blocked_winner(k, packed(doubles), packed(pips), packed(lowest), sides)
            assert got == (-1 if expected is None else expected), (rule, tallies)
