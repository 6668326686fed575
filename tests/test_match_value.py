"""The match-win table of search leaves: shape, symmetry, monotony, agreement with play."""

from __future__ import annotations

import numpy as np
import pytest

from bergen_env.agents import SearchAgent, make_agent
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.match_value import (
    MAX_STATES,
    hand_events,
    has_table,
    table_states,
    win_table,
)
from bergen_env.agents.search import WIN_VALUE
from bergen_env.engine import BergenState
from bergen_env.rules import PRESETS, Rules

#: Two-side rule sets with a table (Draw, a single hand, has none: see the test below).
TWO_SIDES = [(preset, 2, False) for preset in PRESETS if preset != "draw"] + [
    ("standard", 4, True),
    ("fives", 4, True),
]


def test_a_single_hand_match_has_no_table() -> None:
    rules = Rules.preset("draw")
    assert not has_table(rules)
    with pytest.raises(ValueError, match="single-hand"):
        win_table(rules)
    assert has_table(Rules.preset("fives")) and not has_table(Rules.preset("fives", num_players=3))


@pytest.mark.parametrize(("preset", "players", "partnerships"), TWO_SIDES)
def test_table_is_a_symmetric_monotone_probability(
    preset: str, players: int, partnerships: bool
) -> None:
    rules = Rules.preset(preset, num_players=players, partnerships=partnerships)
    w = win_table(rules)
    t = w.table
    size = rules.target - w.low
    assert t.shape == (size, size)
    assert w.low == (-rules.target if rules.leftover_penalty else 0)
    assert np.all((t >= 0) & (t <= 1))
    np.testing.assert_allclose(t + t.T, 1.0, atol=1e-6)  # every hand is also used mirrored
    # a point more never hurts (end caps included): the sampled hands dominate path by path
    assert np.all(np.diff(t, axis=0) >= -1e-9)
    assert np.all(np.diff(t, axis=1) <= 1e-9)
    assert w(0, 0) == pytest.approx(0.5)
    assert w(rules.target - 1, 0) > 0.95
    assert w(w.low - 40, 0) == w(w.low, 0)  # scores below the table count as its lowest


def test_end_caps_make_twelve_and_thirteen_alike() -> None:
    """Standard, 15 points: from 12 or 13 a header reaches 14 (capped to 2 and 1 points)."""
    w = win_table(Rules.preset("standard"))
    assert abs(w(13, 10) - w(12, 10)) < 0.05
    assert w(14, 10) - w(13, 10) > 0.1


def test_table_predicts_heuristic_matches() -> None:
    """Heuristic self-play from 10-12 wins as often as the table says (within 4 sigma)."""
    rules = Rules.preset("standard")
    expected = win_table(rules)(10, 12)
    rng = np.random.default_rng(5)
    agent = HeuristicAgent()
    matches = 600
    wins = 0
    for m in range(matches):
        s = BergenState(rules, seed=rng)
        first = m % 2  # the side starting at 10 alternates with the deal
        s.scores[first], s.scores[1 - first] = 10, 12
        while not s.terminal:
            legal = s.legal_actions()
            if len(legal) > 1:
                legal = [agent.act(None, None, s.public_view(s.current_player))]
            s.apply_unchecked(legal[0])
        wins += s.winner == first
    sigma = np.sqrt(expected * (1 - expected) / matches)
    assert abs(wins / matches - expected) < 4 * sigma, (wins / matches, expected)


def test_hand_events_add_up_to_the_hand() -> None:
    rules = Rules.preset("traditional")
    for seed in range(20):
        s = BergenState(rules.replace(target=10_000), seed=seed)
        events = hand_events(s)
        totals = [0, 0]
        for side, points, _ in events:
            totals[side] += points
        assert totals == s.scores
        assert s.hand_number == 1 and len(s.hand_results) == 1


def test_table_is_reproducible() -> None:
    rules = Rules.preset("standard", target=12)
    first = win_table(rules).table.copy()
    win_table.cache_clear()
    np.testing.assert_array_equal(win_table(rules).table, first)


