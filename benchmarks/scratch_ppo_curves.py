"""Learning curves of ``benchmarks.scratch_ppo`` runs: win rate against random, greedy and (where
a run measured it) the heuristic over training steps, one line per run (its CSV), one panel each.

    python -m benchmarks.scratch_ppo_curves OUT.png LABEL=RUN.csv [LABEL=RUN.csv ...]
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    out, runs = args[0], [a.split("=", 1) for a in args[1:]]
    keys = ("vs_random", "vs_greedy", "vs_heuristic")
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
    for k, (label, path) in enumerate(runs):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        x = [int(r["steps"]) / 1e6 for r in rows]
        for ax, key in zip(axes, keys, strict=True):
            if key in rows[0]:
                y = [float(r[key]) for r in rows]
                ax.plot(x, y, marker=".", color=f"C{k}", label=label)
    for ax, title in zip(
        axes, ("against random", "against greedy", "against heuristic"), strict=True
    ):
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set(title=title, xlabel="env steps (learner decisions), millions", ylim=(0.2, 1))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("win rate (deterministic policy)")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=80)


if __name__ == "__main__":
    main()
