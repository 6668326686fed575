"""Faults of long jobs: cut-off writes, full disks, kill -9 and SIGTERM, two runs in one folder.

Every test here is one row of docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from bergen_env.atomic_files import (
    OutputError,
    atomic_path,
    check_writable,
    is_temp_name,
    write_text,
)
from tests.faults import Command, marked_pids

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def no_full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every fsync fail as on a full disk (ENOSPC)."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)


# ---------------------------------------------------------------------- atomic writes


def test_atomic_write_replaces_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "results.json"
    write_text(target, "old")
    assert target.read_text() == "old"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old"
    no_full_disk(monkeypatch)
    with pytest.raises(OutputError, match=r"cannot write '.*results.json': No space left"):
        write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary left


def test_policy_file_write_on_a_full_disk_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bergen_env.policy_file import read_policy_file, save_policy_file
    from bergen_env.rules import Rules

    rules = Rules.preset("standard")
    shipped = read_policy_file(Path(__file__).parents[1] / "policies" / "standard_2p.safetensors")
    weights, biases = shipped.network.arrays()[:2]
    activations = shipped.network.arrays()[2]
    path = save_policy_file(tmp_path / "p.safetensors", rules, weights, biases, activations, {})
    before = path.read_bytes()
    no_full_disk(monkeypatch)
    zeros = [np.zeros_like(w) for w in weights]
    with pytest.raises(OutputError, match="No space left"):
        save_policy_file(path, rules, zeros, biases, activations, {})
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if is_temp_name(p)]


def test_a_full_disk_anywhere_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from bergen_env.training.cli import run

    def main(argv: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "runs/x/progress.csv")

    assert run("bergen-train", main, []) == 2
    assert capsys.readouterr().err.splitlines() == [
        "bergen-train: error: cannot write 'runs/x/progress.csv': No space left on device"
    ]


def test_unwritable_outputs_are_found_before_the_work(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="does not exist"):
        check_writable(tmp_path / "missing" / "out.json", "--json")
    with pytest.raises(OutputError, match="is a folder"):
        check_writable(tmp_path, "--json")
    with pytest.raises(OutputError, match="cannot write"):
        check_writable(Path("/proc/bergen_out.json"), "--json")
    check_writable(tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []


def test_evaluate_refuses_an_unwritable_json_before_playing() -> None:
    cmd = Command(
        [
            "-m",
            "bergen_env.training.evaluate",
            "--agents",
            "random",
            "greedy",
            "--matches",
            "100000",
        ]
        + ["--json", "/proc/bergen_out.json", "--no-progress"]
    )
    code, out, err = cmd.finish(timeout=60)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "bergen-evaluate: error: --json '/proc/bergen_out.json': cannot write: "
        + err.split("cannot write: ")[1].strip()
    ]


# ---------------------------------------------------------------------- run folders


def _hold_lock(path: str, ready: multiprocessing.synchronize.Event) -> None:
    from bergen_env.training.run_folder import lock_run_dir

    lock_run_dir(Path(path))
    ready.set()
    time.sleep(120)


def test_a_locked_run_folder_is_refused_and_freed_by_kill_9(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from bergen_env.training.cli import UsageError
    from bergen_env.training.run_folder import lock_run_dir, unlock

    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(tmp_path), ready))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(UsageError, match="is in use by another run"):
            lock_run_dir(tmp_path)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(30)
    lock_run_dir(tmp_path)  # the kernel dropped the dead holder's lock
    unlock(tmp_path)


def test_default_run_folders_never_collide(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from bergen_env.training.run_folder import new_run_dir

    made = [new_run_dir(tmp_path, "quick__0") for _ in range(5)]  # same second
    assert len(set(made)) == 5 and all(p.is_dir() for p in made)


# ---------------------------------------------------------------------- workers die with the parent


def _worker_forever(parent: int) -> None:
    from bergen_env.parent_watch import die_with_parent

    die_with_parent(parent)
    while True:
        time.sleep(0.05)


BLOCKED_WORKER = """
import multiprocessing, os, signal, sys, threading
sys.path.insert(0, {root!r})
from bergen_env.parent_watch import die_with_parent
signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))  # a parent's
die_with_parent(os.getppid())
threading.Thread(target=threading.Event().wait, daemon=True).start()  # a library's thread
lock = multiprocessing.Lock()
lock.acquire()
print("ready", flush=True)
lock.acquire()  # blocked for good, as a pool worker waiting for its next task
"""


def test_a_worker_blocked_in_a_lock_ends_on_sigterm() -> None:
    # a Python handler inherited from the parent runs only once the main thread wakes, and a
    # signal the kernel hands to another thread does not wake it: Pool.terminate would hang
    root = str(Path(__file__).parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_WORKER.format(root=root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM


def _worker_pid(_: int) -> int:
    time.sleep(0.01)
    return os.getpid()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("fail", [False, True])
def test_a_forked_pool_leaves_no_worker_after_its_block(fail: bool) -> None:
    from bergen_env.training.run_folder import forked_pool

    pids: set[int] = set()
    expected = pytest.raises(RuntimeError) if fail else contextlib.nullcontext()
    with expected, forked_pool(2) as pool:
        pids |= set(pool.map(_worker_pid, range(20)))
        if fail:
            raise RuntimeError("stop")
    assert pids and all(_gone(pid) for pid in pids)  # closed (or terminated) and joined


PARENT = """
import multiprocessing, os, sys, time
sys.path.insert(0, {root!r})
from tests.test_reliability import _worker_forever
ctx = multiprocessing.get_context({method!r})
for _ in range(2):
    ctx.Process(target=_worker_forever, args=(os.getpid(),)).start()
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_die_with_a_killed_parent(method: str) -> None:
    root = str(Path(__file__).parents[1])
    cmd = Command(["-c", PARENT.format(root=root, method=method)])
    assert cmd.proc.stdout.readline() == "ready\n"
    cmd.wait_for(lambda: len(cmd.children()) >= 2)  # spawn adds a resource tracker
    cmd.signal(signal.SIGKILL)
    cmd.finish()
    assert cmd.survivors() == []


