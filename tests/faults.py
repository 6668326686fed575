"""Helpers of the fault tests: start a long command, find the processes it left, kill it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "BERGEN_FAULT_TEST"


def marked_pids(mark: str) -> list[int]:
    """Live processes whose environment holds ``MARK=mark`` (the command and every child)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


class Command:
    """A command started in its own session, its processes marked for :func:`marked_pids`."""

    def __init__(self, args: list[str], cwd: Path = ROOT) -> None:
        self.mark = uuid.uuid4().hex
        env = os.environ | {MARK: self.mark, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def wait_for(self, ready: Callable[[], bool], timeout: float = 120.0) -> None:
        """Wait until ``ready()`` (or fail if the command ends or ``timeout`` passes first)."""
        end = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"the command ended early:\n{self.proc.stderr.read()[-3000:]}")
            if time.monotonic() > end:
                self.kill_all()
                raise AssertionError("the command did not get ready in time")
            time.sleep(0.1)

    def children(self) -> list[int]:
        return [p for p in marked_pids(self.mark) if p != self.proc.pid]

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def finish(self, timeout: float = 120.0) -> tuple[int, str, str]:
        """Wait for the command to end; its exit status, stdout and stderr."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise
        return self.proc.returncode, out, err

    def survivors(self, timeout: float = 10.0) -> list[int]:
        """The command's processes still alive ``timeout`` seconds after it ended (polled)."""
        end = time.monotonic() + timeout
        while (left := marked_pids(self.mark)) and time.monotonic() < end:
            time.sleep(0.1)
        return left

    def kill_all(self) -> None:
        """Clean up after a failed test: SIGKILL every marked process."""
        for pid in marked_pids(self.mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
