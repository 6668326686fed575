"""``vec_env: batched``: the SB3 VecEnv adapter over the batched env, its exact state, the
self-play league (prioritized fictitious self-play) and the config checks."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")

import torch  # noqa: E402
from sb3_contrib import MaskablePPO  # noqa: E402
from sb3_contrib.common.maskable.utils import get_action_masks  # noqa: E402

from bergen_env.observation import OBS_SIZE  # noqa: E402
from bergen_env.training.batched_env import BatchedVecEnv, check_batched  # noqa: E402
from bergen_env.training.config import ConfigError, TrainConfig  # noqa: E402
from bergen_env.training.league import FrozenPolicy, League, LeagueSeat  # noqa: E402
from bergen_env.training.ppo_policies import PPOAgent  # noqa: E402


def config(**kw) -> TrainConfig:
    base = dict(n_envs=6, opponents=["random", "greedy"], reward="match", seed=3)
    return TrainConfig(**{**base, **kw})


def legal_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def run(env: BatchedVecEnv, steps: int, seed: int = 0) -> list:
    """``steps`` random legal steps; everything the env returned."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        obs, rewards, dones, infos = env.step(legal_actions(get_action_masks(env), rng))
        out.append((obs, rewards, dones, [dict(i) for i in infos], env.action_masks()))
    return out


def same(a: list, b: list) -> bool:
    for (o1, r1, d1, i1, m1), (o2, r2, d2, i2, m2) in zip(a, b, strict=True):
        if not (np.array_equal(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2)):
            return False
        if not np.array_equal(m1, m2) or [sorted(i) for i in i1] != [sorted(i) for i in i2]:
            return False
    return True


def test_the_adapter_keeps_the_vecenv_contract() -> None:
    env = BatchedVecEnv(config(max_hands=2))  # short matches: terminations and truncations
    obs = env.reset()
    assert obs.shape == (6, OBS_SIZE) and obs.dtype == np.float32
    masks = get_action_masks(env)  # sb3-contrib's own reader
    assert masks.shape == (6, env.action_space.n) and masks.dtype == np.bool_
    assert masks.any(axis=1).all()
    seen_truncated = seen_terminated = 0
    rng = np.random.default_rng(0)
    previous = obs
    for _ in range(300):
        obs, rewards, dones, infos = env.step(legal_actions(get_action_masks(env), rng))
        assert obs.shape == (6, OBS_SIZE) and rewards.shape == dones.shape == (6,)
        assert obs is not previous and not np.shares_memory(obs, previous)  # SB3 keeps both
        previous = obs
        assert len(infos) == 6
        for i, info in enumerate(infos):
            if not dones[i]:
                assert info == {}
                continue
            assert info["terminal_observation"].shape == (OBS_SIZE,)
            assert set(info["episode"]) == {"r", "l", "t"} and info["episode"]["l"] >= 1
            if info["TimeLimit.truncated"]:
                seen_truncated += 1
                assert rewards[i] == 0.0  # the match reward of a cut match
            else:
                seen_terminated += 1
                assert info["episode"]["r"] == pytest.approx(rewards[i])  # one reward a match
    assert seen_truncated and seen_terminated
    assert env.env_is_wrapped(object) == [False] * 6
    with pytest.raises(AttributeError, match="no per-env method 'get_state'"):
        env.env_method("get_state")


def test_rows_are_split_among_the_opponents() -> None:
    env = BatchedVecEnv(config(n_envs=7, num_players=3, opponents=["random", "greedy"]))
    assert [b.num_envs for b in env.blocks] == [4, 3]
    assert [b.opponents for b in env.blocks] == [["random", "greedy"], ["greedy", "random"]]
    league = BatchedVecEnv(config(n_envs=8, selfplay_start=0, selfplay_prob=0.25))
    assert [b.num_envs for b in league.blocks] == [3, 3, 1, 1]
    assert [s is not None for s in league.league_seats] == [False, False, True, True]


def test_state_dict_continues_step_for_step() -> None:
    cfg = config(reward="win", selfplay_start=0, selfplay_prob=0.5)
    env = BatchedVecEnv(cfg)
    env.seed(5)
    env.reset()
    run(env, 37)
    state = env.state_dict()
    after = run(env, 60, seed=1)
    other = BatchedVecEnv(cfg)
    other.reset()  # another position; the state replaces it
    assert other.load_state_dict(state)
    assert same(run(other, 60, seed=1), after)
    assert not BatchedVecEnv(config(n_envs=8)).load_state_dict(state)  # another n_envs


def test_win_reward_sums_to_the_match_reward() -> None:
    def episodes(reward: str) -> list[tuple[int, float]]:
        env = BatchedVecEnv(config(reward=reward, n_envs=4, opponents=["greedy"]))
        env.reset()
        out = []
        for _, _, dones, infos, _ in run(env, 200):
            out += [(i, infos[i]["episode"]["r"]) for i in np.flatnonzero(dones)]
        return out

    match, win = episodes("match"), episodes("win")
    assert len(match) > 20
    assert [i for i, _ in match] == [i for i, _ in win]
    assert [r for _, r in win] == pytest.approx([r for _, r in match], abs=1e-5)


