"""Playing in the terminal: whole matches through ``bergen_env.training.play`` with piped input."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bergen_env.engine import BergenState
from bergen_env.observation import Encoder
from bergen_env.replay import read_jsonl, resimulate
from bergen_env.rules import Rules
from bergen_env.training.play import EndOfInput, HumanAgent, main, seat_opponents

ROOT = Path(__file__).resolve().parents[1]
#: Bad entries first, then choice 1 (always a legal move number) for the rest of the match.
SCRIPT = "x\n99\n\n0\n" + "1\n" * 3000


def run_play(args: list[str], script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bergen_env.training.play", *args],
        input=script,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--opponents", "random", "--seed", "11"],
        ["--opponents", "greedy", "--players", "3", "--rules", "traditional", "--seed", "3"],
    ],
)
def test_whole_match_with_piped_input(args: list[str], tmp_path: Path) -> None:
    replay = tmp_path / "match.jsonl"
    proc = run_play([*args, "--replay", str(replay)], SCRIPT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    # the bad entries were answered, and the same question asked again
    assert "'x' is not a number: type the number of a move" in out
    assert "99 is not a move number: choose 1 to" in out
    assert "please type the number of a move" in out
    assert "0 is not a move number" in out
    first_prompt = out.index("your move (1-")
    assert out.index("'x' is not a number") > first_prompt
    # the position shown on the person's turn
    for label in (
        "line     :",
        "ends     :",
        "tiles    :",
        "boneyard :",
        "scores   :",
        "your hand:",
    ):
        assert label in out
    assert "  1) " in out
    # hands and match announced with their reasons
    assert re.search(r"=== hand 0: .* leads? with \[(\d)\|\1\]", out)
    assert re.search(
        r"=== hand 0 ends: (domino by player_\d|blocked: |the match ends mid-hand)", out
    )
    assert re.search(r"match over: player_\d reached the target \d+ with \d+", out)
    assert ("you win!" in out) != ("you lose." in out)
    # opponents' moves are shown, their drawn tiles are not
    assert re.search(r"player_1 \(\w+\) plays \[\d\|\d\]>(left|right)", out)
    assert not re.search(r"player_\d \(\w+\) draws \[", out)
    # the saved replay is the match just played, and the engine reproduces it
    [record] = read_jsonl(replay)
    assert record["agents"][0] == "human"
    assert record["winner"] is not None
    assert resimulate(record) == record["final_scores"]
    assert f"with {max(record['final_scores'])};" in out


def test_end_of_input_stops_cleanly(tmp_path: Path) -> None:
    replay = tmp_path / "m.jsonl"
    proc = run_play(
        ["--opponents", "random", "--seed", "2", "--replay", str(replay)], "1\nfoo\n1\n"
    )
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert "input ended: match abandoned in hand 0" in proc.stdout
    assert "match unfinished" in proc.stdout
    [record] = read_jsonl(replay)  # the unfinished match is saved and replays
    assert record["winner"] is None
    assert resimulate(record) == record["final_scores"]


def _play(args: list[str], script: str) -> str:
    out = io.StringIO()
    assert main(args, stdin=io.StringIO(script), stdout=out) == 0
    return out.getvalue()


def test_partnerships_seat_and_determinism() -> None:
    args = ["--opponents", "greedy", "random", "heuristic", "--players", "4", "--partnerships"]
    args += ["--seat", "2", "--seed", "9"]
    out = _play(args, SCRIPT)
    assert "you are player_2, side 0 with player_0" in out
    assert "player_0 (greedy)" in out and "player_1 (random)" in out
    assert "player_3 (heuristic)" in out
    assert "--- hand 0, your turn (player_2) ---" in out
    assert re.search(r"match over: side \d \(player_\d\+player_\d\) reached the target", out)
    assert _play(args, SCRIPT) == out  # same seed, same input: the same match


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--opponents", "random", "random"], "--opponents: got 2 agents for 1 opponent seat"),
        (["--opponents", "random", "--players", "3", "--seat", "3"], "--seat 3 is out of range"),
        (["--opponents", "nosuchagent"], "unknown agent 'nosuchagent'"),
        (["--opponents", "random", "--players", "3", "--partnerships"], "needs 4 players"),
        (["--opponents", "ppo:missing.zip"], "policy file .missing.zip. does not exist"),
        # policy files that disagree with the rules given or with each other are named
        (
            ["--opponents", "policy:policies/fives_2p.safetensors", "--rules", "standard"],
            r"policy file 'policies/fives_2p.safetensors' was trained for 'fives' rules",
        ),
        (
            ["--opponents", "policy:policies/fives_2p.safetensors", "--players", "3"],
            r"'policies/fives_2p.safetensors' was trained for 'fives' rules, 2 players but is "
            r"asked to play 'fives' rules, 3 players",
        ),
        (
            [
                "--opponents",
                "policy:policies/fives_2p.safetensors",
                "policy:policies/standard_3p.safetensors",
            ],
            r"policy:policies/fives_2p.safetensors \('fives' rules, 2 players\) and "
            r"policy:policies/standard_3p.safetensors \('standard' rules, 3 players\) were "
            r"trained for different rules \(num_players: 2 vs 3; ",
        ),
    ],
)
def test_bad_arguments_name_the_problem(
    args: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args, stdin=io.StringIO(""), stdout=io.StringIO())
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert re.search(message, err), err


def test_seat_opponents() -> None:
    assert seat_opponents(["a"], 3, 1) == ["a", None, "a"]
    assert seat_opponents(["a", "b", "c"], 4, 0) == [None, "a", "b", "c"]
    with pytest.raises(ValueError, match="got 2 agents for 3 opponent seat"):
        seat_opponents(["a", "b"], 4, 0)


def _human_turn(script: str) -> tuple[int | None, str, list[int]]:
    """One decision of a HumanAgent in a 2-player position with several legal moves."""
    rules = Rules.preset("standard", voluntary_draw=True)
    state = BergenState(rules, seed=0)
    state.apply_action(state.legal_actions()[0])
    while len(state.legal_actions()) < 2:
        state.apply_action(state.legal_actions()[0])
    seat = state.current_player
    out = io.StringIO()
    agent = HumanAgent(io.StringIO(script), out)
    agent.reset(rules, seat, np.random.default_rng(0))
    try:
        action = agent.act(
            Encoder(rules).observe(state, seat), state.legal_mask(), state.public_view(seat)
        )
    except EndOfInput:
        action = None
    return action, out.getvalue(), state.legal_actions()


def test_human_agent_asks_again_after_bad_input() -> None:
    action, out, legal = _human_turn(" abc \n-1\n\n2\n")
    assert action == legal[1]
    assert "'abc' is not a number" in out
    assert "-1 is not a move number" in out
    assert "please type the number of a move" in out
    assert out.count(f"your move (1-{len(legal)}): ") == 4


def test_human_agent_end_of_input() -> None:
    action, out, _ = _human_turn("zz\n")
    assert action is None
    assert "'zz' is not a number" in out


@pytest.mark.parametrize("word", ["q", "quit", " Q ", "QUIT"])
def test_human_agent_quits(word: str) -> None:
    action, out, _ = _human_turn(f"abc\n{word}\n1\n")
    assert action is None  # Quit is an EndOfInput: the match stops
    assert out.count("your move (1-") == 2  # the line after quitting is never read


@pytest.mark.parametrize("word", ["h", "help", "?", "HELP"])
def test_human_agent_help_then_asks_again(word: str) -> None:
    action, out, legal = _human_turn(f"{word}\n2\n")
    assert action == legal[1]
    assert "q, quit" in out and "h, help, ?" in out and ">left" in out and "draw" in out
    assert out.count(f"your move (1-{len(legal)}): ") == 2


def test_quit_ends_the_match_and_keeps_the_replay(tmp_path: Path) -> None:
    replay = tmp_path / "m.jsonl"
    proc = run_play(
        ["--opponents", "random", "--seed", "2", "--replay", str(replay)], "h\n1\nquit\n1\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "q, quit" in proc.stdout
    assert "you quit: match abandoned in hand 0" in proc.stdout
    [record] = read_jsonl(replay)
    assert record["winner"] is None
    assert resimulate(record) == record["final_scores"]


def test_rules_come_from_the_policy_file() -> None:
    """Without --rules the opponents' policy file decides the rules (and the player count)."""
    out = _play(["--opponents", "policy:policies/fives_2p.safetensors", "--seed", "1"], "q\n")
    assert out.startswith("Bergen: fives (2p)")
    out = _play(["--opponents", "policy:policies/partners_4p.safetensors", "--seed", "1"], "q\n")
    assert out.startswith("Bergen: standard (4p partnerships)")
