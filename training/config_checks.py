"""The error of a bad config and the one wording of a bad key, shared by every config class
(``TrainConfig``, ``ExpertIterationConfig``, ``TuneConfig``, ``RLlibConfig``) and the range
tables of :mod:`bergen_env.training.config_ranges`."""

from __future__ import annotations

from typing import Any

from .cli import UsageError


class ConfigError(UsageError, ValueError):
    """A bad config file or override; the message names the file and the key."""


def key_error(cfg: Any, source: str, key: str, why: str) -> ConfigError:
    """The error for field ``key`` of ``cfg`` (read from ``source``): ``<source>: key '<key>'
    <why>, got <its value>``."""
    return ConfigError(f"{source}: key {key!r} {why}, got {getattr(cfg, key)!r}")
