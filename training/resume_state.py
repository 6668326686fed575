"""Exact resume of ``bergen-train``: what a checkpoint holds beyond the network and optimizer.

A checkpoint made at a rollout boundary (``ckpt_<steps>_steps.zip``) carries one more zip member,
:data:`STATE_MEMBER`: the random streams of the learner process (torch, numpy, python), every
env worker's env as it stands (the match in progress, its random generator, the opponents and
theirs; with ``vec_env: batched`` the batch's arrays and the league's results), the learner's
last observations, the episode statistics and the run's elapsed time and
best evaluation. Restored, training continues step for step as the undisturbed run did.

The member is a pickle, but it is never unpickled freely: :func:`safe_loads` rebuilds only the
objects such a state holds (:data:`SAFE_CLASSES`, :data:`SAFE_CALLS`) and refuses any other
global, so a run folder from someone else cannot run code on ``--resume``. The same reader takes
the cloudpickled entries of the SB3 zip's ``data`` member (:func:`sb3_objects`; its tensors load
with ``weights_only``). Logs continue rather than repeat: ``progress.csv`` and ``metrics.csv``
lose the rows past the checkpoint, TensorBoard hides the events past it (``purge_step``).
"""

from __future__ import annotations

import base64
import csv
import importlib
import io
import json
import pickle
import random
import zipfile
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.logger import CSVOutputFormat, TensorBoardOutputFormat
from stable_baselines3.common.vec_env import VecEnv

from bergen_env.atomic_files import write_text

from .cli import UsageError
from .selfplay import OpponentPool

#: The zip member of a checkpoint that holds the resume state.
STATE_MEMBER = "bergen_resume_state.pkl"
STATE_VERSION = 1
#: ``progress.csv``'s column of the step count.
STEP_COLUMN = "time/total_timesteps"


# ---------------------------------------------------------------------------- safe unpickling


class UnsafePickleError(UsageError):
    """A pickle that names a global the resume state never holds (it could run code)."""


def _bit_generator(kind: Any = "MT19937") -> np.random.BitGenerator:
    """numpy's bit generator pickling helper, for bit generator classes and names only."""
    if isinstance(kind, type) and issubclass(kind, np.random.BitGenerator):
        return kind()
    if kind not in _BIT_GENERATORS:
        raise ValueError(f"{kind!r} is not a numpy bit generator")
    return getattr(np.random, kind)()


def _generator(bit_generator: Any = "MT19937", ctor: Any = None) -> np.random.Generator:
    """numpy's ``Generator`` pickling helper, without its free choice of constructor."""
    if ctor not in (None, _bit_generator):
        raise ValueError(f"{ctor!r} is not numpy's bit generator constructor")
    if isinstance(bit_generator, np.random.BitGenerator):
        return np.random.Generator(bit_generator)
    return np.random.Generator(_bit_generator(bit_generator))


def _torch_storage(data: bytes) -> Any:
    """torch's storage pickling helper, reading its bytes with ``weights_only``."""
    return torch.load(io.BytesIO(data), weights_only=True)


_BIT_GENERATORS = ("MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64")
_NUMPY = ("numpy._core", "numpy.core")  # numpy 2's module names and numpy 1's

