"""Where slow agents think, so that they cannot slow the other tables.

:class:`AgentPool` runs ``agent.act`` for slow agents (search, networks) outside the event
loop, in a bounded number of workers sized to the machine. Each table has at most one decision
waiting at a time (its agents' loop awaits it), and waiting decisions are served first come,
first served, so one table of many slow agents takes one worker's share, not the pool.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class AgentPool:
    """Bounded workers for slow agents' decisions (``workers``: one per core by default)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="bergen-agent")

    async def act(self, table: str, agent: Any, obs: Any, mask: Any, view: Any) -> int:
        """``agent.act(obs, mask, view)`` in a worker; ``table`` names whose decision it is."""
        loop = asyncio.get_running_loop()
        return int(await loop.run_in_executor(self._executor, agent.act, obs, mask, view))

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
