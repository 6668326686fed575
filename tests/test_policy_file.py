"""The portable policy format: numpy play, agreement with torch, safety, and rule checks."""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bergen_env import BergenState, Encoder
from bergen_env.action_features import action_features
from bergen_env.agents import PolicyAgent, make_agent
from bergen_env.arena import recorded_rules, run_tournament
from bergen_env.observation import OBS_SIZE
from bergen_env.policy_file import (
    HEADER_KEY,
    PolicyFileError,
    PolicyMismatchWarning,
    read_policy_bytes,
    read_policy_file,
    save_policy_file,
)
from bergen_env.rules import PRESETS, Rules, build_rules
from bergen_env.single_agent import BergenSingleAgentEnv
from bergen_env.symmetry import mirror_actions, mirror_observations, mirrorable
from tests.aec_decisions import aec_decisions
from tests.scored_policy import scored_policy_file

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["standard_2p", "standard_3p", "partners_4p", "draw_2p", "fives_2p"]
#: Each shipped policy's rules: (preset, seating).
TRAINED_FOR = {
    "standard_2p": ("standard", {"num_players": 2}),
    "standard_3p": ("standard", {"num_players": 3}),
    "partners_4p": ("standard", {"num_players": 4, "partnerships": True}),
    "draw_2p": ("draw", {"num_players": 2}),
    "fives_2p": ("fives", {"num_players": 2}),
}
#: The matches of the evaluation recorded in each file's header.
EVAL_MATCHES = {"fives_2p": 1000}


def trained_rules(name: str) -> Rules:
    preset, seating = TRAINED_FOR[name]
    return Rules.preset(preset, **seating)


def shipped(name: str, suffix: str = ".safetensors") -> Path:
    return ROOT / "policies" / f"{name}{suffix}"


def recorded_observations(rules: Rules, seed: int, matches: int = 3) -> tuple[np.ndarray, ...]:
    """Every (observation, mask) of every seat in a few heuristic-vs-heuristic AEC matches."""
    rows = [(obs, mask) for _, _, obs, mask in aec_decisions(rules, seed, "heuristic", matches)]
    return np.array([obs for obs, _ in rows]), np.array([mask for _, mask in rows])


# ---------------------------------------------------------------- the shipped files


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_header_says_what_it_was_trained_for(name: str) -> None:
    path = shipped(name)
    assert path.stat().st_size < 700_000
    policy = read_policy_file(path)
    assert policy.rules == trained_rules(name)
    assert policy.header["obs_size"] == OBS_SIZE
    assert policy.header["num_actions"] == policy.rules.num_actions == 58
    assert [layer["activation"] for layer in policy.header["network"]["layers"]] == [
        "relu",
        "relu",
        "identity",
    ]
    prov = policy.provenance
    assert prov["exported_from"] == f"{name}.zip" and prov["timesteps"] > 0
    assert prov["config"]["default"]["net_arch"] == [256, 256]
    assert (
        prov["evaluation"]["matches"] >= EVAL_MATCHES.get(name, 2000)
        and "heuristic" in prov["evaluation"]["opponents"]
    )


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_plays_a_tournament_with_numpy(name: str) -> None:
    rules = trained_rules(name)
    spec = f"policy:{shipped(name)}"
    others = 1 if rules.partnerships else rules.num_players - 1
    result = run_tournament([spec] + ["random"] * others, rules, matches=4, seed=1)
    assert result.agents[spec].matches >= 4  # rounded up to whole deal groups


def test_policy_agent_is_deterministic() -> None:
    rules = Rules.preset("standard")
    obs, masks = recorded_observations(rules, seed=5, matches=1)
    a, b = make_agent(f"policy:{shipped('standard_2p')}"), PolicyAgent(shipped("standard_2p"))
    for agent in (a, b):
        agent.reset(rules, 0, np.random.default_rng(0))
    assert [a.act(o, m, None) for o, m in zip(obs, masks)] == [
        b.act(o, m, None) for o, m in zip(obs, masks)
    ]


#: The expert-iteration policies: name -> (rules, config, the policy file it started from or
#: None, hidden layers, file size limit).
EXPERTS = {
    "expert_2p": (
        Rules.preset("standard", num_players=2),
        "2p_scorer",
        "standard_2p",
        [256, 256],
        1_000_000,
    ),
    # three layers of 512 from random weights, fitted to the decisions of two earlier runs
    "expert_3p": (Rules.preset("standard", num_players=3), "3p_scorer", None, [512] * 3, 3_200_000),
    "expert_4p": (
        Rules.preset("standard", num_players=4, partnerships=True),
        "4p_scorer",
        "partners_4p",
        [256, 256],
        1_000_000,
    ),
}


