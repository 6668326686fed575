"""``benchmarks/teacher_gap.py``: regrets under an independent run of search."""

from __future__ import annotations

import json

import pytest

from benchmarks.teacher_gap import main

CHEAP = ["--teacher", "search:samples=6", "--decisions", "12"]


def test_regrets_are_wired_to_the_right_choices(tmp_path) -> None:
    path = tmp_path / "gap.json"
    report = main(["--policy", "heuristic", *CHEAP, "--seed", "3", "--json", str(path)])
    assert report["decisions"] >= 12 and report["matches"] >= 1
    regret = report["regret"]
    # the policy is the heuristic: its column is the heuristic's, choice for choice
    assert regret["policy"] == regret["heuristic"]
    assert report["gap"]["mean"] == pytest.approx(
        regret["policy"]["mean"] - regret["teacher"]["mean"]
    )
    for row in regret.values():
        assert row["mean"] >= 0 and row["se"] >= 0
    assert 0 <= report["agreement"] <= 1
    assert report["judge"] == report["teacher"] == "search:samples=6"
    assert json.loads(path.read_text()) == report


def test_same_seed_same_report_and_other_seatings() -> None:
    args = ["--policy", "greedy", *CHEAP, "--players", "3", "--seed", "4"]
    first = main(args)
    assert first == main(args)
    assert first["players"] == 3 and first["regret"]["policy"] != first["regret"]["heuristic"]


def test_a_teacher_that_values_nothing_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--policy", "heuristic", "--teacher", "random", "--decisions", "5"])
    assert "--teacher 'random' is not a search agent" in capsys.readouterr().err
