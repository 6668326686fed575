"""CPU time per opponent decision: the batched opponents of ``BergenLearnerVectorEnv`` against
the scalar agents, side by side in one run.

For each opponent (``random``, ``greedy``, ``heuristic``, ``tuned``, a policy file):

- **batched**: the decisions of every row of a ``BergenVectorEnv`` of ``--num-envs`` matches
  (positions of random play, the seat on turn), made as the learner env makes them: the compiled
  kinds by :func:`~bergen_env.agents.compiled.opponent_moves.opponent_move` in one numba loop
  over the rows, a policy file by encoding the rows' observations and one ``act_batch`` forward;
- **scalar**: ``agent.act(observation, mask, view)`` of the scalar agent on ``--positions``
  positions of random matches of the scalar engine (the inputs are built outside the timing).

A second table gives the learner env's steps (learner decisions, first legal action) per
CPU-second over ``--num-envs`` matches against each opponent, for ``--seconds`` each.

Every figure is CPU time of this thread (``time.thread_time``) on one core: numpy's BLAS is set
to one thread before numpy loads (its helper threads' time would not be counted). The two sides
are timed in turns ``--repeat`` times (the median is reported). Standard rules, 2 players unless
``--players``.

    python benchmarks/opponent_cost.py [--num-envs 4096] [--positions 2000] [--repeat 3]
        [--players 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy loads: one core, all in this thread

import numpy as np  # noqa: E402

from benchmarks.agents_speed import collect_positions  # noqa: E402
from bergen_env.agents import make_agent  # noqa: E402
from bergen_env.agents.batch_opponents import FUNCTION, batch_opponent  # noqa: E402
from bergen_env.agents.compiled.opponent_moves import opponent_move  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.vector import BergenLearnerVectorEnv, BergenVectorEnv  # noqa: E402
from bergen_env.vector import kernels as K  # noqa: E402
from bergen_env.vector._numba import njit_borrowed  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
POLICY = {2: "standard_2p", 3: "standard_3p", 4: "partners_4p"}


@njit_borrowed
def compiled_moves(r, code, weights, m, scores, hands, bits, hlen, voids, line, masks, rng, out):
    """Every row's move by the compiled opponent ``code`` (as the learner env's loop plays it)."""
    for i in range(m.shape[0]):
        out[i] = opponent_move(
            r, i, code, weights, m, scores, hands, bits, hlen, voids, line, masks, rng
        )


def batch_positions(rules: Rules, num_envs: int, seed: int) -> BergenVectorEnv:
    """A batch whose rows are mid-match positions of random play (masks of the seat on turn)."""
    env = BergenVectorEnv(num_envs, rules=rules, seed=seed, observations=False)
    obs, _ = env.reset()
    for _ in range(int(np.random.default_rng(seed).integers(5, 15))):
        obs, *_ = env.step(env.random_actions(obs["action_mask"]))
    return env


def batched_seconds(spec: str, rules: Rules, env: BergenVectorEnv) -> float:
    """CPU seconds for the decisions of every row of ``env`` by the batched ``spec``."""
    opponent = batch_opponent(spec, rules)
    out = np.zeros(env.num_envs, dtype=np.int64)
    rng = env.agent_rng.copy()
    m, scores, hands, bits, hlen, voids, line = env.state_arrays()[:7]
    start = time.thread_time()
    if opponent.code == FUNCTION:
        env.observe_rows(env.all_rows, True)  # what the learner env encodes for a function
        out[:] = opponent.function(env.obs_buffer, env.masks)
    else:
        compiled_moves(
            env.rule_array, opponent.code, opponent.weights, m, scores, hands, bits, hlen,
            voids, line, env.masks, rng, out,
        )  # fmt: skip
    spent = time.thread_time() - start
    bad = K.first_unmasked(out, env.masks)
    if bad >= 0:
        raise RuntimeError(f"{spec}: an illegal batched move in row {bad}")
    return spent


def scalar_seconds(spec: str, rules: Rules, positions: list) -> float:
    """CPU seconds for ``agent.act`` of the scalar ``spec`` at every position."""
    agent = make_agent(spec)
    spent = 0.0
    for i, (obs, mask, view) in enumerate(positions):
        agent.reset(rules, view.seat, np.random.default_rng(i))
        start = time.thread_time()
        agent.act(obs, mask, view)
        spent += time.thread_time() - start
    return spent


def learner_rate(spec: str, rules: Rules, num_envs: int, seconds: float, seed: int) -> float:
    """Learner steps per CPU-second of ``BergenLearnerVectorEnv`` against ``spec``."""
    env = BergenLearnerVectorEnv(num_envs, opponents=spec, rules=rules, seed=seed)
    _, infos = env.reset()
    *_, infos = env.step(infos["action_mask"].argmax(axis=1))  # compiled outside the timing
    steps = 0
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        _, _, _, _, infos = env.step(infos["action_mask"].argmax(axis=1))
        steps += num_envs
    return steps / (time.thread_time() - start)


def run(
    num_envs: int, positions: int, repeat: int, players: int, seed: int, seconds: float
) -> dict[str, Any]:
    rules = Rules.preset("standard", num_players=players, partnerships=players == 4)
    policy = f"policy:{ROOT / 'policies' / POLICY[players]}.safetensors"
    specs = ["random", "greedy", "heuristic", "tuned", policy]
    env = batch_positions(rules, num_envs, seed)
    scalar_positions = collect_positions(rules, positions, seed)
    for spec in specs:  # compile and warm up outside the timing
        batched_seconds(spec, rules, env)
        scalar_seconds(spec, rules, scalar_positions[:20])
    rows = []
    for spec in specs:
        batched, scalar = [], []
        for _ in range(repeat):  # in turns, so both sides see the same load
            batched.append(1e6 * batched_seconds(spec, rules, env) / num_envs)
            scalar.append(1e6 * scalar_seconds(spec, rules, scalar_positions) / positions)
        b, s = statistics.median(batched), statistics.median(scalar)
        name = spec if not spec.startswith("policy:") else f"policy:{POLICY[players]}"
        rows.append({"opponent": name, "batched_us": b, "scalar_us": s, "ratio": s / b})
    for spec, row in zip(specs, rows):
        row["learner_steps_per_s"] = learner_rate(spec, rules, num_envs, seconds, seed)
    return {
        "rules": rules.name,
        "players": players,
        "partnerships": rules.partnerships,
        "num_envs": num_envs,
        "scalar_positions": positions,
        "repeat": repeat,
        "rows": rows,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--positions", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run(args.num_envs, args.positions, args.repeat, args.players, args.seed, args.seconds)
    seating = f"{result['players']} players" + (", partnerships" if result["partnerships"] else "")
    print(
        f"CPU µs per opponent decision, {result['rules']}, {seating}: batched over "
        f"{result['num_envs']} rows vs scalar agent.act on {result['scalar_positions']} "
        f"positions (median of {result['repeat']})"
    )
    print("| opponent | batched µs | scalar µs | scalar / batched | learner env steps/s |")
    print("|---|---:|---:|---:|---:|")
    for row in result["rows"]:
        print(
            f"| {row['opponent']} | {row['batched_us']:.2f} | {row['scalar_us']:.1f} | "
            f"{row['ratio']:.0f}× | {row['learner_steps_per_s']:,.0f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
