"""Heavy work as Ray tasks: a local Ray instance, or a cluster, in place of local processes.

    from bergen_env.ray_tasks import connect
    connect()          # a local Ray instance (or the one this process already joined)
    connect("auto")    # the cluster this machine belongs to (``ray start``), or an address

The tournament (``run_tournament(..., backend="ray")``), the rating table's round robin and
expert iteration's labelling hand their work to :func:`task_results` or :func:`in_order`: one
Ray task per item, the shared part stored once in Ray's object store. Code written against a
:class:`concurrent.futures.Executor` (the web arena's runner) takes a :class:`RayExecutor`
instead of a process pool. A task is a pure function of its arguments (every seed comes
from the work's index), so a task whose worker died is simply run again (Ray's
``max_retries``): its result is taken once, when it finishes, and nothing is counted twice or
lost. Ray is imported only when one of these functions is called;
without it they raise :class:`ModuleNotFoundError` naming the ``[ray]`` extra.
"""

from __future__ import annotations

import math
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from typing import Any

from bergen_env.errors import install_hint
from bergen_env.stop import POLL_S, check_stop

#: Times Ray runs a task again after its worker process or node died (not after an exception).
MAX_RETRIES = 5
#: Fewest matches in one tournament task: below this, Ray's per-task cost shows
#: (docs/scale.md, "Overhead").
MIN_TASK_MATCHES = 64
#: Tasks per CPU of the cluster a tournament aims for, so that uneven tasks still balance.
TASKS_PER_CPU = 4

INSTALL_HINT = f"install it with: {install_hint('ray')}"
#: The address of a program's ``--ray`` flag that asks for a local Ray instance.
LOCAL = "local"


class RayJoinError(RuntimeError):
    """Ray is missing or cannot be joined; the message is one line naming the flag."""


def import_ray() -> Any:
    """The ``ray`` module; without it a one-line :class:`ModuleNotFoundError` naming the extra."""
    try:
        import ray
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"the Ray backend needs Ray, the [ray] extra (missing: ray); {INSTALL_HINT}"
        ) from None
    return ray


def connect(address: str | None = None, **init_kwargs: Any) -> Any:
    """Join Ray once per process and return the module.

    ``address`` None starts a local instance (``RAY_ADDRESS`` set: joins that one), ``"auto"``
    joins the cluster this machine runs (``ray start``), otherwise the ``HOST:PORT`` of a
    cluster's head. A process that has already joined keeps its instance (``address`` is then
    not used). ``init_kwargs`` go to ``ray.init``. A ``HOST:PORT`` where nothing answers is a
    :class:`ConnectionError` at once (Ray itself would keep trying).
    """
    ray = import_ray()
    if not ray.is_initialized():
        if address not in (None, "auto"):
            check_reachable(address)
        ray.init(address=address, **init_kwargs)
    return ray


