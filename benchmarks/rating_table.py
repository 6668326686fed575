"""A rating table of agents: Bradley-Terry ratings from one round robin of duplicate matches.

    python -m benchmarks.rating_table --agents random greedy heuristic search ...
        [--matches 200] [--matches-for SPEC N ...] [--seed 0] [--rules standard]
        [--players 2] [--partnerships] [--workers 1 | --ray [ADDRESS]] [--results PATH]
        [--bootstrap 1000] [--anchor SPEC RATING]

Every pair of agents plays a duplicate tournament (:func:`bergen_env.arena.run_tournament`: the
same deals with the seats swapped) of ``--matches`` matches, or fewer for a slow agent
(``--matches-for SPEC N``: every pair with SPEC plays at most N). Two players; four in two
partnerships (an agent and a copy of it against the other and its copy); or three or four
individual players, where a pair plays two lineups of half the matches each: one agent against
copies of the other in every other seat, then the other way round.

**Results are stored per pair** in the ``--results`` JSON file, keyed by the two agent strings
(in sorted order), the rules, the seed, the match count and the SHA-256 of every file an agent
string names (a policy file): a pair already in the file is not played again, so adding an agent
plays only its new pairs and re-running reproduces the table. Each pair keeps its first agent's
outcome per match, in (deal group, seating) order: its half-points over the match's
*comparisons*, each of its seats against each of the other agent's seats (one comparison with
two sides; two with three individual players, three with four), a comparison giving ``2`` when
it placed ahead, ``1`` level and ``0`` behind (:func:`bergen_env.arena.placed_ahead`).

**Ratings** are the Bradley-Terry fit of all pairs' comparisons (:mod:`bergen_env.ratings`, the
arena's prior of one virtual game per pair) on the Elo scale, shifted so the ``--anchor`` agent
has the given rating (default ``random=1000`` when ``random`` plays; otherwise a mean of 1500).
The 95% intervals are percentiles of a seeded bootstrap: each replicate resamples every pair's
deal groups with replacement (a deal group's seatings stay together, as they share the deals)
and refits. The table also gives every pair's score share (ties count half) and match count.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.rating_table_ray import play_pairs
from bergen_env.agents import make_agent, parse_agent_spec
from bergen_env.arena import RATING_PRIOR, seat_lineups
from bergen_env.atomic_files import OutputError, check_writable, write_text
from bergen_env.duplicate_pairs import OUTCOME_CHARS, group_points, pair_lineups, play_pair_outcome
from bergen_env.errors import BergenError
from bergen_env.ratings import ELO_CENTER, PairPoints, expected_score, fit_with_intervals
from bergen_env.rules import Rules
from bergen_env.stats import wilson_interval
from bergen_env.training.cli import ArgumentParser, UsageError, run
from bergen_env.training.ray_option import add_ray_argument, join_ray

PROG = "python -m benchmarks.rating_table"
FORMAT = "bergen_env rating results"
VERSION = 2
#: Versions read: 1 stored only two-sided pairs (one comparison a match, one lineup).
READABLE_VERSIONS = (1, 2)
DEFAULT_ANCHOR = ("random", 1000.0)


# ---------------------------------------------------------------------- stored pairs


@dataclass(frozen=True)
class PairResult:
    """One pair's duplicate tournament, as stored: the key fields, then what it produced."""

    agents: tuple[str, str]  # sorted
    files: dict[str, str]  # path -> sha256 of every file the two agent strings name
    rules: dict[str, Any]
    seed: int
    matches: int  # played: whole deal groups
    rotations: int  # seatings per deal group
    outcomes: str  # per match, the first agent's half-points over its comparisons
    # matches won by each agent in the lineup where it sits alone against copies of the other
    # (with two sides: every match); a match without a winner counts for none
    wins: tuple[int, int]
    seconds: float  # wall time of the pair
    commit: str | None  # the git commit the pair was played at
    comparisons: int = 1  # per match: each seat of one agent against each seat of the other
    lineups: int = 1  # 2: each agent sits alone against copies of the other in half the matches

    def key(self) -> str:
        return pair_key(self.agents, self.files, self.rules, self.seed, self.matches)

    @property
    def score(self) -> float:
        """The first agent's share of the pair's comparisons (a level one counts half)."""
        return sum(int(c) for c in self.outcomes) / (2 * self.comparisons * self.matches)

    @property
    def alone(self) -> int:
        """Matches each agent played alone against copies of the other (all with two sides)."""
        return self.matches // self.lineups

    def group_points(self) -> np.ndarray:
        """The first agent's half-points per deal group (the bootstrap's resampling unit)."""
        return group_points(self.outcomes, self.rotations)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["agents"], d["wins"] = list(self.agents), list(self.wins)
        return d

    @classmethod
    def from_json(cls, data: Any, where: str, version: int = VERSION) -> PairResult:
        """Check one stored entry (of a file of ``version``); ``where`` names it in errors."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        names = [f for f in cls.__dataclass_fields__]
        if version == 1:  # two sides only: one comparison a match, one lineup
            names = [f for f in names if f not in ("comparisons", "lineups")]
        missing = [f for f in names if f not in data]
        unknown = sorted(set(data) - set(names))
        if missing or unknown:
            raise ValueError(f"{where}: missing fields {missing}, unknown fields {unknown}")
        if version == 1:
            data = {**data, "comparisons": 1, "lineups": 1}
        agents = data["agents"]
        if not (
            isinstance(agents, list)
            and len(agents) == 2
            and all(isinstance(a, str) for a in agents)
        ):
            raise ValueError(f"{where}: 'agents' must be two agent strings, got {agents!r}")
        for field_name, kind in (("files", dict), ("rules", dict), ("outcomes", str)):
            if not isinstance(data[field_name], kind):
                raise ValueError(f"{where}: {field_name!r} must be a {kind.__name__}")
        for field_name in ("seed", "matches", "rotations", "comparisons", "lineups"):
            value = data[field_name]
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{where}: {field_name!r} must be an integer >= 0, got {value!r}")
        outcomes = data["outcomes"]
        matches, rotations = data["matches"], data["rotations"]
        comparisons, lineups = data["comparisons"], data["lineups"]
        if not 1 <= comparisons <= (len(OUTCOME_CHARS) - 1) // 2 or lineups not in (1, 2):
            raise ValueError(
                f"{where}: 'comparisons' must be 1 to 3 and 'lineups' 1 or 2, got "
                f"{comparisons} and {lineups}"
            )
        if rotations < 1 or matches < 1 or matches % (rotations * lineups):
            raise ValueError(
                f"{where}: {matches} matches are not whole deal groups of {rotations} seatings"
                + (f" in each of {lineups} lineups" if lineups > 1 else "")
            )
        chars = OUTCOME_CHARS[: 2 * comparisons + 1]
        if len(outcomes) != matches or set(outcomes) - set(chars):
            raise ValueError(f"{where}: 'outcomes' must be {matches} characters from {chars!r}")
        wins = data["wins"]
        if not (
            isinstance(wins, list) and len(wins) == 2 and all(isinstance(w, int) for w in wins)
        ):
            raise ValueError(f"{where}: 'wins' must be two integers, got {wins!r}")
        seconds, commit = data["seconds"], data["commit"]
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            raise ValueError(f"{where}: 'seconds' must be a number >= 0, got {seconds!r}")
        if commit is not None and not isinstance(commit, str):
            raise ValueError(f"{where}: 'commit' must be a string or null, got {commit!r}")
        return cls(
            agents=(agents[0], agents[1]),
            files=data["files"],
            rules=data["rules"],
            seed=data["seed"],
            matches=matches,
            rotations=rotations,
            outcomes=outcomes,
            wins=(wins[0], wins[1]),
            seconds=float(seconds),
            commit=commit,
            comparisons=comparisons,
            lineups=lineups,
        )


def pair_key(
    agents: Sequence[str],
    files: Mapping[str, str],
    rules: Mapping[str, Any],
    seed: int,
    matches: int,
) -> str:
    """The canonical key of a pair's tournament (what makes a stored result reusable)."""
    return json.dumps(
        {
            "agents": list(agents),
            "files": dict(sorted(files.items())),
            "rules": rules,
            "seed": seed,
            "matches": matches,
        },
        sort_keys=True,
    )


