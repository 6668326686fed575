"""Match replays: the record format, recording a match, JSON-lines files and re-simulation.

A replay file holds one match per line (JSON), format ``bergen-replay/1``::

    {"format": "bergen-replay/1", "rules": Rules.to_dict(), "seed": 7,
     "agents": ["human", "greedy"],
     "hands": [{"deal": {"hands": [[tile ids] per seat], "boneyard": [tile ids]},
                "events": [{"seat": 0, "action": 12, "move": "[0|6]>left",
                            "scores": [2, 0]}, ...],
                "result": {"reason": "domino", "winner": 1, "points": [0, 2],
                           "seat": 1, "blocked_rule": null}}, ...],
     "final_scores": [9, 15], "winner": 1}

``scores`` are the per-side scores *after* the event. A hand's ``result`` is the engine's
:class:`~bergen_env.engine.HandResult` (``reason`` ``"domino"`` or ``"blocked"``), or reason
``"target"`` when a header brought a side to the target mid-hand (no hand-end points), or
``null`` for a hand that was still being played when recording stopped. ``winner`` is a side,
``null`` for an unfinished match. Deals are the ones actually played (after any redeal), so
``BergenState(rules, deals=[hand["deal"] ...])`` replays the match without the seed.

>>> from bergen_env.engine import BergenState
>>> from bergen_env.rules import Rules
>>> state = BergenState(Rules.preset("standard"), seed=3)
>>> rec = MatchRecorder(state, ["a", "b"], seed=3)
>>> while not state.terminal:
...     seat, action = state.current_player, state.legal_actions()[0]
...     state.apply_action(action)
...     rec.record(seat, action)
>>> record = rec.finish()
>>> resimulate(record) == record["final_scores"] == state.scores
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from bergen_env.actions import DOUBLE_PLAY, DRAW, NUM_PLAY_ACTIONS, PASS, action_str
from bergen_env.engine import BergenState, HandResult
from bergen_env.errors import BergenError
from bergen_env.rules import Rules
from bergen_env.tiles import DOUBLE_ID

FORMAT = "bergen-replay/1"
RECORD_KEYS = ("format", "rules", "seed", "agents", "hands", "final_scores", "winner")


class ReplayError(BergenError, ValueError):
    """A replay file or record that is malformed, or that the engine does not reproduce."""


def result_dict(result: HandResult) -> dict[str, Any]:
    """A :class:`HandResult` as the JSON-able ``result`` of a replay hand."""
    return {
        "reason": result.reason,
        "winner": result.winner,
        "points": list(result.points),
        "seat": result.seat,
        "blocked_rule": result.blocked_rule,
    }


class MatchRecorder:
    """Records one match as it is played. Create it right after the :class:`BergenState`.

    Call :meth:`record` right after every applied action and :meth:`finish` at the end.
    """

    def __init__(
        self, state: BergenState, agent_names: Sequence[str], seed: int | None = None
    ) -> None:
        if state.moves or state.hand_results or state.bone_pos:
            raise ReplayError(
                "MatchRecorder must be created before any action is applied to the state"
            )
        if len(agent_names) != state.num_players:
            raise ReplayError(
                f"MatchRecorder got {len(agent_names)} agent names for {state.num_players} seats"
            )
        self.state = state
        self.agent_names = [str(name) for name in agent_names]
        self.seed = seed
        self.hands: list[dict[str, Any]] = []
        self._hand_number = -1
        self._num_results = 0
        self._start_hand()

    @property
    def current_hand(self) -> dict[str, Any]:
        """The hand being recorded: its deal, its events so far and its result (or None)."""
        return self.hands[-1]

    def _start_hand(self) -> None:
        s = self.state
        deal = {
            "hands": [s.hand_tiles(seat) for seat in range(s.num_players)],
            "boneyard": list(s.boneyard),
        }
        self.hands.append({"deal": deal, "events": [], "result": None})
        self._hand_number = s.hand_number

    def record(self, seat: int, action: int) -> None:
        """Log ``action`` by ``seat``, just applied to the state, and any hand end it caused."""
        s = self.state
        action = int(action)
        hand = self.hands[-1]
        if s.hand_number == self._hand_number and (not s.moves or s.moves[-1] != (seat, action)):
            raise ReplayError(
                f"record({seat}, {action}) does not match the state's last move "
                f"{s.moves[-1] if s.moves else None}: call it right after each applied action"
            )
        hand["events"].append(
            {"seat": int(seat), "action": action, "move": action_str(action), "scores": s.scores[:]}
        )
        if len(s.hand_results) > self._num_results:
            self._num_results = len(s.hand_results)
            hand["result"] = result_dict(s.hand_results[-1])
        elif s.terminal:  # a header reached the target in the middle of the hand
            hand["result"] = {
                "reason": "target",
                "winner": s.winner,
                "points": [0] * s.num_sides,
                "seat": int(seat),
                "blocked_rule": None,
            }
        if s.hand_number != self._hand_number and not s.terminal:
            self._start_hand()

    def finish(self) -> dict[str, Any]:
        """The match record (a dict ready for :func:`write_jsonl`)."""
        s = self.state
        hands = [h for h in self.hands if h["events"]]  # drop a dealt but unplayed last hand
        return {
            "format": FORMAT,
            "rules": s.rules.to_dict(),
            "seed": self.seed,
            "agents": list(self.agent_names),
            "hands": hands,
            "final_scores": s.scores[:],
            "winner": s.winner if s.terminal else None,
        }


# ---------------------------------------------------------------------- files


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]], append: bool = False) -> int:
    """Write match records to ``path``, one JSON line each; return how many were written."""
    count = 0
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
            count += 1
    return count


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read the match records of a replay file; errors name the file and line."""
    with _open_replay(path) as f:
        return parse_records(f, source=str(path))