@pytest.mark.parametrize("name", EXPERTS)
def test_shipped_expert_policy_says_how_it_was_made(name: str) -> None:
    rules, config_name, start, hidden, size = EXPERTS[name]
    path = shipped(name)
    assert path.stat().st_size < size
    policy = read_policy_file(path)
    assert policy.rules == rules
    assert policy.header["version"] == 2 and policy.header["network"]["scorer"]["features"]
    assert policy.network.layer_sizes == [*hidden, 58]
    assert policy.network.scorer is not None and policy.network.scorer.layer_sizes == [128, 128, 1]
    prov = policy.provenance
    # made when the programs were the top-level package `training`: the files say that name
    source = prov["source"]
    assert (source if source.startswith("bergen_env.") else f"bergen_env.{source}") == (
        "bergen_env.training.expert_iteration"
    )
    assert (
        prov["command"]
        .replace(" -m training.", " -m bergen_env.training.")
        .startswith(
            "python -m bergen_env.training.expert_iteration --config "
            f"configs/expert_iteration_{config_name}.yaml"
        )
    )
    config = prov["config"]["default"]
    assert config["scorer"] == [128, 128]
    if start is None:
        assert config["init_policy"] is None and config["net_arch"] == hidden
    else:
        assert config["init_policy"].endswith(f"{start}.safetensors")
    # the in-run evaluation beat the heuristic: more than an even share of the wins
    assert prov["metrics"]["eval_s"] > 0 and 1 / rules.num_sides < prov["metrics"]["vs_heuristic"]


def test_shipped_scratch_policy_says_how_it_was_made() -> None:
    """PPO from a random network (the training program, configs/scratch_2p.yaml), tanh layers,
    legal choices only."""
    path = shipped("scratch_2p")
    assert path.stat().st_size < 700_000
    policy = read_policy_file(path)
    assert policy.rules == Rules.preset("standard", num_players=2)
    assert [layer["activation"] for layer in policy.header["network"]["layers"]] == [
        "tanh",
        "tanh",
        "identity",
    ]
    prov = policy.provenance
    assert prov["source"].startswith("bergen_env.training.train") and prov["timesteps"] > 0
    assert "--config configs/scratch_2p.yaml" in prov["command"]
    assert prov["command"].endswith(f"--seed {prov['config']['seed']}")
    config = prov["config"]
    assert config["net_arch"] == [256, 256] and config["reward"] == "win"
    assert config["imitation_teacher"] is None
    assert prov["evaluation"]["matches"] >= 2000 and prov["evaluation"]["opponents"] == [
        "heuristic"
    ]
    obs, masks = recorded_observations(policy.rules, seed=2)
    masks = masks.astype(bool)
    agent = make_agent(f"policy:{path}")
    agent.reset(policy.rules, 0, np.random.default_rng(0))
    chosen = np.array([agent.act(o, m, None) for o, m in zip(obs, masks)])
    assert masks[np.arange(len(obs)), chosen].all()


@pytest.mark.parametrize("name", EXPERTS)
def test_shipped_expert_policy_plays_every_recorded_decision(name: str) -> None:
    rules = EXPERTS[name][0]
    path = shipped(name)
    obs, masks = recorded_observations(rules, seed=2)
    masks = masks.astype(bool)
    agent = make_agent(f"policy:{path}")
    agent.reset(rules, 0, np.random.default_rng(0))
    chosen = np.array([agent.act(o, m, None) for o, m in zip(obs, masks)])
    assert masks[np.arange(len(obs)), chosen].all()
    probs = agent.probabilities(obs, masks)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    assert (probs[~masks] == 0).all()
    # the scorer moves choices: the same trunk and head without it choose otherwise somewhere
    plain = read_policy_file(path).network
    plain.scorer = None
    plain_choice = np.where(masks, plain.logits(obs), -np.inf).argmax(axis=1)
    assert (plain_choice != chosen).any()
    spec = f"policy:{path}"
    seats = [spec] + ["random"] * (rules.num_sides - 1)
    result = run_tournament(seats, rules, matches=4, seed=1)
    assert result.agents[spec].matches >= 4


# ------------------------------------------------------------- numpy agrees with torch


@pytest.mark.parametrize("name", SHIPPED)
def test_numpy_forward_pass_matches_torch(name: str) -> None:
    pytest.importorskip("sb3_contrib")
    import torch

    from bergen_env.training.ppo_policies import load_model

    rules = trained_rules(name)
    obs, masks = recorded_observations(rules, seed=11)
    assert len(obs) > 50
    model, _ = load_model(shipped(name, ".zip"), trust_pickle=True)
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.as_tensor(obs), action_masks=masks)
        torch_probs = dist.distribution.probs.numpy()
    agent = PolicyAgent(shipped(name))
    numpy_probs = agent.probabilities(obs, masks)
    np.testing.assert_allclose(numpy_probs, torch_probs, atol=2e-6)
    assert np.all(numpy_probs[masks == 0] == 0.0)
    torch_actions = np.argmax(torch_probs, axis=1)
    agent.reset(rules, 0, np.random.default_rng(0))
    assert [agent.act(o, m, None) for o, m in zip(obs, masks)] == torch_actions.tolist()


