"""bergen_env: the Bergen domino game as a rules engine and a PettingZoo AEC environment.

>>> import bergen_env
>>> env = bergen_env.env(num_players=2)
>>> env.reset(seed=0)
>>> sorted(env.observe("player_0"))
['action_mask', 'observation']
"""

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS, action_str, parse_action, play_action
from bergen_env.aec_env import env, raw_env
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


def _register() -> None:
    """Register with PettingZoo's registry where the installed PettingZoo has one."""
    try:
        from pettingzoo import aec_registry, register
    except ImportError:  # older PettingZoo without a registry
        return
    if "bergen_env/Bergen-v0" not in aec_registry:
        register("aec", "bergen_env/Bergen-v0", entry_point="bergen_env.aec_env:env")


_register()


def _register_gymnasium() -> None:
    """Register the single-agent env (one learner against agents) with Gymnasium."""
    import gymnasium

    if "bergen_env/Bergen-v0" not in gymnasium.registry:
        gymnasium.register(
            "bergen_env/Bergen-v0", entry_point="bergen_env.single_agent:BergenSingleAgentEnv"
        )


_register_gymnasium()
