"""Expert iteration's labelling as Ray tasks (the config key ``ray``, ``--ray``).

Each collection job of :func:`training.expert_iteration.collect_parallel` (``job_decisions``
decisions with its own seed) is one Ray task that plays and labels exactly what a local worker
process would, so the labels are the same for the same seed; the results are merged in job
order, and the network is fitted in the driver process.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from bergen_env.ray_tasks import in_order

from .expert_iteration import (
    Decisions,
    ExpertIterationConfig,
    NetworkArrays,
    collect_decisions,
    policy_network,
)
from .ray_option import join_ray


def _label_task(
    shared: tuple[ExpertIterationConfig, NetworkArrays | None], job: tuple[int, int]
) -> Decisions:
    cfg, arrays = shared
    decisions, seed = job
    torch.set_num_threads(1)
    network = None if arrays is None else policy_network(arrays)
    return collect_decisions(cfg, network, decisions, seed)


def labelled_jobs(
    cfg: ExpertIterationConfig, network: NetworkArrays | None, jobs: Sequence[tuple[int, int]]
) -> Iterator[Decisions]:
    """The labelled decisions of each job ``(decisions, seed)``, in job order, on the Ray
    cluster ``cfg.ray`` names (joined here if this process has not joined one)."""
    join_ray(cfg.ray, "key 'ray'")
    yield from in_order(_label_task, (cfg, network), jobs)