def test_exporter_refuses_what_numpy_cannot_express(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    from bergen_env.single_agent import BergenSingleAgentEnv
    from bergen_env.training.export_policy import main
    from bergen_env.training.ppo_policies import save_policy

    env = BergenSingleAgentEnv(opponents=["random"])
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=16, policy_kwargs={"net_arch": [8], "activation_fn": torch.nn.ELU}
    )
    path = save_policy(model, tmp_path / "elu.zip", Rules.preset())
    assert main([str(path)]) == 2
    assert not path.with_suffix(".safetensors").exists()


# ---------------------------------------------------------------- no code from data


class _WritesAFile:
    """Unpickling this calls ``Path.write_text(marker, ...)``: code run from data."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "code ran while loading"))


def crafted_zip(path: Path, marker: Path) -> Path:
    """An SB3-shaped zip whose ``data`` and ``policy.pth`` unpickle to a file write."""
    payload = base64.b64encode(pickle.dumps(_WritesAFile(marker))).decode()
    data = {
        "policy_class": {":type:": "<class 'abc.ABCMeta'>", ":serialized:": payload},
        "observation_space": {
            ":type:": "<class 'gymnasium.spaces.box.Box'>",
            ":serialized:": payload,
        },
        "action_space": {
            ":type:": "<class 'gymnasium.spaces.discrete.Discrete'>",
            ":serialized:": payload,
        },
    }
    meta = {"format": 1, "obs_size": OBS_SIZE, "num_actions": 58, "rules": Rules.preset().to_dict()}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data))
        archive.writestr("policy.pth", pickle.dumps(_WritesAFile(marker)))
        archive.writestr("pytorch_variables.pth", pickle.dumps(_WritesAFile(marker)))
        archive.writestr("_stable_baselines3_version", "2.4.0")
        archive.writestr("bergen_policy.json", json.dumps(meta))
    return path


def test_crafted_zip_runs_no_code_without_the_trust_flag(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from bergen_env.training.evaluate import main as evaluate
    from bergen_env.training.export_policy import main as export
    from bergen_env.training.ppo_policies import UntrustedPolicyError, load_policy

    marker = tmp_path / "pwned.txt"
    evil = crafted_zip(tmp_path / "evil.zip", marker)
    with pytest.raises(UntrustedPolicyError, match=r"evil.zip.*unpickles.*bergen-export-policy"):
        load_policy(evil)
    with pytest.raises(ValueError, match="trust_pickle"):
        make_agent(f"ppo:{evil}")
    assert evaluate(["--agents", f"ppo:{evil}", "random", "--no-progress"]) == 2
    assert export([str(evil)]) == 2  # the exporter reads tensors only: refuses, runs nothing
    with pytest.raises(ValueError, match="Stable-Baselines3 zip.*bergen-export-policy"):
        make_agent(f"policy:{evil}")
    assert not marker.exists()
    # the file is really dangerous: trusting it runs its code (this is what the flag guards)
    with pytest.raises(Exception):  # noqa: B017 (whatever SB3 makes of the payload afterwards)
        load_policy(evil, trust_pickle=True)
    assert marker.read_text() == "code ran while loading"


@pytest.mark.parametrize("algorithm", ["MaskablePPO", "PPO"])
def test_a_plain_sb3_zip_plays_as_ppo_with_the_trust_flag_or_exported(
    tmp_path: Path, algorithm: str
) -> None:
    """A user's own ``model.save()`` zip (no Bergen metadata) of MaskablePPO or PPO on the
    registered env: ``ppo:`` with --trust-pickle plays it; without, the error's one-line export
    command, run as printed, makes a ``policy:`` file of the same actor."""
    pytest.importorskip("sb3_contrib")
    import shlex

    import sb3_contrib
    import stable_baselines3

    from bergen_env.training.evaluate import main as evaluate
    from bergen_env.training.ppo_policies import UntrustedPolicyError, load_policy

    cls = getattr(sb3_contrib if algorithm == "MaskablePPO" else stable_baselines3, algorithm)
    model = cls("MlpPolicy", BergenSingleAgentEnv(), n_steps=64, batch_size=64, seed=0)
    model.save(tmp_path / "model")
    path = tmp_path / "model.zip"
    args = ["--agents", f"ppo:{path}", "greedy", "--matches", "4", "--no-progress"]
    assert evaluate([*args, "--trust-pickle"]) == 0
    with pytest.raises(UntrustedPolicyError) as refused:
        load_policy(path)
    (command,) = [part for part in str(refused.value).split("`")[1::2] if "export" in part]
    assert command == f"bergen-export-policy {path}"
    script = Path(sys.executable).parent / "bergen-export-policy"
    if not script.exists():
        pytest.skip(f"bergen-export-policy is not installed beside {sys.executable}")
    proc = subprocess.run([str(script), *shlex.split(command)[1:]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    portable = make_agent(f"policy:{path.with_suffix('.safetensors')}")
    trusted = load_policy(path, trust_pickle=True)
    rules = Rules.preset("standard")
    assert portable.trained_rules == rules and trusted.trained_rules is None
    for agent in (portable, trusted):
        agent.reset(rules, 0, np.random.default_rng(0))
    for state, seat, obs, mask in aec_decisions(rules, seed=1, agent="random"):
        view = state.public_view(seat)
        assert portable.act(obs, mask, view) == trusted.act(obs, mask, view)
    with pytest.raises(PolicyFileError, match=r"58 actions but the rules to play have 65"):
        trusted.reset(build_rules("standard", sets=2), 0, np.random.default_rng(0))


def crafted_checkpoint(path: Path, marker: Path) -> Path:
    """An RLlib-shaped algorithm checkpoint whose module pickle unpickles to a file write."""
    module = path / "learner_group" / "learner" / "rl_module" / "shared"
    module.mkdir(parents=True)
    (module / "class_and_ctor_args.pkl").write_bytes(pickle.dumps(_WritesAFile(marker)))
    return path


def test_crafted_rllib_checkpoint_runs_no_code_without_the_trust_flag(tmp_path: Path) -> None:
    from bergen_env.training.evaluate import main as evaluate
    from bergen_env.training.rllib_policies import RLlibAgent, UntrustedCheckpointError

    marker = tmp_path / "pwned.txt"
    evil = crafted_checkpoint(tmp_path / "evil_ckpt", marker)
    with pytest.raises(UntrustedCheckpointError, match=r"evil_ckpt.*unpickles.*trust-pickle"):
        RLlibAgent(evil)
    for spec in (f"rllib:{evil}", f"rllib:{evil}:shared", f"rllib:path={evil},policy=shared"):
        with pytest.raises(ValueError, match=r"evil_ckpt.*unpickles.*trust-pickle"):
            make_agent(spec)
    assert evaluate(["--agents", f"rllib:{evil}", "random", "--no-progress"]) == 2
    with pytest.raises(ValueError, match="'trust_pickle' must be true or false"):
        make_agent(f"rllib:path={evil},trust_pickle=1")
    assert not marker.exists()
    pytest.importorskip("ray.rllib", reason="needs the [rllib] extra")
    with pytest.raises(Exception):  # noqa: B017 (whatever Ray makes of the payload afterwards)
        make_agent(f"rllib:path={evil},trust_pickle=true")
    assert marker.read_text() == "code ran while loading"


@pytest.mark.parametrize(
    ("spec", "trusted"),
    [
        ("ppo:run/model.zip", "ppo:path=run/model.zip,trust_pickle=true"),
        ("rllib:ckpt/final", "rllib:path=ckpt/final,trust_pickle=true"),
        ("rllib:ckpt/final:side_1", "rllib:path=ckpt/final:side_1,trust_pickle=true"),
        ("rllib:path=c,policy=p", "rllib:path=c,policy=p,trust_pickle=true"),
        ("ppo:path=m.zip,trust_pickle=false", "ppo:path=m.zip,trust_pickle=false"),
        ("policy:p.safetensors", "policy:p.safetensors"),
        ("search:samples=10", "search:samples=10"),
    ],
)
def test_trust_pickle_flag_rewrites_only_pickle_kinds(spec: str, trusted: str) -> None:
    from bergen_env.training.cli import trust_pickle

    assert trust_pickle([spec, None]) == [trusted, None]


# -------------------------------------------------------------- trained for these rules


@pytest.mark.parametrize(
    ("name", "rules", "wrong"),
    [
        ("standard_2p", Rules.preset("standard", num_players=3), "num_players=2 (playing 3)"),
        ("standard_2p", Rules.preset("traditional"), "'traditional' rules"),
        (
            "partners_4p",
            Rules.preset("standard", num_players=4),
            "partnerships=True (playing False)",
        ),
        ("standard_3p", Rules.preset("standard", num_players=3, target=15), "target=10"),
    ],
)
def test_mismatched_policy_is_refused(name: str, rules: Rules, wrong: str) -> None:
    agent = make_agent(f"policy:{shipped(name)}")
    with pytest.raises(PolicyFileError, match="allow_mismatch") as info:
        agent.reset(rules, 0, np.random.default_rng(0))
    message = str(info.value)
    assert name in message and wrong in message and "was trained for" in message
    lenient = make_agent(f"policy:path={shipped(name)},allow_mismatch=true")
    with pytest.warns(PolicyMismatchWarning, match=wrong.split(" ")[0]):
        lenient.reset(rules, 0, np.random.default_rng(0))


def test_mismatched_action_count_is_refused_even_when_allowed() -> None:
    agent = make_agent(f"policy:path={shipped('standard_2p')},allow_mismatch=true")
    with pytest.raises(PolicyFileError, match="58 actions cannot play 65"):
        agent.reset(Rules.preset("double_set"), 0, np.random.default_rng(0))


def test_mismatched_ppo_zip_is_refused() -> None:
    pytest.importorskip("sb3_contrib")
    from bergen_env.training.ppo_policies import load_policy

    agent = load_policy(shipped("standard_2p", ".zip"), trust_pickle=True)
    with pytest.raises(PolicyFileError, match="standard_2p.zip.*num_players=2 \\(playing 4\\)"):
        agent.reset(Rules.preset("standard", num_players=4), 0, np.random.default_rng(0))


def test_evaluate_cli_names_both_rules(capsys: pytest.CaptureFixture) -> None:
    from bergen_env.training.evaluate import main

    spec = f"policy:{shipped('standard_2p')}"
    assert main(["--agents", spec, "heuristic", "random", "--players", "3", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "2 players" in err and "3 players" in err and "standard_2p.safetensors" in err


def test_evaluate_cli_plays_the_rules_the_file_records(capsys: pytest.CaptureFixture) -> None:
    from bergen_env.training.evaluate import main

    spec = f"policy:{shipped('fives_2p')}"
    assert main(["--agents", spec, "greedy", "--matches", "2", "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith("fives (2p): ")
    spec = f"policy:{shipped('partners_4p')}"
    assert main(["--agents", spec, "greedy", "--matches", "8", "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith("standard (4p partnerships): ")


def test_arena_plays_the_rules_the_files_record() -> None:
    fives = f"policy:{shipped('fives_2p')}"
    result = run_tournament([fives, "greedy"], matches=2, seed=0)
    assert result.config["rules"] == trained_rules("fives_2p").to_dict()
    agent = make_agent(fives)  # an instance records its rules too
    result = run_tournament([agent, make_agent("random")], matches=2, seed=0)
    assert result.config["rules"] == trained_rules("fives_2p").to_dict()
    assert recorded_rules(["greedy", "random"]) is None
    with pytest.raises(ValueError, match="no rules given and no agent records"):
        run_tournament(["greedy", "random"], matches=2)
    other = f"policy:{shipped('draw_2p')}"
    with pytest.raises(
        PolicyFileError,
        match=r"fives_2p.safetensors \('fives' rules, 2 players\) "
        r"and .*draw_2p.safetensors \('draw' rules, 2 players\) were trained for "
        r"different rules \(lead: 'rotate' vs 'highest_any'",
    ):
        run_tournament([fives, other], matches=2)
    with pytest.raises(PolicyFileError, match="fives_2p.safetensors' was trained for 'fives'"):
        run_tournament([fives, "greedy"], Rules.preset("standard"), matches=2)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("tensor", ["layers.0.weight", "layers.1.bias"])
def test_non_finite_weights_are_refused_at_load(tmp_path: Path, tensor: str, value: float) -> None:
    path = _tiny(tmp_path)
    from safetensors.numpy import load_file

    array = load_file(str(path))[tensor].copy()
    array.flat[3] = value
    path = _tiny(tmp_path, **{f"tensor:{tensor}": array})
    message = f"tiny.safetensors': tensor '{tensor}' holds 1 non-finite value"
    with pytest.raises(PolicyFileError, match=message):
        read_policy_file(path)
    with pytest.raises(ValueError, match=message):
        make_agent(f"policy:{path}")


def test_non_finite_weights_are_not_written(tmp_path: Path) -> None:
    w = [np.full((58, OBS_SIZE), np.nan, dtype=np.float32)]
    with pytest.raises(PolicyFileError, match="tensor 'layers.0.weight' holds 13920 non-finite"):
        save_policy_file(tmp_path / "nan", Rules.preset(), w, [np.zeros(58)], ["identity"])
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- bad files


def _tiny(tmp_path: Path, **header_changes) -> Path:
    rules = Rules.preset()
    rng = np.random.default_rng(0)
    w = [rng.normal(size=(4, OBS_SIZE)), rng.normal(size=(58, 4))]
    b = [np.zeros(4), np.zeros(58)]
    path = save_policy_file(tmp_path / "tiny", rules, w, b, ["tanh", "identity"])
    if header_changes:
        from safetensors import safe_open
        from safetensors.numpy import load_file, save_file

        with safe_open(str(path), framework="numpy") as f:
            header = json.loads(f.metadata()[HEADER_KEY])
        tensors = load_file(str(path))
        for key, value in header_changes.items():
            if key.startswith("tensor:"):
                tensors[key[7:]] = value
            else:
                header[key] = value
        save_file(tensors, str(path), metadata={HEADER_KEY: json.dumps(header)})
    return path


def test_written_file_round_trips(tmp_path: Path) -> None:
    path = _tiny(tmp_path)
    assert path.name == "tiny.safetensors"
    policy = read_policy_file(path)
    assert policy.network.activations == ["tanh", "identity"]
    assert policy.rules == Rules.preset()


def test_mirrored_policy_plays_the_same_from_either_end() -> None:
    """``mirror=true``: the logits of a position's mirror image are its logits mirrored; on an
    empty line they are the network's own; a batch gives what single positions give."""
    rules = Rules.preset("standard")
    mirrored = make_agent(f"policy:path={shipped('expert_2p')},mirror=true")
    plain = make_agent(f"policy:{shipped('expert_2p')}")
    encoder, rng = Encoder(rules), np.random.default_rng(0)
    positions, asymmetric = [], 0
    for seed in range(3):
        s = BergenState(rules, seed=seed)
        while not s.terminal and s.hand_number < 3:
            obs, mask = encoder.observe(s, s.current_player), s.legal_mask()
            positions.append((obs, mask))
            image, image_mask = mirror_observations(obs), mirror_actions(mask)
            logits, own = mirrored.logits(obs, mask), plain.logits(obs, mask)
            if mirrorable(obs):
                back = mirror_actions(mirrored.logits(image, image_mask))
                np.testing.assert_array_equal(back, logits)
            else:
                np.testing.assert_array_equal(logits, own)
            legal = mask.astype(bool)
            asymmetric += not np.allclose(
                mirror_actions(plain.logits(image, image_mask))[legal], own[legal]
            )
            legal_actions = np.flatnonzero(mask)
            s.apply_action(int(rng.choice(legal_actions)))
    assert asymmetric > 10  # the network alone is not symmetric: the mean makes it so
    obs, masks = (np.stack(x) for x in zip(*positions))
    batch = mirrored.logits(obs, masks)
    for row, (o, m) in zip(batch, positions):
        np.testing.assert_allclose(row, mirrored.logits(o, m), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mirrored.probabilities(obs, masks).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="'mirror' must be true or false"):
        make_agent(f"policy:path={shipped('expert_2p')},mirror=1")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2}, "format version 2"),
        ({"format": "other"}, "not 'bergen-policy'"),
        ({"obs_size": 10}, "header obs_size=10"),
        ({"num_actions": 57}, "57 actions"),
        ({"tensor:layers.1.weight": np.zeros((58, 5), np.float32)}, "reads 5 inputs"),
        ({"tensor:layers.0.weight": np.zeros((4, 10), np.float32)}, "observations of size 10"),
    ],
)
def test_bad_header_or_tensors_are_named(tmp_path: Path, change: dict, message: str) -> None:
    path = _tiny(tmp_path, **change)
    with pytest.raises(PolicyFileError, match=message):
        read_policy_file(path)


