"""The network's device: ``device: auto``, the batched env's pinned buffers and the rollout's
non-blocking host→device copies (:mod:`bergen_env.training.device`).

What needs no GPU runs everywhere, the device check faked where it must say CUDA; what needs
one skips, saying so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")

import torch  # noqa: E402
from sb3_contrib import MaskablePPO  # noqa: E402

import bergen_env.training.batched_env as batched_env  # noqa: E402
from bergen_env.observation import OBS_SIZE  # noqa: E402
from bergen_env.training import train  # noqa: E402
from bergen_env.training.batched_env import BatchedVecEnv  # noqa: E402
from bergen_env.training.config import TrainConfig  # noqa: E402
from bergen_env.training.device import (  # noqa: E402
    OverlappedMaskablePPO,
    pins_memory,
    resolve_device,
    rollout_masks,
)
from bergen_env.training.ppo_policies import PPOAgent  # noqa: E402
from bergen_env.training.train import algorithm, build_model, config_rules  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def config(**kw) -> TrainConfig:
    base = dict(
        n_envs=8,
        opponents=["random", "greedy"],
        reward="match",
        max_hands=2,  # short matches: terminations and truncations within a few steps
        n_steps=16,
        batch_size=32,
        n_epochs=2,
        net_arch=[32, 32],
        seed=5,
    )
    return TrainConfig(**{**base, **kw})


def record_host_arrays(monkeypatch) -> list[tuple]:
    """Stand in for the pinned allocator (which needs CUDA) in the adapter: ordinary zeros,
    each request recorded as ``(shape, dtype, pinned)``."""
    made: list[tuple] = []

    def host_array(shape, dtype, pinned):
        made.append((tuple(shape), np.dtype(dtype), pinned))
        return np.zeros(shape, dtype=dtype)

    monkeypatch.setattr(batched_env, "host_array", host_array)
    return made


def steps(env: BatchedVecEnv, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The observations and masks of a reset and ``count`` steps of the first legal action."""
    out = [(env.reset(), rollout_masks(env))]
    for _ in range(count):
        obs = env.step(rollout_masks(env).argmax(axis=1))[0]
        out.append((obs, rollout_masks(env)))
    return out