def test_check_batched_names_what_it_cannot_play() -> None:
    with pytest.raises(ConfigError, match=r"'heuristic' has no batched version .*vec_env: subproc"):
        check_batched(config(opponents=["random", "heuristic"]), "c.yaml")
    with pytest.raises(ConfigError, match=r"'shaped' is not a reward of the batched env"):
        check_batched(config(reward="shaped"), "c.yaml")
    with pytest.raises(ConfigError, match=r"key 'n_envs'"):
        check_batched(config(n_envs=2, opponents=["random", "greedy", "random"]), "c.yaml")
    check_batched(config(), "c.yaml")


def test_a_config_the_batched_env_cannot_run_fails_before_the_run_folder(tmp_path) -> None:
    from bergen_env.training.train import main

    run = tmp_path / "run"
    with pytest.raises(ConfigError, match=r"quick.yaml: key 'opponents': 'heuristic' has no batch"):
        main(["--config", "configs/quick.yaml", "--set", "opponents=[heuristic]", "--run-dir",
              str(run)])  # fmt: skip
    assert not run.exists()


# ---------------------------------------------------------------------- the league


def test_pfsp_draws_the_snapshots_that_still_win_most() -> None:
    league = League(pool_size=3, exponent=2.0, seed=0)
    assert league.draw() == -1
    for taken in (100, 200, 300, 400):  # the oldest leaves
        league.add(taken, None)  # type: ignore[arg-type]
    assert league.steps == [200, 300, 400]
    league.record(200, np.ones(40))  # beaten every time
    league.record(300, np.full(40, 0.5))
    league.record(400, np.zeros(40))  # still wins every time
    league.record(100, np.zeros(5))  # dropped: not booked
    w = league.weights()
    assert w[0] < w[1] < w[2] and w.sum() == pytest.approx(1.0)
    draws = np.bincount([league.draw() for _ in range(3000)], minlength=3) / 3000
    assert draws == pytest.approx(w, abs=0.03)
    uniform = League(pool_size=3, exponent=0.0, seed=0)
    for taken in (1, 2):
        uniform.add(taken, None)  # type: ignore[arg-type]
    uniform.record(1, np.ones(10))
    assert uniform.weights() == pytest.approx([0.5, 0.5])
    # the results and the draw stream come back
    state = league.state()
    copy = League(pool_size=3, exponent=2.0, seed=9)
    for taken in (200, 300, 400):
        copy.add(taken, None)  # type: ignore[arg-type]
    copy.load_state(state)
    assert [copy.draw() for _ in range(50)] == [league.draw() for _ in range(50)]


def test_frozen_policy_plays_as_the_ppo_agent() -> None:
    cfg = config(n_envs=4, net_arch=[32], opponents=["random"])
    env = BatchedVecEnv(cfg)
    model = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu")
    frozen = FrozenPolicy(model.policy)
    agent = PPOAgent.from_model(model, env.blocks[0].rules)
    obs = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(20):
        masks = env.action_masks()
        mine = frozen(obs, masks.astype(np.int8))
        theirs = [agent.act(o, m.astype(np.int8), None) for o, m in zip(obs, masks)]
        assert mine.tolist() == theirs and masks[np.arange(4), mine].all()
        obs, *_ = env.step(legal_actions(masks, rng))
    masks = env.action_masks().astype(np.int8)
    before = frozen(obs, masks)
    with torch.no_grad():  # frozen: later training of the model does not move it
        for p in model.policy.parameters():
            p.mul_(-3.0)
    assert frozen(obs, masks).tolist() == before.tolist()
    assert all(not p.requires_grad for p in frozen.parameters())


def test_a_league_seat_plays_random_legal_moves_before_the_first_snapshot() -> None:
    seat = LeagueSeat(seed=0)
    masks = np.zeros((500, 10), dtype=np.int8)
    masks[:, [2, 5, 7]] = 1
    picks = seat(np.zeros((500, OBS_SIZE), np.float32), masks)
    assert set(picks.tolist()) == {2, 5, 7}
    assert np.bincount(picks, minlength=10)[[2, 5, 7]].min() > 120


def test_device_auto_is_cuda_only_where_torch_sees_a_gpu(monkeypatch, tmp_path) -> None:
    from bergen_env.training.train import check_config, resolve_device

    assert resolve_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ConfigError, match=r"key 'device': 'cuda' but torch sees no GPU"):
        check_config(config(device="cuda"), "c.yaml")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"


@pytest.mark.parametrize(
    "players", [dict(num_players=3), dict(num_players=4, partnerships=True, partner="learner")]
)
def test_the_league_plays_snapshots_with_3_and_4_players(players: dict) -> None:
    cfg = config(n_envs=8, selfplay_start=0, selfplay_prob=0.5, reward="match", **players)
    env = BatchedVecEnv(cfg)
    model = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu")
    env.reset()
    env.add_snapshot(100, FrozenPolicy(model.policy))
    env.add_snapshot(200, FrozenPolicy(model.policy))
    env.draw_league()
    seats = [s for s in env.league_seats if s is not None]
    assert len(seats) == 2 and all(s.taken in (100, 200) for s in seats)
    if cfg.partner == "learner":  # every block's partner seat plays the newest snapshot
        assert all(b.opponents[1] is env.newest for b in env.blocks)
        assert env.newest.taken == 200
    run(env, 300)
    assert sum(env.league.games) > 0  # the league's matches are booked to their snapshots
    assert 0 <= sum(env.league.wins) <= sum(env.league.games)
