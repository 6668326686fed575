"""The single-agent env under Gymnasium's vector envs: masks in ``infos``, autoreset, sampling."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import bergen_env  # noqa: F401  (registers bergen_env/Bergen-v0)

NUM_ENVS = 4


def masked_sample(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row from a uniform masked softmax, as a CleanRL agent's Categorical."""
    logits = np.where(masks.astype(bool), 0.0, -np.inf)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    assert np.isfinite(probs).all()
    return np.array([rng.choice(len(p), p=p) for p in probs])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_cleanrl_style_loop_reads_masks_from_infos(mode: str) -> None:
    envs = gymnasium.make_vec("bergen_env/Bergen-v0", num_envs=NUM_ENVS, vectorization_mode=mode)
    try:
        _, infos = envs.reset(seed=0)
        rng = np.random.default_rng(0)
        episodes = 0
        ended = np.zeros(NUM_ENVS, dtype=bool)
        for _ in range(3000):
            masks = infos["action_mask"]
            assert masks.shape == (NUM_ENVS, 58) and masks.dtype == np.int8
            assert masks.any(axis=1).all(), "an all-zero mask row"
            assert infos["_action_mask"].all()
            # the step after an episode's end resets that env: its mask there is all ones
            assert masks[ended].all()
            actions = masked_sample(masks, rng)
            _, _, terminated, truncated, infos = envs.step(actions)
            ended = terminated | truncated
            episodes += int(ended.sum())
        assert episodes > 100
    finally:
        envs.close()
