"""Expert iteration (bergen_env.training.expert_iteration): labels, targets, config errors, a tiny
run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from bergen_env.agents.base import make_agent  # noqa: E402
from bergen_env.arena import run_tournament  # noqa: E402
from bergen_env.policy_file import read_policy_file  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.training.config import ConfigError  # noqa: E402
from bergen_env.training.expert_iteration import main  # noqa: E402
from bergen_env.training.expert_iteration_collection import (  # noqa: E402
    Decisions,
    collect_decisions,
    collect_parallel,
)
from bergen_env.training.expert_iteration_config import ExpertIterationConfig, load_config  # noqa: E402
from bergen_env.training.expert_iteration_fitting import (  # noqa: E402
    imitation_loss,
    soft_targets,
    split_matches,
)
from bergen_env.training.expert_iteration_networks import (  # noqa: E402
    ScoredNetwork,
    build_network,
    network_arrays,
    numpy_network,
    policy_logits,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_2P = ROOT / "policies" / "standard_2p.safetensors"


def tiny(**changes: object) -> ExpertIterationConfig:
    """A config small enough for a test: a few decisions, a search of a few samples."""
    base = dict(
        decisions=24,
        job_decisions=12,
        teacher="search:samples=3",
        net_arch=[16],
        epochs=2,
        batch_size=8,
        held_out=0.3,
        eval_matches=2,
        player=["network", "heuristic"],
        opponents=["greedy"],
    )
    return ExpertIterationConfig(**(base | changes))


@pytest.fixture(scope="module")
def labelled() -> Decisions:
    cfg = tiny()
    net = build_network(cfg, Rules.preset("standard").num_actions)
    return collect_decisions(cfg, numpy_network(net), 40, seed=3)


def test_labels_are_reproducible_from_the_seed(labelled: Decisions) -> None:
    cfg = tiny()
    net = build_network(cfg, Rules.preset("standard").num_actions)
    again = collect_decisions(cfg, numpy_network(net), 40, seed=3)
    for f in dataclasses.fields(Decisions):
        np.testing.assert_array_equal(getattr(labelled, f.name), getattr(again, f.name))
    other = collect_decisions(cfg, numpy_network(net), 40, seed=4)
    assert not np.array_equal(other.values[:10], labelled.values[:10])


def test_jobs_make_the_same_data_for_any_worker_count() -> None:
    cfg = tiny()
    arrays = network_arrays(build_network(cfg, Rules.preset("standard").num_actions))
    one = collect_parallel(cfg, arrays, 24, seed=9, progress=False)
    two = collect_parallel(dataclasses.replace(cfg, workers=2), arrays, 24, seed=9, progress=False)
    assert len(one) >= 24
    for f in dataclasses.fields(Decisions):
        np.testing.assert_array_equal(getattr(one, f.name), getattr(two, f.name))


def test_decisions_are_real_choices_with_values_on_legal_actions(labelled: Decisions) -> None:
    assert len(labelled) >= 40
    assert (labelled.masks.sum(axis=1) > 1).all()  # forced moves are not labelled
    assert (labelled.values[~labelled.masks] == 0).all()
    assert (np.abs(labelled.values) <= 1).all()  # match units: 2 P(win) - 1
    assert labelled.masks[np.arange(len(labelled)), labelled.heuristic].all()
    assert np.all(np.diff(labelled.match) >= 0)


@pytest.mark.parametrize("temperature", [0.01, 0.03, 1.0])
def test_targets_are_distributions_over_legal_actions(
    labelled: Decisions, temperature: float
) -> None:
    p = soft_targets(labelled.values, labelled.masks, temperature)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    assert (p[~labelled.masks] == 0).all()
    assert (p[labelled.masks] > 0).all() or temperature < 0.1  # tiny ones may underflow
    best = np.where(labelled.masks, labelled.values, -np.inf).argmax(axis=1)
    assert (p.argmax(axis=1) == best).all()


def test_targets_follow_the_values() -> None:
    values = np.array([[0.1, 0.0, 0.3, 0.5]], dtype=np.float32)
    masks = np.array([[True, False, True, False]])
    p = soft_targets(values, masks, temperature=0.1)
    e = np.exp([1.0, 3.0])
    np.testing.assert_allclose(p[0], [e[0] / e.sum(), 0.0, e[1] / e.sum(), 0.0], rtol=1e-6)
    with pytest.raises(ValueError, match="no legal action"):
        soft_targets(values, np.zeros((1, 4), dtype=bool), 0.1)


def test_loss_is_the_cross_entropy_to_the_targets() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(6, 5)).astype(np.float32)
    masks = rng.random((6, 5)) < 0.7
    masks[:, 0] = True
    logits = rng.normal(size=(6, 5)).astype(np.float32)
    targets = soft_targets(values, masks, 0.5)
    z = np.where(masks, logits, -np.inf)
    pi = np.exp(z - z.max(axis=1, keepdims=True))
    pi /= pi.sum(axis=1, keepdims=True)
    cross_entropy = -np.mean(np.sum(targets * np.log(np.where(masks, pi, 1.0)), axis=1))
    loss = float(imitation_loss(*(torch.as_tensor(x) for x in (logits, masks, targets))))
    assert loss == pytest.approx(cross_entropy, rel=1e-5)


def test_held_out_split_keeps_matches_whole(labelled: Decisions) -> None:
    train, test = split_matches(labelled, 0.3, seed=0)
    assert len(train) + len(test) == len(labelled) and len(test)
    assert not set(labelled.match[train]) & set(labelled.match[test])


def test_network_starts_from_the_shipped_policy() -> None:
    cfg = tiny(init_policy=str(SHIPPED_2P))
    net = build_network(cfg, Rules.preset("standard").num_actions)
    shipped = read_policy_file(SHIPPED_2P).network
    obs = np.random.default_rng(0).random((5, shipped.input_size), dtype=np.float32)
    with torch.no_grad():
        mine = net(torch.as_tensor(obs)).numpy()
    np.testing.assert_allclose(mine, shipped.logits(obs), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("decisions", 0, r"'decisions' must be an int >= 1, got 0"),
        ("workers", "two", r"'workers' must be an int in \[1, 256\], got 'two'"),
        ("temperature", 0, "'temperature' must be a number > 0"),
        ("held_out", 1.0, "'held_out' must be a number in"),
        ("teacher", "heuristic", "'teacher' must be a search agent string"),
        ("teacher", "search:budget_ms=5", "'teacher' must not set budget_ms"),
        ("teacher", "search:samples=0", "'teacher'.*samples"),
        ("player", [], "'player' must be a non-empty list"),
        ("player", ["nobody"], "'player'/'opponents'.*nobody"),
        ("opponents", ["network"], "'opponents' must be agent strings"),
        ("opponents", ["greedy", "greedy"], "'opponents' must hold 1 agent string \\(the one seat"),
        ("net_arch", [0], "'net_arch' must be a non-empty list"),
        ("activation", "gelu", "'activation' must be"),
        ("reward", "points", "'reward' must be one of 'match', got 'points'"),
        ("init_policy", "nope.safetensors", "'init_policy'.*nope.safetensors.*does not exist"),
        ("init_policy", str(ROOT / "policies" / "standard_3p.safetensors"), "other rules"),
        ("num_players", 5, "num_players"),
    ],
)
def test_bad_fields_are_named(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        tiny(**{key: value})


def test_config_file_errors_name_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "ei.yaml"
    path.write_text("default:\n  decisions: 10\n  sampels: 3\n")
    with pytest.raises(
        ConfigError, match=r"ei.yaml: unknown key 'sampels'; valid keys: \['activation', "
    ):
        load_config(path)
    with pytest.raises(ConfigError, match="unknown key 'epoch'"):
        load_config(path, ["epoch=3"])
    path.write_text("default:\n  learning_rate: 3e-4\n  epochs: 2\n")
    assert load_config(path).learning_rate == 3e-4


@pytest.mark.parametrize(
    "key", ["lr_schedule", "weight_decay", "value_weight", "mirror", "regret_weight", "relabel"]
)
def test_removed_fit_options_are_unknown_keys(tmp_path: Path, key: str) -> None:
    """Fit options removed after measuring no gain are refused by name, like any unknown key."""
    path = tmp_path / "ei.yaml"
    path.write_text(f"default:\n  epochs: 2\n  {key}: 0\n")
    with pytest.raises(ConfigError, match=rf"ei.yaml: unknown key '{key}'; valid keys: "):
        load_config(path)
    path.write_text("default:\n  epochs: 2\n")
    with pytest.raises(ConfigError, match=rf"--set '{key}=0' .*unknown key '{key}'"):
        load_config(path, [f"{key}=0"])


def test_a_policy_fitted_before_the_removal_still_starts_a_run() -> None:
    """``expert_3p``'s provenance records the removed key ``regret_weight``: only its rules and
    network are read, so it loads and starts a run."""
    path = ROOT / "policies" / "expert_3p.safetensors"
    shipped = read_policy_file(path)
    assert "regret_weight" in shipped.provenance["config"]["default"]
    cfg = tiny(num_players=3, init_policy=str(path), player=["network"], opponents=["heuristic"])
    net = build_network(cfg, Rules.preset("standard").num_actions)
    obs = np.random.default_rng(0).random((4, shipped.network.input_size), dtype=np.float32)
    masks = np.ones((4, 58), dtype=bool)
    np.testing.assert_allclose(
        numpy_network(net).logits(obs, masks), shipped.network.logits(obs, masks), rtol=1e-6
    )


def test_tiny_run_writes_a_policy_that_plays(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    fields = dataclasses.asdict(tiny(iterations=2))
    import yaml

    config.write_text(yaml.safe_dump({"default": fields}))
    path = main(["--config", str(config), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert path == tmp_path / "run" / "policy.safetensors"
    rules = Rules.preset("standard")
    policy = read_policy_file(path)
    assert (
        policy.rules == rules
        and policy.provenance["source"] == "bergen_env.training.expert_iteration"
    )
    assert policy.provenance["config"]["default"]["teacher"] == "search:samples=3"
    metrics = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    assert len(metrics) == 3 and "regret_heuristic" in metrics[0] and "vs_heuristic" in metrics[0]
    assert (tmp_path / "run" / "iter_1.safetensors").is_file()
    data = Decisions.load(tmp_path / "run" / "data_1.npz")
    assert len(data) >= 24
    spec = f"policy:{path}"
    result = run_tournament([spec, "random"], rules, matches=2, seed=0)
    assert result.agents[spec].matches >= 2
    agent = make_agent(spec)
    agent.reset(rules, 0, np.random.default_rng(0))


def test_fit_from_saved_decisions(tmp_path: Path, labelled: Decisions) -> None:
    import yaml

    labelled.save(tmp_path / "data.npz")
    config = tmp_path / "fit.yaml"
    cfg = tiny(eval_matches=0, temperature=0.05)
    config.write_text(yaml.safe_dump({"default": dataclasses.asdict(cfg)}))
    run = tmp_path / "run"
    path = main(
        ["--config", str(config), "--run-dir", str(run), "--data", str(tmp_path / "data.npz")]
    )
    policy = read_policy_file(path)
    assert policy.rules == Rules.preset("standard")
    assert policy.provenance["config"]["default"]["temperature"] == 0.05
    assert not (run / "data_0.npz").exists()  # nothing collected
    row = (run / "metrics.csv").read_text().splitlines()[1].split(",")
    assert int(row[1]) == len(labelled)  # the decisions fitted: the saved ones
    with pytest.raises(ConfigError, match="--data: file .*nope.npz"):
        main(["--config", str(config), "--run-dir", str(run), "--data", str(tmp_path / "nope.npz")])


# ---------------------------------------------------------------------- the action scorer


def test_scorer_starts_as_the_shipped_policy_and_matches_numpy(labelled: Decisions) -> None:
    cfg = tiny(init_policy=str(SHIPPED_2P), scorer=[8, 8])
    net = build_network(cfg, Rules.preset("standard").num_actions)
    assert isinstance(net, ScoredNetwork)
    shipped = read_policy_file(SHIPPED_2P).network
    obs, masks = labelled.obs, labelled.masks
    t_obs, t_masks = torch.as_tensor(obs), torch.as_tensor(masks)
    with torch.no_grad():
        start = policy_logits(net, t_obs, t_masks).numpy()
    np.testing.assert_allclose(start, shipped.logits(obs), rtol=1e-6, atol=1e-5)
    with torch.no_grad():
        for p in net.scorer.parameters():
            p.add_(0.1 * torch.randn_like(p))
        moved = policy_logits(net, t_obs, t_masks).numpy()
    mine = numpy_network(net).logits(obs, masks)
    np.testing.assert_allclose(moved, mine, rtol=1e-5, atol=1e-4)
    assert np.abs(np.where(masks, moved - start, 0)).max() > 0.01  # the scorer now counts
    np.testing.assert_array_equal(moved[~masks], start[~masks])  # only on legal actions


def test_scored_run_saves_and_resumes_its_scorer(tmp_path: Path, labelled: Decisions) -> None:
    import yaml

    labelled.save(tmp_path / "data.npz")
    config = tmp_path / "fit.yaml"
    fields = dataclasses.asdict(tiny(eval_matches=2, scorer=[8]))
    config.write_text(yaml.safe_dump({"default": fields}))
    run = tmp_path / "run"
    path = main(
        ["--config", str(config), "--run-dir", str(run), "--data", str(tmp_path / "data.npz")]
    )
    policy = read_policy_file(path)
    assert policy.network.scorer is not None and policy.network.scorer.layer_sizes == [8, 1]
    assert policy.provenance["command"] == (
        f"python -m bergen_env.training.expert_iteration --config {config} --run-dir {run} "
        f"--data {tmp_path / 'data.npz'}"
    )
    again = build_network(tiny(init_policy=str(path)), Rules.preset("standard").num_actions)
    assert isinstance(again, ScoredNetwork)
    np.testing.assert_allclose(
        numpy_network(again).logits(labelled.obs, labelled.masks),
        policy.network.logits(labelled.obs, labelled.masks),
        rtol=1e-6,
        atol=1e-6,
    )
    with pytest.raises(ConfigError, match=r"'scorer' must be empty or \[8\]"):
        tiny(init_policy=str(path), scorer=[16])
    data = collect_decisions(tiny(player=["network"]), policy.network, 12, seed=5)
    assert len(data) >= 12  # the scored network plays the learner seat


@pytest.mark.parametrize("value", [[0], "128", [8, -1]])
def test_bad_scorer_is_named(value: object) -> None:
    with pytest.raises(ConfigError, match=r"'scorer' must be a list of ints in \[1, 65536\]"):
        tiny(scorer=value)


# ---------------------------------------------------------------------- 3 players, partnerships

SHIPPED_3P = ROOT / "policies" / "standard_3p.safetensors"
SHIPPED_4P = ROOT / "policies" / "partners_4p.safetensors"
SEATINGS = {
    "3p": dict(num_players=3, init_policy=str(SHIPPED_3P)),
    "4p": dict(num_players=4, partnerships=True, init_policy=str(SHIPPED_4P)),
}


def multi(seating: str, **changes: object) -> ExpertIterationConfig:
    return tiny(**(SEATINGS[seating] | dict(player=["network"], opponents=["heuristic"]) | changes))


def collect_with_seatings(
    cfg: ExpertIterationConfig, decisions: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[Decisions, list[tuple[int, list[tuple[object, int]]]]]:
    """Collect, recording each match's learner seat and the agents of the other seats."""
    import bergen_env.training.expert_iteration_collection as ei

    seatings: list[tuple[int, list[tuple[object, int]]]] = []

    class Recording(ei.BergenSingleAgentEnv):
        def reset(self, **kwargs: object):  # type: ignore[override]
            out = super().reset(**kwargs)
            seatings.append((self.seat, [(a, a.seat) for a in self.opponents]))
            return out

    monkeypatch.setattr(ei, "BergenSingleAgentEnv", Recording)
    net = numpy_network(build_network(cfg, cfg.make_rules().num_actions))
    return collect_decisions(cfg, net, decisions, seed), seatings


