"""Scripted deals for every clause of RULES.md from "Dealing and the lead" to "The match", with
masks, scores and turn after each step.

Each deal is written by hand; the comments give the reasoning from the rules. Deals list the
hands and the front of the boneyard (the rest follows in canonical order, see ``scripted``).
A large ``reserve`` override makes the whole boneyard undrawable, so a hand can block at once.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scripted import check_masks, engine_legal, make_deal, new_env, play, step

from bergen_env import BergenState, HandResult, Rules, blocked_winner
from bergen_env.tiles import IS_DOUBLE, NUM_TILES, parse_tile

# --------------------------------------------------------------------------- headers

# standard, 2 players. [0|0] stays in the boneyard, so [1|1] (player_0) is the lowest double.
HEADERS_HANDS = [
    [(1, 1), (1, 4), (4, 4), (2, 5), (2, 6), (5, 6)],
    [(1, 3), (3, 4), (5, 5), (6, 6), (2, 2), (0, 2)],
]
HEADERS_BONEYARD = [(4, 5)]  # the first tile drawn


def headers_env(**kwargs: object):
    rules = Rules.preset("standard", **kwargs)  # type: ignore[arg-type]
    deal = make_deal(rules, HEADERS_HANDS, HEADERS_BONEYARD)
    return new_env([deal], rules=rules)


def test_opening_double_and_triple_headers_and_draw_again() -> None:
    env = headers_env()
    assert env.agent_selection == "player_0"
    check_masks(env, {"[1|1]>left"})  # the forced lead, on end 0 only
    assert not env.game.is_legal(2 * parse_tile((1, 1)) + 1)
    # opening double: both ends 1 (double ends) -> double header, 2 points
    step(env, "[1|1]>left", scores=(2, 0), next=1, legal={"[1|3]>left", "[1|3]>right"})
    assert env.game.ends == (1, 1) and env.game.end_dbl == [True, True]
    # ends 3 | 1(double): no header
    step(env, "[1|3]>left", scores=(2, 0), next=0, legal={"[1|4]>right"})
    step(env, "[1|4]>right", scores=(2, 0), next=1, legal={"[3|4]>left", "[3|4]>right"})
    # ends 4 | 4, neither a double end: double header, 2 points for player_1
    step(env, "[3|4]>left", scores=(2, 2), next=0, legal={"[4|4]>left", "[4|4]>right"})
    # ends 4(double) | 4: triple header, 3 points; player_1 holds no 4 and must draw
    step(env, "[4|4]>left", scores=(5, 2), next=1, legal={"draw"})
    assert env.game.end_dbl == [True, False]
    # the draw takes the boneyard's first tile [4|5]; the same player acts again
    step(env, "draw", scores=(5, 2), next=1, legal={"[4|5]>left", "[4|5]>right"})
    assert env.game.boneyard_size == 15 and env.game.drawable == 13
    step(env, "[4|5]>right", scores=(5, 2), next=0, legal={"[2|5]>right", "[5|6]>right"})
    assert [r for r in env.rewards.values()] == [0.0, 0.0]  # reward="match": zero until the end
    assert not any(env.terminations.values())


# Header sequence of the deal above: opening double (player_0), double header (player_1),
# triple header (player_0). Scores after each with end caps: need = target - score.
#   target 6: need 6, 6, 4 -> 2, 2, 3 (no cap)
#   target 5: need 5, 5, 3 -> 2, 2, 2 (triple capped at 2)
#   target 4: need 4, 4, 2 -> 2, 2, 1
#   target 3: need 3, 3, 1 -> 2, 2, 1 (a double header at need 3 stays 2; player_0 reaches 3)
#   target 2: need 2, 2, 1 -> 1, 1, 1 (the opening double is capped like any header)
END_CAPS = [
    (6, True, [(2, 0), (2, 2), (5, 2)], None),
    (5, True, [(2, 0), (2, 2), (4, 2)], None),
    (4, True, [(2, 0), (2, 2), (3, 2)], None),
    (3, True, [(2, 0), (2, 2), (3, 2)], 0),
    (2, True, [(1, 0), (1, 1), (2, 1)], 0),
    (4, False, [(2, 0), (2, 2), (5, 2)], 0),
]


@pytest.mark.parametrize(("target", "end_caps", "scores", "winner"), END_CAPS)
def test_end_caps(target: int, end_caps: bool, scores: list, winner: int | None) -> None:
    env = headers_env(target=target, end_caps=end_caps)
    step(env, "[1|1]>left", scores=scores[0], next=1)
    step(env, "[1|3]>left", scores=scores[0], next=0)
    step(env, "[1|4]>right", scores=scores[0], next=1)
    step(env, "[3|4]>left", scores=scores[1], next=0)
    if winner is None:
        step(env, "[4|4]>left", scores=scores[2], next=1, rewards=(0.0, 0.0))
        assert not env.game.terminal
    else:  # the header reaches the target mid-hand: the match ends at once
        step(env, "[4|4]>left", scores=scores[2], legal=set(), rewards=(1.0, -1.0))
        assert env.game.terminal and env.game.winner == winner
        assert all(env.terminations.values())
        assert env.game.hand_results == []  # the hand never ended


# --------------------------------------------------------------------------- domino

# standard, 2 players, hand_size 3: player_0 goes out with a play that makes a double header.
DOMINO_HANDS = [[(1, 1), (1, 5), (5, 6)], [(1, 3), (3, 6), (2, 4)]]


@pytest.mark.parametrize(
    ("target", "final", "over"),
    [
        (15, (6, 0), False),  # 2 (opening) + 2 (header) + 2 (domino)
        (6, (6, 0), True),  # the domino points reach the target
        (4, (5, 0), True),  # header capped to 1 at need 2, then the uncapped domino 2: 5 not 4
        (3, (3, 0), True),  # header (need 1 -> 1) reaches the target: no domino points
    ],
)
def test_domino_after_a_header(target: int, final: tuple, over: bool) -> None:
    rules = Rules.preset("standard", hand_size=3, target=target)
    env = new_env([make_deal(rules, DOMINO_HANDS)], rules=rules)
    check_masks(env, {"[1|1]>left"})
    step(env, "[1|1]>left", scores=(2, 0), next=1, legal={"[1|3]>left", "[1|3]>right"})
    step(env, "[1|3]>left", scores=(2, 0), next=0, legal={"[1|5]>right"})
    step(env, "[1|5]>right", scores=(2, 0), next=1, legal={"[3|6]>left"})
    step(env, "[3|6]>left", scores=(2, 0), next=0, legal={"[5|6]>left", "[5|6]>right"})
    game = env.game
    if over:
        step(env, "[5|6]>left", scores=final, legal=set(), rewards=(1.0, -1.0))
        assert game.terminal and game.winner == 0 and all(env.terminations.values())
    else:
        step(env, "[5|6]>left", scores=final, rewards=(0.0, 0.0))
        assert game.hand_results == [
            HandResult(hand=0, reason="domino", winner=0, points=(2, 0), seat=0)
        ]
        assert game.hand_number == 1 and not game.terminal
        assert env.agent_selection == f"player_{game.current_player}"


# --------------------------------------------------------------------------- blocked


# (rule, player_0's tiles after leading [0|0], player_1's tiles, winning side or None)
BLOCKED_2P = [
    # german: fewest doubles wins even with more pips (1 double/9 pips vs 0/26)
    ("german", [(1, 1), (1, 2), (1, 3)], [(2, 3), (2, 4), (2, 5), (2, 6)], 1),
    # german: no doubles on either side -> fewest pips (12 vs 26)
    ("german", [(1, 2), (1, 3), (1, 4)], [(2, 3), (2, 4), (2, 5), (2, 6)], 0),
    # german tie: one double each and 18 pips each -> nobody scores
    ("german", [(1, 1), (2, 3), (5, 6)], [(2, 2), (1, 2), (1, 3), (3, 4)], None),
    # american: a side without doubles beats a side with doubles
    ("american", [(1, 1), (1, 2), (1, 3)], [(2, 3), (2, 4), (2, 5), (2, 6)], 1),
    # american: both without doubles -> fewest pips
    ("american", [(1, 2), (1, 3), (1, 4)], [(2, 3), (2, 4), (2, 5), (2, 6)], 0),
    # american: both hold doubles -> the lowest double ([2|2] beats [3|3]), despite 3 doubles
    ("american", [(3, 3), (1, 2), (1, 3)], [(2, 2), (5, 5), (6, 6), (4, 6)], 1),
    # american tie: no doubles, 30 pips each
    ("american", [(4, 6), (5, 6), (3, 6)], [(1, 6), (2, 5), (3, 4), (4, 5)], None),
    # pips: doubles do not matter (9 vs 26; 30 vs 13)
    ("pips", [(1, 1), (1, 2), (1, 3)], [(2, 3), (2, 4), (2, 5), (2, 6)], 0),
    ("pips", [(4, 6), (5, 6), (3, 6)], [(1, 1), (2, 2), (1, 2), (1, 3)], 1),
    ("pips", [(4, 6), (5, 6), (3, 6)], [(1, 6), (2, 5), (3, 4), (4, 5)], None),
    # most_doubles: a side holding doubles beats sides without
    ("most_doubles", [(1, 1), (1, 2), (1, 3)], [(2, 3), (2, 4), (2, 5), (2, 6)], 0),
    # most_doubles: more doubles wins (3 vs 1)
    ("most_doubles", [(3, 3), (1, 2), (1, 3)], [(2, 2), (5, 5), (6, 6), (4, 6)], 1),
    # most_doubles: equal counts -> the lowest double ([1|1] beats [2|2])
    ("most_doubles", [(1, 1), (1, 2), (1, 3)], [(2, 2), (2, 3), (2, 4), (2, 5)], 0),
    # most_doubles: nobody holds a double -> fewest pips (30 vs 17)
    ("most_doubles", [(4, 6), (5, 6), (3, 6)], [(1, 2), (1, 3), (1, 4), (2, 3)], 1),
    ("most_doubles", [(4, 6), (5, 6), (3, 6)], [(1, 6), (2, 5), (3, 4), (4, 5)], None),
]


@pytest.mark.parametrize(("rule", "rest0", "hand1", "winner"), BLOCKED_2P)
def test_blocked_rules_two_sides(rule: str, rest0: list, hand1: list, winner: int | None) -> None:
    rules = Rules.preset("standard", hand_size=4, reserve=20, blocked_rule=rule)
    env = new_env([make_deal(rules, [[(0, 0)] + rest0, hand1])], rules=rules)
    points = [0, 0]
    if winner is not None:
        points[winner] = 2  # blocked_points of standard
    expected = (2 + points[0], points[1])  # the opening double scored 2 for player_0 first
    # blocked at once after the lead: no passes; the next hand is dealt at once
    step(env, "[0|0]>left", scores=expected)
    game = env.game
    assert game.hand_results == [
        HandResult(hand=0, reason="blocked", winner=winner, points=tuple(points), blocked_rule=rule)
    ]
    assert game.hand_number == 1 and game.moves == []
    assert env.agent_selection == f"player_{game.current_player}"


@pytest.mark.parametrize(
    ("rule", "winner", "scores"),
    [
        # player_0 [4|6] 10 pips; player_1 [1|2][1|5] 9 pips; player_2 [1|3][2|2] 8 pips, 1 double
        ("pips", 2, (2, 0, 2)),
        ("german", 1, (2, 2, 0)),  # player_0 and player_1 hold no double: 9 < 10 pips
        ("most_doubles", 2, (2, 0, 2)),
    ],
)
def test_blocked_three_sides(rule: str, winner: int, scores: tuple) -> None:
    rules = Rules.preset("standard", num_players=3, hand_size=2, reserve=22, blocked_rule=rule)
    hands = [[(0, 0), (4, 6)], [(1, 2), (1, 5)], [(1, 3), (2, 2)]]
    env = new_env([make_deal(rules, hands)], rules=rules)
    step(env, "[0|0]>left", scores=scores)
    assert env.game.hand_results[0].winner == winner


def test_blocked_three_sides_tie_for_best() -> None:
    # pips: player_1 and player_2 tie at 9 (player_0 holds 10): nobody scores
    rules = Rules.preset("standard", num_players=3, hand_size=2, reserve=22, blocked_rule="pips")
    hands = [[(0, 0), (4, 6)], [(1, 2), (1, 5)], [(2, 3), (1, 3)]]
    env = new_env([make_deal(rules, hands)], rules=rules)
    step(env, "[0|0]>left", scores=(2, 0, 0))
    assert env.game.hand_results[0].winner is None


# Four players, hand_size 2, seat 0 leads [0|0] and the hand blocks at once.
# seat 0 [1|1] | seat 1 [1|2] [1|3] | seat 2 [2|3] [2|4] | seat 3 [5|5] [2|5]
PARTNER_HANDS = [[(0, 0), (1, 1)], [(1, 2), (1, 3)], [(2, 3), (2, 4)], [(5, 5), (2, 5)]]


@pytest.mark.parametrize(
    ("partnerships", "rule", "scores"),
    [
        # sides summed: side 0 = 1 double, 2+5+6 = 13 pips; side 1 = 1 double, 3+4+10+7 = 24
        (True, "german", (4, 0)),
        # individually seat 1 holds no double and 7 pips (seat 2: none, 11): seat 1 wins
        (False, "german", (2, 2, 0, 0)),
        # sides summed: one double each, side 0's lowest double [1|1] beats [5|5]
        (True, "most_doubles", (4, 0)),
        # individually seats 0 and 3 hold one double each; [1|1] is lower
        (False, "most_doubles", (4, 0, 0, 0)),
        # sides summed: 13 vs 24 pips
        (True, "pips", (4, 0)),
        # individually: seat 0 holds 2 pips
        (False, "pips", (4, 0, 0, 0)),
    ],
)
def test_blocked_partnerships_sum_both_hands(partnerships: bool, rule: str, scores: tuple) -> None:
    rules = Rules.preset(
        "standard",
        num_players=4,
        partnerships=partnerships,
        hand_size=2,
        reserve=20,
        blocked_rule=rule,
    )
    env = new_env([make_deal(rules, PARTNER_HANDS)], rules=rules)
    step(env, "[0|0]>left", scores=scores)
    assert env.game.hand_results[0].reason == "blocked"


def test_blocked_detected_at_once_after_a_play() -> None:
    # standard, hand_size 3, nothing drawable. After [1|1] and [1|5]>left the ends are 5 | 1 and
    # no hand holds a 1 or a 5: blocked without any pass. german: player_0 [2|3][2|4] 11 pips
    # beats player_1 [2|6][3|4] 15 pips (no doubles).
    rules = Rules.preset("standard", hand_size=3, reserve=22)
    hands = [[(1, 1), (2, 3), (2, 4)], [(1, 5), (2, 6), (3, 4)]]
    env = new_env([make_deal(rules, hands)], rules=rules)
    step(env, "[1|1]>left", scores=(2, 0), next=1, legal={"[1|5]>left", "[1|5]>right"})
    step(env, "[1|5]>left", scores=(4, 0))
    game = env.game
    assert game.hand_results[0].reason == "blocked" and game.hand_results[0].winner == 0
    assert game.hand_number == 1


def test_blocked_winner_function() -> None:
    # (doubles, pips, lowest double or 7) per side
    assert blocked_winner("german", [(1, 9, 1), (0, 26, 7)]) == 1
    assert blocked_winner("german", [(1, 18, 1), (1, 18, 2)]) is None
    assert blocked_winner("american", [(1, 9, 3), (3, 26, 2)]) == 1
    assert blocked_winner("american", [(1, 9, 2), (1, 9, 2)]) is None  # two sets: same double
    assert blocked_winner("pips", [(0, 9, 7), (0, 8, 7), (0, 8, 7)]) is None
    assert blocked_winner("most_doubles", [(0, 2, 7), (2, 30, 4), (2, 30, 3)]) == 2
    assert blocked_winner("most_doubles", [(0, 12, 7), (0, 11, 7)]) == 1
    with pytest.raises(ValueError, match="blocked_rule"):
        blocked_winner("chinese", [(0, 0, 7), (0, 1, 7)])


def _reference_key(rule: str, doubles: int, pip_count: int, lowest: int) -> tuple:
    """RULES.md's "Blocked hands" as one sort key per side: the unique smallest key wins, a tie
    scores nothing."""
    if rule == "german":
        return (doubles, pip_count)
    if rule == "american":  # sides without doubles first (by pips), else the lowest double
        return (doubles > 0, pip_count if doubles == 0 else lowest)
    if rule == "pips":
        return (pip_count,)
    return (-doubles, lowest if doubles else pip_count)  # most_doubles


_tally = st.integers(0, 4).flatmap(
    lambda d: st.tuples(st.just(d), st.integers(0, 60), st.integers(0, 6) if d else st.just(7))
)


@given(
    rule=st.sampled_from(["german", "american", "pips", "most_doubles"]),
    tallies=st.lists(_tally, min_size=2, max_size=4),
)
@settings(max_examples=200, deadline=None)
def test_blocked_winner_matches_the_rules(rule: str, tallies: list) -> None:
    keys = [_reference_key(rule, *t) for t in tallies]
    best = min(keys)
    expected = keys.index(best) if keys.count(best) == 1 else None
    assert blocked_winner(rule, tallies) == expected


# --------------------------------------------------------------------------- leftover penalty


@pytest.mark.parametrize(
    ("hands", "scores", "points"),
    [
        # most_doubles: player_0 keeps [1|1] and beats player_1 (no double): +1 blocked point;
        # player_1 loses 1 per tile (3): 2 + 1 = 3 and -3 (scores go below zero)
        ([[(6, 6), (1, 1), (1, 2)], [(2, 3), (1, 3), (4, 5)]], (3, -3), (1, -3)),
        # no doubles, 17 pips each: nobody wins, every side loses its tiles: 2 - 2 and -3
        ([[(6, 6), (4, 5), (3, 5)], [(1, 4), (1, 5), (2, 4)]], (0, -3), (-2, -3)),
    ],
)
def test_leftover_penalty_two_sides(hands: list, scores: tuple, points: tuple) -> None:
    # traditional: lead highest ([6|6]), blocked_points 1, leftover_penalty 1
    rules = Rules.preset("traditional", hand_size=3, reserve=22)
    env = new_env([make_deal(rules, hands)], rules=rules)
    check_masks(env, {"[6|6]>left"})
    step(env, "[6|6]>left", scores=scores)
    assert env.game.hand_results[0].points == points


def test_leftover_penalty_three_sides() -> None:
    # seat 0 leads [6|6] (highest); most_doubles: seat 1's [1|1] wins (+1), seat 0 loses 1
    # (one tile left), seat 2 loses 2: scores 2 - 1, 1, -2
    rules = Rules.preset("traditional", num_players=3, hand_size=2, reserve=22)
    hands = [[(6, 6), (1, 2)], [(1, 1), (2, 3)], [(3, 4), (4, 5)]]
    env = new_env([make_deal(rules, hands)], rules=rules)
    step(env, "[6|6]>left", scores=(1, 1, -2))
    assert env.game.hand_results[0].points == (-1, 1, -2)


def test_leftover_penalty_partnership_domino() -> None:
    # traditional, partnerships, hand_size 2, reserve 0 (every player can play, so no draw).
    rules = Rules.preset("traditional", num_players=4, partnerships=True, hand_size=2)
    hands = [[(6, 6), (5, 6)], [(1, 6), (0, 4)], [(1, 2), (4, 4)], [(2, 3), (0, 0)]]
    env = new_env([make_deal(rules, hands)], rules=rules)
    check_masks(env, {"[6|6]>left"})
    step(env, "[6|6]>left", scores=(2, 0), next=1, legal={"[1|6]>left", "[1|6]>right"})
    step(env, "[1|6]>left", scores=(2, 0), next=2, legal={"[1|2]>left"})
    step(env, "[1|2]>left", scores=(2, 0), next=3, legal={"[2|3]>left"})
    step(env, "[2|3]>left", scores=(2, 0), next=0, legal={"[5|6]>right"})
    # domino: side 0 +1; side 1 loses one per tile of seats 1 and 3 (2); seat 2 is the
    # winner's partner and loses nothing
    step(env, "[5|6]>right", scores=(3, -2))
    assert env.game.hand_results[0] == HandResult(
        hand=0, reason="domino", winner=0, points=(1, -2), seat=0
    )


def test_no_penalty_after_the_match_ended() -> None:
    # the partnership domino above with target 3: the domino point brings side 0 to the target,
    # the match ends that moment and no leftover penalty follows
    rules = Rules.preset("traditional", num_players=4, partnerships=True, hand_size=2, target=3)
    hands = [[(6, 6), (5, 6)], [(1, 6), (0, 4)], [(1, 2), (4, 4)], [(2, 3), (0, 0)]]
    env = new_env([make_deal(rules, hands)], rules=rules)
    for action in ("[6|6]>left", "[1|6]>left", "[1|2]>left", "[2|3]>left"):
        step(env, action, scores=(2, 0))
    step(env, "[5|6]>right", scores=(3, 0), legal=set(), rewards=(1.0, -1.0, 1.0, -1.0))
    assert env.game.terminal and env.game.winner == 0


def test_random_deals_follow_the_fixed_ones() -> None:
    rules = Rules.preset("standard", hand_size=3)
    deal = make_deal(rules, DOMINO_HANDS)
    envs = [new_env([deal], seed=5, rules=rules) for _ in range(2)]
    for env in envs:
        for action in ("[1|1]>left", "[1|3]>left", "[1|5]>right", "[3|6]>left"):
            step(env, action, scores=(2, 0))
        step(env, "[5|6]>left", scores=(6, 0))
        assert env.game.hand_number == 1
    first, second = (env.game for env in envs)
    assert [first.hand_tiles(p) for p in range(2)] == [second.hand_tiles(p) for p in range(2)]
    assert first.boneyard == second.boneyard
    assert all(len(first.hand_tiles(p)) == 3 for p in range(2))


# --------------------------------------------------------------------------- reserve and draws

# standard, 2 players, hand_size 12: boneyard [3|4] [3|5] [0|5] [0|6]. player_0 leads [0|0]
# and keeps [0|1]..[0|4]; player_1 holds no 0 at all.
RESERVE_HANDS = [
    [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (3, 6), (4, 4), (4, 5), (4, 6), (5, 5), (5, 6)]
    + [(6, 6)],
    [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (2, 2), (2, 3), (2, 4), (2, 5), (2, 6)]
    + [(3, 3)],
]
RESERVE_BONEYARD = [(3, 4), (3, 5), (0, 5), (0, 6)]
ZERO_PLAYS = {f"[0|{k}]>{end}" for k in range(1, 5) for end in ("left", "right")}


def test_reserve_of_two_is_never_drawn() -> None:
    rules = Rules.preset("standard", hand_size=12)
    assert rules.reserve == 2
    env = new_env([make_deal(rules, RESERVE_HANDS, RESERVE_BONEYARD)], rules=rules)
    step(env, "[0|0]>left", scores=(2, 0), next=1, legal={"draw"})
    step(env, "draw", scores=(2, 0), next=1, legal={"draw"})  # drew [3|4]
    # drew [3|5]; the last two tiles ([0|5], [0|6]) are the reserve: no draw, only a pass
    step(env, "draw", scores=(2, 0), next=1, legal={"pass"})
    game = env.game
    assert (game.boneyard_size, game.drawable) == (2, 0)
    assert not game.is_legal(56)
    step(env, "pass", scores=(2, 0), next=0, legal=ZERO_PLAYS)
    assert game.voids[1] & 1  # player_1 is known not to hold a 0
    assert game.hand_number == 0  # player_0 still holds zeros: not blocked


def test_reserve_of_zero_lets_the_last_tiles_be_drawn() -> None:
    rules = Rules.preset("standard", hand_size=12, reserve=0)
    env = new_env([make_deal(rules, RESERVE_HANDS, RESERVE_BONEYARD)], rules=rules)
    step(env, "[0|0]>left", scores=(2, 0), next=1, legal={"draw"})
    step(env, "draw", scores=(2, 0), next=1, legal={"draw"})
    step(env, "draw", scores=(2, 0), next=1, legal={"draw"})
    step(env, "draw", scores=(2, 0), next=1, legal={"[0|5]>left", "[0|5]>right"})
    assert env.game.drawable == 1


def test_pass_when_the_boneyard_is_empty() -> None:
    # traditional (reserve 0), 2 players, hand_size 13: player_0 holds all seven 6s, player_1
    # none; the boneyard is [4|5] [5|5]. After the lead player_1 draws both, then may only pass.
    rules = Rules.preset("traditional", hand_size=13)
    six_free = [(a, b) for a in range(6) for b in range(a, 6)]  # 21 tiles, canonical order
    hands = [[(k, 6) for k in range(7)] + six_free[:6], six_free[6:19]]
    env = new_env([make_deal(rules, hands)], rules=rules)
    assert env.game.boneyard == [parse_tile((4, 5)), parse_tile((5, 5))]
    check_masks(env, {"[6|6]>left"})
    step(env, "[6|6]>left", scores=(2, 0), next=1, legal={"draw"})
    step(env, "draw", scores=(2, 0), next=1, legal={"draw"})
    step(env, "draw", scores=(2, 0), next=1, legal={"pass"})
    assert env.game.boneyard_size == 0
    sixes = {f"[{k}|6]>{end}" for k in range(6) for end in ("left", "right")}
    step(env, "pass", scores=(2, 0), next=0, legal=sixes)
    assert env.game.voids[1] == 1 << 6


def test_voluntary_draw() -> None:
    env = headers_env(voluntary_draw=True)
    check_masks(env, {"[1|1]>left"})  # never on the forced lead
    step(env, "[1|1]>left", scores=(2, 0), next=1, legal={"[1|3]>left", "[1|3]>right", "draw"})
    # a draw while holding a playable tile; the same player acts again
    step(env, "draw", scores=(2, 0), next=1, legal={"[1|3]>left", "[1|3]>right", "draw"})
    assert parse_tile((4, 5)) in env.game.hand_tiles(1)
    assert env.game.voids[1] == 0  # a voluntary draw says nothing about the hand
    step(env, "[1|3]>left", scores=(2, 0), next=0, legal={"[1|4]>right", "draw"})


def test_no_voluntary_draw_by_default() -> None:
    env = headers_env()
    step(env, "[1|1]>left", scores=(2, 0), next=1, legal={"[1|3]>left", "[1|3]>right"})
    assert not env.game.is_legal(56) and not env.game.is_legal(57)


# --------------------------------------------------------------------------- dealing and lead

LEAD_DEALS = {
    # player_0 holds [3|3]; player_1 holds [1|1] and [6|6]
    "middle": [
        [(3, 3), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5)],
        [(1, 1), (6, 6), (1, 2), (1, 3), (1, 4), (1, 5)],
    ],
    # player_0 holds [1|1]; player_1 holds [6|6]
    "split": [
        [(1, 1), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5)],
        [(6, 6), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6)],
    ],
}


@pytest.mark.parametrize(
    ("deal", "lead", "seat", "tile"),
    [
        ("middle", "lowest", 1, (1, 1)),
        ("middle", "highest", 1, (6, 6)),
        ("split", "lowest", 0, (1, 1)),
        ("split", "highest", 1, (6, 6)),
    ],
)
def test_lead_lowest_and_highest(deal: str, lead: str, seat: int, tile: tuple) -> None:
    rules = Rules.preset("standard", lead=lead)
    env = new_env([make_deal(rules, LEAD_DEALS[deal])], rules=rules)
    assert env.agent_selection == f"player_{seat}"
    check_masks(env, {f"[{tile[0]}|{tile[1]}]>left"})  # only the lead, and only on end 0
    game = env.game
    assert game.lead_tile == parse_tile(tile)
    assert not game.is_legal(2 * parse_tile(tile) + 1) and not game.is_legal(56)


def test_lead_highest_through_a_second_hand() -> None:
    # two fixed deals: the second hand's lead is decided again (RULES.md, "Dealing and the lead")
    rules = Rules.preset("standard", hand_size=3, reserve=22, lead="highest")
    first = make_deal(rules, [[(6, 6), (1, 2), (1, 3)], [(2, 2), (2, 3), (1, 4)]])
    second = make_deal(rules, [[(2, 2), (1, 3), (0, 1)], [(5, 5), (1, 4), (4, 4)]])
    env = new_env([first, second], rules=rules)
    # blocked at once (no 6 in a hand); german: player_0 holds no double -> +2
    step(env, "[6|6]>left", scores=(4, 0), next=1, legal={"[5|5]>left"})
    assert env.game.hand_number == 1


def _has_no_double(tiles: list[int]) -> bool:
    return not any(IS_DOUBLE[t] for t in tiles)


def test_redeal_when_nobody_holds_a_double() -> None:
    # Find a seed whose first shuffle deals no double, by replaying the engine's shuffles.
    rules = Rules.preset("standard")
    pool = np.arange(NUM_TILES)
    dealt = rules.num_players * rules.hand_size
    seed = next(
        s
        for s in range(5000)
        if _has_no_double(np.random.default_rng(s).permutation(pool)[:dealt].tolist())
    )
    rng = np.random.default_rng(seed)
    rng.permutation(pool)  # the first shuffle, thrown away
    second = rng.permutation(pool).tolist()
    state = BergenState(rules, seed=seed)
    assert state.hand_number == 0
    assert state.hand_tiles(0) == sorted(second[:6]) and state.hand_tiles(1) == sorted(second[6:12])
    assert state.boneyard == second[12:]
    assert not _has_no_double(second[:dealt])


@pytest.mark.parametrize(
    ("preset", "num_players"),
    [("standard", 2), ("traditional", 2), ("double_set", 2), ("standard", 3)],
)
def test_every_random_deal_has_a_lead_double(preset: str, num_players: int) -> None:
    rules = Rules.preset(preset, num_players=num_players)
    for seed in range(300):
        state = BergenState(rules, seed=seed)
        held = [t for p in range(num_players) for t in state.hand_tiles(p)]
        doubles = sorted(t for t in held if IS_DOUBLE[t])
        assert doubles
        want = doubles[0] if rules.lead == "lowest" else doubles[-1]
        assert state.lead_tile == want
        assert want in state.hand_tiles(state.current_player)
        assert state.legal_actions() == [2 * want]


# --------------------------------------------------------------------------- double_set


def test_double_set_four_point_header_and_lead_tie_break() -> None:
    # double_set, 2 players, hand_size 2, nothing drawable. Both seats hold a [6|6].
    rules = Rules.preset("double_set", hand_size=2, reserve=52)
    hand0 = make_deal(rules, [[(6, 6), (1, 2)], [(6, 6), (1, 3)]])
    hand1 = make_deal(rules, [[(6, 6), (1, 4)], [(6, 6), (1, 5)]])
    env = new_env([hand0, hand1], rules=rules)
    # hand 0: the first holder in turn order from seat 0 leads
    assert env.agent_selection == "player_0"
    check_masks(env, {"[6|6]>left"})
    # player_1 holds one [6|6] only: no double play
    step(env, "[6|6]>left", scores=(2, 0), next=1, legal={"[6|6]>left", "[6|6]>right"})
    # the second copy: both ends are double ends, two different tiles -> 4 points. Then no hand
    # holds a 6: blocked at once; most_doubles without doubles -> pips 3 vs 4, player_0 +1,
    # player_1 loses 1 for its tile
    step(env, "[6|6]>left", scores=(3, 3), next=1, legal={"[6|6]>left"})
    assert env.game.hand_results[0] == HandResult(
        hand=0, reason="blocked", winner=0, points=(1, -1), blocked_rule="most_doubles"
    )
    # hand 1: turn order starts from seat 1 mod 2, so player_1 leads
    step(env, "[6|6]>left", scores=(3, 5), next=0, legal={"[6|6]>left", "[6|6]>right"})
    step(env, "[6|6]>right", scores=(8, 4))  # 4 points, then blocked: 5 vs 6 pips, +1 / -1
    assert env.game.hand_number == 2


def test_double_set_lead_tie_break_three_players() -> None:
    rules = Rules.preset("double_set", num_players=3, hand_size=2, reserve=50)
    hand0 = make_deal(rules, [[(6, 6), (1, 2)], [(1, 3), (1, 4)], [(6, 6), (1, 5)]])
    hand1 = make_deal(rules, [[(6, 6), (2, 3)], [(2, 4), (2, 5)], [(6, 6), (3, 4)]])
    state = BergenState(rules, seed=0, deals=[hand0, hand1])
    assert state.current_player == 0  # hand 0: from seat 0
    play(state, ["[6|6]>left"])
    assert state.current_player == 1 and engine_legal(state) == {"pass"}  # nothing to play/draw
    play(state, ["pass"])
    assert state.current_player == 2
    play(state, ["[6|6]>right"])  # 4-point header, then blocked
    # blocked: no doubles, pips 3 / 9 / 6 -> seat 0 +1; seats 1 and 2 lose 2 and 1
    assert state.scores == [3, -2, 3]
    assert state.hand_number == 1
    # hand 1: seats 0 and 2 hold [6|6]; from seat 1 the order is 1, 2, 0: seat 2 leads
    assert state.current_player == 2 and engine_legal(state) == {"[6|6]>left"}


def test_double_set_double_play() -> None:
    rules = Rules.preset("double_set")
    hands = [
        [(6, 6), (3, 6), (0, 1), (0, 2), (1, 2), (1, 4)],
        [(3, 6), (3, 3), (3, 3), (0, 4), (2, 4), (4, 5)],
    ]
    env = new_env([make_deal(rules, hands)], rules=rules)
    assert env.action_space("player_0").n == 65
    check_masks(env, {"[6|6]>left"})
    step(env, "[6|6]>left", scores=(2, 0), next=1, legal={"[3|6]>left", "[3|6]>right"})
    # ends 3 | 6(double): player_0's [3|6] on the left would make 6 | 6(double) (triple),
    # on the right 3 | 3 (double header)
    step(env, "[3|6]>left", scores=(2, 0), next=0, legal={"[3|6]>left", "[3|6]>right"})
    step(
        env,
        "[3|6]>right",
        scores=(4, 0),
        next=1,
        legal={"[3|3]>left", "[3|3]>right", "[3|3]+[3|3]"},
    )
    # both [3|3] at once, one on each end: 5 points; both ends become double ends
    step(env, "[3|3]+[3|3]", scores=(4, 5), next=0, legal={"draw"}, rewards=(0.0, 0.0))
    assert env.game.ends == (3, 3) and env.game.end_dbl == [True, True]
    assert env.game.line[0] == (3, 3) and env.game.line[-1] == (3, 3)


def test_double_set_triple_then_four_point_header() -> None:
    # as above but nothing is drawable, so player_0 must pass and player_1 can lay its second
    # [3|3] on the other end
    rules = Rules.preset("double_set", reserve=44)
    hands = [
        [(6, 6), (3, 6), (0, 1), (0, 2), (1, 2), (1, 4)],
        [(3, 6), (3, 3), (3, 3), (0, 4), (2, 4), (4, 5)],
    ]
    state = BergenState(rules, seed=0, deals=[make_deal(rules, hands)])
    play(state, ["[6|6]>left", "[3|6]>left", "[3|6]>right"])
    assert state.scores == [4, 0]
    play(state, ["[3|3]>left"])  # 3(double) | 3: triple header
    assert state.scores == [4, 3]
    assert engine_legal(state) == {"pass"}
    play(state, ["pass"])
    # one [3|3] left: no double play; on the left it would cover the double end (triple)
    assert engine_legal(state) == {"[3|3]>left", "[3|3]>right"}
    # both ends double ends, two different tiles: 4 points; then nobody holds a 3: blocked,
    # most_doubles without doubles: 11 vs 19 pips, player_0 +1, player_1 -3 for its tiles
    play(state, ["[3|3]>right"])
    assert state.hand_results[0].points == (1, -3)
    assert state.scores == [5, 4]


# --------------------------------------------------------------------------- rewards


def three_player_block(**kwargs: object):
    # standard, 3 players, nothing drawable; seat 0 leads [0|0] (+2) and the hand blocks:
    # pips 10 / 9 / 8 -> seat 2 wins 2 points
    rules = Rules.preset(
        "standard",
        num_players=3,
        hand_size=2,
        reserve=22,
        blocked_rule="pips",
        **kwargs,  # type: ignore[arg-type]
    )
    hands = [[(0, 0), (4, 6)], [(1, 2), (1, 5)], [(1, 3), (2, 2)]]
    return make_deal(rules, hands), rules


def test_points_rewards_are_dense_and_zero_sum() -> None:
    deal, rules = three_player_block()
    env = new_env([deal], rules=rules, reward="points")
    # score changes (2, 0, 2): each agent gets its change minus the mean change of the others
    step(env, "[0|0]>left", scores=(2, 0, 2), rewards=(2 - 1, 0 - 2, 2 - 1))
    assert sum(env.rewards.values()) == 0


def test_points_rewards_two_sides_and_penalties() -> None:
    rules = Rules.preset("standard")
    env = new_env([make_deal(rules, HEADERS_HANDS, HEADERS_BONEYARD)], reward="points")
    step(env, "[1|1]>left", scores=(2, 0), rewards=(2.0, -2.0))
    step(env, "[1|3]>left", scores=(2, 0), rewards=(0.0, 0.0))
    step(env, "[1|4]>right", scores=(2, 0), rewards=(0.0, 0.0))
    step(env, "[3|4]>left", scores=(2, 2), rewards=(-2.0, 2.0))
    step(env, "[4|4]>left", scores=(5, 2), rewards=(3.0, -3.0))
    # traditional leftover penalty: score changes (+1 +2 opening, -3) in one step
    rules = Rules.preset("traditional", hand_size=3, reserve=22)
    deal = make_deal(rules, [[(6, 6), (1, 1), (1, 2)], [(2, 3), (1, 3), (4, 5)]])
    env = new_env([deal], rules=rules, reward="points")
    step(env, "[6|6]>left", scores=(3, -3), rewards=(6.0, -6.0))


def test_points_rewards_partnerships() -> None:
    rules = Rules.preset("standard", num_players=4, partnerships=True, hand_size=2, reserve=20)
    env = new_env([make_deal(rules, PARTNER_HANDS)], rules=rules, reward="points")
    step(env, "[0|0]>left", scores=(4, 0), rewards=(4.0, -4.0, 4.0, -4.0))


@pytest.mark.parametrize(
    ("num_players", "partnerships", "rewards"),
    [
        (2, False, (1.0, -1.0)),
        (3, False, (1.0, -0.5, -0.5)),
        (4, False, (1.0, -1 / 3, -1 / 3, -1 / 3)),
        (4, True, (1.0, -1.0, 1.0, -1.0)),
    ],
)
def test_match_rewards_at_the_end(num_players: int, partnerships: bool, rewards: tuple) -> None:
    # target 2: the opening double of seat 0 ends the match at once
    rules = Rules.preset(
        "standard", num_players=num_players, partnerships=partnerships, target=2, end_caps=False
    )
    hands = [[(0, 0)] + [(1, k) for k in range(1, rules.hand_size)]]
    others = [(a, b) for a in range(2, 7) for b in range(a, 7)]
    for seat in range(1, num_players):
        hands.append(others[(seat - 1) * rules.hand_size : seat * rules.hand_size])
    env = new_env([make_deal(rules, hands)], rules=rules)
    sides = rules.num_sides
    scores = (2,) + (0,) * (sides - 1)
    step(env, "[0|0]>left", scores=scores, legal=set(), rewards=rewards)
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert [env._cumulative_rewards[a] for a in env.possible_agents] == list(rewards)


def test_match_cut_off_by_max_hands_is_truncated() -> None:
    deal, rules = three_player_block()
    env = new_env([deal], rules=rules, max_hands=1)
    step(env, "[0|0]>left", scores=(2, 0, 2), legal=set(), rewards=(0.0, 0.0, 0.0))
    assert all(env.truncations.values()) and not any(env.terminations.values())
