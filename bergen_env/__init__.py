"""bergen_env: the Bergen domino game as a rules engine and a PettingZoo AEC environment.

Importing the package loads the numpy-only engine; ``env`` and ``raw_env`` load PettingZoo on
first use. ``bergen_env/Bergen-v0`` is registered with Gymnasium and PettingZoo as soon as
either is imported (see :mod:`bergen_env.registration`).

>>> import bergen_env
>>> env = bergen_env.env(num_players=2)
>>> env.reset(seed=0)
>>> sorted(env.observe("player_0"))
['action_mask', 'observation']
"""

from importlib import import_module
from typing import Any

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS, action_str, parse_action, play_action
from bergen_env.engine import BergenState, HandResult, PublicView
from bergen_env.errors import (
    BergenError,
    GameOverError,
    IllegalActionError,
    InvalidDealError,
    InvalidOptionError,
    InvalidTileError,
)
from bergen_env.observation import OBS_SIZE, STATE_SIZE, Encoder
from bergen_env.registration import register_envs
from bergen_env.rules import PRESETS, Rules
from bergen_env.scoring import blocked_winner
from bergen_env.tiles import TILES, parse_tile, tile_str

__version__ = "0.1.0"

__all__ = [
    "DOUBLE_PLAY",
    "DRAW",
    "OBS_SIZE",
    "PASS",
    "PRESETS",
    "STATE_SIZE",
    "TILES",
    "BergenError",
    "BergenState",
    "Encoder",
    "GameOverError",
    "HandResult",
    "IllegalActionError",
    "InvalidDealError",
    "InvalidOptionError",
    "InvalidTileError",
    "PublicView",
    "Rules",
    "action_str",
    "blocked_winner",
    "env",
    "parse_action",
    "parse_tile",
    "play_action",
    "raw_env",
    "tile_str",
]


#: Names loaded from the AEC env module (and PettingZoo) on first use.
_LAZY = ("env", "raw_env")


def __getattr__(name: str) -> Any:
    """``env`` and ``raw_env`` load the AEC env (and PettingZoo) on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'bergen_env' has no attribute {name!r}")
    value = getattr(import_module("bergen_env.aec_env"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


register_envs()
