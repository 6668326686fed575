"""Scripted deals for Draw and Fives (RULES.md, "Presets"): every new clause, engine and env.

Deals list the hands and the front of the boneyard (see ``tests/scripted.py``). Short hands with
a reserve as large as the boneyard (nobody may draw) make hands end in a few moves.
"""

from __future__ import annotations

import numpy as np
import pytest

from bergen_env import BergenState, InvalidDealError, InvalidOptionError, Rules, raw_env
from bergen_env.engine import validate_deal
from bergen_env.tiles import DOUBLE_ID, IS_DOUBLE, PIPS, parse_tile
from tests.scripted import engine_legal, make_deal, play


def fives(**kwargs: object) -> Rules:
    return Rules.preset("fives", **kwargs)


def draw(**kwargs: object) -> Rules:
    return Rules.preset("draw", **kwargs)


def scripted(rules: Rules, *deals: dict) -> BergenState:
    return BergenState(rules, seed=0, deals=list(deals))


def after(s: BergenState, action: str) -> tuple[int, ...]:
    play(s, [action])
    return tuple(s.scores)


# ---------------------------------------------------------------------- presets and options


def test_presets_follow_the_table() -> None:
    for n, size in ((2, 7), (3, 5), (4, 5)):
        d, f = draw(num_players=n), fives(num_players=n)
        assert d.hand_size == f.hand_size == size
        assert (d.lead, f.lead) == ("highest_any", "rotate")
        assert (d.reserve, f.reserve) == (0, 2 if n == 2 else 1)
        assert (d.play_scoring, f.play_scoring) == ("none", "fives")
        assert (d.out_scoring, f.out_scoring) == ("pips", "pips_fives")
        assert d.blocked_rule == f.blocked_rule == "pips"
        assert (d.single_hand, f.single_hand) == (True, False)
        assert (d.target, f.target) == (0, 61)
        assert d.partnerships == f.partnerships == (n == 4)
        assert not d.end_caps and not f.end_caps
    assert fives(num_players=4, partnerships=False).num_sides == 4
    assert Rules.preset("standard", num_players=4).partnerships is False
    bergen = Rules.preset("standard")
    assert (bergen.play_scoring, bergen.out_scoring, bergen.single_hand) == (
        "headers",
        "fixed",
        False,
    )


@pytest.mark.parametrize(
    ("preset", "overrides", "named"),
    [
        ("fives", dict(end_caps=True), "end_caps"),
        ("draw", dict(end_caps=True), "end_caps"),
        ("fives", dict(domino_points=2), "domino_points"),
        ("fives", dict(blocked_points=1), "blocked_points"),
        ("draw", dict(leftover_penalty=1), "leftover_penalty"),
        ("fives", dict(sets=2), "sets"),
        ("fives", dict(target=0), "target"),
        ("draw", dict(target=-1), "target"),
        ("fives", dict(lead="first"), "lead"),
        ("fives", dict(play_scoring="all_fives"), "play_scoring"),
        ("draw", dict(out_scoring="points"), "out_scoring"),
        ("draw", dict(single_hand="yes"), "single_hand"),
        ("standard", dict(play_scoring="fives"), "end_caps"),
        ("traditional", dict(out_scoring="pips"), "domino_points"),
        ("fives", dict(reserve=-1), "reserve"),
        ("draw", dict(hand_size=15), "hand_size"),
    ],
)
def test_inapplicable_or_bad_options_are_named(preset: str, overrides: dict, named: str) -> None:
    with pytest.raises(InvalidOptionError, match=named):
        Rules.preset(preset, **overrides)


def test_new_values_combine_with_bergen_and_round_trip() -> None:
    r = Rules.preset("standard", lead="rotate", end_caps=False, play_scoring="fives")
    assert r.lead == "rotate" and r.play_scoring == "fives"
    for rules in (r, draw(num_players=4), fives(num_players=3)):
        assert Rules.from_dict(rules.to_dict()) == rules


# ---------------------------------------------------------------------- Fives: the count


