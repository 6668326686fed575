"""Where slow agents think, so that they cannot slow the other tables.

:class:`AgentPool` runs a slow agent's decision (search, networks) in a pool of worker
processes sized to the machine (one core is left to the event loop) at a lower scheduling
priority, so it holds neither the event loop, nor the server's GIL, nor the CPU the server
needs to answer people. The agent travels to the worker with the decision's inputs and comes
back with its state (its random generator moved on). Each table has at most one decision
waiting at a time (its agents' loop awaits it) and waiting decisions are served first come,
first served: a table with slow agents takes one worker's turn at a time, however many
decisions it would like to make. An agent that cannot be sent to a process (it does not
pickle) thinks in a thread instead.

Requests that take much CPU (building the frames of an uploaded replay) go to one more worker
process of their own (:meth:`AgentPool.run`), one at a time, so that they neither hold the
server's GIL nor delay the agents. :meth:`AgentPool.start` starts every worker process as the
server starts (the app awaits it before it answers), so that no table in play waits for a
process (or the fork server, which imports the server's modules) to start at the first slow
decision or heavy request. :meth:`AgentPool.close` ends every worker; the app calls it when it
shuts down, on SIGTERM and SIGINT too.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def default_workers() -> int:
    """One worker per core this process may use but one, which the event loop keeps."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, cores - 1)


#: How much lower the workers' scheduling priority is than the server's (``os.nice``).
WORKER_NICENESS = 10


def lower_priority(niceness: int = WORKER_NICENESS, idle: bool = False) -> None:
    """In a new worker: raise this process's niceness by ``niceness``, so that it yields the CPU
    to the server's event loop when both want it. With ``idle``, also take Linux's
    ``SCHED_IDLE`` policy where the system permits it (else the niceness alone): the process
    then runs only on a core nothing else wants, and a process that wakes takes that core at
    once, as if it were idle."""
    with contextlib.suppress(OSError, AttributeError):
        os.nice(niceness)
    if idle:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def worker_context() -> multiprocessing.context.BaseContext:
    """How the server starts worker processes: forkserver where there is one (a fork of the
    server would copy its threads and sockets), else spawn."""
    return multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )


def _decide(agent: Any, obs: Any, mask: Any, view: Any) -> tuple[int, Any]:
    """In a worker: the agent's action and the agent as it is after deciding."""
    return int(agent.act(obs, mask, view)), agent


class AgentPool:
    """Worker processes (``workers``: :func:`default_workers`) for slow agents' decisions.

    ``processes=False`` keeps every decision in threads of this process.
    """

    def __init__(self, workers: int | None = None, *, processes: bool = True) -> None:
        self.workers = workers or default_workers()
        self.processes = processes
        self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="bergen-agent")
        self._processes: Executor | None = None
        self._requests: Executor | None = None  # started at the first heavy request
        self._picklable: dict[type, bool] = {}
        self._context = worker_context()
        if processes:
            self._processes = ProcessPoolExecutor(
                self.workers, mp_context=self._context, initializer=lower_priority
            )

    async def act(self, agent: Any, obs: Any, mask: Any, view: Any) -> tuple[int, Any]:
        """``agent.act(obs, mask, view)`` in a worker: the action and the agent to keep."""
        loop = asyncio.get_running_loop()
        if self._processes is not None and self._can_send(agent):
            return await loop.run_in_executor(self._processes, _decide, agent, obs, mask, view)
        return await loop.run_in_executor(self._threads, _decide, agent, obs, mask, view)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the worker process for heavy requests (in a thread with
        ``processes=False``); ``fn`` and its arguments and result must pickle."""
        if not self.processes:
            return await asyncio.to_thread(fn, *args)
        return await asyncio.get_running_loop().run_in_executor(self._request_pool(), fn, *args)

    def _request_pool(self) -> Executor:
        if self._requests is None:
            self._requests = ProcessPoolExecutor(
                1, mp_context=self._context, initializer=lower_priority
            )
        return self._requests

    async def start(self) -> None:
        """Start every worker process now (nothing to start with ``processes=False``)."""
        if self._processes is None:
            return
        loop = asyncio.get_running_loop()
        # a pool starts a process for each task no idle worker takes: one task per worker
        tasks = [loop.run_in_executor(self._processes, os.getpid) for _ in range(self.workers)]
        tasks.append(loop.run_in_executor(self._request_pool(), os.getpid))
        await asyncio.gather(*tasks)

    def _can_send(self, agent: Any) -> bool:
        kind = type(agent)
        if kind not in self._picklable:
            try:
                pickle.dumps(agent)
                self._picklable[kind] = True
            except Exception:  # e.g. a bot holding a C++ object: it thinks in a thread
                self._picklable[kind] = False
        return self._picklable[kind]

    def close(self) -> None:
        """End the workers (a decision or request under way is finished first)."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        for executor in (self._processes, self._requests):
            if executor is not None:
                executor.shutdown(wait=True, cancel_futures=True)
