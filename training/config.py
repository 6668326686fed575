"""Training configuration: one dataclass, loaded from YAML with a ``default:`` block.

A config file holds one top-level key, ``default:``, whose keys are fields of
:class:`TrainConfig` (rl-baselines3-zoo style); every field not given keeps its default here.
An unknown key is an error naming the file and the key. Command-line overrides
(``--set key=value``) are parsed as YAML values and checked the same way.

Schedules: ``learning_rate`` and ``clip_range`` take a number or a string ``lin_<value>``
(linear decay from ``value`` to 0 over training, as in the zoo).

>>> cfg = TrainConfig(learning_rate="lin_3e-4")
>>> schedule(cfg.learning_rate)(0.5)
0.00015
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bergen_env.atomic_files import write_text
from bergen_env.env_options import REWARD_MODES, EnvOptions
from bergen_env.single_agent import REWARD_MODES as SINGLE_AGENT_REWARD_MODES
from bergen_env.validation import check_keywords, is_bool, is_int, is_number

from .config_checks import ConfigError
from .config_ranges import TRAIN, check_ranges

T = TypeVar("T")


@dataclass
class EnvBlock:
    """The env keys every training config shares (one YAML key each under ``default:``),
    checked once by :class:`bergen_env.env_options.EnvOptions`."""

    num_players: int = 2
    """2, 3 or 4 seats."""
    partnerships: bool = False
    """Two sides of two partners (4 players only)."""
    rules: str = "standard"
    """Preset name: standard, traditional, double_set, draw or fives."""
    rule_overrides: dict[str, Any] = field(default_factory=dict)
    """Single rule options overriding the preset, e.g. ``{lead: highest}``."""
    reward: str = "match"
    """``match`` (+1/-1 at the end), ``points`` (dense score difference); the single-agent env
    (``bergen_env.training.train``) also takes ``shaped`` (score difference / target each step plus
    the match result at the end) and ``win`` (the change of the chance to win the match each step,
    from the match-win table; sums to the match result)."""
    max_hands: int = 500
    """A match still running after this many hands is truncated."""

    def env_block_kwargs(self) -> dict[str, Any]:
        """The block as env keyword arguments (the rule overrides spread out)."""
        return dict(
            num_players=self.num_players,
            partnerships=self.partnerships,
            rules=self.rules,
            reward=self.reward,
            max_hands=self.max_hands,
            **self.rule_overrides,
        )

    def env_options(
        self, source: str = "<config>", reward_modes: tuple[str, ...] = REWARD_MODES
    ) -> EnvOptions:
        """The block checked as :class:`EnvOptions`; errors name ``source``."""
        if not isinstance(self.rule_overrides, dict):
            raise ConfigError(
                f"{source}: key 'rule_overrides' must be a mapping, got {self.rule_overrides!r}"
            )
        try:
            return EnvOptions.resolve(**self.env_block_kwargs(), reward_modes=reward_modes)
        except ValueError as exc:  # InvalidOptionError included
            raise ConfigError(f"{source}: {exc}") from None


@dataclass
class TrainConfig(EnvBlock):
    """Everything a training run needs. Each field is one YAML key under ``default:`` (the env
    keys come from :class:`EnvBlock`)."""

    # --- run
    name: str = "run"
    """Run name prefix of the run folder (defaults to the config file's stem)."""
    seed: int = 0
    """Seed of the envs, the network initialisation and the evaluations."""
    total_timesteps: int = 200_000
    """Learner decisions to train for (summed over all envs)."""
    n_envs: int = 2
    """Parallel envs: rows of the batch with ``vec_env: batched``, processes with ``subproc``."""
    vec_env: str = "batched"
    """``batched`` (the compiled batched env in the learner's process,
    :mod:`bergen_env.training.batched_env`; every opponent the batched env can play, self-play
    snapshots),
    ``subproc`` (SubprocVecEnv, one process per env, every agent) or ``dummy`` (the ``subproc``
    envs in one process)."""
    torch_threads: int = 1
    """Torch threads of the learner process."""
    device: str = "cpu"
    """Where the network trains: ``cpu``, ``cuda`` or ``auto`` (CUDA when present, else CPU); the
    envs stay on the CPU (:mod:`bergen_env.training.device`)."""

    # --- env (and the keys of EnvBlock)
    auto_forced: bool = True
    """Play the learner's forced moves automatically."""
    opponents: list[str] = field(default_factory=lambda: ["random"])
    """Scripted training opponents; each episode every opponent seat draws one uniformly."""

    # --- self-play
    selfplay_start: int = -1
    """Timestep at which frozen snapshots of the learner start joining the pool (-1: never)."""
    snapshot_every: int = 50_000
    """Timesteps between snapshots added to the pool."""
    pool_size: int = 5
    """Most recent snapshots kept in the pool."""
    selfplay_prob: float = 0.5
    """Probability that an opponent seat plays a snapshot (once the pool is not empty)."""
    pfsp_exponent: float = 2.0
    """``vec_env: batched``: a snapshot is drawn with weight ``(1 - p) ** pfsp_exponent``, ``p``
    the learner's win rate against it (prioritized fictitious self-play; 0: uniform)."""
    partner: str = "pool"
    """Partnerships: ``pool`` (the partner is drawn like an opponent) or ``learner`` (the most
    recent snapshot of the learner, a scripted opponent until the first snapshot exists)."""

    # --- imitation warm start (bergen_env.training.imitation)
    imitation_teacher: str | None = None
    """Agent string the policy imitates before PPO starts (None: start from a random network)."""
    imitation_decisions: int = 200_000
    """Teacher decisions collected for the warm start."""
    imitation_epochs: int = 5
    """Passes over the teacher's decisions."""
    imitation_lr: float = 1e-3
    """Adam step size of the warm start."""
    imitation_batch_size: int = 512
    """Minibatch size of the warm start."""
    imitation_workers: int = 2
    """Processes collecting the teacher's decisions."""

    # --- PPO
    learning_rate: float | str = 3e-4
    """Adam step size: a number or ``lin_<value>``."""
    n_steps: int = 1024
    """Steps per env per rollout."""
    batch_size: int = 256
    """Minibatch size."""
    n_epochs: int = 10
    """Passes over each rollout."""
    gamma: float = 0.995
    """Discount (episodes are whole matches of ~20-100 learner decisions)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float | str = 0.2
    """PPO clip: a number or ``lin_<value>``."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    target_kl: float | None = None
    """Stop a rollout's epochs early once the approximate KL to the old policy exceeds this."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layers of the policy and value networks (separate networks)."""
    activation: str = "relu"
    """``relu`` or ``tanh``."""

    # --- evaluation and checkpoints
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "greedy"])
    """Scripted opponents of the periodic and final duplicate evaluations."""
    eval_every: int = 50_000
    """Timesteps between evaluations (0: only the final one)."""
    eval_matches: int = 200
    """Duplicate matches per opponent in each periodic evaluation."""
    final_eval_matches: int = 400
    """Duplicate matches per opponent in the final evaluation."""
    eval_workers: int = 2
    """Worker processes of the evaluation tournaments."""
    checkpoint_every: int = 50_000
    """Timesteps between checkpoints (kept, never deleted)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, source: str = "<config>") -> None:
        """Check every value against :data:`bergen_env.training.config_ranges.TRAIN` and the env
        keys together; errors name ``source`` and the key."""
        check_ranges(self, TRAIN, source)
        self.env_options(source, SINGLE_AGENT_REWARD_MODES)

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain YAML-able values."""
        return dataclasses.asdict(self)

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :class:`bergen_env.single_agent.BergenSingleAgentEnv`."""
        return dict(**self.env_block_kwargs(), auto_forced=self.auto_forced)


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


def schedule(value: float | str) -> Callable[[float], float]:
    """A number or ``lin_<value>`` as a function of SB3's ``progress_remaining`` (1 -> 0)."""
    if is_bool(value):
        raise ValueError("a schedule is a number or 'lin_<value>'")
    if is_number(value):
        v = float(value)
        return lambda _progress: v
    if isinstance(value, str) and value.startswith("lin_"):
        try:
            v = float(value[4:])
        except ValueError:
            raise ValueError(f"bad schedule {value!r}: expected 'lin_<number>'") from None
        return lambda progress: progress * v
    raise ValueError(f"bad schedule {value!r}: expected a number or 'lin_<number>'")


