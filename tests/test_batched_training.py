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
from bergen_env.training.league import FrozenPolicy, League  # noqa: E402
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


def test_every_match_draws_its_opponents_from_the_list() -> None:
    env = BatchedVecEnv(
        config(n_envs=900, num_players=3, opponents=["random", "greedy", "heuristic"])
    )
    assert [o.name for o in env.env.opponent_roster] == ["random", "greedy", "heuristic"]
    env.reset()
    seats = env.env.seat_opponents[:, 1:].copy()
    for s in range(2):  # each seat on its own, each candidate about a third of the matches
        share = np.bincount(seats[:, s], minlength=3) / len(seats)
        assert share == pytest.approx([1 / 3] * 3, abs=0.05)
    assert (seats[:, 0] != seats[:, 1]).mean() == pytest.approx(2 / 3, abs=0.05)
    ended = np.zeros(900, dtype=bool)
    for _, _, dones, _, _ in run(env, 60):
        ended |= dones
    assert ended.any() and (env.env.seat_opponents[ended, 1:] != seats[ended]).any()  # drawn anew


def test_state_dict_continues_step_for_step(tmp_path) -> None:
    from bergen_env.training.ppo_policies import save_policy
    from bergen_env.training.selfplay import snapshot_path

    cfg = config(reward="win", selfplay_start=0, selfplay_prob=0.5, pool_size=1, net_arch=[16])
    env = BatchedVecEnv(cfg, tmp_path)
    model = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu")
    save_policy(model, snapshot_path(tmp_path, 100), env.env.rules)
    env.seed(5)
    env.reset()
    env.add_snapshot(100, FrozenPolicy.from_file(snapshot_path(tmp_path, 100)))
    run(env, 37)
    with torch.no_grad():
        for p in model.policy.parameters():
            p.mul_(-2.0)
    save_policy(model, snapshot_path(tmp_path, 200), env.env.rules)
    env.add_snapshot(200, FrozenPolicy.from_file(snapshot_path(tmp_path, 200)))
    run(env, 3)
    assert env.league.steps == [200] and 100 in env._roster_taken  # dropped, still playing
    state = env.state_dict()
    after = run(env, 60, seed=1)
    other = BatchedVecEnv(cfg, tmp_path)  # as a resumed run: the league's snapshots, then the state
    other.reset()  # another position; the state replaces it
    other.add_snapshot(200, FrozenPolicy.from_file(snapshot_path(tmp_path, 200)))
    assert other.load_state_dict(state)
    assert same(run(other, 60, seed=1), after)
    assert other.league.state() == env.league.state()
    assert not BatchedVecEnv(config(n_envs=8)).load_state_dict(state)  # another n_envs
    assert not BatchedVecEnv(cfg).load_state_dict(state)  # snapshot 100's file out of reach


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
    with pytest.raises(
        ConfigError, match=r"'search' cannot play in the batched env .*vec_env: subp"
    ):
        check_batched(config(opponents=["random", "search"]), "c.yaml")
    with pytest.raises(ConfigError, match=r"'shaped' is not a reward of the batched env"):
        check_batched(config(reward="shaped"), "c.yaml")
    check_batched(config(opponents=["random", "greedy", "heuristic", "tuned"]), "c.yaml")


def test_a_config_the_batched_env_cannot_run_fails_before_the_run_folder(tmp_path) -> None:
    from bergen_env.training.train import main

    run = tmp_path / "run"
    with pytest.raises(ConfigError, match=r"quick.yaml: key 'opponents': 'search' cannot play in"):
        main(["--config", "configs/quick.yaml", "--set", "opponents=[search]", "--run-dir",
              str(run)])  # fmt: skip
    assert not run.exists()


