"""The CleanRL-style PPO example trains on the batched env for a few iterations."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")
pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "vector_ppo.py"


def _load():
    spec = importlib.util.spec_from_file_location("vector_ppo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["vector_ppo"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_ppo_example_trains_a_few_iterations() -> None:
    ppo = _load()
    stats = ppo.main(
        ["--num-envs", "16", "--num-steps", "32", "--total-timesteps", "1536", "--seed", "3"]
    )
    assert stats["iteration"] == 3 and stats["steps"] == 1536
    assert stats["matches"] > 0  # 512 learner steps finish several matches
    assert -1.0 <= stats["mean_result"] <= 1.0
    assert math.isfinite(stats["value_loss"]) and stats["entropy"] > 0


def test_ppo_example_saves_a_policy_file_the_arena_plays(tmp_path: Path, capsys) -> None:
    from bergen_env.arena import run_tournament
    from bergen_env.policy_file import read_policy_file

    ppo = _load()
    ppo.main(["--num-envs", "8", "--num-steps", "16", "--total-timesteps", "128",
              "--num-players", "3", "--save", str(tmp_path / "actor")])  # fmt: skip
    path = tmp_path / "actor.safetensors"
    assert f"saved the actor to {path}" in capsys.readouterr().out
    policy = read_policy_file(path)
    assert policy.rules.num_players == 3  # the rules the actor was trained under
    assert policy.provenance["source"] == "examples/vector_ppo.py"
    result = run_tournament([f"policy:{path}", "random", "random"], policy.rules, matches=6)
    assert result.agents[f"policy:{path}"].matches == 6


def test_ppo_example_refuses_an_opponent_it_cannot_batch(capsys) -> None:
    with pytest.raises(SystemExit):
        _load().main(["--opponent", "search"])
    assert "(kind 'search') cannot play a batch" in capsys.readouterr().err
