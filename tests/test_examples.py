"""Every file in examples/ runs, as a researcher would run it, on a tiny budget (a subprocess)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.slow


def run_example(name: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # this checkout's bergen_env
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def rate(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, text[-2000:]
    value = float(match.group(1))
    assert 0.0 <= value <= 1.0
    return value


def test_every_example_has_a_test() -> None:
    """Each example file is run by some test (here, or beside the code it shows)."""
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    untested = [p.name for p in EXAMPLES.glob("*.py") if f'"{p.name}"' not in tests]
    assert not untested


def test_cleanrl_masked_ppo(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = run_example(
        "cleanrl_masked_ppo.py", "--total-timesteps", "512", "--num-steps", "64",
        "--eval-episodes", "4", "--save", str(tmp_path / "actor"),
    )  # fmt: skip
    assert "iteration 2/2  steps 512" in out
    assert re.search(r"won [0-4] of 4 matches", out), out
    # the saved actor is a policy file the arena plays, its provenance the script's arguments
    path = tmp_path / "actor.safetensors"
    assert f"saved the actor to {path}" in out
    from bergen_env.arena import run_tournament
    from bergen_env.policy_file import read_policy_file
    from bergen_env.rules import Rules

    provenance = read_policy_file(path).provenance
    assert provenance["source"] == "examples/cleanrl_masked_ppo.py"
    assert provenance["args"]["total_timesteps"] == 512
    result = run_tournament([f"policy:{path}", "random"], Rules.preset("standard"), matches=4)
    assert result.agents[f"policy:{path}"].matches == 4


def test_sb3_maskable_ppo(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    args = ["--total-timesteps", "512", "--n-envs", "2", "--eval-episodes", "4"]
    out = run_example("sb3_maskable_ppo.py", *args, "--save", str(tmp_path / "policy.zip"))
    rate(r"win rate (\d\.\d+)", out)
    # the command it prints evaluates the model it just saved, as printed
    lines = out.splitlines()
    assert lines[-2] == f"saved {tmp_path / 'policy.zip'}; evaluate it with:"
    command = shlex.split(lines[-1])
    assert command[0] == "bergen-evaluate"
    script = Path(sys.executable).parent / command[0]
    if not script.exists():
        pytest.skip(f"{command[0]} is not installed beside {sys.executable} (pip install -e .)")
    proc = subprocess.run(
        [str(script), *command[1:]],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "policy.zip" in proc.stdout and "win rate" in proc.stdout, proc.stdout


def test_pettingzoo_sb3_action_mask() -> None:
    pytest.importorskip("sb3_contrib")
    out = run_example("pettingzoo_sb3_action_mask.py", "--steps", "512", "--eval-games", "4")
    rate(r"win rate vs random as player_1: (\d\.\d+)", out)


def test_selfplay_aec() -> None:
    pytest.importorskip("torch")
    out = run_example(
        "selfplay_aec.py", "--matches", "8", "--batch", "4", "--eval-every", "4",
        "--eval-matches", "4",
    )  # fmt: skip
    assert out.count("win rate vs random") == 2, out  # after 4 and after 8 matches
    rate(r"matches 8: .* win rate vs random (\d\.\d+)", out)


def test_tianshou_multiagent_dqn() -> None:
    pytest.importorskip("tianshou", reason="needs the [tianshou] extra")
    out = run_example(
        "tianshou_multiagent_dqn.py", "--epochs", "1", "--epoch-steps", "64",
        "--test-episodes", "2",
    )  # fmt: skip
    rate(r"vs random: win rate (\d\.\d+) over 2", out)