#: Classes a resume state may hold, rebuilt with ``__new__`` (their ``__init__`` never runs).
SAFE_CLASSES: frozenset[tuple[str, str]] = frozenset(
    {
        ("numpy", "ndarray"),
        ("numpy.random._generator", "Generator"),
        ("numpy.random.bit_generator", "SeedSequence"),
        *((getattr(np.random, n).__module__, n) for n in _BIT_GENERATORS),
        ("gymnasium.spaces.box", "Box"),
        ("stable_baselines3.common.monitor", "Monitor"),
        ("sb3_contrib.common.maskable.policies", "MaskableActorCriticPolicy"),
        ("sb3_contrib.common.maskable.buffers", "MaskableRolloutBuffer"),
        ("torch.nn.modules.activation", "ReLU"),
        ("torch.nn.modules.activation", "Tanh"),
        # re-pointed at this run's snapshots on load
        ("bergen_env.training.selfplay", "OpponentPool"),
    }
)
#: The prefix of the modules whose classes (never functions) a resume state may also hold: the
#: env, its match, rules and scripted agents; not the training programs' own (:data:`PROGRAMS`).
SAFE_PACKAGE = "bergen_env."
#: The training programs, inside :data:`SAFE_PACKAGE` but none of whose classes a state may
#: hold beyond :data:`SAFE_CLASSES`.
PROGRAMS = "bergen_env.training."
#: Module prefixes renamed since a resume state could have been written (the training modules
#: were the top-level package ``training`` for a while): a state's globals are read under the
#: new name.
RENAMED_MODULES: dict[str, str] = {"training.": "bergen_env.training."}
#: The only callables a pickle may call (pickle's REDUCE): data rebuilders.
SAFE_CALLS: frozenset[tuple[str, str]] = frozenset(
    {
        ("collections", "OrderedDict"),
        ("collections", "deque"),
        ("_codecs", "encode"),  # bytes in pickle protocols < 3
        ("pathlib", "PosixPath"),  # a self-play pool's folder (replaced on load)
        ("numpy", "dtype"),
        ("gymnasium.spaces.discrete", "Discrete"),
        ("torch._utils", "_rebuild_tensor_v2"),
        ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
        *((m + ".multiarray", n) for m in _NUMPY for n in ("scalar", "_reconstruct")),
        *((m + ".numeric", "_frombuffer") for m in _NUMPY),
    }
)
#: Pickling helpers of numpy and torch that may be called only as checked replacements.
SUBSTITUTES: dict[tuple[str, str], Callable[..., Any]] = {
    ("numpy.random._pickle", "__bit_generator_ctor"): _bit_generator,
    ("numpy.random._pickle", "__generator_ctor"): _generator,
    ("torch.storage", "_load_from_bytes"): _torch_storage,
}


class _SafeUnpickler(pickle._Unpickler):  # the Python unpickler: its opcodes can be restricted
    """``pickle.Unpickler`` that resolves only :data:`SAFE_CLASSES`, classes of
    :data:`SAFE_PACKAGE`, :data:`SAFE_CALLS` and :data:`SUBSTITUTES`, and calls only the last
    two."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data: bytes, source: str) -> None:
        super().__init__(io.BytesIO(data))
        self.source = source
        self.callables: set[int] = set()
        self.pools: list[OpponentPool] = []  # every opponent pool rebuilt

    def refuse(self, what: str) -> UnsafePickleError:
        return UnsafePickleError(
            f"{self.source}: refusing to unpickle {what}: a bergen-train checkpoint never "
            "holds it (unpickling it could run code from the file)"
        )

    def find_class(self, module: str, name: str) -> Any:
        for old, new in RENAMED_MODULES.items():
            if module.startswith(old):
                module = new + module[len(old) :]
        key = (module, name)
        found = SUBSTITUTES.get(key)
        if found is None and (
            key in SAFE_CALLS
            or key in SAFE_CLASSES
            or (module.startswith(SAFE_PACKAGE) and not module.startswith(PROGRAMS))
        ):
            try:
                found = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                found = None
            if key not in SAFE_CALLS and not (
                isinstance(found, type) and (key in SAFE_CLASSES or found.__module__ == module)
            ):
                found = None  # a function of bergen_env, or a name that is not what it says
        if found is None:
            raise self.refuse(f"global {module}.{name}")
        if key in SAFE_CALLS or key in SUBSTITUTES:
            self.callables.add(id(found))
        return found

    def load_reduce(self) -> None:
        if id(self.stack[-2]) not in self.callables:
            raise self.refuse(f"a call of {self.stack[-2]!r}")
        super().load_reduce()

    def load_newobj(self) -> None:
        super().load_newobj()
        self.note(self.stack[-1])

    def load_newobj_ex(self) -> None:
        super().load_newobj_ex()
        self.note(self.stack[-1])

    def note(self, obj: Any) -> None:
        if isinstance(obj, OpponentPool):
            self.pools.append(obj)

    def load_refused(self) -> None:
        raise self.refuse("an old-protocol instance (it calls __init__)")

    def persistent_load(self, pid: Any) -> Any:
        raise self.refuse("a persistent id")

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.INST[0]] = load_refused
    dispatch[pickle.OBJ[0]] = load_refused


def safe_loads(data: bytes, source: str, snapshot_dir: Path | None = None) -> Any:
    """Unpickle ``data`` (from the file ``source``) if it names only what a resume state holds,
    else raise :class:`UnsafePickleError` (one line naming the file and the refused global).

    Every opponent pool in it is pointed at ``snapshot_dir`` (this run's self-play snapshots,
    listed afresh when next drawn from) whatever folder or files the pickle named: a pool loads
    the snapshots it lists."""
    unpickler = _SafeUnpickler(data, source)
    try:
        found = unpickler.load()
    except UnsafePickleError:
        raise
    except Exception as exc:  # a damaged pickle may fail anywhere in the reader
        raise ValueError(f"{source}: damaged pickle ({type(exc).__name__}: {exc})") from None
    for pool in unpickler.pools:  # the pool's cache of the listing and of loaded snapshots
        pool.snapshot_dir, pool._snapshots, pool._mtime, pool._loaded = snapshot_dir, [], -1, {}
    return found


def sb3_objects(path: Path, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` plus every cloudpickled entry of the SB3 zip ``path``'s ``data`` member, read
    with :func:`safe_loads`: passed as ``custom_objects``, SB3's load unpickles nothing."""
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read("data"))
    objects = dict(given)
    for key, item in data.items():
        if key not in objects and isinstance(item, dict) and ":serialized:" in item:
            blob = base64.b64decode(item[":serialized:"])
            objects[key] = safe_loads(blob, f"{path} (data: {key})")
    return objects


