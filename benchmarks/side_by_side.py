"""Engine, env and encoder throughput of two commits, measured alternately in one run.

Run ``python -m benchmarks.side_by_side --ref REF [--slices 15] [--seconds 0.3]``. The commit
``REF`` is exported (``git archive``) to a temporary folder. One worker interpreter per side
builds every row, then the two workers time short slices in turn (row by row, alternating which
side goes first), so load changes on a shared machine hit both sides alike. ``--only TEXT``
builds and times only the rows whose name has TEXT (a row of the batched engine compiles its
kernels when built: minutes for a fresh export). Both sides import
the same libraries before timing (an env-free import of ``bergen_env`` would otherwise leave a
smaller heap, which makes the garbage collector's passes cheaper on one side). Rates are steps
per CPU second of the worker (``time.process_time``): time the worker spends waiting for a core
on a loaded machine does not count. A row reports each side's best slice, the ratio of the bests
(working tree / ``REF``) and the ratio of the medians.

Rows use the loops of :mod:`benchmarks.run` (each side's own copy, which must define them):
``engine _apply`` and ``engine apply_action`` (random legal play),
``aec env()`` (PettingZoo's ``performance_benchmark`` loop), ``single_agent`` (learner steps
against random opponents), and ``observe`` / ``state`` (the encoders on a fixed set of
positions). With numba installed (the ``[vector]`` extra) both sides also time the batched
engine with the loops of :mod:`benchmarks.vector_speed` (standard rules, 2 players, 4,096
matches: random play with masks, with observations, one learner against random opponents) and
``search`` (its default, compiled playouts) on a fixed set of positions with a real choice.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The worker: prints the names of every row for the tree in argv[1] as JSON, builds and warms
#: up the rows whose name has argv[3] (all rows if it is empty), prints ``ready``, then answers
#: each request line ``<row index> <seconds>`` with that slice's steps per CPU second.
MEASURE = r"""
import gc, json, sys, time
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
builders = {  # row name -> a function building its loop
    "engine _apply standard 2p": lambda: bench.engine_loop(std2, False),
    "engine apply_action standard 2p": lambda: bench.engine_loop(std2, True),
    "aec env() standard 2p": lambda: bench.aec_loop(lambda: bergen_env.env(num_players=2)),
    "aec env() standard 4p partnerships": lambda: bench.aec_loop(
        lambda: bergen_env.env(num_players=4, partnerships=True)
    ),
    "single_agent standard 2p vs random": lambda: bench.single_agent_loop(
        bench.make_single_agent(num_players=2)
    ),
    "observe standard 4p partnerships": lambda: encoder_loop("observe"),
    "state standard 4p partnerships": lambda: encoder_loop("state"),
}
try:
    import numba  # noqa: F401  (the batched rows need the [vector] extra on both sides)
except ImportError:
    numba = None
if numba is not None:
    from benchmarks import vector_speed as vs
    from benchmarks.agents_speed import collect_positions
    from bergen_env.agents import make_agent

    def search_loop():
        positions = [p for p in collect_positions(std2, 300, 0) if len(p[2].legal_actions) > 1]
        positions = positions[:20]
        agent = make_agent("search")
        def loop(deadline):
            n = 0
            while time.perf_counter() < deadline:
                for i, (obs, mask, view) in enumerate(positions):
                    agent.reset(std2, view.seat, np.random.default_rng([0, i]))
                    agent.act(obs, mask, view)
                n += len(positions)
            return n
        return loop

    builders["vector random play standard 2p N=4096"] = lambda: vs.vector_loop(4096, False)
    builders["vector observations standard 2p N=4096"] = lambda: vs.vector_loop(4096, True)
    builders["vector learner standard 2p N=4096"] = lambda: vs.learner_loop(4096)
    builders["search compiled standard 2p (choices)"] = search_loop
print(json.dumps(list(builders)), flush=True)
names = list(builders)
rows = {i: builders[name]() for i, name in enumerate(names) if sys.argv[3] in name}
for loop in rows.values():  # warm up every built row once
    loop(time.perf_counter() + 0.05)
print("ready", flush=True)
for line in sys.stdin:  # one slice per request: "<row index> <seconds>" -> steps/s
    index, seconds = line.split()
    loop = rows[int(index)]
    gc.collect()
    cpu = time.process_time()
    steps = loop(time.perf_counter() + float(seconds))
    print(steps / (time.process_time() - cpu), flush=True)
"""


def export(ref: str, folder: Path) -> None:
    """Write the files of commit ``ref`` into ``folder``."""
    archive = folder / "ref.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), ref], check=True
    )
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "tree", filter="data")


class Worker:
    """A fresh interpreter that has built the rows whose name has ``only`` (every row if None)
    for one tree and times slices on request; :attr:`rows` names every row of the tree."""

    def __init__(self, tree: Path, only: str | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", MEASURE, str(tree), str(ROOT), only or ""],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tree,
        )
        self.rows: list[str] = json.loads(self._read())
        if self._read() != "ready\n":
            raise RuntimeError("the benchmark worker did not report ready")

    def _read(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the benchmark worker exited ({self.process.wait()})")
        return line

    def rate(self, row: int, seconds: float) -> float:
        self.process.stdin.write(f"{row} {seconds}\n")
        self.process.stdin.flush()
        return float(self._read())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def time_slices(
    workers: dict[str, Worker], only: str | None, slices: int, seconds: float
) -> dict[str, dict[str, list[float]]]:
    """Every chosen row's slice rates per side, the sides taking turns."""
    rows = workers["tree"].rows
    if workers["ref"].rows != rows:
        raise RuntimeError("the two sides define different rows")
    chosen = [(i, r) for i, r in enumerate(rows) if only is None or only in r]
    if not chosen:
        raise SystemExit(f"no row matches --only {only!r}; rows: {rows}")
    rates: dict[str, dict[str, list[float]]] = {s: {r: [] for _, r in chosen} for s in workers}
    for k in range(slices):
        for i, row in chosen:
            order = ("ref", "tree") if (k + i) % 2 == 0 else ("tree", "ref")
            for side in order:
                rates[side][row].append(workers[side].rate(i, seconds))
        print(f"slice {k + 1}/{slices} done", file=sys.stderr, flush=True)
    return rates


def main(argv: list[str] | None = None) -> dict[str, dict[str, list[float]]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", required=True, help="the commit to compare against")
    parser.add_argument("--slices", type=int, default=15, help="timed slices per row and side")
    parser.add_argument("--seconds", type=float, default=0.3, help="length of one slice")
    parser.add_argument("--only", metavar="TEXT", help="time only the rows whose name has TEXT")
    parser.add_argument("--json", metavar="PATH", help="also write every slice's rate as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        export(args.ref, Path(tmp))
        workers = {"ref": Worker(Path(tmp) / "tree", args.only)}
        try:
            workers["tree"] = Worker(ROOT, args.only)
            rates = time_slices(workers, args.only, args.slices, args.seconds)
        finally:
            for worker in workers.values():
                worker.close()
    print(f"{'row':<38} {args.ref[:12]:>12} {'working tree':>13} {'best ratio':>11} {'median':>7}")
    for row in rates["tree"]:
        a, b = rates["ref"][row], rates["tree"][row]
        print(
            f"{row:<38} {max(a):>12,.0f} {max(b):>13,.0f} {max(b) / max(a):>11.3f} "
            f"{statistics.median(b) / statistics.median(a):>7.3f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"ref": args.ref, **rates}, indent=2))
    return rates


if __name__ == "__main__":
    main()
