"""The figures of ``docs/speed.md``: engine, envs and agents in CPU time, side by side.

One process, pinned to one core (run it under ``taskset -c 0``; it also pins itself). Every
figure is CPU time of this thread (``time.thread_time``), so time spent waiting for the core
on a shared machine does not count, and the loops of a table are measured in alternating
rounds (A, B, C, A, B, C, ...), each reporting its best round: load hits them alike, and a
ratio is always of two figures of the same run.

- loops (steps per CPU second): the engine's random legal play (``apply_unchecked``, the
  validating ``apply_action``, ``double_set`` with 3 players), the AEC env ``bergen_env.env()``
  with observation and mask (PettingZoo's ``performance_benchmark`` loop; 2 players, and 4 in
  partnerships) beside PettingZoo's ``tictactoe_v3`` and ``connect_four_v3`` in the same loop,
  and the single-agent env against random opponents (learner steps; 2 players, 4 in
  partnerships). The loops are those of :mod:`benchmarks.run`.
- agents (``--agents``): CPU ms per decision and per real choice (more than one legal action)
  over the same positions of random 2-player ``standard`` matches, the agents taking turns
  position by position.
- memory: tracemalloc bytes per reset AEC env and single-agent env.

    taskset -c 0 python -m benchmarks.speed_page [--seconds 2] [--positions 300]
        [--agents SPEC ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import bergen_env
from benchmarks.agents_speed import collect_positions
from benchmarks.run import (
    _import_classic,
    aec_loop,
    bytes_per_env,
    engine_loop,
    machine,
    make_single_agent,
    pin_to_one_core,
    print_pinned_command,
    single_agent_loop,
    write_json,
)
from benchmarks.vector_speed import cpu_rate
from bergen_env.agents import make_agent
from bergen_env.rules import Rules

SEED = 0
ROUNDS = 3
AGENTS = ["random", "greedy", "heuristic", "search"]


def loops() -> dict[str, Callable[[float], int]]:
    """The timed loops, by row name."""
    tictactoe, _ = _import_classic("tictactoe_v3")
    connect_four, _ = _import_classic("connect_four_v3")
    four = dict(num_players=4, partnerships=True)
    return {
        "engine, random legal play (apply_unchecked), standard 2p": engine_loop(
            Rules.preset("standard", num_players=2), False
        ),
        "engine with validation (apply_action), standard 2p": engine_loop(
            Rules.preset("standard", num_players=2), True
        ),
        "engine, double_set 3p": engine_loop(Rules.preset("double_set", num_players=3), False),
        "AEC bergen_env.env() with observation + mask, 2p": aec_loop(
            lambda: bergen_env.env(num_players=2)
        ),
        "AEC bergen_env.env(), 4p partnerships": aec_loop(lambda: bergen_env.env(**four)),
        "PettingZoo tictactoe_v3, same loop": aec_loop(tictactoe.env),
        "PettingZoo connect_four_v3, same loop": aec_loop(connect_four.env),
        "single-agent env vs random opponents, 2p (learner steps)": single_agent_loop(
            make_single_agent(num_players=2)
        ),
        "single-agent env vs random, 4p partnerships": single_agent_loop(make_single_agent(**four)),
    }


def agent_times(specs: list[str], positions: list, rules: Rules) -> list[dict[str, float]]:
    """CPU ms per decision and per real choice of each agent (turns by position)."""
    agents = [make_agent(spec) for spec in specs]
    for agent in agents:
        for warm in positions[:5]:  # compile (or load the cache) and build tables first
            agent.reset(rules, warm[2].seat, np.random.default_rng(0))
            agent.act(*warm)
    total = [0.0] * len(agents)
    choice = [0.0] * len(agents)
    choices = 0
    for i, (obs, mask, view) in enumerate(positions):
        real = len(view.legal_actions) > 1
        choices += real
        for k, agent in enumerate(agents):
            agent.reset(rules, view.seat, np.random.default_rng([SEED, i]))
            start = time.thread_time()
            agent.act(obs, mask, view)
            spent = time.thread_time() - start
            total[k] += spent
            choice[k] += spent if real else 0.0
    return [
        dict(agent=spec, decisions_per_s=len(positions) / total[k],
             ms_per_decision=1000 * total[k] / len(positions),
             ms_per_real_choice=1000 * choice[k] / max(choices, 1))
        for k, spec in enumerate(specs)
    ]  # fmt: skip


def run(seconds: float, positions: int, specs: list[str]) -> dict[str, Any]:
    affinity, pin_note = pin_to_one_core()
    print(f"one core ({pin_note}); CPU time of this thread; best of {ROUNDS} alternating rounds")
    timed = loops()
    best = dict.fromkeys(timed, 0.0)
    for loop in timed.values():  # warm up
        loop(time.perf_counter() + 0.1)
    for _ in range(ROUNDS):
        for name, loop in timed.items():
            best[name] = max(best[name], cpu_rate(loop, seconds / ROUNDS))
    for name, rate in best.items():
        print(f"  {name:<60} {rate:>12,.0f} steps per CPU-second")
    ours = best["AEC bergen_env.env() with observation + mask, 2p"]
    ratios = {
        "AEC env / tictactoe_v3": ours / best["PettingZoo tictactoe_v3, same loop"],
        "AEC env / connect_four_v3": ours / best["PettingZoo connect_four_v3, same loop"],
    }
    for name, ratio in ratios.items():
        print(f"  {name:<60} {ratio:12.2f}x")
    rules = Rules.preset("standard", num_players=2)
    found = collect_positions(rules, positions, SEED)
    agents = agent_times(specs, found, rules)
    real = sum(len(p[2].legal_actions) > 1 for p in found)
    print(f"agents on {len(found)} positions ({real} real choices), taking turns:")
    for row in agents:
        print(
            f"  {row['agent']:<60} {row['decisions_per_s']:>10,.0f} decisions/s "
            f"{row['ms_per_decision']:8.3f} ms/decision {row['ms_per_real_choice']:8.3f} "
            "ms/real choice"
        )
    memory = {
        "AEC env": bytes_per_env(lambda: bergen_env.env(num_players=2)),
        "single-agent env": bytes_per_env(lambda: make_single_agent(num_players=2)),
    }
    for name, b in memory.items():
        print(f"  memory per {name}: {b / 1000:.1f} KB")
    if affinity is not None:
        import os

        os.sched_setaffinity(0, affinity)
    return dict(machine=machine(), note=pin_note, loops=best, ratios=ratios, agents=agents,
                positions=len(found), real_choices=real, memory_bytes=memory)  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per loop, all rounds")
    parser.add_argument("--positions", type=int, default=300, help="agent positions")
    parser.add_argument("--agents", nargs="+", default=AGENTS, help="agent strings to time")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    print_pinned_command("benchmarks.speed_page")
    result = run(args.seconds, args.positions, args.agents)
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
