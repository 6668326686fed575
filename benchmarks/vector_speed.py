"""The batched engine (``bergen_env.vector``) beside the scalar one, in one process on one core.

Every figure is CPU time of this one thread (``time.thread_time``): time spent waiting for the
core on a loaded machine does not count. Each pair of rows is measured alternately (A, B, A, B,
...) and each side reports its best round; the ratios are the point. Run it pinned to one core
(``taskset -c 0``); the script also pins itself.

- random legal play with masks: the scalar engine (``legal_actions`` + ``_apply``) against
  ``BergenVectorEnv(observations=False)`` with its batched random agent;
- with observations: the AEC env (PettingZoo's performance loop) against ``BergenVectorEnv``;
- one learner against random opponents: the single-agent env against
  ``BergenLearnerVectorEnv`` (learner steps, every opponent move played inside);
- ``search`` at its default (200 samples, public rollouts): ms per real choice with Python and
  with compiled playouts, on the same positions and seeds (the decisions are the same);
- labelling: expert iteration's 2-player teacher (``TEACHER``), CPU per real choice, also in
  scalar-engine actions (the engine's CPU per action of the first row of the same run);
- memory per match of the batch, and time per batched step for N from 1 to 65,536.

Two players; ``--rules`` names the presets measured (default ``standard``; e.g.
``--rules standard draw fives``); memory and the N sweep use the first.

    taskset -c 0 python -m benchmarks.vector_speed [--seconds 6] [--quick] [--rules standard ...]
        [--no-search] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import bergen_env
from benchmarks.agents_speed import collect_positions
from benchmarks.run import (
    aec_loop,
    engine_loop,
    machine,
    make_single_agent,
    pin_to_one_core,
    print_pinned_command,
    single_agent_loop,
    write_json,
)
from bergen_env.agents import make_agent
from bergen_env.rules import PRESETS, Rules
from bergen_env.vector import BergenLearnerVectorEnv, BergenVectorEnv

SEED = 0
BATCH = 4096
ROUNDS = 3
#: Expert iteration's 2-player teacher (``benchmarks.teacher_gap.DEFAULT_TEACHER``).
TEACHER = "search:rollout=heuristic,samples=800,belief=1,batch=200,prune=true,temperature=0.03"


def vector_loop(
    num_envs: int,
    observations: bool,
    copy: bool = True,
    rules: str = "standard",
    env_class: type = BergenVectorEnv,
    parallel: bool = False,
) -> Callable[[float], int]:
    """Batched random legal play (on ``env_class``, a ``BergenVectorEnv``; ``parallel``: its
    threaded step); returns match-steps (one per row per batch step)."""
    env = env_class(
        num_envs=num_envs, rules=rules, seed=SEED, observations=observations, copy=copy,
        parallel=parallel,
    )  # fmt: skip
    obs, _ = env.reset()

    def loop(deadline: float) -> int:
        nonlocal obs
        steps = 0
        while time.perf_counter() < deadline:
            obs, *_ = env.step(env.random_actions(obs["action_mask"]))
            steps += num_envs
        return steps

    loop(time.perf_counter() + 0.2)  # compile (or load the cache) and warm up
    return loop


def learner_loop(
    num_envs: int, rules: str = "standard", env_class: type = BergenLearnerVectorEnv
) -> Callable[[float], int]:
    """Learner steps of the batched single-learner env (``env_class``, a
    ``BergenLearnerVectorEnv``) against random opponents (the learner also random, from a
    seeded numpy Generator)."""
    env = env_class(num_envs=num_envs, rules=rules, opponents="random", seed=SEED)
    _, infos = env.reset()
    pick = np.random.default_rng(SEED)

    def loop(deadline: float) -> int:
        nonlocal infos
        steps = 0
        while time.perf_counter() < deadline:
            masks = infos["action_mask"]
            keys = pick.random(masks.shape, dtype=np.float32) * masks  # argmax: a legal action
            _, _, _, _, infos = env.step(keys.argmax(axis=1))
            steps += num_envs
        return steps

    loop(time.perf_counter() + 0.2)
    return loop


def side_by_side(
    a: Callable[[float], int], b: Callable[[float], int], seconds: float
) -> tuple[float, float]:
    """Best rate of each loop (steps per CPU second of this thread) over alternating rounds of
    about ``seconds / (2 * ROUNDS)`` each."""
    best = [0.0, 0.0]
    for _ in range(ROUNDS):
        for k, loop in enumerate((a, b)):
            best[k] = max(best[k], cpu_rate(loop, seconds / (2 * ROUNDS)))
    return best[0], best[1]


def cpu_rate(loop: Callable[[float], int], seconds: float) -> float:
    """Steps per CPU second of this thread of one round of ``loop`` (wall-clock deadline)."""
    gc.collect()
    start = time.thread_time()
    steps = loop(time.perf_counter() + seconds)
    return steps / (time.thread_time() - start)


def search_ms(positions: list, rules: Rules) -> tuple[float, float, bool]:
    """CPU ms per real choice of default search with Python and compiled playouts, alternating
    by position; and whether every decision was the same."""
    specs = ["search:playouts=python", "search:playouts=compiled"]
    spent, same = agents_ms(specs, positions, rules)
    return spent[0], spent[1], same


def agents_ms(specs: list[str], positions: list, rules: Rules) -> tuple[list[float], bool]:
    """CPU ms per position of each agent, alternating by position; whether they all chose the
    same actions."""
    agents = [make_agent(spec) for spec in specs]
    spent = [0.0] * len(agents)
    same = True
    for agent in agents:
        for warm in positions[:5]:  # compile (or load the cache) and build tables first
            agent.reset(rules, warm[2].seat, np.random.default_rng(0))
            agent.act(*warm)
    for i, (obs, mask, view) in enumerate(positions):
        chosen = []
        for k, agent in enumerate(agents):
            agent.reset(rules, view.seat, np.random.default_rng([SEED, i]))
            start = time.thread_time()
            chosen.append(agent.act(obs, mask, view))
            spent[k] += time.thread_time() - start
        same &= len(set(chosen)) == 1
    return [1000 * x / len(positions) for x in spent], same


def batch_bytes(num_envs: int, rules: str = "standard") -> float:
    """Bytes per match of a reset ``BergenVectorEnv``'s arrays (state, buffers, given deals)."""
    env = BergenVectorEnv(num_envs=num_envs, rules=rules, seed=SEED)
    env.reset()
    total = sum(a.nbytes for a in vars(env).values() if isinstance(a, np.ndarray))
    return total / num_envs


