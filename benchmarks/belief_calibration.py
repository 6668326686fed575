"""Calibration of a learned belief against the count-only prior, on fresh positions.

python -m benchmarks.belief_calibration [--belief FILE] [--players 2] [--partnerships]
    [--matches 300] [--seed 12345] [--agents heuristic] [--json PATH]

Plays ``--matches`` matches (``--agents`` per seat, cycled; a seed the training data did not
use) and, at every decision with a real choice, compares with the true locations of the
mover's unseen tiles (the other hands and the undrawn boneyard):

- the belief file's balanced matrix (default: the shipped file for the seating), and
- the count-only prior: every location the public information allows equally weighted,
  balanced to the hand sizes (what ``search``'s uniform sampler deals, before its soft guesses).

It prints the log-loss per unseen tile copy (nats; lower is better), the Brier score, and a
reliability table: per bin of predicted probability (one entry per unseen tile and location
allowed), the copies, the mean prediction and the observed frequency.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from bergen_env.agents.learned_belief import (
    LOCATIONS,
    NUM_TILES,
    balance,
    prior_matrix,
    read_belief_file,
    shipped_belief_path,
)
from bergen_env.rules import Rules
from training.belief import generate

BINS = np.array([0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0])


def metrics(p: np.ndarray, y: np.ndarray, rows: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    """Log-loss, Brier score and reliability table of per-copy probabilities ``p``
    (``(N, tiles, locations)``) against copies ``y``; cells weighted by the tile's copies."""
    copies = y.sum()
    logloss = float(-(y * np.log(np.where(y > 0, p, 1.0))).sum() / copies)
    freq = np.divide(y, rows[:, :, None], out=np.zeros_like(p), where=rows[:, :, None] > 0)
    cell = mask & (rows[:, :, None] > 0)
    weight = np.broadcast_to(rows[:, :, None], p.shape)[cell]
    pred, obs = p[cell], freq[cell]
    brier = float((weight * (pred - obs) ** 2).sum() / weight.sum())
    table = []
    ece = 0.0
    index = np.clip(np.searchsorted(BINS, pred, side="right") - 1, 0, len(BINS) - 2)
    for b in range(len(BINS) - 1):
        sel = index == b
        wsum = float(weight[sel].sum())
        if not wsum:
            continue
        mp = float((weight[sel] * pred[sel]).sum() / wsum)
        mo = float((weight[sel] * obs[sel]).sum() / wsum)
        ece += wsum * abs(mp - mo)
        table.append(
            {
                "bin": [float(BINS[b]), float(BINS[b + 1])],
                "copies": wsum,
                "predicted": mp,
                "observed": mo,
            }
        )
    return {
        "log_loss": logloss,
        "brier": brier,
        "ece": ece / float(weight.sum()),
        "reliability": table,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.belief_calibration")
    parser.add_argument("--belief", default=None, help="belief file (default: the shipped one)")
    parser.add_argument("--rules", default="standard")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--partnerships", action="store_true")
    parser.add_argument("--matches", type=int, default=300)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--agents", nargs="+", default=["heuristic"])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rules = Rules.preset(args.rules, num_players=args.players, partnerships=args.partnerships)
    path = args.belief or str(shipped_belief_path(rules))
    net = read_belief_file(path)
    data = generate(rules, args.matches, args.seed, args.agents)
    rows = data["rows"].astype(np.float64)
    cols = data["cols"].astype(np.float64)
    mask, y = data["mask"], data["y"].astype(np.float64)
    logits = net.network.logits(data["x"]).reshape(-1, NUM_TILES, LOCATIONS).astype(np.float64)
    logits = np.where(mask, logits, -np.inf)
    top = np.max(np.where(mask, logits, -1e300), axis=(1, 2), keepdims=True)
    model = balance(np.where(mask, np.exp(logits - top), 0.0), rows, cols)
    prior = prior_matrix(mask, rows, cols)
    results = {}
    for name, m in (("prior", prior), ("model", model)):
        p = np.divide(m, rows[:, :, None], out=np.zeros_like(m), where=rows[:, :, None] > 0)
        results[name] = metrics(p, y, rows, mask)
    print(
        f"belief {path}, {rules.name} {args.players}p"
        f"{' partnerships' if args.partnerships else ''}, {len(y)} positions of {args.matches} "
        f"matches (seed {args.seed}, agents {' '.join(args.agents)})\n"
    )
    print("| | log-loss (nats per copy) | Brier | ECE |\n|---|---|---|---|")
    for name, r in results.items():
        label = "count-only prior" if name == "prior" else "learned belief"
        print(f"| {label} | {r['log_loss']:.4f} | {r['brier']:.4f} | {r['ece']:.4f} |")
    print("\n| predicted | copies | prior: predicted / observed | model: predicted / observed |")
    print("|---|---|---|---|")
    by_bin: dict[tuple[float, float], dict[str, Any]] = {}
    for name, r in results.items():
        for row in r["reliability"]:
            by_bin.setdefault(tuple(row["bin"]), {})[name] = row
    for (lo, hi), entry in sorted(by_bin.items()):
        cells = []
        for name in ("prior", "model"):
            row = entry.get(name)
            cells.append("" if row is None else f"{row['predicted']:.3f} / {row['observed']:.3f}")
        n = "/".join(
            str(int(entry[k]["copies"])) if k in entry else "0" for k in ("prior", "model")
        )
        print(f"| {lo:.2f}-{hi:.2f} | {n} | {cells[0]} | {cells[1]} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"belief": path, "positions": int(len(y)), **results}, f, indent=1)


if __name__ == "__main__":
    main()
