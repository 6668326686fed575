"""Replays for the page: a ``bergen-replay/1`` record as frames to step through, hands shown.

A frame is the table after one event: the line, every hand, the boneyard's size, the scores,
the event and, after a hand's last event, how the hand ended. The record is re-simulated first
(:func:`bergen_env.replay.resimulate`), so a frame never shows what the engine would not play.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bergen_env.actions import DOUBLE_PLAY, DRAW, NUM_PLAY_ACTIONS, PASS
from bergen_env.errors import BergenError
from bergen_env.replay import (
    ReplayError,
    hands_at_end,
    parse_records,
    record_rules,
    resimulate,
)
from bergen_env.tiles import DOUBLE_ID, OTHER_HALF, TILES

#: Frames of more matches than this are not built from one upload.
MAX_MATCHES = 200

#: The most hands, and events in all, of an uploaded match whose frames are built (a web
#: match ends at 100 hands; a hand rarely takes more than 50 events).
MAX_HANDS = 100
MAX_EVENTS = 6000

#: The largest answer of frames of an uploaded match, in bytes of JSON.
MAX_FRAMES_BYTES = 4 * 1024 * 1024

#: What malformed input may raise deep in the engine or the frames (besides ReplayError).
_MALFORMED = (BergenError, ValueError, TypeError, KeyError, IndexError, AttributeError)


def place(line: list[tuple[int, int]], action: int) -> None:
    """Lay the tile(s) of play ``action`` on ``line`` (oriented pairs, left to right).

    The first tile lies as ``(a, b)``; a tile joining an end turns so that the matching half
    touches it; a double play lays ``[n|n]`` at both ends. The engine lays tiles the same way
    (a test holds the two together).
    """
    if action >= DOUBLE_PLAY:
        n = action - DOUBLE_PLAY
        line.insert(0, (n, n))
        line.append((n, n))
        return
    t, e = action >> 1, action & 1
    if not line:
        line.append(TILES[t])
    elif e == 0:
        n = line[0][0]
        line.insert(0, (OTHER_HALF[t * 7 + n], n))
    else:
        n = line[-1][1]
        line.append((n, OTHER_HALF[t * 7 + n]))


def parse_replay_text(text: str) -> list[dict[str, Any]]:
    """The records of a replay file's text (JSON lines); errors name the line."""
    records = parse_records(text.splitlines(), limit=MAX_MATCHES)
    if not records:
        raise ReplayError("the file holds no match record")
    return records


def upload_frames(text: str, match: int) -> tuple[bytes | None, str | None]:
    """The frames of match ``match`` of a replay file's text as JSON bytes, or None and what
    is wrong with the file. Plain values in and out: it runs in a worker process."""
    try:
        records = parse_replay_text(text)
        if not 0 <= match < len(records):
            return None, f"'match' {match} is out of range: the file holds {len(records)} match(es)"
        hands = records[match]["hands"]
        events = sum(len(hand["events"]) for hand in hands)
        if len(hands) > MAX_HANDS or events > MAX_EVENTS:
            return None, (
                f"match {match} has {len(hands)} hands and {events} events; the page shows "
                f"matches of at most {MAX_HANDS} hands and {MAX_EVENTS} events"
            )
        out = replay_frames(records[match], match)
        out["matches"] = len(records)
        data = json.dumps(out, separators=(",", ":")).encode()
    except (*_MALFORMED, RecursionError, OverflowError) as exc:
        return None, f"not a usable bergen-replay/1 file: {str(exc)[:300]}"
    if len(data) > MAX_FRAMES_BYTES:
        return None, f"the frames of match {match} exceed {MAX_FRAMES_BYTES} bytes"
    return data, None


def replay_frames(record: dict[str, Any], match: int | None = None) -> dict[str, Any]:
    """Every frame of one match record (checked against the engine first)."""
    resimulate(record, match)
    rules = record_rules(record)
    frames: list[dict[str, Any]] = []
    scores = [0] * rules.num_sides
    for h, hand in enumerate(record["hands"]):
        deal = hand["deal"]
        line: list[tuple[int, int]] = []
        drawn = 0
        events = hand["events"]
        frames.append(_frame(h, None, line, [sorted(x) for x in deal["hands"]], deal, 0, scores))
        for i, event in enumerate(events):
            a = event["action"]
            if a < NUM_PLAY_ACTIONS or a >= DOUBLE_PLAY:
                place(line, a)
            elif a == DRAW:
                drawn += 1
            scores = list(event["scores"])
            hands = hands_at_end(deal, events[: i + 1])
            result = hand["result"] if i == len(events) - 1 else None
            frames.append(_frame(h, event, line, hands, deal, drawn, scores, result))
    return {
        "format": record["format"],
        "game": {**rules.to_dict(), "num_sides": rules.num_sides, "side_of": list(rules.side_of)},
        "agents": record["agents"],
        "seed": record["seed"],
        "final_scores": record["final_scores"],
        "winner": record["winner"],
        "frames": frames,
    }


def _frame(
    hand: int,
    event: dict[str, Any] | None,
    line: Sequence[tuple[int, int]],
    hands: Sequence[Sequence[int]],
    deal: dict[str, Any],
    drawn: int,
    scores: Sequence[int],
    result: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hand": hand,
        "line": [list(p) for p in line],
        "hands": [[list(TILES[t]) for t in h] for h in hands],
        "boneyard": len(deal["boneyard"]) - drawn,
        "scores": list(scores),
        "event": None,
        "result": result,
    }
    if event is not None:
        a = event["action"]
        kind = (
            "play"
            if a < NUM_PLAY_ACTIONS
            else "draw"
            if a == DRAW
            else "pass"
            if a == PASS
            else "double_play"
        )
        tile = (
            list(TILES[a >> 1])
            if a < NUM_PLAY_ACTIONS
            else list(TILES[DOUBLE_ID[a - DOUBLE_PLAY]])
            if a >= DOUBLE_PLAY
            else None
        )
        out["event"] = {"seat": event["seat"], "action": a, "kind": kind, "tile": tile}
    return out
