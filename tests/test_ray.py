"""The Ray backend (bergen_env.ray_tasks): the same numbers as local workers, lost workers
retried, the command-line flags, and a one-line error without Ray.

Every test that needs Ray shares one local instance (``ray.init(num_cpus=2)``, module scope):
starting Ray takes seconds. Under pytest-xdist, each worker that runs some of these tests starts
one (at most two with ``make test``).
"""

from __future__ import annotations

import json
import os
import posixpath
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from bergen_env import ray_tasks
from bergen_env.arena import run_tournament
from bergen_env.rules import Rules

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance of 2 CPUs for the whole module."""
    ray = pytest.importorskip("ray", reason="needs the [ray] extra")
    ray_tasks.connect(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def small_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks of a few matches, so that a small tournament is many tasks."""
    monkeypatch.setattr(ray_tasks, "MIN_TASK_MATCHES", 4)
    monkeypatch.setattr(ray_tasks, "TASKS_PER_CPU", 8)


def _same(a, b) -> None:
    assert a.records == b.records
    da, db = a.to_dict(), b.to_dict()
    da["config"].pop("workers")
    db["config"].pop("workers")
    assert da == db


# ---------------------------------------------------------------------- the tournament


@pytest.mark.parametrize(
    ("agents", "rules", "kwargs"),
    [
        (["greedy", "random"], Rules.preset("standard"), {"workers": 2}),
        (["heuristic", "greedy", "random"], Rules.preset("standard", num_players=3), {}),
        (["greedy", "random"], Rules.preset("draw", num_players=4), {}),
        (["greedy", "random"], Rules.preset("fives"), {"duplicate": False}),
    ],
    ids=["2p-workers2", "3p", "4p-partners", "no-duplicate"],
)
def test_ray_tournament_equals_local_workers(
    ray_instance, small_tasks, agents, rules, kwargs
) -> None:
    local = run_tournament(agents, rules, matches=48, seed=7, keep_deals=True, **kwargs)
    kwargs.pop("workers", None)
    on_ray = run_tournament(
        agents, rules, matches=48, seed=7, keep_deals=True, backend="ray", **kwargs
    )
    _same(local, on_ray)


def test_ray_replays_file_equals_local(ray_instance, small_tasks, tmp_path: Path) -> None:
    rules = Rules.preset("standard")
    run_tournament(["greedy", "random"], rules, matches=24, seed=2, replays=tmp_path / "a.jsonl")
    run_tournament(
        ["greedy", "random"], rules, matches=24, seed=2, replays=tmp_path / "b.jsonl", backend="ray"
    )
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()


def test_ray_progress_bar_counts_every_match(ray_instance, small_tasks, capsys) -> None:
    pytest.importorskip("tqdm")
    run_tournament(
        ["greedy", "random"], Rules.preset("standard"), matches=40, progress=True, backend="ray"
    )
    assert "40/40" in capsys.readouterr().err


def test_tasks_give_results_in_order_and_errors_as_raised(ray_instance) -> None:
    join = posixpath.join  # a pure-Python function that workers can import
    items = [str(k) for k in range(12)]
    assert list(ray_tasks.in_order(join, "x", items)) == [f"x/{k}" for k in items]
    assert sorted(ray_tasks.task_results(join, "y", ["a", "b"])) == [(0, "y/a"), (1, "y/b")]
    with pytest.raises(TypeError):
        list(ray_tasks.in_order(join, "x", ["a", 3, "b"]))
    assert list(ray_tasks.in_order(join, "x", [])) == []


# ---------------------------------------------------------------------- a worker killed


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == ancestor:
            return True
    return False