# ---------------------------------------------------------------------------- capture and restore


class ResumableEnv(gym.Wrapper):
    """The outermost wrapper of a training env: its whole state as bytes, and back
    (``snapshot_dir``: the run's self-play snapshots, if any)."""

    def __init__(self, env: gym.Env, snapshot_dir: Path | None = None) -> None:
        super().__init__(env)
        self.snapshot_dir = snapshot_dir

    def get_state(self) -> bytes | None:
        """The wrapped env pickled (``None`` if some part of it cannot be, or would not be read
        back by :func:`safe_loads`)."""
        try:
            state = pickle.dumps(self.env, protocol=pickle.HIGHEST_PROTOCOL)
            safe_loads(state, "env state")
        except Exception:  # e.g. an agent not made of safe classes: resume restarts the envs
            return None
        return state

    def set_state(self, state: bytes) -> None:
        """Replace the wrapped env by the one :meth:`get_state` gave."""
        self.env = safe_loads(state, "env state", self.snapshot_dir)


def capture(model: Any, env: VecEnv, elapsed_s: float, best: float) -> bytes | None:
    """The resume state at a rollout boundary (``None`` if an env cannot be saved)."""
    if hasattr(env, "state_dict"):  # the batched env (bergen_env.training.batched_env): one state
        envs: Any = env.state_dict()
    else:
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
    """The resume state of checkpoint ``path`` (``None`` if it holds none), read and checked
    whole (each env's too) with :func:`safe_loads`."""
    with zipfile.ZipFile(path) as archive:
        if STATE_MEMBER not in archive.namelist():
            return None
        source = f"{path} ({STATE_MEMBER})"
        state = safe_loads(archive.read(STATE_MEMBER), source)
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        return None
    if isinstance(state["envs"], list):  # process envs: each env pickled on its own
        for i, env in enumerate(state["envs"]):
            safe_loads(env, f"{source}, env {i}")
    return state


def restore(model: Any, env: VecEnv, state: dict[str, Any]) -> bool:
    """Put the envs and the learner's rollout position back; ``False`` (nothing changed) if
    the state does not fit ``env`` (another ``n_envs`` or kind of env)."""
    if isinstance(state["envs"], dict):  # a batched env's state
        if not hasattr(env, "load_state_dict") or not env.load_state_dict(state["envs"]):
            return False
    elif hasattr(env, "load_state_dict") or len(state["envs"]) != env.num_envs:
        return False
    else:
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
