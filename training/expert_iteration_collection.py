"""Expert iteration's positions and labels: whole matches played, every real choice of the
learner seat valued by the teacher search (:class:`Decisions`), in seeded jobs over local
processes or Ray tasks.

Each job (``job_decisions`` decisions with its own seed) plays and labels the same decisions
wherever it runs: in this process, in a worker process or as a Ray task (the config key
``ray``); the results are merged in job order, so the labels do not depend on the worker count
or the backend.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bergen_env.agents.base import Agent, make_agent
from bergen_env.agents.policy_agent import PolicyAgent
from bergen_env.agents.search import WIN_VALUE
from bergen_env.atomic_files import atomic_path
from bergen_env.observation import OBS_SIZE
from bergen_env.policy_file import PolicyFile, PolicyNetwork, make_header
from bergen_env.ray_tasks import in_order
from bergen_env.single_agent import BergenSingleAgentEnv
from bergen_env.stop import check_stop, pool_results

from .expert_iteration_config import NETWORK, ExpertIterationConfig
from .expert_iteration_networks import NetworkArrays, policy_network
from .ray_option import join_ray
from .run_folder import forked_pool


@dataclass
class Decisions:
    """Labelled learner decisions (arrays only, so they save as ``.npz``)."""

    obs: np.ndarray  # float32 (N, OBS_SIZE)
    masks: np.ndarray  # bool (N, num_actions)
    values: np.ndarray  # float32 (N, num_actions): search's values in match units, 0 if illegal
    heuristic: np.ndarray  # int64 (N,): the heuristic's action in the same position
    match: np.ndarray  # int64 (N,): the match each decision belongs to (unique within a set)

    def __len__(self) -> int:
        return len(self.match)

    @staticmethod
    def concatenate(parts: list[Decisions]) -> Decisions:
        """One set of decisions, the match indices kept distinct."""
        offsets = np.cumsum([0] + [int(p.match.max()) + 1 if len(p) else 0 for p in parts[:-1]])
        return Decisions(
            obs=np.concatenate([p.obs for p in parts]),
            masks=np.concatenate([p.masks for p in parts]),
            values=np.concatenate([p.values for p in parts]),
            heuristic=np.concatenate([p.heuristic for p in parts]),
            match=np.concatenate([p.match + off for p, off in zip(parts, offsets)]),
        )

    def save(self, path: str | Path) -> None:
        """Write the arrays to ``path`` (``.npz``), whole or not at all."""
        with atomic_path(path) as tmp:
            np.savez_compressed(tmp, **dataclasses.asdict(self))

    @staticmethod
    def load(path: str | Path) -> Decisions:
        with np.load(path, allow_pickle=False) as data:
            return Decisions(**{f.name: data[f.name] for f in dataclasses.fields(Decisions)})


def collect_decisions(
    cfg: ExpertIterationConfig, network: PolicyNetwork | None, decisions: int, seed: int
) -> Decisions:
    """Play whole matches until ``decisions`` learner decisions are labelled (see the module doc).

    ``network`` plays the learner (and in partnerships with ``partner: learner`` its partner)
    when ``player`` draws ``network``. The last match is played to its end, so slightly more
    decisions may be returned.
    """
    rules = cfg.make_rules()
    if NETWORK in cfg.player and network is None:
        raise ValueError("collect_decisions: 'player' holds 'network' but no network was given")
    rng = np.random.default_rng(seed)
    teacher = make_agent(cfg.teacher)
    heuristic = make_agent("heuristic")

    def build(spec: str) -> Agent:
        if spec != NETWORK:
            return make_agent(spec)
        scorer = None if network.scorer is None else network.scorer.activations
        header = make_header(rules, network.activations, len(network.activations), None, scorer)
        return PolicyAgent.from_policy_file(PolicyFile(NETWORK, header, network))

    players = {spec: build(spec) for spec in dict.fromkeys(cfg.player)}
    seats = cfg.opponent_seats(rules)
    by_seat: list[Any] = [None] * (rules.num_players - 1)
    for k, seat in enumerate(seats):
        by_seat[seat - 1] = cfg.opponents[0 if len(cfg.opponents) == 1 else k]
    partner_of: dict[str, Agent] = {}
    spec = cfg.player[0]
    if len(seats) < rules.num_players - 1:  # the partner plays like the learner (a second copy)
        partner_of = {s: build(s) for s in players}
        by_seat[rules.num_players // 2 - 1] = lambda: partner_of[spec]
    env = BergenSingleAgentEnv(opponents=by_seat, learner_seat="random", **cfg.env_kwargs())
    win = WIN_VALUE * rules.score_scale  # search's value of a won match
    obs_rows: list[np.ndarray] = []
    mask_rows: list[np.ndarray] = []
    value_rows: list[np.ndarray] = []
    heuristic_actions: list[int] = []
    match_ids: list[int] = []
    match = 0
    while len(match_ids) < decisions:
        spec = cfg.player[int(rng.integers(len(cfg.player)))]  # read by the partner's callable
        obs, _ = env.reset(seed=int(rng.integers(2**63)))
        player = players[spec]
        for agent in (teacher, heuristic, player):
            agent.reset(env.rules, env.seat, np.random.default_rng(int(rng.integers(2**63))))
        done = False
        while not done:
            mask = env.action_masks()
            view = env.game.public_view(env.seat)
            legal = view.legal_actions
            if len(legal) > 1:
                values = np.zeros(rules.num_actions, dtype=np.float32)
                for a, v in teacher.action_values(view).items():
                    values[a] = v / win
                obs_rows.append(obs.astype(np.float32))
                mask_rows.append(mask.astype(bool))
                value_rows.append(values)
                heuristic_actions.append(int(heuristic.act(obs, mask.astype(np.int8), view)))
                match_ids.append(match)
            a = int(player.act(obs, mask.astype(np.int8), view))
            obs, _, terminated, truncated, _ = env.step(a)
            done = terminated or truncated
        match += 1
    num_actions = rules.num_actions
    return Decisions(
        obs=np.asarray(obs_rows, dtype=np.float32).reshape(-1, OBS_SIZE),
        masks=np.asarray(mask_rows, dtype=bool).reshape(-1, num_actions),
        values=np.asarray(value_rows, dtype=np.float32).reshape(-1, num_actions),
        heuristic=np.asarray(heuristic_actions, dtype=np.int64),
        match=np.asarray(match_ids, dtype=np.int64),
    )


def _collect_job(args: tuple[ExpertIterationConfig, NetworkArrays | None, int, int]) -> Decisions:
    cfg, arrays, decisions, seed = args
    torch.set_num_threads(1)
    network = None if arrays is None else policy_network(arrays)
    return collect_decisions(cfg, network, decisions, seed)


def _label_task(
    shared: tuple[ExpertIterationConfig, NetworkArrays | None], job: tuple[int, int]
) -> Decisions:
    return _collect_job((*shared, *job))


def labelled_jobs(
    cfg: ExpertIterationConfig, network: NetworkArrays | None, jobs: Sequence[tuple[int, int]]
) -> Iterator[Decisions]:
    """The labelled decisions of each job ``(decisions, seed)``, in job order, as Ray tasks on
    the cluster ``cfg.ray`` names (joined here if this process has not joined one); each task
    plays and labels exactly what a local worker process would."""
    join_ray(cfg.ray, "key 'ray'")
    yield from in_order(_label_task, (cfg, network), jobs)


def saved_decisions(path: Path) -> Decisions | None:
    """The decisions an earlier, interrupted run saved at ``path`` (``None``: missing, cut off
    or damaged, so they are collected again)."""
    if not path.is_file():
        return None
    try:
        return Decisions.load(path)
    except Exception:  # cut off or damaged: collect it again
        return None


def _job_file(job_dir: Path, k: int) -> Path:
    return job_dir / f"job_{k}.npz"


def collect_parallel(
    cfg: ExpertIterationConfig,
    network: NetworkArrays | None,
    decisions: int,
    seed: int,
    progress: bool = True,
    job_dir: Path | None = None,
) -> Decisions:
    """:func:`collect_decisions` in jobs of ``job_decisions`` over ``workers`` processes (Ray
    tasks with ``ray``); ``network`` is the learner's network as
    :func:`~bergen_env.training.expert_iteration_networks.network_arrays` gives it.

    Job ``k`` is seeded by ``SeedSequence(seed)``'s ``k``-th state whatever the worker count.
    With ``job_dir``, each finished job is saved there (``job_<k>.npz``) and jobs found there
    are not collected again, so an interrupted collection resumes at the job where it stopped.
    """
    from tqdm import tqdm

    n_jobs = -(-decisions // cfg.job_decisions)
    seeds = np.random.SeedSequence(seed).generate_state(n_jobs).tolist()
    jobs = [
        (cfg, network, min(cfg.job_decisions, decisions - k * cfg.job_decisions), int(seeds[k]))
        for k in range(n_jobs)
    ]
    parts: dict[int, Decisions] = {}
    for k in range(n_jobs):
        done = None if job_dir is None else saved_decisions(_job_file(job_dir, k))
        if done is not None:
            parts[k] = done
    todo = [k for k in range(n_jobs) if k not in parts]
    if job_dir is not None:
        job_dir.mkdir(exist_ok=True)

    def keep(k: int, part: Decisions) -> None:
        parts[k] = part
        if job_dir is not None:
            part.save(_job_file(job_dir, k))
        bar.update(len(part))

    with tqdm(total=decisions, desc="labelled decisions", disable=not progress) as bar:
        bar.update(sum(len(p) for p in parts.values()))
        if cfg.ray is not None:
            for k, part in zip(todo, labelled_jobs(cfg, network, [jobs[k][2:] for k in todo])):
                keep(k, part)
        elif cfg.workers == 1:
            for k in todo:
                check_stop()
                keep(k, _collect_job(jobs[k]))
        else:
            with forked_pool(cfg.workers) as pool:
                parts_made = pool_results(pool.imap(_collect_job, [jobs[k] for k in todo]))
                for k, part in zip(todo, parts_made):
                    keep(k, part)
    return Decisions.concatenate([parts[k] for k in range(n_jobs)])
