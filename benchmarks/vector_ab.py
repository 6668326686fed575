"""The batched env of a past commit against this checkout's, in one process, in CPU time.

The ref's ``bergen_env/vector/kernels.py``, ``env.py`` and ``learner.py`` are read from git
(``git show``) and imported as a second copy of those modules (the rest of ``bergen_env`` is
this checkout's, so the ref must share its interfaces). Then the loops of
:mod:`benchmarks.vector_speed` (random legal play over ``BergenVectorEnv``, without and with
observations, and ``BergenLearnerVectorEnv`` against random opponents) run for each side in
alternating rounds, with the scalar engine, the AEC env and the single-agent env in the same
rounds, each loop reporting its best round in steps per CPU second of this thread; every ratio
is of two figures of this run.

    taskset -c 0 python -m benchmarks.vector_ab --ref ea01a6e [--seconds 8] [--rules standard]
        [--parallel] [--json PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import bergen_env
from benchmarks.run import (
    aec_loop,
    engine_loop,
    make_single_agent,
    pin_to_one_core,
    print_pinned_command,
    single_agent_loop,
    write_json,
)
from benchmarks.vector_speed import BATCH, ROUNDS, cpu_rate, learner_loop, vector_loop
from bergen_env.rules import Rules

ROOT = Path(__file__).resolve().parents[1]


def ref_env_classes(ref: str, folder: Path) -> tuple[type, type]:
    """``BergenVectorEnv`` and ``BergenLearnerVectorEnv`` of ``ref``'s ``env.py`` and
    ``learner.py`` over ``ref``'s ``kernels.py``."""
    for name in ("kernels", "env", "learner"):
        text = subprocess.run(
            ["git", "show", f"{ref}:bergen_env/vector/{name}.py"], cwd=ROOT, check=True,
            capture_output=True, text=True,
        ).stdout  # fmt: skip
        text = text.replace("from bergen_env.vector import kernels as K", "import ref_kernels as K")
        text = text.replace(
            "from bergen_env.vector.env import BergenVectorEnv",
            "from ref_env import BergenVectorEnv",
        )
        (folder / f"ref_{name}.py").write_text(text)
    sys.path.insert(0, str(folder))
    for name in ("ref_kernels", "ref_env", "ref_learner"):
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules["ref_env"].BergenVectorEnv, sys.modules["ref_learner"].BergenLearnerVectorEnv


def run(ref: str, seconds: float, rules: str, parallel: bool = False) -> dict[str, Any]:
    affinity, note = pin_to_one_core()
    with tempfile.TemporaryDirectory() as folder:
        old, old_learner = ref_env_classes(ref, Path(folder))
        scalar = Rules.preset(rules, num_players=2)
        loops = {
            "engine": engine_loop(scalar, False),
            "aec": aec_loop(lambda: bergen_env.env(rules=rules, num_players=2)),
            "single-agent": single_agent_loop(make_single_agent(rules=rules, num_players=2)),
            f"{ref} no obs": vector_loop(BATCH, False, rules=rules, env_class=old),
            "now no obs": vector_loop(BATCH, False, rules=rules),
            f"{ref} obs": vector_loop(BATCH, True, rules=rules, env_class=old),
            "now obs": vector_loop(BATCH, True, rules=rules),
            f"{ref} learner": learner_loop(BATCH, rules, env_class=old_learner),
            "now learner": learner_loop(BATCH, rules),
        }
        if parallel:  # the threaded step, on the threads this process may use
            loops[f"{ref} parallel obs"] = vector_loop(
                BATCH, True, rules=rules, env_class=old, parallel=True
            )
            loops["now parallel obs"] = vector_loop(BATCH, True, rules=rules, parallel=True)
        best = dict.fromkeys(loops, 0.0)
        for _ in range(ROUNDS):
            for name, loop in loops.items():
                best[name] = max(best[name], cpu_rate(loop, seconds / ROUNDS))
    print(f"one core ({note}); {rules}, 2 players, batch of {BATCH}; steps per CPU-second")
    for name, rate in best.items():
        print(f"  {name:<32} {rate:>12,.0f}")
    ratios = {
        f"{ref} / engine": best[f"{ref} no obs"] / best["engine"],
        "now / engine": best["now no obs"] / best["engine"],
        f"{ref} obs / AEC": best[f"{ref} obs"] / best["aec"],
        "now obs / AEC": best["now obs"] / best["aec"],
        f"{ref} learner / single-agent": best[f"{ref} learner"] / best["single-agent"],
        "now learner / single-agent": best["now learner"] / best["single-agent"],
        "now / ref, no obs": best["now no obs"] / best[f"{ref} no obs"],
        "now / ref, obs": best["now obs"] / best[f"{ref} obs"],
        "now / ref, learner": best["now learner"] / best[f"{ref} learner"],
    }
    if parallel:
        ratios["now / ref, parallel obs"] = best["now parallel obs"] / best[f"{ref} parallel obs"]
    for name, ratio in ratios.items():
        print(f"  {name:<32} {ratio:12.2f}x")
    if affinity is not None:
        import os

        os.sched_setaffinity(0, affinity)
    return dict(ref=ref, rules=rules, rates=best, ratios=ratios, note=note)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="the past commit")
    parser.add_argument("--seconds", type=float, default=8.0, help="per loop, all rounds")
    parser.add_argument("--rules", default="standard")
    parser.add_argument(
        "--parallel",
        action="store_true",
        help="also time parallel=True with observations (one thread when pinned to one core)",
    )
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    print_pinned_command("benchmarks.vector_ab")
    result = run(args.ref, args.seconds, args.rules, args.parallel)
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
