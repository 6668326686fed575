"""Train a Bergen policy with masked PPO (sb3-contrib) from a YAML config.

    bergen-train --config configs/quick.yaml [--set key=value ...] [--seed S]
                 [--run-dir DIR]
    bergen-train --resume runs/quick__0__20260101-120000 [--set total_timesteps=N]

One learner seat (drawn each match) plays whole matches against the config's opponents (scripted
agents, plus frozen snapshots of itself with self-play on). The envs are the batched env in this
process (``vec_env: batched``, ``bergen_env.training.batched_env``; self-play is
``bergen_env.training.league``) or single-agent envs in worker processes (``subproc``; self-play
is ``bergen_env.training.selfplay``). With ``imitation_teacher`` set, a new run first fits the
network to that agent's decisions (``bergen_env.training.imitation``); a new run's network is
evaluated before PPO starts (the metrics row at timestep 0, with ``eval_every`` > 0). The run
folder ``runs/<config>__<seed>__<time>/`` holds:

============================  ===========================================================
``config.yaml``               the resolved config (loadable with ``--config``)
``command.txt``               the command line that made the run (one line per invocation)
``tb/``                       TensorBoard logs (``rollout/``, ``train/``, ``eval/``, ``time/``)
``progress.csv``              every logged training metric per rollout
``metrics.csv``               one row per evaluation and opponent: timesteps, win rate, 95% CI
``checkpoints/``              ``ckpt_<steps>_steps.zip`` past every ``checkpoint_every`` steps
``snapshots/``                self-play snapshots (policy files)
``best_model.zip``            the policy with the best mean evaluation win rate
``final_model.zip``           the policy at the end of training
``final_eval.json``           the final evaluation (``result.to_dict()`` per opponent)
``final_model.safetensors``   the final policy in the portable format (``policy:PATH``)
``imitation.json``            the imitation warm start's fit metrics (with ``imitation_teacher``)
``learning_curve.png``        win rate against each evaluation opponent over training steps
============================  ===========================================================

Checkpoints are made at rollout boundaries and hold what an exact resume needs
(``bergen_env.training.resume_state``); ``--resume`` takes the newest intact one. A run locks its
folder (``bergen_env.training.run_folder``); Ctrl-C and SIGTERM finish the update in progress and
checkpoint it. Every file is written whole or not at all (``bergen_env.atomic_files``); see
docs/reliability.md.

Evaluations are duplicate tournaments of the arena (``bergen_env.arena.run_tournament``): the
policy (a just-saved policy file, ``ppo:PATH``) against each scripted opponent of
``eval_opponents``. The portable ``final_model.safetensors`` plays anywhere as
``policy:PATH`` (numpy only); the zips load with ``ppo:PATH`` (the ``[train]`` extra) and only
with ``trust_pickle`` (they are unpickled).
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("train"))

import argparse
import csv
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.logger import CSVOutputFormat, Logger, TensorBoardOutputFormat
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from bergen_env.agents.base import make_agent
from bergen_env.atomic_files import append_line, atomic_path, write_text
from bergen_env.rules import Rules, build_rules
from bergen_env.single_agent import BergenSingleAgentEnv
from bergen_env.stop import check_stop

from .cli import ArgumentParser, UsageError
from .config import (
    ConfigError,
    TrainConfig,
    add_override_argument,
    load_config,
    save_config,
    schedule,
)
from .config_ranges import MAX_PROCESSES
from .device import OverlappedMaskablePPO, pins_memory, resolve_device
from .export_policy import export_model
from .league import FrozenPolicy
from .ppo_policies import PPOAgent, save_policy
from .resume_state import (
    ContinuedCSV,
    ContinuedTensorBoard,
    ResumableEnv,
    UnsafePickleError,
    add_state,
    capture,
    read_state,
    restore,
    restore_rng,
    sb3_objects,
    trim_csv,
)
from .run_folder import (
    claim_new_run,
    claim_resumed_run,
    newest_good,
    numbered,
    remove_temp_files,
    start_worker,
    zip_problem,
)
from .selfplay import SNAPSHOT_RE, build_opponents, snapshot_path

PROG = "bergen-train"
CKPT_RE = re.compile(r"^ckpt_(\d+)_steps\.zip$")
METRICS_FIELDS = ["timesteps", "elapsed_s", "opponent", "win_rate", "ci_low", "ci_high", "matches"]


# ---------------------------------------------------------------------------- arguments


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, help="YAML config with a 'default:' block")
    add_override_argument(p)
    p.add_argument("--seed", type=int, help="seed (overrides the config's)")
    p.add_argument(
        "--run-dir", type=Path, help="run folder (default runs/<config>__<seed>__<time>)"
    )
    p.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its last checkpoint",
    )
    args = p.parse_args(argv)
    if (args.config is None) == (args.resume is None):
        p.error("give exactly one of --config or --resume")
    if args.resume is not None and args.run_dir is not None:
        p.error("--resume continues in RUN_DIR itself; --run-dir cannot be combined with it")
    return args


# ---------------------------------------------------------------------------- envs


def make_env(cfg: TrainConfig, rank: int, snapshot_dir: Path | None) -> Callable[[], gym.Env]:
    """A thunk building env ``rank`` (for SubprocVecEnv: built inside the worker process, which
    ends with the process that made the thunk)."""
    parent = os.getpid()

    def thunk() -> gym.Env:
        if os.getpid() != parent:  # a worker process
            start_worker(parent)
        torch.set_num_threads(1)
        env = BergenSingleAgentEnv(
            opponents=build_opponents(cfg, rank, snapshot_dir),
            learner_seat="random",
            **cfg.env_kwargs(),
        )
        return ResumableEnv(Monitor(env), snapshot_dir)

    return thunk


def make_vec_env(cfg: TrainConfig, snapshot_dir: Path | None) -> VecEnv:
    """The training envs: the batch of :mod:`bergen_env.training.batched_env` (``vec_env:
    batched``) or one single-agent env per ``n_envs`` (``subproc``: in worker processes)."""
    if cfg.vec_env == "batched":
        from .batched_env import BatchedVecEnv

        env = BatchedVecEnv(cfg, snapshot_dir)
        if snapshot_dir is not None:  # a resumed run's snapshots, oldest first
            kept = numbered(snapshot_dir, SNAPSHOT_RE)[: cfg.pool_size]
            for taken, path in reversed(kept):
                env.add_snapshot(taken, FrozenPolicy.from_file(path))
        return env
    thunks = [make_env(cfg, rank, snapshot_dir) for rank in range(cfg.n_envs)]
    if cfg.vec_env == "subproc" and cfg.n_envs > 1:
        return SubprocVecEnv(thunks, start_method="fork")
    return DummyVecEnv(thunks)


def config_rules(cfg: TrainConfig) -> Rules:
    return build_rules(
        cfg.rules, num_players=cfg.num_players, partnerships=cfg.partnerships, **cfg.rule_overrides
    )


# ---------------------------------------------------------------------------- evaluation


def evaluate(
    model: MaskablePPO, policy_path: Path, cfg: TrainConfig, rules: Rules, matches: int, seed: int
) -> dict[str, Any]:
    """Duplicate tournaments of the policy against each ``eval_opponents`` entry.

    With ``eval_workers > 1`` the workers load the just-saved policy file (``ppo:PATH``, a file
    this run made, so trusted); with
    one worker the model in memory plays (no process start-up, no reload).
    """
    from bergen_env.arena import run_tournament

    if cfg.eval_workers > 1:
        policy: Any = f"ppo:path={policy_path},trust_pickle=true"  # this run's own file
        name = policy
    else:
        policy = PPOAgent.from_model(model, rules, path=str(policy_path))
        name = policy.name
    out: dict[str, Any] = {}
    for opponent in cfg.eval_opponents:
        # partnerships: policy & a copy of it against two opponents; else one policy seat
        others = 1 if rules.partnerships else rules.num_players - 1
        result = run_tournament(
            agents=[policy] + [opponent] * others,
            rules=rules,
            matches=matches,
            seed=seed,
            duplicate=True,
            workers=cfg.eval_workers,
        )
        stats = result.agents[name]
        low, high = stats.ci95
        out[opponent] = {
            "win_rate": float(stats.match_win_rate),
            "ci_low": float(low),
            "ci_high": float(high),
            "matches": matches,
            "table": result.table(),
            "result": result.to_dict(),
        }
    return out


class EvalCallback(BaseCallback):
    """Every ``eval_every`` timesteps: save the policy, evaluate it, log, keep the best."""

    def __init__(self, cfg: TrainConfig, rules: Rules, run_dir: Path, start: float) -> None:
        super().__init__()
        self.cfg, self.rules, self.run_dir, self.start = cfg, rules, run_dir, start
        self.metrics = run_dir / "metrics.csv"
        self.best = -1.0
        best_file = run_dir / "best.json"
        if best_file.is_file():
            self.best = json.loads(best_file.read_text())["mean_win_rate"]
        self.next_at = 0

    def _on_training_start(self) -> None:
        every = self.cfg.eval_every
        self.next_at = (self.num_timesteps // every + 1) * every if every > 0 else -1

    def _on_step(self) -> bool:
        at_end = self.num_timesteps >= self.cfg.total_timesteps  # the final evaluation follows
        if self.next_at > 0 and self.num_timesteps >= self.next_at and not at_end:
            self.next_at += self.cfg.eval_every
            self.run_eval(self.cfg.eval_matches)
        return True

    def run_eval(self, matches: int) -> dict[str, Any]:
        path = save_policy_atomic(self.model, self.run_dir / "eval_policy.zip", self.rules)
        results = evaluate(self.model, path, self.cfg, self.rules, matches, seed=self.cfg.seed + 1)
        elapsed = time.time() - self.start
        new = not self.metrics.is_file()
        with self.metrics.open("a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=METRICS_FIELDS)
            if new:
                writer.writeheader()
            for opponent, r in results.items():
                writer.writerow(
                    {
                        "timesteps": self.num_timesteps,
                        "elapsed_s": round(elapsed, 1),
                        "opponent": opponent,
                        "win_rate": r["win_rate"],
                        "ci_low": r["ci_low"],
                        "ci_high": r["ci_high"],
                        "matches": matches,
                    }
                )
                self.logger.record(f"eval/win_rate_{opponent}", r["win_rate"])
            fh.flush()
            os.fsync(fh.fileno())
        mean = float(np.mean([r["win_rate"] for r in results.values()])) if results else 0.0
        self.logger.record("eval/mean_win_rate", mean)
        if mean > self.best:
            self.best = mean
            save_policy_atomic(
                self.model,
                self.run_dir / "best_model.zip",
                self.rules,
                timesteps=self.num_timesteps,
                mean_win_rate=mean,
            )
            write_text(
                self.run_dir / "best.json",
                json.dumps({"timesteps": self.num_timesteps, "mean_win_rate": mean}),
            )
        return results


class SnapshotCallback(BaseCallback):
    """Self-play: save a frozen copy of the learner into the pool folder on schedule."""

    def __init__(self, cfg: TrainConfig, rules: Rules, snapshot_dir: Path) -> None:
        super().__init__()
        self.cfg, self.rules, self.snapshot_dir = cfg, rules, snapshot_dir
        self.next_at = 0

    def _on_training_start(self) -> None:
        start, every = self.cfg.selfplay_start, self.cfg.snapshot_every
        self.next_at = max(start, (self.num_timesteps // every + 1) * every)

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_at:  # multiples of snapshot_every, as on resume
            every = self.cfg.snapshot_every
            self.next_at = (self.num_timesteps // every + 1) * every
            self.snapshot_dir.mkdir(exist_ok=True)
            path = snapshot_path(self.snapshot_dir, self.num_timesteps)  # whole for the pools
            save_policy_atomic(self.model, path, self.rules, timesteps=self.num_timesteps)
            env = self.model.get_env()
            if hasattr(env, "add_snapshot"):  # the batched env's league
                env.add_snapshot(self.num_timesteps, FrozenPolicy(self.model.policy))
        return True

    def _on_rollout_start(self) -> None:
        env = self.model.get_env()
        if hasattr(env, "refresh_league"):  # the league's odds from its latest results
            env.refresh_league()


class ProgressCallback(BaseCallback):
    """A tqdm progress bar over timesteps, showing env steps per second."""

    def __init__(self, total: int, initial: int) -> None:
        super().__init__()
        self.total, self.initial = total, initial

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=self.total, initial=self.initial, unit="step", dynamic_ncols=True, mininterval=1.0
        )
        self.t0, self.n0 = time.time(), self.num_timesteps

    def _on_step(self) -> bool:
        self.bar.update(self.num_timesteps - self.bar.n)
        return True

    def _on_rollout_end(self) -> None:
        fps = (self.num_timesteps - self.n0) / max(time.time() - self.t0, 1e-9)
        self.bar.set_postfix(steps_per_s=f"{fps:.0f}")

    def _on_training_end(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the bar (if training started), so that later lines are not drawn over."""
        if getattr(self, "bar", None) is not None:
            self.bar.close()


