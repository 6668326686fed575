"""The heuristic's weights: compiled matches between weight vectors, the tuner, ``tuned``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("yaml")

from bergen_env.agents import HeuristicAgent, TunedHeuristicAgent, make_agent  # noqa: E402
from bergen_env.agents.compiled.heuristic_matches import (  # noqa: E402
    duplicate_wins,
    play_heuristic_matches,
)
from bergen_env.agents.compiled.heuristic_policy import DEFAULT_WEIGHTS  # noqa: E402
from bergen_env.agents.heuristic import WEIGHT_NAMES, used_weights  # noqa: E402
from bergen_env.agents.tuned_heuristic import TUNED_WEIGHTS, tuned_weights  # noqa: E402
from bergen_env.arena import play_match  # noqa: E402
from bergen_env.engine import BergenState  # noqa: E402
from bergen_env.rules import PRESETS, Rules  # noqa: E402
from bergen_env.training.config import ConfigError  # noqa: E402
from bergen_env.training.tune_heuristic import TuneConfig, load_config, main  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "tune_heuristic.yaml"
SEATINGS = [(2, False), (3, False), (4, False), (4, True)]
BOLD = np.array([2.0, 0.1, 1.0, 0.0, 0.6, 0.0, 0.9])  # far from the defaults


def _rules(preset: str, players: int, partnerships: bool) -> Rules:
    return Rules.preset(preset, num_players=players, partnerships=partnerships)


def _agent(weights: np.ndarray) -> HeuristicAgent:
    return HeuristicAgent(**dict(zip(WEIGHT_NAMES, weights.tolist())))


# ---------------------------------------------------------------------- compiled matches


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_compiled_matches_are_the_engines(preset: str, players: int, partnerships: bool) -> None:
    """Given the deals of engine matches between heuristics of different weights, the compiled
    matches end with the same winner and scores."""
    rules = _rules(preset, players, partnerships)
    seat_weights = np.array([BOLD if s % 2 == 0 else DEFAULT_WEIGHTS for s in range(players)])
    records = [
        play_match(
            rules,
            [_agent(w) for w in seat_weights],
            deal_seed=seed,
            agent_seeds=[0] * players,
            keep_deals=True,
        )
        for seed in range(4)
    ]
    winners, scores = play_heuristic_matches(
        rules,
        np.stack([seat_weights] * len(records)),
        np.zeros(len(records), dtype=np.uint64),
        deals=[r.deals for r in records],
    )
    for k, record in enumerate(records):
        assert record.winner is not None or record.tied
        assert winners[k] == (-1 if record.winner is None else record.winner)
        assert tuple(scores[k]) == record.scores


def test_duplicate_wins_split_the_matches() -> None:
    """The candidate's and the opponent's shares of the same duplicate matches add up to the
    decided ones (a standard match always has a winner), and equal weights split them evenly."""
    rules = Rules.preset("standard")
    a = duplicate_wins(rules, BOLD, DEFAULT_WEIGHTS, 300, seed=4)
    b = duplicate_wins(rules, DEFAULT_WEIGHTS, BOLD, 300, seed=4)
    assert a.shape == (300,)
    assert np.all(a + b == 1.0)
    assert 0.0 < a.mean() < 1.0
    assert np.all(duplicate_wins(rules, BOLD, BOLD, 300, seed=4) == 0.5)
    three = Rules.preset("standard", num_players=3)
    same = duplicate_wins(three, DEFAULT_WEIGHTS, DEFAULT_WEIGHTS, 200, seed=1)
    assert set(np.round(same * 3).tolist()) <= {0.0, 1.0}  # 1 of 3 rotations won, or a tie


def test_matches_stop_after_max_hands() -> None:
    """A match still running after ``max_hands`` hands is stopped with no winner."""
    rules = Rules.preset("standard")
    weights = np.stack([np.stack([DEFAULT_WEIGHTS] * 2)] * 50)
    streams = np.arange(50, dtype=np.uint64)
    full, full_scores = play_heuristic_matches(rules, weights, streams)
    one, one_scores = play_heuristic_matches(rules, weights, streams, max_hands=3)
    assert np.all(full >= 0)  # standard matches always end with a winner
    stopped = one == -1
    assert 0 < stopped.sum() < 50  # some need more than three hands, some fewer
    assert np.all(one_scores[stopped].max(axis=1) < rules.target)
    assert np.array_equal(one[~stopped], full[~stopped])
    assert np.array_equal(one_scores[~stopped], full_scores[~stopped])
    with pytest.raises(ValueError, match="max_hands"):
        play_heuristic_matches(rules, weights, streams, max_hands=0)


def test_duplicate_wins_are_seeded() -> None:
    rules = Rules.preset("fives", num_players=4, partnerships=True)
    first = duplicate_wins(rules, BOLD, DEFAULT_WEIGHTS, 200, seed=9)
    assert np.array_equal(first, duplicate_wins(rules, BOLD, DEFAULT_WEIGHTS, 200, seed=9))
    assert not np.array_equal(first, duplicate_wins(rules, BOLD, DEFAULT_WEIGHTS, 200, seed=10))


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda r: duplicate_wins(r, [1.0] * 6, DEFAULT_WEIGHTS, 10, 0), ["weights", "7"]),
        (lambda r: duplicate_wins(r, BOLD, -DEFAULT_WEIGHTS, 10, 0), ["opponent", ">= 0"]),
        (lambda r: duplicate_wins(r, BOLD * np.nan, DEFAULT_WEIGHTS, 10, 0), ["finite"]),
        (lambda r: duplicate_wins(r, BOLD, DEFAULT_WEIGHTS, 0, 0), ["matches"]),
        (
            lambda r: play_heuristic_matches(r, np.zeros((2, 3, 7)), np.zeros(2)),
            ["seat_weights", "(rows, 2, 7)"],
        ),
        (lambda r: play_heuristic_matches(r, np.zeros((2, 2, 7)), np.zeros(3)), ["streams"]),
        (
            lambda r: play_heuristic_matches(
                r, np.zeros((1, 2, 7)), np.zeros(1), [[{"hands": [[0], [1]], "boneyard": []}]]
            ),
            ["deal 0 of row 0", "2 tiles"],
        ),
    ],
)
def test_compiled_match_errors_name_the_problem(call, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        call(Rules.preset("standard"))
    for word in words:
        assert word in str(info.value)


# ---------------------------------------------------------------------- the tuner


def _tiny(tmp_path, *extra: str) -> list[str]:
    sets = ["generations=2", "population=4", "elite=2", "matches=60", "holdout_matches=80"]
    args = ["--config", str(CONFIG), "--run-dir", str(tmp_path)]
    for item in (*sets, *extra):
        args += ["--set", item]
    return args


def test_tuner_writes_its_run_and_is_seeded(tmp_path) -> None:
    result = main(_tiny(tmp_path / "a", "num_players=3"))
    files = {p.name for p in (tmp_path / "a").iterdir()}
    assert {"config.yaml", "command.txt", "metrics.csv", "weights.json"} <= files
    saved = json.loads((tmp_path / "a" / "weights.json").read_text())
    assert saved["agent"] == result["agent"]
    assert saved["rules"]["num_players"] == 3
    assert len((tmp_path / "a" / "metrics.csv").read_text().splitlines()) == 3  # header + 2
    # the default tune list is the weights the rules use: partner and keep stay as they were
    assert saved["weights"]["partner"] == HeuristicAgent().w_partner
    assert saved["weights"]["keep"] == HeuristicAgent().w_keep
    agent = make_agent(result["agent"])
    assert {n: getattr(agent, f"w_{n}") for n in WEIGHT_NAMES} == saved["weights"]
    again = main(_tiny(tmp_path / "b", "num_players=3"))
    assert again["weights"] == result["weights"] and again["holdout"] == result["holdout"]
    other = main(_tiny(tmp_path / "c", "num_players=3", "seed=1"))
    assert other["weights"] != result["weights"]


def test_tuner_holdout_is_the_final_weights_win_rate(tmp_path) -> None:
    result = main(_tiny(tmp_path, "tune=[threat]"))
    w = np.array([result["weights"][n] for n in WEIGHT_NAMES])
    assert np.array_equal(np.delete(w, 0), np.delete(DEFAULT_WEIGHTS, 0))
    cfg = load_config(CONFIG)
    seeds = np.random.SeedSequence(cfg.seed).generate_state(2 + 2).tolist()
    wins = duplicate_wins(Rules.preset("standard"), w, DEFAULT_WEIGHTS, 80, seeds[-1])
    assert result["holdout"]["win_rate"] == pytest.approx(wins.mean())
    assert result["holdout"]["ci_low"] < wins.mean() < result["holdout"]["ci_high"]


@pytest.mark.parametrize(
    ("sets", "words"),
    [
        (["tune=[threat, bogus]"], ["tune", "bogus"]),
        (["tune=[]"], ["tune"]),
        (["elite=30"], ["elite", "population"]),
        (["smoothing=1"], ["smoothing"]),
        (["start={threat: -1}"], ["start"]),
        (["num_players=5"], ["num_players"]),
        (["rules=chess"], ["chess"]),
        (["generations=0"], ["generations"]),
    ],
)
def test_tuner_config_errors_name_the_key(sets: list[str], words: list[str]) -> None:
    overrides = [*sets]
    with pytest.raises(ConfigError) as info:
        load_config(CONFIG, overrides)
    for word in [str(CONFIG), *words]:
        assert word in str(info.value)


def test_tuner_rejects_unknown_keys(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("default:\n  generation: 3\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(path)
    with pytest.raises(ConfigError, match="unknown key 'generation'"):
        load_config(CONFIG, ["generation=3"])


def test_tuner_defaults_tune_what_the_rules_use() -> None:
    assert TuneConfig().tuned_names() == ["threat", "stuck", "shed", "variety", "follow"]
    fives = TuneConfig(rules="fives", num_players=4, partnerships=True)
    assert fives.tuned_names() == list(WEIGHT_NAMES)
    assert used_weights(Rules.preset("draw")) == ("threat", "stuck", "shed", "variety", "follow")


def test_used_weights_are_the_only_ones_that_change_play() -> None:
    """Changing a weight the rules do not use leaves every compiled match as it was."""
    for preset, players, partnerships in [("standard", 2, False), ("fives", 3, False)]:
        rules = _rules(preset, players, partnerships)
        unused = [n for n in WEIGHT_NAMES if n not in used_weights(rules)]
        assert unused
        w = DEFAULT_WEIGHTS.copy()
        for name in unused:
            w[WEIGHT_NAMES.index(name)] = 5.0
        assert np.all(duplicate_wins(rules, w, DEFAULT_WEIGHTS, 100, 2) == 1 / rules.num_sides)


# ---------------------------------------------------------------------- the tuned agent


def test_every_preset_and_seating_has_tuned_weights() -> None:
    for preset in PRESETS:
        for players, partnerships in SEATINGS:
            rules = _rules(preset, players, partnerships)
            weights = tuned_weights(rules)
            assert tuple(weights) == WEIGHT_NAMES
            assert all(v >= 0 for v in weights.values())
            # a weight the rules do not use keeps its default
            for name in set(WEIGHT_NAMES) - set(used_weights(rules)):
                assert weights[name] == getattr(HeuristicAgent(), f"w_{name}")
    assert len(TUNED_WEIGHTS) == len(PRESETS) * len(SEATINGS)


@pytest.mark.parametrize(("players", "streams"), [(2, 4000), (3, 10000)])
def test_tuned_weights_beat_the_default_heuristic(players: int, streams: int) -> None:
    """On fixed deal streams (not the tuner's), the shipped standard weights win more than an
    equal share against the default heuristic (where the tuning found a clear gain)."""
    rules = _rules("standard", players, False)
    w = np.array([tuned_weights(rules)[n] for n in WEIGHT_NAMES])
    wins = duplicate_wins(rules, w, DEFAULT_WEIGHTS, streams, seed=2026)
    assert wins.mean() > 1 / rules.num_sides


def test_tuned_agent_plays_its_rules_weights() -> None:
    rules = Rules.preset("draw", num_players=3)
    agent = make_agent("tuned")
    assert isinstance(agent, TunedHeuristicAgent)
    agent.reset(rules, 1, np.random.default_rng(0))
    assert agent.weights == tuned_weights(rules)
    record = play_match(rules, [make_agent("tuned") for _ in range(3)], 5, [0, 1, 2])
    same = play_match(rules, [_agent(np.array(list(agent.weights.values())))] * 3, 5, [0, 1, 2])
    assert dataclasses.astuple(record) == dataclasses.astuple(same)


def test_tuned_agent_errors() -> None:
    custom = Rules.preset("standard").replace(target=31)
    agent = make_agent("tuned")
    with pytest.raises(ValueError, match="no tuned heuristic weights for rules that are no preset"):
        agent.reset(custom, 0, np.random.default_rng(0))
    fresh = make_agent("tuned")
    s = BergenState(Rules.preset("standard"), seed=0)
    view = s.public_view(s.current_player)
    with pytest.raises(RuntimeError, match="call reset"):
        fresh.act(None, s.legal_mask(), view)
    fresh.reset(Rules.preset("fives"), s.current_player, np.random.default_rng(0))
    with pytest.raises(ValueError, match="other rules"):
        fresh.act(None, s.legal_mask(), view)
    with pytest.raises(ValueError, match="unknown parameter 'threat'; valid parameters: "):
        make_agent("tuned:threat=2")
