"""The rating table's round robin as Ray tasks: one task per pair not stored yet.

Used by ``python -m benchmarks.rating_table --ray [ADDRESS]`` (:func:`round_robin` with
``backend="ray"``). Every pair's task starts at once and plays its duplicate tournaments with
``run_tournament(..., backend="ray")``, whose deal groups are Ray tasks too (a pair's task lends
its CPU while it waits for them), so a few pairs still fill a large cluster. The seeds are the
local run's, so a pair stores the same outcomes; the driver stores each pair as its task
finishes, so a re-run after a stopped driver or a lost node plays only the pairs that were not
stored (a task whose worker died is run again by Ray first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from bergen_env.ray_tasks import task_results
from bergen_env.rules import Rules

#: A pair to play: its two agent strings (sorted), its match count and its stored key.
Wanted = tuple[str, str, int, str]
#: What one pair's play returns (the rating table's ``PairResult``).
Result = TypeVar("Result")
#: ``play_pair(a, b, rules, matches, seed, workers, commit, backend=...)`` of the rating table:
#: passed in, so this module imports nothing of it (the rating table imports this one).
PlayPair = Callable[..., Any]


def _play_task(shared: tuple[PlayPair, Rules, int, str | None], pair: tuple[str, str, int]) -> Any:
    play_pair, rules, seed, commit = shared
    a, b, matches = pair
    return play_pair(a, b, rules, matches, seed, 1, commit, backend="ray")


def play_pairs(
    play_pair: Callable[..., Result],
    todo: Sequence[Wanted],
    rules: Rules,
    seed: int,
    commit: str | None,
) -> Iterator[tuple[Wanted, Result]]:
    """Each pair of ``todo`` with ``play_pair``'s result for it, as its Ray task finishes
    (``play_pair`` a module-level function, so a task names it rather than copies it)."""
    tasks = [(a, b, n) for a, b, n, _ in todo]
    for k, pair in task_results(_play_task, (play_pair, rules, seed, commit), tasks):
        yield todo[k], pair
