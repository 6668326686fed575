"""Expert iteration's checks after each fit: agreement with search and regrets on held-out
decisions, and a duplicate evaluation of the written policy file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from .expert_iteration_collection import Decisions
from .expert_iteration_config import ExpertIterationConfig
from .expert_iteration_networks import Network, policy_logits


@torch.no_grad()
def choices(net: Network, data: Decisions, idx: np.ndarray) -> np.ndarray:
    """The network's most probable legal action in decisions ``idx``."""
    masks = torch.as_tensor(data.masks[idx])
    logits = policy_logits(net, torch.as_tensor(data.obs[idx]), masks)
    logits = logits.masked_fill(~masks, float("-inf"))
    return logits.argmax(dim=1).numpy()


def regret(data: Decisions, idx: np.ndarray, chosen: np.ndarray) -> float:
    """Mean of search's best value minus its value of ``chosen``, in match units."""
    values = np.where(data.masks[idx], data.values[idx], -np.inf)
    return float(np.mean(values.max(axis=1) - values[np.arange(len(idx)), chosen]))


def held_out_metrics(
    net: Network, first: Network, data: Decisions, idx: np.ndarray
) -> dict[str, float]:
    """Agreement with search's best action and the regrets of the network, the first network
    and the heuristic on decisions ``idx``."""
    best = np.where(data.masks[idx], data.values[idx], -np.inf).argmax(axis=1)
    mine = choices(net, data, idx)
    return {
        "held_out_decisions": float(len(idx)),
        "agreement": float(np.mean(mine == best)),
        "regret": regret(data, idx, mine),
        "regret_first": regret(data, idx, choices(first, data, idx)),
        "regret_heuristic": regret(data, idx, data.heuristic[idx]),
    }


def evaluate(path: Path, cfg: ExpertIterationConfig, seed: int) -> dict[str, float]:
    """Duplicate win rate of the policy file against each of ``eval_opponents``."""
    from bergen_env.arena import run_tournament

    rules = cfg.make_rules()
    spec = f"policy:{path}"
    out: dict[str, float] = {}
    for opponent in cfg.eval_opponents:
        if rules.partnerships:
            seats = [spec, opponent]
        else:
            seats = [spec] + [opponent] * (rules.num_players - 1)
        result = run_tournament(
            seats,
            rules,
            matches=cfg.eval_matches,
            seed=seed,
            workers=cfg.eval_workers if cfg.ray is None else 1,
            backend="processes" if cfg.ray is None else "ray",
        )
        out[f"vs_{opponent}"] = result.agents[spec].match_win_rate
    return out


#: The in-run evaluations play seeds ``seed + EVAL_SEED_OFFSET``, away from the README's 0 and 1.
EVAL_SEED_OFFSET = 101
