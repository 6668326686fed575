"""Engine, env and encoder throughput of two commits, measured alternately in one run.

Run ``python -m benchmarks.side_by_side --ref REF [--rounds 5] [--seconds 1.5]``. The commit
``REF`` is exported (``git archive``) to a temporary folder; each round then measures every row
once in a fresh interpreter for ``REF`` and once for the working tree, alternating which goes
first, so both meet the same load on a shared machine. Both sides import the same libraries
before timing (an env-free import of ``bergen_env`` would otherwise leave a smaller heap, which
makes the garbage collector's passes cheaper on one side). A row reports each side's best rate over
the rounds (the least disturbed, as ``timeit``) and the ratio working tree / ``REF``.

Rows use the loops of :mod:`benchmarks.run` (each side's own copy, which must define them):
``engine _apply`` and ``engine apply_action`` (random legal play),
``aec env()`` (PettingZoo's ``performance_benchmark`` loop), ``single_agent`` (learner steps
against random opponents), and ``observe`` / ``state`` (the encoders on a fixed set of
positions).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Measures every row for the bergen_env on sys.path[0]; prints {row: steps/s} as JSON.
MEASURE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])  # the tree under test first
sys.path.insert(1, sys.argv[2])  # then this checkout (for a ref without benchmarks/)
import numpy as np
import bergen_env
from benchmarks import run as bench
from bergen_env.engine import BergenState
from bergen_env.observation import Encoder
from bergen_env.rules import Rules
assert bergen_env.__file__.startswith(sys.argv[1]), bergen_env.__file__
import gymnasium, pettingzoo, bergen_env.aec_env, bergen_env.single_agent  # same heap on both sides
bench.pin_to_one_core()
t = float(sys.argv[3])

def encoder_loop(kind):
    rules = Rules.preset("standard", num_players=4, partnerships=True)
    rng = np.random.default_rng(0)
    states = []
    s = BergenState(rules, seed=0)
    while len(states) < 200:
        if s.terminal:
            s = BergenState(rules, seed=len(states))
        states.append(s.clone())
        s.apply_action(int(rng.choice(s.legal_actions())))
    enc = Encoder(rules)
    def loop(deadline):
        n = 0
        while time.perf_counter() < deadline:
            for st in states:
                if kind == "observe":
                    enc.observe(st, st.current_player)
                else:
                    enc.state(st)
            n += len(states)
        return n
    return loop

std2 = Rules.preset("standard", num_players=2)
rows = {
    "engine _apply standard 2p": bench.engine_loop(std2, False),
    "engine apply_action standard 2p": bench.engine_loop(std2, True),
    "aec env() standard 2p": bench.aec_loop(lambda: bergen_env.env(num_players=2)),
    "aec env() standard 4p partnerships": bench.aec_loop(
        lambda: bergen_env.env(num_players=4, partnerships=True)
    ),
    "single_agent standard 2p vs random": bench.single_agent_loop(
        bench.make_single_agent(num_players=2)
    ),
    "observe standard 4p partnerships": encoder_loop("observe"),
    "state standard 4p partnerships": encoder_loop("state"),
}
print(json.dumps({name: bench.best_rate(loop, t)["rate"] for name, loop in rows.items()}))
"""


def export(ref: str, folder: Path) -> None:
    """Write the files of commit ``ref`` into ``folder``."""
    archive = folder / "ref.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), ref], check=True
    )
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "tree", filter="data")


def measure(tree: Path, seconds: float) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tree), str(ROOT), str(seconds)],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", required=True, help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.5, help="per row per round")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    best: dict[str, dict[str, float]] = {"ref": {}, "tree": {}}
    with tempfile.TemporaryDirectory() as tmp:
        export(args.ref, Path(tmp))
        sides = {"ref": Path(tmp) / "tree", "tree": ROOT}
        for r in range(args.rounds):
            order = ["ref", "tree"] if r % 2 == 0 else ["tree", "ref"]
            for side in order:
                for name, rate in measure(sides[side], args.seconds).items():
                    best[side][name] = max(best[side].get(name, 0.0), rate)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"{'row':<40} {args.ref[:12]:>14} {'working tree':>14} {'ratio':>7}")
    for name in best["ref"]:
        a, b = best["ref"][name], best["tree"][name]
        print(f"{name:<40} {a:>14,.0f} {b:>14,.0f} {b / a:>7.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"ref": args.ref, **best}, indent=2))
    return best


if __name__ == "__main__":
    main()
