"""Soak run (not CI): many random matches over every preset x seating, every invariant checked.

Each match is played at engine level by uniformly random legal moves, with the checks of
``tests/test_invariants.py`` after every action (tile conservation, cache consistency, the
score change RULES.md allows, a non-empty legal set, the end of every hand). A fraction of the
matches also encodes every seat's observation after every action. Matches still running after
``--max-hands`` hands are cut off (random 4-player ``traditional`` / ``double_set`` play can
run for hundreds of hands because leftover penalties push scores below zero).

Run from the repository root::

    python -m benchmarks.soak                       # 100,000 matches on 2 worker processes
    python -m benchmarks.soak --matches 2000 --workers 1

Match ``i`` plays configuration ``i mod 20`` (five presets x four seatings) with its own seed
``SeedSequence([seed, i])``, so any failure is reproduced by ``--only INDEX``. Exit status 1
when any match failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from bergen_env import Encoder, Rules
from bergen_env.rules import PRESETS
from tests.test_invariants import play_checked_match, random_chooser

SEATINGS = ((2, False), (3, False), (4, False), (4, True))
CONFIGS = tuple((preset, n, p) for preset in PRESETS for n, p in SEATINGS)


@dataclass
class Tally:
    """What a batch of matches did."""

    matches: int = 0
    ended: int = 0
    truncated: int = 0
    actions: int = 0
    hands: int = 0
    observed: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.matches += other.matches
        self.ended += other.ended
        self.truncated += other.truncated
        self.actions += other.actions
        self.hands += other.hands
        self.observed += other.observed
        self.failures.extend(other.failures)


def config_name(index: int) -> str:
    preset, n, partnerships = CONFIGS[index % len(CONFIGS)]
    return f"{preset} {n}p" + (" partnerships" if partnerships else "")


def play_one(index: int, seed: int, max_hands: int, observe_fraction: float, tally: Tally) -> None:
    """Play match ``index`` with every check; record its outcome (or its failure) in ``tally``."""
    preset, n, partnerships = CONFIGS[index % len(CONFIGS)]
    rules = Rules.preset(preset, num_players=n, partnerships=partnerships)
    deal_seed, choice_seed, observe_seed = np.random.SeedSequence([seed, index]).spawn(3)
    observe = np.random.default_rng(observe_seed).random() < observe_fraction
    choose = random_chooser(np.random.default_rng(choice_seed))
    counted = [0]

    def counting(legal: list[int]) -> int:
        counted[0] += 1
        return choose(legal)

    tally.matches += 1
    try:
        s = play_checked_match(
            rules,
            np.random.default_rng(deal_seed),
            counting,
            max_hands=max_hands,
            encoder=Encoder(rules) if observe else None,
        )
    except Exception:  # noqa: BLE001 - every failure is reported with its match index
        tally.failures.append(
            f"match {index} ({config_name(index)}, seed {seed}):\n{traceback.format_exc()}"
        )
        return
    tally.ended += s.terminal
    tally.truncated += not s.terminal
    tally.actions += counted[0]
    tally.hands += s.hand_number + 1
    tally.observed += observe


def play_batch(job: tuple[int, int, int, int, float]) -> Tally:
    """Matches ``start .. stop-1`` (the unit of work of one worker process)."""
    start, stop, seed, max_hands, observe_fraction = job
    tally = Tally()
    for index in range(start, stop):
        play_one(index, seed, max_hands, observe_fraction, tally)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=100_000, help="matches to play")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=0, help="base seed")
    parser.add_argument("--max-hands", type=int, default=100, help="cut a match off after this")
    parser.add_argument(
        "--observe-fraction",
        type=float,
        default=0.1,
        help="fraction of matches that also encode every seat's observation after every action",
    )
    parser.add_argument("--batch", type=int, default=120, help="matches per unit of work")
    parser.add_argument("--only", type=int, default=None, help="replay the single match INDEX")
    args = parser.parse_args(argv)
    for name in ("matches", "workers", "max_hands", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if not 0.0 <= args.observe_fraction <= 1.0:
        parser.error("--observe-fraction must be in [0, 1]")

    if args.only is not None:
        tally = play_batch((args.only, args.only + 1, args.seed, args.max_hands, 1.0))
        print("\n".join(tally.failures) or f"match {args.only} ({config_name(args.only)}): ok")
        return 1 if tally.failures else 0

    from tqdm import tqdm

    jobs = [
        (
            start,
            min(start + args.batch, args.matches),
            args.seed,
            args.max_hands,
            args.observe_fraction,
        )
        for start in range(0, args.matches, args.batch)
    ]
    total = Tally()
    began = time.perf_counter()
    with (
        multiprocessing.Pool(args.workers) as pool,
        tqdm(total=args.matches, unit="match", smoothing=0.05) as bar,
    ):
        for tally in pool.imap_unordered(play_batch, jobs):
            total.add(tally)
            bar.update(tally.matches)
            bar.set_postfix(failures=len(total.failures), refresh=False)
    elapsed = time.perf_counter() - began

    for failure in total.failures[:10]:
        print(failure, file=sys.stderr)
    print(
        f"{total.matches} random matches over {len(CONFIGS)} configurations "
        f"({', '.join(PRESETS)} x 2/3/4 players and 4-player partnerships): "
        f"{total.ended} ended, {total.truncated} cut off at {args.max_hands} hands, "
        f"{len(total.failures)} failed"
    )
    print(
        f"{total.hands} hands, {total.actions} actions checked, {total.observed} matches with "
        f"every observation encoded; {elapsed:.1f} s on {args.workers} worker(s), "
        f"{total.matches / elapsed:.0f} matches/s, {total.actions / elapsed:.0f} actions/s"
    )
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