def test_unknown_activation_and_unreadable_files(tmp_path: Path) -> None:
    path = _tiny(tmp_path)
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    with safe_open(str(path), framework="numpy") as f:
        header = json.loads(f.metadata()[HEADER_KEY])
    header["network"]["layers"][0]["activation"] = "gelu"
    save_file(load_file(str(path)), str(path), metadata={HEADER_KEY: json.dumps(header)})
    with pytest.raises(PolicyFileError, match="tiny.safetensors.*unknown activation 'gelu'"):
        read_policy_file(path)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\x00" * 40)
    with pytest.raises(ValueError, match="garbage.safetensors.*not a readable"):
        make_agent(f"policy:{garbage}")
    with pytest.raises(ValueError, match="nope.safetensors.*does not exist"):
        make_agent(f"policy:{tmp_path / 'nope.safetensors'}")
    bare = tmp_path / "bare.safetensors"
    from safetensors.numpy import save_file as save

    save({"x": np.zeros(2, np.float32)}, str(bare))
    with pytest.raises(PolicyFileError, match="no 'bergen_policy' header"):
        read_policy_file(bare)


def _refusal(read, source) -> str:
    with pytest.raises(PolicyFileError) as caught:
        read(source)
    return str(caught.value)


@pytest.mark.parametrize("name", ["standard_2p", "expert_2p", "partners_4p"])
def test_bytes_and_path_readers_agree(name: str) -> None:
    """A policy read from its bytes (an upload) is the one read from its file: the header,
    the rules and every layer's arrays."""
    path = shipped(name)
    from_path, from_bytes = read_policy_file(path), read_policy_bytes(path.read_bytes())
    assert from_bytes.header == from_path.header and from_bytes.rules == from_path.rules
    for net_a, net_b in [(from_path.network, from_bytes.network)] + (
        [(from_path.network.scorer, from_bytes.network.scorer)]
        if from_path.network.scorer is not None
        else []
    ):
        for group_a, group_b in zip(net_a.arrays(), net_b.arrays()):
            for a, b in zip(group_a, group_b):
                np.testing.assert_array_equal(a, b)


