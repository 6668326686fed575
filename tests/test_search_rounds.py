"""``search`` in rounds (``batch``): stop sampling once the leading action is clear."""

from __future__ import annotations

import numpy as np
import pytest

from bergen_env import Rules
from bergen_env.agents import make_agent
from bergen_env.agents.search import SearchAgent, beaten, numba_installed, settled
from tests.search_positions import (
    assert_legal_reproducible_picklable,
    assert_same_values,
    positions,
)


def _sums(rows: list[list[float]]) -> tuple[np.ndarray, np.ndarray, int]:
    values = np.array(rows)
    return values.sum(axis=0), values.T @ values, len(rows)


def test_settled_needs_two_deals_and_a_clear_lead() -> None:
    assert not settled(*_sums([[1.0, 0.0]]), 3.0)  # one deal tells no spread
    assert settled(*_sums([[1.0, 0.0, 0.2], [0.9, 0.1, 0.0], [1.0, 0.0, 0.1]]), 3.0)
    noisy = [[1.0, 0.0], [0.0, 0.5], [1.0, 0.2]]  # ahead on average, not clearly
    assert not settled(*_sums(noisy), 1.0)
    assert settled(*_sums(noisy), 0.1)
    tie = [[0.5, 0.5], [0.2, 0.2]]  # the same value on every deal: the choice does not matter
    assert not settled(*_sums(tie), 3.0)
    assert settled(*_sums(tie), 3.0, tolerance=0.01)
    close = [[0.5, 0.49], [0.2, 0.21], [0.3, 0.3]]  # within the tolerance, but not surely
    assert not settled(*_sums(close), 3.0, tolerance=0.01)


def test_beaten_marks_the_actions_clearly_behind_the_leader() -> None:
    rows = [[1.0, 0.0, 1.1, 0.5], [0.5, -0.5, 0.2, 0.1], [1.0, 0.0, 0.9, 0.4]]
    assert beaten(*_sums(rows), 2.0).tolist() == [False, True, False, True]
    assert beaten(*_sums(rows[:1]), 2.0).tolist() == [False] * 4  # one deal tells no spread
    # action 1 is exactly 1 behind on every deal: beaten at any certainty; action 3 is not
    assert beaten(*_sums(rows), 100.0).tolist() == [False, True, False, False]
    tie = [[0.5, 0.5], [0.2, 0.2]]
    assert not beaten(*_sums(tie), 2.0).any()


def _values(agent: SearchAgent, view, key: int) -> dict[int, float]:
    agent.reset(view.rules, view.seat, np.random.default_rng(key))
    return agent.action_values(view)


@pytest.mark.parametrize("belief", ["0", "1"])
def test_one_round_is_the_plain_search(belief: str) -> None:
    rules = Rules.preset("standard", num_players=3)
    plain = make_agent(f"search:samples=12,belief={belief}")
    whole = make_agent(f"search:samples=12,belief={belief},batch=12")
    larger = make_agent(f"search:samples=12,belief={belief},batch=50")
    pruned = make_agent(f"search:samples=12,belief={belief},batch=12,prune=true")
    for k, view in enumerate(positions(rules, 6, seed=5)):
        expected = _values(plain, view, k)
        assert _values(whole, view, k) == expected and whole.used == 12
        assert _values(pruned, view, k) == expected
        assert _values(larger, view, k) == expected and larger.used == 12


def test_rounds_stop_early_on_clear_choices_only() -> None:
    rules = Rules.preset("standard", num_players=2)
    agent = make_agent("search:samples=64,batch=8,certainty=2,rollout=heuristic")
    used = []
    for k, view in enumerate(positions(rules, 30, seed=9)):
        values = _values(agent, view, k)
        assert set(values) == set(view.legal_actions)
        assert agent.used % 8 == 0 and 8 <= agent.used <= 64
        used.append(agent.used)
    assert min(used) < 64 and max(used) == 64  # some choices are clear early, some are not


def test_pruned_rounds_stop_playing_the_beaten_actions() -> None:
    rules = Rules.preset("standard", num_players=2)
    pruned = make_agent("search:samples=64,batch=8,rollout=heuristic,prune=true")
    full = make_agent("search:samples=64,batch=8,rollout=heuristic")
    dropped = 0
    for k, view in enumerate(positions(rules, 30, seed=9)):
        _values(pruned, view, k)
        played = pruned.played
        assert set(played) == set(view.legal_actions)
        assert all(c % 8 == 0 and 8 <= c <= pruned.used for c in played.values())
        pruned.reset(rules, view.seat, np.random.default_rng(k))  # the same stream again
        chosen = pruned.act(None, None, view)
        assert played == pruned.played and played[chosen] == pruned.used
        dropped += sum(c < pruned.used for c in played.values())
        _values(full, view, k)
        assert set(full.played.values()) == {full.used}  # without prune every action plays on
    assert dropped > 0


def test_rounds_are_reproducible_legal_and_picklable() -> None:
    rules = Rules.preset("fives", num_players=4, partnerships=True)
    views = positions(rules, 8, seed=3)
    assert_legal_reproducible_picklable("search:samples=24,batch=6,belief=1", views)


@pytest.mark.skipif(not numba_installed(), reason="needs the [vector] extra")
@pytest.mark.parametrize(
    "spec", ["", "belief=1,", "rollout=heuristic,belief=1,", "rollout=heuristic,prune=true,"]
)
def test_rounds_give_the_same_values_compiled(spec: str) -> None:
    rules = Rules.preset("standard", num_players=2)
    python, compiled = (
        make_agent(f"search:{spec}samples=12,batch=3,certainty=1,playouts={p}")
        for p in ("python", "compiled")
    )
    assert_same_values(python, compiled, positions(rules, 8, seed=12), 13)


def test_bad_round_parameters_are_named() -> None:
    with pytest.raises(ValueError, match="batch"):
        SearchAgent(batch=0)
    with pytest.raises(ValueError, match="certainty"):
        SearchAgent(batch=4, certainty=-1.0)
    with pytest.raises(ValueError, match="budget_ms"):
        SearchAgent(batch=4, budget_ms=10.0)
    with pytest.raises(ValueError, match="'prune' needs 'batch'"):
        SearchAgent(prune=True)
    with pytest.raises(ValueError, match="prune"):
        make_agent("search:batch=4,prune=1")


def test_the_speed_benchmark_reports_the_deals_a_choice_took() -> None:
    from benchmarks.agents_speed import main

    args = ["--positions", "12", "--repeat", "3", "--agents", "random", "search:samples=20,batch=5"]
    report = main(args)
    assert report["agents"]["random"]["samples_per_choice"] is None
    search = report["agents"]["search:samples=20,batch=5"]
    assert 5 <= search["samples_per_choice"] <= 20
    runs = search["ms_per_choice_runs"]
    assert len(runs) == 3 and search["ms_per_choice"] == sorted(runs)[1]  # the median run


def test_the_speed_benchmark_times_partnerships() -> None:
    from benchmarks.agents_speed import main

    spec = "search:samples=4,belief=1,partner_temperature=1"
    report = main(["--positions", "8", "--players", "4", "--partnerships", "--agents", spec])
    assert report["config"]["rules"]["num_players"] == 4
    assert report["agents"][spec]["positions"] == 8
    with pytest.raises(SystemExit):
        main(["--positions", "8", "--players", "3", "--partnerships"])
