"""One error style for every command line: a user error is one line naming the problem, exit 2.

Each program is run as a subprocess (``python -m training.<name>``, what the console scripts
``bergen-<name>`` call) so that the whole path to the exit status is covered, tracebacks included.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from training.cli import EXTRA_MODULES, MissingExtraError, UsageError, require_extra, run

ROOT = Path(__file__).resolve().parents[1]


def run_module(module: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"training.{module}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess, prog: str, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def replay_garbage(tmp_path: Path) -> Path:
    return write(tmp_path / "bad.jsonl", "not json\n")


# (module, arguments, words the one line must hold); {tmp} is a fresh folder
CASES = [
    ("train", ["--config", "configs/quick.yaml", "--set", "nsteps=8"], ["unknown key 'nsteps'"]),
    ("train", ["--config", "{tmp}/none.yaml"], ["none.yaml", "does not exist"]),
    (
        "train",
        ["--config", "{tmp}/bad.yaml"],
        ["bad.yaml", "unknown key 'learning_rat' (did you mean 'learning_rate'?)"],
    ),
    ("train", ["--config", "configs/quick.yaml", "--set", "opponents=[nobody]"], ["nobody"]),
    ("train", ["--resume", "{tmp}"], ["config.yaml", "does not exist"]),
    ("train", [], ["exactly one of --config or --resume"]),
    ("train", ["--config", "configs/quick.yaml", "--seed", "-1"], ["'seed'", "-1"]),
    ("train", ["--config", "configs/quick.yaml", "--run-dir", "{tmp}/bad.yaml"], ["bad.yaml"]),
    ("evaluate", ["--agents", "greedy", "nobody"], ["nobody", "known kinds"]),
    ("evaluate", ["--agents", "greedy", "random", "--matches", "x"], ["--matches", "'x'"]),
    ("evaluate", ["--agents", "greedy", "random", "--json", "{tmp}/no/r.json"], ["no' does not"]),
    ("play", ["--opponents", "nobody"], ["unknown agent 'nobody'"]),
    ("play", ["--opponents", "random", "--seat", "2"], ["--seat 2 is out of range"]),
    ("replay", ["{tmp}/none.jsonl"], ["none.jsonl", "does not exist"]),
    ("replay", ["{tmp}/bad.jsonl"], ["bad.jsonl"]),
    ("train_rllib", ["--config", "{tmp}/none.yaml"], ["none.yaml", "does not exist"]),
    ("train_rllib", ["--config", "{tmp}/bad.yaml"], ["bad.yaml", "learning_rat"]),
]


@pytest.mark.parametrize(("module", "args", "words"), CASES)
def test_user_error_is_one_line_and_exit_2(
    module: str, args: list[str], words: list[str], tmp_path: Path
) -> None:
    write(tmp_path / "bad.yaml", "default:\n  learning_rat: 0.1\n")
    write(tmp_path / "bad.jsonl", "not json\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = run_module(module, *args)
    assert_one_line_error(proc, f"bergen-{module.replace('_', '-')}", *words)


def test_run_formats_usage_errors(capsys: pytest.CaptureFixture) -> None:
    def main(argv: list[str] | None) -> int:
        raise UsageError(f"bad option {argv[0]!r}")

    assert run("prog", main, ["--x"]) == 2
    assert capsys.readouterr().err == "prog: error: bad option '--x'\n"
    assert run("prog", lambda argv: None, []) == 0
    assert run("prog", lambda argv: 3, []) == 3


def test_run_leaves_other_errors_alone() -> None:
    """A bug is not a user error: its traceback stays."""

    def main(argv: list[str] | None) -> int:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        run("prog", main, [])


def test_missing_extra_names_the_feature_and_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(EXTRA_MODULES, "demo", ("no_such_module_xyz", "json"))
    with pytest.raises(MissingExtraError) as exc:
        require_extra("demo", "--feature")
    message = str(exc.value)
    assert "--feature needs the [demo] extra" in message
    assert "(missing: no_such_module_xyz);" in message
    assert "pip install 'bergen_env[demo]'" in message
    require_extra("demo", "--feature", ["json"])  # present: no error
