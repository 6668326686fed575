"""The one option-text parser (bergen_env.option_text) and the one build_rules, seen from every
entry point: the same text gives the same Rules (or the same error) everywhere."""

from __future__ import annotations

import gymnasium as gym
import pytest

import bergen_env
from bergen_env.agents import make_agent, parse_agent_spec
from bergen_env.agents.search import SearchAgent
from bergen_env.errors import InvalidOptionError
from bergen_env.option_text import (
    declared_types,
    parse_options,
    parse_value,
    split_options,
)
from bergen_env.rules import OPTION_TYPES, RULE_OPTIONS, Rules, build_rules, parse_rule_options


@pytest.mark.parametrize(
    ("text", "declared", "value"),
    [
        ("true", bool, True),
        ("False", bool, False),
        (" TRUE ", bool, True),
        ("5", int, 5),
        ("-3", int, -3),
        ("007", int, 7),
        ("0.5", float, 0.5),
        (".5", float, 0.5),
        ("-1.", float, -1.0),
        ("2e-3", float, 0.002),
        ("3", float, 3.0),
        ("highest", str, "highest"),
        ("12", str, "12"),
        ("true", str, "true"),
        ("", str, ""),
        ("20", int | str, 20),
        ("uniform", int | str, "uniform"),
        ("0.25", float | None, 0.25),
        ("models/a.zip", str | None, "models/a.zip"),
        ("run/x", object, "run/x"),  # a type text cannot spell: the text itself
        # nothing declared: bool words, then int, then float, else the text
        ("true", None, True),
        ("17", None, 17),
        ("1.5", None, 1.5),
        ("1e3", None, 1000.0),
        ("yes", None, "yes"),
        ("nan", None, "nan"),
        ("+5", None, "+5"),
        ("1_000", None, "1_000"),
    ],
)
def test_each_value_is_typed_by_its_declared_type(text: str, declared, value) -> None:
    got = parse_value("x", text, declared)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("text", "declared", "requirement"),
    [
        ("1", bool, "true or false"),
        ("yes", bool, "true or false"),
        ("on", bool, "true or false"),
        ("", bool, "true or false"),
        ("+5", int, "an int"),
        ("1_000", int, "an int"),
        ("3.0", int, "an int"),
        ("ten", int, "an int"),
        ("1 2", int, "an int"),
        ("9" * 21, int, "an int"),
        ("nan", float, "a number"),
        ("inf", float, "a number"),
        ("1e999", float, "a number"),
        ("0x10", float, "a number"),
        ("maybe", bool | None, "true or false"),
        ("x", int | float, "an int or a number"),
    ],
)
def test_a_value_its_type_refuses_is_named(text: str, declared, requirement: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        parse_value("opt", text, declared)
    assert str(err.value) == f"option 'opt' must be {requirement}, got {text.strip()!r}"


def test_splitting_text() -> None:
    assert split_options("") == {} and split_options("  ") == {}
    assert split_options(" a = 1 ,b=x=y") == {"a": "1", "b": "x=y"}
    for bad, message in [
        ("a=1,", "expected key=value, got ''"),
        ("a", "expected key=value, got 'a'"),
        ("=3", "expected key=value, got '=3'"),
        ("a=1,a=2", "option 'a' is given twice"),
    ]:
        with pytest.raises(InvalidOptionError, match=message):
            split_options(bad)
    with pytest.raises(ValueError, match="^agent 'x': parameter 'a' is given twice$"):
        split_options("a=1,a=2", label="parameter", error=ValueError, context="agent 'x': ")


def test_unknown_names_give_the_closest_valid_name() -> None:
    with pytest.raises(InvalidOptionError, match=r"unknown rule option 'traget' \(did you mean"):
        parse_rule_options("traget=5")
    with pytest.raises(InvalidOptionError, match="did you mean 'end_caps'"):
        parse_rule_options(["endcaps=true"])
    assert parse_options("z=1", {}, any_name=True) == {"z": 1}
    with pytest.raises(InvalidOptionError, match="must be text"):
        parse_options({"target": 5}, OPTION_TYPES)


def test_rule_options_are_typed_by_the_rules() -> None:
    assert set(OPTION_TYPES) == {"rules", "num_players", "partnerships", *RULE_OPTIONS}
    standard = Rules.preset("standard")
    for name in RULE_OPTIONS:
        assert type(getattr(standard, name)) is OPTION_TYPES[name], name
    assert parse_rule_options("target=31, end_caps=false, lead=highest") == {
        "target": 31,
        "end_caps": False,
        "lead": "highest",
    }
    assert parse_rule_options({"single_hand": "TRUE"}) == {"single_hand": True}


def test_agent_parameters_are_typed_by_the_constructor() -> None:
    kind, kwargs = parse_agent_spec("search:samples=8,temperature=1,prune=false,belief=20")
    assert kind == "search" and kwargs == {
        "samples": 8,
        "temperature": 1.0,
        "prune": False,
        "belief": 20,
    }
    assert type(kwargs["temperature"]) is float
    assert declared_types(SearchAgent)["samples"] is int
    with pytest.raises(ValueError, match="parameter 'belief' must be an int, got 'uniform'"):
        parse_agent_spec("search:belief=uniform")
    assert parse_agent_spec("policy:run/a.safetensors")[1] == {"path": "run/a.safetensors"}
    assert parse_agent_spec("unregistered:a=1,b=true,c=x")[1] == {"a": 1, "b": True, "c": "x"}
    with pytest.raises(ValueError, match="parameter 'samples' must be an int, got '2.5'"):
        make_agent("search:samples=2.5")
    with pytest.raises(ValueError, match="parameter 'prune' must be true or false, got 'yes'"):
        make_agent("search:prune=yes")
    with pytest.raises(ValueError, match=r"unknown parameter 'sampels' \(did you mean 'samples'"):
        make_agent("search:sampels=3")


TEXT = "target=31,end_caps=false,lead=highest,reserve=1"
EXPECTED = dict(target=31, end_caps=False, lead="highest", reserve=1)


def test_the_same_text_gives_the_same_rules_at_every_entry_point() -> None:
    expected = Rules.preset("standard", num_players=3, **EXPECTED)
    assert build_rules("standard", num_players=3, **parse_rule_options(TEXT)) == expected
    assert bergen_env.env(num_players=3, **parse_rule_options(TEXT)).unwrapped.rules == expected
    single = gym.make("bergen_env/Bergen-v0", num_players=3, **parse_rule_options(TEXT))
    assert single.unwrapped.rules == expected

    from bergen_env.training.cli import UsageError, rules_from_arguments
    from bergen_env.training.evaluate import parse_args

    argv = ["--agents", "greedy", "random", "--players", "3", "--rule-override", *TEXT.split(",")]
    args = parse_args(argv)
    assert rules_from_arguments(args, args.agents) == expected
    args = parse_args([*argv[:5], "--rule-override", "end_caps=yes"])
    with pytest.raises(UsageError, match="rule option 'end_caps' must be true or false, got 'yes'"):
        rules_from_arguments(args, args.agents)


def test_the_web_reads_a_link_as_every_entry_point_does() -> None:
    pytest.importorskip("starlette")
    from bergen_env.web.errors import TableError
    from bergen_env.web.options import from_body, from_query

    expected = Rules.preset("standard", num_players=3, **EXPECTED)
    query = {"rules": "standard", "num_players": "3", **split_options(TEXT)}
    assert from_query(query).rules == expected
    body = {"rules": "standard", "num_players": 3, "options": EXPECTED}
    assert from_body(body).rules == expected
    with pytest.raises(TableError) as err:
        from_query({"end_caps": "yes"})
    assert str(err.value) == "rule option 'end_caps' must be true or false, got 'yes'"
    # a link made before the rename opens the table it meant
    assert (
        from_query({"preset": "standard", "players": "3", **split_options(TEXT)}).rules == expected
    )
    for old, new, value in (("players", "num_players", "3"), ("preset", "rules", "fives")):
        with pytest.raises(TableError) as err:
            from_query({old: value, new: "2" if new == "num_players" else "draw"})
        assert err.value.code == "renamed_option" and repr(new) in str(err.value)


def test_openspiel_builds_the_same_rules() -> None:
    pyspiel = pytest.importorskip("pyspiel")
    from bergen_env.openspiel import BergenGame

    expected = Rules.preset("standard", num_players=3, **EXPECTED)
    flags = TEXT.replace("end_caps=false", "end_caps=0")  # OpenSpiel's yes/no values are 1 and 0
    game = pyspiel.load_game(f"bergen(rules=standard,players=3,{flags})")  # OpenSpiel's name
    assert game.variant.rules == expected
    with pytest.raises(InvalidOptionError, match="did you mean 'players'"):
        BergenGame({"num_players": 3})


def test_old_seating_names_are_refused_with_the_new_name() -> None:
    with pytest.raises(InvalidOptionError, match="did you mean 'num_players'"):
        bergen_env.env(players=3)
    with pytest.raises(InvalidOptionError, match="did you mean 'fives'"):
        build_rules("fivs")
