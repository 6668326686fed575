"""Multi-agent PPO on Ray RLlib: every learning seat of a Bergen match trains at once.

Usage::

    bergen-train-rllib --config configs/rllib_selfplay.yaml [--stop-iters N]
        [--address ADDR] [--run-dir DIR] [--set key=value ...]

Without ``--address`` Ray starts locally with ``num_cpus`` CPUs (2 by default); with
``--address HOST:6379`` (or ``auto``) the run joins an existing cluster (see the README: start a
head with ``ray start --head --port=6379`` and workers with ``ray start --address=HEAD:6379``,
then raise ``num_env_runners`` in the config).

The config is YAML with one ``default:`` block whose keys are the fields of :class:`RLlibConfig`.
``policies: shared`` maps every learning seat to one policy ``"shared"`` (self-play);
``policies: sides`` maps seat i to ``"side_<side of i>"`` (one policy per side: per seat in
individual play, per partnership with partners). ``scripted: {seat: agent}`` plays those seats
with scripted agents inside the env. Every policy is RLlib's ``ActionMaskingTorchRLModule`` (PPO
with the illegal actions' logits masked). ``ppo:`` is passed to ``PPOConfig.training`` and
``model:`` to the RLModule's ``model_config`` under RLlib's own names.

The run folder (``runs/rllib/<name>__<seed>__<time>`` or ``--run-dir``) gets ``config.yaml`` (the
resolved config), ``command.txt``, ``metrics.csv`` (one row per iteration) and checkpoints
``checkpoints/iter_<n>`` plus ``checkpoints/final`` (``Algorithm.save_to_path``). A checkpoint plays
in the arena as ``rllib:<run>/checkpoints/final[:POLICY]``
(:mod:`bergen_env.training.rllib_policies`).
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("train_rllib"))

import argparse
import csv
import dataclasses
import functools
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bergen_env.atomic_files import write_text
from bergen_env.rules import Rules
from bergen_env.stop import check_stop
from bergen_env.validation import is_int

from .cli import ArgumentParser
from .config import EnvBlock, add_override_argument, load_dataclass_config
from .config_checks import ConfigError, key_error

PROG = "bergen-train-rllib"
POLICY_MODES = ("shared", "sides")


@dataclass
class RLlibConfig(EnvBlock):
    """Everything an RLlib run needs. Each field is one YAML key under ``default:`` (the env keys
    come from :class:`bergen_env.training.config.EnvBlock`; ``reward`` is ``match`` or
    ``points``)."""

    # --- run
    name: str = "rllib"
    """Run name prefix of the run folder (defaults to the config file's stem)."""
    seed: int = 0
    """Seed of RLlib (network initialisation, env runners' env seeds)."""
    stop_iters: int = 50
    """Training iterations (``--stop-iters`` overrides)."""
    checkpoint_every: int = 10
    """Iterations between checkpoints (0: only the final one)."""
    num_cpus: int = 2
    """CPUs of the local Ray instance (ignored with ``--address``)."""
    num_env_runners: int = 0
    """Remote sampling workers (0: sample in the driver process). Raise it on a cluster."""
    num_envs_per_env_runner: int = 1
    """Envs stepped together by each env runner."""
    num_learners: int = 0
    """Remote learner workers (0: learn in the driver process)."""

    # --- env (and the keys of EnvBlock)
    scripted: dict[int, str] = field(default_factory=dict)
    """Seats played by scripted agents inside the env, e.g. ``{1: heuristic}``."""

    # --- policies and PPO
    policies: str = "shared"
    """``shared`` (one policy for every learning seat) or ``sides`` (one policy per side)."""
    ppo: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of ``PPOConfig.training`` (``lr``, ``train_batch_size_per_learner``,
    ``minibatch_size``, ``num_epochs``, ``gamma``, ``lambda_``, ``entropy_coeff``, ...)."""
    model: dict[str, Any] = field(default_factory=dict)
    """RLModule ``model_config`` (``fcnet_hiddens``, ``fcnet_activation``, ``vf_share_layers``)."""

    def validate(self, source: str = "<config>") -> None:
        """Check values; errors name ``source`` and the key."""

        for key in ("stop_iters", "num_cpus", "num_envs_per_env_runner", "max_hands"):
            value = getattr(self, key)
            if not is_int(value) or value < 1:
                raise key_error(self, source, key, "must be a positive int")
        for key in ("checkpoint_every", "num_env_runners", "num_learners", "seed"):
            value = getattr(self, key)
            if not is_int(value) or value < 0:
                raise key_error(self, source, key, "must be an int >= 0")
        if self.policies not in POLICY_MODES:
            raise key_error(self, source, "policies", f"must be one of {POLICY_MODES}")
        for key in ("rule_overrides", "ppo", "model", "scripted"):
            if not isinstance(getattr(self, key), dict):
                raise key_error(self, source, key, "must be a mapping")
        rules = self.env_options(source).rules
        try:
            from .rllib_env import parse_scripted

            self.scripted = parse_scripted(self.scripted, rules.num_players)
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc}") from None

    def make_rules(self) -> Rules:
        """The rules of the run's matches."""
        return self.env_options().rules

    def env_config(self) -> dict[str, Any]:
        """The ``env_config`` of :class:`bergen_env.training.rllib_env.BergenMultiAgentEnv`."""
        return dict(
            **self.env_block_kwargs(),
            scripted=dict(self.scripted),
        )


def load_config(path: str | Path, overrides: list[str] | None = None) -> RLlibConfig:
    """Load ``path`` (YAML with a ``default:`` block) and apply ``key=value`` overrides."""
    return load_dataclass_config(RLlibConfig, path, overrides)


# ---------------------------------------------------------------------- the algorithm


def policy_ids(cfg: RLlibConfig) -> list[str]:
    """The policies the learning seats map to, in seat order."""
    rules = cfg.make_rules()
    seats = [s for s in range(rules.num_players) if s not in cfg.scripted]
    if cfg.policies == "shared":
        return ["shared"]
    return sorted({f"side_{rules.side_of[s]}" for s in seats})


def build_algo_config(cfg: RLlibConfig, source: str = "<config>") -> Any:
    """The ``PPOConfig`` of a run (RLlib's current API stack, action-masking RLModules)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    from .rllib_env import register_bergen_env, shared_policy_mapping, side_policy_mapping

    env_name = register_bergen_env()
    rules = cfg.make_rules()
    pids = policy_ids(cfg)
    if cfg.policies == "shared":
        mapping = shared_policy_mapping
    else:
        mapping = functools.partial(side_policy_mapping, side_of=tuple(rules.side_of))
    model = {"fcnet_hiddens": [256, 256], "fcnet_activation": "relu", **cfg.model}
    ppo = {
        "lr": 3e-4,
        "gamma": 0.995,
        "lambda_": 0.95,
        "train_batch_size_per_learner": 4000,
        "minibatch_size": 256,
        "num_epochs": 10,
        "entropy_coeff": 0.01,
        **cfg.ppo,
    }
    algo_config = (
        PPOConfig()
        # RLlib's env checker steps random actions, which are mostly illegal moves here.
        .environment(env_name, env_config=cfg.env_config(), disable_env_checking=True)
        .env_runners(
            num_env_runners=cfg.num_env_runners,
            num_envs_per_env_runner=cfg.num_envs_per_env_runner,
        )
        .learners(num_learners=cfg.num_learners)
        .multi_agent(policies=set(pids), policy_mapping_fn=mapping, policies_to_train=pids)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    pid: RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config=model)
                    for pid in pids
                }
            )
        )
        .debugging(seed=cfg.seed)
    )
    try:
        algo_config = algo_config.training(**ppo)
    except TypeError as exc:
        raise ConfigError(f"{source}: key 'ppo': {exc}") from None
    return algo_config


# ---------------------------------------------------------------------- metrics


METRIC_COLUMNS = (
    "iteration",
    "time_s",
    "env_steps",
    "episodes",
    "episode_len_mean",
    "episode_return_mean",
)
POLICY_COLUMNS = ("return_mean", "policy_loss", "vf_loss", "entropy", "mean_kl_loss")


def metrics_row(result: dict[str, Any], pids: list[str], elapsed: float) -> dict[str, Any]:
    """One CSV row from an RLlib result dict (missing values are empty)."""
    runners = result.get("env_runners", {})
    learners = result.get("learners", {})
    row: dict[str, Any] = {
        "iteration": result.get("training_iteration"),
        "time_s": round(elapsed, 1),
        "env_steps": result.get("num_env_steps_sampled_lifetime"),
        "episodes": runners.get("num_episodes_lifetime"),
        "episode_len_mean": runners.get("episode_len_mean"),
        "episode_return_mean": runners.get("episode_return_mean"),
    }
    module_returns = runners.get("module_episode_returns_mean", {})
    for pid in pids:
        stats = learners.get(pid, {})
        row[f"{pid}/return_mean"] = module_returns.get(pid)
        for key in POLICY_COLUMNS[1:]:
            row[f"{pid}/{key}"] = stats.get(key)
    return row


# ---------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="YAML config (configs/rllib_*.yaml)")
    parser.add_argument("--stop-iters", type=int, default=None, help="override stop_iters")
    parser.add_argument(
        "--address", default=None, help="Ray cluster address (HOST:6379 or 'auto'); local if unset"
    )
    parser.add_argument("--run-dir", default=None, help="run folder (default runs/rllib/...)")
    add_override_argument(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    overrides = list(args.overrides)
    if args.stop_iters is not None:
        overrides.append(f"stop_iters={args.stop_iters}")
    cfg = load_config(args.config, overrides)
    run_dir = Path(
        args.run_dir
        or Path("runs") / "rllib" / f"{cfg.name}__{cfg.seed}__{time.strftime('%Y%m%d-%H%M%S')}"
    ).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(
        run_dir / "config.yaml",
        yaml.safe_dump({"default": dataclasses.asdict(cfg)}, sort_keys=False),
    )
    write_text(
        run_dir / "command.txt",
        shlex.join([sys.executable, "-m", __spec__.name, *sys.argv[1:]]) + "\n",
    )
    algo_config = build_algo_config(cfg, args.config)
    pids = policy_ids(cfg)

    import ray

    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=cfg.num_cpus, include_dashboard=False)
    try:
        algo = algo_config.build_algo()
        ckpt_dir = run_dir / "checkpoints"
        start = time.perf_counter()
        with open(run_dir / "metrics.csv", "w", newline="") as fh:
            columns = [*METRIC_COLUMNS, *(f"{p}/{k}" for p in pids for k in POLICY_COLUMNS)]
            writer = csv.DictWriter(fh, fieldnames=columns)
            writer.writeheader()
            for it in range(1, cfg.stop_iters + 1):
                check_stop()
                result = algo.train()
                row = metrics_row(result, pids, time.perf_counter() - start)
                writer.writerow(row)
                fh.flush()
                print(
                    f"iter {it}/{cfg.stop_iters}  steps {row['env_steps']}  "
                    f"episodes {row['episodes']}  len {row['episode_len_mean']}  "
                    f"time {row['time_s']}s",
                    flush=True,
                )
                if cfg.checkpoint_every and it % cfg.checkpoint_every == 0:
                    algo.save_to_path(str(ckpt_dir / f"iter_{it:05d}"))
        final = Path(algo.save_to_path(str(ckpt_dir / "final")))
        algo.stop()
    finally:
        ray.shutdown()
    print(f"checkpoint: {final}\npolicies: {', '.join(pids)}\nrun folder: {run_dir}")
    return run_dir
