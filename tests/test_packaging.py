"""Packaging: what a wheel holds, and what a fresh virtual environment with only the base install
can run (the console scripts for evaluation, play and replay; training names its extra)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
#: What a wheel is built from, with folders that must stay out of it (benchmarks/ is a package).
SOURCES = ["pyproject.toml", "README.md", "bergen_env", "training", "docs"]
NOT_INSTALLED = ["tests", "benchmarks", "examples", "configs"]


def test_packages_are_the_flat_layout() -> None:
    """One top-level package, ``bergen_env``, from the repository root: ``training/`` is its
    subpackage ``bergen_env.training`` through the link ``bergen_env/training`` (no package-dir
    mapping, which setuptools would install editable with an import hook), and the root is said
    outright, so ``pip install -e .`` is a static .pth line."""
    assert SETUPTOOLS["package-dir"] == {"": "."}
    assert SETUPTOOLS["packages"]["find"]["include"] == ["bergen_env*"]
    link = ROOT / "bergen_env" / "training"
    assert link.is_symlink() and link.readlink() == Path("..", "training")


def test_console_scripts_resolve() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    assert {"bergen-train", "bergen-evaluate", "bergen-play", "bergen-replay"} <= set(scripts)
    for target in scripts.values():
        module, _, func = target.partition(":")
        assert callable(getattr(importlib.import_module(module), func)), target


def test_rules_document_is_the_docs_page() -> None:
    shipped = ROOT / "bergen_env" / "RULES.md"
    assert shipped.is_symlink() and shipped.resolve() == (ROOT / "docs" / "rules.md").resolve()


#: (statement, module made unimportable, the extra its error must name)
OPTIONAL_IMPORTS = [
    ("import bergen_env.openspiel", "pyspiel", "openspiel"),
    ("import bergen_env.vector", "numba", "vector"),
    ("import bergen_env.training.ppo_policies", "torch", "train"),
    ("from bergen_env.ray_tasks import import_ray; import_ray()", "ray", "ray"),
    ("from bergen_env.agents import make_agent; make_agent('ppo:m.zip')", "torch", "train"),
]


@pytest.mark.parametrize(("statement", "hidden", "extra"), OPTIONAL_IMPORTS)
def test_every_optional_import_names_its_extra(statement: str, hidden: str, extra: str) -> None:
    """Without an extra's module, the import fails with one line naming the extra and the
    command that installs it, from PyPI and from a clone."""
    code = f"import sys\nsys.modules[{hidden!r}] = None\n{statement}\n"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert f"[{extra}] extra" in last, last
    assert f"pip install 'bergen_env[{extra}]' (from a clone of the repository: " in last, last
    assert f"pip install -e '.[{extra}]')" in last, last


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sources (and of folders that must not be installed)."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES + NOT_INSTALLED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(
                path, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(path, src / name)
    return src


@pytest.fixture(scope="module")
def wheel_build(sources: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A wheel built (with pip, isolated) from a copy of the sources, and the build's verbose
    output (the build backend's own messages included, whatever pip's version)."""
    src = sources
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(src)]
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
    (found,) = out.glob("bergen_env-*.whl")
    return found, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(wheel_build: tuple[Path, str]) -> Path:
    return wheel_build[0]


