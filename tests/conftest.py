"""Session set-up: with pytest-xdist, the numba kernels are compiled once before the workers
start (``tests/numba_warmup.py``), not by every worker and test subprocess at the same time."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.numba_warmup import GROUPS

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """In the xdist controller of a run with workers: fill numba's cache, one process per group
    of kernels. A failure only warns: the tests then compile (and report) what they call."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    if importlib.util.find_spec("numba") is None:
        return
    procs = {
        group: subprocess.Popen(
            [sys.executable, "-m", "tests.numba_warmup", group],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for group in GROUPS
    }
    for group, proc in procs.items():
        output = proc.communicate()[0]
        if proc.returncode:
            config.issue_config_time_warning(
                pytest.PytestWarning(f"numba warm-up {group!r} failed:\n{output[-2000:]}"),
                stacklevel=2,
            )


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_the_test_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A model trained without a logger of its own makes an SB3 log folder; keep those under
    pytest's temporary tree (SB3 reads ``SB3_LOGDIR``) instead of one new folder in /tmp each."""
    mp = pytest.MonkeyPatch()
    mp.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
    yield
    mp.undo()
