"""Training: config loading, the real training script as a subprocess, resume, saved policies."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import bergen_env  # noqa: E402
from bergen_env.agents.base import make_agent  # noqa: E402
from bergen_env.observation import OBS_SIZE  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.training.config import ConfigError, TrainConfig, load_config, schedule  # noqa: E402
from bergen_env.training.ppo_policies import PolicyFileError, load_policy, read_metadata  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "total_timesteps=512",
    "n_envs=2",
    "vec_env=dummy",
    "n_steps=128",
    "batch_size=64",
    "n_epochs=1",
    "net_arch=[32]",
    "eval_every=256",
    "eval_matches=4",
    "final_eval_matches=4",
    "eval_workers=1",
    "checkpoint_every=256",
    "imitation_teacher=heuristic",
    "imitation_decisions=300",
    "imitation_epochs=2",
    "imitation_workers=1",
]


def train(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "bergen_env.training.train", *args]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def play_aec_match(agent, seat: int, seed: int) -> int:
    """One 2-player AEC match: ``agent`` in ``seat`` (on plain observations), random legal moves
    in the other; every move of the agent is legal. Returns the agent's number of moves."""
    env = bergen_env.env(num_players=2)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    agent.reset(env.unwrapped.rules, seat=seat, rng=rng)
    moves = 0
    for name in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            action = None
        elif name == f"player_{seat}":
            assert obs["observation"].shape == (OBS_SIZE,)
            action = agent.act(obs["observation"], obs["action_mask"], None)
            assert obs["action_mask"][action] == 1
            moves += 1
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
    return moves