def test_a_config_naming_heuristic_and_a_policy_file_trains_batched(tmp_path) -> None:
    from bergen_env.training.train import main

    run = tmp_path / "run"
    main(["--config", "configs/quick.yaml", "--run-dir", str(run), "--set",
          "opponents=[heuristic,policy:policies/standard_2p.safetensors]", "--set",
          "total_timesteps=256", "--set", "n_envs=8", "--set", "n_steps=16", "--set",
          "batch_size=64", "--set", "eval_every=0", "--set", "final_eval_matches=4", "--set",
          "checkpoint_every=128"])  # fmt: skip
    assert (run / "final_model.zip").is_file()


# ---------------------------------------------------------------------- the league


def test_pfsp_weighs_the_snapshots_that_still_win_most() -> None:
    league = League(pool_size=3, exponent=2.0)
    for taken in (100, 200, 300, 400):  # the oldest leaves
        league.add(taken, None)  # type: ignore[arg-type]
    assert league.steps == [200, 300, 400]
    league.record(200, np.ones(40))  # beaten every time
    league.record(300, np.full(40, 0.5))
    league.record(400, np.zeros(40))  # still wins every time
    league.record(100, np.zeros(5))  # dropped: not booked
    w = league.weights()
    assert w[0] < w[1] < w[2] and w.sum() == pytest.approx(1.0)
    uniform = League(pool_size=3, exponent=0.0)
    for taken in (1, 2):
        uniform.add(taken, None)  # type: ignore[arg-type]
    uniform.record(1, np.ones(10))
    assert uniform.weights() == pytest.approx([0.5, 0.5])
    # the results come back
    copy = League(pool_size=3, exponent=2.0)
    for taken in (200, 300, 400):
        copy.add(taken, None)  # type: ignore[arg-type]
    copy.load_state(league.state())
    assert copy.weights() == pytest.approx(w)


def test_the_league_draws_a_snapshot_per_match_by_its_odds() -> None:
    cfg = config(n_envs=256, opponents=["random"], selfplay_start=0, selfplay_prob=0.8)
    env = BatchedVecEnv(cfg)
    model = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu")
    env.reset()
    first = FrozenPolicy(model.policy)
    env.add_snapshot(100, first)
    env.add_snapshot(200, FrozenPolicy(model.policy))
    env.league.record(100, np.ones(98))  # the learner beats snapshot 100: drawn rarely
    env.refresh_league()
    roster = list(env.env.opponent_keys)
    assert roster[0] == "random" and roster[1] is first  # one object per snapshot, kept
    odds = np.array(env._plan[1][0])
    assert odds == pytest.approx([0.2, *(0.8 * env.league.weights())])
    drawn = []
    for _, _, dones, _, _ in run(env, 400):
        drawn.append(env.env.seat_opponents[dones, 1].copy())
    keys = env.env.opponent_keys
    names = ["random" if k == "random" else (100 if k is first else 200) for k in keys]
    seats = np.concatenate(drawn)
    share = {n: np.mean([names[k] == n for k in seats]) for n in ("random", 100, 200)}
    assert len(seats) > 1000
    assert share["random"] == pytest.approx(odds[0], abs=0.05)
    assert share[100] == pytest.approx(odds[1], abs=0.05)
    assert share[200] == pytest.approx(odds[2], abs=0.05)
    assert env.league.games[1] > 0  # the matches against 200 are booked to it


def test_frozen_policy_plays_as_the_ppo_agent() -> None:
    cfg = config(n_envs=4, net_arch=[32], opponents=["random"])
    env = BatchedVecEnv(cfg)
    model = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=0, device="cpu")
    frozen = FrozenPolicy(model.policy)
    agent = PPOAgent.from_model(model, env.env.rules)
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
    env.refresh_league()
    if cfg.partner == "learner":  # the partner seat plays the newest snapshot
        assert env._plan[0][1] == [200]
    run(env, 300)
    snapshots = {k for k, t in zip(env.env.opponent_keys, env._roster_taken) if t >= 0}
    assert len(snapshots) == 2
    assert sum(env.league.games) > 0  # the league's matches are booked to their snapshots
    assert 0 <= sum(env.league.wins) <= sum(env.league.games)