def load_results(path: Path) -> list[PairResult]:
    """The pairs stored in ``path`` (none if it does not exist); a malformed file is an error."""
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"results file {str(path)!r}: not readable JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"results file {str(path)!r}: not a rating results file ({FORMAT!r})")
    version = data.get("version")
    if version not in READABLE_VERSIONS:
        raise ValueError(
            f"results file {str(path)!r}: version {version!r}, expected one of "
            f"{list(READABLE_VERSIONS)}"
        )
    entries = data.get("pairs")
    if not isinstance(entries, list):
        raise ValueError(f"results file {str(path)!r}: 'pairs' must be a list")
    out = [
        PairResult.from_json(e, f"results file {str(path)!r}, pair {k}", version)
        for k, e in enumerate(entries)
    ]
    keys = [p.key() for p in out]
    if len(set(keys)) != len(keys):
        raise ValueError(f"results file {str(path)!r}: a pair is stored twice")
    return out


def save_results(path: Path, pairs: Sequence[PairResult]) -> None:
    """Write every pair (atomically: a stopped run never leaves half a file)."""
    data = {"format": FORMAT, "version": VERSION, "pairs": [p.to_json() for p in pairs]}
    write_text(path, json.dumps(data, indent=1) + "\n")


# ---------------------------------------------------------------------- playing the round robin