def _bad_files(tmp_path: Path) -> list[Path]:
    """Files each reader refuses for another reason."""
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\x00" * 40)
    zipped = tmp_path / "model.safetensors"  # a zip under the policy suffix
    zipped.write_bytes(shipped("standard_2p", ".zip").read_bytes())
    bare = tmp_path / "bare.safetensors"
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(2, np.float32)}, str(bare))
    return [
        garbage,
        zipped,
        bare,
        _tiny(tmp_path / "v", version=3),
        _tiny(tmp_path / "o", obs_size=10),
        _tiny(tmp_path / "n", **{"tensor:layers.1.bias": np.full(58, np.nan, np.float32)}),
        _tiny(tmp_path / "s", **{"tensor:layers.1.weight": np.zeros((58, 5), np.float32)}),
    ]


def test_bad_bytes_give_the_error_a_bad_file_gives(tmp_path: Path) -> None:
    """Each refusal from bytes is the path reader's, with the caller's name of the bytes in
    place of the file's, on one line."""
    for folder in ("v", "o", "n", "s"):
        (tmp_path / folder).mkdir()
    for path in _bad_files(tmp_path):
        by_path = _refusal(read_policy_file, path)
        by_bytes = _refusal(lambda d: read_policy_bytes(d, where="the upload"), path.read_bytes())
        assert by_bytes == by_path.replace(f"policy file {str(path)!r}", "the upload"), path
        assert "\n" not in by_bytes and by_bytes.startswith("the upload")


