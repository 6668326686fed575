"""Ray RLlib: the multi-agent adapter, the training script and RLlib checkpoints as agents.

Needs the ``[rllib]`` extra (CI installs it); skipped only where Ray is not installed. Ray starts
once per training subprocess; each run is shared by the tests of this module.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the [rllib] extra")

from bergen_env import raw_env  # noqa: E402
from bergen_env.agents import make_agent  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.training.config import ConfigError  # noqa: E402
from bergen_env.training.rllib_env import (  # noqa: E402
    MASK_KEY,
    OBS_KEY,
    BergenMultiAgentEnv,
    shared_policy_mapping,
    side_policy_mapping,
)
from bergen_env.training.rllib_policies import RLlibAgent, RLlibCheckpointError  # noqa: E402
from bergen_env.training.train_rllib import load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV_CONFIGS = [
    dict(),
    dict(num_players=3, rules="traditional"),
    dict(num_players=4, partnerships=True),
    dict(num_players=4, rules="double_set", reward="points"),
    dict(num_players=2, rules="double_set", max_hands=1),
]


# ---------------------------------------------------------------------- the adapter


@pytest.mark.parametrize("config", ENV_CONFIGS, ids=str)
@pytest.mark.parametrize("seed", [0, 7])
def test_adapter_matches_aec_env(config: dict, seed: int) -> None:
    """Same seed, same actions: the adapter shows exactly what the AEC env shows."""
    aec = raw_env(**config)
    env = BergenMultiAgentEnv(config)
    rng = np.random.default_rng(seed)
    aec.reset(seed=seed)
    obs, _ = env.reset(seed=seed)
    rewards: dict = {}
    steps = 0
    while not (aec.terminations["player_0"] or aec.truncations["player_0"]):
        agent = aec.agent_selection
        expected, reward, _, _, _ = aec.last()
        assert list(obs) == [agent]
        np.testing.assert_array_equal(obs[agent][OBS_KEY], expected["observation"])
        np.testing.assert_array_equal(obs[agent][MASK_KEY], expected["action_mask"])
        assert obs[agent][MASK_KEY].dtype == np.float32
        if steps:  # reset() carries no reward
            assert rewards[agent] == pytest.approx(reward)
        action = int(rng.choice(np.flatnonzero(expected["action_mask"])))
        aec.step(action)
        obs, rewards, terms, truncs, _ = env.step({agent: action})
        steps += 1
        assert terms["__all__"] == aec.terminations[agent]
        assert truncs["__all__"] == aec.truncations[agent]
    assert sorted(obs) == sorted(aec.possible_agents)  # every agent gets the end
    for agent in aec.possible_agents:
        np.testing.assert_array_equal(obs[agent][OBS_KEY], aec.observe(agent)["observation"])
        assert not obs[agent][MASK_KEY].any()
        assert rewards[agent] == pytest.approx(aec._cumulative_rewards[agent])
        assert terms[agent] == aec.terminations[agent]
        assert truncs[agent] == aec.truncations[agent]
    assert terms["__all__"] != truncs["__all__"]
    if config.get("max_hands") == 1:
        assert truncs["__all__"]
    elif terms["__all__"] and aec.reward_mode == "match":
        assert [rewards[a] for a in aec.possible_agents] == aec.game.returns()


def play(env: BergenMultiAgentEnv, seed: int) -> list:
    """A match of random legal actions; the trajectory as plain values."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    trace = []
    while True:
        (agent, o), *others = obs.items()
        assert not others
        action = int(rng.choice(np.flatnonzero(o[MASK_KEY])))
        obs, rewards, terms, truncs, _ = env.step({agent: action})
        trace.append((agent, action, sorted(rewards.items())))
        if terms["__all__"] or truncs["__all__"]:
            return trace + [sorted(obs), terms, truncs]


