"""Worker processes that end when the process that started them ends, ``kill -9`` included.

A worker of a process pool or a vectorized env calls :func:`die_with_parent` once, at start-up,
with the pid of the process that started it. From then on a daemon thread checks every
:data:`POLL_S` seconds whether that process is still its parent; once it is not (the parent
died and the worker was handed to another process), the worker exits at once, whatever it was
doing. (Polling, not Linux's parent-death signal: that signal follows the *thread* that started
the worker, and pools start workers from helper threads.) The worker also ignores Ctrl-C, which
the terminal sends to the whole process group: the parent alone decides how to stop.

A worker also ends at once on ``SIGTERM`` (the default action, whatever handler it inherited
from its parent by ``fork``): a Python handler runs only once the main thread is woken, and a
signal the kernel hands to another thread (the watching thread, a library's thread pool) does
not wake a main thread blocked in a lock, so a pool worker waiting for its next task would
outlive the ``SIGTERM`` with which ``Pool.terminate`` ends it, and its parent would wait forever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

#: Seconds between two checks of the parent.
POLL_S = 0.25

_watching: int | None = None


def _watch(parent: int) -> None:
    tick = threading.Event()
    while os.getppid() == parent:
        tick.wait(POLL_S)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """End this process as soon as process ``parent`` (the one that started it) is gone, leave
    Ctrl-C to the parent, and end at once on ``SIGTERM``.

    Idempotent; exits at once if ``parent`` is already gone. Call it first thing in the worker.
    """
    global _watching
    if os.getppid() != parent:
        os._exit(1)
    with contextlib.suppress(ValueError):  # not the main thread: leave the handlers as they are
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _watching == parent:
        return
    _watching = parent
    threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()