@pytest.mark.parametrize("seating", ["3p", "4p"])
def test_multiplayer_labels_are_legal_and_reproducible(
    seating: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = multi(seating)
    data, seatings = collect_with_seatings(cfg, 30, 5, monkeypatch)
    assert len(data) >= 30
    assert (data.masks.sum(axis=1) > 1).all()
    assert (data.values[~data.masks] == 0).all() and (np.abs(data.values) <= 1).all()
    assert data.values[data.masks].std() > 0  # real values, not zeros
    assert data.masks[np.arange(len(data)), data.heuristic].all()
    again, _ = collect_with_seatings(cfg, 30, 5, monkeypatch)
    for f in dataclasses.fields(Decisions):
        np.testing.assert_array_equal(getattr(data, f.name), getattr(again, f.name))
    other, _ = collect_with_seatings(cfg, 30, 6, monkeypatch)
    assert not np.array_equal(other.values[:10], data.values[:10])


def test_the_network_plays_the_partner_seat(monkeypatch: pytest.MonkeyPatch) -> None:
    from bergen_env.agents.heuristic import HeuristicAgent
    from bergen_env.agents.policy_agent import PolicyAgent

    cfg = multi("4p", player=["network", "heuristic"], opponents=["greedy", "random"])
    _, seatings = collect_with_seatings(cfg, 60, 1, monkeypatch)
    kinds = set()
    for seat, agents in seatings:
        assert [s for _, s in agents] == [(seat + k) % 4 for k in (1, 2, 3)]
        assert type(agents[0][0]).__name__ == "GreedyAgent"
        assert type(agents[2][0]).__name__ == "RandomAgent"
        kinds.add(type(agents[1][0]))
    assert kinds == {PolicyAgent, HeuristicAgent}  # the partner plays like the learner
    # the partner's copy of the network chooses as the network does
    partner = next(a[1][0] for _, a in seatings if isinstance(a[1][0], PolicyAgent))
    shipped = read_policy_file(SHIPPED_4P).network
    obs = np.random.default_rng(0).random((3, shipped.input_size), dtype=np.float32)
    np.testing.assert_allclose(partner.policy.network.logits(obs), shipped.logits(obs), atol=1e-5)


def test_partner_from_the_opponents(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = multi("4p", partner="opponents", opponents=["greedy", "random", "heuristic"])
    _, seatings = collect_with_seatings(cfg, 20, 2, monkeypatch)
    for _, agents in seatings:
        names = [type(a).__name__ for a, _ in agents]
        assert names == ["GreedyAgent", "RandomAgent", "HeuristicAgent"]


@pytest.mark.parametrize(
    ("seating", "changes", "message"),
    [
        ("3p", dict(opponents=["greedy"] * 3), r"'opponents' must hold 1 agent string .* or 2"),
        ("4p", dict(opponents=["greedy"] * 3), r"or 2, one for each of the opposing side's"),
        (
            "4p",
            dict(partner="opponents", opponents=["greedy"] * 2),
            r"or 3, one for each of the other seats, the partner second",
        ),
        ("4p", dict(partner="pool"), "'partner' must be one of 'learner', 'opponents'"),
        ("3p", dict(partnerships=True), "partnerships"),
        ("3p", dict(init_policy=str(SHIPPED_4P)), "'init_policy' was trained for other rules"),
        ("4p", dict(init_policy=str(SHIPPED_3P)), "'init_policy' was trained for other rules"),
    ],
)
def test_multiplayer_config_errors(seating: str, changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        multi(seating, **changes)


@pytest.mark.parametrize(("seating", "scorer"), [("3p", []), ("3p", [8]), ("4p", []), ("4p", [8])])
def test_tiny_multiplayer_run(seating: str, scorer: list[int], tmp_path: Path) -> None:
    import yaml

    cfg = multi(seating, iterations=2, decisions=12, job_decisions=6, scorer=scorer)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({"default": dataclasses.asdict(cfg)}))
    path = main(["--config", str(config), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    rules = cfg.make_rules()
    policy = read_policy_file(path)
    assert policy.rules == rules
    assert (policy.network.scorer is not None) == bool(scorer)
    metrics = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    assert len(metrics) == 3 and "vs_heuristic" in metrics[0]
    assert len(Decisions.load(tmp_path / "run" / "data_1.npz")) >= 12
    spec = f"policy:{path}"
    seats = [spec, "heuristic"] if rules.partnerships else [spec, "heuristic", "heuristic"]
    result = run_tournament(seats, rules, matches=2, seed=0)
    assert result.agents[spec].matches >= 2


@pytest.mark.parametrize(
    "name",
    [
        "expert_iteration_3p",
        "expert_iteration_3p_scorer",
        "expert_iteration_4p",
        "expert_iteration_4p_scorer",
    ],
)
def test_shipped_multiplayer_configs_load(name: str) -> None:
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    rules = cfg.make_rules()
    assert read_policy_file(cfg.init_policy).rules == rules
    assert rules.num_players == (3 if "3p" in name else 4)
    assert bool(cfg.scorer) == name.endswith("scorer")
