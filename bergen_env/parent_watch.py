"""Worker processes that end when the process that started them ends, ``kill -9`` included.

A worker of a process pool or a vectorized env calls :func:`die_with_parent` once, at start-up,
with the pid of the process that started it. From then on a daemon thread checks every
:data:`POLL_S` seconds whether that process is still its parent; once it is not (the parent
died and the worker was handed to another process), the worker exits at once, whatever it was
doing. (Polling, not Linux's parent-death signal: that signal follows the *thread* that started
the worker, and pools start workers from helper threads.) The worker also ignores Ctrl-C, which
the terminal sends to the whole process group: the parent alone decides how to stop.

The watching thread blocks the stop signals (:data:`STOP_SIGNALS`), so the kernel hands them to
the worker's main thread: a signal taken by another thread does not wake a main thread blocked
in a lock, and a pool worker waiting for its next task would then never see the ``SIGTERM``
with which ``Pool.terminate`` ends it (its parent would wait for it forever).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

#: Seconds between two checks of the parent.
POLL_S = 0.25
#: Signals the watching thread never takes (they go to the main thread, whose handlers act).
STOP_SIGNALS = frozenset(
    getattr(signal, name)
    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
    if hasattr(signal, name)
)

_watching: int | None = None


def _watch(parent: int) -> None:
    tick = threading.Event()
    while os.getppid() == parent:
        tick.wait(POLL_S)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """End this process as soon as process ``parent`` (the one that started it) is gone, and
    leave Ctrl-C to the parent.

    Idempotent; exits at once if ``parent`` is already gone. Call it first thing in the worker.
    """
    global _watching
    if os.getppid() != parent:
        os._exit(1)
    with contextlib.suppress(ValueError):  # not the main thread: leave the handler as it is
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _watching == parent:
        return
    _watching = parent
    watcher = threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True)
    # a new thread starts with its creator's signal mask: block, start, restore
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        watcher.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
