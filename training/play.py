"""Play Bergen in the terminal against any agents, and optionally save the match as a replay.

    bergen-play --opponents heuristic
    bergen-play --opponents greedy policy:runs/x/final_model.safetensors --players 3 --seed 7
    bergen-play --opponents random --players 4 --partnerships --seat 1 --replay m.jsonl

You take one seat (``--seat``, default 0); the opponents fill the other seats in turn order (one
name fills them all). On your turn you see the line and its ends, every hand size, the boneyard,
the scores and your hand, and pick a legal move by its number. Input is read line by line, so a
match can be played from a pipe; end of input stops the match with a message. At the prompt,
``q`` or ``quit`` leaves the match and ``h``, ``help`` or ``?`` explains the moves. Without
``--rules`` the rules are those a policy among the opponents was trained for (``standard`` if
there is none).
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("play"))

import argparse
import select
import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from bergen_env.actions import DRAW, PASS, action_str
from bergen_env.agents import Agent, make_agent
from bergen_env.engine import BergenState, PublicView
from bergen_env.errors import BergenError, IllegalActionError
from bergen_env.observation import Encoder
from bergen_env.render import hand_end_str, match_end_str, pairs_line_str, scores_str
from bergen_env.replay import MatchRecorder, hands_at_end, write_jsonl
from bergen_env.rules import PRESETS, Rules
from bergen_env.stop import POLL_S, Terminated, check_stop
from bergen_env.tiles import tile_str

from .cli import ArgumentParser, UsageError, command_rules, register_policy_kinds, trust_pickle

PROG = "bergen-play"


class EndOfInput(Exception):
    """The person's input stream ended before the match did."""


class Quit(EndOfInput):
    """The person typed ``q`` or ``quit``."""


#: What the person may type at the move prompt besides a move number.
QUIT_WORDS = ("q", "quit")
HELP_WORDS = ("h", "help", "?")
HELP_TEXT = """\
type the number of a move and press Enter (the moves are listed under the position):
  [a|b]>left, [a|b]>right   lay tile [a|b] on that end of the line
  draw                      take a tile from the boneyard (the face-down stock)
  pass                      give up the turn (when no tile fits and none can be drawn)
  q, quit                   leave the match (a --replay file keeps it, unfinished)
  h, help, ?                this help"""


class HumanAgent(Agent):
    """A person at the keyboard: shows the position and reads a move number from a stream."""

    name = "human"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        isatty = getattr(self.stdin, "isatty", None)
        #: Echo each input line (when it does not come from a terminal).
        self.echo = not (isatty is not None and isatty())

    def _say(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView) -> int:
        legal = [int(a) for a in np.flatnonzero(action_mask)]
        if not legal:
            raise BergenError(f"player_{view.seat} has no legal move (is it their turn?)")
        self._say(position_str(view))
        for k, a in enumerate(legal, start=1):
            self._say(f"  {k}) {action_str(a)}")
        return legal[self._ask(len(legal)) - 1]

    def _read_line(self) -> str:
        """One line of input; from a terminal, checking for Ctrl-C while it waits (a read there
        returns at most one line, so nothing waits in a buffer that ``select`` cannot see)."""
        if not self.echo and hasattr(self.stdin, "fileno"):
            while not select.select([self.stdin], [], [], POLL_S)[0]:
                check_stop()
        line = self.stdin.readline()
        check_stop()
        return line

    def _ask(self, count: int) -> int:
        """Read a number in 1..count, asking again after bad input."""
        while True:
            print(f"your move (1-{count}): ", end="", file=self.stdout, flush=True)
            line = self._read_line()
            if line and self.echo:  # piped input: show it, so the transcript reads naturally
                print(line.rstrip("\n"), file=self.stdout, flush=True)
            if not line:
                self._say()
                raise EndOfInput
            text = line.strip()
            if text.lower() in QUIT_WORDS:
                raise Quit
            if text.lower() in HELP_WORDS:
                self._say(HELP_TEXT)
                continue
            if not text:
                self._say(f"please type the number of a move, 1 to {count} (h for help)")
                continue
            try:
                choice = int(text)
            except ValueError:
                self._say(
                    f"{text!r} is not a number: type the number of a move, 1 to {count} "
                    f"(h for help, q to quit)"
                )
                continue
            if not 1 <= choice <= count:
                self._say(f"{choice} is not a move number: choose 1 to {count}")
                continue
            return choice


