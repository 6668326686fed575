"""``--resume`` of a run folder someone else made: its pickles never run code.

The checkpoint zip's resume state and the SB3 ``data`` entries are read by
``bergen_env.training.resume_state.safe_loads``, which rebuilds only what a resume state holds. One
row of docs/reliability.md.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from bergen_env.training.cli import run  # noqa: E402 (after the importorskip)
from bergen_env.training.config import load_config, save_config  # noqa: E402
from bergen_env.training.resume_state import (  # noqa: E402
    STATE_MEMBER,
    ResumableEnv,
    UnsafePickleError,
    capture,
    read_state,
    safe_loads,
)
from bergen_env.training.train import (  # noqa: E402
    build_model,
    load_checkpoint,
    main,
    make_vec_env,
    save_checkpoint,
)

TINY = [
    "vec_env=dummy",
    "n_envs=2",
    "n_steps=32",
    "batch_size=32",
    "n_epochs=1",
    "net_arch=[8]",
    "imitation_teacher=null",
    "opponents=[random,greedy,heuristic]",
    "total_timesteps=10000",
]


class Marker:
    """Unpickled, writes the file ``path`` (what a hostile pickle would do, harmlessly)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Callable[..., object], tuple[str, ...]]:
        return os.system, (f"touch {self.path}",)


class PoolOfPPO:
    """Unpickled, calls a bergen-train class's ``__init__`` with a ``ppo:`` agent (whose file
    would be unpickled): a class may be rebuilt, never called."""

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        from bergen_env.training.selfplay import OpponentPool

        return OpponentPool, (["ppo:path=evil.zip,trust_pickle=true"], None, 0.0, 1, 0)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder with one checkpoint (and its resume state), as bergen-train writes it."""
    run_dir = tmp_path_factory.mktemp("made") / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    cfg = load_config(Path("configs/quick.yaml"), TINY)
    save_config(cfg, run_dir / "config.yaml")
    env = make_vec_env(cfg, None)
    model = build_model(cfg, env, run_dir)
    model.learn(64)
    save_checkpoint(model, run_dir, capture(model, env, 1.0, 0.5))
    env.close()
    return run_dir


def the_checkpoint(run_dir: Path) -> Path:
    (path,) = (run_dir / "checkpoints").glob("ckpt_*_steps.zip")
    return path


def rewrite_member(path: Path, member: str, edit: Callable[[bytes], bytes]) -> None:
    """Replace ``member`` of the zip ``path`` by ``edit`` of it."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members[member] = edit(members[member])
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_a_checkpoint_written_here_loads_with_its_resume_state(made: Path) -> None:
    cfg = load_config(made / "config.yaml", [])
    model, state = load_checkpoint(the_checkpoint(made), cfg)
    assert model.num_timesteps == 64
    assert state is not None and state["best"] == 0.5 and len(state["envs"]) == 2
    env = ResumableEnv(safe_loads(state["envs"][0], "env"))
    obs, _ = env.reset(seed=3)
    assert obs.shape == model.observation_space.shape


def hostile(where: str, marker: Path) -> Callable[[bytes], bytes]:
    """An edit of a checkpoint member that plants a hostile pickle ``where``."""
    evil = pickle.dumps(PoolOfPPO() if where == "a class call" else Marker(marker), protocol=5)

    def edit(data: bytes) -> bytes:
        if where == "the SB3 data":
            items = json.loads(data)
            items["policy_class"] = {":serialized:": base64.b64encode(evil).decode()}
            return json.dumps(items).encode()
        if where == "the resume state":
            return evil
        state = pickle.loads(data)  # this test's own file
        state["envs"][1] = evil
        return pickle.dumps(state, protocol=5)

    return edit


