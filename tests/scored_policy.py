"""Test helper: a policy file with an action scorer and random weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bergen_env.action_features import NUM_ACTION_FEATURES
from bergen_env.observation import OBS_SIZE
from bergen_env.policy_file import save_policy_file
from bergen_env.rules import Rules


def scored_policy_file(
    tmp_path: Path, hidden: int = 6, width: int = 5, rules: Rules | None = None
) -> Path:
    """``tmp_path/scored.safetensors``: ``OBS_SIZE -> hidden -> actions`` plus a scorer of
    ``width``, every weight random (so the scorer moves choices), for ``rules`` (default
    ``standard``, 2 players)."""
    rules = rules or Rules.preset()
    n = rules.num_actions
    rng = np.random.default_rng(1)
    w = [rng.normal(size=(hidden, OBS_SIZE)) * 0.3, rng.normal(size=(n, hidden))]
    b = [rng.normal(size=hidden), rng.normal(size=n)]
    sw = [rng.normal(size=(width, hidden + NUM_ACTION_FEATURES)), rng.normal(size=(1, width))]
    sb = [rng.normal(size=width), rng.normal(size=1)]
    return save_policy_file(
        tmp_path / "scored",
        rules,
        w,
        b,
        ["relu", "identity"],
        scorer=(sw, sb, ["relu", "identity"]),
    )