def test_fives_opening_counts_the_single_tile() -> None:
    r = fives(hand_size=2, reserve=24)
    s = scripted(r, make_deal(r, [[(5, 5), (1, 1)], [(5, 6), (4, 4)]]))
    assert after(s, "[5|5]>left") == (2, 0)  # 10 pips: both ends show 5, yet not 20
    s = scripted(r, make_deal(r, [[(2, 3), (1, 1)], [(3, 6), (4, 4)]]))
    assert after(s, "[2|3]>left") == (1, 0)  # 5 pips: 1 point
    s = scripted(r, make_deal(r, [[(0, 0), (1, 1)], [(0, 6), (4, 4)]]))
    assert after(s, "[0|0]>left") == (0, 0)  # the double blank never scores
    assert s.hand_number == 0 and s.current_player == 1


def test_fives_counts_10_15_20_double_ends_and_a_covered_double() -> None:
    r = fives(hand_size=5, reserve=18)
    hands = [
        [(1, 5), (0, 1), (5, 6), (6, 6), (3, 3)],
        [(5, 5), (0, 5), (4, 5), (4, 4), (2, 2)],
    ]
    s = scripted(r, make_deal(r, hands))
    assert after(s, "[1|5]>left") == (0, 0)  # 6
    assert after(s, "[5|5]>right") == (0, 0)  # 1 + [5|5] 10 = 11
    assert after(s, "[0|1]>left") == (2, 0)  # 0 + 10 = 10: a double end counts both halves
    assert after(s, "[0|5]>left") == (2, 3)  # 5 + 10 = 15
    assert after(s, "[5|6]>left") == (2, 3)  # 6 + 10 = 16
    assert after(s, "[4|5]>right") == (2, 5)  # the [5|5] covered: 6 + 4 = 10
    assert after(s, "[6|6]>left") == (2, 5)  # 12 + 4 = 16
    # 12 + 8 = 20: 4 points; then nobody fits a 6 or a 4 and nobody may draw: blocked, player_1
    # holds 4 pips against 6 and scores them rounded to fives: (6 + 2) // 5 = 1
    assert after(s, "[4|4]>right") == (2, 10)
    result = s.hand_results[0]
    assert (result.reason, result.winner, result.points) == ("blocked", 1, (0, 1))


def test_fives_double_blank_on_a_count_of_five_scores_nothing() -> None:
    r = fives(hand_size=2, reserve=24)
    s = scripted(r, make_deal(r, [[(0, 5), (5, 6)], [(0, 0), (4, 4)]]))
    assert after(s, "[0|5]>left") == (1, 0)  # 5
    assert after(s, "[0|0]>left") == (1, 0)  # [0|0] and 5 count 5, but [0|0] never scores


# ---------------------------------------------------------------------- Fives: leads, reserve


def test_fives_leads_rotate_with_any_tile() -> None:
    r = fives(hand_size=2, reserve=24)
    deals = [
        make_deal(r, [[(0, 1), (2, 2)], [(2, 3), (4, 4)]]),
        make_deal(r, [[(6, 6), (3, 3)], [(1, 4), (2, 2)]]),
        make_deal(r, [[(0, 1), (2, 2)], [(2, 3), (4, 4)]]),
    ]
    s = scripted(r, *deals)
    assert s.current_player == 0 and s.lead_tile is None
    assert engine_legal(s) == {"[0|1]>left", "[2|2]>left"}  # any tile, laid with end 0
    # [0|1] (1) blocks at once: player_0 holds 4 pips, player_1 13: (13 + 2) // 5 = 3
    assert after(s, "[0|1]>left") == (3, 0)
    assert s.hand_number == 1 and s.current_player == 1  # seat 1 leads hand 1
    assert engine_legal(s) == {"[1|4]>left", "[2|2]>left"}
    # [1|4] scores 5 pips; a block: 4 pips against 18 ([6|6] + [3|3]): 1 + (18 + 2) // 5 = 5
    assert after(s, "[1|4]>left") == (3, 5)
    assert s.hand_number == 2 and s.current_player == 0


