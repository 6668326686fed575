"""Text rendering of a match: the line, its ends, every hand, the boneyard and the scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bergen_env.engine import BergenState
from bergen_env.rules import Rules
from bergen_env.tiles import IS_DOUBLE, PIPS, TILES, tile_str


def line_str(state: BergenState) -> str:
    """The line left to right; a double (laid crosswise) prints as ``[n=n]``."""
    return pairs_line_str(state.line)


def pairs_line_str(line: Sequence[tuple[int, int]]) -> str:
    """A line given as oriented ``(a, b)`` pairs (e.g. ``PublicView.line``), as ``line_str``."""
    if not line:
        return "(empty)"
    return "".join(f"[{a}={b}]" if a == b else f"[{a}|{b}]" for a, b in line)


def ends_str(state: BergenState) -> str:
    """Both open ends with their double flags."""
    if not state.line_len:
        return "none (empty line)"
    parts = []
    for e, name in enumerate(("left", "right")):
        flag = " (double)" if state.end_dbl[e] else ""
        parts.append(f"{name} {state.end_num[e]}{flag}")
    return ", ".join(parts)


def game_title(rules: Rules) -> str:
    """``Bergen standard``, ``Draw`` or ``Fives`` (a custom rule set by its scoring)."""
    if rules.name in ("draw", "fives"):
        return rules.name.capitalize()
    game = {"headers": "Bergen", "fives": "Fives", "none": "Draw"}[rules.play_scoring]
    return f"{game} {rules.name}"


def target_str(rules: Rules) -> str:
    """``target 15``, or ``one hand`` for a single-hand match without a target."""
    if not rules.has_target:
        return "one hand"
    return f"target {rules.target}" + (", one hand" if rules.single_hand else "")


def render_text(state: BergenState) -> str:
    """A readable table of the whole (omniscient) state."""
    r = state.rules
    seats = f"{r.num_players}p" + (" partnerships" if r.partnerships else "")
    scores = "  ".join(f"side {i}: {s}" for i, s in enumerate(state.scores))
    lines = [
        f"{game_title(r)} {seats} | hand {state.hand_number} | {target_str(r)} | {scores}",
        f"line : {line_str(state)}",
        f"ends : {ends_str(state)}",
        f"boneyard: {state.boneyard_size} tiles ({state.drawable} drawable)",
    ]
    for seat in range(state.num_players):
        mark = "*" if seat == state.current_player and not state.terminal else " "
        hand = " ".join(tile_str(t) for t in state.hand_tiles(seat)) or "-"
        lines.append(f"{mark}player_{seat} (side {state.side_of[seat]}): {hand}")
    if state.terminal:
        lines.append(
            "match over: a tie, nobody wins"
            if state.winner is None
            else f"match over: side {state.winner} wins"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------- hand and match ends

#: How each blocked rule picks the winner (RULES.md, "Blocked hands"), for announcements.
BLOCKED_RULE_TEXT = {
    "german": "fewest doubles, then fewest pips",
    "american": "a side without doubles beats one with, then fewest pips; "
    "if all hold doubles, the lowest double",
    "pips": "fewest pips",
    "most_doubles": "most doubles, then the lowest double; if nobody holds one, fewest pips",
}


def side_name(rules: Rules, side: int) -> str:
    """``player_i`` in individual play, ``side s (player_a+player_b)`` in partnerships."""
    if not rules.partnerships:
        return f"player_{side}"
    seats = "+".join(f"player_{s}" for s in range(rules.num_players) if rules.side_of[s] == side)
    return f"side {side} ({seats})"


def scores_str(rules: Rules, scores: Sequence[int]) -> str:
    """Every side's score and the target, e.g. ``player_0 4, player_1 7 (target 15)``."""
    label = "player_{}" if not rules.partnerships else "side {}"
    parts = ", ".join(f"{label.format(i)} {s}" for i, s in enumerate(scores))
    return f"{parts} ({target_str(rules)})"


def hand_end_str(
    rules: Rules, result: Mapping[str, Any], final_hands: Sequence[Sequence[int]] | None = None
) -> str:
    """Why a hand ended and what it scored; ``result`` is a replay hand result (a dict).

    ``final_hands`` (tile ids per seat at the end) adds the tiles left and, for a blocked hand,
    each side's doubles and pips that the blocked rule compared.
    """
    reason, winner = result["reason"], result["winner"]
    lines = []
    if reason == "target":
        return f"the match ends mid-hand: a play by player_{result['seat']} reached the target"
    if reason == "domino":
        lines.append(
            f"domino by player_{result['seat']}: {side_name(rules, winner)} "
            f"scores {result['points'][winner]}"
        )
    else:
        rule = result.get("blocked_rule") or rules.blocked_rule
        lines.append(
            f"blocked: no tile fits and nobody may draw; {rule} rule ({BLOCKED_RULE_TEXT[rule]})"
        )
        if final_hands is not None:
            for side in range(rules.num_sides):
                tiles = [
                    t for s, h in enumerate(final_hands) if rules.side_of[s] == side for t in h
                ]
                doubles = [TILES[t][0] for t in tiles if IS_DOUBLE[t]]
                low = f", lowest [{min(doubles)}|{min(doubles)}]" if doubles else ""
                lines.append(
                    f"  {side_name(rules, side)}: {len(doubles)} double(s){low}, "
                    f"{sum(PIPS[t] for t in tiles)} pips"
                )
        if winner is None:
            lines.append("  tie for best: nobody scores")
        else:
            lines.append(
                f"  {side_name(rules, winner)} wins the hand and scores {result['points'][winner]}"
            )
    for side, pts in enumerate(result["points"]):
        if pts < 0:
            lines.append(f"  {side_name(rules, side)} loses {-pts} for tiles left in hand")
    if final_hands is not None:
        left = "; ".join(
            f"player_{s} " + (" ".join(tile_str(t) for t in h) or "-")
            for s, h in enumerate(final_hands)
        )
        lines.append(f"  left in hands: {left}")
    return "\n".join(lines)


def match_end_str(
    rules: Rules, scores: Sequence[int], winner: int | None, tied: bool = False
) -> str:
    """Who won the match and how (the target reached), that a single-hand match ended ``tied``,
    or that it did not finish."""
    if winner is None:
        if tied:
            return f"match over: the hand tied, nobody wins; {scores_str(rules, scores)}"
        return f"match unfinished: {scores_str(rules, scores)}"
    if not rules.has_target:
        return f"match over: {side_name(rules, winner)} wins the hand; {scores_str(rules, scores)}"
    return (
        f"match over: {side_name(rules, winner)} reached the target {rules.target} "
        f"with {scores[winner]}; {scores_str(rules, scores)}"
    )
