"""The arena's pairs on Ray (``bergen-web --arena-ray``): a :class:`~bergen_env.ray_tasks.
RayExecutor` plays a pair as local workers do, lowers its workers' priority once each, and the
runner plays a submission's queue through it; without Ray the flag is one line naming the extra.

The tests that need Ray share one local instance of one CPU (``ray.init(num_cpus=1)``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from bergen_env import ray_tasks
from bergen_env.arena_store import ArenaStore, check_submission, rules_key
from bergen_env.duplicate_pairs import play_pair_outcome
from bergen_env.rules import Rules

ROOT = Path(__file__).resolve().parents[1]
HAS_RAY = importlib.util.find_spec("ray") is not None


def _web(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bergen_env.web.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


@pytest.mark.skipif(HAS_RAY, reason="Ray is installed: the error without it cannot be shown")
def test_arena_ray_without_ray_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="the web extra: pip install 'bergen_env[web]'")
    out = _web("--arena", "arena.sqlite3", "--db", "tables.sqlite3", "--arena-ray", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("bergen-web: --arena-ray: ") and "[ray] extra" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # refused before any file was opened


def test_arena_ray_needs_an_arena_and_replaces_its_workers(tmp_path: Path) -> None:
    out = _web("--arena-ray", cwd=tmp_path)
    assert out.returncode == 2 and "--arena-ray needs --arena FILE" in out.stderr
    out = _web("--arena", "a.sqlite3", "--arena-ray", "--arena-workers", "2", cwd=tmp_path)
    assert out.returncode == 2 and "--arena-ray replaces --arena-workers" in out.stderr


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance of one CPU for the module."""
    ray = pytest.importorskip("ray", reason="needs the [ray] extra: pip install 'bergen_env[ray]'")
    ray_tasks.connect(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_a_pair_on_ray_is_the_pair_of_local_workers(ray_instance) -> None:
    from bergen_env.web.agent_pool import lower_priority

    rules = Rules.preset("standard")
    args = ("heuristic", "greedy", rules, 8)
    with ProcessPoolExecutor(1) as pool:
        local = pool.submit(play_pair_outcome, *args, seed=11).result()
    ray_pool = ray_tasks.RayExecutor(initializer=lower_priority, initargs=(3,))
    on_ray = ray_pool.submit(play_pair_outcome, *args, seed=11).result()
    assert on_ray == local == play_pair_outcome(*args, seed=11)
    # its workers yield the CPU: the initializer's step at least (Ray starts them niced too)
    assert ray_pool.submit(os.nice, 0).result() >= min(19, os.nice(0) + 3)
    ray_pool.shutdown()


def test_a_ray_workers_initializer_runs_once_per_process(monkeypatch) -> None:
    monkeypatch.setattr(ray_tasks, "_STARTED", set())
    calls: list[int] = []
    start = (calls.append, (3,))
    results = [ray_tasks._initialized_call(start, pow, (2, k), {}) for k in range(3)]
    assert results == [1, 2, 4] and calls == [3]
    assert ray_tasks._initialized_call(None, pow, (2, 3), {}) == 8 and calls == [3]


def test_the_runner_plays_a_submission_on_ray(ray_instance) -> None:
    from bergen_env.web.arena_runner import ArenaRunner, ArenaSettings

    sub = check_submission((ROOT / "policies" / "standard_2p.safetensors").read_bytes())
    store = ArenaStore(":memory:")
    runner = ArenaRunner(store, ArenaSettings(matches=2, bootstrap=20, ray="local", niceness=0))

    async def play() -> int:
        runner.start()
        entry, new, queued = await runner.add(sub, "ada", "test")
        deadline = time.monotonic() + 300
        while store.queued_count() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        while time.monotonic() < deadline and not any(b["entries"] for b in runner.boards()):
            await asyncio.sleep(0.2)
        await runner.close()
        return queued

    queued = asyncio.run(play())
    assert queued == 10 and store.queued_count() == 0 and len(store.results()) == 10
    assert all(p.outcome.matches == 2 for p in store.results())
    (board,) = runner.boards()
    assert board["id"] and len(board["entries"]) == 5
    assert {e["agent"] for e in board["entries"]} >= {"random", f"file:{sub.sha256}"}
    assert store.board_data(rules_key(sub.rules)).pending == {}
    store.close()
