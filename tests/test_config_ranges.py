"""Config values are checked against one table per config class, which docs/configs.md prints."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("yaml")

from bergen_env.training.config import ConfigError, TrainConfig, load_config  # noqa: E402
from bergen_env.training.config_ranges import DOC, TABLES, TRAIN, render  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def config_classes() -> dict[str, type]:
    pytest.importorskip("torch")
    from bergen_env.training.expert_iteration_config import ExpertIterationConfig

    return {"TrainConfig": TrainConfig, "ExpertIterationConfig": ExpertIterationConfig}


def test_every_field_has_a_range_and_the_docs_print_them() -> None:
    for name, cls in config_classes().items():
        assert set(TABLES[name]) == {f.name for f in dataclasses.fields(cls)}, name
    text = DOC.read_text()
    assert render(text) == text, (
        "docs/configs.md is stale: run python -m bergen_env.training.config_ranges"
    )


def test_every_default_is_allowed() -> None:
    for name, cls in config_classes().items():
        for f in dataclasses.fields(cls):
            value = f.default_factory() if f.default is dataclasses.MISSING else f.default
            assert TABLES[name][f.name].ok(value), (name, f.name, value)


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("learning_rate", "-0.001", "a number in (0, 1] or 'lin_<x>' with x in (0, 1]"),
        ("learning_rate", "lin_-1e-4", "a number in (0, 1] or 'lin_<x>' with x in (0, 1]"),
        ("learning_rate", "0", "a number in (0, 1] or 'lin_<x>' with x in (0, 1]"),
        ("gamma", "high", "a number in [0, 1]"),
        ("gae_lambda", "7", "a number in [0, 1]"),
        ("net_arch", "256", "a non-empty list of ints in [1, 65536]"),
        ("n_envs", "true", "an int in [1, 65536]"),
        ("max_grad_norm", ".nan", "a number > 0"),
        ("vec_env", "forked", "one of 'batched', 'subproc', 'dummy'"),
        ("imitation_teacher", "7", "an agent string or null"),
    ],
)
def test_bad_values_name_key_value_and_range(key: str, value: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(ROOT / "configs" / "quick.yaml", [f"{key}={value}"])
    message = str(info.value)
    assert message.startswith(f"{ROOT / 'configs' / 'quick.yaml'}: key {key!r} must be {allowed}")
    assert ", got " in message and "\n" not in message


def test_a_bad_value_fails_before_the_run_folder(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    run = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "bergen_env.training.train", "--config", "configs/quick.yaml"]
        + ["--set", "gae_lambda=7", "--run-dir", str(run)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "bergen-train: error: configs/quick.yaml: key 'gae_lambda' must be a number in [0, 1], "
        "got 7.0"
    ]
    assert not run.exists()


def test_table_entries_accept_and_refuse() -> None:
    assert TRAIN["learning_rate"].ok(3e-4) and TRAIN["learning_rate"].ok("lin_1.5e-4")
    assert not TRAIN["learning_rate"].ok("lin_x") and not TRAIN["learning_rate"].ok(True)
    assert TRAIN["target_kl"].ok(None) and not TRAIN["target_kl"].ok(0)
    assert TRAIN["num_players"].ok(3) and not TRAIN["num_players"].ok(3.0)
    assert not TRAIN["net_arch"].ok([]) and not TRAIN["net_arch"].ok([8, True])
    assert not TRAIN["name"].ok("a/b") and TRAIN["name"].ok("quick")
