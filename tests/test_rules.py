"""Rules options (RULES.md §3), their validation, and the tile / action / deal text formats."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scripted import make_deal

import bergen_env
from bergen_env import (
    BergenState,
    IllegalActionError,
    InvalidDealError,
    InvalidOptionError,
    InvalidTileError,
    Rules,
    action_str,
    parse_action,
    parse_tile,
    tile_str,
)
from bergen_env.actions import check_action_id
from bergen_env.engine import validate_deal
from bergen_env.rules import build_rules
from bergen_env.tiles import TILES

# --------------------------------------------------------------------------- presets (§3 table)

# (preset, num_players, partnerships) -> every option of the RULES.md §3 table
TABLE = {
    "standard": dict(
        sets=1,
        lead="lowest",
        reserve=2,
        domino_points=2,
        blocked_rule="german",
        blocked_points=2,
        leftover_penalty=0,
        end_caps=True,
        voluntary_draw=False,
    ),
    "traditional": dict(
        sets=1,
        lead="highest",
        reserve=0,
        domino_points=1,
        blocked_rule="most_doubles",
        blocked_points=1,
        leftover_penalty=1,
        end_caps=False,
        voluntary_draw=False,
    ),
    "double_set": dict(
        sets=2,
        lead="highest",
        reserve=0,
        domino_points=1,
        blocked_rule="most_doubles",
        blocked_points=1,
        leftover_penalty=1,
        end_caps=False,
        voluntary_draw=False,
    ),
}
HAND_SIZE = {
    "standard": {2: 6, 3: 6, 4: 5},
    "traditional": {2: 6, 3: 5, 4: 4},
    "double_set": {2: 6, 3: 5, 4: 4},
}
SEATINGS = [(2, False), (3, False), (4, False), (4, True)]


def expected_target(preset: str, num_sides: int) -> int:
    if preset == "standard":
        return 15 if num_sides == 2 else 10
    return {"traditional": 15, "double_set": 25}[preset]


@pytest.mark.parametrize("preset", list(TABLE))
@pytest.mark.parametrize(("num_players", "partnerships"), SEATINGS)
def test_preset_values_follow_the_table(preset: str, num_players: int, partnerships: bool) -> None:
    r = Rules.preset(preset, num_players=num_players, partnerships=partnerships)
    sides = 2 if partnerships else num_players
    for name, value in TABLE[preset].items():
        assert getattr(r, name) == value, name
    assert r.hand_size == HAND_SIZE[preset][num_players]
    assert r.target == expected_target(preset, sides)
    assert (r.num_players, r.partnerships, r.num_sides) == (num_players, partnerships, sides)
    assert r.num_tiles == 28 * r.sets
    assert r.num_actions == (65 if preset == "double_set" else 58)
    assert r.boneyard_size == r.num_tiles - num_players * r.hand_size
    if partnerships:
        assert r.side_of == (0, 1, 0, 1)
    else:
        assert r.side_of == tuple(range(num_players))


def test_default_preset_is_standard_for_two() -> None:
    assert Rules.preset() == Rules.preset("standard", num_players=2)
    assert bergen_env.raw_env().rules == Rules.preset("standard")


@pytest.mark.parametrize(
    "override",
    [
        {"lead": "highest"},
        {"domino_points": 5},
        {"blocked_rule": "american"},
        {"blocked_rule": "pips"},
        {"reserve": 0},
        {"target": 4},
        {"end_caps": False},
        {"voluntary_draw": True},
        {"leftover_penalty": 2},
        {"hand_size": 3},
        {"sets": 2},
        {"blocked_points": 0},
    ],
)
def test_single_override_changes_only_that_option(override: dict) -> None:
    base = Rules.preset("standard", num_players=3)
    r = Rules.preset("standard", num_players=3, **override)
    for name, value in base.to_dict().items():
        assert getattr(r, name) == override.get(name, value), name


def test_env_kwargs_override_the_preset() -> None:
    env = bergen_env.raw_env(rules="standard", lead="highest", domino_points=5, num_players=3)
    assert (env.rules.lead, env.rules.domino_points, env.rules.num_players) == ("highest", 5, 3)
    custom = Rules.preset("traditional", num_players=4, partnerships=True)
    env = bergen_env.raw_env(rules=custom, num_players=4, partnerships=True)
    assert env.rules == custom
    assert bergen_env.raw_env(rules=custom, target=7).rules.target == 7


def test_rules_are_frozen() -> None:
    r = Rules.preset()
    with pytest.raises(AttributeError):
        r.target = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- invalid options

INVALID = [
    # (kwargs of Rules.preset, option the message must name)
    ({"colour": "red"}, "colour"),
    ({"rules": "chinese"}, "rules"),
    ({"num_players": 1}, "num_players"),
    ({"num_players": 5}, "num_players"),
    ({"num_players": True}, "num_players"),
    ({"num_players": 2.0}, "num_players"),
    ({"num_players": 3, "partnerships": True}, "partnerships"),
    ({"num_players": 2, "partnerships": True}, "partnerships"),
    ({"num_players": 4, "partnerships": 1}, "partnerships"),
    ({"sets": 0}, "sets"),
    ({"sets": 3}, "sets"),
    ({"hand_size": 0}, "hand_size"),
    ({"hand_size": 5.0}, "hand_size"),
    ({"hand_size": "6"}, "hand_size"),
    ({"reserve": -1}, "reserve"),
    ({"reserve": True}, "reserve"),
    ({"domino_points": -2}, "domino_points"),
    ({"domino_points": False}, "domino_points"),
    ({"blocked_points": -1}, "blocked_points"),
    ({"blocked_points": None}, "blocked_points"),
    ({"leftover_penalty": -1}, "leftover_penalty"),
    ({"leftover_penalty": 0.5}, "leftover_penalty"),
    ({"target": 0}, "target"),
    ({"target": "15"}, "target"),
    ({"target": True}, "target"),
    ({"lead": "middle"}, "lead"),
    ({"lead": 0}, "lead"),
    ({"blocked_rule": "chinese"}, "blocked_rule"),
    ({"end_caps": 1}, "end_caps"),
    ({"end_caps": "on"}, "end_caps"),
    ({"voluntary_draw": "no"}, "voluntary_draw"),
    # hands plus reserve larger than the set
    ({"num_players": 2, "reserve": 17}, "reserve"),
    ({"num_players": 4, "hand_size": 8}, "hand_size"),
    ({"rules": "traditional", "num_players": 4, "hand_size": 7, "reserve": 1}, "hand_size"),
    ({"rules": "double_set", "num_players": 4, "hand_size": 15}, "hand_size"),
    (
        {"rules": "double_set", "num_players": 2, "sets": 1, "hand_size": 14, "reserve": 1},
        "reserve",
    ),
]


@pytest.mark.parametrize(("kwargs", "option"), INVALID)
def test_invalid_option_names_the_option(kwargs: dict, option: str) -> None:
    kwargs = dict(kwargs)
    preset = kwargs.pop("rules", "standard")
    with pytest.raises(InvalidOptionError, match=re.escape(option)):
        Rules.preset(preset, **kwargs)
    with pytest.raises(InvalidOptionError, match=re.escape(option)):
        bergen_env.raw_env(rules=preset, **kwargs)


def test_combinations_at_the_limit_are_valid() -> None:
    assert Rules.preset("standard", num_players=2, reserve=16).boneyard_size == 16
    assert Rules.preset("double_set", num_players=4, hand_size=14).boneyard_size == 0
    assert Rules.preset("standard", num_players=4, hand_size=6, reserve=4).reserve == 4


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"reward": "sparse"}, "reward"),
        ({"max_hands": 0}, "max_hands"),
        ({"max_hands": True}, "max_hands"),
        ({"max_hands": 2.5}, "max_hands"),
        ({"render_mode": "video"}, "render_mode"),
        ({"rules": 3}, "rules"),
        ({"rules": Rules.preset(num_players=2), "num_players": 3}, "num_players"),
        ({"rules": Rules.preset(num_players=4), "partnerships": True}, "partnerships"),
        ({"rules": Rules.preset(), "colour": 1}, "colour"),
    ],
)
def test_invalid_env_arguments_name_the_option(kwargs: dict, option: str) -> None:
    with pytest.raises(InvalidOptionError, match=re.escape(option)):
        bergen_env.raw_env(**kwargs)


def test_replace_validates() -> None:
    r = Rules.preset()
    assert r.replace(target=5).target == 5
    with pytest.raises(InvalidOptionError, match="target"):
        r.replace(target=0)
    with pytest.raises(InvalidOptionError, match="colour"):
        r.replace(colour=1)


def test_build_rules_accepts_numpy_ints() -> None:
    r = build_rules("standard", num_players=np.int64(3), target=np.int32(7))
    assert (r.num_players, r.target) == (3, 7)
    assert type(r.target) is int


# --------------------------------------------------------------------------- to_dict / from_dict


@pytest.mark.parametrize("preset", list(TABLE))
@pytest.mark.parametrize(("num_players", "partnerships"), SEATINGS)
def test_rules_dict_round_trip(preset: str, num_players: int, partnerships: bool) -> None:
    r = Rules.preset(preset, num_players=num_players, partnerships=partnerships, target=9)
    data = r.to_dict()
    assert json.loads(json.dumps(data)) == data  # plain JSON-able values
    assert Rules.from_dict(data) == r
    assert Rules.from_dict(json.loads(json.dumps(data))) == r


def test_from_dict_rejects_unknown_and_bad_values() -> None:
    data = Rules.preset().to_dict()
    with pytest.raises(InvalidOptionError, match="colour"):
        Rules.from_dict({**data, "colour": 1})
    with pytest.raises(InvalidOptionError, match="reserve"):
        Rules.from_dict({**data, "reserve": -3})


# --------------------------------------------------------------------------- tiles and actions


@pytest.mark.parametrize("t", range(28))
def test_tile_print_parse_round_trip(t: int) -> None:
    a, b = TILES[t]
    assert tile_str(t) == f"[{a}|{b}]"
    assert parse_tile(tile_str(t)) == t
    assert parse_tile((a, b)) == parse_tile((b, a)) == parse_tile([b, a]) == t
    assert parse_tile(f"[{b}|{a}]") == parse_tile(f"{a}-{b}") == t
    assert parse_tile(np.int64(t)) == t


def test_canonical_order() -> None:
    assert [tile_str(t) for t in (0, 1, 6, 7, 8, 26, 27)] == [
        "[0|0]",
        "[0|1]",
        "[0|6]",
        "[1|1]",
        "[1|2]",
        "[5|6]",
        "[6|6]",
    ]
    assert list(TILES) == sorted(TILES)
    assert all(a <= b for a, b in TILES)


@pytest.mark.parametrize(
    "bad", ["[7|1]", "[1|2|3]", "[a|b]", "12", "", (1,), (1, 7), (-1, 2), 28, -1, True, 1.0, None]
)
def test_bad_tiles_raise(bad: object) -> None:
    with pytest.raises(InvalidTileError):
        parse_tile(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("a", range(65))
def test_action_print_parse_round_trip(a: int) -> None:
    text = action_str(a)
    assert parse_action(text) == a
    assert parse_action(text.upper()) == a
    if a < 56:
        t, e = divmod(a, 2)
        assert text == f"{tile_str(t)}>{('left', 'right')[e]}"
        assert parse_action(f"{tile_str(t)}>{e}") == a
    elif a >= 58:
        n = a - 58
        assert text == f"[{n}|{n}]+[{n}|{n}]"


def test_special_action_ids() -> None:
    assert (bergen_env.DRAW, bergen_env.PASS, bergen_env.DOUBLE_PLAY) == (56, 57, 58)
    assert (action_str(56), action_str(57)) == ("draw", "pass")
    assert bergen_env.play_action(8, 1) == 17


@pytest.mark.parametrize(
    "bad", ["", "play", "[1|2]>up", "[1|2]+[1|2]", "[1|1]+[2|2]", "[7|7]+[7|7]", "[1|9]>left"]
)
def test_bad_action_text_raises(bad: str) -> None:
    with pytest.raises(IllegalActionError):
        parse_action(bad)


@pytest.mark.parametrize("bad", [-1, 58, 65, 1.5, "3", True, None])
def test_bad_action_ids_raise(bad: object) -> None:
    with pytest.raises(IllegalActionError):
        check_action_id(bad, 58)


# --------------------------------------------------------------------------- deal validation

RULES2 = Rules.preset("standard", num_players=2)


def good_deal() -> dict:
    return make_deal(
        RULES2,
        [
            [(0, 0), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6)],
            [(2, 2)] + [(2, 3), (2, 4), (2, 5), (2, 6), (3, 3)],
        ],
    )


def test_good_deal_is_accepted_with_pairs_ids_and_text() -> None:
    deal = good_deal()
    hands, boneyard = validate_deal(deal, RULES2)
    assert hands == deal["hands"] and boneyard == deal["boneyard"]
    as_text = {
        "hands": [[tile_str(t) for t in h] for h in deal["hands"]],
        "boneyard": [TILES[t] for t in deal["boneyard"]],
    }
    assert validate_deal(as_text, RULES2) == (hands, boneyard)


def _with(deal: dict, **changes: object) -> dict:
    out = {"hands": [list(h) for h in deal["hands"]], "boneyard": list(deal["boneyard"])}
    out.update(changes)
    return out


def bad_deals() -> list[tuple[str, dict, str]]:
    d = good_deal()
    h0, h1 = d["hands"]
    bone = d["boneyard"]
    no_double = {  # a split of the set in which every double is in the boneyard
        "hands": [[1, 2, 3, 4, 5, 6], [8, 9, 10, 11, 12, 14]],
        "boneyard": [t for t in range(28) if t not in (1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 14)],
    }
    return [
        ("short hand", _with(d, hands=[h0[:5], h1], boneyard=bone + [h0[5]]), "seat 0"),
        ("long hand", _with(d, hands=[h0, h1 + bone[:1]], boneyard=bone[1:]), "seat 1"),
        ("short boneyard", _with(d, boneyard=bone[:-1]), "boneyard"),
        ("long boneyard", _with(d, boneyard=bone + [bone[0]]), "boneyard"),
        ("duplicate", _with(d, boneyard=bone[:-1] + [bone[0]]), tile_str(bone[0])),
        ("missing", _with(d, boneyard=bone[:-1] + [bone[0]]), tile_str(bone[-1])),
        ("nobody holds a double", no_double, "double"),
        ("bad tile text", _with(d, hands=[h0[:5] + ["[7|7]"], h1]), "bad tile"),
        ("bad tile id", _with(d, hands=[h0[:5] + [28], h1]), "28"),
        ("three hands", _with(d, hands=[h0, h1, []]), "3 hands"),
        ("not a dict", [h0, h1], "dict"),
        ("missing key", {"hands": [h0, h1]}, "boneyard"),
    ]


@pytest.mark.parametrize(("name", "deal", "needle"), bad_deals(), ids=[b[0] for b in bad_deals()])
def test_bad_deal_raises_naming_the_problem(name: str, deal: object, needle: str) -> None:
    with pytest.raises(InvalidDealError, match=re.escape(needle)):
        validate_deal(deal, RULES2)
    with pytest.raises(ValueError, match=re.escape(needle)):  # the env's contract: ValueError
        bergen_env.raw_env().reset(seed=0, options={"deals": [deal]})
    with pytest.raises(InvalidDealError):
        BergenState(RULES2, seed=0, deals=[deal])


def test_deal_for_two_sets_needs_two_copies() -> None:
    rules = Rules.preset("double_set", num_players=2)
    deal = make_deal(
        rules,
        [[(6, 6)] * 2 + [(0, 1)] * 2 + [(0, 2)] * 2, [(1, 1)] * 2 + [(1, 2)] * 2 + [(1, 3)] * 2],
    )
    validate_deal(deal, rules)
    bone = deal["boneyard"]
    three_copies = {"hands": deal["hands"], "boneyard": bone[:-1] + [bone[0]]}
    with pytest.raises(InvalidDealError, match=r"2 set\(s\)"):
        validate_deal(three_copies, rules)
