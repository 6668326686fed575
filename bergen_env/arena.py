"""Tournaments between agents: duplicate deals, seat rotation, statistics with intervals, ratings.

Usage::

    from bergen_env.arena import run_tournament
    from bergen_env.rules import Rules

    result = run_tournament(["greedy", "random"], Rules.preset("standard"), matches=200)
    result.agents["greedy"].match_win_rate, result.agents["greedy"].ci95
    print(result.table())

**Seatings.** A *lineup* assigns an agent to every seat. Individual play uses every ordered
choice of ``num_players`` distinct agents (all seat permutations when there are as many agents
as seats; a round robin of every seating when there are more, e.g. a 2-player league of 4
agents). Partnerships take 2 agents (A in seats 0 & 2 against B in 1 & 3, and swapped) or 4
(A & C against B & D, partners kept together: every one of the 8 seatings that keeps the pairs).

**Duplicate format** (default). A *deal group* is one deal sequence, fixed by the seed
``SeedSequence(seed, spawn_key=(0, group))``: the engine's RNG only deals, so the same
``BergenState(rules, seed=...)`` deals the same tiles whatever the players do. Each group is
played once per lineup, so luck of the deal cancels; ``matches`` is rounded up to whole groups.
With ``duplicate=False`` every match has its own deals and the lineups still rotate match by match.
Agent RNGs come from ``SeedSequence(seed, spawn_key=(1, group, rotation, seat))``, so a seeded
tournament gives identical records whatever ``workers`` is; statistics are computed from the
per-match records in (group, rotation) order.

**Statistics** per agent (for an agent with a partner or two seats, its *side*'s outcomes):
match-win rate with a 95% Wilson interval; mean points per match (its side's final score) and per
hand (final scores summed over matches / hands played, so leftover penalties count); hand-win rate
(hands that ended by domino or block and that its side won); headers it scored (count and points,
the opening double included, measured as the mover's score change on a play minus that play's
hand-end points); blocked hands its side won; mean match length in hands. A match still running
after ``max_hands`` hands has no winner and counts as unfinished (not a win for anyone); a tied
single-hand match (Draw) is no win for anyone either, and counted in ``config["tied"]``.
Head-to-head: the share of shared matches in which one agent placed ahead of another (the match
winner first, then by final score; ties count half; partners are not compared). Ratings: a
Bradley-Terry fit of those pairwise outcomes on the Elo scale (:mod:`bergen_env.ratings`).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, action_str
from bergen_env.agents import base as agent_base
from bergen_env.agents.base import Agent, make_agent, parse_agent_spec
from bergen_env.engine import BergenState
from bergen_env.env_options import DEFAULT_MAX_HANDS
from bergen_env.errors import IllegalActionError
from bergen_env.observation import Encoder
from bergen_env.parent_watch import die_with_parent
from bergen_env.policy_file import PolicyFileError, describe_rules, rules_difference
from bergen_env.ratings import elo_ratings
from bergen_env.rules import Rules
from bergen_env.stats import mean_interval, wilson_interval
from bergen_env.stop import check_stop, future_result
from bergen_env.validation import check_int, is_int

DEAL_STREAM = 0
AGENT_STREAM = 1
#: Added to every pair of the head-to-head matrix before the Bradley-Terry fit (virtual games).
RATING_PRIOR = 1.0

AgentSource = str | Agent
#: Where :func:`run_tournament` plays: local worker processes, or Ray tasks.
BACKENDS = ("processes", "ray")


# ---------------------------------------------------------------------- records


@dataclass
class MatchRecord:
    """What one match produced; tournament statistics are computed from these alone."""

    group: int
    rotation: int
    lineup: tuple[int, ...]  # agent index per seat
    winner: int | None  # winning side; None for an unfinished or tied match
    scores: tuple[int, ...]  # final score per side
    hands: int  # hands played (the last one possibly cut short by the target)
    hands_ended: int  # hands that ended by domino or block
    hands_won: tuple[int, ...]  # per side
    blocked_won: tuple[int, ...]  # per side
    headers: tuple[int, ...]  # per seat: headers scored
    header_points: tuple[int, ...]  # per seat
    deals: list[dict[str, list]] | None = None  # per hand played, when asked for
    replay: dict[str, Any] | None = field(default=None, repr=False)
    tied: bool = False  # the match ended with no winner (a single-hand Draw blocked and tied)


@dataclass
class AgentStats:
    """One agent's results over a tournament."""

    name: str
    matches: int
    wins: int
    unfinished: int
    match_win_rate: float
    ci95: tuple[float, float]
    mean_points_per_match: float
    points_per_match_ci95: tuple[float, float]
    mean_points_per_hand: float
    hands: int
    hands_ended: int
    hands_won: int
    hand_win_rate: float
    headers: int
    header_points: int
    blocked_won: int
    mean_match_hands: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci95"] = list(self.ci95)
        d["points_per_match_ci95"] = list(self.points_per_match_ci95)
        return d


