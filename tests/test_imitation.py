"""Imitation warm start: the teacher's data, their independence of the worker count, the fit."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402

from bergen_env.single_agent import BergenSingleAgentEnv  # noqa: E402
from bergen_env.training import imitation  # noqa: E402
from bergen_env.training.config import ConfigError, TrainConfig  # noqa: E402
from bergen_env.training.imitation import collect_parallel, collect_teacher_data, fit_policy  # noqa: E402


def _cfg(**kw) -> TrainConfig:
    base = dict(imitation_teacher="greedy", opponents=["random"], reward="match", gamma=1.0)
    return TrainConfig(**(base | kw))


def test_teacher_data_are_legal_decisions_with_their_returns() -> None:
    data = collect_teacher_data(_cfg(), 400, seed=1)
    assert len(data) >= 400
    assert data.obs.shape == (len(data), 240) and data.obs.dtype == np.float32
    assert data.masks[np.arange(len(data)), data.actions].all()  # every action was legal
    assert (data.masks.sum(axis=1) >= 2).all()  # forced moves are played by the env
    # reward "match" with gamma 1: every decision of a match has that match's result
    for m in np.unique(data.match):
        got = set(data.returns[data.match == m].tolist())
        assert len(got) == 1 and got <= {1.0, -1.0}
    # same seed, same data
    agree = collect_teacher_data(_cfg(), 400, seed=1)
    np.testing.assert_array_equal(agree.actions, data.actions)
    np.testing.assert_array_equal(agree.obs, data.obs)


def test_shaped_returns_are_discounted_sums() -> None:
    """With gamma 0 each return is that decision's own reward; the last of a match holds the
    match result (|reward| >= 1 - points / target)."""
    cfg = _cfg(reward="shaped", gamma=0.0)
    data = collect_teacher_data(cfg, 300, seed=2)
    last = np.r_[data.match[1:] != data.match[:-1], True]
    assert (np.abs(data.returns[last]) > 0.5).all()
    assert (np.abs(data.returns[~last]) < 0.5).all()


def test_collection_does_not_depend_on_the_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imitation, "JOB_DECISIONS", 150)
    one = collect_parallel(_cfg(imitation_workers=1), 400, seed=5)
    two = collect_parallel(_cfg(imitation_workers=2), 400, seed=5)
    np.testing.assert_array_equal(one.actions, two.actions)
    np.testing.assert_array_equal(one.obs, two.obs)
    np.testing.assert_array_equal(one.match, two.match)
    assert len(np.unique(one.match)) == one.match.max() + 1  # match ids stay distinct


def test_fit_policy_learns_the_teacher() -> None:
    cfg = _cfg(reward="shaped", gamma=0.99)
    data = collect_teacher_data(cfg, 3000, seed=3)
    env = BergenSingleAgentEnv(opponents=["random"], reward="shaped")
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [64]}, seed=0, device="cpu")
    before = imitation._held_out(model.policy, data, np.arange(len(data)))["test_agreement"]
    logged: list[int] = []
    after = fit_policy(
        model.policy,
        data,
        epochs=15,
        lr=3e-3,
        batch_size=128,
        vf_coef=0.5,
        seed=0,
        log=lambda epoch, m: logged.append(epoch),
    )
    assert logged == list(range(15))
    assert after["test_agreement"] > 0.8 > before
    assert np.isfinite(after["test_value_rmse"])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("imitation_decisions", 0),
        ("imitation_epochs", -1),
        ("imitation_workers", 0),
        ("imitation_lr", 0.0),
        ("imitation_teacher", 3),
        ("target_kl", 0),
    ],
)
def test_bad_imitation_keys_are_named(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=key):
        TrainConfig(**{key: value})