@pytest.mark.parametrize(
    "config",
    [
        dict(scripted={1: "random"}),
        dict(num_players=4, partnerships=True, scripted={"1": "heuristic", 3: "random"}),
        dict(num_players=3, rules="traditional", scripted={0: "greedy"}),
    ],
    ids=str,
)
def test_scripted_seats_play_inside_the_env(config: dict) -> None:
    env = BergenMultiAgentEnv(config)
    scripted = {int(seat) for seat in config["scripted"]}
    learners = [f"player_{s}" for s in range(env.rules.num_players) if s not in scripted]
    assert env.possible_agents == learners
    assert set(env.observation_spaces) == set(learners)
    trace = play(env, seed=3)
    assert {agent for agent, _, _ in trace[:-3]} <= set(learners)
    assert trace[-3] == learners
    game = env.aec.game
    if game.terminal:
        final = dict(trace[-4][2])
        for agent in learners:
            assert final[agent] == game.returns()[int(agent[-1])]
    assert play(BergenMultiAgentEnv(config), seed=3) == trace  # same seed, same match


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (dict(scripted={0: "random", 1: "random"}), "none would learn"),
        (dict(scripted={2: "random"}), "not in 0..1"),
        (dict(scripted={0: "nobody"}), "unknown agent"),
        (dict(scripted=["random"]), "must map seats"),
        (dict(num_players=5), "num_players"),
        (dict(scriptd={0: "random"}), r"'scriptd' \(did you mean 'scripted'\?\); valid options"),
    ],
)
def test_adapter_rejects_bad_config(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BergenMultiAgentEnv(config)


def test_step_needs_the_agent_on_turn() -> None:
    env = BergenMultiAgentEnv({"num_players": 3})
    obs, _ = env.reset(seed=0)
    (agent,) = obs
    other = next(a for a in env.possible_agents if a != agent)
    with pytest.raises(ValueError, match=f"{agent} is on turn"):
        env.step({other: 0})
    legal = int(np.flatnonzero(obs[agent][MASK_KEY])[0])
    with pytest.raises(ValueError, match="not on turn"):
        env.step({agent: legal, other: 0})


@pytest.mark.parametrize(
    ("num_players", "partnerships", "expected"),
    [
        (2, False, ["side_0", "side_1"]),
        (3, False, ["side_0", "side_1", "side_2"]),
        (4, True, ["side_0", "side_1", "side_0", "side_1"]),
    ],
)
def test_policy_mapping(num_players: int, partnerships: bool, expected: list[str]) -> None:
    rules = Rules.preset("standard", num_players=num_players, partnerships=partnerships)
    mapping = functools.partial(side_policy_mapping, side_of=tuple(rules.side_of))
    agents = [f"player_{i}" for i in range(num_players)]
    assert [mapping(a, None) for a in agents] == expected
    assert {shared_policy_mapping(a, None) for a in agents} == {"shared"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("bogus: 1", "unknown key"),
        ("policies: everyone", "policies"),
        ("stop_iters: 0", "stop_iters"),
        ("scripted: {0: random, 1: random}", "none would learn"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"default:\n  {line}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


@pytest.mark.parametrize("name", ["rllib_selfplay", "rllib_sides"])
def test_shipped_configs_load(name: str) -> None:
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    assert cfg.name == name


# ---------------------------------------------------------------------- training and checkpoints


TINY = [
    "--stop-iters",
    "1",
    "--set",
    "num_env_runners=0",
    "--set",
    "num_envs_per_env_runner=1",
    "--set",
    "ppo={train_batch_size_per_learner: 128, minibatch_size: 64, num_epochs: 1}",
    "--set",
    "model={fcnet_hiddens: [32]}",
]


def run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_DEDUP_LOGS": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


@functools.cache
def train_once(config: str, run_dir: str, *extra: str) -> Path:
    run(
        [
            "-m",
            "bergen_env.training.train_rllib",
            "--config",
            config,
            "--run-dir",
            run_dir,
            *TINY,
            *extra,
        ]
    )
    return Path(run_dir)


@pytest.fixture(scope="module")
def selfplay_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 1-iteration self-play run (2 players, one shared policy)."""
    return train_once("configs/rllib_selfplay.yaml", str(tmp_path_factory.mktemp("selfplay")))


@pytest.fixture(scope="module")
def sides_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 1-iteration run, 4 players in partnerships, a policy per side, seat 3 scripted."""
    return train_once(
        "configs/rllib_sides.yaml",
        str(tmp_path_factory.mktemp("sides")),
        "--set",
        "scripted={3: random}",
    )


def test_training_run_writes_checkpoint_and_metrics(selfplay_run: Path) -> None:
    final = selfplay_run / "checkpoints" / "final"
    assert (final / "rllib_checkpoint.json").is_file()
    assert (final / "learner_group" / "learner" / "rl_module" / "shared").is_dir()
    rows = list(csv.DictReader((selfplay_run / "metrics.csv").read_text().splitlines()))
    assert [r["iteration"] for r in rows] == ["1"]
    assert float(rows[0]["env_steps"]) >= 128
    assert rows[0]["shared/policy_loss"] != ""
    assert "--stop-iters 1" in (selfplay_run / "command.txt").read_text()
    cfg = load_config(selfplay_run / "config.yaml")
    assert cfg.stop_iters == 1 and cfg.policies == "shared"


def test_checkpoint_plays_through_evaluate(selfplay_run: Path, tmp_path: Path) -> None:
    ckpt = selfplay_run / "checkpoints" / "final"
    out = tmp_path / "result.json"
    argv = [
        "--agents",
        f"rllib:{ckpt}",
        "random",
        "--matches",
        "4",
        "--no-progress",
        "--trust-pickle",
    ]
    argv += ["--json", str(out)]
    run(
        ["-m", "bergen_env.training.evaluate", *argv]
    )  # the "rllib" kind: an entry point of the registry
    result = json.loads(out.read_text())
    text = json.dumps(result)
    assert f"rllib:path={ckpt},trust_pickle=true" in text
    assert "random" in text


def test_sides_checkpoint_holds_one_policy_per_side(sides_run: Path) -> None:
    ckpt = sides_run / "checkpoints" / "final"
    rules = Rules.preset("standard", num_players=4, partnerships=True)
    with pytest.raises(ValueError, match=r"holds policies \['side_0', 'side_1'\]: name one"):
        make_agent(f"rllib:path={ckpt},trust_pickle=true")
    for policy in ("side_0", "side_1"):
        for spec in (
            f"rllib:path={ckpt}:{policy},trust_pickle=true",
            f"rllib:path={ckpt},policy={policy},trust_pickle=true",
        ):
            agent = make_agent(spec)
            assert isinstance(agent, RLlibAgent) and agent.policy == policy
            agent.reset(rules, 0, np.random.default_rng(0))
    rows = list(csv.DictReader((sides_run / "metrics.csv").read_text().splitlines()))
    assert rows[0]["side_0/policy_loss"] != "" and rows[0]["side_1/policy_loss"] != ""


def test_rllib_agent_acts_greedily_and_legally(selfplay_run: Path) -> None:
    agent = make_agent(f"rllib:path={selfplay_run / 'checkpoints' / 'final'},trust_pickle=true")
    aec = raw_env()
    aec.reset(seed=1)
    agent.reset(aec.rules, 0, np.random.default_rng(0))
    for _ in range(30):
        obs = aec.observe(aec.agent_selection)
        action = agent.act(obs["observation"], obs["action_mask"], None)
        legal = np.flatnonzero(obs["action_mask"])
        assert action in legal
        logits = agent.logits(obs["observation"], obs["action_mask"])
        assert (logits[obs["action_mask"] == 0] < -1e30).all()  # the module masks
        assert action == legal[np.argmax(logits[legal])]
        aec.step(action)
    with pytest.raises(
        RLlibCheckpointError, match=r"58 actions but the rules 'double_set' \(sets=2\) have 65"
    ):
        agent.reset(Rules.preset("double_set"), 0, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("suffix", "message"),
    [
        ("/missing", "does not exist"),
        (":nobody", "has no policy 'nobody'; it holds \\['shared'\\]"),
        ("/..", "is not an RLlib algorithm checkpoint"),
    ],
)
def test_rllib_agent_errors(selfplay_run: Path, suffix: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_agent(f"rllib:path={selfplay_run / 'checkpoints' / 'final'}{suffix},trust_pickle=true")


def test_relative_checkpoint_path_loads(
    selfplay_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ray reads checkpoints by URI; a path relative to the working directory must still load."""
    monkeypatch.chdir(selfplay_run)
    agent = make_agent("rllib:path=checkpoints/final,trust_pickle=true")
    agent.reset(Rules.preset("standard"), 0, np.random.default_rng(0))
