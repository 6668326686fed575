"""Expert iteration: fit a policy network to search's action values, then repeat from its play.

    python -m training.expert_iteration --config configs/expert_iteration_2p.yaml [--set key=value]

Each iteration:

1. **Positions.** Whole matches are played in the single-agent env: the learner seat by the
   current network (``player: [network]``, its most probable legal action) or by scripted agents
   (``player`` is a list of agent strings drawn uniformly each match), the other seats by
   ``opponents``. In partnerships with ``partner: learner`` (the default) the learner's partner
   is played by a second copy of the learner's player of that match, so the network plays both
   seats of its team, as it does when evaluated. Every real choice of the learner seat (more
   than one legal action) is kept.
2. **Labels.** The ``teacher`` (a ``search`` agent string) values every legal action of each kept
   decision from the learner's public view (:meth:`SearchAgent.action_values`: the mean playout
   value over many sampled deals of the hidden tiles, in match units ``2 P(win) - 1`` here). The
   target is the soft distribution ``softmax(values / temperature)`` over the legal actions (zero
   on the illegal ones): averaged over deals, these values are far less noisy than the return of
   one match.
3. **Fit.** The network (the shipped policies' shape: dense layers, the observation in, one logit
   per action out) is fitted by cross-entropy to the soft targets on the masked logits, over the
   decisions of this iteration and of the earlier ones (``keep_data``). It starts from
   ``init_policy`` (a portable policy file, e.g. the shipped one) or from random weights. With
   ``scorer``, an action scorer adds to each legal action's logit one shared network's value of
   the last hidden layer and that action's features (:mod:`bergen_env.action_features`).
4. **Check.** On held-out matches: the agreement with search's best action, and the *regret* of
   the network's, the heuristic's and the first network's choices (search's value of its best
   action minus that of the chosen one, in match units). A short duplicate evaluation against
   ``eval_opponents`` follows; the network is written as a portable policy file
   (``iter_<k>.safetensors``; the last one also as ``policy.safetensors``).

Collection runs in jobs of ``job_decisions`` seeded from ``SeedSequence(seed)``, spread over
``workers`` processes or, with ``ray``, run as Ray tasks (:mod:`.expert_iteration_ray`), so the
data and the fitted network do not depend on the worker count or the backend.
The run folder ``runs/expert_iteration/<name>__<seed>__<time>/`` holds ``config.yaml``,
``command.txt``, ``metrics.csv`` (one row per iteration), the policy files and ``data_<k>.npz``
(the labelled decisions of iteration ``k``; arrays only), ``state_<k>.safetensors`` (the network
and torch's random state after iteration ``k``) and, while a collection runs, ``jobs_<k>/`` (its
finished jobs). ``--resume RUN_DIR`` continues after the last intact state, at the first
unfinished job, as the uninterrupted run would have gone on.
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (training.cli)
    from .cli import program

    raise SystemExit(program("expert_iteration"))

import argparse
import csv
import dataclasses
import io
import itertools
import multiprocessing
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from bergen_env.action_features import NUM_ACTION_FEATURES, action_features
from bergen_env.agents.base import Agent, make_agent
from bergen_env.agents.policy_agent import PolicyAgent
from bergen_env.agents.search import WIN_VALUE, SearchAgent
from bergen_env.atomic_files import append_line, atomic_path, write_text
from bergen_env.observation import OBS_SIZE
from bergen_env.policy_file import (
    PolicyFile,
    PolicyNetwork,
    make_header,
    read_policy_file,
    save_policy_file,
)
from bergen_env.rules import Rules
from bergen_env.single_agent import BergenSingleAgentEnv
from bergen_env.symmetry import (
    MIRROR_ACTIONS,
    mirror_actions,
    mirror_observations,
    mirrorable,
    relabel_gathers,
)
from bergen_env.tiles import NUM_NUMBERS

from .cli import ArgumentParser
from .config import ConfigError, EnvBlock, add_override_argument, load_dataclass_config
from .config_ranges import EXPERT_ITERATION, check_ranges
from .ray_option import add_ray_argument, join_ray
from .run_folder import (
    claim_new_run,
    claim_resumed_run,
    newest_good,
    numbered,
    remove_temp_files,
    start_worker,
)

PROG = "python -m training.expert_iteration"
#: The ``player`` entry that means the network being trained.
NETWORK = "network"


@dataclass
class ExpertIterationConfig(EnvBlock):
    """An expert-iteration run. Each field is one YAML key under ``default:`` (the env keys come
    from :class:`training.config.EnvBlock`; ``reward`` must stay ``match``: the targets are
    search's values)."""

    name: str = "expert_iteration"
    """Prefix of the run folder (a config file's stem when loaded from a file)."""
    seed: int = 0
    """Seed of the positions, the labels, the network initialisation and the evaluations."""
    iterations: int = 1
    """Rounds of positions, labels and fitting."""
    decisions: int = 20_000
    """Labelled learner decisions per iteration."""
    job_decisions: int = 2_000
    """Decisions per collection job (jobs are seeded by index)."""
    workers: int = 1
    """Processes collecting and labelling decisions."""
    ray: str | None = None
    """Label (and evaluate) as Ray tasks instead of ``workers`` processes: ``local`` (a local Ray
    instance), ``auto`` (the cluster this machine joined) or a cluster's address (docs/scale.md);
    null: local processes. The fit stays in this process."""
    player: list[str] = field(default_factory=lambda: [NETWORK])
    """Who plays the learner seat while positions are collected, drawn uniformly each match:
    ``network`` (the current network) or agent strings."""
    opponents: list[str] = field(default_factory=lambda: ["heuristic"])
    """Agent strings of the other seats, in turn order after the learner: one for every seat, or
    one per seat (in partnerships with ``partner: opponents`` the partner is the second)."""
    partner: str = "learner"
    """Partnerships: ``learner`` (the partner seat is played like the learner seat: by the
    network when ``player`` draws it) or ``opponents`` (the partner is an ``opponents`` entry)."""
    teacher: str = "search:samples=400"
    """The ``search`` agent string whose action values label the decisions."""
    temperature: float = 0.03
    """Softmax temperature of the targets, in match units (``2 P(win) - 1``)."""
    regret_weight: float = 0.0
    """Weight of the expected regret in the loss: the cross-entropy plus ``regret_weight`` times
    ``sum_a pi(a) (max_b v(b) - v(a)) / temperature`` (the network's expected loss of value
    against search's best action; 0: the cross-entropy alone)."""
    value_weight: float = 0.0
    """Weight of an auxiliary value loss: a linear head on the last hidden layer, used in the fit
    only (not saved), is fitted by squared error to the position's value under the targets,
    ``sum_a softmax(v / temperature)(a) v(a)`` (0: no value head)."""
    init_policy: str | None = None
    """Portable policy file the network starts from (null: random weights of ``net_arch``)."""
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layers of a network started from random weights."""
    activation: str = "relu"
    """``relu`` or ``tanh`` (a network started from random weights)."""
    scorer: list[int] = field(default_factory=list)
    """Hidden layers of an action scorer (empty: none): a network shared by every action that
    adds to each legal action's logit its value of the last hidden layer's activations and the
    action's features (:mod:`bergen_env.action_features`). Its last layer starts at zero, so
    the network starts playing as ``init_policy`` does. An ``init_policy`` with a scorer brings
    its own (``scorer`` must then be empty or the same)."""
    keep_data: bool = True
    """Fit each iteration on the decisions of every iteration so far (else on its own)."""
    epochs: int = 4
    """Passes over the decisions in each fit."""
    learning_rate: float = 3e-4
    """Adam step size."""
    lr_schedule: str = "constant"
    """``constant`` or ``cosine`` (the step size falls to 0 over each fit's minibatches along
    half a cosine)."""
    weight_decay: float = 0.0
    """Decoupled weight decay of the optimizer (AdamW; 0: plain Adam)."""
    mirror: bool = False
    """Fit on each decision and on its mirror image, the two ends of the line swapped
    (:mod:`bergen_env.symmetry`; a decision on an empty line has none)."""
    relabel: float = 0.0
    """Fraction of the fitted decisions shown, in each minibatch, with their numbers renamed by
    a random permutation of 0..6 (:func:`bergen_env.symmetry.relabel_gathers`; 0: none). Only
    for rules that score no pips, where renaming is a symmetry but for the lead double and the
    blocked rule's tie-breaks."""
    batch_size: int = 512
    """Minibatch size."""
    held_out: float = 0.05
    """Fraction of the matches held out of the fit to measure agreement and regret."""
    torch_threads: int = 1
    """Torch threads of the fitting process."""
    eval_opponents: list[str] = field(default_factory=lambda: ["heuristic"])
    """Opponents of the duplicate evaluation after each iteration (empty: none)."""
    eval_matches: int = 200
    """Duplicate matches per opponent in each evaluation."""
    eval_workers: int = 1
    """Worker processes of the evaluations."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, source: str = "<config>") -> None:
        """Check every field; errors name ``source`` and the key."""
        check_ranges(self, EXPERT_ITERATION, source)

        def bad(key: str, why: str) -> ConfigError:
            return ConfigError(f"{source}: key {key!r} {why}, got {getattr(self, key)!r}")

        rules = self.env_options(source).rules
        if self.relabel and (rules.play_scoring != "headers" or rules.out_scoring != "fixed"):
            raise bad(
                "relabel",
                "must be 0 under rules that score pips (renaming the numbers needs "
                "play_scoring 'headers' and out_scoring 'fixed')",
            )
        others = len(self.opponent_seats(rules))
        if len(self.opponents) not in (1, others):
            if others == 1:
                why = "must hold 1 agent string (the one seat besides the learner)"
            else:
                seats = (
                    "the opposing side's seats (the partner plays like the learner)"
                    if rules.partnerships and self.partner == "learner"
                    else "the other seats, the partner second in partnerships"
                )
                why = f"must hold 1 agent string (for every seat) or {others}, one for each of "
                why += seats
            raise bad("opponents", why)
        try:
            for spec in {*self.player, *self.opponents} - {NETWORK}:
                make_agent(spec)
        except ValueError as exc:
            raise ConfigError(f"{source}: key 'player'/'opponents': {exc}") from None
        if NETWORK in self.opponents:
            raise bad("opponents", f"must be agent strings ({NETWORK!r} plays the learner only)")
        try:
            teacher = make_agent(self.teacher) if isinstance(self.teacher, str) else None
        except ValueError as exc:
            raise ConfigError(f"{source}: key 'teacher': {exc}") from None
        if not isinstance(teacher, SearchAgent):
            raise bad("teacher", "must be a search agent string (search:...)")
        if teacher.budget_ms is not None:
            raise bad("teacher", "must not set budget_ms (labels must not depend on the machine)")
        if self.init_policy is not None:
            try:
                policy = read_policy_file(self.init_policy)
            except ValueError as exc:  # names the file and the problem
                raise ConfigError(f"{source}: key 'init_policy': {exc}") from None
            if policy.rules.to_dict() | {"name": ""} != rules.to_dict() | {"name": ""}:
                raise bad("init_policy", "was trained for other rules than the config's")
            scorer = policy.network.scorer
            if scorer is not None and self.scorer:
                widths = scorer.layer_sizes[:-1]
                if widths != self.scorer:
                    raise bad("scorer", f"must be empty or {widths} (the init_policy's scorer)")

    def opponent_seats(self, rules: Rules) -> list[int]:
        """The seats (relative to the learner: 1 is the next) that ``opponents`` plays."""
        partner = rules.num_players // 2 if rules.partnerships and self.partner == "learner" else 0
        return [k for k in range(1, rules.num_players) if k != partner]

    def make_rules(self) -> Rules:
        """The rules of the run (preset, seating and overrides)."""
        return self.env_options().rules

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :class:`BergenSingleAgentEnv` (the reward is not used)."""
        return self.env_block_kwargs() | {"reward": "match", "auto_forced": True}


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExpertIterationConfig:
    """Load ``path`` (YAML with a ``default:`` block) and apply ``key=value`` overrides."""
    return load_dataclass_config(ExpertIterationConfig, path, overrides)


# ---------------------------------------------------------------------- labelled decisions


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

    def mirror_images(self, idx: np.ndarray) -> Decisions:
        """The mirror images (:mod:`bergen_env.symmetry`) of decisions ``idx`` that have one
        (the line holds a tile), each in its own match's index."""
        idx = np.asarray(idx)[mirrorable(self.obs[idx])]
        return Decisions(
            obs=mirror_observations(self.obs[idx]),
            masks=mirror_actions(self.masks[idx]),
            values=mirror_actions(self.values[idx]),
            heuristic=MIRROR_ACTIONS[self.heuristic[idx]],
            match=self.match[idx],
        )

    def save(self, path: str | Path) -> None:
        """Write the arrays to ``path`` (``.npz``), whole or not at all."""
        with atomic_path(path) as tmp:
            np.savez_compressed(tmp, **dataclasses.asdict(self))

    @staticmethod
    def load(path: str | Path) -> Decisions:
        with np.load(path, allow_pickle=False) as data:
            return Decisions(**{f.name: data[f.name] for f in dataclasses.fields(Decisions)})


def _scaled_gaps(
    values: np.ndarray, masks: np.ndarray, temperature: float, name: str
) -> np.ndarray:
    """``(max_b v(b) - v(a)) / temperature`` over each row's legal actions, ``inf`` on illegal
    ones (float64); ``name`` is the caller, named in the error for a row with no legal action."""
    masks = np.asarray(masks, dtype=bool)
    if not masks.any(axis=1).all():
        raise ValueError(f"{name}: a decision has no legal action")
    z = np.where(masks, np.asarray(values, dtype=np.float64) / temperature, -np.inf)
    return z.max(axis=1, keepdims=True) - z


def soft_targets(values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(values / temperature)`` over each row's legal actions; 0 on illegal ones."""
    p = np.exp(-_scaled_gaps(values, masks, temperature, "soft_targets"))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def target_values(targets: np.ndarray, values: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Each row's value under its soft target (:func:`soft_targets`): ``sum_a target(a) v(a)``."""
    return (targets * np.where(masks, values, 0.0)).sum(axis=1).astype(np.float32)


def scaled_regrets(values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """Each legal action's regret (the row's best value minus its value) over ``temperature``;
    0 on illegal ones."""
    gaps = _scaled_gaps(values, masks, temperature, "scaled_regrets")
    return np.where(np.isfinite(gaps), gaps, 0.0).astype(np.float32)


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


#: Dense layers as plain arrays: (weights, biases, activations).
LayerArrays = tuple[list[np.ndarray], list[np.ndarray], list[str]]
#: A network as plain arrays (its layers, and its action scorer's or None): what a job receives.
NetworkArrays = tuple[LayerArrays, LayerArrays | None]


def policy_network(arrays: NetworkArrays) -> PolicyNetwork:
    """The numpy network of :func:`network_arrays`' arrays."""
    layers, scorer = arrays
    return PolicyNetwork(*layers, None if scorer is None else PolicyNetwork(*scorer))


def _collect_job(args: tuple[ExpertIterationConfig, NetworkArrays | None, int, int]) -> Decisions:
    cfg, arrays, decisions, seed = args
    torch.set_num_threads(1)
    network = None if arrays is None else policy_network(arrays)
    return collect_decisions(cfg, network, decisions, seed)


def _job_file(job_dir: Path, k: int) -> Path:
    return job_dir / f"job_{k}.npz"


def _finished_job(job_dir: Path | None, k: int) -> Decisions | None:
    """Job ``k``'s decisions as an earlier, interrupted collection saved them (or ``None``)."""
    if job_dir is None or not _job_file(job_dir, k).is_file():
        return None
    try:
        return Decisions.load(_job_file(job_dir, k))
    except Exception:  # cut off or damaged: collect it again
        return None


def collect_parallel(
    cfg: ExpertIterationConfig,
    network: NetworkArrays | None,
    decisions: int,
    seed: int,
    progress: bool = True,
    job_dir: Path | None = None,
) -> Decisions:
    """:func:`collect_decisions` in jobs of ``job_decisions`` over ``workers`` processes;
    ``network`` is the learner's network as :func:`network_arrays` gives it.

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
        if (done := _finished_job(job_dir, k)) is not None:
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
            from .expert_iteration_ray import labelled_jobs

            for k, part in zip(todo, labelled_jobs(cfg, network, [jobs[k][2:] for k in todo])):
                keep(k, part)
        elif cfg.workers == 1:
            for k in todo:
                keep(k, _collect_job(jobs[k]))
        else:
            with multiprocessing.get_context("fork").Pool(
                cfg.workers, initializer=start_worker, initargs=(os.getpid(),)
            ) as pool:
                for k, part in zip(todo, pool.imap(_collect_job, [jobs[k] for k in todo])):
                    keep(k, part)
    return Decisions.concatenate([parts[k] for k in range(n_jobs)])


# ---------------------------------------------------------------------- the network


class ScoredNetwork(torch.nn.Module):
    """A policy network with an action scorer, as :class:`PolicyNetwork` plays it: ``trunk``
    (every layer but the last), ``head`` (the last layer: one logit per action) and ``scorer``
    (the trunk's output and an action's features -> a term added to that action's logit)."""

    def __init__(
        self, trunk: torch.nn.Sequential, head: torch.nn.Linear, scorer: torch.nn.Sequential
    ) -> None:
        super().__init__()
        self.trunk, self.head, self.scorer = trunk, head, scorer

    def forward(self, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        return self.logits(self.trunk(obs), obs, masks)

    def logits(self, hidden: torch.Tensor, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """The logits from the trunk's output ``hidden`` of ``obs``."""
        rows, actions = torch.nonzero(masks, as_tuple=True)
        features = action_features(obs[rows].numpy(), actions.numpy())
        extra = self.scorer(torch.cat([hidden[rows], torch.as_tensor(features)], dim=1))[:, 0]
        return self.head(hidden).index_put((rows, actions), extra, accumulate=True)


#: What :func:`build_network` returns: a plain network, or one with an action scorer.
Network = torch.nn.Sequential | ScoredNetwork


def policy_logits(net: Network, obs: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """The logits of ``net`` for a batch (the masks feed an action scorer)."""
    return hidden_and_logits(net, obs, masks)[1]


def hidden_and_logits(
    net: Network, obs: torch.Tensor, masks: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The last hidden layer's activations and the logits of ``net`` for a batch."""
    if isinstance(net, ScoredNetwork):
        hidden = net.trunk(obs)
        return hidden, net.logits(hidden, obs, masks)
    hidden = net[:-1](obs)
    return hidden, net[-1](hidden)


def hidden_width(net: Network) -> int:
    """The width of ``net``'s last hidden layer."""
    return (net.head if isinstance(net, ScoredNetwork) else net[-1]).in_features


_ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}


def _dense_layers(sizes: list[int], activation: str) -> list[torch.nn.Module]:
    """Linear layers of ``sizes`` with ``activation`` between them (none after the last)."""
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(_ACTIVATIONS[activation]())
    return layers


def _torch_layers(
    weights: list[np.ndarray], biases: list[np.ndarray], activations: list[str]
) -> list[torch.nn.Module]:
    """Torch layers holding the arrays of :meth:`PolicyNetwork.arrays`."""
    layers: list[torch.nn.Module] = []
    for w, b, activation in zip(weights, biases, activations):
        linear = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(w))
            linear.bias.copy_(torch.as_tensor(b))
        layers.append(linear)
        if activation != "identity":
            layers.append(_ACTIVATIONS[activation]())
    return layers


def build_network(cfg: ExpertIterationConfig, num_actions: int) -> Network:
    """The policy network: ``init_policy``'s layers and weights (its scorer too), or random ones
    of ``net_arch``; with ``scorer``, a new action scorer whose last layer is zero."""
    torch.manual_seed(cfg.seed)
    scorer_layers = None
    if cfg.init_policy is None:
        layers = _dense_layers([OBS_SIZE, *cfg.net_arch, num_actions], cfg.activation)
    else:
        network = read_policy_file(cfg.init_policy).network
        layers = _torch_layers(*network.arrays())
        if network.scorer is not None:
            scorer_layers = _torch_layers(*network.scorer.arrays())
    if scorer_layers is None and not cfg.scorer:
        return torch.nn.Sequential(*layers)
    head = layers[-1]
    if scorer_layers is None:
        sizes = [head.in_features + NUM_ACTION_FEATURES, *cfg.scorer, 1]
        scorer_layers = _dense_layers(sizes, "relu")
        with torch.no_grad():
            scorer_layers[-1].weight.zero_()
            scorer_layers[-1].bias.zero_()
    trunk = torch.nn.Sequential(*layers[:-1])
    return ScoredNetwork(trunk, head, torch.nn.Sequential(*scorer_layers))


def network_arrays(net: Network) -> NetworkArrays:
    """``net`` as the portable format's arrays: its layers, and its scorer's (or None)."""
    if isinstance(net, ScoredNetwork):
        main = torch.nn.Sequential(*net.trunk, net.head)
        return _layer_arrays(main), _layer_arrays(net.scorer)
    return _layer_arrays(net), None


def _layer_arrays(net: torch.nn.Sequential) -> LayerArrays:
    """The dense layers of ``net`` as (weights, biases, activations) of the portable format."""
    weights, biases, activations = [], [], []
    modules = list(net)
    for i, m in enumerate(modules):
        if isinstance(m, torch.nn.Linear):
            nxt = modules[i + 1] if i + 1 < len(modules) else None
            weights.append(m.weight.detach().cpu().numpy().astype(np.float32))
            biases.append(m.bias.detach().cpu().numpy().astype(np.float32))
            activations.append(
                "relu"
                if isinstance(nxt, torch.nn.ReLU)
                else "tanh"
                if isinstance(nxt, torch.nn.Tanh)
                else "identity"
            )
    return weights, biases, activations


def numpy_network(net: Network) -> PolicyNetwork:
    """``net`` as the numpy network that plays policy files."""
    return policy_network(network_arrays(net))


def split_matches(data: Decisions, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the fitted and held-out decisions: whole matches are held out."""
    rng = np.random.default_rng(seed)
    matches = np.unique(data.match)
    n_held = max(1, int(round(len(matches) * fraction)))
    held = np.isin(data.match, rng.choice(matches, size=n_held, replace=False))
    return np.flatnonzero(~held), np.flatnonzero(held)


def masked_log_softmax(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over the legal actions (``-inf`` on the illegal ones)."""
    return torch.log_softmax(logits.masked_fill(~masks, float("-inf")), dim=1)


def imitation_loss(
    logits: torch.Tensor,
    masks: torch.Tensor,
    targets: torch.Tensor,
    regrets: torch.Tensor | None,
    regret_weight: float = 0.0,
) -> torch.Tensor:
    """The mean over a batch of the cross-entropy of the masked policy to ``targets`` (see
    :func:`soft_targets`), plus ``regret_weight`` times its expected ``regrets`` (see
    :func:`scaled_regrets`)."""
    # targets are 0 where logp is -inf: count those terms as 0
    logp = masked_log_softmax(logits, masks).masked_fill(~masks, 0.0)
    loss = -(targets * logp).sum(dim=1).mean()
    if regret_weight:  # the policy is 0 on the illegal actions, whose regret is 0 too
        if regrets is None:
            raise ValueError("imitation_loss: regret_weight > 0 needs the regrets")
        loss = loss + regret_weight * (logp.exp() * masks * regrets).sum(dim=1).mean()
    return loss


def make_optimizer(
    net: torch.nn.Module, cfg: ExpertIterationConfig, steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler | None]:
    """AdamW over ``net``'s parameters at ``learning_rate`` with ``weight_decay`` (plain Adam at
    0), and with ``lr_schedule`` ``cosine`` the scheduler that takes the step size to 0 over
    ``steps`` minibatches."""
    optimizer = torch.optim.AdamW(
        net.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay
    )
    if cfg.lr_schedule == "constant":
        return optimizer, None
    return optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)


class Relabelling:
    """Every renaming of the numbers 0..6 as gather indices, to show minibatches relabelled."""

    def __init__(self, num_actions: int) -> None:
        perms = np.array(list(itertools.permutations(range(NUM_NUMBERS))), dtype=np.int64)
        g_obs, g_act = relabel_gathers(perms)
        self.obs = torch.as_tensor(g_obs)
        self.actions = torch.as_tensor(g_act[:, :num_actions])

    def apply(
        self, batch: list[torch.Tensor | None], fraction: float, rng: np.random.Generator
    ) -> list[torch.Tensor | None]:
        """``[obs, per-action arrays...]`` with a ``fraction`` of the rows relabelled, each by
        a permutation drawn uniformly (row 0 of the table is the identity)."""
        rows = len(batch[0])
        pick = rng.integers(len(self.obs), size=rows) * (rng.random(rows) < fraction)
        pick = torch.as_tensor(pick)
        out: list[torch.Tensor | None] = [batch[0].gather(1, self.obs[pick])]
        acts = self.actions[pick]
        out += [None if x is None else x.gather(1, acts) for x in batch[1:]]
        return out


def fit(
    net: Network,
    data: Decisions,
    train_idx: np.ndarray,
    cfg: ExpertIterationConfig,
    seed: int,
) -> float:
    """Fit ``net`` to the soft targets of ``data[train_idx]`` (and their mirror images with
    ``mirror``; a ``relabel`` fraction of each minibatch with its numbers renamed), plus
    ``regret_weight`` times the expected regret and ``value_weight`` times a value head's
    squared error; returns the last epoch's loss."""
    rng = np.random.default_rng(seed)
    if cfg.mirror:
        images = data.mirror_images(train_idx)
        train_idx = np.concatenate([train_idx, len(data) + np.arange(len(images))])
        data = Decisions.concatenate([data, images])
    obs = torch.as_tensor(data.obs)
    masks = torch.as_tensor(data.masks)
    soft = soft_targets(data.values, data.masks, cfg.temperature)
    targets = torch.as_tensor(soft)
    regrets = (  # only when the loss uses them: an array as large as the values
        torch.as_tensor(scaled_regrets(data.values, data.masks, cfg.temperature))
        if cfg.regret_weight
        else None
    )
    value_head, state_values = None, None
    if cfg.value_weight:
        value_head = torch.nn.Linear(hidden_width(net), 1)
        state_values = torch.as_tensor(target_values(soft, data.values, data.masks))
    relabelling = Relabelling(data.masks.shape[1]) if cfg.relabel else None
    steps = cfg.epochs * -(-len(train_idx) // cfg.batch_size)
    trained = torch.nn.ModuleList([net] if value_head is None else [net, value_head])
    optimizer, schedule = make_optimizer(trained, cfg, steps)
    net.train()
    loss_mean = float("nan")
    for _ in range(cfg.epochs):
        order = torch.as_tensor(rng.permutation(train_idx))
        total, count = 0.0, 0
        for start in range(0, len(order), cfg.batch_size):
            idx = order[start : start + cfg.batch_size]
            batch = [obs[idx], masks[idx], targets[idx]]
            batch.append(None if regrets is None else regrets[idx])
            if relabelling is not None:
                batch = relabelling.apply(batch, cfg.relabel, rng)
            hidden, logits = hidden_and_logits(net, batch[0], batch[1])
            loss = imitation_loss(logits, batch[1], batch[2], batch[3], cfg.regret_weight)
            if value_head is not None:
                predicted = value_head(hidden)[:, 0]
                value_loss = torch.nn.functional.mse_loss(predicted, state_values[idx])
                loss = loss + cfg.value_weight * value_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained.parameters(), 1.0)
            optimizer.step()
            if schedule is not None:
                schedule.step()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
        loss_mean = total / max(count, 1)
    net.eval()
    return loss_mean


@torch.no_grad()
def choices(net: Network, data: Decisions, idx: np.ndarray) -> np.ndarray:
    """The network's most probable legal action in decisions ``idx``."""
    masks = torch.as_tensor(data.masks[idx])
    logits = policy_logits(net, torch.as_tensor(data.obs[idx]), masks)
    logits = logits.masked_fill(~masks, float("-inf"))
    return logits.argmax(dim=1).numpy()


def regret(data: Decisions, idx: np.ndarray, chosen: np.ndarray) -> float:
    """Mean of search's best value minus its value of ``chosen``, in match units."""
    values = np.where(data.masks[idx], data.values[idx], -np.inf)
    return float(np.mean(values.max(axis=1) - values[np.arange(len(idx)), chosen]))


def held_out_metrics(
    net: Network, first: Network, data: Decisions, idx: np.ndarray
) -> dict[str, float]:
    """Agreement with search's best action and the regrets of the network, the first network
    and the heuristic on decisions ``idx``."""
    best = np.where(data.masks[idx], data.values[idx], -np.inf).argmax(axis=1)
    mine = choices(net, data, idx)
    return {
        "held_out_decisions": float(len(idx)),
        "agreement": float(np.mean(mine == best)),
        "regret": regret(data, idx, mine),
        "regret_first": regret(data, idx, choices(first, data, idx)),
        "regret_heuristic": regret(data, idx, data.heuristic[idx]),
    }


# ---------------------------------------------------------------------- the run


def save_network(
    net: Network, cfg: ExpertIterationConfig, path: Path, extra: dict[str, Any]
) -> Path:
    """Write ``net`` as a portable policy file with the config as provenance."""
    provenance = {
        "source": "training.expert_iteration",
        "config": {"default": dataclasses.asdict(cfg)},
        **extra,
    }
    layers, scorer = network_arrays(net)
    return save_policy_file(path, cfg.make_rules(), *layers, provenance, scorer)


def evaluate(path: Path, cfg: ExpertIterationConfig, seed: int) -> dict[str, float]:
    """Duplicate win rate of the policy file against each of ``eval_opponents``."""
    from bergen_env.arena import run_tournament

    rules = cfg.make_rules()
    spec = f"policy:{path}"
    out: dict[str, float] = {}
    for opponent in cfg.eval_opponents:
        if rules.partnerships:
            seats = [spec, opponent]
        else:
            seats = [spec] + [opponent] * (rules.num_players - 1)
        result = run_tournament(
            seats,
            rules,
            matches=cfg.eval_matches,
            seed=seed,
            workers=cfg.eval_workers if cfg.ray is None else 1,
            backend="processes" if cfg.ray is None else "ray",
        )
        out[f"vs_{opponent}"] = result.agents[spec].match_win_rate
    return out


#: The in-run evaluations play seeds ``seed + EVAL_SEED_OFFSET``, away from the README's 0 and 1.
EVAL_SEED_OFFSET = 101


#: ``state_<k>.safetensors``: the network after iteration ``k`` and the torch random state.
STATE_RE = re.compile(r"^state_(\d+)\.safetensors$")


#: The ``--data`` files of a run (one path a line), read again by ``--resume``.
DATA_FILES = "data_files.txt"


def save_state(net: Network, path: Path, k: int) -> None:
    """Write what a resumed run needs after iteration ``k`` (arrays and text only)."""
    from safetensors.torch import save_file

    tensors = {f"net.{name}": t.detach().contiguous() for name, t in net.state_dict().items()}
    tensors["torch_rng"] = torch.get_rng_state()
    meta = {"iteration": str(k)}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=meta)


def load_state(path: Path, net: Network) -> tuple[int, torch.Tensor]:
    """Load ``save_state``'s file into ``net``; returns the iteration and the torch random
    state (a damaged file raises)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
        tensors = {key: f.get_tensor(key) for key in f.keys()}  # noqa: SIM118
    net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net.")})
    return int(meta["iteration"]), tensors["torch_rng"]


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    """``metrics.csv``: one row per finished iteration, rewritten whole after each."""
    if not rows:
        return
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, text.getvalue())


def read_metrics(path: Path, iterations: int) -> list[dict[str, Any]]:
    """The rows of ``metrics.csv`` for iterations below ``iterations`` (numbers as floats)."""
    if not path.is_file():
        return []
    rows = []
    for row in csv.DictReader(path.open()):
        if int(row["iteration"]) < iterations:
            rows.append({k: (v if k == "iteration" else float(v)) for k, v in row.items()})
            rows[-1]["iteration"] = int(row["iteration"])
    return rows


def train(
    cfg: ExpertIterationConfig,
    run_dir: Path,
    progress: bool = True,
    data_files: list[Path] | None = None,
    command: str | None = None,
    resume: bool = False,
) -> Path:
    """Run every iteration in ``run_dir``; returns the final policy file.

    With ``data_files`` (``data_<k>.npz`` of earlier runs) the first iteration fits on those
    decisions instead of collecting new ones. ``command`` (the command line that ran this) is
    recorded in each policy file's provenance. With ``resume``, the run continues after the
    last iteration whose state (``state_<k>.safetensors``) is intact, reusing the decisions and
    collection jobs already saved; the result equals that of an uninterrupted run.
    """
    torch.set_num_threads(cfg.torch_threads)
    if cfg.ray is not None:
        join_ray(cfg.ray, "key 'ray'")
    rules = cfg.make_rules()
    run_dir.mkdir(parents=True, exist_ok=True)
    net = build_network(cfg, rules.num_actions)
    first = build_network(cfg, rules.num_actions)
    first.load_state_dict(net.state_dict())
    first.eval()
    seeds = np.random.SeedSequence(cfg.seed).generate_state(2 * cfg.iterations).tolist()
    begin, rows = 0, []
    if resume:
        found = newest_good(numbered(run_dir, STATE_RE), lambda p: load_state(p, net), "state")
        if found is not None:
            path, (done, rng), notes = found
            if notes:
                print(f"{PROG}: {'; '.join(notes)}; resuming from {path.name}", file=sys.stderr)
            torch.set_rng_state(rng)
            begin = done + 1
            rows = read_metrics(run_dir / "metrics.csv", begin)
        print(f"resuming {run_dir} at iteration {begin}", flush=True)
    else:
        write_text(
            run_dir / "config.yaml",
            yaml.safe_dump({"default": dataclasses.asdict(cfg)}, sort_keys=False),
        )
    sets = [iteration_data(run_dir, k, data_files) for k in range(begin)] if cfg.keep_data else []
    path = run_dir / "policy.safetensors"
    start = time.perf_counter() - (rows[-1]["time_s"] if rows else 0.0)
    for k in range(begin, cfg.iterations):
        t0 = time.perf_counter()
        saved = run_dir / f"data_{k}.npz"
        if k == 0 and data_files:
            data = iteration_data(run_dir, k, data_files)
        elif saved.is_file() and resume and _finished(saved):
            data = Decisions.load(saved)
        else:
            job_dir = run_dir / f"jobs_{k}"
            data = collect_parallel(
                cfg, network_arrays(net), cfg.decisions, int(seeds[2 * k]), progress, job_dir
            )
            data.save(saved)
            shutil.rmtree(job_dir, ignore_errors=True)
        t_collect = time.perf_counter() - t0
        sets = [*sets, data] if cfg.keep_data else [data]
        all_data = Decisions.concatenate(sets)
        train_idx, test_idx = split_matches(all_data, cfg.held_out, int(seeds[2 * k + 1]))
        t0 = time.perf_counter()
        loss = fit(net, all_data, train_idx, cfg, int(seeds[2 * k + 1]))
        t_fit = time.perf_counter() - t0
        row: dict[str, Any] = {
            "iteration": k,
            "decisions": len(all_data),
            "collect_s": round(t_collect, 1),
            "fit_s": round(t_fit, 1),
            "train_loss": loss,
            **held_out_metrics(net, first, all_data, test_idx),
        }
        made = {"iteration": k} | ({"command": command} if command else {})
        iter_path = save_network(net, cfg, run_dir / f"iter_{k}.safetensors", made)
        t0 = time.perf_counter()
        row |= evaluate(iter_path, cfg, cfg.seed + EVAL_SEED_OFFSET) if cfg.eval_matches else {}
        row["eval_s"] = round(time.perf_counter() - t0, 1)
        row["time_s"] = round(time.perf_counter() - start, 1)
        rows.append(row)
        write_metrics(run_dir / "metrics.csv", rows)
        print(
            "  ".join(
                f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}"
                for key, value in row.items()
            ),
            flush=True,
        )
        path = save_network(net, cfg, run_dir / "policy.safetensors", made | {"metrics": row})
        save_state(net, run_dir / f"state_{k}.safetensors", k)
    return path


def _finished(path: Path) -> bool:
    try:
        Decisions.load(path)
    except Exception:  # cut off or damaged: collect again
        return False
    return True


def iteration_data(run_dir: Path, k: int, data_files: list[Path] | None) -> Decisions:
    """The decisions iteration ``k`` of the run fitted on (``--data`` files for iteration 0)."""
    if k == 0 and data_files:
        return Decisions.concatenate([Decisions.load(f) for f in data_files])
    return Decisions.load(run_dir / f"data_{k}.npz")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog=PROG,
        description="Expert iteration: fit a policy network to search's soft action values "
        "over positions from its own play, and repeat.",
    )
    parser.add_argument("--config", help="YAML config with a 'default:' block")
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR after its last finished iteration",
    )
    parser.add_argument(
        "--run-dir", default=None, help="run folder (default runs/expert_iteration/...)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--data",
        nargs="+",
        type=Path,
        default=None,
        metavar="NPZ",
        help="fit the first iteration on these saved decisions (data_<k>.npz of earlier runs) "
        "instead of collecting",
    )
    add_override_argument(parser)
    add_ray_argument(parser, "the labelling (the config key 'ray')")
    args = parser.parse_args(argv)
    if (args.config is None) == (args.resume is None):
        parser.error("give exactly one of --config or --resume")
    if args.resume is not None and (args.run_dir is not None or args.data is not None):
        parser.error("--resume continues in RUN_DIR with its own data; drop --run-dir and --data")
    return args


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    args_line = shlex.join(argv if argv is not None else sys.argv[1:])
    if args.resume is not None:
        run_dir = claim_resumed_run(args.resume)
        cfg = load_config(run_dir / "config.yaml", args.overrides)
        remove_temp_files(run_dir)
    else:
        cfg = load_config(args.config, args.overrides)
        for f in args.data or []:
            if not f.is_file():
                raise ConfigError(f"--data: file {str(f)!r} does not exist")
        parent = Path("runs") / "expert_iteration"
        run_dir = claim_new_run(args.run_dir, parent, f"{cfg.name}__{cfg.seed}")
        if args.data:
            write_text(run_dir / DATA_FILES, "".join(f"{f.resolve()}\n" for f in args.data))
    if args.ray is not None:
        cfg = dataclasses.replace(cfg, ray=args.ray)
    python = f"{sys.executable} -m training.expert_iteration"
    append_line(run_dir / "command.txt", f"{python} {args_line}")
    data_files = args.data
    if args.resume is not None and (run_dir / DATA_FILES).is_file():
        data_files = [Path(x) for x in (run_dir / DATA_FILES).read_text().splitlines()]
    try:
        path = train(
            cfg,
            run_dir,
            progress=not args.no_progress,
            data_files=data_files,
            command=f"{PROG} {args_line}",
            resume=args.resume is not None,
        )
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the finished iterations and jobs stay
        raise type(exc)(f"continue with --resume {run_dir}") from None
    print(f"policy: {path}\nrun folder: {run_dir}")
    return path
