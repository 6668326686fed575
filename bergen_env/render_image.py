"""A picture of the table as an RGB array (``render_mode="rgb_array"``), drawn with Pillow.

The picture has a fixed shape, :data:`FRAME_SHAPE` ``(544, 960, 3)`` uint8, whatever the
rules, so frames of any match can go into one video. It shows what one seat sees: the match
and scores on top, the other seats' hands face down (one tile back per tile held), the
boneyard (face down, with how many tiles may still be drawn), the line of play left to right
with both open ends (a double, laid crosswise, stands upright), and the viewer's own hand
face up at the bottom. The seat on turn is written in yellow.

Pillow is a dependency of the base install; it is imported at the first picture.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from bergen_env.engine import BergenState
from bergen_env.tiles import TILES

WIDTH, HEIGHT = 960, 544  # multiples of 16, as video encoders want
FRAME_SHAPE = (HEIGHT, WIDTH, 3)

HALF = 18  # side of one square half of a face-up tile, in pixels
BACK_W, BACK_H = 9, 18  # a face-down tile
MARGIN = 20
LABEL_W = 190  # room for a seat's label before its tiles

FELT = (28, 92, 56)
TILE = (246, 242, 228)
EDGE = (40, 40, 40)
PIP = (20, 20, 20)
BACK = (52, 58, 92)
TEXT = (236, 236, 236)
TURN = (255, 214, 64)

# Pip centres of each number on a unit square half (x, y in 0..1).
_L, _M, _H = 0.25, 0.5, 0.75
PIP_SPOTS: tuple[tuple[tuple[float, float], ...], ...] = (
    (),
    ((_M, _M),),
    ((_L, _L), (_H, _H)),
    ((_L, _L), (_M, _M), (_H, _H)),
    ((_L, _L), (_H, _L), (_L, _H), (_H, _H)),
    ((_L, _L), (_H, _L), (_M, _M), (_L, _H), (_H, _H)),
    ((_L, _L), (_H, _L), (_L, _M), (_H, _M), (_L, _H), (_H, _H)),
)


def _pillow() -> tuple[Any, Any, Any]:
    from PIL import Image, ImageDraw, ImageFont

    return Image, ImageDraw, ImageFont


@cache
def _font() -> Any:
    _, _, image_font = _pillow()
    try:
        return image_font.load_default(size=14)
    except (TypeError, OSError):  # a Pillow without FreeType: the fixed bitmap font
        return image_font.load_default()


def _half(draw: Any, x: int, y: int, number: int) -> None:
    r = max(1.5, HALF / 10)
    for u, v in PIP_SPOTS[number]:
        cx, cy = x + u * HALF, y + v * HALF
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=PIP)


def draw_tile(draw: Any, x: int, y: int, a: int, b: int, upright: bool) -> None:
    """A face-up tile with top-left corner ``(x, y)``: ``a`` left (or top), ``b`` right."""
    w, h = (HALF, 2 * HALF) if upright else (2 * HALF, HALF)
    draw.rounded_rectangle((x, y, x + w, y + h), radius=3, fill=TILE, outline=EDGE)
    if upright:
        draw.line((x + 3, y + HALF, x + w - 3, y + HALF), fill=EDGE)
        _half(draw, x, y, a)
        _half(draw, x, y + HALF, b)
    else:
        draw.line((x + HALF, y + 3, x + HALF, y + h - 3), fill=EDGE)
        _half(draw, x, y, a)
        _half(draw, x + HALF, y, b)


def _backs(draw: Any, x: int, y: int, count: int, room: int) -> None:
    """``count`` face-down tiles in a row from ``x``; ``+N`` when more do not fit in ``room``."""
    step = BACK_W + 3
    fits = max(0, room // step)
    shown = count if count <= fits else max(0, fits - 3)
    for i in range(shown):
        bx = x + i * step
        draw.rectangle((bx, y, bx + BACK_W, y + BACK_H), fill=BACK, outline=EDGE)
    if shown < count:
        draw.text((x + shown * step + 2, y + 1), f"+{count - shown}", fill=TEXT, font=_font())


def _seat_label(state: BergenState, seat: int, viewer: int) -> tuple[str, tuple[int, int, int]]:
    rules = state.rules
    who = f"player_{seat}" + (" (you)" if seat == viewer else "")
    if rules.partnerships:
        who += f" side {rules.side_of[seat]}"
    on_turn = seat == state.current_player and not state.terminal
    return who, TURN if on_turn else TEXT


def render_rgb(state: BergenState, viewer: int) -> np.ndarray:
    """The table as ``viewer`` sees it: a new ``FRAME_SHAPE`` uint8 array."""
    image_cls, image_draw, _ = _pillow()
    image = image_cls.new("RGB", (WIDTH, HEIGHT), FELT)
    draw = image_draw.Draw(image)
    font = _font()
    rules = state.rules
    n = state.num_players

    seats = f"{n} players" + (", partnerships" if rules.partnerships else "")
    draw.text(
        (MARGIN, 8),
        f"Bergen ({rules.name}), {seats}: hand {state.hand_number}, target {rules.target}",
        fill=TEXT,
        font=font,
    )
    label = "side {}" if rules.partnerships else "player_{}"
    scores = "   ".join(f"{label.format(i)}: {s}" for i, s in enumerate(state.scores))
    draw.text((MARGIN, 28), f"scores  {scores}", fill=TEXT, font=font)

    y = 56  # the other seats, in turn order after the viewer, face down
    for k in range(1, n):
        seat = (viewer + k) % n
        who, colour = _seat_label(state, seat, viewer)
        draw.text((MARGIN, y + 1), f"{who}: {state.hand_len[seat]}", fill=colour, font=font)
        _backs(draw, MARGIN + LABEL_W, y, state.hand_len[seat], WIDTH - 2 * MARGIN - LABEL_W)
        y += 28
    y = 56 + 3 * 28
    draw.text(
        (MARGIN, y + 1),
        f"boneyard: {state.boneyard_size} ({state.drawable} drawable)",
        fill=TEXT,
        font=font,
    )
    _backs(draw, MARGIN + LABEL_W, y, state.boneyard_size, WIDTH - 2 * MARGIN - LABEL_W)

    y += 34
    if state.line_len:
        ends = [
            f"{name} {state.end_num[e]}" + (" (double)" if state.end_dbl[e] else "")
            for e, name in enumerate(("left", "right"))
        ]
        draw.text((MARGIN, y), "line   ends: " + ", ".join(ends), fill=TEXT, font=font)
    else:
        draw.text((MARGIN, y), "line   (empty)", fill=TEXT, font=font)
    y += 24
    x, row_h = MARGIN, 2 * HALF + 6
    for a, b in state.line:  # left to right, wrapping into rows
        upright = a == b
        w = HALF if upright else 2 * HALF
        if x + w > WIDTH - MARGIN:
            x, y = MARGIN, y + row_h
        draw_tile(draw, x, y if upright else y + HALF // 2, a, b, upright)
        x += w + 3

    y = 56 + 3 * 28 + 34 + 24 + 3 * row_h + 10  # below three rows of line, whatever its length
    who, colour = _seat_label(state, viewer, viewer)
    draw.text((MARGIN, y), f"{who}: {state.hand_len[viewer]} tiles", fill=colour, font=font)
    y += 22
    x = MARGIN
    for t in state.hand_tiles(viewer):
        if x + HALF > WIDTH - MARGIN:
            x, y = MARGIN, y + 2 * HALF + 6
        a, b = TILES[t]
        draw_tile(draw, x, y, a, b, upright=True)
        x += HALF + 4

    if state.terminal:
        status = "match over: " + (
            "no winner" if state.winner is None else f"{label.format(state.winner)} wins"
        )
    else:
        status = f"player_{state.current_player} to move"
    draw.text((MARGIN, HEIGHT - 24), status, fill=TURN, font=font)
    return np.asarray(image, dtype=np.uint8).copy()