# ---------------------------------------------------------------------- seatings and names


def seat_lineups(num_agents: int, rules: Rules) -> list[tuple[int, ...]]:
    """Every lineup (agent index per seat) a deal group is played with, identity first."""
    n = rules.num_players
    if rules.partnerships:
        if num_agents not in (2, 4):
            raise ValueError(
                f"partnerships take 2 agents (one per team) or 4 (A & C vs B & D), got {num_agents}"
            )
        base = (0, 1, 0, 1) if num_agents == 2 else (0, 1, 2, 3)
        out: list[tuple[int, ...]] = []
        for perm in itertools.permutations(range(4)):
            if {perm[0], perm[2]} in ({0, 2}, {1, 3}):  # partners stay partners
                lineup = tuple(base[p] for p in perm)
                if lineup not in out:
                    out.append(lineup)
        return out
    if num_agents < n:
        raise ValueError(
            f"individual play with {n} players needs at least {n} agents, got {num_agents}"
        )
    return list(itertools.permutations(range(num_agents), n))


def agent_names(agents: Sequence[AgentSource]) -> list[str]:
    """Display names: the agent string, with ``#k`` (k from 1) when a string appears twice."""
    raw = []
    for a in agents:
        if isinstance(a, Agent):
            raw.append(a.name if a.name != Agent.name else type(a).__name__)
        else:
            raw.append(str(a))
    counts = {name: raw.count(name) for name in raw}
    seen: dict[str, int] = {}
    out = []
    for name in raw:
        if counts[name] > 1:
            seen[name] = seen.get(name, 0) + 1
            out.append(f"{name}#{seen[name]}")
        else:
            out.append(name)
    return out


def recorded_rules(agents: Sequence[AgentSource]) -> Rules | None:
    """The rules the trained policies among ``agents`` record (an agent's ``trained_rules``,
    e.g. a ``policy:`` file's header), or ``None`` if none records any.

    Agent strings are built to read their files. Policies that record different rules are a
    :class:`~bergen_env.policy_file.PolicyFileError` naming them and where they differ.
    """
    found: list[tuple[str, Rules]] = []
    built: dict[str, Agent] = {}  # one agent per distinct string
    for name, source in zip(agent_names(agents), agents):
        if isinstance(source, str):
            agent = built[source] = built.get(source) or make_agent(source)
        else:
            agent = source
        trained = getattr(agent, "trained_rules", None)
        if isinstance(trained, Rules):
            found.append((name, trained))
    for name, trained in found[1:]:
        first, rules = found[0]
        differ = rules_difference(rules, trained)
        if differ:
            raise PolicyFileError(
                f"{first} ({describe_rules(rules)}) and {name} ({describe_rules(trained)}) were "
                f"trained for different rules ({'; '.join(differ)}): name the rules to play "
                f"(rules=..., --rules)"
            )
    return found[0][1] if found else None


# ---------------------------------------------------------------------- one match


