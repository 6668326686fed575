"""One error style for every command line: a user error is one line naming the problem, exit 2.

Each program is run as a subprocess (``python -m bergen_env.training.<name>``, what the console
scripts ``bergen-<name>`` call) so that the whole path to the exit status is covered, tracebacks
included.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
import tomllib

from bergen_env.training import cli
from bergen_env.training.cli import (
    EXTRA_MODULES,
    PROGRAMS,
    MissingExtraError,
    UsageError,
    require_extra,
    run,
)

ROOT = Path(__file__).resolve().parents[1]


def run_module(module: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"bergen_env.training.{module}", *args],
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
    ("export_policy", ["{tmp}/none.zip"], ["none.zip", "does not exist"]),
    ("export_policy", ["a.zip", "b.zip", "--out", "{tmp}/x.safetensors"], ["--out takes one"]),
    ("evaluate", ["--agents", "policy:{tmp}/none.safetensors", "greedy"], ["none.safetensors"]),
]


def skip_without_extras(module: str) -> None:
    """Skip, naming the extra, where a program's extras are not installed (it would stop at the
    missing extra, before the error under test)."""
    for extra, modules in PROGRAMS[module].needs:
        missing = [m for m in modules or EXTRA_MODULES[extra] if find_spec(m) is None]
        if missing:
            pytest.skip(f"needs the [{extra}] extra (missing: {', '.join(missing)})")


@pytest.mark.parametrize(("module", "args", "words"), CASES)
def test_user_error_is_one_line_and_exit_2(
    module: str, args: list[str], words: list[str], tmp_path: Path
) -> None:
    skip_without_extras(module)
    write(tmp_path / "bad.yaml", "default:\n  learning_rat: 0.1\n")
    write(tmp_path / "bad.jsonl", "not json\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = run_module(module, *args)
    assert_one_line_error(proc, PROGRAMS[module].prog, *words)


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


# ------------------------------------------------ `python -m` is the console script


def run_without(modules: list[str], module: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m bergen_env.training.<module> ARGS`` with ``modules`` made unimportable (as if
    their extra were not installed); runpy is what ``python -m`` calls."""
    code = (
        "import runpy, sys\n"
        f"for name in {modules!r}:\n"
        "    sys.modules[name] = None\n"
        f"sys.argv = ['{module}.py', *{list(args)!r}]\n"
        f"runpy.run_module('bergen_env.training.{module}', run_name='__main__', alter_sys=True)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


# (module, modules made unimportable, arguments, the extra and module the line names)
MISSING_EXTRA_CASES = [
    ("train_rllib", ["ray"], ["--config", "configs/rllib_selfplay.yaml"], "[rllib]", "ray"),
    ("train", ["torch"], ["--config", "configs/quick.yaml"], "[train]", "torch"),
    ("expert_iteration", ["torch"], ["--help"], "[train]", "torch"),
    ("tune_heuristic", ["numba"], ["--help"], "[vector]", "numba"),
    ("export_policy", ["torch"], ["policies/standard_2p.zip"], "[train]", "torch"),
    (
        "evaluate",
        ["sb3_contrib"],
        ["--agents", "ppo:policies/standard_2p.zip", "random"],
        "[train]",
        "sb3_contrib",
    ),
    (
        "play",
        ["ray"],
        ["--opponents", "rllib:runs/x/checkpoints/final"],
        "[rllib]",
        "ray",
    ),
]


@pytest.mark.parametrize(("module", "hidden", "args", "extra", "missing"), MISSING_EXTRA_CASES)
def test_python_m_without_an_extra_is_one_line(
    module: str, hidden: list[str], args: list[str], extra: str, missing: str
) -> None:
    proc = run_without(hidden, module, *args)
    prog = PROGRAMS[module].prog
    assert_one_line_error(proc, prog, f"needs the {extra} extra", f"missing: {missing}")
    assert f"pip install 'bergen_env{extra}'" in proc.stderr


def test_every_program_module_runs_as_its_console_script() -> None:
    """Each module with a ``main`` is in PROGRAMS and hands ``python -m`` to ``program`` before
    any import of its own (so a missing extra cannot end in a traceback); each console script of
    training/ is ``program`` of its module."""
    with_main = set()
    for path in sorted((ROOT / "training").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            continue
        with_main.add(path.stem)
        body = [n for n in tree.body if not isinstance(n, ast.Expr)]  # the docstring
        first, guard = body[0], body[1]
        assert isinstance(first, ast.ImportFrom) and first.module == "__future__", path.name
        assert ast.unparse(guard.test) == "__name__ == '__main__'", path.name
        assert f"raise SystemExit(program('{path.stem}'))" in ast.unparse(guard), path.name
        last = ast.unparse(tree.body[-1])
        assert "__main__" not in last, f"{path.name}: a second __main__ block"
    assert with_main == set(PROGRAMS)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for script, target in scripts.items():
        module, _, func = target.partition(":")
        if module != "bergen_env.training.cli":
            continue
        source = inspect.getsource(getattr(cli, func))
        name = next(m for m, p in PROGRAMS.items() if p.prog == script)
        assert f'program("{name}")' in source, script


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["policy:policies/fives_2p.safetensors", "policy:policies/standard_2p.safetensors"],
            ["policy:policies/fives_2p.safetensors ('fives' rules, 2 players)", "different rules"],
        ),
        (
            ["policy:policies/fives_2p.safetensors", "greedy", "--rules", "standard"],
            ["policy file 'policies/fives_2p.safetensors' was trained for 'fives' rules"],
        ),
        (
            ["policy:policies/fives_2p.safetensors", "greedy", "--players", "4"],
            ["'fives' rules, 2 players but is asked to play 'fives' rules, 4 players"],
        ),
        (
            ["policy:policies/fives_2p.safetensors", "greedy", "--rule-override", "target=31"],
            ["trained with target=61 (playing 31)"],
        ),
    ],
)
def test_policy_files_disagreeing_with_each_other_or_the_rules(
    args: list[str], words: list[str]
) -> None:
    proc = run_module("evaluate", "--agents", *args, "--matches", "2", "--no-progress")
    assert_one_line_error(proc, "bergen-evaluate", *words)


@pytest.mark.parametrize(
    ("module", "prog", "args", "words"),
    [
        ("bergen_env.web.cli", "bergen-web", ["--port", "abc"], ["--port", "'abc'"]),
        ("bergen_env.web.cli", "bergen-web", ["--nosuch"], ["unrecognized", "--nosuch"]),
        ("bergen_env.web.arena_cli", "bergen-arena submit", ["submit"], ["required", "--server"]),
    ],
)
def test_the_web_programs_flag_errors_are_one_line(
    module: str, prog: str, args: list[str], words: list[str]
) -> None:
    if find_spec("starlette") is None or find_spec("uvicorn") is None:
        pytest.skip("needs the [web] extra (missing: starlette or uvicorn)")
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert_one_line_error(proc, prog, *words)
