"""``benchmarks/belief_weights.py``: how sharp ``belief=1``'s weights are, and that they keep
the true deal when the opponent model is right."""

from __future__ import annotations

import json

import pytest

from benchmarks.belief_weights import main


def test_the_true_deal_keeps_its_weight_as_the_temperature_falls(tmp_path) -> None:
    path = tmp_path / "weights.json"
    args = ["--matches", "3", "--deals", "60", "--temperatures", "0.5", "0.05", "--json", str(path)]
    report = main(args)
    rows = report["temperatures"]
    assert set(rows) == {"0.5", "0.05"}
    for r in rows.values():
        assert r["positions"] > 5
        assert 0 < r["share_p10"] <= r["share_mean"] <= 1
        assert r["gap_min"] > -3.0  # heuristic plays: the true hand made them (ties aside)
    assert rows["0.05"]["share_mean"] < rows["0.5"]["share_mean"]  # sharper when colder
    assert json.loads(path.read_text())["temperatures"] == rows


def test_bad_arguments_are_named() -> None:
    with pytest.raises(SystemExit):
        main(["--temperatures", "0"])