def position_str(view: PublicView) -> str:
    """What the seat on turn sees: line, ends, hand sizes, boneyard, scores and own hand."""
    rules = view.rules
    if view.ends is None:
        ends = "none (empty line)"
    else:
        ends = ", ".join(
            f"{name} {num}" + (" (double)" if dbl else "")
            for name, num, dbl in zip(("left", "right"), view.ends, view.end_doubles)
        )
    sizes = ", ".join(
        ("you" if s == view.seat else f"player_{s}") + f" {n}"
        for s, n in enumerate(view.hand_sizes)
    )
    return "\n".join(
        [
            f"--- hand {view.hand_number}, your turn (player_{view.seat}) ---",
            f"line     : {pairs_line_str(view.line)}",
            f"ends     : {ends}",
            f"tiles    : {sizes}",
            f"boneyard : {view.boneyard_size} tiles ({view.drawable} drawable)",
            f"scores   : {scores_str(rules, view.scores)}",
            f"your hand: {' '.join(tile_str(t) for t in view.hand)}",
        ]
    )


def seat_opponents(specs: Sequence[str], num_players: int, seat: int) -> list[str | None]:
    """Agent names per seat: ``None`` at the person's seat, the opponents in turn order."""
    need = num_players - 1
    if len(specs) == 1:
        specs = list(specs) * need
    if len(specs) != need:
        raise ValueError(
            f"--opponents: got {len(specs)} agents for {need} opponent seat(s) "
            f"({num_players} players); give one name for all seats or exactly {need}"
        )
    names: list[str | None] = list(specs)
    names.insert(seat, None)
    return names


def play_match(
    rules: Rules,
    agents: Sequence[Agent],
    human_seat: int,
    seed: int | None,
    out: TextIO,
) -> dict:
    """Play one match, narrating it to ``out``; return its replay record.

    If the person's input ends, the match stops and the (unfinished) record is returned.
    """
    n = rules.num_players
    seqs = np.random.SeedSequence(seed).spawn(n + 1)
    state = BergenState(rules, seed=np.random.default_rng(seqs[0]))
    labels = ["you" if s == human_seat else f"player_{s} ({agents[s].name})" for s in range(n)]
    recorder = MatchRecorder(state, [agents[s].name for s in range(n)], seed=seed)
    encoder = Encoder(rules)
    for s, agent in enumerate(agents):
        agent.reset(rules, s, np.random.default_rng(seqs[s + 1]))

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    say(f"Bergen: {rules.describe()}")
    say(f"seed {seed}; you are player_{human_seat}" + _partner_note(rules, human_seat))
    say(_hand_header(state, labels, human_seat))
    try:
        while not state.terminal:
            seat = state.current_player
            action = int(
                agents[seat].act(
                    encoder.observe(state, seat), state.legal_mask(), state.public_view(seat)
                )
            )
            before = state.scores[:]
            drawn = state.boneyard[state.bone_pos] if action == DRAW else None
            hand_number = state.hand_number
            try:
                state.apply_action(action)
            except IllegalActionError as exc:
                raise IllegalActionError(f"agent {agents[seat].name!r}: {exc}") from None
            recorder.record(seat, action)
            hand = recorder.hands[hand_number]
            say(
                _move_str(
                    state, seat, action, before, hand["result"], labels[seat], drawn, human_seat
                )
            )
            if hand["result"] is not None:
                say(
                    f"=== hand {hand_number} ends: "
                    + hand_end_str(
                        rules, hand["result"], hands_at_end(hand["deal"], hand["events"])
                    )
                )
                if not state.terminal:
                    say(f"scores: {scores_str(rules, state.scores)}")
                    say(_hand_header(state, labels, human_seat))
    except EndOfInput as stop:
        why = "you quit" if isinstance(stop, Quit) else "input ended"
        say(f"{why}: match abandoned in hand {state.hand_number}")
        say(match_end_str(rules, state.scores, None))
        return recorder.finish()
    tied = state.winner is None
    say(match_end_str(rules, state.scores, state.winner, tied=tied))
    if tied:
        say("a tie.")
    elif rules.side_of[human_seat] == state.winner:
        say("you win!")
    else:
        say("you lose.")
    return recorder.finish()


