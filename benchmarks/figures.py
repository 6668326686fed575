"""The pictures of the docs, drawn from stored results (nothing is played or trained here).

    python -m benchmarks.figures ratings [--out docs/img/ratings.png]
    python -m benchmarks.figures learning-curve METRICS.csv [METRICS.csv ...]
        [--out docs/img/learning_curve.png] [--title TEXT]
    python -m benchmarks.figures table [--out docs/img/table.png] [--seed 3] [--plays 7]

``table``: the environment's own picture of a position (``render_mode="rgb_array"``, the view of
the seat to move) and its text (``"ansi"``, printed): a 2-player ``standard`` match from
``--seed`` in which every seat plays seeded random legal moves until ``--plays`` tiles lie on
the line and ``player_0`` is to move.

``ratings``: every agent's Bradley-Terry rating with its 95% bootstrap interval, one panel per
seating, from the round robins stored in ``benchmarks/results/ratings_*.json`` (refitted exactly
as :mod:`benchmarks.rating_table` prints them: seed 0, 1,000 replicates, ``random`` at 1000).

``learning-curve``: match-win rate with its 95% Wilson interval against each evaluation opponent
over training steps, from the ``metrics.csv`` of one or more training runs
(``bergen_env.training.train`` writes one per run folder); one line per run and opponent.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.rating_table import RatingTable, RoundRobin, load_results, rating_table
from bergen_env.observation import Encoder

RESULTS = Path(__file__).resolve().parent / "results"
#: The stored round robins, in the order of the panels, with their titles.
RATING_FILES = (
    ("ratings_standard_2p.json", "2 players, standard"),
    ("ratings_standard_3p.json", "3 players, standard"),
    ("ratings_standard_4p_partners.json", "4 players in two partnerships, standard"),
)


#: Colour of each kind of agent in the rating chart.
KIND_COLOURS = {"scripted": "tab:blue", "searched": "tab:orange", "learned": "tab:green"}


def agent_kind(spec: str) -> str:
    """``learned`` (a trained policy), ``searched`` (a search agent) or ``scripted``."""
    kind = spec.partition(":")[0]
    if kind in ("policy", "ppo", "rllib"):
        return "learned"
    return "searched" if kind in ("search", "openspiel") else "scripted"


def _pyplot():
    if importlib.util.find_spec("matplotlib") is None:
        print(
            "python -m benchmarks.figures: error: drawing needs matplotlib, in the [train] "
            "extra: pip install 'bergen_env[train]'",
            file=sys.stderr,
        )
        raise SystemExit(2)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def stored_rating_table(path: Path) -> RatingTable:
    """The rating table of a stored round robin, as ``benchmarks.rating_table`` prints it (the
    pairs in the order it plays them, so the bootstrap draws the same replicates)."""
    pairs = sorted(load_results(path), key=lambda p: p.agents)
    agents = sorted({a for p in pairs for a in p.agents})
    return rating_table(RoundRobin(agents, pairs, []))


def plot_ratings(out: Path, results: Path = RESULTS) -> None:
    """One panel per stored round robin: ratings (best on top) with their 95% intervals."""
    plt = _pyplot()
    tables = []
    for name, title in RATING_FILES:
        tables.append((title, stored_rating_table(results / name)))
    heights = [len(t.agents) for _, t in tables]
    fig, axes = plt.subplots(
        len(tables),
        1,
        figsize=(9, 0.32 * sum(heights) + 1.6 * len(tables)),
        gridspec_kw={"height_ratios": heights},
        sharex=True,
    )
    for ax, (title, table) in zip(axes, tables):
        names = table.agents[::-1]  # best on top
        y = np.arange(len(names))
        rating = np.array([table.ratings[n] for n in names])
        lo = np.array([table.intervals[n][0] for n in names])
        hi = np.array([table.intervals[n][1] for n in names])
        for kind, colour in KIND_COLOURS.items():
            mine = [k for k, n in enumerate(names) if agent_kind(n) == kind]
            ax.errorbar(
                rating[mine],
                y[mine],
                xerr=[rating[mine] - lo[mine], hi[mine] - rating[mine]],
                fmt="o",
                color=colour,
                capsize=3,
                label=kind,
            )
        for yi, r in zip(y, rating):
            ax.annotate(f"{r:.0f}", (r, yi), xytext=(6, 4), textcoords="offset points", fontsize=8)
        ax.set_yticks(y, [f"{n}" for n in names], fontsize=8)
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    axes[-1].set_xlabel("Bradley-Terry rating, Elo scale (random = 1000), 95% bootstrap interval")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def read_metrics(path: Path) -> dict[str, list[tuple[int, float, float, float]]]:
    """``{opponent: [(timesteps, win rate, CI low, CI high), ...]}`` from a run's metrics.csv."""
    rows: dict[str, list[tuple[int, float, float, float]]] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["opponent"], []).append(
                (int(r["timesteps"]), float(r["win_rate"]), float(r["ci_low"]), float(r["ci_high"]))
            )
    return rows


