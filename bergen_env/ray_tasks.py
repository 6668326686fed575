"""Heavy work as Ray tasks: a local Ray instance, or a cluster, in place of local processes.

    from bergen_env.ray_tasks import connect
    connect()          # a local Ray instance (or the one this process already joined)
    connect("auto")    # the cluster this machine belongs to (``ray start``), or an address

The tournament (``run_tournament(..., backend="ray")``), the rating table's round robin and
expert iteration's labelling hand their work to :func:`task_results` or :func:`in_order`: one
Ray task per item, the shared part stored once in Ray's object store. A task is a pure function
of its arguments (every seed comes from the work's index), so a task whose worker died is
simply run again (Ray's ``max_retries``): its result is taken once, when it finishes, and
nothing is counted twice or lost. Ray is imported only when one of these functions is called;
without it they raise :class:`ModuleNotFoundError` naming the ``[ray]`` extra.
"""

from __future__ import annotations

import math
import socket
from collections.abc import Callable, Iterator, Sequence
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
