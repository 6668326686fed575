"""One import name per module: every documented way of running the programs (console scripts,
``python -m bergen_env.training.<module>``, the ``ppo`` and ``rllib`` agent kinds) works from any
directory, with or without the repository on ``PYTHONPATH``, also from a project that has its
own ``training`` package first on ``sys.path``; and no file of this checkout is loaded as two
modules."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
BIN = Path(sys.executable).parent

#: Run in a subprocess: fails if a file is loaded under two module names, if the user's
#: ``training`` package was imported, or if ``bergen_env`` and ``bergen_env.training`` are not
#: this checkout's (a venv may see another checkout's install too).
ONE_NAME_CHECK = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    root = Path(sys.argv[1])
    ours = [root / "bergen_env", root / "training"]  # not a venv that may live in the checkout
    by_file = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        inside = path and any(Path(path).resolve().is_relative_to(d) for d in ours)
        if inside and name not in ("__main__", "__mp_main__"):  # multiprocessing's alias of it
            by_file.setdefault(str(Path(path).resolve()), []).append(name)
    assert by_file, "nothing of the checkout was loaded"
    twice = {path: names for path, names in by_file.items() if len(names) > 1}
    assert not twice, f"loaded twice: {twice}"
    assert "training" not in sys.modules, sys.modules["training"]
    import bergen_env, bergen_env.training as training
    for package in (bergen_env, training):
        assert Path(package.__file__).resolve().parent.parent == root, package.__file__
    print("one name:", Path(training.__file__).resolve())
    """
)


#: A research project's own ``training`` package, which must never be imported in its place.
USER_PACKAGE = {
    name: 'raise ImportError("the project\'s own training package was imported")\n'
    for name in ("__init__.py", "cli.py", "evaluate.py", "ppo_policies.py", "rllib_policies.py")
}


def project_with_its_own_training(folder: Path) -> Path:
    """``folder`` as a project that has a ``training`` package of its own."""
    (folder / "training").mkdir(exist_ok=True)
    for name, text in USER_PACKAGE.items():
        (folder / "training" / name).write_text(text)
    return folder


def environment(cwd: Path, pythonpath: str | None) -> dict[str, str]:
    """The project folder first on ``PYTHONPATH`` (as in ``PYTHONPATH=. python ...``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), *([pythonpath] if pythonpath else [])])
    return env


PYTHONPATHS = pytest.mark.parametrize("pythonpath", [None, str(ROOT)], ids=["unset", "repo"])


def run(cmd: list[str], cwd: Path, pythonpath: str | None) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd,
        cwd=project_with_its_own_training(cwd),  # not the repository
        env=environment(cwd, pythonpath),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@PYTHONPATHS
def test_policy_kind_loads_once_from_the_registry(tmp_path: Path, pythonpath: str | None) -> None:
    """``ppo:`` in Python after ``import bergen_env`` alone: the registry loads the kind from its
    entry point, as the same module object ``import bergen_env.training.ppo_policies`` gives."""
    pytest.importorskip("sb3_contrib")
    code = textwrap.dedent(
        """
        import sys
        import bergen_env
        from bergen_env.agents import agent_factory, make_agent

        assert "bergen_env.training" not in sys.modules  # the library imports no training module
        zip_path = sys.argv[2]
        agent = make_agent(f"ppo:path={zip_path},trust_pickle=true")
        assert type(agent).__module__ == "bergen_env.training.ppo_policies", type(agent)
        assert agent.trained_rules.num_players == 2, agent.trained_rules
        import bergen_env.training.ppo_policies

        assert agent_factory("ppo") is bergen_env.training.ppo_policies.make_ppo_agent
        import bergen_env.training.rllib_policies  # loads without Ray; its agents need it

        assert agent_factory("rllib") is bergen_env.training.rllib_policies.make_rllib_agent
        """
    )
    shipped = str(ROOT / "policies" / "standard_2p.zip")
    cmd = [sys.executable, "-c", code + ONE_NAME_CHECK, str(ROOT), shipped]
    proc = run(cmd, tmp_path, pythonpath)
    assert proc.returncode == 0, proc.stderr
    assert f"one name: {ROOT / 'training' / '__init__.py'}" in proc.stdout


def test_unknown_kind_names_the_closest_kind_plugins_included() -> None:
    from bergen_env.agents import agent_kinds, make_agent

    assert {"ppo", "rllib", "random", "search"} <= set(agent_kinds())
    with pytest.raises(ValueError, match=r"unknown agent 'ppx:m.zip' \(did you mean 'ppo'\?\)"):
        make_agent("ppx:m.zip")


@PYTHONPATHS
def test_python_m_runs_one_module_per_file(tmp_path: Path, pythonpath: str | None) -> None:
    """``python -m bergen_env.training.evaluate`` from another directory (a tournament); then
    the same program as ``python -m`` runs it, followed by the check that no file loaded twice."""
    evaluate = [sys.executable, "-m", "bergen_env.training.evaluate"]
    proc = run([*evaluate, "--agents", "greedy", "random", "--matches", "4"], tmp_path, pythonpath)
    assert proc.returncode == 0, proc.stderr
    assert "win rate" in proc.stdout, proc.stdout
    code = textwrap.dedent(
        """
        import runpy, sys
        argv, sys.argv = sys.argv, ["evaluate", "--help"]
        try:
            runpy.run_module("bergen_env.training.evaluate", run_name="__main__", alter_sys=True)
        except SystemExit as exit:
            assert exit.code == 0, exit.code
        sys.argv = argv
        """
    )
    proc = run([sys.executable, "-c", code + ONE_NAME_CHECK, str(ROOT)], tmp_path, pythonpath)
    assert proc.returncode == 0, proc.stderr


@PYTHONPATHS
@pytest.mark.parametrize("script", SCRIPTS)
def test_console_script_runs_anywhere(script: str, tmp_path: Path, pythonpath: str | None) -> None:
    """Each console script's ``--help`` from another directory (with the repository on
    ``PYTHONPATH`` too, which shadows an installed copy with the checkout)."""
    path = BIN / script
    if not path.exists():
        pytest.skip(f"{script} is not installed beside {sys.executable} (pip install -e .)")
    if script == "bergen-train-rllib":
        pytest.importorskip("ray", reason="needs the [rllib] extra")
    if script == "bergen-web":
        pytest.importorskip("starlette", reason="needs the [web] extra")
    proc = run([str(path), "--help"], tmp_path, pythonpath)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {script}"), proc.stdout[:200]