def plot_learning_curves(metrics: Sequence[Path], out: Path, title: str) -> None:
    """Win rate with its 95% interval per evaluation opponent over training steps, per run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colours = {}
    styles = ["-", "--", ":", "-."]
    for k, path in enumerate(metrics):
        for opponent, points in read_metrics(path).items():
            colour = colours.setdefault(opponent, f"C{len(colours)}")
            x, rate, lo, hi = (np.array(v) for v in zip(*points))
            label = f"vs {opponent}" + (f" ({path.stem})" if len(metrics) > 1 else "")
            ax.plot(x, rate, marker="o", ls=styles[k % len(styles)], color=colour, label=label)
            ax.fill_between(x, lo, hi, color=colour, alpha=0.12)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set(
        xlabel="training steps (learner decisions; 0 = before the first PPO update)",
        ylabel="match-win rate (duplicate, 95% CI)",
        ylim=(0, 1),
        title=title,
    )
    ax.legend(fontsize=8, loc="lower right", ncol=2 if len(metrics) > 1 else 1)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def table_position(out: Path, seed: int, plays: int) -> str:
    """Write the picture of the position described in the module docstring; return its text."""
    import bergen_env

    envs = [bergen_env.env(num_players=2, render_mode=mode) for mode in ("rgb_array", "ansi")]
    for env in envs:
        env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    env = envs[0]
    while True:
        obs = env.observe(env.agent_selection)
        on_line = int(Encoder.views(obs["observation"])["line"].sum())
        if on_line >= plays and env.agent_selection == "player_0":
            break
        if any(env.terminations.values()):
            raise ValueError(f"the hand of seed {seed} ended before {plays} plays")
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        for e in envs:
            e.step(action)
    frame = env.render()
    from PIL import Image

    Image.fromarray(frame).save(out)
    return envs[1].render()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.figures", description=__doc__)
    sub = p.add_subparsers(dest="figure", required=True)
    r = sub.add_parser("ratings", help="the rating chart of the stored round robins")
    r.add_argument("--out", type=Path, default=Path("docs/img/ratings.png"))
    c = sub.add_parser("learning-curve", help="win rates over training from metrics.csv files")
    c.add_argument("metrics", type=Path, nargs="+", metavar="METRICS.csv")
    c.add_argument("--out", type=Path, default=Path("docs/img/learning_curve.png"))
    c.add_argument("--title", default="make train (configs/quick.yaml)")
    t = sub.add_parser("table", help="the environment's picture and text of one position")
    t.add_argument("--out", type=Path, default=Path("docs/img/table.png"))
    t.add_argument("--seed", type=int, default=3)
    t.add_argument("--plays", type=int, default=7, help="tiles on the line (default 7)")
    args = p.parse_args(argv)
    if not args.out.parent.is_dir():
        p.error(f"--out {str(args.out)!r}: folder {str(args.out.parent)!r} does not exist")
    if args.figure == "ratings":
        plot_ratings(args.out)
    elif args.figure == "table":
        try:
            print(table_position(args.out, args.seed, args.plays))
        except ValueError as exc:  # a hand too short for --plays
            p.error(str(exc))
    else:
        missing = [str(m) for m in args.metrics if not m.is_file()]
        if missing:
            p.error(f"metrics file {missing[0]!r} does not exist")
        plot_learning_curves(args.metrics, args.out, args.title)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