def step_time(num_envs: int, seconds: float, copy: bool, rules: str = "standard") -> float:
    """CPU microseconds per batched step (random actions, with observations) at ``num_envs``."""
    loop = vector_loop(num_envs, True, copy, rules)
    best = max(cpu_rate(loop, seconds / ROUNDS) for _ in range(ROUNDS))
    return 1e6 * num_envs / best


def run(
    seconds: float,
    quick: bool,
    presets: tuple[str, ...] = ("standard",),
    search: bool = True,
    scaling_sizes: bool = True,
) -> dict[str, Any]:
    affinity, pin_note = pin_to_one_core()
    rows: list[dict[str, Any]] = []

    def pair(preset: str, name: str, unit: str, scalar: float, batched: float, goal: float) -> None:
        ratio = batched / scalar
        rows.append(
            dict(rules=preset, name=name, unit=unit, scalar=scalar, batched=batched, ratio=ratio,
                 goal=goal)
        )  # fmt: skip
        print(
            f"  {name:<46} scalar {scalar:>12,.0f}  batched {batched:>12,.0f} {unit:<10} "
            f"{ratio:6.1f}x (goal {goal:g}x)",
            flush=True,
        )

    print(f"one core ({pin_note}); batch of {BATCH}; 2 players")
    for preset in presets:
        print(f"{preset} rules")
        rules = Rules.preset(preset, num_players=2)
        a, b = side_by_side(
            engine_loop(rules, False), vector_loop(BATCH, False, rules=preset), seconds
        )
        engine_rate = a
        pair(preset, "random play with masks: engine vs batch", "steps/s", a, b, 10)
        a, b = side_by_side(
            aec_loop(lambda p=preset: bergen_env.env(rules=p, num_players=2)),
            vector_loop(BATCH, True, rules=preset),
            seconds,
        )
        pair(preset, "with observations: AEC env vs batch", "steps/s", a, b, 50)
        single = make_single_agent(rules=preset, num_players=2)
        a, b = side_by_side(single_agent_loop(single), learner_loop(BATCH, preset), seconds)
        pair(preset, "one learner vs random: single-agent vs batch", "steps/s", a, b, 10)
        if not search:
            continue
        positions = [
            p for p in collect_positions(rules, 400 if quick else 1500, SEED)
            if len(p[2].legal_actions) > 1
        ][: 20 if quick else 100]  # fmt: skip
        python_ms, compiled_ms, same = search_ms(positions, rules)
        rows.append(
            dict(
                rules=preset,
                name="search default, ms per real choice",
                unit="ms",
                scalar=python_ms,
                batched=compiled_ms,
                ratio=python_ms / compiled_ms,
                goal=5,
                same_decisions=same,
                positions=len(positions),
            )  # fmt: skip
        )
        print(
            f"  {'search ms per real choice (python vs compiled)':<46} python {python_ms:10.2f}  "
            f"compiled {compiled_ms:10.2f} ms  {python_ms / compiled_ms:6.1f}x fewer (goal 5x); "
            f"same decisions: {same} ({len(positions)} positions)",
            flush=True,
        )
        (teacher_ms,), _ = agents_ms([TEACHER], positions[: 10 if quick else 50], rules)
        actions = teacher_ms / 1000 * engine_rate
        rows.append(
            dict(rules=preset, name="labelling: teacher CPU per real choice", unit="ms",
                 teacher=TEACHER, ms=teacher_ms, decisions_per_cpu_s=1000 / teacher_ms,
                 scalar_engine_actions=actions, goal=2500)
        )  # fmt: skip
        print(
            f"  {'labelling (teacher) per real choice':<46} {teacher_ms:10.2f} ms = "
            f"{1000 / teacher_ms:8.1f} decisions per CPU-second = {actions:8,.0f} scalar-engine "
            f"actions (goal <= 2,500)",
            flush=True,
        )

    first = presets[0]
    if not scaling_sizes:
        if affinity is not None:
            import os

            os.sched_setaffinity(0, affinity)
        return dict(machine=machine(), note=pin_note, batch=BATCH, rules=list(presets), rows=rows)
    memory = batch_bytes(BATCH, first)
    print(f"{first} rules: memory per match in a batch of {BATCH}: {memory:,.0f} bytes")
    sizes = [1, 16, 256, 4096] if quick else [1, 16, 256, 4096, 65536]
    scaling = []
    for n in sizes:
        t = seconds / 3 if n < 65536 else seconds
        us, own = step_time(n, t, True, first), step_time(n, t, False, first)
        scaling.append(
            dict(num_envs=n, us_per_step=us, ns_per_match_step=1000 * us / n,
                 us_per_step_no_copy=own, ns_per_match_step_no_copy=1000 * own / n)
        )  # fmt: skip
        print(
            f"  N={n:>6}: {us:12.1f} us per batched step, {1000 * us / n:9.1f} ns per "
            f"match-step; copy=False: {own:12.1f} us, {1000 * own / n:9.1f} ns"
        )
    if affinity is not None:
        import os

        os.sched_setaffinity(0, affinity)
    return dict(machine=machine(), note=pin_note, batch=BATCH, rules=list(presets), rows=rows,
                memory_bytes_per_match=memory, scaling=scaling)  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="per pair of rows")
    parser.add_argument("--quick", action="store_true", help="fewer positions and sizes")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--rules", nargs="+", default=["standard"], choices=PRESETS, help="presets to measure"
    )
    parser.add_argument("--no-search", action="store_true", help="skip the search rows")
    parser.add_argument("--no-sizes", action="store_true", help="skip memory and the N sweep")
    args = parser.parse_args(argv)
    print_pinned_command("benchmarks.vector_speed")
    result = run(args.seconds, args.quick, tuple(args.rules), not args.no_search, not args.no_sizes)
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