@pytest.mark.parametrize("where", ["the resume state", "an env", "a class call", "the SB3 data"])
def test_a_hostile_pickle_in_a_run_folder_is_refused_and_never_runs(
    made: Path, tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "shared"
    shutil.copytree(made, run_dir)
    ckpt, marker = the_checkpoint(run_dir), tmp_path / "ran"
    member = "data" if where == "the SB3 data" else STATE_MEMBER
    rewrite_member(ckpt, member, hostile(where, marker))
    before = sorted(p.name for p in run_dir.iterdir())

    assert run("bergen-train", main, ["--resume", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert not marker.exists()
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"bergen-train: error: {ckpt} (")
    refused = "OpponentPool" if where == "a class call" else "global posix.system"
    assert "refusing to unpickle " in err and refused in err
    assert sorted(p.name for p in run_dir.iterdir()) == before  # nothing written


def test_safe_loads_refuses_any_other_global_and_reads_data() -> None:
    with pytest.raises(UnsafePickleError, match=r"^f\.pkl: refusing .* global builtins\.eval"):
        safe_loads(b"cbuiltins\neval\n(S'1'\ntR.", "f.pkl")
    with pytest.raises(UnsafePickleError, match="global bergen_env.atomic_files.write_text"):
        from bergen_env.atomic_files import write_text

        safe_loads(pickle.dumps(write_text), "f.pkl")  # a bergen_env function, not a class
    with pytest.raises(ValueError, match=r"^f\.pkl: damaged pickle"):
        safe_loads(b"\x80\x05garbage", "f.pkl")
    data = {"rng": np.random.default_rng(7), "a": np.arange(3.0), "x": np.float32(2)}
    back = safe_loads(pickle.dumps(data, protocol=5), "f.pkl")
    assert back["rng"].integers(1 << 30) == np.random.default_rng(7).integers(1 << 30)
    assert back["a"].tolist() == [0.0, 1.0, 2.0] and back["x"] == np.float32(2)


def test_read_state_of_a_checkpoint_without_one_is_none(made: Path, tmp_path: Path) -> None:
    path = tmp_path / "plain.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", "{}")
    assert read_state(path) is None


def test_a_restored_opponent_pool_lists_only_this_runs_snapshots(tmp_path: Path) -> None:
    from bergen_env.training.selfplay import OpponentPool

    pool = OpponentPool(["random"], tmp_path / "theirs", 1.0, 2, seed=0, latest_only=True)
    pool._snapshots = [tmp_path / "theirs" / "snapshot_0000000064.zip"]  # a file it would load
    pool._mtime = 5
    blob = pickle.dumps({"pool": pool}, protocol=5)
    ours = tmp_path / "ours"
    back = safe_loads(blob, "env state", ours)["pool"]
    assert (back.snapshot_dir, back._snapshots, back._mtime) == (ours, [], -1)
    assert back().name == "random"  # no snapshot of ours yet: a scripted agent
    assert safe_loads(blob, "env state")["pool"].snapshot_dir is None


def test_a_state_written_under_the_former_module_name_loads(tmp_path: Path) -> None:
    """Run folders written when the training modules were the top-level ``training`` resume,
    with the same allow-list: no class of the training programs but ``OpponentPool``."""
    from bergen_env.training.selfplay import OpponentPool

    pool = OpponentPool(["random"], tmp_path / "run", 1.0, 2, seed=0, latest_only=True)
    blob = pickle.dumps({"pool": pool}, protocol=2)  # globals as text: "c<module>\n<name>\n"
    assert b"cbergen_env.training.selfplay\nOpponentPool\n" in blob
    old = blob.replace(b"cbergen_env.training.selfplay\n", b"ctraining.selfplay\n")
    back = safe_loads(old, "env state", tmp_path / "run")["pool"]
    assert isinstance(back, OpponentPool) and back().name == "random"
    with pytest.raises(UnsafePickleError, match="global bergen_env.training.train.main"):
        safe_loads(b"ctraining.train\nmain\n.", "f.pkl")  # renamed, still checked
    for pickled in (b"ctraining.train\n", b"cbergen_env.training.train\n"):  # the two names
        with pytest.raises(UnsafePickleError, match="global bergen_env.training.train.Checkpoints"):
            safe_loads(pickled + b"Checkpoints\n.", "f.pkl")  # a class, not allowed


@pytest.mark.parametrize("cut", [1, 3, STATE_MEMBER])
def test_a_checkpoint_cut_mid_write_leaves_the_old_one(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int | str
) -> None:
    """The disk fills during the ``cut``-th member the writer puts in the zip (SB3's data, its
    parameters) or during the resume state's: the checkpoint it was replacing (the same steps,
    the same path) is intact, byte for byte, and no temporary file is left. The fault is
    injected in the zip writes themselves, so a writer that wrote in place (not through
    ``atomic_path``) fails here."""
    run_dir = tmp_path / "run"
    shutil.copytree(made, run_dir)
    old = the_checkpoint(run_dir)
    before = old.read_bytes()
    cfg = load_config(run_dir / "config.yaml", [])
    model, state = load_checkpoint(old, cfg)
    writes = 0
    real_open = zipfile.ZipFile.open

    def failing_open(self, name, mode="r", *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        nonlocal writes
        if mode == "w":
            writes += 1
            member = name if isinstance(name, str) else name.filename
            if cut in (writes, member):
                raise OSError(28, "No space left on device")
        return real_open(self, name, mode, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", failing_open)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(model, run_dir, b"resume state")
    monkeypatch.undo()
    assert writes == cut or writes > 3  # the cut came inside the writer
    assert old.read_bytes() == before
    assert sorted(p.name for p in old.parent.iterdir()) == [old.name]