def _partner_note(rules: Rules, seat: int) -> str:
    if not rules.partnerships:
        return ""
    partner = (seat + 2) % 4
    return f", side {rules.side_of[seat]} with player_{partner}"


def _hand_header(state: BergenState, labels: Sequence[str], human_seat: int) -> str:
    leader = state.current_player
    leads = "lead" if leader == human_seat else "leads"
    tile = "any tile" if state.lead_tile is None else tile_str(state.lead_tile)
    return (
        f"=== hand {state.hand_number}: {labels[leader]} {leads} with {tile} "
        f"(boneyard {state.boneyard_size}, {state.drawable} drawable) ==="
    )


def _move_str(
    state: BergenState,
    seat: int,
    action: int,
    before: list[int],
    result: dict | None,
    label: str,
    drawn: int | None,
    human_seat: int,
) -> str:
    if action == DRAW:
        text = f"{label} draw{'s' if seat != human_seat else ''}"
        return text + (f" {tile_str(drawn)}" if seat == human_seat and drawn is not None else "")
    if action == PASS:
        return f"{label} pass{'es' if seat != human_seat else ''}"
    side = state.side_of[seat]
    header = state.scores[side] - before[side]
    if result is not None:
        header -= result["points"][side]
    text = f"{label} {'play' if seat == human_seat else 'plays'} {action_str(action)}"
    if header:
        text += f"  +{header} (header)"
    return text


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=PROG,
        description="Play Bergen in the terminal against agents.",
    )
    p.add_argument(
        "--opponents",
        nargs="+",
        required=True,
        metavar="AGENT",
        help="agents for the other seats in turn order (one name fills all), "
        "e.g. heuristic, greedy, random, 'search:samples=200', policy:FILE.safetensors",
    )
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="allow ppo:PATH zips and rllib:PATH checkpoints, which are unpickled and so can run "
        "code: only for your own files (share policies as policy:FILE.safetensors instead)",
    )
    p.add_argument(
        "--players",
        type=int,
        default=None,
        choices=(2, 3, 4),
        help="seats (default: as a policy among the opponents records, else 2)",
    )
    p.add_argument(
        "--partnerships",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="4 players in two partnerships (default: on for draw and fives, off otherwise)",
    )
    p.add_argument(
        "--rules",
        default=None,
        choices=PRESETS,
        help="rules preset (default: the rules a policy among the opponents records, else "
        "standard)",
    )
    p.add_argument("--seed", type=int, default=None, help="match seed (default: random, printed)")
    p.add_argument("--seat", type=int, default=0, help="your seat, 0..players-1 (default 0)")
    p.add_argument(
        "--replay",
        default=None,
        metavar="PATH",
        help="append the match to this replay file (JSON lines)",
    )
    return p


def main(
    argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None
) -> int:
    """Run the command line; ``stdin``/``stdout`` are injectable for tests."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out = stdout if stdout is not None else sys.stdout
    try:
        register_policy_kinds(args.opponents)
        opponents = trust_pickle(args.opponents) if args.trust_pickle else args.opponents
        rules = command_rules(args.rules, args.players, args.partnerships, opponents)
        if not 0 <= args.seat < rules.num_players:
            parser.error(f"--seat {args.seat} is out of range 0..{rules.num_players - 1}")
        specs = seat_opponents(opponents, rules.num_players, args.seat)
        agents: list[Agent] = [
            HumanAgent(stdin, out) if spec is None else make_agent(spec) for spec in specs
        ]
        for seat, agent in enumerate(agents):  # policies trained for other rules fail here
            if not isinstance(agent, HumanAgent):
                agent.reset(rules, seat, np.random.default_rng(0))
    except (ValueError, UsageError) as exc:
        parser.error(str(exc))
    seed = args.seed
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**31)
    try:
        record = play_match(rules, agents, args.seat, seed, out)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (bergen_env.stop)
        print("\ninterrupted: match abandoned", file=out)
        return 143 if isinstance(exc, Terminated) else 130
    if args.replay:
        write_jsonl(args.replay, [record], append=True)
        print(f"replay appended to {args.replay}", file=out)
    return 0
