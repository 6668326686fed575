"""Print a recorded match move by move, or check a replay file against the engine.

    bergen-replay matches.jsonl                 # match 0
    bergen-replay matches.jsonl --match 3 --show-hands
    bergen-replay matches.jsonl --verify        # re-simulate every match

Matches, hands and events are numbered from 0, as in the engine and in error messages.
Replay files are written by ``bergen_env.training.play --replay`` and the arena (format in
:mod:`bergen_env.replay`).
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("replay"))

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from bergen_env.errors import BergenError
from bergen_env.render import hand_end_str, match_end_str
from bergen_env.replay import hands_at_end, record_rules, resimulate, scan_jsonl
from bergen_env.tiles import tile_str

from .cli import ArgumentParser

PROG = "bergen-replay"


def match_text(record: dict[str, Any], index: int = 0, show_hands: bool = False) -> str:
    """A match as text: the rules, each hand's moves with the points they scored, the ends."""
    rules = record_rules(record)
    agents = record["agents"]
    lines = [
        f"match {index}: {rules.describe()}",
        f"seed {record['seed']}; "
        + ", ".join(f"player_{s} {name}" for s, name in enumerate(agents)),
    ]
    scores = [0] * rules.num_sides
    labels = [f"player_{s} ({name})" for s, name in enumerate(agents)]
    width = max(len(label) for label in labels)
    for h, hand in enumerate(record["hands"]):
        deal, events = hand["deal"], hand["events"]
        leader = events[0]["seat"] if events else None
        lines.append(f"=== hand {h}" + (f": player_{leader} leads ===" if events else " ==="))
        if show_hands:
            for s, tiles in enumerate(deal["hands"]):
                lines.append(f"  player_{s} dealt: {' '.join(tile_str(t) for t in tiles)}")
            boneyard = " ".join(tile_str(t) for t in deal["boneyard"])
            lines.append(f"  boneyard (draw order): {boneyard}")
        for i, event in enumerate(events):
            after = list(event["scores"])
            delta = ", ".join(
                f"{_side_label(rules, side)} {after[side] - before:+d}"
                for side, before in enumerate(scores)
                if after[side] != before
            )
            seat = event["seat"]
            move = event.get("move") or str(event["action"])
            lines.append(f"  {i:3d}. {labels[seat]:<{width}} {move:<14}{delta:<22} scores {after}")
            scores = after
        if hand["result"] is not None:
            final = hands_at_end(deal, events)
            lines.append(f"=== hand {h} ends: " + hand_end_str(rules, hand["result"], final))
    hands = record["hands"]
    tied = (
        record["winner"] is None
        and rules.single_hand
        and bool(hands)
        and hands[-1]["result"] is not None
    )
    lines.append(match_end_str(rules, record["final_scores"], record["winner"], tied=tied))
    return "\n".join(lines)


def _side_label(rules: Any, side: int) -> str:
    return f"side {side}" if rules.partnerships else f"player_{side}"


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Print or check recorded Bergen matches.")
    p.add_argument("file", help="a replay file (JSON lines, one match per line)")
    p.add_argument("--match", type=int, default=0, metavar="K", help="match to print (from 0)")
    p.add_argument("--show-hands", action="store_true", help="also print each hand's deal")
    p.add_argument(
        "--verify", action="store_true", help="re-simulate every match through the engine"
    )
    return p


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Run the command line; ``stdout`` is injectable for tests."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out = stdout if stdout is not None else sys.stdout
    try:
        scan = scan_jsonl(args.file)
    except (OSError, BergenError) as exc:
        parser.error(str(exc))
    records = scan.records
    if not records:
        parser.error(f"replay file {args.file!r} holds no matches")
    if len(scan.problems) == len(records):
        parser.error(next(iter(scan.problems.values())))
    if not args.verify and args.match in scan.problems:
        parser.error(f"match {args.match} is damaged: {scan.problems[args.match]}")
    if scan.problems:  # a cut-off last line after a crash, say: the other matches still read
        print(
            f"{PROG}: {args.file}: damaged line(s) {', '.join(map(str, scan.damaged))} skipped "
            f"({next(iter(scan.problems.values()))})",
            file=sys.stderr,
        )
    if args.verify:
        intact = [k for k, record in enumerate(records) if record is not None]
        try:
            for k in intact:
                resimulate(records[k], match=k)
        except BergenError as exc:
            print(f"{args.file}: {exc}", file=out)
            return 1
        print(
            f"{args.file}: all {len(intact)} {'intact ' if scan.problems else ''}match(es) "
            "reproduce every recorded score",
            file=out,
        )
        return 1 if scan.problems else 0
    if not 0 <= args.match < len(records):
        parser.error(
            f"--match {args.match} is out of range: {args.file!r} holds {len(records)} "
            f"match(es), numbered 0..{len(records) - 1}"
        )
    try:
        text = match_text(records[args.match], args.match, args.show_hands)
    except (BergenError, KeyError, IndexError, ValueError) as exc:
        parser.error(f"{args.file}, match {args.match}: malformed record ({exc!r})")
    print(text, file=out)
    return 0