# ---------------------------------------------------------------------------- plots


def plot_learning_curve(metrics: Path, out: Path) -> None:
    """Win rate (with 95% CI) against each evaluation opponent over training steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(metrics.open())) if metrics.is_file() else []
    fig, ax = plt.subplots(figsize=(7, 4))
    for opponent in dict.fromkeys(r["opponent"] for r in rows):
        mine = [r for r in rows if r["opponent"] == opponent]
        x = [int(r["timesteps"]) for r in mine]
        ax.plot(x, [float(r["win_rate"]) for r in mine], marker="o", label=f"vs {opponent}")
        ax.fill_between(
            x, [float(r["ci_low"]) for r in mine], [float(r["ci_high"]) for r in mine], alpha=0.2
        )
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set(
        xlabel="training steps (learner decisions)",
        ylabel="match win rate (duplicate)",
        ylim=(0, 1),
        title=f"{out.parent.name}",
    )
    if rows:
        ax.legend()
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------- main


#: Members every SB3 checkpoint zip holds.
CKPT_MEMBERS = ("data", "policy.pth", "policy.optimizer.pth", "pytorch_variables.pth")


def save_policy_atomic(model: MaskablePPO, path: Path, rules: Rules, **extra: Any) -> Path:
    """:func:`bergen_env.training.ppo_policies.save_policy`, written whole or not at all."""
    with atomic_path(path) as tmp:
        save_policy(model, tmp, rules, **extra)
    return path


def checkpoint_path(run_dir: Path, steps: int) -> Path:
    return run_dir / "checkpoints" / f"ckpt_{steps}_steps.zip"


def save_checkpoint(model: MaskablePPO, run_dir: Path, state: bytes | None = None) -> Path:
    """Write the model (with its optimizer, and the resume ``state`` of
    :mod:`bergen_env.training.resume_state` if given) as ``checkpoints/ckpt_<steps>_steps.zip``,
    whole."""
    path = checkpoint_path(run_dir, model.num_timesteps)
    path.parent.mkdir(exist_ok=True)
    with atomic_path(path) as tmp:
        model.save(tmp)
        if state is not None:
            add_state(tmp, state)
    return path


def load_checkpoint(
    path: Path, cfg: TrainConfig
) -> tuple[MaskablePPO, dict[str, Any] | None] | UnsafePickleError:
    """A checkpoint loaded without its envs, and its resume state; a cut-off or damaged file
    raises; one naming what a checkpoint never holds is returned as the refusal, unloaded
    (nothing of it is unpickled but by :func:`bergen_env.training.resume_state.safe_loads`)."""
    problem = zip_problem(path, CKPT_MEMBERS)
    if problem is not None:
        raise ValueError(problem)
    schedules = {
        "learning_rate": schedule(cfg.learning_rate),
        "lr_schedule": schedule(cfg.learning_rate),
        "clip_range": schedule(cfg.clip_range),
    }
    try:
        objects = sb3_objects(path, schedules)
        state = read_state(path)
    except UnsafePickleError as exc:
        return exc
    model = algorithm(cfg).load(path, device=resolve_device(cfg.device), custom_objects=objects)
    return model, state


def resume_checkpoint(
    run_dir: Path, cfg: TrainConfig
) -> tuple[Path, MaskablePPO, dict[str, Any] | None]:
    """The newest checkpoint of ``run_dir`` that loads (with its resume state), saying in one
    line which were skipped; a refused one stops the resume (:class:`UnsafePickleError`)."""
    candidates = numbered(run_dir / "checkpoints", CKPT_RE)
    found = newest_good(candidates, lambda p: load_checkpoint(p, cfg))
    if found is None:
        skipped = f" ({len(candidates)} damaged)" if candidates else ""
        raise UsageError(
            f"--resume {run_dir}: no checkpoint to resume from in {run_dir / 'checkpoints'}"
            + skipped
        )
    path, loaded, notes = found
    if isinstance(loaded, UnsafePickleError):
        raise loaded
    if notes:
        print(f"{PROG}: {'; '.join(notes)}; resuming from {path.name}", file=sys.stderr)
    return path, *loaded


class Checkpoints(BaseCallback):
    """Checkpoints at the first rollout boundary (after an update) at or past each multiple of
    ``checkpoint_every``, each with the state an exact resume needs."""

    def __init__(self, cfg: TrainConfig, run_dir: Path, evaluator: EvalCallback) -> None:
        super().__init__()
        self.every, self.run_dir, self.evaluator = cfg.checkpoint_every, run_dir, evaluator
        self.next_at = 0

    def save(self) -> Path:
        """A checkpoint now (at a rollout boundary), with its resume state."""
        elapsed = time.time() - self.evaluator.start
        state = capture(self.model, self.model.get_env(), elapsed, self.evaluator.best)
        return save_checkpoint(self.model, self.run_dir, state)

    def _on_training_start(self) -> None:
        self.next_at = (self.num_timesteps // self.every + 1) * self.every

    def _on_rollout_start(self) -> None:
        if self.num_timesteps >= self.next_at:
            self.save()
            self.next_at = (self.num_timesteps // self.every + 1) * self.every

    def _on_step(self) -> bool:
        return True


class StopOnSignal(BaseCallback):
    """Ctrl-C and SIGTERM while training (the flag of :mod:`bergen_env.stop`): checked at every
    step of a rollout and once a PPO update (from the end of a rollout to the start of the
    next) has finished, so the network is never half updated; the caller then checkpoints the
    network of the last update, made at step :attr:`updated_at`."""

    def __init__(self, model: MaskablePPO) -> None:
        super().__init__()
        self.updated_at = model.num_timesteps
        self.updating = False

    def _updated(self) -> None:
        self.updating = False
        self.updated_at = self.num_timesteps
        check_stop()

    def _on_training_start(self) -> None:
        self.updated_at = self.num_timesteps

    def _on_rollout_end(self) -> None:
        self.updating = True

    def _on_rollout_start(self) -> None:
        if self.updating:
            self._updated()

    def _on_training_end(self) -> None:
        if self.updating:
            self._updated()

    def _on_step(self) -> bool:
        check_stop()
        return True


def algorithm(cfg: TrainConfig) -> type[MaskablePPO]:
    """The learner's class: with the network on CUDA, :class:`OverlappedMaskablePPO` (its
    host→device copies do not block); on the CPU, sb3-contrib's ``MaskablePPO`` itself."""
    return OverlappedMaskablePPO if pins_memory(cfg.device) else MaskablePPO


