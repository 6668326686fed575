"""Replay files uploaded to the page: every malformed file is a 400 ``bad_replay`` (never a
500), with the problem named; a file too large to show is refused by its size in hands, events
and frames. The parser is fuzzed with hypothesis from a valid record."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx2")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from bergen_env.engine import BergenState  # noqa: E402
from bergen_env.replay import MatchRecorder  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.web import Limits, TableManager, replay_frames  # noqa: E402
from bergen_env.web.app import create_app  # noqa: E402


def a_record(preset: str = "standard", seed: int = 3) -> dict[str, Any]:
    state = BergenState(Rules.preset(preset), seed=seed)
    recorder = MatchRecorder(state, ["a", "b"], seed=seed)
    while not state.terminal:
        seat, action = state.current_player, state.legal_actions()[0]
        state.apply_action(action)
        recorder.record(seat, action)
    return recorder.finish()


RECORD = a_record()


def client() -> TestClient:
    manager = TableManager(limits=Limits(replays_per_minute=10_000))
    return TestClient(create_app(manager))


def mutated(record: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"format": "bergen-replay/1", "seed": ' + "9" * 5000 + "}",
        json.dumps(mutated(RECORD, ("hands", 0, "events"), 5)),
        json.dumps(mutated(RECORD, ("hands", 0, "events", 0, "scores"), 7)),
        json.dumps(mutated(RECORD, ("final_scores",), 7)),
        json.dumps(mutated(RECORD, ("hands", 0, "deal"), [])),
        json.dumps(mutated(RECORD, ("hands", 0, "deal", "hands"), [[99, 3]])),
        json.dumps(mutated(RECORD, ("rules",), "x")),
        json.dumps(mutated(RECORD, ("hands", 0, "events", 0, "action"), "[1|2]")),
        json.dumps(mutated(RECORD, ("hands", 0, "result"), 3)),
        "\ud800" + json.dumps(RECORD),
    ],
)
def test_a_malformed_upload_is_a_400(text: str) -> None:
    body = json.dumps({"text": text})  # ASCII: a lone surrogate travels escaped
    with client() as c:
        r = c.post("/api/replay", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == "bad_replay", r.text[:500]
    assert "Traceback" not in r.text


def test_a_valid_upload_shows_its_frames() -> None:
    with client() as c:
        r = c.post("/api/replay", json={"text": json.dumps(RECORD)})
    assert r.status_code == 200, r.text[:300]
    hands = RECORD["hands"]  # a frame as each hand is dealt, then one after each event
    assert len(r.json()["frames"]) == len(hands) + sum(len(h["events"]) for h in hands)


def test_uploads_too_large_to_show_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A match over the caps of hands or events, or whose frames would exceed the answer's
    size, is refused by what it holds (before the engine re-simulates it, for the counts)."""
    text = json.dumps(RECORD)
    events = sum(len(h["events"]) for h in RECORD["hands"])
    monkeypatch.setattr(replay_frames, "MAX_EVENTS", events - 1)
    out, problem = replay_frames.upload_frames(text, 0)
    assert out is None and f"{events} events" in problem
    monkeypatch.setattr(replay_frames, "MAX_EVENTS", events)
    monkeypatch.setattr(replay_frames, "MAX_HANDS", len(RECORD["hands"]) - 1)
    out, problem = replay_frames.upload_frames(text, 0)
    assert out is None and "at most" in problem
    monkeypatch.setattr(replay_frames, "MAX_HANDS", 100)
    monkeypatch.setattr(replay_frames, "MAX_FRAMES_BYTES", 1000)
    out, problem = replay_frames.upload_frames(text, 0)
    assert out is None and "exceed 1000 bytes" in problem
    with client() as c:
        r = c.post("/api/replay", json={"text": text})
    assert r.status_code == 400 and "exceed" in r.json()["error"]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*prefix, i))
    return out


PATHS = paths(RECORD)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)


def check(text: str, match: int = 0) -> None:
    out, problem = replay_frames.upload_frames(text, match)
    assert (out is None) != (problem is None)
    if out is not None:
        json.loads(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), JSON, st.integers(-2, 2))
def test_fuzzed_records_give_frames_or_a_problem(
    path: tuple[Any, ...], value: Any, match: int
) -> None:
    """Any value anywhere in a valid record: frames or a named problem, never an exception."""
    check(json.dumps(mutated(RECORD, path, value)), match)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.integers(0, 4000), st.booleans())
def test_fuzzed_text_gives_frames_or_a_problem(noise: str, at: int, replace: bool) -> None:
    """Text cut into, or overwritten at, any place of a valid file."""
    text = json.dumps(RECORD)
    at = at % len(text)
    check(text[:at] + noise + text[at + (len(noise) if replace else 0) :])
