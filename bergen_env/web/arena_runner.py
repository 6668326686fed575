"""The arena's work beside the tables: checking submissions, playing queued pairs, refitting.

:class:`ArenaRunner` owns a pool of ``workers`` processes at the lowest scheduling priority
(niceness 19 and, on Linux, the ``SCHED_IDLE`` policy: below the agents' pool, so a rating
never takes CPU a table wants), started at the first job; with ``ray`` set, the pairs and fits
are Ray tasks instead (a :class:`~bergen_env.ray_tasks.RayExecutor` on a local Ray instance or
a cluster). One asyncio
task keeps up to ``workers`` queued pairs (:class:`~bergen_env.arena_store.ArenaStore`)
playing; each pair's deals come from a fresh secret seed (``secrets``) that is
never stored or shown. A finished pair is stored in one transaction, then its leaderboard is
refitted in the pool and replaces the one :meth:`ArenaRunner.boards` serves. Stopping cancels
what is being played: those pairs are still queued, and the next start plays them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bergen_env.arena_store import (
    MAX_FILE_BYTES,
    SCRIPTED_ANCHORS,
    ArenaStore,
    BoardData,
    Job,
    PolicyEntry,
    Submission,
    SubmissionError,
    check_submission,
    leaderboard,
    rules_key,
)
from bergen_env.duplicate_pairs import PairOutcome, play_pair_outcome, whole_groups
from bergen_env.parent_watch import die_with_parent
from bergen_env.ray_tasks import LOCAL, RayExecutor
from bergen_env.web.agent_pool import lower_priority, worker_context

logger = logging.getLogger(__name__)

#: How much lower the arena's workers' scheduling priority is than the server's by default
#: (``os.nice``; 19 from a server at 0: the lowest niceness there is). At this value the workers
#: also take Linux's ``SCHED_IDLE`` policy (:func:`~bergen_env.web.agent_pool.lower_priority`).
ARENA_NICENESS = 19
#: The prefix of an arena policy's name in the tables' agent menu (left out of the menu list).
AGENT_PREFIX = "arena-"
#: Times a pair is tried again after its worker process died, before it is marked failed.
MAX_ATTEMPTS = 3
#: Seconds between two refits of a board whose rules still have queued pairs.
REFIT_S = 30.0
#: Bits of a pair's deal seed.
SEED_BITS = 128


@dataclass
class ArenaSettings:
    """How much the arena plays and takes."""

    workers: int = 1  # processes (or Ray tasks) playing pairs at once; 0: none, queue only
    matches: int = 400  # per pair, rounded up to whole deal groups
    rivals: int = 4  # other submissions each new policy plays
    bootstrap: int = 1000  # replicates of each leaderboard's intervals
    submissions_per_hour: int = 6  # new files one address may submit
    uploads_per_minute: float = 4.0  # upload requests of one address (refused ones too)
    max_queued: int = 2000  # queued pairs beyond which new files wait (503)
    max_file_bytes: int = MAX_FILE_BYTES
    anchors: tuple[str, ...] = SCRIPTED_ANCHORS  # agent strings every policy plays
    niceness: int = ARENA_NICENESS  # added to the workers' niceness
    ray: str | None = None  # play on Ray: "local" (a local instance), "auto" or HOST:PORT


def agent_name(sha256: str) -> str:
    """The name under which tables seat the arena policy ``sha256``."""
    return AGENT_PREFIX + sha256[:12]


def play_secret_pair(a: str, b: str, rules: Any, matches: int) -> tuple[PairOutcome, float]:
    """One pair (agent strings) on a fresh secret seed: the outcome and its CPU seconds."""
    start = time.process_time()
    outcome = play_pair_outcome(a, b, rules, matches, seed=secrets.randbits(SEED_BITS))
    return outcome, time.process_time() - start


def check_upload(data: bytes, max_bytes: int) -> tuple[Submission | None, str | None]:
    """The checked submission with its ``data`` left empty (the caller has the bytes), or the
    one-line problem; for a worker process, whose answer travels back pickled."""
    try:
        return replace(check_submission(data, max_bytes=max_bytes), data=b""), None
    except SubmissionError as exc:
        return None, str(exc)


class ArenaRunner:
    """The arena of one server: its store, its settings, its worker pool and its boards."""

    def __init__(self, store: ArenaStore, settings: ArenaSettings | None = None) -> None:
        self.store = store
        self.settings = settings or ArenaSettings()
        self._pool: Executor | None = None
        self._boards: dict[str, dict[str, Any]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._attempts: dict[int, int] = {}
        self._fitted: dict[str, float] = {}  # when each board was last refitted (monotonic)
        self.running: set[int] = set()

    # ------------------------------------------------------------------ the pool

    def _executor(self) -> Executor:
        if self._pool is None and self.settings.ray is not None:
            self._pool = RayExecutor(
                None if self.settings.ray == LOCAL else self.settings.ray,
                initializer=lower_priority,  # a Ray worker: once, before its first task
                initargs=(self.settings.niceness, idle_policy(self.settings.niceness)),
            )
        elif self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.settings.workers,
                mp_context=worker_context(),
                initializer=_worker_start,
                initargs=(self.settings.niceness,),
            )
        return self._pool

    async def _in_pool(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor(), fn, *args)

    # ------------------------------------------------------------------ submissions

    async def add(
        self, sub: Submission, name: str, address: str, anchor: bool = False
    ) -> tuple[PolicyEntry, bool, int]:
        """Keep a checked file and queue its pairs: ``(entry, is_new, pairs queued)``."""
        entry, new = await asyncio.to_thread(self.store.add_policy, sub, name, address, anchor)
        jobs = []
        if new:
            matches = whole_groups(self.settings.matches, entry.rules)
            jobs = await asyncio.to_thread(
                self.store.plan, entry, matches, self.settings.rivals, self.settings.anchors
            )
            self._wake.set()
        return entry, new, len(jobs)

    def add_anchor_file(self, path: str | Path) -> PolicyEntry:
        """An operator's policy file as an anchor (at start-up, before the loop runs); a
        :class:`SubmissionError` names a bad one."""
        path = Path(path)
        sub = check_submission(path.read_bytes(), label=f"anchor {str(path)!r}")
        entry, new = self.store.add_policy(sub, path.stem, "operator", anchor=True)
        if new:
            matches = whole_groups(self.settings.matches, entry.rules)
            self.store.plan(entry, matches, 0, self.settings.anchors)
        return entry

    def agents(self) -> dict[str, str]:
        """Every stored policy as a table's agent menu entry: name -> agent string."""
        return {
            agent_name(p.sha256): f"policy:{self.store.policy_path(p.sha256)}"
            for p in self.store.policies()
        }

    # ------------------------------------------------------------------ boards

    def boards(self) -> list[dict[str, Any]]:
        """The fitted leaderboards, in order of their rules' first appearance."""
        return [self._boards[k] for k in self.store.rules_keys() if k in self._boards]

    def board_of(self, key: str) -> dict[str, Any] | None:
        return self._boards.get(key)

    async def refit(self, key: str) -> None:
        """Refit the leaderboard of the rules ``key`` (the bootstrap in a worker); a failure
        is logged and the board it had is kept."""
        try:
            data = await asyncio.to_thread(self.store.board_data, key)
            self._boards[key] = await self._in_pool(_fit, data, self.settings.bootstrap)
        except BrokenProcessPool:
            self._pool = None
            logger.warning("the arena's worker died while fitting a board; it is fitted later")
        except Exception:
            logger.exception("the arena could not fit the board of %s", key)
        self._fitted[key] = time.monotonic()

    # ------------------------------------------------------------------ the loop

    def start(self) -> None:
        """Start playing the queue (inside the running event loop); with no workers (and no
        Ray), the queue only grows, for a later start with workers."""
        if self.settings.workers < 1 and self.settings.ray is None:
            return
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        for key in await asyncio.to_thread(self.store.rules_keys):
            await self.refit(key)
        playing: dict[asyncio.Future, Job] = {}
        while True:
            self._wake.clear()
            if len(playing) < self.settings.workers:
                for job in await asyncio.to_thread(self.store.queued, self.settings.workers * 4):
                    if len(playing) >= self.settings.workers:
                        break
                    if job.id in self.running:
                        continue
                    try:
                        a, b = await asyncio.to_thread(self._specs, job)
                    except (KeyError, OSError) as exc:
                        await asyncio.to_thread(self.store.fail, job.id, str(exc))
                        continue
                    future = asyncio.ensure_future(
                        self._in_pool(play_secret_pair, a, b, job.rules, job.matches)
                    )
                    playing[future] = job
                    self.running.add(job.id)
            waits: set[Any] = set(playing) | {asyncio.ensure_future(self._wake.wait())}
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                job = playing.pop(future, None)  # type: ignore[arg-type]
                if job is None:
                    continue
                self.running.discard(job.id)
                await self._finish(job, future)
            for future in waits - done:
                if future not in playing:
                    future.cancel()

    def _specs(self, job: Job) -> tuple[str, str]:
        return self.store.agent_spec(job.a), self.store.agent_spec(job.b)

    async def _finish(self, job: Job, future: asyncio.Future) -> None:
        try:
            outcome, seconds = future.result()
        except BrokenProcessPool:
            self._pool = None  # a worker died: a new pool, and the pair tries again
            self._attempts[job.id] = self._attempts.get(job.id, 0) + 1
            if self._attempts[job.id] >= MAX_ATTEMPTS:
                await asyncio.to_thread(self.store.fail, job.id, "its worker process died")
            return
        except Exception as exc:  # an agent that cannot play: the pair leaves the queue
            logger.warning("arena pair %s vs %s failed: %s", job.a, job.b, exc)
            await asyncio.to_thread(self.store.fail, job.id, f"{type(exc).__name__}: {exc}")
            return
        if await asyncio.to_thread(self.store.record, job.id, outcome, seconds):
            key = rules_key(job.rules)
            waiting = await asyncio.to_thread(self.store.board_data, key)
            # a board is refitted when its rules' queue is empty, else at most every REFIT_S
            if not waiting.pending or time.monotonic() - self._fitted.get(key, 0.0) > REFIT_S:
                await self.refit(key)

    async def close(self) -> None:
        """Stop playing (the pairs under way stay queued) and end the workers."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._pool is not None:
            _terminate(self._pool)
            self._pool = None


def _fit(data: BoardData, bootstrap: int) -> dict[str, Any]:
    """In a worker: a leaderboard from the store's rows."""
    return leaderboard(data, bootstrap=bootstrap)


def idle_policy(niceness: int) -> bool:
    """Whether workers niced by ``niceness`` also take ``SCHED_IDLE`` (at the lowest priority)."""
    return niceness >= ARENA_NICENESS


def _worker_start(niceness: int) -> None:
    """In a new worker: end with the process that started it; yield the CPU to everyone."""
    die_with_parent(os.getppid())
    lower_priority(niceness, idle_policy(niceness))


def _terminate(pool: Executor) -> None:
    """End a process pool's workers now, a pair being played included (it stays queued)."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(OSError, AttributeError):
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
