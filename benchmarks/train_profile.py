"""Where a training step's CPU goes: ``bergen_env.training.train``'s envs and MaskablePPO, side
by side.

    python -m benchmarks.train_profile [--config configs/quick.yaml] [--steps 40960]
        [--device cpu|cuda|auto] [--set key=value ...] [--batched-set key=value ...]
        [--subproc-set key=value ...]

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

``--device`` puts both sides' networks there (the config's ``device``; default: the config's).
With a CUDA device the batched side's learner is ``OverlappedMaskablePPO`` over pinned buffers
(:mod:`bergen_env.training.device`), and the batched side runs twice: once whole, for its
throughput in wall time with the host→device copies overlapped as in training, and once split,
in wall time with the GPU synchronised before and after each part (so a part's time includes
its GPU work; the synchronisation serialises the copies, so the split run is slower than the
whole one), the copies (``host_to_device``: the observations and masks of every step) a part of
their own. ``--device cuda`` on a machine where torch sees no GPU stops with one line saying so.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchmarks.cpu_time import waited_cpu
from bergen_env.training.config import TrainConfig, load_config
from bergen_env.training.device import pins_memory
from bergen_env.training.train import build_model, check_config, make_vec_env


class Timed:
    """Wraps a callable, adding up the time spent inside it: the process's CPU time, or with
    ``sync`` (a GPU's synchronisation, called before and after) the wall time."""

    def __init__(self, fn: Callable[..., Any], sync: Callable[[], None] | None = None) -> None:
        self.fn, self.sync, self.seconds = fn, sync, 0.0
        self.clock = time.process_time if sync is None else time.perf_counter

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.sync is not None:
            self.sync()
        t0 = self.clock()
        try:
            return self.fn(*args, **kwargs)
        finally:
            if self.sync is not None:
                self.sync()
            self.seconds += self.clock() - t0


def train_side(cfg: TrainConfig, steps: int, split: bool) -> dict[str, Any]:
    """Train ``cfg``'s model for ``steps`` decisions; the CPU time of the process tree (and,
    with ``split``, where this process spent it: its CPU time, or on a GPU the wall time)."""
    torch.set_num_threads(cfg.torch_threads)
    on_gpu = pins_memory(cfg.device)
    sync = torch.cuda.synchronize if on_gpu else None
    cpu0, wall0 = waited_cpu(), time.perf_counter()
    env = make_vec_env(cfg, None)
    model = build_model(cfg, env, Path("."))
    parts: dict[str, Timed] = {}
    if split:
        parts["env + opponents"] = Timed(env.step_wait, sync)
        env.step_wait = parts["env + opponents"]  # type: ignore[method-assign]
        parts["rollout forward"] = Timed(model.policy.forward, sync)
        model.policy.forward = parts["rollout forward"]  # type: ignore[method-assign]
        values = Timed(model.policy.predict_values, sync)
        model.policy.predict_values = values  # type: ignore[method-assign]
        parts["update"] = Timed(model.train, sync)
        model.train = parts["update"]  # type: ignore[method-assign]
        if hasattr(model, "host_to_device"):  # OverlappedMaskablePPO: the rollout's copies
            parts["host→device copies"] = Timed(model.host_to_device, sync)
            model.host_to_device = parts["host→device copies"]  # type: ignore[method-assign]
    clock = time.perf_counter if on_gpu else time.process_time
    own0 = clock()
    model.learn(total_timesteps=steps)
    if sync is not None:
        sync()
    own = clock() - own0
    env.close()
    cpu, wall = waited_cpu() - cpu0, time.perf_counter() - wall0
    out: dict[str, Any] = {
        "vec_env": cfg.vec_env,
        "n_envs": cfg.n_envs,
        "device": str(model.device),
        "learner": type(model).__name__,
        "steps": model.num_timesteps,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "steps_per_cpu_s": round(model.num_timesteps / cpu, 1),
        "steps_per_wall_s": round(model.num_timesteps / wall, 1),
    }
    if split:
        # (SB3 calls predict_values only in the rollout: the last observation, truncations)
        parts["rollout forward"].seconds += values.seconds
        shares = {name: t.seconds / own for name, t in parts.items()}
        shares["SB3 bookkeeping"] = 1.0 - sum(shares.values())
        out["split"] = {k: round(v, 4) for k, v in shares.items()}
        out["split_clock"] = "wall, GPU synchronised" if on_gpu else "process CPU"
        out["learn_s" if on_gpu else "learn_cpu_s"] = round(own, 3)
    return out


def check_device(device: str | None) -> None:
    """Stop in one line when ``device`` is ``cuda`` and torch sees no GPU (``auto`` falls back
    to the CPU)."""
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit(
            f"benchmarks.train_profile: --device cuda: torch {torch.__version__} sees no CUDA "
            "device on this machine; run it where one is, or use --device cpu"
        )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, default=Path("configs/quick.yaml"))
    p.add_argument("--steps", type=int, default=40_960)
    p.add_argument(
        "--device", choices=["cpu", "cuda", "auto"], help="where the networks train (config's)"
    )
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--batched-set", action="append", default=[])
    p.add_argument("--subproc-set", action="append", default=[])
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    check_device(args.device)
    common = ["imitation_teacher=null", "eval_every=0", *args.overrides]
    if args.device is not None:
        common.append(f"device={args.device}")
    sides = {
        "batched": load_config(args.config, [*common, "vec_env=batched", *args.batched_set]),
        "subproc": load_config(args.config, [*common, "vec_env=subproc", *args.subproc_set]),
    }
    for name, cfg in sides.items():
        check_config(cfg, f"{args.config} ({name})")
    for cfg in sides.values():  # warm-up: numba's cached kernels, torch's first calls
        rollout = cfg.n_envs * cfg.n_steps
        train_side(cfg, rollout, split=False)
    on_gpu = pins_memory(sides["batched"].device)
    results: dict[str, Any] = {}
    if on_gpu:  # the whole step, copies overlapped, before the synchronised split
        results["batched whole"] = train_side(sides["batched"], args.steps, split=False)
    for name, cfg in sides.items():
        results[name] = train_side(cfg, args.steps, split=name == "batched")
    ratio = results["batched"]["steps_per_cpu_s"] / results["subproc"]["steps_per_cpu_s"]
    report = {"config": str(args.config), "sides": results, "ratio": round(ratio, 2)}
    for name, r in results.items():
        print(
            f"{name:8s} n_envs={r['n_envs']:5d} {r['learner']} on {r['device']}: {r['steps']} "
            f"steps in {r['cpu_s']:.1f} CPU-s (process tree; {r['wall_s']:.1f} s wall): "
            f"{r['steps_per_cpu_s']:.0f} steps per CPU-s, {r['steps_per_wall_s']:.0f} per s wall"
        )
        clock = "of the wall time (GPU synchronised)" if on_gpu else "of the process's CPU"
        for part, share in r.get("split", {}).items():
            print(f"    {part:18s} {100 * share:5.1f}% {clock}")
    print(f"batched / subproc: {ratio:.2f}x env steps per CPU-second")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