def join(address: str | None, flag: str = "--ray") -> Any:
    """:func:`connect` for a program's ``flag`` (``address`` :data:`LOCAL` or None: a local
    instance); a missing Ray or a cluster that cannot be joined is a :class:`RayJoinError`."""
    try:
        return connect(None if address in (None, LOCAL) else address)
    except ModuleNotFoundError as exc:
        raise RayJoinError(f"{flag}: {exc}") from None
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = (
            "a local Ray instance"
            if address in (None, LOCAL)
            else f"the Ray cluster at {address!r}"
        )
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayJoinError(f"{flag}: cannot join {where}: {first}") from None


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """Raise :class:`ConnectionError` if nothing accepts a TCP connection at ``HOST:PORT``
    (other address forms are left to Ray)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc})") from None


def cluster_cpus() -> int:
    """CPUs of the joined Ray instance (at least 1); joins a local instance if none is."""
    ray = connect()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def task_units(units: int, unit_size: int) -> int:
    """Units (deal groups of ``unit_size`` matches) per task for ``units`` units: enough tasks
    for :data:`TASKS_PER_CPU` per CPU of the cluster, none under :data:`MIN_TASK_MATCHES`
    matches (nor under one unit)."""
    balanced = math.ceil(units / (TASKS_PER_CPU * cluster_cpus()))
    return max(1, min(units, max(balanced, math.ceil(MIN_TASK_MATCHES / unit_size))))


def task_results(
    fn: Callable[[Any, Any], Any],
    shared: Any,
    items: Sequence[Any],
    *,
    num_cpus: float = 1,
    max_retries: int = MAX_RETRIES,
) -> Iterator[tuple[int, Any]]:
    """``(k, fn(shared, items[k]))`` for every item, each as its Ray task finishes.

    ``fn`` is a module-level function (workers import it); ``shared`` is put in the object
    store once. A task that raises stops the iteration with its error (Ray's error, which is
    also an instance of the task's exception type); stopping early (an error, Ctrl-C, a
    ``break``) cancels the tasks not yet finished.
    """
    if not items:
        return
    ray = connect()
    remote = ray.remote(fn).options(num_cpus=num_cpus, max_retries=max_retries)
    shared_ref = ray.put(shared)
    refs = [remote.remote(shared_ref, item) for item in items]
    index = {ref: k for k, ref in enumerate(refs)}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
            check_stop()
            for ref in done:
                yield index[ref], ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=False)


def in_order(
    fn: Callable[[Any, Any], Any], shared: Any, items: Sequence[Any], **options: Any
) -> Iterator[Any]:
    """``fn(shared, item)`` for every item, in the order of ``items`` (see
    :func:`task_results`; results that finish early wait for those before them)."""
    waiting: dict[int, Any] = {}
    next_k = 0
    for k, result in task_results(fn, shared, items, **options):
        waiting[k] = result
        while next_k in waiting:
            yield waiting.pop(next_k)
            next_k += 1


#: The initializers that have run in this process (a Ray worker runs many tasks).
_STARTED: set[tuple[Callable[..., Any], tuple[Any, ...]]] = set()


def _initialized_call(
    start: tuple[Callable[..., Any], tuple[Any, ...]] | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """In a Ray worker: run ``start`` once per process, then ``fn(*args, **kwargs)``."""
    if start is not None and start not in _STARTED:
        start[0](*start[1])
        _STARTED.add(start)
    return fn(*args, **kwargs)


class RayExecutor(Executor):
    """A :class:`concurrent.futures.Executor` whose calls run as Ray tasks (``max_retries``:
    a task whose worker died runs again), for code written against a process pool (e.g.
    ``loop.run_in_executor``). ``initializer(*initargs)`` runs once in each Ray worker process
    before its first call, as a process pool's does. Joins Ray (:func:`connect`) at creation;
    ``shutdown(cancel_futures=True)`` ends the tasks not finished, those running included."""

    def __init__(
        self,
        address: str | None = None,
        *,
        initializer: Callable[..., Any] | None = None,
        initargs: tuple[Any, ...] = (),
        num_cpus: float = 1,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self._ray = connect(address)
        self._remote = self._ray.remote(_initialized_call).options(
            num_cpus=num_cpus, max_retries=max_retries
        )
        self._start = None if initializer is None else (initializer, tuple(initargs))
        self._refs: set[Any] = set()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        ref = self._remote.remote(self._start, fn, args, kwargs)
        with self._lock:
            self._refs.add(ref)
        future = ref.future()
        future.add_done_callback(lambda _: self._forget(ref))
        return future

    def _forget(self, ref: Any) -> None:
        with self._lock:
            self._refs.discard(ref)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            refs = list(self._refs)
            self._refs.clear()
        if cancel_futures:
            for ref in refs:
                self._ray.cancel(ref, force=True)
        elif wait and refs:
            self._ray.wait(refs, num_returns=len(refs))