@pytest.mark.slow
def test_release_build_passes_twine_check(
    sources: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``python -m build`` (an sdist, then a wheel built from it) with pip's own configuration
    for the build dependencies; ``twine check`` accepts both (the README renders on PyPI)."""
    for module in ("build", "twine"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module} (the [dev] extra)")
    out = tmp_path_factory.mktemp("release")
    cmd = [sys.executable, "-m", "build", "--outdir", str(out), str(sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    built = sorted(p.name for p in out.iterdir())
    assert built == ["bergen_env-0.1.0-py3-none-any.whl", "bergen_env-0.1.0.tar.gz"], built
    check = [sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir())]
    proc = subprocess.run(check, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2, proc.stdout


@pytest.mark.slow
def test_build_is_quiet(wheel_build: tuple[Path, str]) -> None:
    """No warning from the build backend (setuptools warns, for one, about a data folder such as
    ``bergen_env/web/static`` that it would also find as a package)."""
    warned = [line for line in wheel_build[1].splitlines() if re.search(r"\w*Warning: ", line)]
    assert not warned, "\n".join(warned)


@pytest.mark.slow
def test_editable_install_is_one_static_path(sources: Path, tmp_path: Path) -> None:
    """``pip install -e .`` is quiet and adds the checkout's root to ``sys.path`` with one .pth
    line: no import hook, so a module has the same name installed and in the checkout."""
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    python = str(tmp_path / "venv" / "bin" / "python")
    cmd = [python, "-m", "pip", "install", "--no-deps", "-v", "-e", str(sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warned = [line for line in (proc.stdout + proc.stderr).splitlines() if "Warning: " in line]
    assert not warned, "\n".join(warned)
    (site,) = (tmp_path / "venv" / "lib").glob("python3*/site-packages")
    (pth,) = site.glob("__editable__.bergen_env-*.pth")
    assert pth.read_text().split() == [str(sources.resolve())]
    assert not list(site.glob("__editable__*finder*"))


@pytest.mark.slow
def test_wheel_ships_the_web_game_files(wheel: Path) -> None:
    """The browser game's static files (a data folder, no package) are all in the wheel."""
    static = ROOT / "bergen_env" / "web" / "static"
    expected = {p.relative_to(ROOT).as_posix() for p in static.rglob("*") if p.is_file()}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert expected and expected <= names
    assert not any(
        n.startswith("bergen_env/web/static/") and n.endswith("__init__.py") for n in names
    )


@pytest.mark.slow
def test_wheel_holds_one_top_level_package(wheel: Path) -> None:
    """``bergen_env/`` and nothing else top-level (no generic ``training``, no tests/,
    benchmarks/, ...); the agent kinds of ``bergen_env.training`` are entry points of the
    ``bergen_env.agents`` group."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        rules = archive.read("bergen_env/RULES.md").decode()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entries = archive.read(entry_points).decode()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"bergen_env"}
    assert "bergen_env/py.typed" in names
    assert {"bergen_env/training/train.py", "bergen_env/training/cli.py"} <= set(names)
    assert "[bergen_env.agents]\nppo = bergen_env.training.ppo_policies:make_ppo_agent" in entries
    assert rules == (ROOT / "docs" / "rules.md").read_text()  # the text, not a link


@pytest.fixture(scope="module")
def fresh_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the wheel and its base dependencies only."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)]
    subprocess.run(pip, check=True, capture_output=True, timeout=900)
    return env_dir / "bin"


def run_in(
    bin_dir: Path, cmd: list[str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [str(bin_dir / cmd[0]), *cmd[1:]],
        cwd=cwd,  # not the repository: nothing of the checkout on sys.path
        input=stdin,
        capture_output=True,
        encoding="utf-8",
        timeout=600,
        env=env,
    )


#: The field's checkers, called as their documentation shows, on what a user constructs.
CHECKERS = """
import warnings
import gymnasium, pettingzoo
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, render_test, seed_test
import bergen_env

with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    check_env(gymnasium.make("bergen_env/Bergen-v0").unwrapped)
assert not seen, [str(w.message) for w in seen]
api_test(bergen_env.env(), num_cycles=1000)
seed_test(bergen_env.env)
render_test(bergen_env.env)
print("passed on gymnasium", gymnasium.__version__, "pettingzoo", pettingzoo.__version__)
"""


@pytest.mark.slow
def test_the_built_wheel_passes_the_checkers_without_extras(
    fresh_venv: Path, tmp_path: Path
) -> None:
    """Gymnasium's ``check_env`` (which renders every mode of ``render_modes``) and PettingZoo's
    ``api_test``, ``seed_test`` and ``render_test`` pass on the wheel's base install."""
    proc = run_in(fresh_venv, ["python", "-c", CHECKERS], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1].startswith("passed on gymnasium "), proc.stdout[-500:]


@pytest.mark.slow
def test_checkout_on_pythonpath_shadows_the_install_whole(fresh_venv: Path, tmp_path: Path) -> None:
    """With the repository on ``PYTHONPATH`` both packages come from the checkout, and the
    installed console scripts run its code (no half of the package from each place)."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PYTHONPATH"] = str(ROOT)

    def run(*cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(fresh_venv / cmd[0]), *cmd[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    probe = run(
        "python",
        "-c",
        "import bergen_env, bergen_env.training.cli as c; print(bergen_env.__file__, c.__file__)",
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == [
        str(ROOT / "bergen_env" / "__init__.py"),
        str(ROOT / "bergen_env" / "training" / "cli.py"),
    ]
    for script in ("bergen-evaluate", "bergen-exploit", "bergen-replay"):
        proc = run(script, "--help")
        assert proc.returncode == 0, (script, proc.stderr)
        assert proc.stdout.startswith(f"usage: {script}")


@pytest.mark.slow
def test_base_install_runs_the_clis_and_ships_the_rules(fresh_venv: Path, tmp_path: Path) -> None:
    probe = run_in(
        fresh_venv,
        [
            "python",
            "-c",
            "import importlib.util as u, bergen_env, bergen_env.training.cli; "
            "print(u.find_spec('torch'), bergen_env.__file__, bergen_env.training.__file__, "
            "u.find_spec('training'))",
        ],
        tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    no_torch, *locations, no_training = probe.stdout.split()
    assert no_torch == "None" and no_training == "None"  # no generic top-level name installed
    assert all("site-packages" in location for location in locations), locations

    # a trained-policy kind named in Python: the registry finds it, and names the missing extra
    code = "from bergen_env.agents import make_agent; make_agent('ppo:policy.zip')"
    proc = run_in(fresh_venv, ["python", "-c", code], tmp_path)
    assert proc.returncode == 1 and "ValueError: agent kind 'ppo'" in proc.stderr, proc.stderr
    assert "needs the [train] extra" in proc.stderr, proc.stderr

    evaluate = run_in(
        fresh_venv, ["bergen-evaluate", "--agents", "greedy", "random", "--matches", "4"], tmp_path
    )
    assert evaluate.returncode == 0, evaluate.stderr
    assert "greedy" in evaluate.stdout and "win rate" in evaluate.stdout

    replay_file = tmp_path / "m.jsonl"
    play = run_in(
        fresh_venv,
        ["bergen-play", "--opponents", "greedy", "--seed", "3", "--replay", str(replay_file)],
        tmp_path,
        stdin="1\n" * 400,
    )
    assert play.returncode == 0, play.stderr
    assert "match over" in play.stdout and play.stderr == ""

    replay = run_in(fresh_venv, ["bergen-replay", str(replay_file), "--verify"], tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert "reproduce every recorded score" in replay.stdout

    # what needs the [train] extra says so in one line
    for cmd in (
        ["bergen-train", "--config", "quick.yaml"],
        ["bergen-evaluate", "--agents", "ppo:policy.zip", "random"],
        ["bergen-play", "--opponents", "ppo:policy.zip"],
    ):
        proc = run_in(fresh_venv, cmd, tmp_path)
        assert proc.returncode == 2, (cmd, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "needs the [train] extra" in proc.stderr, proc.stderr

    # the rules page, as a user reads it from the installed package
    code = (
        "import importlib.resources as r; "
        "print(r.files('bergen_env').joinpath('RULES.md').read_text(encoding='utf-8'))"
    )
    proc = run_in(fresh_venv, ["python", "-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n") == (ROOT / "docs" / "rules.md").read_text().rstrip("\n")
