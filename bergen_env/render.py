"""Text rendering of a match: the line, its ends, every hand, the boneyard and the scores."""

from __future__ import annotations

from bergen_env.engine import BergenState
from bergen_env.tiles import tile_str


def line_str(state: BergenState) -> str:
    """The line left to right; a double (laid crosswise) prints as ``[n=n]``."""
    if not state.line:
        return "(empty)"
    return "".join(f"[{a}={b}]" if a == b else f"[{a}|{b}]" for a, b in state.line)


def ends_str(state: BergenState) -> str:
    """Both open ends with their double flags."""
    if not state.line_len:
        return "none (empty line)"
    parts = []
    for e, name in enumerate(("left", "right")):
        flag = " (double)" if state.end_dbl[e] else ""
        parts.append(f"{name} {state.end_num[e]}{flag}")
    return ", ".join(parts)


def render_text(state: BergenState) -> str:
    """A readable table of the whole (omniscient) state."""
    r = state.rules
    seats = f"{r.num_players}p" + (" partnerships" if r.partnerships else "")
    scores = "  ".join(f"side {i}: {s}" for i, s in enumerate(state.scores))
    lines = [
        f"Bergen {r.name} {seats} | hand {state.hand_number} | target {r.target} | {scores}",
        f"line : {line_str(state)}",
        f"ends : {ends_str(state)}",
        f"boneyard: {state.boneyard_size} tiles ({state.drawable} drawable)",
    ]
    for seat in range(state.num_players):
        mark = "*" if seat == state.current_player and not state.terminal else " "
        hand = " ".join(tile_str(t) for t in state.hand_tiles(seat)) or "-"
        lines.append(f"{mark}player_{seat} (side {state.side_of[seat]}): {hand}")
    if state.terminal:
        lines.append(f"match over: side {state.winner} wins")
    return "\n".join(lines)