def _kill_busy_workers(task: str, count: int, stop: threading.Event, killed: list[int]) -> None:
    """SIGKILL ``count`` worker processes of this process's Ray instance while they run
    ``task`` (Ray titles a busy worker ``ray::<task>``)."""
    title = f"ray::{task}".encode()
    me = os.getpid()
    while not stop.is_set() and len(killed) < count:
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in killed:
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(title) and _descends_from(int(entry), me):
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
                time.sleep(0.3)  # the next kill hits another task
                break
        time.sleep(0.01)


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
def test_killed_worker_is_retried_and_nothing_counted_twice(ray_instance, small_tasks) -> None:
    rules = Rules.preset("standard")
    agents = ["heuristic", "greedy"]
    undisturbed = run_tournament(agents, rules, matches=600, seed=5)
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_busy_workers, args=("_task_play", 2, stop, killed))
    killer.start()
    try:
        disturbed = run_tournament(agents, rules, matches=600, seed=5, backend="ray")
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was caught running a task"
    keys = [(r.group, r.rotation) for r in disturbed.records]
    assert keys == [(r.group, r.rotation) for r in undisturbed.records]  # none twice, none lost
    _same(undisturbed, disturbed)


# ---------------------------------------------------------------------- the command line


def test_evaluate_ray_flag_writes_the_json_of_local_workers(
    ray_instance, small_tasks, tmp_path: Path, capsys
) -> None:
    from bergen_env.training.evaluate import tournament

    common = ["--agents", "greedy", "random", "--matches", "40", "--seed", "3", "--no-progress"]
    assert tournament([*common, "--workers", "2", "--json", str(tmp_path / "w.json")]) == 0
    assert tournament([*common, "--ray", "--json", str(tmp_path / "r.json")]) == 0
    local = json.loads((tmp_path / "w.json").read_text())
    on_ray = json.loads((tmp_path / "r.json").read_text())
    for data in (local, on_ray):
        data["config"].pop("command")
        data["config"].pop("workers")
    assert local == on_ray
    assert capsys.readouterr().out.count("greedy") >= 2


