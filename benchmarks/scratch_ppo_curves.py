"""Learning curves of from-scratch PPO runs: win rate against random, greedy and (where a run
measured it) the heuristic over training steps, one line per run, one panel per opponent. A run's
CSV is either a ``benchmarks.scratch_ppo`` table (``steps,cpu_s,vs_random,...``) or the training
program's ``metrics.csv`` (``timesteps,elapsed_s,opponent,win_rate,...``, one row an evaluation).

    python -m benchmarks.scratch_ppo_curves OUT.png LABEL=RUN.csv [LABEL=RUN.csv ...]
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _wide(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """One row a step with a ``vs_<opponent>`` column each, from either CSV layout."""
    if not rows or "opponent" not in rows[0]:
        return rows
    by_step: dict[int, dict[str, str]] = {}
    for r in rows:
        step = int(r["timesteps"])
        by_step.setdefault(step, {"steps": str(step)})[f"vs_{r['opponent']}"] = r["win_rate"]
    return [by_step[s] for s in sorted(by_step)]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    out, runs = args[0], [a.split("=", 1) for a in args[1:]]
    tables = []
    for label, path in runs:
        with open(path, newline="") as f:
            tables.append((label, _wide(list(csv.DictReader(f)))))
    names = {"vs_random": "random", "vs_greedy": "greedy", "vs_heuristic": "heuristic"}
    keys = [k for k in names if any(k in rows[0] for _, rows in tables)]
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.6), sharey=True)
    for k, (label, rows) in enumerate(tables):
        x = [int(r["steps"]) / 1e6 for r in rows]
        for ax, key in zip(axes, keys, strict=True):
            if key in rows[0]:
                y = [float(r[key]) for r in rows]
                ax.plot(x, y, marker=".", color=f"C{k}", label=label)
    for ax, key in zip(axes, keys, strict=True):
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set(title=f"against {names[key]}", xlabel="env steps (learner decisions), millions")
        ax.set_ylim(0.2, 1)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("win rate (deterministic policy)")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=80)


if __name__ == "__main__":
    main()
