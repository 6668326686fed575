"""Double-six tiles: canonical ids, precomputed lookup tables, printing and parsing.

Tile ids follow RULES.md ("How the engine numbers things"): tiles sorted by ``(a, b)`` with
``a <= b``, so ``[0|0]=0, [0|1]=1, ..., [6|6]=27``.

>>> tile_str(8)
'[1|2]'
>>> parse_tile("[2|1]")
8
>>> parse_tile((6, 6))
27
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bergen_env.errors import InvalidTileError
from bergen_env.validation import is_int

MAX_PIP = 6
NUM_NUMBERS = MAX_PIP + 1
NUM_TILES = NUM_NUMBERS * (NUM_NUMBERS + 1) // 2  # 28

#: ``TILES[t] == (a, b)`` with ``a <= b``.
TILES: tuple[tuple[int, int], ...] = tuple(
    (a, b) for a in range(NUM_NUMBERS) for b in range(a, NUM_NUMBERS)
)
TILE_ID: dict[tuple[int, int], int] = {}
for _t, (_a, _b) in enumerate(TILES):
    TILE_ID[(_a, _b)] = _t
    TILE_ID[(_b, _a)] = _t

#: Pip total of each tile.
PIPS: tuple[int, ...] = tuple(a + b for a, b in TILES)
#: True for doubles.
IS_DOUBLE: tuple[bool, ...] = tuple(a == b for a, b in TILES)
#: ``DOUBLE_ID[n]`` is the id of ``[n|n]``.
DOUBLE_ID: tuple[int, ...] = tuple(TILE_ID[(n, n)] for n in range(NUM_NUMBERS))
#: Bitmask over tile ids of the doubles.
DOUBLES_MASK: int = sum(1 << t for t in DOUBLE_ID)
#: ``CONTAINS[n]`` is the bitmask over tile ids of the tiles with a half equal to ``n``.
CONTAINS: tuple[int, ...] = tuple(
    sum(1 << t for t, (a, b) in enumerate(TILES) if n in (a, b)) for n in range(NUM_NUMBERS)
)
#: ``MATCH_EITHER[e0 * 7 + e1]``: tiles that fit an end showing ``e0`` or one showing ``e1``.
MATCH_EITHER: tuple[int, ...] = tuple(
    CONTAINS[e0] | CONTAINS[e1] for e0 in range(NUM_NUMBERS) for e1 in range(NUM_NUMBERS)
)
#: ``OTHER_HALF[t * 7 + n]``: the half of tile ``t`` that stays open when its ``n`` half joins
#: an end showing ``n``; -1 when the tile has no ``n``.
OTHER_HALF: tuple[int, ...] = tuple(
    (b if a == n else a) if n in (a, b) else -1 for (a, b) in TILES for n in range(NUM_NUMBERS)
)
#: Numbers on each tile as a 7-bit mask.
NUMBER_BITS: tuple[int, ...] = tuple((1 << a) | (1 << b) for a, b in TILES)


def tile_str(tile: int) -> str:
    """Print a tile id as ``[a|b]``."""
    a, b = TILES[check_tile(tile)]
    return f"[{a}|{b}]"


def check_tile(tile: object) -> int:
    """Return ``tile`` as a Python int if it is a valid tile id, else raise ``InvalidTileError``."""
    if not is_int(tile):
        raise InvalidTileError(f"tile id must be an integer in 0..{NUM_TILES - 1}, got {tile!r}")
    t = int(tile)
    if not 0 <= t < NUM_TILES:
        raise InvalidTileError(f"tile id {t} is out of range 0..{NUM_TILES - 1}")
    return t


def parse_tile(tile: int | str | Sequence[int]) -> int:
    """Parse a tile given as an id, ``(a, b)`` pair (either order) or text ``"[a|b]"``/``"a-b"``."""
    if isinstance(tile, str):
        text = tile.strip().strip("[]")
        for sep in ("|", "-", ":", ","):
            if sep in text:
                parts = text.split(sep)
                break
        else:
            raise InvalidTileError(f"cannot parse tile {tile!r}: expected '[a|b]'")
        try:
            pair = tuple(int(p) for p in parts)
        except ValueError:
            raise InvalidTileError(f"cannot parse tile {tile!r}: expected '[a|b]'") from None
        return parse_tile(pair)
    if isinstance(tile, (tuple, list, np.ndarray)):
        if len(tile) != 2:
            raise InvalidTileError(f"a tile pair needs two numbers, got {tile!r}")
        a, b = (int(x) for x in tile)
        if (a, b) not in TILE_ID:
            raise InvalidTileError(f"tile {tuple(tile)!r} is not in a double-six set")
        return TILE_ID[(a, b)]
    return check_tile(tile)


def bits_to_tiles(bits: int) -> list[int]:
    """Tile ids of the set bits of a bitmask, ascending."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out