# ---------------------------------------------------------------------- stop signals


STOP_IN_A_FINALIZER = """
import io, os, signal, sys, zipfile
from bergen_env.arena import run_tournament
from bergen_env.rules import Rules
from bergen_env.training.cli import run

class SignalledWhileClosing(zipfile.ZipFile):
    def close(self):  # ZipFile.__del__ calls it
        os.kill(os.getpid(), signal.{sig})
        for _ in range(100000):  # the signal's Python handler runs here, inside the finalizer
            pass
        super().close()

def main(argv):
    SignalledWhileClosing(io.BytesIO(), "w")  # dropped at once: its finalizer runs now
    run_tournament(["greedy", "random"], Rules.preset("standard"), matches=400)
    print("played every match")

sys.exit(run("prog", main))
"""


@pytest.mark.parametrize(
    ("sig", "code", "word"), [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")]
)
def test_a_stop_signal_that_lands_in_a_finalizer_still_stops_the_work(
    sig: str, code: int, word: str
) -> None:
    # the handler only sets a flag: an exception raised in it would land in ZipFile.__del__,
    # where Python reports it as "Exception ignored" and drops it, and the matches would go on
    cmd = Command(["-c", STOP_IN_A_FINALIZER.format(sig=sig)])
    returncode, out, err = cmd.finish(timeout=120)
    assert (returncode, out, err) == (code, "", f"\nprog: {word}\n")


def test_a_second_stop_signal_ends_the_process_at_once() -> None:
    cmd = Command(
        [
            "-c",
            "import os, signal, time\n"
            "from bergen_env.training.cli import run\n"
            "def main(argv):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(60)  # no loop checks the flag here\n"
            "run('prog', main)\n",
        ]
    )
    assert cmd.finish(timeout=30)[0] == -signal.SIGTERM


# ---------------------------------------------------------------------- long commands


TINY_TRAIN = [
    "vec_env=subproc",
    "n_envs=2",
    "n_steps=64",
    "batch_size=64",
    "n_epochs=1",
    "net_arch=[16]",
    "eval_every=0",
    "final_eval_matches=2",
    "eval_workers=2",
    "checkpoint_every=128",
    "imitation_teacher=null",
    "opponents=[random]",
    "eval_opponents=[random]",
    "reward=match",
]


def train_args(*extra: str, steps: int = 10**7) -> list[str]:
    sets = [x for s in [*TINY_TRAIN, f"total_timesteps={steps}"] for x in ("--set", s)]
    return ["-m", "bergen_env.training.train", *sets, *extra]


def checkpoints(run: Path) -> list[Path]:
    folder = run / "checkpoints"
    return sorted(folder.glob("ckpt_*_steps.zip")) if folder.is_dir() else []


@pytest.fixture(scope="module")
def sb3() -> None:
    pytest.importorskip("sb3_contrib")


@pytest.mark.parametrize("vec_env", ["subproc", "batched"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.slow
def test_train_stopped_by_a_signal_leaves_no_process_and_resumes(
    sb3: None, tmp_path: Path, sig: int, vec_env: str
) -> None:
    run = tmp_path / "run"
    chosen = ("--set", f"vec_env={vec_env}")
    cmd = Command(train_args("--config", "configs/quick.yaml", *chosen, "--run-dir", str(run)))
    cmd.wait_for(lambda: len(checkpoints(run)) >= 2)
    if vec_env == "subproc":
        assert len(cmd.children()) >= 2  # the env workers
    cmd.signal(sig)
    code, _, err = cmd.finish()
    assert cmd.survivors() == []
    if sig == signal.SIGTERM:
        assert code == 143
        last = err.strip().splitlines()[-1]
        assert last.startswith("bergen-train: terminated: stopped at ")
        assert f"continue with --resume {run}" in last
    else:
        assert code == -signal.SIGKILL
    newest = max(int(p.name.split("_")[1]) for p in checkpoints(run))
    target = newest + 128
    again = Command(train_args("--resume", str(run), steps=target))
    code, out, err = again.finish()
    assert code == 0, err[-3000:]
    assert f"at {newest} steps" in out
    assert (run / "checkpoints" / f"ckpt_{target}_steps.zip").is_file()
    assert again.survivors() == []


@pytest.mark.slow
def test_resume_skips_a_cut_off_checkpoint_and_a_second_run_is_refused(
    sb3: None, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    cmd = Command(train_args("--config", "configs/quick.yaml", "--run-dir", str(run), steps=256))
    code, _, err = cmd.finish()
    assert code == 0, err[-3000:]
    # a checkpoint cut off by kill -9 or a full disk in an older version: newest, damaged
    good = run / "checkpoints" / "ckpt_256_steps.zip"
    cut = run / "checkpoints" / "ckpt_384_steps.zip"
    cut.write_bytes(good.read_bytes()[:5000])
    # and one whose zip is whole but whose network is garbage
    with (
        zipfile.ZipFile(good) as src,
        zipfile.ZipFile(cut.with_name("ckpt_320_steps.zip"), "w") as dst,
    ):
        for name in src.namelist():
            dst.writestr(name, b"garbage" if name == "policy.pth" else src.read(name))
    config_before = (run / "config.yaml").read_bytes()

    # a resume that finds nothing to resume from changes nothing
    empty = tmp_path / "empty"
    (empty / "checkpoints").mkdir(parents=True)
    (empty / "config.yaml").write_bytes(config_before)
    (empty / "checkpoints" / "ckpt_128_steps.zip").write_bytes(b"PK\x03\x04 cut")
    refused = Command(train_args("--resume", str(empty), "--set", "seed=5"))
    code, _, err = refused.finish()
    assert code == 2
    assert "no checkpoint to resume from" in err and len(err.strip().splitlines()) == 1
    assert (empty / "config.yaml").read_bytes() == config_before
    assert sorted(p.name for p in empty.rglob("*")) == [
        "checkpoints",
        "ckpt_128_steps.zip",
        "config.yaml",
    ]

    resumed = Command(train_args("--resume", str(run), steps=512))
    resumed.wait_for(lambda: (run / "checkpoints" / "ckpt_384_steps.zip").stat().st_size > 5000)
    # while it runs, the folder is locked: a second resume and a new run are refused
    for args in (
        train_args("--resume", str(run), steps=512),
        train_args("--config", "configs/quick.yaml", "--run-dir", str(run)),
    ):
        code, _, err = Command(args).finish()
        assert code == 2
        assert err.strip().splitlines() == [
            f"bergen-train: error: run folder {str(run)!r} is in use by another run (it holds "
            "the folder's lock); wait for it to end or choose another folder"
        ]
    code, out, err = resumed.finish()
    assert code == 0, err[-3000:]
    first = err.splitlines()[0]
    assert first.startswith(
        "bergen-train: checkpoint ckpt_384_steps.zip is damaged (not a readable zip file: "
        "File is not a zip file); checkpoint ckpt_320_steps.zip is damaged ("
    )
    assert first.endswith("); resuming from ckpt_256_steps.zip")
    assert "from ckpt_256_steps.zip at 256 steps" in out
    # a finished folder takes no second run
    code, _, err = Command(
        train_args("--config", "configs/quick.yaml", "--run-dir", str(run))
    ).finish()
    assert code == 2 and "already holds a run; continue it with --resume" in err


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_evaluate_stopped_by_a_signal_leaves_no_process(sig: int) -> None:
    cmd = Command(
        ["-m", "bergen_env.training.evaluate", "--agents", "greedy", "random"]
        + ["--matches", "200000", "--workers", "2", "--no-progress"]
    )
    cmd.wait_for(lambda: len(cmd.children()) >= 2)
    time.sleep(1.0)  # the workers are playing
    cmd.signal(sig)
    code, out, err = cmd.finish(timeout=60)
    assert cmd.survivors() == []
    if sig == signal.SIGTERM:
        assert code == 143 and err.strip().splitlines() == ["bergen-evaluate: terminated"]


def test_no_process_of_a_finished_command_is_left() -> None:
    cmd = Command(
        ["-m", "bergen_env.training.evaluate", "--agents", "greedy", "random"]
        + ["--matches", "8", "--workers", "2", "--no-progress"]
    )
    code, _, err = cmd.finish()
    assert code == 0, err
    assert cmd.survivors() == [] and marked_pids(cmd.mark) == []


# ---------------------------------------------------------------------- expert iteration


def expert_config(tmp_path: Path, **changes: object) -> Path:
    import dataclasses

    import yaml

    from tests.test_expert_iteration import tiny

    config = tmp_path / "tiny.yaml"
    fields = dataclasses.asdict(tiny(**changes))
    config.write_text(yaml.safe_dump({"default": fields}))
    return config


def tensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(path))


def test_expert_iteration_resumes_at_the_job_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    import bergen_env.training.expert_iteration as ei
    import bergen_env.training.expert_iteration_collection as collection
    from bergen_env.training.expert_iteration_run import read_metrics
    from bergen_env.training.run_folder import unlock

    config = expert_config(tmp_path, iterations=2)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    ei.main(["--config", str(config), "--run-dir", str(whole), "--no-progress"])

    jobs: list[int] = []
    collect = collection._collect_job

    def interrupted(args: tuple) -> collection.Decisions:
        jobs.append(args[3])
        if len(jobs) == 4:  # iteration 1, its second job of two
            raise KeyboardInterrupt
        return collect(args)

    monkeypatch.setattr(collection, "_collect_job", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ei.main(["--config", str(config), "--run-dir", str(cut), "--no-progress"])
    assert (cut / "state_0.safetensors").is_file() and not (cut / "state_1.safetensors").exists()
    assert [p.name for p in (cut / "jobs_1").iterdir()] == ["job_0.npz"]
    unlock(cut)

    done = len(jobs)
    ei.main(["--resume", str(cut), "--no-progress"])
    assert jobs[done:] == jobs[3:4]  # only the unfinished job is collected again
    assert not (cut / "jobs_1").exists()
    for name in ("iter_0.safetensors", "iter_1.safetensors", "state_1.safetensors"):
        a, b = tensors(whole / name), tensors(cut / name)
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{name}:{key}")
    timing = ("collect_s", "fit_s", "eval_s", "time_s")
    rows = [
        [
            {k: v for k, v in row.items() if k not in timing}
            for row in read_metrics(d / "metrics.csv", 9)
        ]
        for d in (whole, cut)
    ]
    assert rows[0] == rows[1] and len(rows[0]) == 2
    unlock(whole)
    unlock(cut)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_expert_iteration_stopped_by_a_signal_leaves_no_process(tmp_path: Path, sig: int) -> None:
    pytest.importorskip("torch")
    config = expert_config(tmp_path, decisions=100000, job_decisions=8, workers=2)
    run = tmp_path / "run"
    cmd = Command(
        [
            "-m",
            "bergen_env.training.expert_iteration",
            "--config",
            str(config),
            "--run-dir",
            str(run),
        ]
        + ["--no-progress"]
    )
    cmd.wait_for(lambda: (run / "jobs_0").is_dir() and len(list((run / "jobs_0").iterdir())) > 1)
    assert len(cmd.children()) >= 2
    cmd.signal(sig)
    code, _, err = cmd.finish(timeout=60)
    assert cmd.survivors() == []
    if sig == signal.SIGTERM:
        assert code == 143
        assert err.strip().splitlines()[-1] == (
            "python -m bergen_env.training.expert_iteration: terminated: continue with --resume "
            f"{run}"
        )


# ---------------------------------------------------------------------- keep what is finished


def test_rating_table_stopped_keeps_its_finished_pairs(tmp_path: Path) -> None:
    results = tmp_path / "pairs.json"
    cmd = Command(
        ["-m", "benchmarks.rating_table", "--agents", "random", "greedy", "heuristic"]
        + ["--matches", "100000", "--matches-for", "greedy", "4", "--results", str(results)]
    )
    cmd.wait_for(lambda: results.is_file() and results.read_text().count('"agents"') == 2)
    cmd.signal(signal.SIGINT)
    code, _, err = cmd.finish(timeout=60)
    assert code == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "python -m benchmarks.rating_table: interrupted: the pairs finished so far are kept in "
        f"{results}"
    )
    from benchmarks.rating_table import load_results

    assert len(load_results(results)) == 2
    assert cmd.survivors() == []


def test_rating_table_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "pairs.json"
    bad.write_text('{"format": "bergen_env rating results", "version": 2, "pairs": [')
    for args, message in (
        (["--results", str(bad)], f"results file {str(bad)!r}: not readable JSON"),
        (["--results", "/proc/pairs.json"], "--results '/proc/pairs.json': cannot write"),
        (["--matches", "0"], "matches must be an integer >= 1, got 0"),
    ):
        cmd = Command(["-m", "benchmarks.rating_table", "--agents", "random", "greedy", *args])
        code, out, err = cmd.finish(timeout=60)
        assert code == 2 and out == ""
        [line] = err.strip().splitlines()
        assert line.startswith(f"python -m benchmarks.rating_table: error: {message}"), line


def test_replay_reads_the_intact_matches_of_a_damaged_file(tmp_path: Path) -> None:
    from bergen_env.arena import run_tournament
    from bergen_env.rules import Rules
    from bergen_env.training.replay import main

    path = tmp_path / "matches.jsonl"
    run_tournament(["greedy", "random"], Rules.preset("standard"), matches=4, replays=path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1][:40] + b"\n"  # an edited line
    lines[3] = lines[3][: len(lines[3]) // 2]  # cut off by kill -9: the last line
    path.write_bytes(b"".join(lines))
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err):
        out = io.StringIO()
        assert main([str(path), "--match", "2"], stdout=out) == 0
    assert out.getvalue().startswith("match 2: ")
    assert err.getvalue().startswith(f"bergen-replay: {path}: damaged line(s) 2, 4 skipped (")
    with redirect_stderr(io.StringIO()):
        out = io.StringIO()
        assert main([str(path), "--verify"], stdout=out) == 1
    assert "all 2 intact match(es) reproduce every recorded score" in out.getvalue()
    err = io.StringIO()
    with redirect_stderr(err), pytest.raises(SystemExit):
        main([str(path), "--match", "3"])
    assert f"match 3 is damaged: {path}, line 4: not valid JSON" in err.getvalue()


# ---------------------------------------------------------------------- exact resume

EXACT = [
    "vec_env=subproc",
    "n_envs=2",
    "n_steps=64",
    "batch_size=64",
    "n_epochs=2",
    "net_arch=[16]",
    "eval_every=256",
    "eval_matches=4",
    "final_eval_matches=2",
    "eval_workers=1",
    "checkpoint_every=128",
    "imitation_teacher=null",
    "opponents=[random,greedy]",
    "eval_opponents=[random]",
    "learning_rate=0.0003",
    "total_timesteps=512",
]


def zip_tensors(path: Path, member: str) -> dict:

    import torch

    with zipfile.ZipFile(path) as archive:
        return torch.load(io.BytesIO(archive.read(member)), weights_only=True)


def csv_rows(path: Path) -> list[dict[str, str]]:

    rows = list(csv.DictReader(path.open()))
    return [
        {k: v for k, v in r.items() if not k.startswith("time/") and k != "elapsed_s"} for r in rows
    ]


#: The batched env (4 rows: random, greedy and one of league snapshots from step 128 on).
EXACT_BATCHED = [
    *EXACT,
    "vec_env=batched",
    "n_envs=4",
    "n_steps=32",
    "selfplay_start=0",
    "snapshot_every=128",
    "selfplay_prob=0.25",
    "reward=win",
]


@pytest.mark.parametrize("settings", [EXACT, EXACT_BATCHED], ids=["subproc", "batched"])
@pytest.mark.slow
def test_a_resumed_run_equals_the_undisturbed_run_bit_for_bit(
    sb3: None, tmp_path: Path, settings: list[str]
) -> None:

    import torch

    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    sets = [x for s in settings for x in ("--set", s)]
    code, _, err = Command(
        [
            "-m",
            "bergen_env.training.train",
            "--config",
            "configs/quick.yaml",
            *sets,
            "--run-dir",
            str(whole),
        ]
    ).finish(timeout=300)
    assert code == 0, err[-3000:]
    shutil.copytree(whole, resumed)
    for steps in (384, 512):  # as if killed just after the checkpoint at 256
        (resumed / "checkpoints" / f"ckpt_{steps}_steps.zip").unlink()
    code, out, err = Command(["-m", "bergen_env.training.train", "--resume", str(resumed)]).finish(
        300
    )
    assert code == 0, err[-3000:]
    assert "from ckpt_256_steps.zip at 256 steps exactly" in out
    final = "checkpoints/ckpt_512_steps.zip"
    for member in ("policy.pth", "policy.optimizer.pth"):
        a, b = zip_tensors(whole / final, member), zip_tensors(resumed / final, member)
        flat_a, flat_b = (
            torch.utils._pytree.tree_flatten(a)[0],
            torch.utils._pytree.tree_flatten(b)[0],
        )
        assert len(flat_a) == len(flat_b)
        for x, y in zip(flat_a, flat_b):
            assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y, member
    # the logs continue: no redone rows, the same values; elapsed time adds up
    assert csv_rows(whole / "progress.csv") == csv_rows(resumed / "progress.csv")
    assert csv_rows(whole / "metrics.csv") == csv_rows(resumed / "metrics.csv")

    elapsed = [float(r["elapsed_s"]) for r in csv.DictReader((resumed / "metrics.csv").open())]
    assert elapsed == sorted(elapsed)
    assert len(list((resumed / "tb").iterdir())) == 2  # one run folder, one event file per process


#: Writes that may bypass bergen_env.atomic_files: logs written line by line (a cut one loses
#: at most its last line) and the developer's regeneration of a docs page.
DIRECT_WRITES = {
    ("bergen_env/replay.py", 'open(path, "a" if append else "w"'),  # a replay log, appended
    ("bergen_env/arena.py", 'Path(replays).write_text(""'),  # that log, emptied
    ("training/tune_heuristic.py", 'open(run_dir / "metrics.csv", "w"'),  # a log, per line
    ("training/train_rllib.py", 'open(run_dir / "metrics.csv", "w"'),  # a log, per line
    ("training/config_ranges.py", "DOC.write_text("),  # regenerates docs/configs.md
    ("training/resume_state.py", 'open(filename, "r+" if header else "w+")'),  # SB3's monitor
    ("training/train.py", 'self.metrics.open("a"'),  # the training log, appended per line
}


def test_every_file_is_written_through_the_atomic_helper() -> None:
    """No writer of the package or its programs writes a file in place (``write_text``,
    ``write_bytes``, ``open(..., "w")``) but the logs of :data:`DIRECT_WRITES`."""
    import re

    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(r"\.write_text\(|\.write_bytes\(|\bopen\([^)\n]*[\"'][wax]\+?[\"']")
    found = set()
    for path in sorted([*root.glob("bergen_env/**/*.py"), *root.glob("training/**/*.py")]):
        name = path.relative_to(root).as_posix()
        if name == "bergen_env/atomic_files.py":
            continue
        for line in path.read_text().splitlines():
            if pattern.search(line) and "atomic_path(" not in line:
                match = [d for f, d in DIRECT_WRITES if f == name and d in line]
                found.add((name, match[0] if match else line.strip()))
    assert found == DIRECT_WRITES


def test_a_stop_is_not_held_up_by_finished_results() -> None:
    """``next_result`` and ``future_result`` honour a stop before taking an item that is
    already there: a backlog of finished jobs (each saved with an fsync) once kept an expert
    iteration running for a minute and a half after ``SIGTERM``."""
    import concurrent.futures
    import multiprocessing

    from bergen_env.stop import Terminated, future_result, handle_stop_signals, next_result

    with multiprocessing.get_context("fork").Pool(1) as pool:
        results = pool.imap(abs, range(-8, 0))
        assert next_result(results) == 8
        pool.close()
        pool.join()  # every other result is finished and waiting
        with handle_stop_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            with pytest.raises(Terminated):
                next_result(results)
            done: concurrent.futures.Future[int] = concurrent.futures.Future()
            done.set_result(1)
            with pytest.raises(Terminated):
                future_result(done)
        assert next_result(results) == 7  # the flag is cleared when the block ends
