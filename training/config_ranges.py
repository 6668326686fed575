"""What each config key accepts: one table per config class, checked before a run starts and
printed in ``docs/configs.md`` (``python -m bergen_env.training.config_ranges`` rewrites those
tables).

Each entry is an :class:`Allowed`: a test of the value and the words that say what passes
(``an int >= 1``, ``one of 'relu', 'tanh'``). :func:`check_ranges` raises one
:class:`~bergen_env.training.config_checks.ConfigError` naming the first key whose value fails, the
value and what is allowed.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bergen_env.env_options import REWARD_MODES
from bergen_env.rules import PRESETS
from bergen_env.single_agent import REWARD_MODES as SINGLE_AGENT_REWARD_MODES
from bergen_env.validation import is_bool, is_int, is_number

from .config_checks import key_error

#: The largest count of processes or threads a config may ask for.
MAX_PROCESSES = 256
#: The widest hidden layer a config may ask for.
MAX_WIDTH = 65536
#: Most rows of a batched env (``n_envs`` with ``vec_env: batched``).
MAX_ROWS = 65536


@dataclass(frozen=True)
class Allowed:
    """A test of a config value and what it accepts, in words."""

    ok: Callable[[Any], bool]
    text: str

    def __or__(self, other: Allowed) -> Allowed:
        return Allowed(lambda v: self.ok(v) or other.ok(v), f"{self.text} or {other.text}")


def _bound(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f" in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if lo is not None:
        return f" {'>' if lo_open else '>='} {lo:g}"
    if hi is not None:
        return f" {'<' if hi_open else '<='} {hi:g}"
    return ""


def _within(v: float, lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> bool:
    if lo is not None and (v <= lo if lo_open else v < lo):
        return False
    return not (hi is not None and (v >= hi if hi_open else v > hi))


def integer(lo: int | None = None, hi: int | None = None, hi_open: bool = False) -> Allowed:
    """An int (not a bool) in the range."""
    return Allowed(
        lambda v: is_int(v) and _within(v, lo, hi, False, hi_open),
        "an int" + _bound(lo, hi, False, hi_open),
    )


def number(
    lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False
) -> Allowed:
    """A finite int or float (not a bool) in the range."""
    return Allowed(
        lambda v: is_number(v) and math.isfinite(v) and _within(v, lo, hi, lo_open, hi_open),
        "a number" + _bound(lo, hi, lo_open, hi_open),
    )


def choice(*values: Any) -> Allowed:
    """One of ``values``."""
    return Allowed(
        lambda v: any(type(v) is type(x) and v == x for x in values),
        "one of " + ", ".join(map(repr, values)),
    )


def linear(lo: float, hi: float) -> Allowed:
    """``lin_<number>``, the number in ``(lo, hi]``: a linear decay to 0."""

    def ok(v: Any) -> bool:
        if not (isinstance(v, str) and v.startswith("lin_")):
            return False
        try:
            x = float(v[4:])
        except ValueError:
            return False
        return math.isfinite(x) and lo < x <= hi

    return Allowed(ok, f"'lin_<x>' with x{_bound(lo, hi, True, False)}")


BOOL = Allowed(is_bool, "true or false")
NULL = Allowed(lambda v: v is None, "null")
MAPPING = Allowed(lambda v: isinstance(v, dict), "a mapping of rule options")
NAME = Allowed(
    lambda v: isinstance(v, str) and bool(v) and "/" not in v and v not in (".", ".."),
    "a non-empty string without '/'",
)
AGENT = Allowed(lambda v: isinstance(v, str) and bool(v), "an agent string")
AGENTS = Allowed(
    lambda v: isinstance(v, list) and all(isinstance(x, str) and x for x in v),
    "a list of agent strings",
)
SOME_AGENTS = Allowed(lambda v: AGENTS.ok(v) and bool(v), "a non-empty list of agent strings")
PATH = Allowed(lambda v: isinstance(v, str) and bool(v), "a file path")


def widths(empty: bool) -> Allowed:
    """A list of hidden-layer widths in ``[1, MAX_WIDTH]`` (``empty``: the list may be empty)."""
    one = integer(1, MAX_WIDTH)
    return Allowed(
        lambda v: isinstance(v, list) and (empty or bool(v)) and all(one.ok(x) for x in v),
        f"a {'' if empty else 'non-empty '}list of ints in [1, {MAX_WIDTH}]",
    )


POSITIVE = integer(1)
PROCESSES = integer(1, MAX_PROCESSES)
SEED = Allowed(integer(0, 2**32, hi_open=True).ok, "an int in [0, 2**32)")
UNIT = number(0, 1)
STEP_SIZE = number(0, 1, lo_open=True)


def env_block(reward_modes: tuple[str, ...]) -> dict[str, Allowed]:
    """The keys of :class:`bergen_env.training.config.EnvBlock`."""
    return {
        "num_players": choice(2, 3, 4),
        "partnerships": BOOL,
        "rules": choice(*PRESETS),
        "rule_overrides": MAPPING,
        "reward": choice(*reward_modes),
        "max_hands": POSITIVE,
    }


#: :class:`bergen_env.training.config.TrainConfig`.
TRAIN: dict[str, Allowed] = {
    "name": NAME,
    "seed": SEED,
    "total_timesteps": POSITIVE,
    "n_envs": integer(1, MAX_ROWS),
    "vec_env": choice("batched", "subproc", "dummy"),
    "torch_threads": PROCESSES,
    "device": choice("cpu", "cuda", "auto"),
    **env_block(SINGLE_AGENT_REWARD_MODES),
    "auto_forced": BOOL,
    "opponents": SOME_AGENTS,
    "selfplay_start": integer(-1),
    "snapshot_every": POSITIVE,
    "pool_size": POSITIVE,
    "selfplay_prob": UNIT,
    "pfsp_exponent": number(0),
    "partner": choice("pool", "learner"),
    "imitation_teacher": AGENT | NULL,
    "imitation_decisions": POSITIVE,
    "imitation_epochs": POSITIVE,
    "imitation_lr": STEP_SIZE,
    "imitation_batch_size": POSITIVE,
    "imitation_workers": PROCESSES,
    "learning_rate": STEP_SIZE | linear(0, 1),
    "n_steps": POSITIVE,
    "batch_size": integer(2),
    "n_epochs": POSITIVE,
    "gamma": UNIT,
    "gae_lambda": UNIT,
    "clip_range": number(0, 1, lo_open=True) | linear(0, 1),
    "ent_coef": UNIT,
    "target_kl": number(0, lo_open=True) | NULL,
    "vf_coef": number(0),
    "max_grad_norm": number(0, lo_open=True),
    "net_arch": widths(empty=False),
    "activation": choice("relu", "tanh"),
    "eval_opponents": AGENTS,
    "eval_every": integer(0),
    "eval_matches": POSITIVE,
    "final_eval_matches": POSITIVE,
    "eval_workers": PROCESSES,
    "checkpoint_every": POSITIVE,
}

#: :class:`bergen_env.training.expert_iteration_config.ExpertIterationConfig`.
EXPERT_ITERATION: dict[str, Allowed] = {
    "name": NAME,
    "seed": SEED,
    **env_block(REWARD_MODES),
    "reward": choice("match"),
    "iterations": POSITIVE,
    "decisions": POSITIVE,
    "job_decisions": POSITIVE,
    "workers": PROCESSES,
    "player": SOME_AGENTS,
    "opponents": SOME_AGENTS,
    "partner": choice("learner", "opponents"),
    "teacher": Allowed(
        lambda v: isinstance(v, str) and v.split(":")[0] == "search", "a search agent string"
    ),
    "temperature": number(0, lo_open=True),
    "init_policy": PATH | NULL,
    "net_arch": widths(empty=False),
    "activation": choice("relu", "tanh"),
    "scorer": widths(empty=True),
    "keep_data": BOOL,
    "epochs": POSITIVE,
    "learning_rate": STEP_SIZE,
    "batch_size": POSITIVE,
    "held_out": number(0, 1, lo_open=True, hi_open=True),
    "torch_threads": PROCESSES,
    "eval_opponents": AGENTS,
    "eval_matches": integer(0),
    "eval_workers": PROCESSES,
    "ray": Allowed(
        lambda v: v is None or (isinstance(v, str) and bool(v)),
        "null, 'local', 'auto' or a Ray cluster's address",
    ),
}

#: The tables, by config class name (the headings of ``docs/configs.md``).
TABLES: dict[str, dict[str, Allowed]] = {
    "TrainConfig": TRAIN,
    "ExpertIterationConfig": EXPERT_ITERATION,
}


def check_ranges(cfg: Any, table: Mapping[str, Allowed], source: str) -> None:
    """Raise a ``ConfigError`` naming the first field of ``cfg`` outside ``table``."""
    for key, allowed in table.items():
        if not allowed.ok(getattr(cfg, key)):
            raise key_error(cfg, source, key, f"must be {allowed.text}")


# ---------------------------------------------------------------------- docs/configs.md

DOC = Path(__file__).resolve().parents[1] / "docs" / "configs.md"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- allowed values of {name}: begin -->", f"<!-- allowed values of {name}: end -->"


def markdown(table: Mapping[str, Allowed]) -> str:
    """The table as a markdown table: key, allowed values."""
    rows = ["| key | allowed |", "|---|---|"]
    rows += [f"| `{key}` | {allowed.text} |" for key, allowed in table.items()]
    return "\n".join(rows)


def render(text: str) -> str:
    """``text`` (docs/configs.md) with each marked table replaced by the current one."""
    for name, table in TABLES.items():
        begin, end = markers(name)
        head, found, rest = text.partition(begin)
        if not found or end not in rest:
            raise ValueError(f"docs/configs.md has no block {begin} ... {end}")
        rest = rest.split(end, 1)[1]
        text = f"{head}{begin}\n{markdown(table)}\n{end}{rest}"
    return text


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text()))
    print(f"wrote {DOC}", file=sys.stderr)