# ---------------------------------------------------------------- files with an action scorer


def test_scored_file_adds_the_scorer_to_each_legal_action(tmp_path: Path) -> None:
    path = scored_policy_file(tmp_path)
    policy = read_policy_file(path)
    assert policy.header["version"] == 2
    assert policy.header["network"]["scorer"]["features"] == "afterstate-1"
    from safetensors.numpy import load_file

    t = {k: v.astype(np.float64) for k, v in load_file(str(path)).items()}
    obs, masks = recorded_observations(Rules.preset(), seed=5, matches=1)
    hidden = np.maximum(obs @ t["layers.0.weight"].T + t["layers.0.bias"], 0)
    expected = hidden @ t["layers.1.weight"].T + t["layers.1.bias"]
    rows, actions = np.nonzero(masks)
    x = np.concatenate([hidden[rows], action_features(obs[rows], actions)], axis=1)
    inner = np.maximum(x @ t["scorer.0.weight"].T + t["scorer.0.bias"], 0)
    expected[rows, actions] += (inner @ t["scorer.1.weight"].T + t["scorer.1.bias"])[:, 0]
    got = policy.network.logits(obs, masks)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    one = np.array([policy.network.logits(o, m) for o, m in zip(obs, masks)])
    np.testing.assert_allclose(one, got, rtol=1e-5, atol=1e-5)
    assert (
        np.abs(np.where(masks, got - policy.network.logits(obs, np.ones_like(masks)), 0)).max()
        < 1e-4
    )
    with pytest.raises(ValueError, match="needs the mask"):
        policy.network.logits(obs[0])
    with pytest.raises(ValueError, match="action mask of shape"):
        policy.network.logits(obs[:2], masks[:1])
    agent = make_agent(f"policy:{path}")
    twin = pickle.loads(pickle.dumps(agent))
    runs = [
        run_tournament([a, "heuristic"], Rules.preset(), matches=4, seed=3).records
        for a in (agent, twin)
    ]
    assert [r.winner for r in runs[0]] == [r.winner for r in runs[1]]


