"""The evaluation command line: a tiny run as a subprocess, outputs, and clear errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bergen_env.training.evaluate import main

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bergen_env.training.evaluate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_writes_table_json_csv_png(tmp_path: Path) -> None:
    out = {k: tmp_path / f"out.{k}" for k in ("json", "csv", "png")}
    args = ["--agents", "greedy", "random", "heuristic", "--players", "3", "--matches", "6"]
    args += ["--seed", "3", "--rule-override", "target=6", "end_caps=false"]
    done = run_cli(*args, "--json", str(out["json"]), "--csv", str(out["csv"]))
    done2 = run_cli(
        *args, "--workers", "2", "--plot", str(out["png"]), "--json", str(tmp_path / "w2.json")
    )
    assert done.returncode == 0, done.stderr
    assert done2.returncode == 0, done2.stderr
    assert "win rate [95% CI]" in done.stdout and "head to head" in done.stdout
    data = json.loads(out["json"].read_text())
    assert set(data["agents"]) == {"greedy", "random", "heuristic"}
    for entry in data["agents"].values():
        lo, hi = entry["ci95"]
        assert 0.0 <= lo <= entry["match_win_rate"] <= hi <= 1.0
    config = data["config"]
    assert config["matches"] == 6 and config["rules"]["target"] == 6
    assert config["rules"]["end_caps"] is False and config["command"][-1] == str(out["csv"])
    rows = list(csv.DictReader(out["csv"].open()))
    assert [r["name"] for r in rows] == ["greedy", "random", "heuristic"]
    assert float(rows[0]["match_win_rate"]) == data["agents"]["greedy"]["match_win_rate"]
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # two workers, same seed: the same numbers
    assert json.loads((tmp_path / "w2.json").read_text())["agents"] == data["agents"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--agents", "greedy", "no_such_agent"], ["no_such_agent", "known kinds"]),
        (["--agents", "greedy", "ppo:missing/policy.zip"], ["missing/policy.zip", "not exist"]),
        (["--agents", "greedy", "random", "--rules", "bogus"], ["bad rules", "bogus"]),
        (["--agents", "greedy", "random", "--rule-override", "colour=red"], ["colour"]),
        (["--agents", "greedy", "random", "--rule-override", "target=0"], ["target"]),
        (["--agents", "greedy", "random", "--rule-override", "target"], ["key=value"]),
        (["--agents", "greedy", "random", "--players", "3"], ["at least 3 agents"]),
        (["--agents", "greedy", "random", "--players", "3", "--partnerships"], ["partnerships"]),
        (["--agents", "greedy", "random", "--matches", "0"], ["--matches"]),
    ],
)
def test_clear_errors(args: list[str], words: list[str], capsys: pytest.CaptureFixture) -> None:
    assert main([*args, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bergen-evaluate: error:") and err.count("\n") == 1
    for word in words:
        assert word in err


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained MaskablePPO policy saved for the standard 2-player rules."""
    from sb3_contrib import MaskablePPO

    from bergen_env.rules import Rules
    from bergen_env.single_agent import BergenSingleAgentEnv
    from bergen_env.training.ppo_policies import save_policy

    env = BergenSingleAgentEnv(opponents=["random"])
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=16, batch_size=16, seed=0, policy_kwargs={"net_arch": [8]}
    )
    return save_policy(model, tmp_path_factory.mktemp("policy") / "p.zip", Rules.preset())


def test_ppo_policy_plays(policy_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec = f"ppo:{policy_file}"
    out = tmp_path / "r.json"
    args = ["--agents", spec, "random", "--matches", "2", "--no-progress", "--json", str(out)]
    assert main([*args, "--trust-pickle"]) == 0
    data = json.loads(out.read_text())
    # the results name the agent as it was loaded: trusted explicitly
    assert data["agents"][f"ppo:path={policy_file},trust_pickle=true"]["matches"] == 2


def test_policy_for_other_rules_is_refused(
    policy_file: Path, capsys: pytest.CaptureFixture
) -> None:
    args = ["--agents", f"ppo:{policy_file}", "random", "--rules", "double_set", "--no-progress"]
    assert main([*args, "--trust-pickle"]) == 2
    err = capsys.readouterr().err
    assert str(policy_file) in err and "65" in err and "58" in err
