"""Match-win tables from recorded hands (``table_from_events``) and the calibration benchmark
that records the hands of real matches (``benchmarks/win_table_calibration.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import win_table_calibration as calibration
from bergen_env.agents.match_value import table_from_events, win_table
from bergen_env.rules import Rules
from bergen_env.scoring import cap_header

STANDARD = Rules.preset("standard")


def test_a_table_from_hands_that_decide_the_match() -> None:
    """Hands that bring one side to the target at once: the table is the share of such hands."""
    won, lost, nothing = [(0, 15, False)], [(1, 15, False)], []
    assert np.allclose(table_from_events(STANDARD, [won]).table, 1.0)
    assert np.allclose(table_from_events(STANDARD, [won, lost]).table, 0.5)
    assert np.allclose(table_from_events(STANDARD, [won, won, lost]).table, 2 / 3)
    # a hand that scores nothing only delays the match (a cycle the value iteration solves)
    assert np.allclose(table_from_events(STANDARD, [won, lost, nothing, nothing]).table, 0.5)


def test_end_caps_apply_to_header_events_only() -> None:
    """From 12 a 3-point header is capped to 2 (14, no win); the same points at a hand's end
    win. One hand of each kind, then the other side wins the next hand (events of 15)."""
    header = [(0, 3, True), (1, 15, False)]
    award = [(0, 3, False), (1, 15, False)]
    assert table_from_events(STANDARD, [header])(12, 0) == pytest.approx(0.0)
    assert table_from_events(STANDARD, [award])(12, 0) == pytest.approx(1.0)


def test_table_from_events_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no hands"):
        table_from_events(STANDARD, [])
    with pytest.raises(ValueError, match="names side 2"):
        table_from_events(STANDARD, [[(2, 3, True)]])
    with pytest.raises(ValueError, match="single-hand"):
        table_from_events(Rules.preset("draw"), [[(0, 3, True)]])


def _replay(rules: Rules, match: calibration.RecordedMatch) -> bool:
    """Every hand's events lead from its start to the next hand's start, and the last hand's
    to the recorded winner, by the rules' target and end caps. Whether the match ended on a
    header with more of the hand recorded after it (a hand finished without a target)."""
    for k, hand in enumerate(match.hands):
        scores = list(hand.start)
        winner, rest, header = None, 0, False
        for i, (side, points, header) in enumerate(hand.events):
            need = rules.target - scores[side]
            scores[side] += cap_header(points, need, rules.end_caps) if header else points
            if scores[side] >= rules.target:
                winner, rest = side, len(hand.events) - i - 1
                break
        if k + 1 < len(match.hands):
            assert winner is None
            assert tuple(scores) == match.hands[k + 1].start
    assert winner == match.winner
    return header and rest > 0


@pytest.mark.parametrize(
    ("players", "partnerships", "agent"),
    [(2, False, "greedy"), (3, False, "heuristic"), (4, True, "random")],
)
def test_recorded_hands_replay_to_the_recorded_match(
    players: int, partnerships: bool, agent: str
) -> None:
    rules = Rules.preset("standard", num_players=players, partnerships=partnerships or None)
    matches = calibration.record_matches(rules, agent, "heuristic", 24, seed=3)
    assert len(matches) == 24
    cut = 0
    for match in matches:
        assert match.hands[0].start == (0,) * rules.num_sides
        cut += _replay(rules, match)
    assert cut > 0  # some matches end mid-hand, and their last hand is recorded whole
    # the recording is reproducible
    again = calibration.record_matches(rules, agent, "heuristic", 24, seed=3)
    assert [m.hands for m in again] == [m.hands for m in matches]


def test_the_benchmark_scores_both_tables(tmp_path) -> None:
    out, saved = tmp_path / "calibration.json", tmp_path / "table.npy"
    args = ["--matches", "40", "--seed", "5", "--json", str(out), "--save-table", str(saved)]
    report = calibration.main(args)
    assert json.loads(out.read_text()) == report
    assert set(report["tables"]) == {"shipped", "in-match"}
    starts = {r["starts"] for r in report["tables"].values()}
    assert len(starts) == 1 and 0 < starts.pop() < report["hands"] - 20  # later hands, odd matches
    for r in report["tables"].values():
        assert sum(b["starts"] for b in r["bins"]) == r["starts"] > 0
        assert 0 < r["brier"] < 0.5 and r["log_loss"] > 0
    # heuristic against heuristic: both tables are symmetric, 0.5 at 0-0
    assert report["tables"]["in-match"]["start_value"] == pytest.approx(0.5)
    assert report["tables"]["shipped"]["start_value"] == pytest.approx(0.5)
    table = np.load(saved)
    assert table.shape == win_table(STANDARD).table.shape
    np.testing.assert_allclose(table + table.T, 1.0, atol=1e-6)


def test_the_benchmark_names_rules_without_a_table() -> None:
    with pytest.raises(ValueError, match="no match-win table"):
        calibration.record_matches(Rules.preset("draw"), "heuristic", "heuristic", 2, seed=0)