def _rewrite(path: Path, change) -> None:
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    with safe_open(str(path), framework="numpy") as f:
        header = json.loads(f.metadata()[HEADER_KEY])
    change(header)
    save_file(load_file(str(path)), str(path), metadata={HEADER_KEY: json.dumps(header)})


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(
    ("players", "partnerships"), [(2, False), (3, False), (4, False), (4, True)]
)
@pytest.mark.parametrize("options", ["", ",mirror=true"])
def test_scored_policy_is_legal_reproducible_and_picklable_under_every_preset(
    tmp_path: Path, preset: str, players: int, partnerships: bool, options: str
) -> None:
    """A policy with an action scorer in every seat of a match (at most 20 hands): only legal
    actions, the same match again, and a pickled copy (as sent to a worker) chooses what the
    original does; also with the mirror image's logits averaged in."""
    rules = Rules.preset(preset, num_players=players, partnerships=partnerships)
    path = scored_policy_file(tmp_path, hidden=16, width=8, rules=rules)
    spec = f"policy:path={path}{options}"
    encoder = Encoder(rules)

    def match(seed: int) -> list[int]:
        s = BergenState(rules, seed=seed)
        agents = [make_agent(spec) for _ in range(players)]
        for seat, agent in enumerate(agents):
            agent.reset(rules, seat, np.random.default_rng(seat))
        actions: list[int] = []
        while not s.terminal and s.hand_number < 20:  # a weak policy may never reach the target
            seat = s.current_player
            obs, mask, view = encoder.observe(s, seat), s.legal_mask(), s.public_view(seat)
            action = agents[seat].act(obs, mask, view)
            assert s.is_legal(action), f"illegal {action} in {s!r}"
            if len(actions) % 25 == 0:
                assert pickle.loads(pickle.dumps(agents[seat])).act(obs, mask, view) == action
            actions.append(action)
            s.apply_action(action)
        return actions

    first = match(seed=players)
    assert len(set(first)) > 3
    assert first == match(seed=players)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h: h.update(version=1), "an action scorer needs format version 2"),
        (lambda h: h["network"]["scorer"].update(features="other"), "reads features 'other'"),
        (lambda h: h["network"].pop("scorer"), "format version 2 without an action scorer"),
        (lambda h: h.update(version=3), "reads version 1 or 2"),
    ],
)
def test_bad_scorer_headers_are_named(tmp_path: Path, change, message: str) -> None:
    path = scored_policy_file(tmp_path)
    _rewrite(path, change)
    with pytest.raises(PolicyFileError, match=f"scored.safetensors.*{message}"):
        read_policy_file(path)