def agent_files(spec: str) -> dict[str, str]:
    """``{path: sha256}`` of every existing file named by a parameter of the agent string (none
    when the string no longer parses: its stored pairs are then read back as they are)."""
    try:
        _, kwargs = parse_agent_spec(spec)
    except ValueError:
        return {}
    out = {}
    for value in kwargs.values():
        if isinstance(value, str) and Path(value).is_file():
            out[value] = hashlib.sha256(Path(value).read_bytes()).hexdigest()
    return out


def check_setup(specs: Sequence[str], rules: Rules, playing: Sequence[str] | None = None) -> None:
    """Two distinct agent strings or more, each of ``playing`` (default: all) building and
    resetting under ``rules``; errors name the problem. An agent whose pairs are all stored is
    only read back, so it need not build (e.g. one whose code has since been removed)."""
    if len(specs) < 2:
        raise ValueError(f"a rating table needs at least 2 agents, got {len(specs)}")
    seen = set()
    for spec in specs:
        if spec in seen:
            raise ValueError(f"agent {spec!r} is listed twice")
        seen.add(spec)
    for spec in specs if playing is None else playing:
        try:
            make_agent(spec).reset(rules, 0, np.random.default_rng(0))
        except (ValueError, OSError, BergenError) as exc:
            message = str(exc)
            raise ValueError(message if spec in message else f"agent {spec!r}: {message}") from None


def pair_matches(
    a: str, b: str, matches: int, matches_for: Mapping[str, int], rotations: int, lineups: int = 1
) -> int:
    """A pair's match count: ``matches``, capped by either agent's ``matches_for``, rounded up
    to whole deal groups in each of its ``lineups``."""
    n = min([matches, *(matches_for[s] for s in (a, b) if s in matches_for)])
    return math.ceil(n / (rotations * lineups)) * rotations * lineups


