"""The engine imports numpy only; the envs register with Gymnasium and PettingZoo on import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(code: str) -> str:
    """Run ``code`` in a fresh interpreter (this checkout first on the path); return stdout."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize(
    "modules",
    [
        "bergen_env.engine",
        "bergen_env.rules",
        "bergen_env.tiles",
        "bergen_env.actions",
        "bergen_env",
        "bergen_env.engine, bergen_env.rules, bergen_env.tiles, bergen_env.actions",
    ],
)
def test_engine_modules_import_numpy_only(modules: str) -> None:
    loaded = run(
        "import sys\n"
        "before = set(sys.modules)\n"
        f"import {modules}\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'numpy', 'bergen_env'}))\n"
    )
    assert loaded == "[]"


@pytest.mark.parametrize(
    "code",
    [
        "import bergen_env, gymnasium",  # the documented order
        "import gymnasium, bergen_env",
        "import bergen_env.engine, gymnasium",
    ],
)
def test_gymnasium_make_works_after_import(code: str) -> None:
    out = run(
        f"{code}\n"
        "env = gymnasium.make('bergen_env/Bergen-v0', num_players=3)\n"
        "obs, info = env.reset(seed=0)\n"
        "print(type(env.unwrapped).__name__, obs.shape, info['action_mask'].shape)\n"
    )
    assert out == "BergenSingleAgentEnv (240,) (58,)"


def test_gymnasium_module_prefixed_id_imports_the_package() -> None:
    out = run(
        "import gymnasium\n"
        "env = gymnasium.make('bergen_env:bergen_env/Bergen-v0')\n"
        "print(type(env.unwrapped).__name__)\n"
    )
    assert out == "BergenSingleAgentEnv"


@pytest.mark.parametrize("code", ["import bergen_env, pettingzoo", "import pettingzoo, bergen_env"])
def test_pettingzoo_registry_works_after_import(code: str) -> None:
    out = run(
        f"{code}\n"
        "env = pettingzoo.make('aec', 'bergen_env/Bergen-v0', num_players=3)\n"
        "env.reset(seed=0)\n"
        "print(env.possible_agents)\n"
    )
    assert out == "['player_0', 'player_1', 'player_2']"


def test_lazy_env_names() -> None:
    out = run(
        "import sys, bergen_env\n"
        "assert 'pettingzoo' not in sys.modules\n"
        "from bergen_env import raw_env\n"
        "print(bergen_env.env.__module__, raw_env.__name__, 'env' in dir(bergen_env))\n"
    )
    assert out == "bergen_env.aec_env raw_env True"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        import bergen_env

        bergen_env.nothing  # noqa: B018