def _seed_rng(seed: int | np.random.SeedSequence | np.random.Generator) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def play_match(
    rules: Rules,
    agents: Sequence[Agent],
    deal_seed: int | np.random.SeedSequence | np.random.Generator,
    agent_seeds: Sequence[int | np.random.SeedSequence | np.random.Generator],
    *,
    max_hands: int = DEFAULT_MAX_HANDS,
    names: Sequence[str] | None = None,
    replay_seed: int | None = None,
    keep_deals: bool = False,
) -> MatchRecord:
    """Play one match with ``agents[seat]`` in each seat through the engine.

    Every agent is reset with its seat and ``agent_seeds[seat]``. ``names`` (per seat) label
    errors and, with ``replay_seed`` given, a replay record (:mod:`bergen_env.replay`) is kept in
    ``record.replay``. An illegal action is an :class:`IllegalActionError` naming the agent.
    The observation is encoded only for agents with ``needs_observation`` and the public view
    built only for agents with ``needs_view`` (both default True); the others get ``None``.
    """
    n = rules.num_players
    if len(agents) != n or len(agent_seeds) != n:
        raise ValueError(f"play_match needs one agent and one seed per seat ({n})")
    if names is None:
        names = [a.name for a in agents]
    state = BergenState(rules, seed=_seed_rng(deal_seed))
    for seat, agent in enumerate(agents):
        agent.reset(rules, seat, _seed_rng(agent_seeds[seat]))
    needs_obs = [getattr(a, "needs_observation", True) for a in agents]
    needs_view = [getattr(a, "needs_view", True) for a in agents]
    encoder = Encoder(rules) if any(needs_obs) else None
    recorder = None
    if replay_seed is not None:
        from bergen_env.replay import MatchRecorder

        recorder = MatchRecorder(state, list(names), seed=replay_seed)
    side_of = rules.side_of
    headers = [0] * n
    header_points = [0] * n
    deals = [_deal_of(state)] if keep_deals else None
    hand = state.hand_number
    while not state.terminal and state.hand_number < max_hands:
        seat = state.current_player
        view = state.public_view(seat) if needs_view[seat] else None
        obs = encoder.observe(state, seat) if needs_obs[seat] else None
        action = agents[seat].act(obs, state.legal_mask(), view)
        if not is_int(action) or not state.is_legal(int(action)):
            raise IllegalActionError(_illegal_message(names[seat], seat, action, state))
        a = int(action)
        if a < DRAW or a >= DOUBLE_PLAY:  # a play: its score change beyond hand-end points
            side = side_of[seat]
            before = state.scores[side]
            results = len(state.hand_results)
            state.apply_unchecked(a)
            gained = state.scores[side] - before
            gained -= sum(r.points[side] for r in state.hand_results[results:])
            if gained > 0:
                headers[seat] += 1
                header_points[seat] += gained
        else:
            state.apply_unchecked(a)
        if recorder is not None:
            recorder.record(seat, a)
        if deals is not None and state.hand_number != hand and not state.terminal:
            deals.append(_deal_of(state))
        hand = state.hand_number
    played = state.hand_number + 1 if state.terminal else state.hand_number
    sides = rules.num_sides
    hands_won = [0] * sides
    blocked_won = [0] * sides
    for r in state.hand_results:
        if r.winner is not None:
            hands_won[r.winner] += 1
            if r.reason == "blocked":
                blocked_won[r.winner] += 1
    return MatchRecord(
        group=-1,
        rotation=-1,
        lineup=(),
        winner=state.winner if state.terminal else None,
        tied=state.terminal and state.winner is None,
        scores=tuple(state.scores),
        hands=played,
        hands_ended=len(state.hand_results),
        hands_won=tuple(hands_won),
        blocked_won=tuple(blocked_won),
        headers=tuple(headers),
        header_points=tuple(header_points),
        deals=deals[:played] if deals is not None else None,
        replay=recorder.finish() if recorder is not None else None,
    )


def _deal_of(state: BergenState) -> dict[str, list]:
    return {
        "hands": [state.hand_tiles(s) for s in range(state.num_players)],
        "boneyard": list(state.boneyard),
    }


def _illegal_message(name: str, seat: int, action: Any, state: BergenState) -> str:
    try:
        text = f"{action} ({action_str(int(action))})"
    except Exception:
        text = repr(action)
    legal = state.legal_actions_text()
    return (
        f"agent {name!r} (seat {seat}) chose the illegal action {text} in hand "
        f"{state.hand_number}; legal actions were: {legal}"
    )


# ---------------------------------------------------------------------- playing many matches


@dataclass(frozen=True)
class _Plan:
    """Everything a worker needs to play its share of matches."""

    rules: Rules
    sources: tuple[AgentSource, ...]
    names: tuple[str, ...]
    lineups: tuple[tuple[int, ...], ...]
    seed: int
    duplicate: bool
    max_hands: int
    replays: bool
    keep_deals: bool


