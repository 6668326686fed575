"""Overhead of the Ray backend: a tournament on a local Ray instance against local worker processes.

    python -m benchmarks.ray_overhead [--matches 2000] [--workers 2] [--repeats 3]
        [--task-matches 0 16 64 256] [--agents heuristic greedy] [--json PATH]

One process starts a local Ray instance of ``--workers`` CPUs (its start-up time is reported
apart), then plays the same seeded tournament with ``run_tournament(..., workers=W)`` (a fresh
process pool each time, as ``bergen-evaluate --workers W`` does) and with ``backend="ray"``, in
turn: every repeat, for every task size, one run of each, alternating which goes first, so load
from other programs on a shared machine hits both alike. Each pair of runs must give the same
records. ``--task-matches`` sets the matches per Ray task (whole deal groups; 0: the library's
default sizing, :func:`bergen_env.ray_tasks.task_units`).

Reported per task size: the median wall-clock throughput of each side (matches per second), the
median of the pairwise ratios Ray / processes, and each side's CPU seconds per 1,000 matches
summed over this process and every process below it (the pool's workers, or Ray's workers and
its own services), which load from others does not inflate. The 1-minute load average is
sampled before every run; on a machine others share, re-measure on an idle one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bergen_env import ray_tasks
from bergen_env.arena import run_tournament
from bergen_env.rules import Rules

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system, with reaped children) of ``root`` and every live process
    below it, from ``/proc``."""
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def timed(kind: str, agents: list[str], rules: Rules, matches: int, workers: int) -> dict:
    """One tournament on ``kind`` (``processes`` or ``ray``): wall and CPU seconds, records."""
    kwargs: dict[str, Any] = {"workers": workers} if kind == "processes" else {"backend": "ray"}
    load = os.getloadavg()[0]
    cpu0, t0 = tree_cpu_seconds(os.getpid()), time.perf_counter()
    result = run_tournament(agents, rules, matches=matches, seed=0, **kwargs)
    wall, cpu = time.perf_counter() - t0, tree_cpu_seconds(os.getpid()) - cpu0
    return {"wall": wall, "cpu": cpu, "load": load, "records": result.records}


#: The library's task sizing, restored for ``--task-matches 0``.
DEFAULT_SIZING = (ray_tasks.MIN_TASK_MATCHES, ray_tasks.TASKS_PER_CPU)


def set_task_matches(size: int) -> None:
    """Ray tasks of ``size`` matches (0: the library's default sizing)."""
    if size == 0:
        ray_tasks.MIN_TASK_MATCHES, ray_tasks.TASKS_PER_CPU = DEFAULT_SIZING
    else:  # one task per `size` matches, whatever the cluster's CPUs
        ray_tasks.MIN_TASK_MATCHES, ray_tasks.TASKS_PER_CPU = size, 1 << 30


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.ray_overhead",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--agents", nargs="+", default=["heuristic", "greedy"])
    p.add_argument("--matches", type=int, default=2000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--task-matches", type=int, nargs="+", default=[0, 16, 64, 256])
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    rules = Rules.preset("standard")
    t0 = time.perf_counter()
    ray = ray_tasks.connect(num_cpus=args.workers, include_dashboard=False)
    start_up = time.perf_counter() - t0
    set_task_matches(0)
    timed("ray", args.agents, rules, args.matches, args.workers)  # Ray's workers start: untimed
    runs: dict[int, dict[str, list[dict]]] = {
        s: {"processes": [], "ray": []} for s in args.task_matches
    }
    try:
        for rep in range(args.repeats):
            for k, size in enumerate(args.task_matches):
                set_task_matches(size)
                order = ["processes", "ray"] if (rep + k) % 2 == 0 else ["ray", "processes"]
                pair = {
                    kind: timed(kind, args.agents, rules, args.matches, args.workers)
                    for kind in order
                }
                if pair["ray"].pop("records") != pair["processes"].pop("records"):
                    raise SystemExit("the Ray run's records differ from the processes' run")
                for kind in order:
                    runs[size][kind].append(pair[kind])
                print(
                    f"repeat {rep} task matches {size or 'default'}: "
                    + ", ".join(
                        f"{kind} {args.matches / pair[kind]['wall']:.0f} matches/s "
                        f"(load {pair[kind]['load']:.1f})"
                        for kind in order
                    ),
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        set_task_matches(0)
    rows = []
    for size, sides in runs.items():
        ratios = [r["wall"] / y["wall"] for r, y in zip(sides["processes"], sides["ray"])]
        rows.append(
            {
                "task_matches": size or "default",
                "processes_matches_per_s": statistics.median(
                    args.matches / r["wall"] for r in sides["processes"]
                ),
                "ray_matches_per_s": statistics.median(
                    args.matches / r["wall"] for r in sides["ray"]
                ),
                "ratio_ray_over_processes": statistics.median(ratios),
                "ratios": ratios,
                "processes_cpu_s_per_1000": statistics.median(
                    1000 * r["cpu"] / args.matches for r in sides["processes"]
                ),
                "ray_cpu_s_per_1000": statistics.median(
                    1000 * r["cpu"] / args.matches for r in sides["ray"]
                ),
            }
        )
    loads = [r["load"] for sides in runs.values() for kind in sides.values() for r in kind]
    report = {
        "agents": args.agents,
        "matches": args.matches,
        "workers": args.workers,
        "repeats": args.repeats,
        "ray_start_s": start_up,
        "ray_version": ray.__version__,
        "load_1min": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
        "cpus": os.cpu_count(),
        "rows": rows,
    }
    print(
        f"{args.agents} {args.matches} matches, --workers {args.workers} vs a local Ray instance "
        f"of {args.workers} CPUs (started in {start_up:.1f} s), {args.repeats} repeats; "
        f"1-min load {report['load_1min']['min']:.1f} to {report['load_1min']['max']:.1f} "
        f"on {os.cpu_count()} cores"
    )
    print(
        "| task matches | processes matches/s | Ray matches/s | Ray / processes (median; each) "
        "| CPU s per 1,000: processes | Ray |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['task_matches']} | {r['processes_matches_per_s']:.0f} "
            f"| {r['ray_matches_per_s']:.0f} "
            f"| {r['ratio_ray_over_processes']:.2f} ({', '.join(f'{x:.2f}' for x in r['ratios'])}) "
            f"| {r['processes_cpu_s_per_1000']:.2f} | {r['ray_cpu_s_per_1000']:.2f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
