"""``BergenVectorEnv(parallel=True)`` on 1 thread and on 2: the speed-up of sharing rows.

Steps a batch of random legal play (``--rows`` matches, observations written, ``copy=False``)
with numba's threads set to 1 and to 2, in alternating rounds (1, 2, 1, 2, ...), and reports
each setting's best round in wall-clock time: the speed-up of threads is a wall-clock figure,
so it is only meaningful on cores no other job is using. The machine's load average before and
after is printed beside it; the process's CPU time per step is printed too (on 2 threads it
includes the second thread's).

    python -m benchmarks.vector_threads [--rows 16384] [--rounds 5] [--steps 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numba

from benchmarks.run import write_json
from bergen_env.vector import BergenVectorEnv

SEED = 0


def measure(rows: int, rounds: int, steps: int) -> dict[str, Any]:
    env = BergenVectorEnv(num_envs=rows, seed=SEED, copy=False, parallel=True)
    obs, _ = env.reset()
    for _ in range(3):  # compile (or load the cache)
        obs, *_ = env.step(env.random_actions(obs["action_mask"]))
    wall = {1: float("inf"), 2: float("inf")}
    cpu = {1: float("inf"), 2: float("inf")}
    load_before = os.getloadavg()
    for _ in range(rounds):
        for threads in (1, 2):
            numba.set_num_threads(threads)
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(steps):
                obs, *_ = env.step(env.random_actions(obs["action_mask"]))
            wall[threads] = min(wall[threads], (time.perf_counter() - start) / steps)
            cpu[threads] = min(cpu[threads], (time.process_time() - start_cpu) / steps)
    load_after = os.getloadavg()
    result = dict(
        rows=rows,
        ns_per_action_wall={k: 1e9 * v / rows for k, v in wall.items()},
        ns_per_action_cpu={k: 1e9 * v / rows for k, v in cpu.items()},
        speedup=wall[1] / wall[2],
        load_average_before=load_before,
        load_average_after=load_after,
        cpus=os.cpu_count(),
    )
    print(
        f"{rows} rows, observations, copy=False: 1 thread {result['ns_per_action_wall'][1]:.1f} "
        f"ns per action (wall), 2 threads {result['ns_per_action_wall'][2]:.1f}: "
        f"{result['speedup']:.2f}x; CPU ns per action {result['ns_per_action_cpu'][1]:.1f} / "
        f"{result['ns_per_action_cpu'][2]:.1f}; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after, on {os.cpu_count()} cores"
    )
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="batched steps per round")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    result = measure(args.rows, args.rounds, args.steps)
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