class _Table:
    """The agent instances of one process: one per (agent, copy) for agents in several seats."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        copies = [0] * len(plan.sources)
        for lineup in plan.lineups:
            for i in set(lineup):
                copies[i] = max(copies[i], lineup.count(i))
        self.instances: dict[tuple[int, int], Agent] = {}
        for i, source in enumerate(plan.sources):
            for c in range(copies[i]):
                if isinstance(source, Agent):
                    agent = source if c == 0 else copy.deepcopy(source)
                else:
                    agent = make_agent(source)
                self.instances[(i, c)] = agent

    def play(self, group: int, rotation: int) -> MatchRecord:
        plan = self.plan
        lineup = plan.lineups[rotation]
        seats = []
        used: dict[int, int] = {}
        for i in lineup:
            seats.append(self.instances[(i, used.get(i, 0))])
            used[i] = used.get(i, 0) + 1
        n = len(lineup)
        record = play_match(
            plan.rules,
            seats,
            np.random.SeedSequence(plan.seed, spawn_key=(DEAL_STREAM, group)),
            [
                np.random.SeedSequence(plan.seed, spawn_key=(AGENT_STREAM, group, rotation, s))
                for s in range(n)
            ],
            max_hands=plan.max_hands,
            names=[plan.names[i] for i in lineup],
            replay_seed=plan.seed if plan.replays else None,
            keep_deals=plan.keep_deals,
        )
        record.group, record.rotation, record.lineup = group, rotation, lineup
        if record.replay is not None:
            record.replay["group"] = group
            record.replay["rotation"] = rotation
        return record

    def play_many(self, specs: Sequence[tuple[int, int]]) -> list[MatchRecord]:
        """The matches of ``specs``, checking for a stop request (:mod:`bergen_env.stop`)
        before each."""
        records = []
        for g, r in specs:
            check_stop()
            records.append(self.play(g, r))
        return records


_WORKER_TABLE: _Table | None = None


def _worker_init(
    plan: _Plan, kinds: Sequence[tuple[str, str, Any]], parent: int | None = None
) -> None:
    """End with process ``parent`` (a pool's; None: a Ray worker, which Ray manages); make its
    agent kinds known here, then build the agents once."""
    global _WORKER_TABLE
    if parent is not None:
        die_with_parent(parent)
    for kind, module, factory in kinds:
        if agent_base.agent_factory(kind) is None:
            import_module(module)  # registering modules register on import
        if agent_base.agent_factory(kind) is None and factory is not None:
            agent_base.register_agent(kind, factory)
    _WORKER_TABLE = _Table(plan)


def _worker_play(specs: Sequence[tuple[int, int]]) -> list[MatchRecord]:
    assert _WORKER_TABLE is not None, "worker not initialized"
    return _WORKER_TABLE.play_many(specs)


def _task_play(
    shared: tuple[_Plan, list[tuple[str, str, Any]]], specs: Sequence[tuple[int, int]]
) -> list[MatchRecord]:
    """One Ray task (:mod:`bergen_env.ray_tasks`): the worker keeps its agents between the
    tasks of one tournament, as a pool process does between its chunks."""
    plan, kinds = shared
    if _WORKER_TABLE is None or _WORKER_TABLE.plan != plan:
        _worker_init(plan, kinds)
    return _worker_play(specs)


def _kinds_for_workers(sources: Sequence[AgentSource]) -> list[tuple[str, str, Any]]:
    out = []
    for kind in sorted({parse_agent_spec(s)[0] for s in sources if isinstance(s, str)}):
        registered = agent_base.agent_factory(kind)
        factory = registered
        try:
            pickle.dumps(factory)
        except Exception:
            factory = None  # a lambda: rely on importing its module
        out.append((kind, getattr(registered, "__module__", ""), factory))
    return out


def _chunks(specs: list[tuple[int, int]], size: int) -> list[list[tuple[int, int]]]:
    return [specs[i : i + size] for i in range(0, len(specs), size)]


def _play_all(
    plan: _Plan, specs: list[tuple[int, int]], workers: int, chunk: int, backend: str = "processes"
) -> Iterator[list[MatchRecord]]:
    """Records chunk by chunk, in the order of ``specs`` whatever the worker count or backend."""
    if workers == 1 and backend == "processes":
        table = _Table(plan)
        for part in _chunks(specs, chunk):
            yield table.play_many(part)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    for source in plan.sources:  # fail fast, here, on an unknown agent, a bad file or rules
        make_agent(source).reset(plan.rules, 0, np.random.default_rng(0))  # type: ignore[arg-type]
    if backend == "ray":  # tasks of whole deal groups
        from bergen_env import ray_tasks

        unit = len(plan.lineups) if plan.duplicate else 1
        size = unit * ray_tasks.task_units(math.ceil(len(specs) / unit), unit)
        shared = (plan, _kinds_for_workers(plan.sources))
        yield from ray_tasks.in_order(_task_play, shared, _chunks(specs, size))
        return
    context = multiprocessing.get_context("spawn")  # safe with torch; same everywhere
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_worker_init,
        initargs=(plan, _kinds_for_workers(plan.sources), os.getpid()),
    ) as pool:
        futures = [pool.submit(_worker_play, part) for part in _chunks(specs, chunk)]
        try:
            for future in futures:
                yield future_result(future)
        except BaseException:  # Ctrl-C, SIGTERM, an error: stop the workers now, not after
            # every chunk (the pool then fails the pending chunks; cancelling them as well
            # races with that in Python 3.11's executor)
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            raise


# ---------------------------------------------------------------------- the tournament


@dataclass
class TournamentResult:
    """Per-agent statistics, head-to-head shares, ratings, the configuration and the records."""

    agents: dict[str, AgentStats]
    head_to_head: dict[str, dict[str, float | None]]
    ratings: dict[str, float]
    config: dict[str, Any]
    records: list[MatchRecord] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: ``{"agents": {NAME: {...}}, "head_to_head", "ratings", "config"}``."""
        return {
            "agents": {name: s.to_dict() for name, s in self.agents.items()},
            "head_to_head": self.head_to_head,
            "ratings": self.ratings,
            "config": self.config,
        }

    def table(self) -> str:
        """A readable table for the terminal."""
        c = self.config
        lines = [
            f"{c['rules_description']}",
            f"{c['matches']} matches ({c['groups']} deal groups x {c['rotations']} seatings"
            f"{', duplicate' if c['duplicate'] else ', no duplicate'}), seed {c['seed']}"
            + (f", {c['unfinished']} unfinished" if c["unfinished"] else ""),
            "",
        ]
        header = (
            "agent",
            "matches",
            "win rate [95% CI]",
            "pts/match",
            "pts/hand",
            "hand win",
            "headers (pts)",
            "blocked won",
            "hands/match",
        )
        rows = [header]
        for s in self.agents.values():
            rows.append(
                (
                    s.name,
                    str(s.matches),
                    f"{s.match_win_rate:.3f} [{s.ci95[0]:.3f}, {s.ci95[1]:.3f}]",
                    f"{s.mean_points_per_match:.2f}",
                    f"{s.mean_points_per_hand:.3f}",
                    f"{s.hand_win_rate:.3f}",
                    f"{s.headers} ({s.header_points})",
                    str(s.blocked_won),
                    f"{s.mean_match_hands:.2f}",
                )
            )
        lines += _format_rows(rows)
        if len(self.agents) > 2:
            names = list(self.agents)
            lines += ["", "head to head (row placed ahead of column):"]
            h2h = [("", *names)]
            for a in names:
                h2h.append(
                    (
                        a,
                        *(
                            "-"
                            if self.head_to_head[a][b] is None
                            else f"{self.head_to_head[a][b]:.3f}"
                            for b in names
                        ),
                    )
                )
            lines += _format_rows(h2h)
            lines += ["", "ratings (Bradley-Terry, Elo scale):"]
            ranked = sorted(self.ratings.items(), key=lambda kv: -kv[1])
            lines += _format_rows([(name, f"{r:.0f}") for name, r in ranked])
        return "\n".join(lines)


def _format_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(w) if k == 0 else cell.rjust(w)
            for k, (cell, w) in enumerate(zip(row, widths))
        )
        for row in rows
    ]


