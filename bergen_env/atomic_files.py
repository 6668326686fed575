"""Files written whole or not at all, and output paths checked before the work that fills them.

Every file the package and its programs write (policy files, checkpoints, results JSON, run
metadata) goes through :func:`atomic_path` or :func:`write_text`: the content goes to a
temporary file in the target's folder, is flushed to disk (``fsync``), and is renamed over the
target, so a crash, ``kill -9`` or a full disk leaves either the old file or the new one, never
a cut-off one. A failed write removes its temporary file and raises :class:`OutputError`, whose
message names the file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

#: Temporary files are named ``.<target name>.<random>.tmp<target suffix>`` (the suffix kept so
#: writers that choose a format by extension, such as matplotlib, pick the target's).
TEMP_MARK = ".tmp"


class OutputError(OSError):
    """An output file could not be written (or will not be writable); the message names it."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(path: Path) -> Path:
    """A fresh temporary name beside ``path`` (see :data:`TEMP_MARK`)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_MARK}{path.suffix}")


def is_temp_name(path: Path) -> bool:
    """Whether ``path`` is a temporary file left by an interrupted atomic write."""
    return path.name.startswith(".") and f"{TEMP_MARK}{path.suffix}" in path.name


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on a clean exit it replaces ``path`` atomically.

    For writers that take a file name (safetensors, torch, SB3, matplotlib). The temporary file
    exists (empty, with the permissions a new file gets) when the block starts; on an error it
    is removed and ``path`` is unchanged.
    """
    path = Path(path)
    tmp = temp_name(path)
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as exc:
        raise OutputError(exc.errno, f"cannot write {str(path)!r}: {_describe(exc)}") from None
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(exc.errno, f"cannot write {str(path)!r}: {_describe(exc)}") from exc
        raise
    _fsync_dir(path.parent)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
    return path


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns ``path``."""
    return write_bytes(path, text.encode(encoding))


def append_line(path: str | Path, line: str) -> None:
    """Append one line to a log file and flush it to disk (a crash cuts at most this line)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line if line.endswith("\n") else line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def check_writable(path: str | Path, what: str = "output") -> Path:
    """Raise :class:`OutputError` now if ``path`` could not be written later.

    The folder must exist and accept a new file (tried with a temporary file, removed again),
    and ``path`` must not be a folder. Nothing else is changed.
    """
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(
            errno.ENOENT, f"{what} {str(path)!r}: folder {str(folder)!r} does not exist"
        )
    if path.is_dir():
        raise OutputError(errno.EISDIR, f"{what} {str(path)!r} is a folder")
    tmp = temp_name(path)
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as exc:
        why = _describe(exc)
        raise OutputError(exc.errno, f"{what} {str(path)!r}: cannot write: {why}") from None
    tmp.unlink()
    return path
