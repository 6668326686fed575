"""A stop request: Ctrl-C or ``SIGTERM`` sets a flag, and long loops check it between two units
of work.

Nothing is raised inside a signal handler. An exception raised there lands in whatever code
runs at that moment, a finalizer such as ``ZipFile.__del__`` included, where Python prints
"Exception ignored" and drops it, and the stop is lost. :func:`handle_stop_signals` installs a
handler that only records the signal; :func:`check_stop`, called by a loop at a safe point,
raises :class:`Interrupted` (Ctrl-C) or :class:`Terminated` (``SIGTERM``) there. Waits for
workers use :func:`next_result` and :func:`future_result`, which check while they wait. A second
stop signal ends the process at once (the signal's default action), for a wait that no loop
checks.

Both exceptions are ``KeyboardInterrupt``: no ``except Exception`` between the loop and the
program's top swallows them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
from collections.abc import Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds a wait for a worker's result lasts before it checks for a stop request.
POLL_S = 0.2

#: The stop signals, in the order they are installed.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_requested: list[int] = []  # the stop signals received since the handler was installed


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (``SIGINT``), raised by :func:`check_stop`; a message given to it ends the
    program's one-line report."""


class Terminated(Interrupted):
    """``SIGTERM`` (``kill PID``, job schedulers), raised by :func:`check_stop`."""


def _record(signum: int, frame: Any) -> None:
    """The handler: record the signal; at the second, end at once with its default action."""
    if _requested:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    _requested.append(signum)


def stop_requested() -> int | None:
    """The first stop signal received (``None``: no stop requested)."""
    return _requested[0] if _requested else None


def check_stop() -> None:
    """Raise :class:`Terminated` or :class:`Interrupted` if a stop signal was received."""
    if _requested:
        raise Terminated() if _requested[0] == signal.SIGTERM else Interrupted()


@contextlib.contextmanager
def handle_stop_signals() -> Iterator[None]:
    """Within the block, Ctrl-C and ``SIGTERM`` set the flag :func:`check_stop` reads (in the
    main thread only, where Python runs signal handlers; elsewhere the block changes nothing).
    The previous handlers come back, and the flag is cleared, when it ends."""
    previous: dict[int, Any] = {}
    try:
        for sig in STOP_SIGNALS:
            with contextlib.suppress(ValueError):  # not the main thread
                previous[sig] = signal.signal(sig, _record)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _requested.clear()


def next_result(results: Iterator[T]) -> T:
    """The next item of a ``multiprocessing`` pool's ``imap`` iterator, checking for a stop
    before it takes one and while it waits (``StopIteration`` at its end): a backlog of
    finished items does not hold a stop up."""
    check_stop()
    while True:
        try:
            return results.next(timeout=POLL_S)  # type: ignore[attr-defined]
        except multiprocessing.TimeoutError:
            check_stop()


def pool_results(results: Iterator[T]) -> Iterator[T]:
    """The items of a pool's ``imap`` iterator (:func:`next_result`), in order."""
    while True:
        try:
            yield next_result(results)
        except StopIteration:
            return


def future_result(future: concurrent.futures.Future[T]) -> T:
    """``future.result()``, checking for a stop before it takes the result and while it
    waits."""
    check_stop()
    while True:
        try:
            return future.result(timeout=POLL_S)
        except concurrent.futures.TimeoutError:
            check_stop()