def test_scorer_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    w = [rng.normal(size=(4, OBS_SIZE)), rng.normal(size=(58, 4))]
    b = [np.zeros(4), np.zeros(58)]
    scorer = ([rng.normal(size=(1, 4))], [np.zeros(1)], ["identity"])
    with pytest.raises(ValueError, match=r"must map 4 hidden activations and \d+ action features"):
        save_policy_file(tmp_path / "x", Rules.preset(), w, b, ["relu", "identity"], scorer=scorer)


def _source_network(seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """A tanh network's layers, as another framework would hand them over, and a batch of real
    observations."""
    rng = np.random.default_rng(seed)
    w = [rng.normal(size=(8, OBS_SIZE)) * 0.2, rng.normal(size=(58, 8))]
    b = [rng.normal(size=8), rng.normal(size=58)]
    env = BergenSingleAgentEnv(opponents=["random"])
    obs = [env.reset(seed=s)[0] for s in range(5)]
    return w, b, np.stack(obs)


def _source_logits(w: list[np.ndarray], b: list[np.ndarray], obs: np.ndarray) -> np.ndarray:
    return np.tanh(obs @ w[0].T + b[0]) @ w[1].T + b[1]


def test_check_writes_a_file_that_gives_the_source_logits(tmp_path: Path) -> None:
    w, b, obs = _source_network()
    expected = _source_logits(w, b, obs)
    path = save_policy_file(
        tmp_path / "ok", Rules.preset(), w, b, ["tanh", "identity"], check=(obs, expected)
    )
    np.testing.assert_allclose(read_policy_file(path).network.logits(obs), expected, atol=1e-4)


@pytest.mark.parametrize(
    "activations, transpose",
    [(["relu", "identity"], False), (["tanh", "tanh"], False), (["tanh", "identity"], True)],
)
def test_check_refuses_a_network_that_is_not_the_source(
    tmp_path: Path, activations: list[str], transpose: bool
) -> None:
    w, b, obs = _source_network()
    expected = _source_logits(w, b, obs)
    if transpose:  # the first layer's weight read with its rows in another order
        w = [w[0][::-1].copy(), w[1]]
    with pytest.raises(ValueError, match="bad.safetensors not written: .*differ from the given"):
        save_policy_file(tmp_path / "bad", Rules.preset(), w, b, activations, check=(obs, expected))
    assert not (tmp_path / "bad.safetensors").exists()


def test_check_refuses_logits_of_the_wrong_shape_or_nan(tmp_path: Path) -> None:
    w, b, obs = _source_network()
    expected = _source_logits(w, b, obs)
    rules = Rules.preset()
    with pytest.raises(ValueError, match=r"observations \(5, \d+\) and logits \(4, 58\)"):
        save_policy_file(
            tmp_path / "x", rules, w, b, ["tanh", "identity"], check=(obs, expected[:4])
        )
    expected[2, 3] = np.nan
    with pytest.raises(ValueError, match="not written"):
        save_policy_file(tmp_path / "x", rules, w, b, ["tanh", "identity"], check=(obs, expected))
    assert not (tmp_path / "x.safetensors").exists()


def test_check_of_a_scorer_network_has_every_action_legal(tmp_path: Path) -> None:
    network = read_policy_file(scored_policy_file(tmp_path)).network
    weights, biases, activations = network.arrays()
    scorer = network.scorer.arrays()
    _, _, obs = _source_network()
    expected = network.logits(obs, np.ones((len(obs), 58), dtype=bool))
    rules = Rules.preset()
    save_policy_file(tmp_path / "again", rules, weights, biases, activations, scorer=scorer,
                     check=(obs, expected))  # fmt: skip
    with pytest.raises(ValueError, match="not written"):
        save_policy_file(tmp_path / "wrong", rules, weights, biases, activations, scorer=scorer,
                         check=(obs, expected + 0.01))  # fmt: skip


# ---------------------------------------------------------------- the base install


@pytest.mark.slow
def test_fresh_base_install_evaluates_a_portable_policy(tmp_path: Path) -> None:
    """``pip install .`` alone (no torch): the CLI plays the shipped portable policy."""
    src = tmp_path / "src"
    skip = shutil.ignore_patterns(".git", ".venv", "runs", "build", "*.egg-info", "__pycache__")
    shutil.copytree(ROOT, src, ignore=skip)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(src)], check=True, timeout=900)
    no_torch = subprocess.run([str(py), "-c", "import torch"], capture_output=True, cwd=tmp_path)
    assert no_torch.returncode != 0
    script = venv / "bin" / "bergen-evaluate"  # the console script, where the package has it
    evaluate = [str(script)] if script.exists() else [str(py), "-m", "bergen_env.training.evaluate"]
    policy = f"policy:{shipped('standard_2p')}"
    out = subprocess.run(
        [*evaluate, "--agents", policy, "heuristic", "--matches", "50", "--no-progress"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "standard_2p.safetensors" in out.stdout and "50" in out.stdout
    zip_spec = f"ppo:{shipped('standard_2p', '.zip')}"
    refused = subprocess.run(
        [*evaluate, "--agents", zip_spec, "heuristic", "--no-progress"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