def test_evaluate_ray_with_workers_is_an_error(capsys) -> None:
    from bergen_env.training.evaluate import main

    assert main(["--agents", "greedy", "random", "--ray", "--workers", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "bergen-evaluate: error: --ray uses the Ray cluster's CPUs: leave out --workers"


def test_run_tournament_backend_errors() -> None:
    rules = Rules.preset("standard")
    with pytest.raises(ValueError, match=r"backend must be one of \['processes', 'ray'\]"):
        run_tournament(["greedy", "random"], rules, matches=2, backend="rey")
    with pytest.raises(ValueError, match="leave workers at 1"):
        run_tournament(["greedy", "random"], rules, matches=2, backend="ray", workers=2)
    from bergen_env.agents import make_agent

    with pytest.raises(ValueError, match="pass agent strings to use workers > 1 or Ray"):
        run_tournament([make_agent("greedy"), "random"], rules, matches=2, backend="ray")


# ---------------------------------------------------------------------- without Ray

#: Run in a fresh interpreter: Ray is not importable (as if not installed), then ``CODE``.
WITHOUT_RAY = """
import importlib.machinery, sys

class NoRay:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)

sys.meta_path = [NoRay if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


def _without_ray(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY + code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


INSTALL = (
    "install it with: pip install 'bergen_env[ray]' (from a clone of the repository: "
    "pip install -e '.[ray]')"
)


def test_without_ray_the_cli_says_so_in_one_line() -> None:
    out = _without_ray(
        "from bergen_env.training.evaluate import main\n"
        "sys.exit(main(['--agents', 'greedy', 'random', '--matches', '2', '--ray']))\n"
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        f"bergen-evaluate: error: --ray needs the [ray] extra (missing: ray); {INSTALL}\n"
    )


def test_without_ray_the_rating_table_says_so() -> None:
    out = _without_ray(
        "from benchmarks.rating_table import main\n"
        "sys.exit(main(['--agents', 'greedy', 'random', '--matches', '2', '--ray', 'auto']))\n"
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines()[-1] == (  # after argparse's usage, as its other errors
        "python -m benchmarks.rating_table: error: --ray needs the [ray] extra (missing: ray); "
        + INSTALL
    )


def test_without_ray_expert_iteration_says_so_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    config = ROOT / "configs" / "expert_iteration_2p.yaml"
    run = tmp_path / "run"
    out = _without_ray(
        "from bergen_env.training.expert_iteration import PROG, main\n"
        "from bergen_env.training.cli import run\n"
        f"sys.exit(run(PROG, main, ['--config', {str(config)!r}, '--run-dir', {str(run)!r}, "
        "'--ray']))\n"
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        "python -m bergen_env.training.expert_iteration: error: key 'ray' needs the [ray] extra "
        f"(missing: ray); {INSTALL}\n"
    )


def test_without_ray_the_library_says_so() -> None:
    out = _without_ray(
        "from bergen_env.arena import run_tournament\n"
        "from bergen_env.rules import Rules\n"
        "try:\n"
        "    run_tournament(['greedy', 'random'], Rules.preset('standard'), backend='ray')\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"the Ray backend needs Ray, the [ray] extra (missing: ray); {INSTALL}\n"


# ---------------------------------------------------------------------- the rating table


def _stored(path: Path) -> dict[str, dict]:
    """The stored pairs by key, without their wall times."""
    from benchmarks import rating_table as rt

    return {p.key(): {**p.to_json(), "seconds": None} for p in rt.load_results(path)}


def test_rating_table_on_ray_stores_the_local_pairs_and_resumes(
    ray_instance, tmp_path: Path
) -> None:
    from benchmarks import rating_table as rt

    rules = Rules.preset("standard", num_players=3)
    specs = ["random", "greedy", "heuristic"]
    local = rt.round_robin(specs, rules, matches=24, seed=4, results=tmp_path / "local.json")

    class Stop(Exception):
        pass

    def stop_after_first(line: str) -> None:
        raise Stop(line)  # the driver stops once one pair is stored

    path = tmp_path / "ray.json"
    with pytest.raises(Stop):
        rt.round_robin(
            specs, rules, matches=24, seed=4, results=path, log=stop_after_first, backend="ray"
        )
    assert len(rt.load_results(path)) == 1
    resumed = rt.round_robin(specs, rules, matches=24, seed=4, results=path, backend="ray")
    assert len(resumed.played) == 2  # only the pairs that were not stored
    assert _stored(path) == _stored(tmp_path / "local.json")
    assert [p.key() for p in resumed.pairs] == [p.key() for p in local.pairs]
    again = rt.round_robin(specs, rules, matches=24, seed=4, results=path, backend="ray")
    assert again.played == []
    table = rt.rating_table(resumed, bootstrap=50).markdown()
    assert table == rt.rating_table(local, bootstrap=50).markdown()


def test_rating_table_ray_flag(ray_instance, tmp_path: Path, capsys) -> None:
    from benchmarks import rating_table as rt

    argv = ["--agents", "random", "greedy", "--matches", "8", "--bootstrap", "20"]
    assert rt.main([*argv, "--ray", "--results", str(tmp_path / "r.json")]) == 0
    assert "1 played" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        rt.main([*argv, "--ray", "--workers", "2"])
    assert "--ray uses the Ray cluster's CPUs" in capsys.readouterr().err


# ---------------------------------------------------------------------- expert iteration


def test_expert_iteration_labels_on_ray_equal_the_local_ones(ray_instance) -> None:
    pytest.importorskip("torch")
    import dataclasses

    from bergen_env.training.expert_iteration_collection import collect_parallel
    from bergen_env.training.expert_iteration_config import ExpertIterationConfig
    from bergen_env.training.expert_iteration_networks import build_network, network_arrays

    cfg = ExpertIterationConfig(
        decisions=24,
        job_decisions=8,
        teacher="search:samples=3",
        net_arch=[16],
        player=["network", "heuristic"],
        opponents=["greedy"],
    )
    arrays = network_arrays(build_network(cfg, Rules.preset("standard").num_actions))
    local = collect_parallel(cfg, arrays, 24, seed=9, progress=False)
    on_ray = collect_parallel(
        dataclasses.replace(cfg, ray="local"), arrays, 24, seed=9, progress=False
    )
    for field in dataclasses.fields(local):
        np.testing.assert_array_equal(getattr(local, field.name), getattr(on_ray, field.name))


def test_expert_iteration_ray_flag_runs_and_records_the_key(ray_instance, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import yaml

    from bergen_env.training.expert_iteration import main

    config = tmp_path / "tiny.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "default": {
                    "decisions": 16,
                    "job_decisions": 8,
                    "teacher": "search:samples=2",
                    "net_arch": [8],
                    "epochs": 1,
                    "held_out": 0.3,
                    "eval_matches": 2,
                    "player": ["heuristic"],
                    "opponents": ["greedy"],
                }
            }
        )
    )
    run = tmp_path / "run"
    path = main(["--config", str(config), "--run-dir", str(run), "--no-progress", "--ray"])
    assert path.is_file()
    assert yaml.safe_load((run / "config.yaml").read_text())["default"]["ray"] == "local"


def test_evaluate_ray_address_where_nothing_answers_is_a_one_line_error() -> None:
    pytest.importorskip("ray", reason="needs the [ray] extra")
    out = subprocess.run(
        [sys.executable, "-m", "bergen_env.training.evaluate", "--agents", "greedy", "random"]
        + ["--matches", "2", "--ray", "127.0.0.1:1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(
        "bergen-evaluate: error: --ray: cannot join the Ray cluster at '127.0.0.1:1': "
        "nothing answers at 127.0.0.1:1 ("
    )
    assert out.stderr.count("\n") == 1


# ---------------------------------------------------------------------- the overhead benchmark


def test_overhead_benchmark_compares_equal_runs(ray_instance, tmp_path: Path, capsys) -> None:
    from benchmarks import ray_overhead

    path = tmp_path / "overhead.json"
    argv = ["--agents", "greedy", "random", "--matches", "8", "--repeats", "1"]
    assert ray_overhead.main([*argv, "--task-matches", "0", "2", "--json", str(path)]) == 0
    report = json.loads(path.read_text())
    assert [r["task_matches"] for r in report["rows"]] == ["default", 2]
    assert all(r["ray_cpu_s_per_1000"] > 0 for r in report["rows"])
    assert "| default |" in capsys.readouterr().out
    assert (ray_tasks.MIN_TASK_MATCHES, ray_tasks.TASKS_PER_CPU) == ray_overhead.DEFAULT_SIZING


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
def test_rating_table_pair_task_killed_is_played_again(ray_instance, tmp_path: Path) -> None:
    from benchmarks import rating_table as rt

    rules = Rules.preset("standard")
    specs = ["random", "greedy", "heuristic"]
    rt.round_robin(specs, rules, matches=200, seed=6, results=tmp_path / "local.json")
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_busy_workers, args=("_play_task", 1, stop, killed))
    killer.start()
    try:
        run = rt.round_robin(
            specs, rules, matches=200, seed=6, results=tmp_path / "ray.json", backend="ray"
        )
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was caught running a pair's task"
    assert len(run.played) == 3
    assert _stored(tmp_path / "ray.json") == _stored(tmp_path / "local.json")


def test_exploit_ray_flag_writes_the_json_of_local_workers(
    ray_instance, small_tasks, tmp_path: Path
) -> None:
    from bergen_env.training.exploit import main

    common = ["--policy", "greedy", "--matches", "8", "--samples", "3", "--seed", "2"]
    common += ["--no-progress"]
    assert main([*common, "--workers", "2", "--json", str(tmp_path / "w.json")]) == 0
    assert main([*common, "--ray", "--json", str(tmp_path / "r.json")]) == 0
    local = json.loads((tmp_path / "w.json").read_text())
    on_ray = json.loads((tmp_path / "r.json").read_text())
    for data in (local, on_ray):
        for key in ("command", "workers", "seconds"):
            data["config"].pop(key)
    assert local == on_ray