def test_auto_is_this_machines_device_and_pins_only_for_cuda(monkeypatch) -> None:
    here = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == here
    assert pins_memory("auto") is (here == "cuda")
    assert algorithm(config(device="auto")) is (
        OverlappedMaskablePPO if here == "cuda" else MaskablePPO
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert not pins_memory("cuda") and not pins_memory("auto") and not pins_memory("cpu")
    assert algorithm(config(device="auto")) is MaskablePPO
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pins_memory("auto") and pins_memory("cuda") and pins_memory(torch.device("cuda", 1))
    assert not pins_memory("cpu")
    assert algorithm(config(device="auto")) is OverlappedMaskablePPO
    assert algorithm(config(device="cpu")) is MaskablePPO


def test_on_the_cpu_the_adapter_hands_out_ordinary_arrays(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    made = record_host_arrays(monkeypatch)
    env = BatchedVecEnv(config(device="auto"))
    assert not env.pinned
    assert made == [((8, env.env.rules.num_actions), np.dtype(bool), False)] * 2  # masks only
    for obs, masks in steps(env, 4):
        assert type(obs) is np.ndarray and obs.dtype == np.float32 and obs.shape == (8, OBS_SIZE)
        assert type(masks) is np.ndarray and masks.dtype == np.bool_
        assert not torch.from_numpy(obs).is_pinned()


def test_pinned_buffers_are_used_in_turn_and_hold_what_the_plain_adapter_returns(
    monkeypatch,
) -> None:
    made = record_host_arrays(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # device: cuda, faked
    pinned = BatchedVecEnv(config(device="cuda"))
    assert pinned.pinned
    masks_made = [((8, pinned.env.rules.num_actions), np.dtype(bool), True)] * 2
    assert made == masks_made + [((8, OBS_SIZE), np.dtype(np.float32), True)] * 2
    plain = BatchedVecEnv(config(device="cuda"), pinned=False)
    obs, want = pinned.reset(), plain.reset()
    before = None  # the arrays of the step before, and copies of what they held
    for t in range(12):
        masks = rollout_masks(pinned)
        assert np.array_equal(obs, want) and np.array_equal(masks, rollout_masks(plain))
        assert obs is pinned._obs_buffers[t % 2] and masks is pinned._mask_buffers[t % 2]
        if before is not None:  # SB3 still reads them: intact
            assert all(np.array_equal(a, b) for a, b in zip(before[:2], before[2:]))
        before = (obs, masks, obs.copy(), masks.copy())
        actions = masks.argmax(axis=1)
        obs, want = pinned.step(actions)[0], plain.step(actions)[0]


def learn(model: MaskablePPO, rollouts: int) -> dict[str, np.ndarray]:
    """Train ``rollouts`` rollouts; the parameters and the last rollout buffer, as arrays."""
    cfg_steps = model.n_steps * model.n_envs
    model.learn(total_timesteps=rollouts * cfg_steps)
    out = {k: v.detach().cpu().numpy().copy() for k, v in model.policy.state_dict().items()}
    buffer = model.rollout_buffer
    for name in ("observations", "actions", "rewards", "values", "log_probs", "advantages"):
        out[f"buffer.{name}"] = getattr(buffer, name).copy()
    out["buffer.action_masks"] = buffer.action_masks.copy()
    return out


def test_the_overlapped_learner_trains_bit_for_bit_as_maskable_ppo(monkeypatch, tmp_path) -> None:
    """The same seed gives the same network and rollout with OverlappedMaskablePPO over pinned
    buffers (non-blocking copies, faked on the CPU) as with sb3-contrib's MaskablePPO."""
    torch.set_num_threads(1)
    cfg = config()
    plain = build_model(cfg, BatchedVecEnv(cfg), tmp_path)
    assert type(plain) is MaskablePPO
    want = learn(plain, 3)

    record_host_arrays(monkeypatch)
    env = BatchedVecEnv(cfg, pinned=True)
    monkeypatch.setattr(train, "algorithm", lambda cfg: OverlappedMaskablePPO)
    model = build_model(cfg, env, tmp_path)
    assert type(model) is OverlappedMaskablePPO and model.non_blocking is False  # on the CPU
    model.non_blocking = True  # as on CUDA (a no-op copy on the CPU)
    copies: list[tuple[bool, bool]] = []
    copy = model.host_to_device

    def host_to_device(array: np.ndarray) -> torch.Tensor:
        held = any(array is b for b in env._obs_buffers + env._mask_buffers)
        copies.append((model.non_blocking, held))
        return copy(array)

    model.host_to_device = host_to_device
    got = learn(model, 3)
    assert got.keys() == want.keys()
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    # per step: the masks and the step's observations, each from an adapter buffer (no copy),
    # and the first observation of each rollout
    assert len(copies) == 3 * (2 * cfg.n_steps + 1)
    assert all(non_blocking and held for non_blocking, held in copies)
    assert want["buffer.rewards"].any()  # the matches ended within the rollout


# ---------------------------------------------------------------------------- on a GPU


@needs_cuda
def test_on_cuda_the_adapter_hands_out_pinned_memory() -> None:
    env = BatchedVecEnv(config(device="cuda"))
    assert env.pinned
    for obs, masks in steps(env, 3):
        assert torch.from_numpy(obs).is_pinned() and torch.from_numpy(masks).is_pinned()


@needs_cuda
def test_on_cuda_the_overlapped_learner_fills_the_rollout_of_maskable_ppo(
    monkeypatch, tmp_path: Path
) -> None:
    cfg = config(device="cuda")
    model = build_model(cfg, BatchedVecEnv(cfg), tmp_path)
    assert type(model) is OverlappedMaskablePPO and model.non_blocking
    got = learn(model, 2)
    monkeypatch.setattr(train, "algorithm", lambda cfg: MaskablePPO)
    plain = build_model(cfg, BatchedVecEnv(cfg, pinned=False), tmp_path)
    want = learn(plain, 2)
    for key in ("buffer.observations", "buffer.actions", "buffer.action_masks"):
        assert np.array_equal(got[key], want[key]), key
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)
    agent = PPOAgent.from_model(model, config_rules(cfg))  # evaluation of a CUDA network
    obs = got["buffer.observations"][0]
    assert agent.logits(obs).shape == (cfg.n_envs, config_rules(cfg).num_actions)


@pytest.mark.skipif(torch.cuda.is_available(), reason="torch sees a CUDA device here")
def test_the_profile_refuses_cuda_in_one_line_where_there_is_none() -> None:
    from benchmarks.train_profile import main

    with pytest.raises(SystemExit) as stop:
        main(["--device", "cuda"])
    message = str(stop.value)
    assert "\n" not in message and "--device cuda" in message and "no CUDA device" in message


def test_the_profile_on_a_gpu_times_the_copies_and_the_whole_step(monkeypatch, tmp_path) -> None:
    """``--device cuda``'s code path with the device check, the pinned allocator and the GPU's
    synchronisation faked on the CPU: the learner is OverlappedMaskablePPO, the batched side
    runs whole and split in wall time, the copies a part of the split."""
    import benchmarks.train_profile as profile

    synced: list[int] = []
    made = record_host_arrays(monkeypatch)
    monkeypatch.setattr(batched_env, "pins_memory", lambda device: True)
    monkeypatch.setattr(profile, "check_device", lambda device: None)
    monkeypatch.setattr(profile, "pins_memory", lambda device: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: synced.append(1))
    monkeypatch.setattr(train, "algorithm", lambda cfg: OverlappedMaskablePPO)
    monkeypatch.setattr(train, "check_config", lambda cfg, source: None)
    monkeypatch.setattr(profile, "check_config", lambda cfg, source: None)
    small = ["n_steps=8", "batch_size=32", "n_epochs=1", "net_arch=[16, 16]", "device=cpu"]
    report = profile.main(
        ["--steps", "64", "--batched-set", "n_envs=8", "--subproc-set", "vec_env=dummy"]
        + ["--subproc-set", "n_envs=2", "--json", str(tmp_path / "p.json")]
        + [a for s in small for a in ("--set", s)]
    )
    sides = report["sides"]
    assert list(sides) == ["batched whole", "batched", "subproc"]
    assert sides["batched"]["learner"] == "OverlappedMaskablePPO"
    assert "split" not in sides["batched whole"]
    split = sides["batched"]["split"]
    assert (
        sides["batched"]["split_clock"] == "wall, GPU synchronised"
        and "learn_s" in sides["batched"]
    )
    assert set(split) == {
        "env + opponents",
        "rollout forward",
        "update",
        "host→device copies",
        "SB3 bookkeeping",
    }
    assert split["host→device copies"] > 0 and synced and all(pinned for *_, pinned in made)