def test_fives_reserve_two_with_two_players_one_with_more() -> None:
    r = fives()
    zeros = [(0, k) for k in range(7)]
    ones = [(1, k) for k in range(1, 7)] + [(2, 2)]
    s = scripted(r, make_deal(r, [zeros, ones]))
    assert s.boneyard_size == 14 and s.drawable == 12
    play(s, ["[0|0]>left"])
    for _ in range(12):  # the boneyard holds no 0: player_1 draws all but the reserve of 2
        assert engine_legal(s) == {"draw"}
        play(s, ["draw"])
    assert engine_legal(s) == {"pass"} and s.boneyard_size == 2
    for n in (3, 4):
        state = BergenState(fives(num_players=n), seed=1)
        assert state.drawable == state.boneyard_size - 1


# ---------------------------------------------------------------------- Fives: hand ends


@pytest.mark.parametrize(
    ("left", "award"),
    [
        ([(3, 3), (3, 6), (4, 6), (5, 6)], 7),  # 36 pips -> 35 -> 7
        ([(3, 3), (4, 6), (5, 5), (6, 6)], 8),  # 38 pips -> 40 -> 8
    ],
)
def test_fives_domino_scores_the_pips_rounded_to_fives(left: list, award: int) -> None:
    r = fives(hand_size=4, reserve=20)
    s = scripted(r, make_deal(r, [[(0, 1), (1, 2), (0, 2), (0, 0)], left]))
    play(s, ["[0|1]>left", "pass", "[1|2]>right", "pass", "[0|2]>right", "pass"])
    assert s.scores == [0, 0]
    play(s, ["[0|0]>left"])
    result = s.hand_results[0]
    assert (result.reason, result.winner, result.seat, result.points) == (
        "domino",
        0,
        0,
        (award, 0),
    )
    assert s.scores == [award, 0]


def test_fives_blocked_fewest_pips_wins_and_a_tie_scores_nothing() -> None:
    r = fives(hand_size=2, reserve=24)
    s = scripted(r, make_deal(r, [[(0, 1), (5, 5)], [(6, 6), (4, 4)]]))
    assert after(s, "[0|1]>left") == (4, 0)  # 10 pips against 20: (20 + 2) // 5 = 4
    assert s.hand_results[0].reason == "blocked"
    s = scripted(r, make_deal(r, [[(0, 1), (4, 6)], [(3, 3), (2, 2)]]))
    assert after(s, "[0|1]>left") == (0, 0)  # 10 pips each: a tie, nobody scores
    result = s.hand_results[0]
    assert (result.reason, result.winner, result.points) == ("blocked", None, (0, 0))
    assert s.hand_number == 1 and not s.terminal


def test_fives_partnerships_sum_both_partners() -> None:
    r = fives(num_players=4, hand_size=1, reserve=24)
    s = scripted(r, make_deal(r, [[(0, 1)], [(6, 6)], [(5, 5)], [(5, 6)]]))
    # domino: side 1 holds 12 + 11 = 23 -> 25 -> 5; the partner's [5|5] does not count
    assert after(s, "[0|1]>left") == (5, 0)
    r = fives(num_players=4, hand_size=2, reserve=20)
    hands = [[(0, 1), (2, 2)], [(3, 3), (4, 4)], [(5, 5), (6, 6)], [(3, 4), (2, 5)]]
    s = scripted(r, make_deal(r, hands))
    # blocked: side 0 holds 4 + 22 = 26 pips, side 1 14 + 14 = 28: side 0 wins 28 -> 30 -> 6
    assert after(s, "[0|1]>left") == (6, 0)
    assert s.hand_results[0].winner == 0


def test_fives_target_61_reached_mid_hand_and_by_a_domino() -> None:
    r = fives()
    s = BergenState(
        r,
        seed=0,
        deals=[
            make_deal(
                r, [[(5, 5), *[(0, k) for k in range(6)]], [(1, k) for k in range(1, 7)] + [(2, 2)]]
            )
        ],
    )
    s.scores[0] = 59
    play(s, ["[5|5]>left"])
    assert s.terminal and s.winner == 0 and s.scores == [61, 0] and not s.hand_results
    assert s.returns() == [1.0, -1.0]
    r = fives(hand_size=4, reserve=20)
    s = scripted(
        r, make_deal(r, [[(0, 1), (1, 2), (0, 2), (0, 0)], [(3, 3), (3, 6), (4, 6), (5, 6)]])
    )
    s.scores[0] = 55
    play(s, ["[0|1]>left", "pass", "[1|2]>right", "pass", "[0|2]>right", "pass", "[0|0]>left"])
    assert s.terminal and s.winner == 0 and s.scores == [62, 0]


