"""One set of option checks (bergen_env.validation) and one env-options block for every env and
training config (bergen_env.env_options, bergen_env.training.config.EnvBlock)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bergen_env.env_options import DEFAULT_MAX_HANDS, EnvOptions
from bergen_env.errors import InvalidOptionError
from bergen_env.rules import Rules
from bergen_env.validation import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    is_bool,
    is_int,
    is_number,
)


@pytest.mark.parametrize(
    ("value", "int_", "number", "bool_"),
    [
        (3, True, True, False),
        (np.int8(3), True, True, False),
        (np.uint64(3), True, True, False),
        (2.5, False, True, False),
        (np.float32(2.5), False, True, False),
        (True, False, False, True),
        (np.bool_(False), False, False, True),
        ("3", False, False, False),
        (None, False, False, False),
    ],
    ids=repr,
)
def test_kinds(value: object, int_: bool, number: bool, bool_: bool) -> None:
    assert (is_int(value), is_number(value), is_bool(value)) == (int_, number, bool_)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: check_int("n", True), "option 'n' must be an int, got True"),
        (lambda: check_int("n", 0, minimum=1), "option 'n' must be an int >= 1, got 0"),
        (lambda: check_int("n", 5, minimum=0, maximum=3), "must be an int in 0..3, got 5"),
        (lambda: check_int("n", 2.0, allow_none=True), "must be an int or None, got 2.0"),
        (lambda: check_number("x", float("nan"), minimum=0), "must be a number >= 0, got nan"),
        (lambda: check_number("x", 0, above=0), "must be a number > 0, got 0"),
        (lambda: check_bool("flag", 1), "option 'flag' must be True or False, got 1"),
        (lambda: check_choice("mode", 1, (True, False)), "one of (True, False), got 1"),
        (lambda: check_choice("mode", "x", ("a", "b")), "must be one of ('a', 'b'), got 'x'"),
    ],
)
def test_errors_name_the_option_and_the_requirement(call, message: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        call()
    assert message in str(info.value)


def test_values_come_back_as_python_values() -> None:
    assert type(check_int("n", np.int64(4))) is int
    assert type(check_number("x", np.float32(0.5))) is float
    assert check_bool("b", np.bool_(True)) is True
    assert check_int("n", None, allow_none=True) is None


def test_label_and_error_class() -> None:
    with pytest.raises(ValueError, match="^parameter 'samples' must be an int >= 1, got 0$"):
        check_int("samples", 0, minimum=1, label="parameter", error=ValueError)


def test_env_options_resolve_and_are_frozen() -> None:
    opts = EnvOptions.resolve("traditional", 4, True, "points", None)
    assert opts.rules == Rules.preset("traditional", num_players=4, partnerships=True)
    assert (opts.reward, opts.max_hands, opts.render_mode) == ("points", None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.reward = "match"  # type: ignore[misc]
    assert EnvOptions.resolve().max_hands == DEFAULT_MAX_HANDS


def test_both_envs_resolve_the_same_options() -> None:
    import bergen_env
    from bergen_env.single_agent import BergenSingleAgentEnv

    kwargs = dict(rules="standard", num_players=3, reward="points", max_hands=7, target=9)
    aec = bergen_env.raw_env(**kwargs)
    single = BergenSingleAgentEnv(**kwargs)
    assert aec.options == single.options == EnvOptions.resolve(**kwargs)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num_players", 5, "num_players"),
        ("max_hands", 0, "max_hands"),
        ("rule_overrides", {"hand_size": 30}, "hand_size"),
        ("rule_overrides", [1], "rule_overrides"),
        ("reward", "dense", "reward"),
    ],
)
def test_training_configs_check_the_env_block_the_same_way(
    key: str, value: object, message: str
) -> None:
    pytest.importorskip("yaml")
    from bergen_env.training.config import ConfigError, EnvBlock, TrainConfig

    env_fields = {f.name for f in dataclasses.fields(EnvBlock)}
    assert env_fields <= {f.name for f in dataclasses.fields(TrainConfig)}
    with pytest.raises(ConfigError, match=message):
        TrainConfig(**{key: value})
    try:
        from bergen_env.training.train_rllib import RLlibConfig
    except ImportError:  # the rllib extra is not installed
        return
    assert env_fields <= {f.name for f in dataclasses.fields(RLlibConfig)}
    pytest.importorskip("ray.rllib", reason="needs the [rllib] extra")
    with pytest.raises(ConfigError, match=message):
        RLlibConfig(**{key: value}).validate()