def _check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    return check_int(name, value, minimum=minimum, label="argument", error=ValueError)


def run_tournament(
    agents: Sequence[AgentSource],
    rules: Rules | None = None,
    matches: int = 2000,
    seed: int = 0,
    duplicate: bool = True,
    workers: int = 1,
    progress: bool = False,
    replays: str | Path | None = None,
    max_hands: int = DEFAULT_MAX_HANDS,
    *,
    keep_deals: bool = False,
    backend: str = "processes",
) -> TournamentResult:
    """Play ``matches`` matches between ``agents`` under ``rules``; see the module docstring.

    ``rules=None`` plays the rules the trained policies among ``agents`` record
    (:func:`recorded_rules`); a ValueError if none records any.

    ``agents`` are agent strings (built with :func:`make_agent` in each process) or
    :class:`Agent` instances (``workers=1`` only). ``replays`` names a JSON-lines file that gets
    every match (:mod:`bergen_env.replay` format plus its ``group`` and ``rotation``).
    ``keep_deals`` keeps each match's dealt hands in its record (for checking the format).
    Each process builds its agents once and ``reset``s them before every match, so an agent must
    not carry state from one match to the next (results would then depend on ``workers``).
    ``backend="ray"`` plays the deal groups as Ray tasks instead of ``workers`` processes, on the
    Ray instance this process joined (:func:`bergen_env.ray_tasks.connect`; a local one if
    none), with the same records for the same seed.
    """
    if rules is None:
        rules = recorded_rules(agents)
        if rules is None:
            raise ValueError(
                "no rules given and no agent records the rules it was trained for: pass rules, "
                "e.g. Rules.preset('standard')"
            )
    if not isinstance(rules, Rules):
        raise TypeError(f"rules must be a bergen_env.Rules, got {type(rules).__name__}")
    matches = _check_positive_int("matches", matches)
    seed = _check_positive_int("seed", seed, minimum=0)
    workers = _check_positive_int("workers", workers)
    max_hands = _check_positive_int("max_hands", max_hands)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    if backend == "ray" and workers > 1:
        raise ValueError("backend='ray' runs on the Ray cluster's CPUs: leave workers at 1")
    sources = tuple(agents)
    if len(sources) < 2:
        raise ValueError(f"a tournament needs at least 2 agents, got {len(sources)}")
    for a in sources:
        if isinstance(a, Agent):
            if workers > 1 or backend == "ray":
                raise ValueError(
                    f"agent {a!r} is an instance: pass agent strings to use workers > 1 or Ray"
                )
        elif not isinstance(a, str):
            raise TypeError(f"an agent is an agent string or an Agent, got {a!r}")
        else:
            parse_agent_spec(a)
    names = tuple(agent_names(sources))
    lineups = tuple(seat_lineups(len(sources), rules))
    rotations = len(lineups)
    if duplicate:
        groups = math.ceil(matches / rotations)
        specs = [(g, r) for g in range(groups) for r in range(rotations)]
    else:
        groups = matches
        specs = [(i, i % rotations) for i in range(matches)]
    plan = _Plan(
        rules, sources, names, lineups, seed, duplicate, max_hands, bool(replays), keep_deals
    )

    bar = _progress_bar(len(specs)) if progress else None
    if replays:
        Path(replays).write_text("", encoding="utf-8")
        from bergen_env.replay import write_jsonl
    chunk = max(1, min(64, len(specs) // (8 * workers) or 1))
    records: list[MatchRecord] = []
    try:
        for part in _play_all(plan, specs, workers, chunk, backend):
            if replays:
                write_jsonl(replays, [r.replay for r in part], append=True)
                for r in part:
                    r.replay = None
            records.extend(part)
            if bar is not None:
                bar.update(len(part))
    finally:
        if bar is not None:
            bar.close()
    records.sort(key=lambda r: (r.group, r.rotation))

    config = {
        "agents": list(names),
        "agent_specs": [a if isinstance(a, str) else repr(a) for a in sources],
        "rules": rules.to_dict(),
        "rules_description": rules.describe(),
        "num_players": rules.num_players,
        "partnerships": rules.partnerships,
        "duplicate": duplicate,
        "seed": seed,
        "matches_requested": matches,
        "matches": len(records),
        "groups": groups if duplicate else len(records),
        "rotations": rotations if duplicate else 1,
        "lineups": [[names[i] for i in lineup] for lineup in lineups],
        "workers": workers,
        "max_hands": max_hands,
        "unfinished": sum(r.winner is None and not r.tied for r in records),
        "tied": sum(r.tied for r in records),
        "replays": str(replays) if replays else None,
        "note": (
            f"matches rounded up to whole deal groups of {rotations} seatings"
            if duplicate and len(records) != matches
            else ""
        ),
    }
    return summarize(records, names, rules, config)


def _progress_bar(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "progress=True needs tqdm (pip install tqdm, part of the train extra)"
        ) from None
    return tqdm(total=total, unit="match", desc="matches")


def placed_ahead(record: MatchRecord, side: int, other: int) -> float:
    """1.0 if ``side`` placed ahead of ``other`` in the match, 0.5 if level, else 0.0.

    The match winner places first; otherwise (no winner, or neither side won) the higher final
    score. This is the pairwise outcome behind head-to-head shares and ratings.
    """
    mine = (side == record.winner, record.scores[side])
    theirs = (other == record.winner, record.scores[other])
    return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


def summarize(
    records: Sequence[MatchRecord], names: Sequence[str], rules: Rules, config: dict[str, Any]
) -> TournamentResult:
    """Per-agent statistics, head-to-head and ratings from match records (in their order)."""
    k = len(names)
    side_of = rules.side_of
    stats: dict[str, AgentStats] = {}
    ahead = np.zeros((k, k))  # ahead[i, j]: matches where i placed ahead of j (ties half)
    met = np.zeros((k, k))
    per_agent: list[dict[str, Any]] = [
        {
            "points": [],
            "wins": 0,
            "unfinished": 0,
            "hands": 0,
            "ended": 0,
            "hands_won": 0,
            "headers": 0,
            "header_points": 0,
            "blocked": 0,
        }
        for _ in range(k)
    ]
    for r in records:
        seats_of: dict[int, list[int]] = {}
        for seat, i in enumerate(r.lineup):
            seats_of.setdefault(i, []).append(seat)
        side = {i: side_of[seats[0]] for i, seats in seats_of.items()}
        for i, seats in seats_of.items():
            acc = per_agent[i]
            s = side[i]
            acc["points"].append(r.scores[s])
            acc["wins"] += r.winner == s
            acc["unfinished"] += r.winner is None and not r.tied
            acc["hands"] += r.hands
            acc["ended"] += r.hands_ended
            acc["hands_won"] += r.hands_won[s]
            acc["blocked"] += r.blocked_won[s]
            acc["headers"] += sum(r.headers[x] for x in seats)
            acc["header_points"] += sum(r.header_points[x] for x in seats)
        for i, j in itertools.permutations(seats_of, 2):
            if side[i] == side[j]:
                continue
            met[i, j] += 1
            ahead[i, j] += placed_ahead(r, side[i], side[j])
    for i, name in enumerate(names):
        acc = per_agent[i]
        n = len(acc["points"])
        if n == 0:
            raise ValueError(f"agent {name!r} played no match")
        mean, lo, hi = mean_interval(acc["points"])
        stats[name] = AgentStats(
            name=name,
            matches=n,
            wins=int(acc["wins"]),
            unfinished=int(acc["unfinished"]),
            match_win_rate=acc["wins"] / n,
            ci95=wilson_interval(int(acc["wins"]), n),
            mean_points_per_match=mean,
            points_per_match_ci95=(lo, hi),
            mean_points_per_hand=float(sum(acc["points"]) / acc["hands"]) if acc["hands"] else 0.0,
            hands=int(acc["hands"]),
            hands_ended=int(acc["ended"]),
            hands_won=int(acc["hands_won"]),
            hand_win_rate=acc["hands_won"] / acc["ended"] if acc["ended"] else 0.0,
            headers=int(acc["headers"]),
            header_points=int(acc["header_points"]),
            blocked_won=int(acc["blocked"]),
            mean_match_hands=acc["hands"] / n,
        )
    head_to_head = {
        a: {b: (float(ahead[i, j] / met[i, j]) if met[i, j] else None) for j, b in enumerate(names)}
        for i, a in enumerate(names)
    }
    elo = elo_ratings(ahead, prior=RATING_PRIOR)
    ratings = {name: float(elo[i]) for i, name in enumerate(names)}
    return TournamentResult(stats, head_to_head, ratings, config, list(records))
