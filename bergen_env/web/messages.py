"""What a page is sent: moves, score reasons, finished hands and a seat's whole view.

Every message a seat receives is built by :func:`build_message` from that seat's
:meth:`~bergen_env.engine.BergenState.public_view` and the table's public log (moves as
everyone saw them, hands revealed at a hand's end), never from the state itself. A message
carries the hand being played and the last finished hand (with its log); the scores carry the
rest, so a message's size does not grow with the match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bergen_env.actions import DOUBLE_PLAY, DRAW, NUM_PLAY_ACTIONS, PASS, action_str, parse_action
from bergen_env.engine import BergenState, PublicView
from bergen_env.errors import BergenError
from bergen_env.rules import Rules
from bergen_env.scoring import play_count, play_result
from bergen_env.tiles import IS_DOUBLE, PIPS, TILES
from bergen_env.web.errors import TableError, excerpt


def parse_move(action: Any, num_actions: int) -> int:
    """An action id from a request: an id, or move text such as ``"[3|5]>left"`` or ``"draw"``."""
    if isinstance(action, bool) or not isinstance(action, (int, str)):
        raise TableError(
            422,
            "bad_action",
            f"'action' must be an action id or move text, got {excerpt(action)}",
        )
    if isinstance(action, str) and len(action) > 40:
        raise TableError(422, "bad_action", f"'action' is not a move: {excerpt(action)}")
    try:
        a = parse_action(action) if isinstance(action, str) else action
    except BergenError as exc:
        raise TableError(422, "bad_action", str(exc)[:200]) from None
    if not 0 <= a < num_actions:
        raise TableError(
            422,
            "bad_action",
            f"action {excerpt(a)} is out of range 0..{num_actions - 1}",
        )
    return a


def move_dict(a: int) -> dict[str, Any]:
    """A public description of action ``a``: kind, tile and end (no hidden tile for a draw)."""
    if a < NUM_PLAY_ACTIONS:
        return {
            "action": a,
            "kind": "play",
            "tile": list(TILES[a >> 1]),
            "end": a & 1,
            "text": action_str(a),
        }
    if a == DRAW:
        return {"action": a, "kind": "draw", "text": "draw"}
    if a == PASS:
        return {"action": a, "kind": "pass", "text": "pass"}
    n = a - DOUBLE_PLAY
    return {"action": a, "kind": "double_play", "tile": [n, n], "text": action_str(a)}


def play_score_reason(rules: Rules, state: BergenState, a: int) -> dict[str, Any]:
    """What the play ``a`` (legal now, not yet applied) scores for and why, from public facts
    (:func:`bergen_env.scoring.play_result` and :func:`~bergen_env.scoring.play_count`).

    Bergen: a header when both ends then show one number (``number``, with ``doubles`` crosswise
    double ends; ``full`` is its value before end caps). Fives: the ends' ``count``.
    """
    ends = state.ends
    end_doubles = (bool(state.end_dbl[0]), bool(state.end_dbl[1]))
    if rules.play_scoring == "fives":
        return {"kind": "fives", "count": play_count(a, ends, end_doubles)}
    full, after, doubles = play_result("headers", a, ends, end_doubles)
    if after[0] != after[1]:
        return {"kind": "none"}
    return {
        "kind": "header",
        "number": after[0],
        "doubles": 0 if ends is None else doubles[0] + doubles[1],
        "full": full,
    }


def hand_summary(
    rules: Rules,
    number: int,
    result: dict[str, Any] | None,
    final_hands: list[list[int]],
) -> dict[str, Any]:
    """A finished hand as everyone sees it at its end: why it ended, points, the hands shown."""
    result = dict(result or {})
    tallies = []
    for side in range(rules.num_sides):
        tiles = [t for s, h in enumerate(final_hands) if rules.side_of[s] == side for t in h]
        doubles = [TILES[t][0] for t in tiles if IS_DOUBLE[t]]
        tallies.append(
            {
                "doubles": len(doubles),
                "lowest_double": min(doubles) if doubles else None,
                "pips": sum(PIPS[t] for t in tiles),
            }
        )
    return {
        "hand": number,
        "reason": result.get("reason"),
        "winner": result.get("winner"),
        "seat": result.get("seat"),
        "points": result.get("points"),
        "blocked_rule": result.get("blocked_rule"),
        "hands": [[list(TILES[t]) for t in h] for h in final_hands],
        "tallies": tallies,
    }


def build_message(
    view: PublicView,
    *,
    seat: int | None,
    version: int,
    table: str,
    seat_kinds: Sequence[str],
    events: Sequence[dict[str, Any]],
    last_result: dict[str, Any] | None,
    hands_done: int,
    over: bool,
    winner: int | None,
    lang: str = "en",
    error: str | None = None,
    match: int = 0,
    end_reason: str | None = None,
) -> dict[str, Any]:
    """The message for ``seat`` (None: a spectator) from its public view and the public log.

    ``last_result`` is the last finished hand (its log, result and revealed hands);
    ``end_reason`` says why a finished match ended (``"target"``, ``"hand_cap"``, ``"one_hand"``).
    """
    rules = view.rules
    own = seat is not None
    legal = []
    if own and not over:
        for a in view.legal_actions:
            legal.append(move_dict(a))
    return {
        "type": "state",
        "version": version,
        "table": table,
        "lang": lang,
        "seat": seat,
        "game": game_dict(rules),
        "seats": [
            {
                "seat": i,
                "kind": kind,
                "side": rules.side_of[i],
                "hand_size": view.hand_sizes[i],
            }
            for i, kind in enumerate(seat_kinds)
        ],
        "turn": None if over else view.current_player,
        "hand_number": view.hand_number,
        "line": [list(pair) for pair in view.line],
        "ends": list(view.ends) if view.ends is not None else None,
        "end_doubles": list(view.end_doubles),
        "boneyard": view.boneyard_size,
        "drawable": view.drawable,
        "scores": list(view.scores),
        "hand": [list(TILES[t]) + [t] for t in view.hand] if own else None,
        "legal": legal,
        "events": list(events),
        "last_result": last_result,
        "hands_done": hands_done,
        "over": over,
        "end_reason": end_reason,
        "winner": winner,
        "error": error,
        "match": match,
    }


def game_dict(rules: Rules) -> dict[str, Any]:
    """The rules as the page shows them (every option, the preset's name, sides and target)."""
    out = rules.to_dict()
    out["num_sides"] = rules.num_sides
    out["side_of"] = list(rules.side_of)
    return out
