"""Expert iteration's run: the iterations of collection, fit and checks in a run folder, and
what ``--resume`` reads back (the network's state, the metrics, the saved decisions)."""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from bergen_env.atomic_files import atomic_path, write_text

from .expert_iteration_collection import Decisions, collect_parallel, saved_decisions
from .expert_iteration_config import ExpertIterationConfig
from .expert_iteration_evaluation import EVAL_SEED_OFFSET, evaluate, held_out_metrics
from .expert_iteration_fitting import fit, split_matches
from .expert_iteration_networks import Network, build_network, network_arrays, save_network
from .ray_option import join_ray
from .run_folder import newest_good, numbered

#: The program's name in messages.
PROG = "python -m bergen_env.training.expert_iteration"


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
        elif resume and (found := saved_decisions(saved)) is not None:
            data = found
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


def iteration_data(run_dir: Path, k: int, data_files: list[Path] | None) -> Decisions:
    """The decisions iteration ``k`` of the run fitted on (``--data`` files for iteration 0)."""
    if k == 0 and data_files:
        return Decisions.concatenate([Decisions.load(f) for f in data_files])
    return Decisions.load(run_dir / f"data_{k}.npz")
