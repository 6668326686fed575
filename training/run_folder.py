"""Run folders of long jobs: one run at a time, names that cannot collide, good checkpoints.

- :func:`new_run_dir` makes a fresh folder ``<parent>/<stem>__<time>`` (``-2``, ``-3``, ... when
  another run took that name in the same second: ``mkdir`` decides, so two runs never share one).
- :func:`lock_run_dir` takes the operating system's lock on the folder (``flock`` on the folder
  itself, so no file is added); the kernel drops it when the process ends, however it ends. A
  second run or a resume into a locked folder is a :class:`~bergen_env.training.cli.UsageError`.
- :func:`start_worker` is the first call of every worker process a run forks: it ends with its
  parent (:func:`bergen_env.parent_watch.die_with_parent`) and lets go of the inherited lock.
- :func:`newest_good` finds the newest checkpoint that loads, skipping cut-off or damaged ones.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import re
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from bergen_env.atomic_files import is_temp_name
from bergen_env.parent_watch import die_with_parent

from .cli import UsageError

T = TypeVar("T")

#: File descriptors of the run folders this process holds locked.
_LOCKS: dict[Path, int] = {}


def new_run_dir(parent: Path, stem: str) -> Path:
    """Create and return a new folder ``parent/<stem>__<YYYYmmdd-HHMMSS>[-k]``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    k = 1
    while True:
        path = parent / (f"{stem}__{stamp}" + (f"-{k}" if k > 1 else ""))
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            k += 1
        except OSError as exc:
            raise UsageError(f"run folder {str(path)!r}: {exc.strerror}") from None


def make_run_dir(path: Path) -> Path:
    """Create the folder ``path`` (and its parents) if missing; errors are one line."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"run folder {str(path)!r}: {exc.strerror}") from None
    return path


def lock_run_dir(path: Path) -> None:
    """Hold the OS lock on the folder ``path`` until this process ends (or :func:`unlock`).

    Raises :class:`UsageError` if another process holds it.
    """
    path = Path(path)
    key = path.resolve()
    if key in _LOCKS:
        return
    try:
        import fcntl
    except ImportError:  # no flock (Windows): folders are not locked
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UsageError(
            f"run folder {str(path)!r} is in use by another run (it holds the folder's lock); "
            "wait for it to end or choose another folder"
        ) from None
    _LOCKS[key] = fd


def claim_new_run(run_dir: Path | None, parent: Path, stem: str) -> Path:
    """The locked folder of a new run: ``run_dir`` (made if missing), or by default a fresh
    :func:`new_run_dir`; a folder that already holds a run (its ``config.yaml``) is refused."""
    path = new_run_dir(parent, stem) if run_dir is None else make_run_dir(Path(run_dir))
    lock_run_dir(path)
    if (path / "config.yaml").exists():
        raise UsageError(
            f"run folder {str(path)!r} already holds a run; continue it with "
            f"--resume {path} or choose another --run-dir"
        )
    return path


def claim_resumed_run(run_dir: Path) -> Path:
    """The locked folder of a run to resume (it must hold a ``config.yaml``); nothing in it is
    changed."""
    config = run_dir / "config.yaml"
    if not config.is_file():
        raise UsageError(f"--resume: not a run folder: {str(config)!r} does not exist")
    lock_run_dir(run_dir)
    return run_dir


def unlock(path: Path) -> None:
    """Release the lock :func:`lock_run_dir` took on ``path`` (a no-op if not held)."""
    fd = _LOCKS.pop(Path(path).resolve(), None)
    if fd is not None:
        os.close(fd)


def start_worker(parent: int) -> None:
    """First call of a forked worker: end with process ``parent``, close the inherited locks
    (the parent keeps them: a lock ends with the last descriptor that holds it)."""
    die_with_parent(parent)
    for fd in _LOCKS.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _LOCKS.clear()


@contextlib.contextmanager
def forked_pool(workers: int) -> Iterator[multiprocessing.pool.Pool]:
    """A pool of ``workers`` forked processes that end with this one (:func:`start_worker`).
    Leaving the block normally closes the pool and waits for the workers to empty its queue and
    exit; an exception (Ctrl-C included) terminates them first."""
    pool = multiprocessing.get_context("fork").Pool(
        workers, initializer=start_worker, initargs=(os.getpid(),)
    )
    try:
        yield pool
    except BaseException:
        pool.terminate()
        raise
    else:
        pool.close()
    finally:
        pool.join()


def remove_temp_files(folder: Path) -> list[Path]:
    """Delete the temporary files interrupted atomic writes left under ``folder``."""
    removed = [p for p in folder.rglob(".*") if p.is_file() and is_temp_name(p)]
    for p in removed:
        p.unlink(missing_ok=True)
    return removed


def numbered(folder: Path, pattern: re.Pattern[str]) -> list[tuple[int, Path]]:
    """Files of ``folder`` whose name matches ``pattern`` (one int group), newest number first."""
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := pattern.match(p.name))]
    return sorted(found, reverse=True)


def zip_problem(path: Path, members: Iterable[str] = ()) -> str | None:
    """Why the zip file ``path`` is not whole (``None`` if every member reads back intact)."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
            names = set(archive.namelist())
    except (OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        return f"not a readable zip file: {exc}"
    if bad is not None:
        return f"member {bad!r} is damaged"
    missing = sorted(set(members) - names)
    if missing:
        return f"missing member(s) {missing}"
    return None


def newest_good(
    candidates: list[tuple[int, Path]], load: Callable[[Path], T], what: str = "checkpoint"
) -> tuple[Path, T, list[str]] | None:
    """The first of ``candidates`` (newest first) that ``load`` opens, its loaded value, and one
    note per skipped candidate; ``None`` if none opens."""
    notes: list[str] = []
    for _, path in candidates:
        try:
            value = load(path)
        except Exception as exc:  # a damaged file may fail anywhere in its reader
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            notes.append(f"{what} {path.name} is damaged ({why[:200]})")
            continue
        return path, value, notes
    return None