@pytest.mark.parametrize("players", [3, 4])
def test_three_and_four_side_tables(players: int) -> None:
    """Individual standard play: one probability per side that sums to 1 over the sides."""
    rules = Rules.preset("standard", num_players=players)
    w = win_table(rules)
    t = w.table
    assert t.shape == (rules.target,) * players
    assert np.all((t >= 0) & (t <= 1))
    # Side k's chance at a score combination is the table read from its seat on (turn order).
    total = sum(np.moveaxis(t, range(players), np.roll(range(players), k)) for k in range(players))
    np.testing.assert_allclose(total, 1.0, atol=1e-6)
    assert w(0, *[0] * (players - 1)) == pytest.approx(1 / players)
    assert np.all(np.diff(t, axis=0) >= -1e-9)  # own points never hurt
    assert np.all(np.diff(t, axis=1) <= 1e-9)  # the next side's points never help
    assert w(rules.target - 1, *[0] * (players - 1)) > 0.9
    with pytest.raises(ValueError, match=f"{players} sides"):
        w(0, 0)
    scores = [3, 7, 1, 5][:players]  # of_side reads the others in turn order after the side
    for side in range(players):
        rotated = [scores[(side + k) % players] for k in range(players)]
        assert w.of_side(scores, side) == w(*rotated)
    assert sum(w.of_side(scores, side) for side in range(players)) == pytest.approx(1.0, abs=1e-6)


def test_too_many_score_combinations_is_an_error() -> None:
    rules = Rules.preset("traditional", num_players=3)  # scores -15..14 for 3 sides
    assert table_states(rules) == 30**3 > MAX_STATES
    with pytest.raises(ValueError, match="27000 score combinations"):
        win_table(rules)


@pytest.mark.parametrize("players", [3, 4])
def test_search_value_win_needs_a_table(players: int) -> None:
    rules = Rules.preset("traditional", num_players=players)
    agent = make_agent("search:value=win")
    with pytest.raises(ValueError, match="value='win' needs a match-win table"):
        agent.reset(rules, 0, np.random.default_rng(0))
    for spec in ("search", "search:value=margin"):  # auto falls back to the margin
        agent = make_agent(spec)
        agent.reset(rules, 0, np.random.default_rng(0))
        assert agent._win_table(rules) is None
    standard = Rules.preset("standard", num_players=players)
    for spec in ("search", "search:value=win"):
        agent = make_agent(spec)
        agent.reset(standard, 0, np.random.default_rng(0))
        assert agent._win_table(standard) is win_table(standard)


def _hand_end_position(players: int = 2) -> BergenState:
    """Standard, a player to move with one tile left that goes out without a header."""
    rules = Rules.preset("standard", num_players=players)
    for seed in range(10_000):
        s = BergenState(rules, seed=seed)
        rng = np.random.default_rng(seed)
        while not s.terminal and s.hand_number == 0:
            legal = s.legal_actions()
            if s.hand_len[s.current_player] == 1 and len(legal) == 1 and legal[0] < 56:
                c = s.clone()
                c.apply_unchecked(legal[0])
                if c.hand_number == 1 and not c.terminal and c.hand_results[0].reason == "domino":
                    return s
            s.apply_unchecked(legal[int(rng.integers(len(legal)))])
    raise AssertionError("no position found")


@pytest.mark.parametrize("players", [2, 3])
@pytest.mark.parametrize("value", ["auto", "win", "margin"])
def test_leaf_value_of_a_hand_end(value: str, players: int) -> None:
    """A play that ends the hand (not the match) is worth the table's chance or the margin."""
    s = _hand_end_position(players)
    p = s.current_player
    agent = SearchAgent(samples=1, value=value)
    agent.reset(s.rules, p, np.random.default_rng(0))
    legal = s.legal_actions()
    after = s.clone()
    after.apply_unchecked(legal[0])
    own = after.scores[p]
    others = [after.scores[(p + k) % players] for k in range(1, players)]  # in turn order
    (got,) = agent.playout_values(s, legal)
    if value == "margin":
        assert got == own - max(others)
    else:
        w = win_table(s.rules)(own, *others)
        assert got == pytest.approx(WIN_VALUE * s.rules.target * (2 * w - 1))


def test_search_value_parameter() -> None:
    assert make_agent("search").value == "auto"
    assert make_agent("search:value=margin").value == "margin"
    with pytest.raises(ValueError, match="'value'"):
        make_agent("search:value=points")
