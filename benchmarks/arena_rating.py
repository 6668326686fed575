"""How long the arena takes to rate one policy, and how wide its interval is.

    python -m benchmarks.arena_rating --policy policies/expert_2p.safetensors \
        --anchor policies/standard_2p.safetensors --matches 400 --workers 2

Does what a ``bergen-web --arena`` server does, without the server: an empty arena file, the
anchors' round robin (the scripted four and each ``--anchor`` file; played once per set of
rules, when the first policy arrives), then the submitted policy's pairs, each on a fresh secret
seed in ``--workers`` processes (``bergen_env.web.arena_runner.play_secret_pair``, the server's
own function), then the leaderboard fit with ``--bootstrap`` replicates. Prints each phase's
wall time and CPU time (this process and its workers, from ``getrusage``), the policy's rating
with its 95% interval, and each anchor's arena rating beside its rating in the stored round robin
of ``docs/ratings.md`` (``benchmarks/results/ratings_standard_2p.json``, 2,000 matches a pair)
with whether the two intervals overlap.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.cpu_time import waited_cpu
from bergen_env.arena_store import (
    ArenaStore,
    check_submission,
    leaderboard,
    rules_key,
)
from bergen_env.duplicate_pairs import whole_groups
from bergen_env.rules import Rules
from bergen_env.web.arena_runner import play_secret_pair

RESULTS = Path(__file__).resolve().parent / "results" / "ratings_standard_2p.json"


def play_queue(store: ArenaStore, workers: int) -> tuple[int, float, float]:
    """Play every queued pair; (pairs, wall seconds, CPU seconds of this process tree)."""
    jobs = store.queued()
    wall, cpu = time.perf_counter(), waited_cpu()
    with ProcessPoolExecutor(workers) as pool:  # shut down before the CPU is read
        futures = [
            (
                job,
                pool.submit(
                    play_secret_pair,
                    store.agent_spec(job.a),
                    store.agent_spec(job.b),
                    job.rules,
                    job.matches,
                ),
            )
            for job in jobs
        ]
        for job, future in futures:
            outcome, seconds = future.result()
            store.record(job.id, outcome, seconds)
    return len(jobs), time.perf_counter() - wall, waited_cpu() - cpu


def stored_ratings() -> dict[str, tuple[float, float, float]]:
    """The docs' two-player ratings: agent string -> (rating, low, high)."""
    from benchmarks.figures import stored_rating_table

    table = stored_rating_table(RESULTS)
    return {a: (table.ratings[a], *table.intervals[a]) for a in table.agents}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.arena_rating", description=__doc__)
    p.add_argument("--policy", default="policies/expert_2p.safetensors")
    p.add_argument("--anchor", action="append", default=[], help="an anchor policy file")
    p.add_argument("--matches", type=int, default=400, help="per pair")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--bootstrap", type=int, default=1000)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        store = ArenaStore(Path(folder) / "arena.sqlite3")
        anchors = {}
        for path in args.anchor:
            sub = check_submission(Path(path).read_bytes(), label=path)
            entry, _ = store.add_policy(sub, Path(path).stem, anchor=True)
            anchors[entry.id] = f"policy:{path}"
            store.plan(entry, whole_groups(args.matches, entry.rules), 0)
        n, wall, cpu = play_queue(store, args.workers)
        print(f"anchors' round robin: {n} pairs, {wall:.1f} s wall, {cpu:.1f} s CPU")
        sub = check_submission(Path(args.policy).read_bytes(), label=args.policy)
        entry, _ = store.add_policy(sub, Path(args.policy).stem)
        anchors[entry.id] = f"policy:{args.policy}"  # its name in the docs' table
        store.plan(entry, whole_groups(args.matches, entry.rules), 0)
        n, wall, cpu = play_queue(store, args.workers)
        start, cpu_fit = time.perf_counter(), waited_cpu()
        board = leaderboard(store.board_data(rules_key(entry.rules)), bootstrap=args.bootstrap)
        fit, fit_cpu = time.perf_counter() - start, waited_cpu() - cpu_fit
        print(f"the policy's pairs: {n} pairs, {wall:.1f} s wall, {cpu:.1f} s CPU")
        print(f"fit: {fit:.1f} s wall, {fit_cpu:.1f} s CPU ({args.bootstrap} replicates)")
        docs = stored_ratings() if entry.rules == Rules.preset("standard") else {}
        print("\n| agent | arena rating | 95% interval | matches | docs/ratings.md | overlap |")
        print("|---|---|---|---|---|---|")
        for e in board["entries"]:
            lo, hi = e["interval"]
            spec = anchors.get(e["agent"], e["agent"])
            known = docs.get(spec)
            other = "—" if known is None else f"{known[0]:.0f} [{known[1]:.0f}, {known[2]:.0f}]"
            overlap = (
                "—" if known is None else ("yes" if lo <= known[2] and known[1] <= hi else "no")
            )
            mark = " (submitted)" if e["agent"] == entry.id else ""
            print(
                f"| `{e['name']}`{mark} | {e['rating']:.0f} | [{lo:.0f}, {hi:.0f}] "
                f"(±{(hi - lo) / 2:.0f}) | {e['matches']} | {other} | {overlap} |"
            )
        store.close()


if __name__ == "__main__":
    main()
