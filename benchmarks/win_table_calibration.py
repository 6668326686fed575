"""How well a match-win table predicts real matches, and the table of the hands actually played.

python -m benchmarks.win_table_calibration [--agent heuristic] [--opponent heuristic]
    [--players 2] [--partnerships] [--rules standard] [--matches 2000] [--seed 0]
    [--json PATH] [--save-table PATH]

``search`` values the end of a hand by :func:`~bergen_env.agents.match_value.win_table`: the
chance to win the match from the new scores, estimated from hands the heuristic plays in every
seat at 0-0 with no target in reach. This plays ``--matches`` real matches, ``--agent`` on one
side (the side rotates with the match) and ``--opponent`` on the others, and records at the
start of every hand the score line (the agent's side first, the others in turn order) and who
won the match in the end. A hand cut short by a side reaching the target is finished on a copy
without a target, so every hand's scoring events are whole (headers before end caps, as
:func:`~bergen_env.agents.match_value.hand_events` records them).

Two tables are scored on the hand starts of the odd-numbered matches after their first hands
(every first hand starts at 0-0, where the table's chance is printed beside the agent's match
win rate): the shipped ``win_table`` and the *in-match* table, built by
:func:`~bergen_env.agents.match_value.table_from_events` from the hands of the even-numbered
matches (each hand once per rotation of the sides when agent and opponent are the same, else
with the agent's side as side 0). Printed per table: Brier score, log-loss and a reliability
table (hand starts per bin of predicted chance, mean prediction, observed share of wins).
``--save-table`` writes the in-match table of all matches (``numpy.save``; ``[own, other...]``,
scores from the table's lowest).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW
from bergen_env.agents import make_agent
from bergen_env.agents.match_value import (
    Event,
    WinTable,
    every_rotation,
    has_table,
    table_from_events,
    win_table,
)
from bergen_env.engine import BergenState
from bergen_env.observation import Encoder
from bergen_env.rules import Rules
from bergen_env.scoring import play_result

BINS = np.linspace(0.0, 1.0, 11)


@dataclass
class RecordedHand:
    """One hand of a match: the score line at its start and its scoring events, both with the
    recording side as side 0 and the others in turn order after it."""

    start: tuple[int, ...]
    events: list[Event]


@dataclass
class RecordedMatch:
    hands: list[RecordedHand]
    winner: int  # relative side index, as above


def record_matches(
    rules: Rules, agent: str, opponent: str, matches: int, seed: int
) -> list[RecordedMatch]:
    """Play ``matches`` matches with ``agent`` on side ``m % sides`` of match ``m`` and
    ``opponent`` elsewhere; every hand's start and whole scoring events."""
    if not has_table(rules):
        raise ValueError(
            f"rules {rules.name!r} with {rules.num_sides} sides have no match-win table"
        )
    free = rules.replace(target=10_000)
    sides = rules.num_sides
    encoder = Encoder(rules)
    out = []
    for m, child in enumerate(np.random.SeedSequence(seed).spawn(matches)):
        deal, *seat_seeds = child.spawn(1 + rules.num_players)
        own = m % sides
        agents = [
            make_agent(agent if rules.side_of[seat] == own else opponent)
            for seat in range(rules.num_players)
        ]
        for seat, a in enumerate(agents):
            a.reset(rules, seat, np.random.default_rng(seat_seeds[seat]))
        state = BergenState(rules, seed=np.random.default_rng(deal))
        hands = []
        while not state.terminal:
            start = tuple(state.scores[(own + k) % sides] for k in range(sides))
            events, state = _play_hand(state, agents, encoder, free, own)
            hands.append(RecordedHand(start, events))
        assert state.winner is not None  # a match to a target always has one
        out.append(RecordedMatch(hands, (state.winner - own) % sides))
    return out


def _play_hand(
    state: BergenState, agents: Sequence[Any], encoder: Encoder, free: Rules, own: int
) -> tuple[list[Event], BergenState]:
    """Play the hand on ``state`` to its end; its events, and the state after it (the match's
    end state when a side reached the target during the hand)."""
    rules = state.rules
    sides = rules.num_sides
    hand = state.hand_number
    events: list[Event] = []
    ended: BergenState | None = None  # the real state once the match ended mid-hand
    while state.hand_number == hand and not state.terminal:
        seat = state.current_player
        agent = agents[seat]
        obs = encoder.observe(state, seat) if getattr(agent, "needs_observation", True) else None
        a = int(agent.act(obs, state.legal_mask(), state.public_view(seat)))
        side = rules.side_of[seat]
        if a < DRAW or a >= DOUBLE_PLAY:
            raw = play_result(rules.play_scoring, a, state.ends, tuple(state.end_dbl))[0]
            if raw:
                events.append(((side - own) % sides, raw, True))
            if ended is None:
                after = state.clone()
                after.apply_unchecked(a)
                if after.terminal and len(after.hand_results) == len(state.hand_results):
                    # The match ends here, mid-hand; the hand goes on with no target in reach.
                    # (The engine caches the target: a private call, in a benchmark only.)
                    ended = after
                    state.rules = free
                    state._cache_rules()
        results = len(state.hand_results)
        state.apply_unchecked(a)
        if len(state.hand_results) > results:
            points = state.hand_results[-1].points
            events.extend(((s - own) % sides, points[s], False) for s in range(sides) if points[s])
    return events, state if ended is None else ended


