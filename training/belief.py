"""Train a belief network: where the unseen tiles are, learned from agent-vs-agent play.

``python -m training.belief generate --players 2 --matches 2000 --seed 0 --out data.npz``
plays matches with the engine (``--agents``, default ``heuristic`` in every seat) and, at every
decision with a real choice, records the mover's belief inputs
(:func:`~bergen_env.agents.learned_belief.belief_inputs`) and the true location of every unseen
tile (the other hands, the undrawn boneyard) as labels.

``python -m training.belief train data.npz [more.npz ...] --out policies/belief_2p.safetensors``
fits a multilayer perceptron (torch, one thread) by the log-loss of the true locations under the
balanced belief matrix (a few Sinkhorn passes in log space, as at play time), keeping the
matches of ``--holdout`` of the files' positions apart, and writes a belief file with the
held-out log-loss of the model and of the count-only prior in its provenance.
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (training.cli)
    from .cli import program

    raise SystemExit(program("belief"))

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.agents import make_agent
from bergen_env.agents.learned_belief import (
    BONEYARD,
    LOCATIONS,
    NUM_FEATURES,
    belief_inputs,
    relative_seats,
    save_belief_file,
)
from bergen_env.engine import BergenState
from bergen_env.errors import BergenError
from bergen_env.rules import Rules
from bergen_env.tiles import NUM_TILES

from .cli import ArgumentParser, UsageError, require_extra

#: Sinkhorn passes while training (play time runs :func:`balance` to convergence).
TRAIN_PASSES = 12


def true_locations(s: BergenState, seat: int) -> np.ndarray:
    """``(NUM_TILES, LOCATIONS)`` copies of each tile in each location as ``seat`` sees them."""
    labels = np.zeros((NUM_TILES, LOCATIONS), dtype=np.int8)
    n = s.num_players
    for k, other in enumerate((seat + j) % n for j in range(1, n)):
        labels[:, k] = s.hands[other]
    for t in s.boneyard[s.bone_pos :]:
        labels[t, BONEYARD] += 1
    return labels


def generate(rules: Rules, matches: int, seed: int, agents: Sequence[str]) -> dict[str, np.ndarray]:
    """Positions (features, mask, marginals, labels, match index) of ``matches`` matches."""
    n = rules.num_players
    specs = [agents[i % len(agents)] for i in range(n)]
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("x", "mask", "rows", "cols", "y")}
    match_ids: list[int] = []
    for match in range(matches):
        s = BergenState(rules, seed=seed * 1_000_003 + match)
        players = [make_agent(spec) for spec in specs]
        for seat, agent in enumerate(players):
            agent.reset(rules, seat, np.random.default_rng([seed, match, seat]))
        while not s.terminal:
            p = s.current_player
            view = s.public_view(p)
            if len(view.legal_actions) > 1:
                x, mask, r, c = belief_inputs(view)
                y = true_locations(s, p)
                assert relative_seats(view) == [(p + j) % n for j in range(1, n)]
                rows["x"].append(x)
                rows["mask"].append(mask)
                rows["rows"].append(r.astype(np.int8))
                rows["cols"].append(c.astype(np.int8))
                rows["y"].append(y)
                match_ids.append(match)
                a = players[p].act(None, None, view)
            else:
                a = view.legal_actions[0]
            s.apply_action(a)
    out = {k: np.stack(v) for k, v in rows.items()}
    out["match"] = np.array(match_ids, dtype=np.int32)
    return out


def _load(paths: Sequence[str]) -> dict[str, np.ndarray]:
    parts = [dict(np.load(p)) for p in paths]
    offset = 0
    for part in parts:  # keep matches of different files apart
        part["match"] = part["match"].astype(np.int64) + offset
        offset = int(part["match"].max()) + 1
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def log_balance(logits: Any, mask: Any, rows: Any, cols: Any, passes: int) -> Any:
    """Log of the balanced belief matrix, ending on a row pass (per tile, probabilities of its
    copies' locations times its copies); torch tensors of shape ``(batch, tiles, locations)``."""
    import torch

    neg = torch.tensor(-1e4, dtype=logits.dtype)
    w = torch.where(mask, logits, neg)
    log_rows = torch.log(rows.clamp(min=1e-9))
    log_cols = torch.log(cols.clamp(min=1e-9))
    for i in range(passes):
        w = w - torch.where(
            rows[:, :, None] > 0, torch.logsumexp(w, dim=2, keepdim=True) - log_rows[:, :, None], 0
        )
        if i == passes - 1:
            break
        w = w - torch.where(
            cols[:, None, :] > 0, torch.logsumexp(w, dim=1, keepdim=True) - log_cols[:, None, :], 0
        )
        w = torch.where(mask, w, neg)
    return w


def train(
    data: dict[str, np.ndarray],
    hidden: Sequence[int],
    epochs: int,
    lr: float,
    batch: int,
    holdout: float,
    seed: int,
    weight_decay: float = 0.0,
) -> tuple[list[np.ndarray], list[np.ndarray], dict[str, Any]]:
    """Fit the network (AdamW, one-cycle learning rate); returns the weights and biases of the
    epoch with the lowest held-out log-loss and a report."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    matches = np.unique(data["match"])
    rng = np.random.default_rng(seed)
    held = set(rng.choice(matches, size=max(1, int(len(matches) * holdout)), replace=False))
    test = np.isin(data["match"], list(held))
    tensors = {
        "x": torch.tensor(data["x"], dtype=torch.float32),
        "mask": torch.tensor(data["mask"], dtype=torch.bool),
        "rows": torch.tensor(data["rows"], dtype=torch.float32),
        "cols": torch.tensor(data["cols"], dtype=torch.float32),
        "y": torch.tensor(data["y"], dtype=torch.float32),
    }
    train_idx = np.flatnonzero(~test)
    test_idx = np.flatnonzero(test)
    sizes = [NUM_FEATURES, *hidden, NUM_TILES * LOCATIONS]
    layers: list[torch.nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    with torch.no_grad():  # start at the count-only prior
        layers[-1].weight.mul_(0.1)
        layers[-1].bias.zero_()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * math.ceil(len(train_idx) / batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)

    def loss_of(idx: np.ndarray, prior: bool = False) -> Any:
        t = {k: v[idx] for k, v in tensors.items()}
        logits = net(t["x"]).view(-1, NUM_TILES, LOCATIONS)
        if prior:
            logits = torch.zeros_like(logits)
        logw = log_balance(logits, t["mask"], t["rows"], t["cols"], TRAIN_PASSES)
        logp = logw - torch.log(t["rows"].clamp(min=1e-9))[:, :, None]
        return -(t["y"] * logp).sum() / t["y"].sum()

    def evaluate(prior: bool = False) -> float:
        with torch.no_grad():
            total, copies = 0.0, 0.0
            for i in range(0, len(test_idx), 4096):
                idx = test_idx[i : i + 4096]
                n_copies = float(tensors["y"][idx].sum())
                total += float(loss_of(idx, prior)) * n_copies
                copies += n_copies
            return total / copies

    start = time.perf_counter()
    prior_loss = evaluate(prior=True)
    history = []
    for epoch in range(epochs):
        order = rng.permutation(train_idx)
        net.train()
        for i in range(0, len(order), batch):
            loss = loss_of(order[i : i + batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        net.eval()
        history.append(round(evaluate(), 5))
        if history[-1] == min(history):
            best = {k: v.detach().clone() for k, v in net.state_dict().items()}
        print(
            f"epoch {epoch + 1}/{epochs}: held-out log-loss {history[-1]:.4f} "
            f"(prior {prior_loss:.4f}), {time.perf_counter() - start:.0f} s",
            flush=True,
        )
    net.load_state_dict(best)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    weights = [m.weight.detach().numpy().copy() for m in linears]
    biases = [m.bias.detach().numpy().copy() for m in linears]
    report = {
        "positions": int(len(train_idx)),
        "held_out_positions": int(len(test_idx)),
        "held_out_log_loss": min(history),
        "held_out_history": history,
        "held_out_prior_log_loss": round(prior_loss, 5),
        "epochs": epochs,
        "hidden": list(hidden),
        "lr": lr,
        "weight_decay": weight_decay,
        "batch": batch,
        "seed": seed,
        "train_seconds": round(time.perf_counter() - start, 1),
    }
    return weights, biases, report


def main(argv: Sequence[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m training.belief", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="play matches and record labelled positions")
    g.add_argument("--rules", default="standard")
    g.add_argument("--players", type=int, default=2)
    g.add_argument("--partnerships", action="store_true")
    g.add_argument("--matches", type=int, default=1000)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--agents", nargs="+", default=["heuristic"], help="agent per seat, cycled")
    g.add_argument("--out", required=True)
    t = sub.add_parser("train", help="fit a belief network and write a belief file")
    t.add_argument("data", nargs="+")
    t.add_argument("--rules", default="standard")
    t.add_argument("--players", type=int, default=2)
    t.add_argument("--partnerships", action="store_true")
    t.add_argument("--hidden", type=int, nargs="+", default=[192, 192])
    t.add_argument("--epochs", type=int, default=8)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--batch", type=int, default=256)
    t.add_argument("--holdout", type=float, default=0.1)
    t.add_argument("--weight-decay", type=float, default=0.01)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        rules = Rules.preset(args.rules, num_players=args.players, partnerships=args.partnerships)
    except BergenError as exc:
        raise UsageError(f"bad rules: {exc}") from None
    if args.command == "generate":
        start = time.perf_counter()
        data = generate(rules, args.matches, args.seed, args.agents)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.out, **data)
        print(
            f"{len(data['x'])} positions from {args.matches} matches in "
            f"{time.perf_counter() - start:.0f} s -> {args.out}"
        )
        return
    require_extra("train", "python -m training.belief train", ["torch"])
    missing = [p for p in args.data if not Path(p).is_file()]
    if missing:
        raise UsageError(f"data file {missing[0]!r} does not exist")
    data = _load(args.data)
    weights, biases, report = train(
        data,
        args.hidden,
        args.epochs,
        args.lr,
        args.batch,
        args.holdout,
        args.seed,
        args.weight_decay,
    )
    activations = ["relu"] * (len(weights) - 1) + ["identity"]
    provenance = {
        "source": "python -m training.belief train",
        "data": [Path(p).name for p in args.data],
        "training": report,
    }
    path = save_belief_file(args.out, rules, weights, biases, activations, provenance)
    print(json.dumps(report, indent=1))
    print(f"wrote {path}")
