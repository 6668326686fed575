"""The ladder benchmark: pairs, and one agent against copies of another with 3-4 players."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import ladder


@pytest.mark.parametrize(
    ("players", "partnerships", "names"),
    [
        (2, False, ["greedy", "random"]),
        (3, False, ["greedy", "random#1", "random#2"]),
        (4, False, ["greedy", "random#1", "random#2", "random#3"]),
        (4, True, ["greedy", "random"]),
    ],
)
def test_ladder_seats_copies_of_the_opponent(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    players: int,
    partnerships: bool,
    names: list[str],
) -> None:
    out = tmp_path / "ladder.json"
    argv = [
        "--players",
        str(players),
        "--pair",
        "greedy",
        "random",
        "--matches",
        "24",
        "--workers",
        "1",
        "--json",
        str(out),
    ]
    assert ladder.main(argv + (["--partnerships"] if partnerships else [])) == 0
    agents = json.loads(out.read_text())["greedy vs random"]["agents"]
    assert list(agents) == names
    row = capsys.readouterr().out.strip().splitlines()[-1]
    assert row.startswith("| greedy | random | ")
    assert f"| {agents['greedy']['matches']} | " in row


def test_ladder_agent_against_itself(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--players", "3", "--pair", "random", "random", "--matches", "6", "--workers", "1"]
    assert ladder.main(argv) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("| random | random | ")
