"""Self-play: an opponent pool mixing scripted agents and frozen snapshots of the learner.

During training a callback saves the learner every ``snapshot_every`` timesteps (from
``selfplay_start`` on) into ``<run>/snapshots/``. Each opponent seat of each env holds an
:class:`OpponentPool`, which the env calls at every ``reset``: with probability
``selfplay_prob`` (once a snapshot exists) it returns one of the ``pool_size`` most recent
snapshots, drawn uniformly, otherwise one of the scripted agents, drawn uniformly. The pool
notices new snapshots by the folder's modification time, so it works across processes and
after ``--resume``. In partnerships with ``partner: learner`` the partner seat always plays the
most recent snapshot (a scripted agent until the first one exists).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from bergen_env.agents.base import Agent, make_agent

from .config import TrainConfig

SNAPSHOT_RE = re.compile(r"^snapshot_(\d+)\.zip$")


def snapshot_path(snapshot_dir: Path, timesteps: int) -> Path:
    """Where the snapshot taken at ``timesteps`` lives."""
    return snapshot_dir / f"snapshot_{timesteps:010d}.zip"


def list_snapshots(snapshot_dir: Path) -> list[Path]:
    """Snapshot files, oldest first."""
    if not snapshot_dir.is_dir():
        return []
    found = [
        (int(m.group(1)), p) for p in snapshot_dir.iterdir() if (m := SNAPSHOT_RE.match(p.name))
    ]
    return [p for _, p in sorted(found)]


class OpponentPool:
    """The agent of one opponent seat, drawn anew for every match (a callable for the env)."""

    def __init__(
        self,
        scripted: list[str],
        snapshot_dir: Path | None,
        selfplay_prob: float,
        pool_size: int,
        seed: int,
        latest_only: bool = False,
    ) -> None:
        if not scripted:
            raise ValueError("an opponent pool needs at least one scripted agent")
        self.scripted: list[Agent] = [make_agent(name) for name in scripted]
        self.snapshot_dir = snapshot_dir
        self.selfplay_prob = float(selfplay_prob)
        self.pool_size = pool_size
        self.latest_only = latest_only
        self.rng = np.random.default_rng(seed)
        self._mtime = -1
        self._snapshots: list[Path] = []
        self._loaded: dict[Path, Agent] = {}

    def _refresh(self) -> None:
        try:
            mtime = self.snapshot_dir.stat().st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self._mtime:
            return
        self._mtime = mtime
        self._snapshots = list_snapshots(self.snapshot_dir)[-self.pool_size :]
        for old in set(self._loaded) - set(self._snapshots):
            del self._loaded[old]

    def _snapshot_agent(self, path: Path) -> Agent:
        agent = self._loaded.get(path)
        if agent is None:
            import torch

            from .ppo_policies import PPOAgent

            torch.set_num_threads(1)
            agent = PPOAgent(path, trust_pickle=True)  # a snapshot this run wrote
            self._loaded[path] = agent
        return agent

    def __call__(self) -> Agent:
        if self.snapshot_dir is not None:
            self._refresh()
        if self._snapshots:
            if self.latest_only:
                return self._snapshot_agent(self._snapshots[-1])
            if self.rng.random() < self.selfplay_prob:
                pick = self._snapshots[int(self.rng.integers(len(self._snapshots)))]
                return self._snapshot_agent(pick)
        return self.scripted[int(self.rng.integers(len(self.scripted)))]


def build_opponents(cfg: TrainConfig, rank: int, snapshot_dir: Path | None) -> list:
    """The ``opponents`` argument of the env with index ``rank``: strings or pools per seat."""
    n = cfg.num_players
    selfplay = cfg.selfplay_start >= 0 and snapshot_dir is not None
    if not selfplay and len(cfg.opponents) == 1:
        return [cfg.opponents[0]] * (n - 1)
    out: list = []
    for slot in range(n - 1):
        partner_slot = cfg.partnerships and slot == 1  # seat learner+2
        out.append(
            OpponentPool(
                cfg.opponents,
                snapshot_dir if selfplay else None,
                cfg.selfplay_prob,
                cfg.pool_size,
                seed=cfg.seed * 10_007 + rank * 101 + slot,
                latest_only=partner_slot and cfg.partner == "learner",
            )
        )
    return out
