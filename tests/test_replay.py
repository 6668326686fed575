"""Replays: recording, JSON-lines files, re-simulation through the engine, the replay CLI."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import numpy as np
import pytest

from bergen_env.actions import DRAW, PASS
from bergen_env.engine import BergenState
from bergen_env.replay import (
    FORMAT,
    MatchRecorder,
    ReplayError,
    hands_at_end,
    read_jsonl,
    resimulate,
    write_jsonl,
)
from bergen_env.rules import PRESETS, Rules
from bergen_env.training.replay import main as replay_main
from bergen_env.training.replay import match_text

SEATINGS = [(2, False), (3, False), (4, False), (4, True)]


def play_recorded(
    rules: Rules,
    seed: int,
    max_actions: int | None = None,
    check_hands: bool = False,
    max_hands: int = 40,
) -> tuple[BergenState, dict]:
    """A match of uniformly random legal moves, recorded; stopped early after ``max_actions``
    or when hand ``max_hands`` is dealt (random play may never reach the target, e.g. in
    double_set with 4 players the leftover penalties keep every score low)."""
    state = BergenState(rules, seed=seed)
    recorder = MatchRecorder(state, [f"bot{s}" for s in range(rules.num_players)], seed=seed)
    rng = np.random.default_rng(seed + 1000)
    count = 0
    while (
        not state.terminal
        and (max_actions is None or count < max_actions)
        and state.hand_number < max_hands
    ):
        seat = state.current_player
        legal = state.legal_actions()
        action = legal[int(rng.integers(len(legal)))]
        state.apply_action(action)
        recorder.record(seat, action)
        count += 1
        hand = recorder.current_hand
        if check_hands and hand["result"] is None and hand["events"]:
            # the tiles tracked from the deal and the events are the engine's hands
            tracked = hands_at_end(hand["deal"], hand["events"])
            assert tracked == [state.hand_tiles(s) for s in range(rules.num_players)]
    return state, recorder.finish()


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_resimulation_reproduces_every_score(
    preset: str, players: int, partnerships: bool, tmp_path: Path
) -> None:
    rules = Rules.preset(preset, num_players=players, partnerships=partnerships)
    played = [play_recorded(rules, seed) for seed in range(3)]
    path = tmp_path / "m.jsonl"
    assert write_jsonl(path, [record for _, record in played]) == 3
    records = read_jsonl(path)
    assert len(records) == 3
    for k, ((state, _), record) in enumerate(zip(played, records)):
        assert record["format"] == FORMAT
        assert Rules.from_dict(record["rules"]) == rules
        assert record["winner"] == (state.winner if state.terminal else None)
        assert len(record["hands"]) == state.hand_number + bool(state.moves)
        events = sum(len(h["events"]) for h in record["hands"])
        assert events == sum(len(h["events"]) for h in played[k][1]["hands"]) > 0
        assert resimulate(record, match=k) == state.scores == record["final_scores"]


def test_every_kind_of_hand_end_is_recorded_and_replayed() -> None:
    """Domino, blocked and target-mid-hand endings all appear and re-simulate."""
    reasons: set[str] = set()
    for preset in PRESETS:
        for seed in range(6):
            _, record = play_recorded(Rules.preset(preset), seed)
            resimulate(record)
            reasons |= {h["result"]["reason"] for h in record["hands"]}
    assert reasons == {"domino", "blocked", "target"}


@pytest.mark.parametrize("preset", PRESETS)
def test_hands_tracked_from_deal_and_events_match_the_engine(preset: str) -> None:
    for seed in range(2):
        play_recorded(Rules.preset(preset, num_players=2), seed, check_hands=True)


def test_double_play_is_recorded_and_replayed() -> None:
    rules = Rules.preset("double_set", num_players=2)
    for seed in range(200):
        state, record = play_recorded(rules, seed, check_hands=True)
        actions = [e["action"] for h in record["hands"] for e in h["events"]]
        if any(a > PASS for a in actions):
            assert resimulate(record) == state.scores
            return
    pytest.fail("no double play in 200 random double_set matches")


@pytest.mark.parametrize("stop", [1, 7, 40])
def test_unfinished_match_replays(stop: int) -> None:
    state, record = play_recorded(Rules.preset("standard", num_players=3), seed=4, max_actions=stop)
    assert not state.terminal and record["winner"] is None
    assert record["hands"][-1]["events"], "a dealt but unplayed hand is not recorded"
    assert resimulate(record) == state.scores


def test_unfinished_match_right_after_a_hand_end() -> None:
    rules = Rules.preset("standard")
    _, full = play_recorded(rules, seed=2)
    first_hand = len(full["hands"][0]["events"])
    assert len(full["hands"]) > 1
    state, record = play_recorded(rules, seed=2, max_actions=first_hand)
    assert state.hand_number == 1 and len(record["hands"]) == 1
    assert record["hands"][0]["result"] == full["hands"][0]["result"]
    assert resimulate(record) == state.scores


def _events(record: dict) -> list[tuple[int, int, dict]]:
    return [
        (h, i, e) for h, hand in enumerate(record["hands"]) for i, e in enumerate(hand["events"])
    ]


@pytest.fixture(scope="module")
def record() -> dict:
    _, rec = play_recorded(Rules.preset("traditional", num_players=3), seed=1)
    assert len(rec["hands"]) >= 3
    return rec


def test_tampered_score_is_detected_at_its_event(record: dict) -> None:
    h, i, _ = _events(record)[len(_events(record)) // 2]
    bad = copy.deepcopy(record)
    bad["hands"][h]["events"][i]["scores"][0] += 1
    with pytest.raises(ReplayError, match=rf"match 5, hand {h}, event {i} .*recorded scores"):
        resimulate(bad, match=5)


def _swap_action(rec: dict) -> str:
    """Replace a play by a draw or pass that is illegal there."""
    for h, i, event in _events(rec):
        if event["action"] < DRAW and i > 0:
            event["action"] = PASS
            event["move"] = "pass"
            return f"hand {h}, event {i}: .*illegal"
    raise AssertionError("no play found")


def _wrong_seat(rec: dict) -> str:
    h, i, event = _events(rec)[3]
    event["seat"] = (event["seat"] + 1) % 3
    return f"hand {h}, event {i}: recorded seat"


def _wrong_move_text(rec: dict) -> str:
    h, i, event = _events(rec)[2]
    event["move"] = "[6|6]>left" if event["move"] != "[6|6]>left" else "draw"
    return f"hand {h}, event {i}: move text"


def _wrong_result(rec: dict) -> str:
    rec["hands"][0]["result"]["points"] = [9, 9, 9]
    return "hand 0: recorded result"


def _wrong_winner(rec: dict) -> str:
    rec["winner"] = (rec["winner"] + 1) % 3
    return "recorded winner"


def _dropped_event(rec: dict) -> str:
    rec["hands"][0]["events"].pop()
    return "hand 0"


def _bad_deal(rec: dict) -> str:
    rec["hands"][1]["deal"]["boneyard"].pop()
    return "bad deal"


@pytest.mark.parametrize(
    "tamper",
    [
        _swap_action,
        _wrong_seat,
        _wrong_move_text,
        _wrong_result,
        _wrong_winner,
        _dropped_event,
        _bad_deal,
    ],
)
def test_tampered_record_is_detected(record: dict, tamper) -> None:
    bad = copy.deepcopy(record)
    pattern = tamper(bad)
    with pytest.raises(ReplayError, match=pattern):
        resimulate(bad)
    resimulate(record)  # the original is untouched and still replays


def test_recorder_must_start_before_any_action() -> None:
    state = BergenState(Rules.preset("standard"), seed=0)
    state.apply_action(state.legal_actions()[0])
    with pytest.raises(ReplayError, match="before any action"):
        MatchRecorder(state, ["a", "b"])
    with pytest.raises(ReplayError, match="2 seats"):
        MatchRecorder(BergenState(Rules.preset("standard"), seed=0), ["a"])


def test_recorder_rejects_a_move_that_was_not_applied() -> None:
    state = BergenState(Rules.preset("standard"), seed=0)
    recorder = MatchRecorder(state, ["a", "b"])
    seat, action = state.current_player, state.legal_actions()[0]
    state.apply_action(action)
    with pytest.raises(ReplayError, match="last move"):
        recorder.record(seat, action + 1)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"format": "bergen-replay/1"\n', "line 2: not valid JSON"),
        ('{"format": "other/9"}\n', "line 2: format must be"),
        ('{"format": "bergen-replay/1"}\n', "line 2: missing key"),
        ("[1, 2]\n", "line 2: a match record must be a JSON object"),
    ],
)
def test_read_jsonl_names_file_and_line(
    record: dict, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n" + content)
    with pytest.raises(ReplayError, match=f"bad.jsonl, {message}"):
        read_jsonl(path)


def test_read_jsonl_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        read_jsonl(tmp_path / "nope.jsonl")


def test_write_jsonl_appends(record: dict, tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    write_jsonl(path, [record])
    write_jsonl(path, [record, record], append=True)
    assert len(read_jsonl(path)) == 3
    write_jsonl(path, [record])
    assert read_jsonl(path) == [record]


# ---------------------------------------------------------------------- the replay CLI


def test_match_text_prints_every_move_and_end(record: dict) -> None:
    text = match_text(record, 0, show_hands=True)
    events = _events(record)
    move_lines = [
        line for line in text.splitlines() if line.startswith("  ") and ". player_" in line
    ]
    assert len(move_lines) == len(events)
    for line, (_, _, event) in zip(move_lines, events):
        assert f"player_{event['seat']} (bot{event['seat']}) {event['move']}" in line
        assert line.endswith(f"scores {event['scores']}")
    for h, hand in enumerate(record["hands"]):
        assert f"=== hand {h}: player_{hand['events'][0]['seat']} leads ===" in text
        assert f"=== hand {h} ends: " in text
    assert text.count("dealt:") == 3 * len(record["hands"])
    assert "boneyard (draw order)" in text
    assert text.splitlines()[-1].startswith(f"match over: player_{record['winner']} reached")


def test_replay_cli_prints_a_match(record: dict, tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    write_jsonl(path, [record, record])
    out = io.StringIO()
    assert replay_main([str(path), "--match", "1"], stdout=out) == 0
    assert out.getvalue().startswith("match 1: traditional (3p)")
    assert out.getvalue().strip() == match_text(record, 1)


def test_replay_cli_verify(record: dict, tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    bad = copy.deepcopy(record)
    bad["final_scores"][0] += 1
    write_jsonl(path, [record, bad])
    out = io.StringIO()
    assert replay_main([str(path), "--verify"], stdout=out) == 1
    assert "match 1: recorded final scores" in out.getvalue()
    write_jsonl(path, [record])
    out = io.StringIO()
    assert replay_main([str(path), "--verify"], stdout=out) == 0
    assert "all 1 match(es) reproduce every recorded score" in out.getvalue()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--match", "2"], "--match 2 is out of range"),
        (["--match", "-1"], "--match -1 is out of range"),
    ],
)
def test_replay_cli_match_out_of_range(
    record: dict, tmp_path: Path, capsys: pytest.CaptureFixture, args: list[str], message: str
) -> None:
    path = tmp_path / "m.jsonl"
    write_jsonl(path, [record, record])
    with pytest.raises(SystemExit) as exc:
        replay_main([str(path), *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_replay_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        replay_main([str(tmp_path / "none.jsonl")])
    assert exc.value.code == 2
    assert "none.jsonl' does not exist" in capsys.readouterr().err