def git_commit() -> str | None:
    """The checkout's commit (``-dirty`` with uncommitted changes), or None outside git."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=7"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def play_pair(
    a: str,
    b: str,
    rules: Rules,
    matches: int,
    seed: int,
    workers: int,
    commit: str | None,
    backend: str = "processes",
) -> PairResult:
    """One pair's duplicate tournaments (:func:`pair_lineups`, the same deals in each), reduced
    to what is stored (``commit``: the code's; ``backend``: :func:`run_tournament`'s)."""
    start = time.perf_counter()
    out = play_pair_outcome(a, b, rules, matches, seed, workers, backend)
    return PairResult(
        agents=(a, b),
        files={**agent_files(a), **agent_files(b)},
        rules=rules.to_dict(),
        seed=seed,
        matches=out.matches,
        rotations=out.rotations,
        outcomes=out.outcomes,
        wins=out.wins,
        seconds=round(time.perf_counter() - start, 2),
        commit=commit,
        comparisons=out.comparisons,
        lineups=out.lineups,
    )


@dataclass
class RoundRobin:
    """The pairs of one round robin, in order, and which of them were played (not reused)."""

    agents: list[str]
    pairs: list[PairResult]
    played: list[tuple[str, str]]


def round_robin(
    specs: Sequence[str],
    rules: Rules,
    *,
    matches: int = 200,
    matches_for: Mapping[str, int] | None = None,
    seed: int = 0,
    workers: int = 1,
    results: Path | None = None,
    log: Callable[[str], None] | None = None,
    backend: str = "processes",
) -> RoundRobin:
    """Every pair of ``specs`` in a duplicate tournament, reusing and extending ``results``.

    The file is rewritten after each new pair, so a stopped run keeps what it finished.
    ``backend="ray"`` plays the pairs not stored as Ray tasks (:mod:`benchmarks.rating_table_ray`)
    and stores each as it finishes; ``workers`` then does not apply.
    """
    if backend not in ("processes", "ray"):
        raise ValueError(f"backend must be 'processes' or 'ray', got {backend!r}")
    for name, value, minimum in (
        ("matches", matches, 1),
        ("seed", seed, 0),
        ("workers", workers, 1),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    specs = [s.strip() if isinstance(s, str) else s for s in specs]
    matches_for = dict(matches_for or {})
    for spec, n in matches_for.items():
        if spec not in specs:
            raise ValueError(f"matches for {spec!r}: not one of the agents {specs}")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"matches for {spec!r} must be an integer >= 1, got {n!r}")
    shape = pair_lineups("a", "b", rules)  # every pair's tournaments have this shape
    rotations, lineups = len(seat_lineups(len(shape[0]), rules)), len(shape)
    stored = load_results(results) if results is not None else []
    by_key = {p.key(): p for p in stored}
    commit = git_commit()  # once: the code this process runs, whatever is committed meanwhile
    files = {s: agent_files(s) for s in specs}
    wanted = []  # (a, b, matches, key) of every pair, in table order
    order = sorted(specs)
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            n = pair_matches(a, b, matches, matches_for, rotations, lineups)
            wanted.append(
                (a, b, n, pair_key((a, b), {**files[a], **files[b]}, rules.to_dict(), seed, n))
            )
    todo = [w for w in wanted if w[3] not in by_key]
    check_setup(specs, rules, playing=[s for s in specs if any(s in w[:2] for w in todo)])
    if backend == "ray":
        new = play_pairs(play_pair, todo, rules, seed, commit)
    else:
        new = (
            ((a, b, n, key), play_pair(a, b, rules, n, seed, workers, commit))
            for a, b, n, key in todo
        )
    played = []
    for (a, b, n, key), pair in new:
        if pair.key() != key:  # the files changed while the pair played
            raise ValueError(f"the files of {a!r} or {b!r} changed during the run")
        played.append((a, b))
        stored.append(pair)
        by_key[key] = pair
        if results is not None:
            save_results(results, stored)
        if log is not None:
            log(
                f"played {a} vs {b}: {n} matches, score {pair.score:.3f}, "
                f"{pair.seconds:.0f} s ({1000 * pair.seconds / n:.1f} ms/match)"
            )
    return RoundRobin(list(specs), [by_key[w[3]] for w in wanted], played)


# ---------------------------------------------------------------------- the table


@dataclass
class RatingTable:
    """Ratings with 95% bootstrap intervals, and every pair's score and match count."""

    agents: list[str]  # best first
    ratings: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    score: dict[str, dict[str, float]]  # score[a][b]: a's share of the points against b
    matches: dict[str, dict[str, int]]
    pairs: list[PairResult]
    anchor: tuple[str, float] | None
    bootstrap: int

    def markdown(self) -> str:
        """The rating table, then the pairwise score matrix (row against column)."""
        lines = [
            "| rank | agent | rating | 95% interval | matches | score |",
            "|---|---|---|---|---|---|",
        ]
        for rank, name in enumerate(self.agents, 1):
            lo, hi = self.intervals[name]
            played = sum(self.matches[name].values())
            points = sum(self.score[name][b] * n for b, n in self.matches[name].items())
            lines.append(
                f"| {rank} | `{name}` | {self.ratings[name]:.0f} | [{lo:.0f}, {hi:.0f}] "
                f"| {played} | {points / played:.3f} |"
            )
        short = {name: f"{k + 1}" for k, name in enumerate(self.agents)}
        lines += [
            "",
            "| row's score against column (matches) | " + " | ".join(short.values()) + " |",
            "|---" * (len(self.agents) + 1) + "|",
        ]
        for a in self.agents:
            cells = [
                "—" if a == b else f"{self.score[a][b]:.3f} ({self.matches[a][b]})"
                for b in self.agents
            ]
            lines.append(f"| {short[a]}. `{a}` | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def pairs_markdown(self) -> str:
        """One row per pair: matches, the better-rated agent's match-win rate (95% Wilson; with
        more than two sides, in the matches it played alone against copies of the other), its
        score and the score the ratings predict, the wall time per match and the commit."""
        lines = [
            "| agent | opponent | matches | win rate | 95% CI | score | rated "
            "| ms/match | commit |",
            "|---" * 9 + "|",
        ]
        rank = {name: k for k, name in enumerate(self.agents)}
        ordered = sorted(self.pairs, key=lambda p: sorted(rank[x] for x in p.agents))
        for p in ordered:
            a, b = sorted(p.agents, key=rank.__getitem__)
            wins = p.wins[p.agents.index(a)]
            lo, hi = wilson_interval(wins, p.alone)
            rated = expected_score(self.ratings[a], self.ratings[b])
            lines.append(
                f"| `{a}` | `{b}` | {p.matches} | {wins / p.alone:.3f} | [{lo:.3f}, {hi:.3f}] "
                f"| {self.score[a][b]:.3f} | {rated:.3f} | {1000 * p.seconds / p.matches:.1f} "
                f"| `{p.commit}` |"
            )
        return "\n".join(lines)


def rating_table(
    run: RoundRobin,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    anchor: tuple[str, float] | None = DEFAULT_ANCHOR,
) -> RatingTable:
    """Fit the ratings of ``run`` and their bootstrap intervals (``bootstrap`` replicates).

    ``anchor`` pins one agent's rating; an anchor agent that is not playing is ignored only
    for the default (``random``), otherwise an error. ``None`` centres the mean on 1500.
    """
    names = list(run.agents)
    index = {name: k for k, name in enumerate(names)}
    if anchor is not None and anchor[0] not in index:
        if anchor != DEFAULT_ANCHOR:
            raise ValueError(f"anchor {anchor[0]!r} is not one of the agents {names}")
        anchor = None
    anchor_index = None if anchor is None else index[anchor[0]]
    fit = fit_with_intervals(
        len(names),
        [
            PairPoints(
                index[p.agents[0]],
                index[p.agents[1]],
                p.group_points(),
                p.rotations * p.comparisons,
            )
            for p in run.pairs
        ],
        prior=RATING_PRIOR,
        bootstrap=bootstrap,
        seed=seed,
        anchor=anchor_index,
        anchor_rating=ELO_CENTER if anchor is None else anchor[1],
    )
    point, lo, hi = fit.ratings, fit.low, fit.high
    order = sorted(names, key=lambda n: (-point[index[n]], n))
    score: dict[str, dict[str, float]] = {n: {} for n in names}
    count: dict[str, dict[str, int]] = {n: {} for n in names}
    for p in run.pairs:
        a, b = p.agents
        score[a][b], score[b][a] = p.score, 1.0 - p.score
        count[a][b] = count[b][a] = p.matches
    return RatingTable(
        agents=order,
        ratings={n: float(point[index[n]]) for n in order},
        intervals={n: (float(lo[index[n]]), float(hi[index[n]])) for n in order},
        score={a: {b: score[a][b] for b in order if b != a} for a in order},
        matches={a: {b: count[a][b] for b in order if b != a} for a in order},
        pairs=list(run.pairs),
        anchor=anchor,
        bootstrap=bootstrap,
    )


# ---------------------------------------------------------------------- command line


def _number(p: argparse.ArgumentParser, flag: str, spec: str, text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        p.error(f"{flag} {spec!r}: {text!r} is not {'an integer' if kind is int else 'a number'}")


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(  # errors are one line: the program's name and the problem
        prog=PROG,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--agents", nargs="+", required=True, metavar="SPEC")
    p.add_argument("--matches", type=int, default=200, help="matches per pair (default 200)")
    p.add_argument(
        "--matches-for",
        nargs=2,
        action="append",
        default=[],
        metavar=("SPEC", "N"),
        help="at most N matches in every pair with SPEC (repeatable)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rules", default="standard", help="a preset (default standard)")
    p.add_argument(
        "--players",
        type=int,
        default=2,
        help="2 to 4 (default 2); 4 with --partnerships for two teams",
    )
    p.add_argument("--partnerships", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--workers", type=int, default=1)
    add_ray_argument(p, "the pairs")
    p.add_argument("--results", type=Path, help="the JSON file of stored pairs (read and extended)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates")
    p.add_argument(
        "--anchor",
        nargs=2,
        metavar=("SPEC", "RATING"),
        help="pin one agent's rating (default: random 1000 when random plays, else a mean of 1500)",
    )
    args = p.parse_args(argv)
    matches_for = {spec: _number(p, "--matches-for", spec, n, int) for spec, n in args.matches_for}
    anchor = DEFAULT_ANCHOR
    if args.anchor is not None:
        anchor = (args.anchor[0], _number(p, "--anchor", *args.anchor, float))
    if args.results is not None:
        try:
            check_writable(args.results, "--results")
        except OutputError as exc:
            p.error(str(exc))
    try:
        rules = Rules.preset(args.rules, num_players=args.players, partnerships=args.partnerships)
    except BergenError as exc:
        p.error(f"bad rules: {exc}")
    if args.ray is not None:
        if args.workers > 1:
            p.error("--ray uses the Ray cluster's CPUs: leave out --workers")
        try:
            join_ray(args.ray)
        except UsageError as exc:
            p.error(str(exc))
    try:
        run = round_robin(
            args.agents,
            rules,
            matches=args.matches,
            matches_for=matches_for,
            seed=args.seed,
            workers=args.workers,
            results=args.results,
            log=lambda line: print(line, file=sys.stderr, flush=True),
            backend="processes" if args.ray is None else "ray",
        )
        table = rating_table(
            run,
            bootstrap=args.bootstrap,
            seed=args.seed,
            anchor=anchor,
        )
    except ValueError as exc:
        p.error(str(exc))
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: each finished pair is already saved
        kept = f"the pairs finished so far are kept in {args.results}" if args.results else ""
        raise type(exc)(kept) from None
    reused = len(run.pairs) - len(run.played)
    print(
        f"{rules.describe()}\nduplicate, seed {args.seed}, {len(run.pairs)} pairs "
        f"({len(run.played)} played, {reused} from {args.results}), "
        f"{args.bootstrap} bootstrap replicates"
        + (f", {table.anchor[0]} pinned at {table.anchor[1]:.0f}" if table.anchor else "")
    )
    print()
    print(table.markdown())
    print()
    print(table.pairs_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(run(PROG, main))