def build_model(cfg: TrainConfig, env: VecEnv, run_dir: Path) -> MaskablePPO:
    activation = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[cfg.activation]
    return algorithm(cfg)(
        "MlpPolicy",
        env,
        learning_rate=schedule(cfg.learning_rate),
        n_steps=cfg.n_steps,
        batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        clip_range=schedule(cfg.clip_range),
        ent_coef=cfg.ent_coef,
        target_kl=cfg.target_kl,
        vf_coef=cfg.vf_coef,
        max_grad_norm=cfg.max_grad_norm,
        policy_kwargs=dict(
            net_arch=dict(pi=cfg.net_arch, vf=cfg.net_arch), activation_fn=activation
        ),
        tensorboard_log=None,
        seed=cfg.seed,
        device=resolve_device(cfg.device),
        verbose=0,
    )


def warm_start(
    model: MaskablePPO, cfg: TrainConfig, evaluator: EvalCallback, run_dir: Path
) -> None:
    """Fit the policy to ``imitation_teacher`` (:mod:`bergen_env.training.imitation`), then
    evaluate it.

    The fit's metrics go to the logger under ``imitation/`` and to ``imitation.json``; the
    evaluation is the metrics row at timestep 0.
    """
    from .imitation import imitation_warm_start

    t0 = time.time()
    print(f"imitation warm start: {cfg.imitation_decisions} decisions of {cfg.imitation_teacher!r}")

    def log(epoch: int, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            model.logger.record(f"imitation/{key}", value)
        model.logger.dump(epoch)
        print(
            f"  epoch {epoch + 1}/{cfg.imitation_epochs}: "
            + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        )

    metrics = imitation_warm_start(model, cfg, log)
    metrics["seconds"] = round(time.time() - t0, 1)
    write_text(run_dir / "imitation.json", json.dumps(metrics, indent=1))
    evaluator.init_callback(model)
    results = evaluator.run_eval(cfg.eval_matches)
    print(
        f"imitation warm start done in {metrics['seconds']:.0f} s; win rate "
        + ", ".join(f"vs {o} {r['win_rate']:.3f}" for o, r in results.items())
    )


def check_config(cfg: TrainConfig, source: str) -> None:
    """Build the env and every agent string of the config once, so a bad option fails before
    any work (and not inside an env worker process)."""
    try:
        BergenSingleAgentEnv(opponents=["random"], **cfg.env_kwargs())
    except ValueError as exc:  # InvalidOptionError included
        raise ConfigError(f"{source}: {exc}") from None
    if cfg.vec_env != "batched" and cfg.n_envs > MAX_PROCESSES:
        raise ConfigError(
            f"{source}: key 'n_envs': vec_env: {cfg.vec_env} runs one env object per env, at most "
            f"{MAX_PROCESSES}; got {cfg.n_envs} (vec_env: batched takes more)"
        )
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{source}: key 'device': 'cuda' but torch sees no GPU (use auto)")
    named = [("opponents", x) for x in cfg.opponents]
    named += [("eval_opponents", x) for x in cfg.eval_opponents]
    if cfg.imitation_teacher is not None:
        named.append(("imitation_teacher", cfg.imitation_teacher))
    for key, spec in named:
        try:
            make_agent(spec)
        except ValueError as exc:
            raise ConfigError(f"{source}: key {key!r}: {exc}") from None
    if cfg.vec_env == "batched":
        from .batched_env import check_batched

        check_batched(cfg, source)


def forget_after(run_dir: Path, steps: int) -> None:
    """Resuming at ``steps``: drop what the run made after it (metrics rows, self-play
    snapshots), as the resumed run makes them again."""
    trim_csv(run_dir / "metrics.csv", "timesteps", steps)
    for taken, path in numbered(run_dir / "snapshots", SNAPSHOT_RE):
        if taken > steps:
            path.unlink()


def elapsed_at(run_dir: Path) -> float:
    """The elapsed time of the last ``metrics.csv`` row (0 without one)."""
    path = run_dir / "metrics.csv"
    rows = list(csv.DictReader(path.open())) if path.is_file() else []
    return float(rows[-1]["elapsed_s"]) if rows else 0.0


def stopped_checkpoint(
    model: MaskablePPO, checkpoints: Checkpoints, boundary: int, run_dir: Path
) -> str:
    """After a stop mid-training: checkpoint the network of the last update (made at step
    ``boundary``, or the warm-started network at 0; the steps of an unfinished rollout are
    dropped, and with them the exact resume state); the report's tail."""
    steps = model.num_timesteps
    if not checkpoint_path(run_dir, boundary).is_file():
        if steps == boundary and checkpoints.model is not None:  # at a rollout boundary: exact
            checkpoints.save()
        else:
            model.num_timesteps = boundary
            try:
                save_checkpoint(model, run_dir)
            finally:
                model.num_timesteps = steps
    newest = numbered(run_dir / "checkpoints", CKPT_RE)
    return (
        f"stopped at {steps} steps; newest checkpoint {newest[0][1].name}; "
        f"continue with --resume {run_dir}"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    overrides = list(args.overrides) + ([f"seed={args.seed}"] if args.seed is not None else [])

    # --- config and run folder: nothing in a folder changes before its lock is held and, on
    # --resume, a checkpoint has loaded
    loaded: MaskablePPO | None = None
    state = None
    if args.resume is not None:
        run_dir = claim_resumed_run(args.resume)
        cfg = load_config(run_dir / "config.yaml", overrides)
        check_config(cfg, str(run_dir / "config.yaml"))
        ckpt, loaded, state = resume_checkpoint(run_dir, cfg)
        remove_temp_files(run_dir)
        forget_after(run_dir, loaded.num_timesteps)  # (before the envs load the snapshots)
    else:
        cfg = load_config(args.config, overrides)
        check_config(cfg, str(args.config))
        run_dir = claim_new_run(args.run_dir, Path("runs"), f"{cfg.name}__{cfg.seed}")
        ckpt = None
    save_config(cfg, run_dir / "config.yaml")
    append_line(
        run_dir / "command.txt",
        shlex.join([sys.executable, "-m", __spec__.name, *sys.argv[1:]]),
    )
    rules = config_rules(cfg)

    # --- seeding (SB3 seeds python, numpy and torch; envs get seed + rank)
    set_random_seed(cfg.seed)
    torch.set_num_threads(cfg.torch_threads)

    # --- envs and model
    selfplay = cfg.selfplay_start >= 0
    snapshot_dir = run_dir / "snapshots" if selfplay else None
    env = make_vec_env(cfg, snapshot_dir)
    if loaded is None:
        model = build_model(cfg, env, run_dir)
        logs: list[Any] = [
            CSVOutputFormat(str(run_dir / "progress.csv")),
            TensorBoardOutputFormat(str(run_dir / "tb")),
        ]
    else:
        model = loaded
        model.set_env(env)
        steps = model.num_timesteps
        logs = [
            ContinuedCSV(str(run_dir / "progress.csv"), steps),
            ContinuedTensorBoard(str(run_dir / "tb"), steps),
        ]
    model.set_logger(Logger(str(run_dir), logs))
    if loaded is not None:
        if state is not None and not restore(model, env, state):
            state = None
        how = "exactly" if state is not None else "(the envs and random streams start afresh)"
        print(f"resuming {run_dir} from {ckpt.name} at {model.num_timesteps} steps {how}")

    # --- callbacks: checkpoints, evaluation, self-play snapshots, progress bar
    start = time.time() - (state["elapsed_s"] if state is not None else elapsed_at(run_dir))
    evaluator = EvalCallback(cfg, rules, run_dir, start)
    if state is not None:
        evaluator.best = state["best"]
    checkpoints = Checkpoints(cfg, run_dir, evaluator)
    progress_bar = ProgressCallback(cfg.total_timesteps, model.num_timesteps)
    callbacks: list[BaseCallback] = [checkpoints, evaluator, progress_bar]
    if selfplay:
        callbacks.append(SnapshotCallback(cfg, rules, snapshot_dir))

    # --- imitation warm start (new runs only; a resumed run's checkpoint already holds it)
    if ckpt is None and cfg.imitation_teacher is not None:
        warm_start(model, cfg, evaluator, run_dir)
    elif ckpt is None and cfg.eval_every > 0:  # the curve starts at the untrained network
        evaluator.init_callback(model)
        evaluator.run_eval(cfg.eval_matches)

    # --- train
    done_before = model.num_timesteps
    remaining = cfg.total_timesteps - done_before
    t0 = time.time()
    if remaining > 0:
        stop = StopOnSignal(model)
        if state is not None:
            restore_rng(state)  # last: nothing between here and the first step draws
        try:
            model.learn(
                total_timesteps=remaining,
                callback=CallbackList([stop, *callbacks]),
                reset_num_timesteps=ckpt is None,
                tb_log_name="tb",
            )
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: keep the last update's network
            progress_bar.close()
            report = stopped_checkpoint(model, checkpoints, stop.updated_at, run_dir)
            raise type(exc)(report) from None
    train_s = time.time() - t0
    steps_per_s = (model.num_timesteps - done_before) / max(train_s, 1e-9)
    # a last checkpoint so that --resume of a finished run (with a larger budget) continues here
    if not checkpoint_path(run_dir, model.num_timesteps).is_file():
        checkpoints.save()
    env.close()
    save_policy_atomic(model, run_dir / "final_model.zip", rules, timesteps=model.num_timesteps)

    # --- final evaluation
    if getattr(evaluator, "model", None) is None:  # no learn() bound it: nothing left to train
        evaluator.init_callback(model)
    final = evaluator.run_eval(cfg.final_eval_matches)
    model.logger.record("time/total_timesteps", model.num_timesteps)  # the row's step, for resume
    model.logger.dump(model.num_timesteps)
    write_text(
        run_dir / "final_eval.json",
        json.dumps(
            {name: {k: v for k, v in r.items() if k != "table"} for name, r in final.items()},
            indent=1,
        ),
    )
    evaluation = {
        name: {k: r[k] for k in ("win_rate", "ci_low", "ci_high", "matches")}
        for name, r in final.items()
    }
    portable = export_model(
        model,
        rules,
        run_dir / "final_model.safetensors",
        {"config": cfg.to_dict(), "evaluation": evaluation},
    )
    plot_learning_curve(run_dir / "metrics.csv", run_dir / "learning_curve.png")
    print(f"\nrun folder: {run_dir} (portable policy: {portable.name})")
    print(
        f"trained {model.num_timesteps - done_before} steps in {train_s:.0f} s "
        f"({steps_per_s:.0f} env steps/s); total {model.num_timesteps}"
    )
    for opponent, r in final.items():
        print(
            f"\nfinal evaluation vs {opponent} ({r['matches']} duplicate matches): "
            f"win rate {r['win_rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        )
        print(r["table"])
    return {
        "run_dir": str(run_dir),
        "timesteps": model.num_timesteps,
        "final": final,
        "steps_per_s": steps_per_s,
    }