def _open_replay(path: str | Path) -> BinaryIO:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"replay file {str(path)!r} does not exist")
    return open(path, "rb")  # lines decoded one by one: a damaged line spoils only itself


@dataclass
class ReplayScan:
    """A replay file read as far as it is intact: every match line, in order, as its record or,
    for a damaged line (cut off by a crash, edited by hand), ``None`` and the problem."""

    records: list[dict[str, Any] | None]
    lines: list[int]  # the file line of each match, from 1
    problems: dict[int, str]  # match index -> what is wrong with its line

    @property
    def damaged(self) -> list[int]:
        """The file lines that hold no readable match."""
        return [self.lines[k] for k in sorted(self.problems)]


def scan_jsonl(path: str | Path) -> ReplayScan:
    """Every non-blank line of the replay file ``path`` as a match: its checked record, or the
    problem of a damaged line (a missing file is still an error)."""
    scan = ReplayScan([], [], {})
    with _open_replay(path) as f:
        for number, record, problem in _parse_lines(f, f"{path}"):
            if problem is not None:
                scan.problems[len(scan.records)] = problem
            scan.records.append(record)
            scan.lines.append(number)
    return scan


def _parse_lines(
    lines: Iterable[str | bytes], source: str | None
) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """Each non-blank line's number and checked record, or ``None`` and its problem."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}" if source is None else f"{source}, line {number}"
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
        except UnicodeDecodeError:
            yield number, None, f"{where}: not UTF-8 text"
            continue
        try:
            record = json.loads(text)
            check_record(record, where)
        except ReplayError as exc:
            yield number, None, str(exc)
        except (ValueError, RecursionError) as exc:  # bad JSON, too deep, a too long number
            yield number, None, f"{where}: not valid JSON ({str(exc)[:200]})"
        else:
            yield number, record, None


def parse_records(
    lines: Iterable[str | bytes], source: str | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """The checked match records of replay lines (JSON lines, blank lines skipped).

    Errors name ``source`` (if given) and the line; more than ``limit`` records is an error.
    """
    records = []
    for _, record, problem in _parse_lines(lines, source):
        if problem is not None:
            raise ReplayError(problem)
        records.append(record)
        if limit is not None and len(records) > limit:
            raise ReplayError(f"the file holds more than {limit} matches; split it")
    return records


def check_record(record: Any, where: str = "record") -> None:
    """Check the shape of a match record (not its moves: see :func:`resimulate`)."""
    if not isinstance(record, dict):
        raise ReplayError(f"{where}: a match record must be a JSON object, got {type(record)}")
    if record.get("format") != FORMAT:
        raise ReplayError(f"{where}: format must be {FORMAT!r}, got {record.get('format')!r}")
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        raise ReplayError(f"{where}: missing key(s) {missing}")
    if not isinstance(record["hands"], list):
        raise ReplayError(f"{where}: 'hands' must be a list")
    for key in ("final_scores", "agents"):
        if not isinstance(record[key], list):
            raise ReplayError(f"{where}: {key!r} must be a list")
    for h, hand in enumerate(record["hands"]):
        if not isinstance(hand, dict) or {"deal", "events", "result"} - set(hand):
            raise ReplayError(f"{where}: hand {h} needs the keys 'deal', 'events' and 'result'")
        if not isinstance(hand["events"], list):
            raise ReplayError(f"{where}: hand {h}: 'events' must be a list")
        for i, event in enumerate(hand["events"]):
            if not isinstance(event, dict) or {"seat", "action", "scores"} - set(event):
                raise ReplayError(
                    f"{where}: hand {h} event {i} needs the keys 'seat', 'action' and 'scores'"
                )
            if not isinstance(event["scores"], list):
                raise ReplayError(f"{where}: hand {h} event {i}: 'scores' must be a list")


def record_rules(record: dict[str, Any]) -> Rules:
    """The :class:`Rules` of a match record."""
    return Rules.from_dict(record["rules"])


# ---------------------------------------------------------------------- re-simulation


def resimulate(record: dict[str, Any], match: int | None = None) -> list[int]:
    """Replay a record's deals and actions through the engine, checking every recorded score.

    Raises :class:`ReplayError` at the first difference, naming the match (``match`` is its
    index in the file, for the message), hand and event. Returns the final scores.
    """
    where_match = f"match {match}" if match is not None else "match"
    check_record(record, where_match)
    rules = record_rules(record)
    hands = record["hands"]
    try:
        state = BergenState(rules, seed=0, deals=[h["deal"] for h in hands])
    except BergenError as exc:
        raise ReplayError(f"{where_match}: bad deal ({exc})") from None
    for h, hand in enumerate(hands):
        events = hand["events"]
        if state.terminal:
            raise ReplayError(f"{where_match}: the match ended before hand {h}")
        if state.hand_number != h:
            raise ReplayError(f"{where_match}, hand {h}: the engine is in hand {state.hand_number}")
        for i, event in enumerate(events):
            where = f"{where_match}, hand {h}, event {i}"
            seat, action = event["seat"], event["action"]
            if "move" in event and event["move"] != _safe_action_str(action):
                raise ReplayError(
                    f"{where}: move text {event['move']!r} does not match action {action!r}"
                )
            if state.terminal or state.hand_number != h:
                raise ReplayError(f"{where}: the hand already ended at the previous event")
            if seat != state.current_player:
                raise ReplayError(
                    f"{where}: recorded seat {seat} but the engine has player_"
                    f"{state.current_player} on turn"
                )
            try:
                state.apply_action(action)
            except BergenError as exc:
                raise ReplayError(f"{where}: {exc}") from None
            if state.scores != list(event["scores"]):
                raise ReplayError(
                    f"{where} (player_{seat} {_safe_action_str(action)}): recorded scores "
                    f"{list(event['scores'])}, the engine gives {state.scores}"
                )
        _check_hand_end(state, hand["result"], h, f"{where_match}, hand {h}")
    if state.scores != list(record["final_scores"]):
        raise ReplayError(
            f"{where_match}: recorded final scores {record['final_scores']}, "
            f"the engine gives {state.scores}"
        )
    winner = state.winner if state.terminal else None
    if winner != record["winner"]:
        raise ReplayError(
            f"{where_match}: recorded winner {record['winner']}, the engine gives {winner}"
        )
    return state.scores[:]


def _check_hand_end(state: BergenState, result: Any, h: int, where: str) -> None:
    ended = len(state.hand_results) > h
    if result is None:
        if ended or state.terminal:
            raise ReplayError(f"{where}: recorded as unfinished, but the engine ended it")
        return
    if not isinstance(result, dict):
        raise ReplayError(f"{where}: a hand's result must be an object or null, got {result!r}")
    reason = result.get("reason")
    if reason == "target":
        if ended or not state.terminal:
            raise ReplayError(f"{where}: recorded as cut short by the target, the engine differs")
        expected = {"winner": state.winner}
        got = {"winner": result.get("winner")}
    else:
        if not ended:
            raise ReplayError(f"{where}: recorded result {result}, but the engine did not end it")
        expected = result_dict(state.hand_results[h])
        got = {k: result.get(k) for k in expected}
    if got != expected:
        raise ReplayError(f"{where}: recorded result {got}, the engine gives {expected}")


def _safe_action_str(action: Any) -> str:
    try:
        return action_str(action)
    except BergenError:
        return repr(action)


# ---------------------------------------------------------------------- reading a hand


def hands_at_end(deal: dict[str, Any], events: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Each seat's tiles after a hand's events (from its deal; no engine needed)."""
    hands = [list(h) for h in deal["hands"]]
    boneyard = deal["boneyard"]
    drawn = 0
    for event in events:
        seat, action = event["seat"], event["action"]
        if action < NUM_PLAY_ACTIONS:
            hands[seat].remove(action >> 1)
        elif action == DRAW:
            hands[seat].append(boneyard[drawn])
            drawn += 1
        elif action != PASS:
            n = action - DOUBLE_PLAY
            hands[seat].remove(DOUBLE_ID[n])
            hands[seat].remove(DOUBLE_ID[n])
    return [sorted(h) for h in hands]
