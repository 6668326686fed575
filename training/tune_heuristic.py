"""Tune the ``heuristic`` agent's weights by the cross-entropy method on duplicate matches.

    python -m bergen_env.training.tune_heuristic --config configs/tune_heuristic.yaml \\
        [--set key=value]

The heuristic (:class:`~bergen_env.agents.heuristic.HeuristicAgent`) ranks plays by a weighted
sum of hand-written terms (``threat``, ``stuck``, ``shed``, ...). This searches those weights
for the ones that win most against ``opponent`` (the default heuristic unless given), every
match played by the compiled heuristic (:mod:`bergen_env.agents.compiled.heuristic_matches`, the
``[vector]`` extra):

1. Each generation draws ``population`` weight vectors around the mean ``mu`` (Gaussian with
   per-weight ``sigma``, negative weights cut to 0; the first candidate is ``mu`` itself). Only
   the weights named in ``tune`` vary (by default every weight that can change the play under
   the rules); the others keep their ``start`` values.
2. Every candidate plays the same ``matches`` duplicate deal streams (a stream is played once
   with the candidate on each side), new streams each generation.
3. ``mu`` becomes the mean of the best ``elite`` candidates; ``sigma`` moves toward their spread
   (``smoothing`` keeps that share of the old one), never below ``min_sigma``.

At the end the final ``mu`` (rounded to 3 decimals, as shipped) plays ``holdout_matches`` fresh
duplicate streams against ``opponent``: its win rate with a 95% interval (normal, from the
per-stream win shares) is the run's result. The run folder
``runs/tune_heuristic/<name>__<seed>__<time>/`` holds ``config.yaml``, ``command.txt``,
``metrics.csv`` (one row per generation) and ``weights.json`` (the weights, the agent string
and the hold-out result). Same seed, same result.
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("tune_heuristic"))

import argparse
import csv
import dataclasses
import json
import math
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from bergen_env.agents.heuristic import WEIGHT_NAMES, default_weights, used_weights
from bergen_env.atomic_files import write_text
from bergen_env.rules import Rules, build_rules
from bergen_env.stats import Z95, standard_error
from bergen_env.stop import check_stop
from bergen_env.validation import is_bool, is_int, is_number

from .cli import ArgumentParser, require_extra
from .config import add_override_argument, load_dataclass_config
from .config_checks import ConfigError, key_error

PROG = "python -m bergen_env.training.tune_heuristic"
#: The default heuristic's weights.
DEFAULT = default_weights()


@dataclass
class TuneConfig:
    """A tuning run. Each field is one YAML key under ``default:``."""

    name: str = "tune_heuristic"
    """Prefix of the run folder (a config file's stem when loaded from a file)."""
    seed: int = 0
    """Seed of the candidates and of every generation's deal streams."""
    rules: str = "standard"
    """Preset name."""
    num_players: int = 2
    """2, 3 or 4 seats."""
    partnerships: bool = False
    """Two sides of two partners (4 players only)."""
    rule_overrides: dict[str, Any] = field(default_factory=dict)
    """Single rule options overriding the preset, e.g. ``{target: 51}``."""
    tune: list[str] | None = None
    """The weights that vary (names of the heuristic's parameters); null: every weight that can
    change the heuristic's play under the rules (``heuristic.used_weights``)."""
    start: dict[str, float] = field(default_factory=dict)
    """Starting weights by name (the rest: the heuristic's defaults)."""
    opponent: dict[str, float] = field(default_factory=dict)
    """The opponent's weights by name (the rest: the heuristic's defaults)."""
    generations: int = 8
    """Rounds of sampling and refitting."""
    population: int = 20
    """Candidates per generation (the mean included)."""
    elite: int = 5
    """Best candidates whose mean is the next ``mu``."""
    matches: int = 10_000
    """Duplicate deal streams each candidate plays per generation."""
    init_sigma: float = 0.5
    """Starting spread, relative to each tuned starting weight."""
    min_sigma: float = 0.05
    """Floor of every weight's spread (absolute)."""
    smoothing: float = 0.7
    """Share of the old spread kept each generation."""
    holdout_matches: int = 50_000
    """Fresh duplicate deal streams of the final evaluation."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, source: str = "<config>") -> None:
        """Check every field; errors name ``source`` and the key."""

        if not isinstance(self.name, str) or not self.name:
            raise key_error(self, source, "name", "must be a non-empty string")
        if not is_int(self.seed) or not 0 <= self.seed < 2**32:
            raise key_error(self, source, "seed", "must be an int in [0, 2**32)")
        for key in ("generations", "population", "elite", "matches", "holdout_matches"):
            if not is_int(getattr(self, key)) or getattr(self, key) < 1:
                raise key_error(self, source, key, "must be a positive int")
        if self.elite > self.population:
            raise key_error(
                self, source, "elite", f"must be at most population ({self.population})"
            )
        for key in ("init_sigma", "min_sigma"):
            if not is_number(getattr(self, key)) or getattr(self, key) <= 0:
                raise key_error(self, source, key, "must be a number > 0")
        if not is_number(self.smoothing) or not 0 <= self.smoothing < 1:
            raise key_error(self, source, "smoothing", "must be a number in [0, 1)")
        if not is_bool(self.partnerships):
            raise key_error(self, source, "partnerships", "must be true or false")
        if not isinstance(self.rule_overrides, dict):
            raise key_error(self, source, "rule_overrides", "must be a mapping")
        if self.tune is not None and (
            not isinstance(self.tune, list)
            or not self.tune
            or len(set(self.tune)) != len(self.tune)
            or not all(name in WEIGHT_NAMES for name in self.tune)
        ):
            raise key_error(
                self,
                source,
                "tune",
                f"must be null or a non-empty list of distinct names of {WEIGHT_NAMES}",
            )
        for key in ("start", "opponent"):
            value = getattr(self, key)
            if not isinstance(value, dict) or not all(
                k in WEIGHT_NAMES and is_number(v) and v >= 0 for k, v in value.items()
            ):
                raise key_error(
                    self, source, key, f"must map names of {WEIGHT_NAMES} to numbers >= 0"
                )
        try:
            self.make_rules()
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc}") from None

    def make_rules(self) -> Rules:
        """The rules of the run (preset, seating and overrides)."""
        return build_rules(
            self.rules,
            num_players=self.num_players,
            partnerships=self.partnerships,
            **self.rule_overrides,
        )

    def tuned_names(self) -> list[str]:
        """The weights that vary (``tune``, or the ones the rules use)."""
        return list(self.tune) if self.tune is not None else list(used_weights(self.make_rules()))

    def start_weights(self) -> np.ndarray:
        return np.array([float(self.start.get(n, DEFAULT[n])) for n in WEIGHT_NAMES])

    def opponent_weights(self) -> np.ndarray:
        return np.array([float(self.opponent.get(n, DEFAULT[n])) for n in WEIGHT_NAMES])


def load_config(path: str | Path, overrides: list[str] | None = None) -> TuneConfig:
    """Load ``path`` (YAML with a ``default:`` block) and apply ``key=value`` overrides."""
    return load_dataclass_config(TuneConfig, path, overrides)


def agent_string(weights: np.ndarray) -> str:
    """The ``heuristic:...`` agent string of a weight vector (every weight named)."""
    return "heuristic:" + ",".join(f"{n}={float(w):g}" for n, w in zip(WEIGHT_NAMES, weights))


def win_rate(wins: np.ndarray) -> dict[str, float]:
    """Mean of per-stream win shares with a 95% normal interval."""
    mean = float(wins.mean())
    half = Z95 * standard_error(wins) if len(wins) > 1 else math.inf
    return {"win_rate": mean, "ci_low": mean - half, "ci_high": mean + half}


def tune(cfg: TuneConfig, run_dir: Path, log: bool = True) -> dict[str, Any]:
    """Run the search in ``run_dir``; returns what ``weights.json`` holds."""
    from bergen_env.agents.compiled.heuristic_matches import duplicate_wins

    rules = cfg.make_rules()
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(
        run_dir / "config.yaml",
        yaml.safe_dump({"default": dataclasses.asdict(cfg)}, sort_keys=False),
    )
    names = cfg.tuned_names()
    idx = [WEIGHT_NAMES.index(n) for n in names]
    base = cfg.start_weights()
    opponent = cfg.opponent_weights()
    seeds = np.random.SeedSequence(cfg.seed).generate_state(cfg.generations + 2).tolist()
    rng = np.random.default_rng(seeds[0])
    mu = base[idx].copy()
    sigma = np.maximum(cfg.init_sigma * mu, cfg.min_sigma)
    start = time.perf_counter()
    with open(run_dir / "metrics.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            ["generation", "mean_win_rate", "best_win_rate"]
            + [f"mu_{n}" for n in names]
            + [f"sigma_{n}" for n in names]
            + ["time_s"]
        )
        for g in range(cfg.generations):
            candidates = np.maximum(mu + sigma * rng.standard_normal((cfg.population, len(idx))), 0)
            candidates[0] = mu
            rates = np.empty(cfg.population)
            for c, values in enumerate(candidates):
                check_stop()
                w = base.copy()
                w[idx] = values
                rates[c] = duplicate_wins(rules, w, opponent, cfg.matches, seeds[g + 1]).mean()
            elite = candidates[np.argsort(-rates, kind="stable")[: cfg.elite]]
            mu = elite.mean(axis=0)
            sigma = np.maximum(
                cfg.smoothing * sigma + (1 - cfg.smoothing) * elite.std(axis=0), cfg.min_sigma
            )
            row = [g, rates[0], rates.max(), *mu, *sigma, time.perf_counter() - start]
            writer.writerow([f"{x:.5g}" if isinstance(x, float) else x for x in row])
            fh.flush()
            if log:
                print(
                    f"generation {g}: mean {rates[0]:.4f} best {rates.max():.4f} "
                    + " ".join(f"{n}={v:.3f}" for n, v in zip(names, mu)),
                    flush=True,
                )
    final = base.copy()
    final[idx] = np.round(mu, 3)
    held = duplicate_wins(rules, final, opponent, cfg.holdout_matches, seeds[-1])
    result = {
        "rules": rules.to_dict(),
        "weights": {n: float(w) for n, w in zip(WEIGHT_NAMES, final)},
        "opponent": {n: float(w) for n, w in zip(WEIGHT_NAMES, opponent)},
        "agent": agent_string(final),
        "holdout": {"matches": cfg.holdout_matches, **win_rate(held)},
        "time_s": round(time.perf_counter() - start, 1),
    }
    write_text(run_dir / "weights.json", json.dumps(result, indent=2) + "\n")
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog=PROG,
        description="Tune the heuristic's weights by the cross-entropy method on compiled "
        "duplicate matches.",
    )
    parser.add_argument("--config", required=True, help="YAML config with a 'default:' block")
    parser.add_argument(
        "--run-dir", default=None, help="run folder (default runs/tune_heuristic/...)"
    )
    add_override_argument(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    cfg = load_config(args.config, args.overrides)
    require_extra("vector", "tuning the heuristic", ["numba"])
    run_dir = Path(
        args.run_dir
        or Path("runs")
        / "tune_heuristic"
        / f"{cfg.name}__{cfg.seed}__{time.strftime('%Y%m%d-%H%M%S')}"
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(
        run_dir / "command.txt",
        shlex.join(
            [sys.executable, "-m", "bergen_env.training.tune_heuristic", *(argv or sys.argv[1:])]
        )
        + "\n",
    )
    result = tune(cfg, run_dir)
    h = result["holdout"]
    print(
        f"{result['agent']}\nhold-out: {h['win_rate']:.4f} [{h['ci_low']:.4f}, "
        f"{h['ci_high']:.4f}] over {h['matches']} duplicate streams\nrun folder: {run_dir}"
    )
    return result
