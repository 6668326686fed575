"""benchmarks/side_by_side.py: two commits' rates from alternating slices (a tiny run of one
row), and every row of the working tree's worker."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import side_by_side
from benchmarks.side_by_side import Worker

ROOT = Path(__file__).resolve().parents[1]


def test_compares_head_with_the_working_tree(capsys: pytest.CaptureFixture[str]) -> None:
    if (
        shutil.which("git") is None
        or subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, check=False
        ).returncode
    ):
        pytest.skip("needs a git checkout")
    rates = side_by_side.main(
        ["--ref", "HEAD", "--slices", "2", "--seconds", "0.02"] + ["--only", "observe"]
    )
    assert set(rates) == {"ref", "tree"}
    for side in rates.values():
        assert list(side) == ["observe standard 4p partnerships"]
        assert len(side["observe standard 4p partnerships"]) == 2
        assert all(rate > 0 for rate in side["observe standard 4p partnerships"])
    assert "observe standard 4p partnerships" in capsys.readouterr().out


def test_unknown_row_is_an_error() -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    with pytest.raises(SystemExit, match="no row matches --only 'nothing'"):
        side_by_side.main(["--ref", "HEAD", "--slices", "1", "--only", "nothing"])


def test_every_row_builds_and_runs() -> None:
    """The worker of the working tree builds every row (the batched ones too, with numba) and
    times a slice of each; a worker given ``only`` builds just the rows it names."""
    numba = importlib.util.find_spec("numba") is not None
    worker = Worker(side_by_side.ROOT)
    try:
        assert len(worker.rows) == (11 if numba else 7)
        assert all(worker.rate(i, 0.01) > 0 for i in range(len(worker.rows)))
    finally:
        worker.close()
    some = Worker(side_by_side.ROOT, only="observe")
    try:
        assert some.rows == worker.rows
        assert some.rate(some.rows.index("observe standard 4p partnerships"), 0.01) > 0
        with pytest.raises(RuntimeError, match="exited"):
            some.rate(some.rows.index("state standard 4p partnerships"), 0.01)
    finally:
        some.close()