def _coerce(key: str, value: Any, source: str) -> Any:
    """Check an override's type against the field's default (ints may become floats)."""
    default = TrainConfig().__getattribute__(key) if key in FIELDS else None
    if isinstance(default, bool) and not is_bool(value):
        raise ConfigError(f"{source}: key {key!r} must be true or false, got {value!r}")
    if isinstance(default, float) and is_int(value):
        return float(value)
    if isinstance(default, float) and isinstance(value, str) and not value.startswith("lin_"):
        try:  # YAML 1.1 reads "3e-4" (no dot) as a string
            return float(value)
        except ValueError:
            pass
    return value


def unvalidated(cls: type[T], values: dict[str, Any]) -> T:
    """The dataclass ``cls`` with ``values`` and every other field's default, built without
    ``__init__`` (whose ``__post_init__`` check would run before the caller's, naming no file)."""
    cfg = cls.__new__(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in values:
            setattr(cfg, f.name, values[f.name])
        elif f.default_factory is not dataclasses.MISSING:
            setattr(cfg, f.name, f.default_factory())
        else:
            setattr(cfg, f.name, f.default)
    return cfg


def from_mapping(data: dict[str, Any], source: str) -> TrainConfig:
    """Build a config from a mapping of field names; unknown keys are an error."""
    check_keywords(data, sorted(FIELDS), label="key", error=ConfigError, context=f"{source}: ")
    values = {k: _coerce(k, v, source) for k, v in data.items()}
    try:
        cfg = unvalidated(TrainConfig, values)
        cfg.validate(source)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{source}: {exc}") from None
    return cfg


def add_override_argument(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable ``--set KEY=VALUE`` option whose values :func:`read_config_block`
    applies (``args.overrides``)."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (YAML value), repeatable",
    )


def read_config_block(
    path: str | Path, overrides: list[str] | None, fields: set[str] | dict[str, Any]
) -> dict[str, Any]:
    """The ``default:`` block of the YAML file ``path`` with ``key=value`` overrides applied.

    ``name`` defaults to the file's stem; an override of a key not in ``fields`` is an error
    naming the file and the key (unknown keys in the file itself are the caller's to report).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict) or set(raw) != {"default"} or not isinstance(raw["default"], dict):
        keys = sorted(raw) if isinstance(raw, dict) else raw
        raise ConfigError(
            f"{path}: expected one top-level key 'default:' (a mapping), got {keys!r}"
        )
    data = dict(raw["default"])
    data.setdefault("name", path.stem)
    for item in overrides or []:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"--set {item!r}: expected key=value")
        context = f"--set {item!r} (config {path}): "
        check_keywords([key], sorted(fields), label="key", error=ConfigError, context=context)
        data[key] = yaml.safe_load(text)
    return data


def load_dataclass_config(cls: type[T], path: str | Path, overrides: list[str] | None) -> T:
    """An instance of the config dataclass ``cls`` from ``path``'s ``default:`` block and the
    ``key=value`` overrides: an unknown key is an error, a float written ``3e-4`` (YAML 1.1
    reads it as a string) a float, every left-out field its default; checked once, by
    ``cls.validate(path)``, so errors name the file."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    data = read_config_block(path, overrides, fields)
    check_keywords(data, sorted(fields), label="key", error=ConfigError, context=f"{path}: ")
    for key, value in data.items():
        if isinstance(fields[key].default, float) and isinstance(value, str):
            with contextlib.suppress(ValueError):
                data[key] = float(value)
    cfg = unvalidated(cls, data)
    cfg.validate(str(path))  # type: ignore[attr-defined]
    return cfg


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """Load ``path`` (YAML with a ``default:`` block) and apply ``key=value`` overrides."""
    return from_mapping(read_config_block(path, overrides, FIELDS), str(path))


def save_config(cfg: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as a loadable YAML file."""
    write_text(path, yaml.safe_dump({"default": cfg.to_dict()}, sort_keys=False))
