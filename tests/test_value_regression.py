"""The value-regression diagnostic of benchmarks/value_regression.py: its data, and that it runs."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.value_regression import CONFIG, MARGINS, collect, main
from bergen_env.observation import OBS_SIZE, OBS_SLICES
from bergen_env.training.config import load_config


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, ...]:
    cfg = load_config(CONFIG, ["n_envs=1", "vec_env=dummy"])
    return collect((cfg, 60, 3, "public", None))


def test_values_cover_exactly_the_legal_actions(data: tuple[np.ndarray, ...]) -> None:
    obs, values, actions, matches, fitted = data
    assert len(obs) == len(values) == len(actions) >= 60
    assert 1 <= matches < len(actions)
    assert obs.shape[1] == OBS_SIZE
    legal = ~np.isnan(values)
    assert (legal.sum(1) >= 2).all()  # real choices only
    assert legal[np.arange(len(actions)), actions].all()  # the heuristic's play is legal
    assert (np.abs(values[legal]) <= 1.0).all()  # match units: 2 P(win) - 1
    # the observation is the learner's: its per-action points are 0 off the legal actions
    play_points = obs[:, OBS_SLICES["play_points"]]
    assert (play_points[:, : values.shape[1]][~legal] == 0).all()
    assert (play_points[:, values.shape[1] :] == 0).all()


def test_collection_is_reproducible(data: tuple[np.ndarray, ...]) -> None:
    cfg = load_config(CONFIG, ["n_envs=1", "vec_env=dummy"])
    for a, b in zip(data, collect((cfg, 60, 3, "public", None))):
        np.testing.assert_array_equal(a, b)


def test_search_values_to_fit_sit_on_the_same_decisions(data: tuple[np.ndarray, ...]) -> None:
    cfg = load_config(CONFIG, ["n_envs=1", "vec_env=dummy"])
    obs, values, actions, matches, fitted = collect((cfg, 60, 3, "public", "search:samples=4"))
    assert len(data[4]) == 0  # nothing to fit to but the playouts
    # the same decisions as without: the searcher has its own random stream
    np.testing.assert_array_equal(actions, data[2])
    np.testing.assert_array_equal(values, data[1])
    assert matches == data[3]
    np.testing.assert_array_equal(np.isnan(fitted), np.isnan(values))
    assert (np.abs(fitted[~np.isnan(fitted)]) <= 1.0).all()


def test_runs_and_prints_the_margin_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--decisions", "10000", "--epochs", "1", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "of the heuristic's choice" in out
    assert sum(line.startswith(f"| {m} |") for m in MARGINS for line in out.splitlines()) == 5


def test_rejects_bad_arguments() -> None:
    with pytest.raises(SystemExit):
        main(["--decisions", "100"])
    for bad in (["--fit-to", "heuristic"], ["--workers", "0"], ["--epochs", "0"], ["--scale", "0"]):
        with pytest.raises(SystemExit):
            main(bad)
