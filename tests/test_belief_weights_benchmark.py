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
    assert set(rows) == {"0.5", "0.05", "uniform"}
    uniform = rows.pop("uniform")
    assert uniform["positions"] > 5 and 0 < uniform["true_place"] < 1
    for r in rows.values():
        assert r["true_place"] > uniform["true_place"]  # the weights move deals toward the truth
        assert r["positions"] > 5
        assert 0 < r["share_p10"] <= r["share_mean"] <= 1
        assert r["gap_min"] > -3.0  # heuristic plays: the true hand made them (ties aside)
    assert rows["0.05"]["share_mean"] < rows["0.5"]["share_mean"]  # sharper when colder
    assert json.loads(path.read_text())["temperatures"] == {**rows, "uniform": uniform}


def test_the_sampled_history_reads_more_of_the_truth() -> None:
    """Scoring every play (``--history sampled``) puts more of the weight on the true places."""
    args = ["--matches", "3", "--deals", "60", "--temperatures", "0.1"]
    exact = main(args)["temperatures"]
    sampled = main([*args, "--history", "sampled"])["temperatures"]
    assert exact["uniform"] == sampled["uniform"]  # the same positions and deals
    assert (
        sampled["0.1"]["true_place"] > exact["0.1"]["true_place"] > exact["uniform"]["true_place"]
    )


def test_bad_arguments_are_named() -> None:
    with pytest.raises(SystemExit):
        main(["--temperatures", "0"])