def _samples(rules: Rules, matches: Sequence[RecordedMatch], same: bool) -> list[list[Event]]:
    """The hands of ``matches`` for :func:`table_from_events`: every rotation of the sides when
    agent and opponent are the same, else as recorded (the agent's side as side 0)."""
    hands = [hand.events for match in matches for hand in match.hands]
    return every_rotation(hands, rules.num_sides) if same else hands


def score_table(table: WinTable, matches: Sequence[RecordedMatch]) -> dict[str, Any]:
    """Brier score, log-loss and reliability of ``table`` at the hand starts of ``matches``
    after their first hands (every first hand starts at 0-0: ``start_value`` is its chance)."""
    p = np.array([table(*h.start) for m in matches for h in m.hands[1:]])
    y = np.array([m.winner == 0 for m in matches for h in m.hands[1:]], dtype=float)
    q = np.clip(p, 1e-9, 1 - 1e-9)
    bins = []
    index = np.clip(np.searchsorted(BINS, p, side="right") - 1, 0, len(BINS) - 2)
    for b in range(len(BINS) - 1):
        sel = index == b
        if sel.any():
            bins.append(
                {
                    "bin": f"{BINS[b]:.1f}-{BINS[b + 1]:.1f}",
                    "starts": int(sel.sum()),
                    "predicted": float(p[sel].mean()),
                    "observed": float(y[sel].mean()),
                }
            )
    return {
        "starts": len(p),
        "brier": float(np.mean((p - y) ** 2)),
        "log_loss": float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))),
        "start_value": table(*(0,) * table.table.ndim),
        "bins": bins,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.win_table_calibration", description=__doc__
    )
    p.add_argument("--agent", default="heuristic")
    p.add_argument("--opponent", default="heuristic")
    p.add_argument("--players", type=int, default=2)
    p.add_argument("--partnerships", action="store_true")
    p.add_argument("--rules", default="standard")
    p.add_argument("--matches", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path)
    p.add_argument("--save-table", type=Path)
    args = p.parse_args(argv)
    if args.matches < 2:
        p.error(
            f"--matches must be at least 2 (one to build a table, one to score it), "
            f"got {args.matches}"
        )
    rules = Rules.preset(
        args.rules, num_players=args.players, partnerships=args.partnerships or None
    )
    matches = record_matches(rules, args.agent, args.opponent, args.matches, args.seed)
    same = args.agent == args.opponent
    fit, held = matches[0::2], matches[1::2]
    tables = {
        "shipped": win_table(rules),
        "in-match": table_from_events(rules, _samples(rules, fit, same)),
    }
    report: dict[str, Any] = {
        "agent": args.agent,
        "opponent": args.opponent,
        "rules": rules.name,
        "players": rules.num_players,
        "matches": args.matches,
        "seed": args.seed,
        "hands": sum(len(m.hands) for m in matches),
        "agent_match_win_rate": float(np.mean([m.winner == 0 for m in matches])),
        "tables": {name: score_table(t, held) for name, t in tables.items()},
    }
    print(
        f"{args.agent} against {args.opponent}, {rules.name} {rules.num_players}p: "
        f"{args.matches} matches, {report['hands']} hands, agent wins "
        f"{report['agent_match_win_rate']:.3f}; tables scored on the odd matches' later hands"
    )
    for name, r in report["tables"].items():
        print(
            f"\n{name}: {r['starts']} hand starts, Brier {r['brier']:.5f}, log-loss "
            f"{r['log_loss']:.5f}, chance at 0-0 {r['start_value']:.3f}"
        )
        print("| predicted | hand starts | mean prediction | observed |\n|---|---|---|---|")
        for b in r["bins"]:
            print(f"| {b['bin']} | {b['starts']} | {b['predicted']:.3f} | {b['observed']:.3f} |")
    if args.save_table:
        table = table_from_events(rules, _samples(rules, matches, same)).table
        np.save(args.save_table, table)
        print(f"\nin-match table of all {args.matches} matches: {args.save_table}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