def rewrite_member(src: Path, dst: Path, name: str, change) -> None:
    """Copy the zip ``src`` to ``dst``, member ``name``'s bytes replaced by ``change(bytes)``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.namelist():
            data = zin.read(item)
            zout.writestr(item, change(data) if item == name else data)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "quick_tiny"
    sets = [x for s in TINY for x in ("--set", s)]
    out = train("--config", "configs/quick.yaml", *sets, "--run-dir", str(run), "--seed", "3")
    assert "final evaluation vs random" in out.stdout
    assert "final evaluation vs greedy" in out.stdout
    return run


def test_run_folder_holds_everything(run_dir: Path) -> None:
    for name in (
        "config.yaml",
        "command.txt",
        "progress.csv",
        "metrics.csv",
        "best_model.zip",
        "final_model.zip",
        "final_eval.json",
        "final_model.safetensors",
        "learning_curve.png",
    ):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "tb").iterdir())
    cfg = load_config(run_dir / "config.yaml")
    assert (cfg.seed, cfg.total_timesteps, cfg.net_arch) == (3, 512, [32])
    assert "--config configs/quick.yaml" in (run_dir / "command.txt").read_text()
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert {r["opponent"] for r in rows} == {"random", "greedy"}
    # the evaluation after the imitation warm start is the row at timestep 0
    assert [int(r["timesteps"]) for r in rows if r["opponent"] == "random"] == [0, 256, 512]
    warm = json.loads((run_dir / "imitation.json").read_text())
    assert warm["decisions"] >= 300 and 0.0 <= warm["test_agreement"] <= 1.0
    ckpts = sorted(p.name for p in (run_dir / "checkpoints").glob("ckpt_*_steps.zip"))
    assert ckpts == ["ckpt_256_steps.zip", "ckpt_512_steps.zip"]


def test_resume_continues_the_step_count(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    resumed = tmp_path / "resumed"
    shutil.copytree(run_dir, resumed)
    out = train("--resume", str(resumed), "--set", "total_timesteps=1024")
    assert "resuming" in out.stdout and "at 512 steps" in out.stdout
    assert "total 1024" in out.stdout
    ckpts = {p.name for p in (resumed / "checkpoints").glob("ckpt_*_steps.zip")}
    assert {"ckpt_256_steps.zip", "ckpt_512_steps.zip", "ckpt_1024_steps.zip"} <= ckpts
    rows = list(csv.DictReader((resumed / "metrics.csv").open()))
    steps = [int(r["timesteps"]) for r in rows if r["opponent"] == "random"]
    assert steps == [0, 256, 512, 768, 1024]  # no second warm start on resume
    assert read_metadata(resumed / "final_model.zip")["timesteps"] == 1024
    assert len((resumed / "command.txt").read_text().splitlines()) == 2


def test_resume_with_no_steps_left_only_evaluates(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    resumed = tmp_path / "finished"
    shutil.copytree(run_dir, resumed)
    (resumed / "final_eval.json").unlink()
    out = train("--resume", str(resumed))  # the budget of 512 steps is already spent
    assert "at 512 steps" in out.stdout
    assert json.loads((resumed / "final_eval.json").read_text())
    assert read_metadata(resumed / "final_model.zip")["timesteps"] == 512


@pytest.mark.parametrize("how", ["make_agent", "load_policy"])
def test_saved_policy_reloads_and_acts_in_the_aec_env(run_dir: Path, how: str) -> None:
    path = run_dir / "final_model.zip"
    agent = (
        make_agent(f"ppo:path={path},trust_pickle=true")
        if how == "make_agent"
        else load_policy(path, trust_pickle=True)
    )
    assert play_aec_match(agent, seat=0, seed=0) > 5
    meta = read_metadata(path)
    assert Rules.from_dict(meta["rules"]) == Rules.preset("standard")


def test_policy_file_errors_name_the_file(run_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.zip"
    with pytest.raises(ValueError, match="nope.zip.*does not exist"):
        make_agent(f"ppo:{missing}")
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"not a zip at all")
    with pytest.raises(PolicyFileError, match="garbage.zip.*corrupted"):
        load_policy(garbage, trust_pickle=True)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes((run_dir / "final_model.zip").read_bytes()[:3000])
    with pytest.raises(PolicyFileError, match="truncated.zip"):
        load_policy(truncated, trust_pickle=True)
    damaged = tmp_path / "damaged.zip"  # metadata intact, the model data replaced
    rewrite_member(run_dir / "final_model.zip", damaged, "policy.pth", lambda _: b"garbage")
    with pytest.raises(PolicyFileError, match="damaged.zip.*corrupted"):
        load_policy(damaged, trust_pickle=True)


def test_policy_with_other_sizes_is_rejected(run_dir: Path, tmp_path: Path) -> None:
    agent = load_policy(run_dir / "final_model.zip", trust_pickle=True)
    with pytest.raises(PolicyFileError, match="58 actions.*65"):
        agent.reset(Rules.preset("double_set"), 0, np.random.default_rng(0))
    import gymnasium
    from sb3_contrib import MaskablePPO

    from bergen_env.training.ppo_policies import save_policy

    class Small(gymnasium.Env):
        observation_space = gymnasium.spaces.Box(0, 1, (10,), np.float32)
        action_space = gymnasium.spaces.Discrete(58)

    path = save_policy(
        MaskablePPO("MlpPolicy", Small(), n_steps=8), tmp_path / "small", Rules.preset()
    )
    with pytest.raises(PolicyFileError, match=r"small.zip.*shape \(10,\).*\(240,\)"):
        load_policy(path, trust_pickle=True)
    # a file whose metadata disagrees with its model: the error names both
    edited = tmp_path / "edited.zip"
    rewrite_member(
        run_dir / "final_model.zip",
        edited,
        "bergen_policy.json",
        lambda data: json.dumps(json.loads(data) | {"obs_size": 250}).encode(),
    )
    with pytest.raises(PolicyFileError, match=r"edited.zip.*obs_size=250.*shape \(240,\)"):
        load_policy(edited, trust_pickle=True)


def test_unknown_config_key_names_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("default:\n  total_timesteps: 10\n  learning_rat: 0.1\n")
    with pytest.raises(
        ConfigError, match=r"bad.yaml.*'learning_rat' \(did you mean 'learning_rate'"
    ):
        load_config(bad)
    with pytest.raises(
        ConfigError, match=r"quick.yaml.*unknown key 'nsteps' \(did you mean 'n_steps'"
    ):
        load_config(ROOT / "configs/quick.yaml", ["nsteps=3"])
    removed = tmp_path / "removed.yaml"  # the asymmetric critic's key is gone
    removed.write_text("default:\n  critic: oracle\n")
    with pytest.raises(ConfigError, match=r"removed.yaml: unknown key 'critic'; valid keys: \["):
        load_config(removed)
    top = tmp_path / "top.yaml"
    top.write_text("ppo:\n  seed: 1\n")
    with pytest.raises(ConfigError, match="top.yaml.*'default:'"):
        load_config(top)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("default:\n  n_envs: 0\n")
    with pytest.raises(ConfigError, match="wrong.yaml.*'n_envs'"):
        load_config(wrong)


def test_env_options_fail_before_the_run_folder(tmp_path: Path) -> None:
    from bergen_env.training.train import main

    run = tmp_path / "never"
    sets = ["num_players=3", "rules=traditional", "reward=win"]  # no win table for 3 sides
    with pytest.raises(ConfigError, match=r"quick.yaml: option reward='win'.*27000"):
        main(
            ["--config", "configs/quick.yaml", "--run-dir", str(run)]
            + [x for s in sets for x in ("--set", s)]
        )
    with pytest.raises(ConfigError, match=r"quick.yaml: .*'hand_size'"):
        main(
            [
                "--config",
                "configs/quick.yaml",
                "--run-dir",
                str(run),
                "--set",
                "rule_overrides={hand_size: 30}",
            ]
        )
    assert not run.exists()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("imitation_teacher", "minimax"),
        ("opponents", "[heuristic, gredy]"),
        ("eval_opponents", "[x]"),
    ],
)
def test_bad_agent_strings_fail_before_the_run_folder(tmp_path: Path, key: str, value: str) -> None:
    from bergen_env.training.train import main

    run = tmp_path / "never"
    with pytest.raises(ConfigError, match=rf"quick.yaml: key '{key}': unknown agent"):
        main(["--config", "configs/quick.yaml", "--set", f"{key}={value}", "--run-dir", str(run)])
    assert not run.exists()


@pytest.mark.parametrize("name", ["quick", "standard_2p", "standard_3p", "partners_4p"])
def test_shipped_configs_load(name: str) -> None:
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    assert cfg.name == name


def test_schedules() -> None:
    assert schedule("lin_3e-4")(1.0) == pytest.approx(3e-4)
    assert schedule("lin_3e-4")(0.25) == pytest.approx(7.5e-5)
    assert schedule(0.2)(0.1) == 0.2
    cfg = load_config(ROOT / "configs/quick.yaml", ["learning_rate=3e-4", "ent_coef=1e-3"])
    assert (cfg.learning_rate, cfg.ent_coef) == (3e-4, 1e-3)
    with pytest.raises(ValueError, match="lin_"):
        schedule("cos_3e-4")
    with pytest.raises(ConfigError, match="learning_rate"):
        TrainConfig(learning_rate="lin_x")


def test_opponent_pool_mixes_scripted_and_snapshots(run_dir: Path, tmp_path: Path) -> None:
    from bergen_env.training.ppo_policies import PPOAgent
    from bergen_env.training.selfplay import OpponentPool, snapshot_path

    snaps = tmp_path / "snapshots"
    pool = OpponentPool(["random", "greedy"], snaps, 0.5, pool_size=2, seed=0)
    partner = OpponentPool(["random"], snaps, 0.0, pool_size=2, seed=0, latest_only=True)
    assert {p().name for p in [pool] * 20} == {"random", "greedy"}  # no snapshot yet
    snaps.mkdir()
    for steps in (100, 200, 300):
        (snapshot_path(snaps, steps)).write_bytes((run_dir / "final_model.zip").read_bytes())
    picks = [pool() for _ in range(40)]
    loaded = {a.path for a in picks if isinstance(a, PPOAgent)}
    assert loaded == {str(snapshot_path(snaps, 200)), str(snapshot_path(snaps, 300))}
    assert any(not isinstance(a, PPOAgent) for a in picks)
    assert partner().path == str(snapshot_path(snaps, 300))


def test_selfplay_partnership_training_runs(tmp_path: Path) -> None:
    from bergen_env.training.train import main

    run = tmp_path / "p4"
    sets = [*TINY, "selfplay_start=0", "snapshot_every=128", "eval_opponents=[random]"]
    out = main(
        ["--config", "configs/partners_4p.yaml", "--run-dir", str(run)]
        + [x for s in sets for x in ("--set", s)]
    )
    assert out["timesteps"] == 512
    snaps = sorted(p.name for p in (run / "snapshots").glob("snapshot_*.zip"))
    assert len(snaps) >= 3
    assert 0.0 <= out["final"]["random"]["win_rate"] <= 1.0