# ---------------------------------------------------------------------- Draw


def test_draw_highest_double_leads_any_tile() -> None:
    r = draw()
    zeros = [(0, k) for k in range(7)]
    other = [(6, 6), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (2, 3)]
    s = scripted(r, make_deal(r, [zeros, other]))
    assert s.current_player == 1 and s.lead_tile is None  # [6|6] beats [0|0]
    assert engine_legal(s) == {f"[{a}|{b}]>left" for a, b in other}
    play(s, ["[1|2]>left"])
    assert s.ends == (1, 2) and s.scores == [0, 0]  # Draw scores nothing during play


def test_draw_deal_needs_a_double_fives_does_not() -> None:
    no_double = [
        [(0, k) for k in range(1, 7)] + [(1, 2)],
        [(1, k) for k in range(3, 7)]
        + [
            (2, 3),
            (2, 4),
            (2, 5),
        ],
    ]
    with pytest.raises(InvalidDealError, match="double"):
        validate_deal(make_deal(draw(), no_double), draw())
    s = scripted(fives(), make_deal(fives(), no_double))
    assert s.current_player == 0 and len(s.legal_actions()) == 7


def test_draw_redeals_until_a_double_is_dealt_and_its_highest_holder_leads() -> None:
    r = draw(hand_size=1)  # two tiles dealt: no double about half the time
    for seed in range(60):
        s = BergenState(r, seed=seed)
        held = [s.hand_tiles(seat)[0] for seat in range(2)]
        doubles = [t for t in held if IS_DOUBLE[t]]
        assert doubles, "a deal without a double must be redealt"
        assert held[s.current_player] == max(doubles)


def _draw_env(deal_hands: list) -> raw_env:
    r = draw(hand_size=2, reserve=24)
    env = raw_env(rules=r)
    env.reset(seed=0, options={"deals": [make_deal(r, deal_hands)]})
    return env


def test_draw_domino_scores_the_pips_and_ends_the_match() -> None:
    env = _draw_env([[(6, 6), (1, 6)], [(5, 5), (2, 3)]])
    assert env.agent_selection == "player_0"
    env.step(2 * parse_tile((6, 6)))
    assert env.agent_selection == "player_1"
    env.step(57)  # no 6 and nothing to draw: pass
    env.step(2 * parse_tile((1, 6)) + 1)
    assert all(env.terminations.values())
    assert tuple(env.infos["player_0"]["scores"]) == (15, 0)  # [5|5] + [2|3]
    assert [env.rewards[a] for a in env.possible_agents] == [1.0, -1.0]


def test_draw_blocked_tie_ends_the_match_with_no_winner() -> None:
    env = _draw_env([[(6, 6), (2, 2)], [(0, 1), (0, 3)]])
    env.step(2 * parse_tile((6, 6)))  # nobody holds a 6: blocked, 4 pips each
    assert all(env.terminations.values())
    assert tuple(env.infos["player_0"]["scores"]) == (0, 0)
    assert [env.rewards[a] for a in env.possible_agents] == [0.0, 0.0]
    assert env.game.winner is None and env.game.hand_results[0].winner is None


def test_draw_blocked_fewest_pips_wins_the_others_pips() -> None:
    r = draw(num_players=3, hand_size=2, reserve=22)
    s = scripted(r, make_deal(r, [[(6, 6), (2, 2)], [(0, 1), (0, 2)], [(3, 4), (1, 1)]]))
    play(s, ["[6|6]>left"])
    # blocked: 4, 3 and 9 pips: player_1 wins 4 + 9
    assert s.terminal and s.winner == 1 and s.scores == [0, 13, 0]
    assert sum(PIPS[t] for t in s.hand_tiles(0)) == 4
    assert DOUBLE_ID[6] == parse_tile((6, 6))
    assert np.array_equal(s.returns(), [-0.5, 1.0, -0.5])
