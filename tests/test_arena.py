"""The arena: duplicate deals, seatings, worker-count determinism, statistics, ratings, errors."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bergen_env.agents.base import Agent
from bergen_env.arena import (
    agent_names,
    play_match,
    run_tournament,
    seat_lineups,
)
from bergen_env.errors import IllegalActionError
from bergen_env.observation import OBS_SIZE
from bergen_env.ratings import bradley_terry, elo_ratings
from bergen_env.replay import read_jsonl, resimulate
from bergen_env.rules import Rules
from bergen_env.stats import mean_interval, standard_error, wilson_interval


class FirstLegal(Agent):
    """Plays the lowest legal action; checks it gets no observation (it does not ask for one)."""

    needs_observation = False

    def act(self, observation, action_mask, view):  # type: ignore[override]
        assert observation is None
        assert tuple(np.flatnonzero(action_mask)) == view.legal_actions
        return int(np.flatnonzero(action_mask)[0])


class Illegal(Agent):
    def act(self, observation, action_mask, view):  # type: ignore[override]
        assert observation.shape == (OBS_SIZE,)
        return int(np.flatnonzero(action_mask == 0)[0])


class NotAnInt(Agent):
    def act(self, observation, action_mask, view):  # type: ignore[override]
        return "draw"


# ---------------------------------------------------------------------- interval arithmetic


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        (50, 100, 0.4038, 0.5962),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (81, 263, 0.2553, 0.3662),  # Newcombe (1998), Stat. Med. 17:857, method 3 example
    ],
)
def test_wilson_known_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


@given(st.integers(1, 10_000), st.data())
def test_wilson_ends_solve_the_score_equation(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, n))
    z = 1.959963984540054
    phat = k / n
    for p in wilson_interval(k, n):  # |phat - p| = z * sqrt(p (1 - p) / n) at both ends
        assert (phat - p) ** 2 == pytest.approx(z * z * p * (1 - p) / n, abs=1e-12)


def test_wilson_edges_and_errors() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    for k, n in [(-1, 3), (4, 3), (0, -1)]:
        with pytest.raises(ValueError, match="successes"):
            wilson_interval(k, n)


def test_mean_interval() -> None:
    mean, lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0])
    half = 1.959963984540054 * np.std([1, 2, 3, 4], ddof=1) / 2
    assert (mean, lo, hi) == pytest.approx((2.5, 2.5 - half, 2.5 + half))
    assert mean_interval([7.0]) == (7.0, 7.0, 7.0)


def test_standard_error() -> None:
    assert standard_error([1.0, 2.0, 3.0, 4.0]) == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert np.isnan(standard_error([7.0]))


# ---------------------------------------------------------------------- ratings


def test_bradley_terry_two_agents_is_the_log_odds() -> None:
    r = elo_ratings(np.array([[0.0, 30.0], [10.0, 0.0]]), prior=0.0)
    assert r[0] - r[1] == pytest.approx(400 * np.log10(3.0))
    assert r.mean() == pytest.approx(1500.0)


def test_bradley_terry_recovers_strengths() -> None:
    true = np.array([4.0, 2.0, 1.0])
    games = 1000.0
    wins = games * true[:, None] / (true[:, None] + true[None, :])
    np.fill_diagonal(wins, 0.0)
    p = bradley_terry(wins, prior=0.0)
    assert p / p[-1] == pytest.approx(true, rel=1e-6)


def test_bradley_terry_prior_keeps_a_clean_sweep_finite() -> None:
    r = elo_ratings(np.array([[0.0, 20.0], [0.0, 0.0]]), prior=1.0)
    assert np.isfinite(r).all() and r[0] > r[1]
    with pytest.raises(ValueError, match="at least one win"):
        bradley_terry(np.array([[0.0, 20.0], [0.0, 0.0]]), prior=0.0)


# ---------------------------------------------------------------------- seatings and names


@pytest.mark.parametrize(
    ("agents", "players", "partnerships", "count"),
    [(2, 2, False, 2), (3, 3, False, 6), (4, 4, False, 24), (3, 2, False, 6), (2, 4, True, 2)],
)
def test_lineup_counts(agents: int, players: int, partnerships: bool, count: int) -> None:
    rules = Rules.preset(num_players=players, partnerships=partnerships)
    lineups = seat_lineups(agents, rules)
    assert len(lineups) == len(set(lineups)) == count
    assert lineups[0] == tuple(range(players)) or lineups[0] == (0, 1, 0, 1)
    seats = defaultdict(set)
    for lineup in lineups:
        for seat, i in enumerate(lineup):
            seats[i].add(seat)
    assert all(s == set(range(players)) for s in seats.values())  # everyone sits everywhere


def test_partnership_lineups_keep_partners() -> None:
    rules = Rules.preset(num_players=4, partnerships=True)
    lineups = seat_lineups(4, rules)
    assert len(lineups) == len(set(lineups)) == 8
    for lineup in lineups:
        assert {lineup[0], lineup[2]} in ({0, 2}, {1, 3})  # A & C, B & D stay together
    assert seat_lineups(2, rules) == [(0, 1, 0, 1), (1, 0, 1, 0)]


@pytest.mark.parametrize(
    ("agents", "players", "partnerships", "words"),
    [(2, 3, False, "at least 3 agents"), (3, 4, True, "partnerships take 2")],
)
def test_lineup_errors(agents: int, players: int, partnerships: bool, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        seat_lineups(agents, Rules.preset(num_players=players, partnerships=partnerships))


def test_names_get_suffixes_for_repeats() -> None:
    assert agent_names(["heuristic", "heuristic", "random"]) == [
        "heuristic#1",
        "heuristic#2",
        "random",
    ]
    assert agent_names([FirstLegal(), "random"]) == ["FirstLegal", "random"]


# ---------------------------------------------------------------------- the duplicate format


@pytest.mark.parametrize(
    ("agents", "players", "partnerships"),
    [
        (["greedy", "random"], 2, False),
        (["greedy", "random", "heuristic"], 3, False),
        (["greedy", "random"], 4, True),
    ],
)
def test_duplicate_replays_identical_deals(agents: list, players: int, partnerships: bool) -> None:
    rules = Rules.preset(num_players=players, partnerships=partnerships)
    result = run_tournament(agents, rules, matches=12, seed=5, keep_deals=True)
    rotations = len(seat_lineups(len(agents), rules))
    groups = defaultdict(list)
    for r in result.records:
        groups[r.group].append(r)
    assert len(result.records) == result.config["matches"] == 12
    differs = False
    for group in groups.values():
        assert [r.rotation for r in group] == list(range(rotations))
        assert len({r.lineup for r in group}) == rotations
        shortest = min(len(r.deals) for r in group)
        assert shortest >= 1
        for h in range(shortest):  # hand h is dealt identically in every seating
            assert all(r.deals[h] == group[0].deals[h] for r in group)
        differs |= len({(r.scores, r.hands) for r in group}) > 1
    assert differs  # the play did change with the seating: the deals did not follow the play
    firsts = [json.dumps(g[0].deals[0]) for g in groups.values()]
    assert len(set(firsts)) == len(firsts)  # each group has its own deals


def test_no_duplicate_gives_every_match_its_own_deals() -> None:
    result = run_tournament(
        ["greedy", "random"], Rules.preset(), matches=5, seed=1, duplicate=False, keep_deals=True
    )
    assert result.config["matches"] == 5 and not result.config["duplicate"]
    assert [r.rotation for r in result.records] == [0, 1, 0, 1, 0]
    firsts = [json.dumps(r.deals[0]) for r in result.records]
    assert len(set(firsts)) == 5


def test_matches_round_up_to_whole_groups() -> None:
    result = run_tournament(
        ["greedy", "random", "heuristic"], Rules.preset(num_players=3), matches=7, seed=0
    )
    assert result.config["matches"] == 12 and result.config["groups"] == 2
    assert "rounded up" in result.config["note"]


# ---------------------------------------------------------------------- determinism


def _comparable(result) -> dict:
    data = result.to_dict()
    del data["config"]["workers"]
    return data


@pytest.mark.parametrize(
    ("agents", "players", "partnerships"),
    [(["greedy", "random", "random"], 3, False), (["heuristic", "random"], 4, True)],
)
def test_same_seed_same_results_whatever_the_workers(
    agents: list, players: int, partnerships: bool
) -> None:
    rules = Rules.preset(num_players=players, partnerships=partnerships)
    one = run_tournament(agents, rules, matches=24, seed=11, workers=1)
    two = run_tournament(agents, rules, matches=24, seed=11, workers=2)
    assert one.records == two.records
    assert _comparable(one) == _comparable(two)
    other = run_tournament(agents, rules, matches=24, seed=12, workers=1)
    assert other.records != one.records


# ---------------------------------------------------------------------- statistics


def test_statistics_add_up_and_headers_explain_the_scores(tmp_path) -> None:
    rules = Rules.preset("traditional", num_players=3)  # leftover penalties: scores can drop
    path = tmp_path / "replays.jsonl"
    result = run_tournament(
        ["greedy", "random", FirstLegal()], rules, matches=12, seed=2, replays=path
    )
    replays = read_jsonl(path)
    assert len(replays) == len(result.records) == 12
    for record, replay in zip(result.records, replays):
        assert resimulate(replay) == list(record.scores)
        assert (replay["group"], replay["rotation"]) == (record.group, record.rotation)
        assert replay["agents"] == [result.config["agents"][i] for i in record.lineup]
        # final score = headers + hand-end points, per side (seat = side in individual play)
        end_points = [0] * rules.num_sides
        for hand in replay["hands"]:
            if hand["result"] and hand["result"]["reason"] != "target":
                end_points = [a + b for a, b in zip(end_points, hand["result"]["points"])]
        assert [h + e for h, e in zip(record.header_points, end_points)] == list(record.scores)
        assert len(replay["hands"]) == record.hands
    wins = sum(s.wins for s in result.agents.values())
    assert wins + result.config["unfinished"] == 12
    for s in result.agents.values():
        assert s.ci95[0] <= s.match_win_rate <= s.ci95[1]
        assert s.hands == sum(r.hands for r in result.records)
        assert s.header_points >= 2 * s.headers
    totals = sum(sum(r.scores) for r in result.records)
    assert totals == pytest.approx(
        sum(s.mean_points_per_match * s.matches for s in result.agents.values())
    )


def test_two_agent_partnerships_count_the_side() -> None:
    rules = Rules.preset(num_players=4, partnerships=True)
    result = run_tournament(["greedy", "random"], rules, matches=6, seed=3)
    g, r = result.agents["greedy"], result.agents["random"]
    assert g.wins + r.wins == 6 and g.hands_ended == r.hands_ended
    assert g.hands_won + r.hands_won <= g.hands_ended
    for rec in result.records:  # greedy sits in two seats of one side
        seats = [s for s, i in enumerate(rec.lineup) if i == 0]
        assert len(seats) == 2 and rules.side_of[seats[0]] == rules.side_of[seats[1]]


def test_head_to_head_and_ratings_for_a_league() -> None:
    result = run_tournament(["greedy", "random", "random"], Rules.preset(), matches=12, seed=4)
    h2h = result.head_to_head
    names = ["greedy", "random#1", "random#2"]
    assert list(h2h) == names and list(result.ratings) == names
    for a in names:
        assert h2h[a][a] is None
        for b in names:
            if a != b:
                assert h2h[a][b] + h2h[b][a] == pytest.approx(1.0)
    assert result.agents["greedy"].matches == 8  # a 2-seat round robin: 4 of 6 seatings
    assert "head to head" in result.table() and "ratings" in result.table()


def test_unfinished_matches_have_no_winner() -> None:
    result = run_tournament(["greedy", "random"], Rules.preset(), matches=10, seed=0, max_hands=1)
    unfinished = result.config["unfinished"]
    assert unfinished > 0
    assert sum(s.wins for s in result.agents.values()) == 10 - unfinished
    assert all(r.hands == 1 for r in result.records)
    assert all(r.winner is None for r in result.records if r.scores[0] < 15 > r.scores[1])


def test_to_dict_schema_is_json() -> None:
    result = run_tournament(["greedy", "random"], Rules.preset(), matches=4, seed=0)
    data = json.loads(json.dumps(result.to_dict()))
    assert set(data) == {"agents", "head_to_head", "ratings", "config"}
    keys = {
        "match_win_rate",
        "ci95",
        "mean_points_per_hand",
        "mean_points_per_match",
        "hand_win_rate",
        "headers",
        "header_points",
        "blocked_won",
        "mean_match_hands",
        "matches",
        "wins",
    }
    for name in ("greedy", "random"):
        entry = data["agents"][name]
        assert keys <= set(entry)
        lo, hi = entry["ci95"]
        assert 0.0 <= lo <= entry["match_win_rate"] <= hi <= 1.0
    config = data["config"]
    assert config["seed"] == 0 and config["duplicate"] is True and config["matches"] == 4
    assert config["rules"]["name"] == "standard" and config["agents"] == ["greedy", "random"]


def test_self_play_names() -> None:
    result = run_tournament(["greedy", "greedy"], Rules.preset(), matches=2, seed=0)
    assert list(result.agents) == ["greedy#1", "greedy#2"]


# ---------------------------------------------------------------------- errors


def test_unknown_agent_is_named() -> None:
    with pytest.raises(ValueError, match="no_such_agent"):
        run_tournament(["greedy", "no_such_agent"], Rules.preset(), matches=2)
    with pytest.raises(ValueError, match="no_such_agent"):
        run_tournament(["greedy", "no_such_agent"], Rules.preset(), matches=2, workers=2)


@pytest.mark.parametrize("agent", [Illegal(), NotAnInt()])
def test_illegal_action_names_the_agent(agent: Agent) -> None:
    name = type(agent).__name__
    with pytest.raises(IllegalActionError, match=f"agent '{name}' .*illegal"):
        run_tournament([agent, "random"], Rules.preset(), matches=2)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"matches": 0}, "matches"),
        ({"workers": 0}, "workers"),
        ({"seed": -1}, "seed"),
        ({"max_hands": 0}, "max_hands"),
        ({"agents": ["greedy"]}, "at least 2 agents"),
        ({"agents": [FirstLegal(), "random"], "workers": 2}, "workers > 1"),
    ],
)
def test_bad_arguments(kwargs: dict, words: str) -> None:
    args = {"agents": ["greedy", "random"], "rules": Rules.preset(), "matches": 2} | kwargs
    with pytest.raises(ValueError, match=words):
        run_tournament(**args)


def test_play_match_directly() -> None:
    rules = Rules.preset()
    agents = [FirstLegal(), FirstLegal()]
    a = play_match(rules, agents, 3, [0, 1], keep_deals=True)
    b = play_match(rules, agents, 3, [0, 1], keep_deals=True)
    assert a == b and a.winner in (0, 1) and len(a.deals) == a.hands


def test_t_interval_quantiles_and_clipping() -> None:
    from bergen_env.stats import Z95, t95, t_interval

    assert t95(1) == pytest.approx(12.7062047)
    assert t95(60) == pytest.approx(2.0002978, abs=1e-6)  # beyond the table: the series
    assert t95(10_000) == pytest.approx(Z95, abs=3e-4)
    mean, lo, hi = t_interval([0.0, 1.0, 1.0, 1.0])
    half = t95(3) * standard_error([0.0, 1.0, 1.0, 1.0])
    assert (lo, hi) == pytest.approx((mean - half, mean + half))
    assert t_interval([0.0, 1.0, 1.0, 1.0], bounds=(-1.0, 1.0))[2] == 1.0  # clipped
    assert t_interval([0.5], bounds=(-1.0, 1.0)) == (0.5, -1.0, 1.0)
