"""Exact resume of ``bergen-train``: what a checkpoint holds beyond the network and optimizer.

A checkpoint made at a rollout boundary (``ckpt_<steps>_steps.zip``) carries one more zip member,
:data:`STATE_MEMBER`: the random streams of the learner process (torch, numpy, python), every
env worker's env as it stands (the match in progress, its random generator, the opponents and
theirs), the learner's last observations, the episode statistics and the run's elapsed time and
best evaluation. Restored, training continues step for step as the undisturbed run did.

The member is a pickle, read only by ``--resume`` of the run folder that wrote it (as the SB3
zip beside it is). Logs continue rather than repeat: ``progress.csv`` and ``metrics.csv`` lose
the rows past the checkpoint, TensorBoard hides the events past it (``purge_step``).
"""

from __future__ import annotations

import csv
import io
import pickle
import random
import zipfile
from collections import deque
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.logger import CSVOutputFormat, TensorBoardOutputFormat
from stable_baselines3.common.vec_env import VecEnv

from bergen_env.atomic_files import write_text

#: The zip member of a checkpoint that holds the resume state.
STATE_MEMBER = "bergen_resume_state.pkl"
STATE_VERSION = 1
#: ``progress.csv``'s column of the step count.
STEP_COLUMN = "time/total_timesteps"


class ResumableEnv(gym.Wrapper):
    """The outermost wrapper of a training env: its whole state as bytes, and back."""

    def get_state(self) -> bytes | None:
        """The wrapped env pickled (``None`` if some part of it cannot be)."""
        try:
            return pickle.dumps(self.env, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an agent that cannot be pickled: resume restarts the envs
            return None

    def set_state(self, state: bytes) -> None:
        """Replace the wrapped env by the one :meth:`get_state` gave."""
        self.env = pickle.loads(state)  # noqa: S301 (this run's own checkpoint)


def capture(model: Any, env: VecEnv, elapsed_s: float, best: float) -> bytes | None:
    """The resume state at a rollout boundary (``None`` if an env cannot be saved)."""
    envs = env.env_method("get_state")
    if any(s is None for s in envs):
        return None
    state = {
        "version": STATE_VERSION,
        "rng": {
            "torch": torch.get_rng_state(),
            "numpy": np.random.get_state(),  # noqa: NPY002 (SB3 shuffles minibatches with it)
            "python": random.getstate(),
        },
        "envs": envs,
        "last_obs": model._last_obs,
        "last_episode_starts": model._last_episode_starts,
        "ep_info_buffer": list(model.ep_info_buffer or []),
        "ep_success_buffer": list(model.ep_success_buffer or []),
        "elapsed_s": elapsed_s,
        "best": best,
        "log": {  # values recorded since the last dump (the last update's train/ metrics)
            "values": dict(model.logger.name_to_value),
            "counts": dict(model.logger.name_to_count),
            "excluded": dict(model.logger.name_to_excluded),
        },
    }
    return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)


def add_state(path: Path, state: bytes) -> None:
    """Append the state member to the checkpoint zip ``path`` (a temporary file, not yet in
    place)."""
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(STATE_MEMBER, state)


def read_state(path: Path) -> dict[str, Any] | None:
    """The resume state of checkpoint ``path`` (``None`` if it holds none)."""
    with zipfile.ZipFile(path) as archive:
        if STATE_MEMBER not in archive.namelist():
            return None
        state = pickle.loads(archive.read(STATE_MEMBER))  # noqa: S301 (this run's own file)
    return state if state.get("version") == STATE_VERSION else None


def restore(model: Any, env: VecEnv, state: dict[str, Any]) -> bool:
    """Put the envs and the learner's rollout position back; ``False`` (nothing changed) if
    the state does not fit ``env`` (another ``n_envs``)."""
    if len(state["envs"]) != env.num_envs:
        return False
    for i, blob in enumerate(state["envs"]):
        env.env_method("set_state", blob, indices=[i])
    model._last_obs = state["last_obs"]
    model._last_episode_starts = state["last_episode_starts"]
    model.ep_info_buffer = deque(state["ep_info_buffer"], maxlen=model._stats_window_size)
    model.ep_success_buffer = deque(state["ep_success_buffer"], maxlen=model._stats_window_size)
    model.logger.name_to_value.update(state["log"]["values"])
    model.logger.name_to_count.update(state["log"]["counts"])
    model.logger.name_to_excluded.update(state["log"]["excluded"])
    return True


def restore_rng(state: dict[str, Any]) -> None:
    """Set the learner process's random streams (call just before training continues)."""
    torch.set_rng_state(state["rng"]["torch"])
    np.random.set_state(state["rng"]["numpy"])  # noqa: NPY002 (SB3's minibatch shuffles)
    random.setstate(state["rng"]["python"])


def trim_csv(path: Path, column: str, steps: int) -> list[str]:
    """Drop the rows of ``path`` whose ``column`` exceeds ``steps`` (rewritten atomically);
    returns the header."""
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    col = header.index(column) if column in header else None

    def keep(row: list[str]) -> bool:
        if col is None or col >= len(row) or not row[col]:
            return True
        try:
            return float(row[col]) <= steps
        except ValueError:  # a row cut off by a crash
            return False

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(r for r in body if len(r) == len(header) and keep(r))
    write_text(path, text.getvalue())
    return header


class ContinuedCSV(CSVOutputFormat):
    """SB3's CSV log, continuing an existing file after its rows up to ``steps``."""

    def __init__(self, filename: str, steps: int) -> None:
        header = trim_csv(Path(filename), STEP_COLUMN, steps)
        self.file = open(filename, "r+" if header else "w+")  # noqa: SIM115 (see close())
        self.file.seek(0, io.SEEK_END)
        self.keys = list(header)
        self.separator = ","
        self.quotechar = '"'


class ContinuedTensorBoard(TensorBoardOutputFormat):
    """SB3's TensorBoard log in the same folder, the events past ``steps`` hidden."""

    def __init__(self, folder: str, steps: int) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=folder, purge_step=steps + 1)
        self._is_closed = False
