"""Where a training step's CPU goes: ``bergen_env.training.train``'s envs and MaskablePPO, side
by side.

    python -m benchmarks.train_profile [--config configs/quick.yaml] [--steps 40960]
        [--set key=value ...] [--batched-set key=value ...] [--subproc-set key=value ...]

Builds the envs and the model exactly as ``bergen_env.training.train`` does (``make_vec_env``,
``build_model``: the config's network, PPO settings and opponents) once with
``vec_env: batched`` and once with ``vec_env: subproc``, and trains each for ``--steps`` learner
decisions (after a short warm-up of both), in one process, one after the other. Each side's CPU
time is the process tree's: ``resource.getrusage`` of the process plus its children (the
subproc env workers are closed, so waited for, before the clock stops). A side reports env
steps per CPU-second and, for ``batched`` (everything in this process, one torch thread), the
split of its CPU time: the env with its opponents (``VecEnv.step``), the rollout's network
forward (the policy's forward and the value of the last observation), the PPO update
(``train()``), and the rest (SB3's per-step bookkeeping: the rollout buffer, the callbacks,
``infos``). ``--batched-set`` / ``--subproc-set`` apply to one side only (e.g. the batch's
``n_envs``). ``--json PATH`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from bergen_env.training.config import TrainConfig, load_config
from bergen_env.training.train import build_model, check_config, make_vec_env


def tree_cpu() -> float:
    """CPU seconds (user + system) of this process and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Timed:
    """Wraps a callable, adding up the process CPU time spent inside it."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.process_time()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.process_time() - t0


def train_side(cfg: TrainConfig, steps: int, split: bool) -> dict[str, Any]:
    """Train ``cfg``'s model for ``steps`` decisions; the CPU time of the process tree (and,
    with ``split``, where this process spent it)."""
    torch.set_num_threads(cfg.torch_threads)
    cpu0, wall0 = tree_cpu(), time.perf_counter()
    env = make_vec_env(cfg, None)
    model = build_model(cfg, env, Path("."))
    parts: dict[str, Timed] = {}
    if split:
        parts["env + opponents"] = Timed(env.step_wait)
        env.step_wait = parts["env + opponents"]  # type: ignore[method-assign]
        parts["rollout forward"] = Timed(model.policy.forward)
        model.policy.forward = parts["rollout forward"]  # type: ignore[method-assign]
        values = Timed(model.policy.predict_values)
        model.policy.predict_values = values  # type: ignore[method-assign]
        parts["update"] = Timed(model.train)
        model.train = parts["update"]  # type: ignore[method-assign]
    own0 = time.process_time()
    model.learn(total_timesteps=steps)
    own = time.process_time() - own0
    env.close()
    cpu, wall = tree_cpu() - cpu0, time.perf_counter() - wall0
    out: dict[str, Any] = {
        "vec_env": cfg.vec_env,
        "n_envs": cfg.n_envs,
        "steps": model.num_timesteps,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "steps_per_cpu_s": round(model.num_timesteps / cpu, 1),
    }
    if split:
        # (SB3 calls predict_values only in the rollout: the last observation, truncations)
        parts["rollout forward"].seconds += values.seconds
        shares = {name: t.seconds / own for name, t in parts.items()}
        shares["SB3 bookkeeping"] = 1.0 - sum(shares.values())
        out["split"] = {k: round(v, 4) for k, v in shares.items()}
        out["learn_cpu_s"] = round(own, 3)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, default=Path("configs/quick.yaml"))
    p.add_argument("--steps", type=int, default=40_960)
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--batched-set", action="append", default=[])
    p.add_argument("--subproc-set", action="append", default=[])
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    common = ["imitation_teacher=null", "eval_every=0", *args.overrides]
    sides = {
        "batched": load_config(args.config, [*common, "vec_env=batched", *args.batched_set]),
        "subproc": load_config(args.config, [*common, "vec_env=subproc", *args.subproc_set]),
    }
    for name, cfg in sides.items():
        check_config(cfg, f"{args.config} ({name})")
    for cfg in sides.values():  # warm-up: numba's cached kernels, torch's first calls
        rollout = cfg.n_envs * cfg.n_steps
        train_side(cfg, rollout, split=False)
    results = {
        name: train_side(cfg, args.steps, split=name == "batched") for name, cfg in sides.items()
    }
    ratio = results["batched"]["steps_per_cpu_s"] / results["subproc"]["steps_per_cpu_s"]
    report = {"config": str(args.config), "sides": results, "ratio": round(ratio, 2)}
    for name, r in results.items():
        print(
            f"{name:8s} n_envs={r['n_envs']:5d}: {r['steps']} steps in {r['cpu_s']:.1f} CPU-s "
            f"(process tree; {r['wall_s']:.1f} s wall): {r['steps_per_cpu_s']:.0f} steps per CPU-s"
        )
        for part, share in r.get("split", {}).items():
            print(f"    {part:18s} {100 * share:5.1f}% of the process's CPU")
    print(f"batched / subproc: {ratio:.2f}x env steps per CPU-second")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
