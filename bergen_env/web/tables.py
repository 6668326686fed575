"""Tables in memory: seats and links, moves, agents at a watchable pace, what each seat sees.

No HTTP here: :class:`TableManager` holds the tables and :class:`Table` one match. The app layer
(:mod:`bergen_env.web.app`) turns requests into calls on these and errors into 4xx answers.

Every message a seat receives is built by :meth:`Table.snapshot` from that seat's
:meth:`~bergen_env.engine.BergenState.public_view` and the table's public log (moves as
everyone saw them, hands revealed at a hand's end), never from the state itself.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, NUM_PLAY_ACTIONS, PASS, action_str, parse_action
from bergen_env.agents.base import Agent, agent_factory, make_agent, parse_agent_spec
from bergen_env.engine import BergenState, PublicView
from bergen_env.errors import BergenError, IllegalActionError
from bergen_env.observation import Encoder
from bergen_env.replay import MatchRecorder, hands_at_end
from bergen_env.rules import Rules
from bergen_env.tiles import IS_DOUBLE, OTHER_HALF, PIPS, TILES
from bergen_env.web.replays import place

logger = logging.getLogger(__name__)

#: The seat kind of a person (every other kind names an agent of the menu).
PERSON = "person"

#: An agent whose decisions all took less than this acts in the event loop, not in a thread.
INLINE_SECONDS = 0.002

#: The agents a table may seat, by menu name: what :func:`make_agent` builds for each.
DEFAULT_AGENTS: dict[str, str] = {
    "random": "random",
    "greedy": "greedy",
    "heuristic": "heuristic",
    "tuned": "tuned",
    "search": "search:samples=200,budget_ms=400",
}


def presets_only(spec: str) -> bool:
    """Whether the agent ``spec`` names plays only rules equal to a preset (``tuned``)."""
    factory = agent_factory(parse_agent_spec(spec)[0])
    return bool(getattr(factory, "presets_only", False))


class TableError(Exception):
    """A request the tables refuse; ``status`` is the HTTP status the app answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Seat:
    """One seat: a person with an unguessable token, or an agent from the menu."""

    index: int
    kind: str
    token: str | None = None
    agent: Agent | None = None
    #: The agent's slowest decision so far (seconds); a slow agent thinks in a worker thread.
    slowest: float = float("inf")


@dataclass
class Limits:
    """Bounds that keep one server healthy with many tables and careless clients."""

    max_tables: int = 200
    idle_seconds: float = 1800.0  # a table nobody touched for this long is removed
    max_connections_per_table: int = 32
    max_body_bytes: int = 2 * 1024 * 1024  # request bodies (replay files are the largest)


def _new_token(nbytes: int = 18) -> str:
    return secrets.token_urlsafe(nbytes)


class Table:
    """One match: the engine state, its seats, its public log and its listeners."""

    def __init__(
        self,
        rules: Rules,
        kinds: Sequence[str],
        agent_specs: dict[str, str],
        *,
        seed: int,
        pace: float,
        clock: Callable[[], float],
        lang: str = "en",
    ) -> None:
        if len(kinds) != rules.num_players:
            raise TableError(
                400, f"'seats' names {len(kinds)} seat(s) but the game has {rules.num_players}"
            )
        self.id = _new_token(9)
        self.rules = rules
        self.seed = seed
        self.pace = pace
        self.lang = lang
        self._clock = clock
        self.created = self.last_active = clock()
        self.seats: list[Seat] = []
        for index, kind in enumerate(kinds):
            if kind == PERSON:
                self.seats.append(Seat(index, kind, token=_new_token()))
                continue
            if kind not in agent_specs:
                raise TableError(
                    400,
                    f"seat {index}: unknown seat kind {kind!r}; choose {PERSON!r} or an agent "
                    f"of {sorted(agent_specs)}",
                )
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, index)))
            try:
                agent = make_agent(agent_specs[kind])
                agent.reset(rules, index, rng)
            except (ValueError, OSError) as exc:  # e.g. a policy trained for other rules
                message = f"seat {index}: agent {kind!r} cannot play this game: {exc}"
                if presets_only(agent_specs[kind]):
                    message = (
                        f"seat {index}: agent {kind!r} plays the presets' rules only and these "
                        f"change an option; keep the preset's options or choose another agent "
                        f"({exc})"
                    )
                raise TableError(400, message) from None
            self.seats.append(Seat(index, kind, agent=agent))
        self.state = BergenState(
            rules, seed=np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
        )
        self.recorder = MatchRecorder(self.state, [s.kind for s in self.seats], seed=seed)
        self.encoder = (
            Encoder(rules)
            if any(
                s.agent is not None and getattr(s.agent, "needs_observation", True)
                for s in self.seats
            )
            else None
        )
        self.events: list[dict[str, Any]] = []  # public log of the hand being played
        self.results: list[dict[str, Any]] = []  # per finished hand: result and revealed hands
        self.version = 0
        self.closed = False
        self.error: str | None = None  # set when an agent failed and the table stopped
        self._changed: asyncio.Event | None = None
        self._listeners: set[asyncio.Event] = set()
        self._runner: asyncio.Task | None = None

    # ------------------------------------------------------------------ queries

    @property
    def terminal(self) -> bool:
        return self.state.terminal

    @property
    def host(self) -> int | None:
        """The first person's seat: the one who made the table and shares its links."""
        return next((s.index for s in self.seats if s.kind == PERSON), None)

    @property
    def has_agents(self) -> bool:
        return any(s.agent is not None for s in self.seats)

    def touch(self) -> None:
        self.last_active = self._clock()

    # ------------------------------------------------------------------ moves

    def move(self, seat: int, action: Any) -> None:
        """A person's move; raises :class:`TableError` (409/422) when it may not be made."""
        if self.state.terminal:
            raise TableError(409, "the match is over; no more moves")
        if self.seats[seat].kind != PERSON:
            raise TableError(403, f"seat {seat} is played by an agent")
        if seat != self.state.current_player:
            raise TableError(
                409, f"it is not your turn: player_{self.state.current_player} is on turn"
            )
        a = parse_move(action, self.rules.num_actions)
        if not self.state.is_legal(a):
            raise TableError(
                422,
                f"action {a} ({action_str(a)}) is not legal now; legal: "
                f"{self.state.legal_actions_text()}",
            )
        self._apply(seat, a)

    def _apply(self, seat: int, a: int) -> None:
        state = self.state
        side = self.rules.side_of[seat]
        before = state.scores[:]
        num_results = len(state.hand_results)
        hand_record = self.recorder.current_hand
        reason = play_score_reason(self.rules, state, a) if a < DRAW or a >= DOUBLE_PLAY else None
        line = list(state.line)
        state.apply_action(a)
        self.recorder.record(seat, a)
        ended = state.hand_results[num_results:]
        hand_end_points = [sum(r.points[s] for r in ended) for s in range(self.rules.num_sides)]
        gained = state.scores[side] - before[side] - hand_end_points[side]
        event: dict[str, Any] = {"seat": seat, **move_dict(a), "points": gained}
        if a < DRAW and not line:
            event["opens"] = True  # the hand's first tile
        if reason is not None and gained > 0:
            event["score"] = reason
        event["scores"] = state.scores[:]
        self.events.append(event)
        if ended or state.terminal:
            final = hands_at_end(hand_record["deal"], hand_record["events"])
            if a < DRAW or a >= DOUBLE_PLAY:
                place(line, a)
            summary = hand_summary(self.rules, len(self.results), hand_record["result"], final)
            summary["line"] = [list(pair) for pair in line]
            summary["scores"] = state.scores[:]
            self.results.append(summary)
            self.events = []
        self.touch()
        self.notify()

    # ------------------------------------------------------------------ agents

    def start(self) -> None:
        """Start the agents' loop (inside the running event loop) if any seat is an agent."""
        if self.has_agents and self._runner is None and not self.state.terminal:
            self._changed = asyncio.Event()
            self._runner = asyncio.get_running_loop().create_task(self._run_agents())

    async def _run_agents(self) -> None:
        while not self.closed and not self.state.terminal:
            seat = self.seats[self.state.current_player]
            if seat.agent is None:
                assert self._changed is not None
                self._changed.clear()
                await self._changed.wait()
                continue
            if self.pace:
                await asyncio.sleep(self.pace)
            state = self.state
            agent = seat.agent
            view = state.public_view(seat.index) if getattr(agent, "needs_view", True) else None
            obs = (
                self.encoder.observe(state, seat.index)
                if self.encoder is not None and getattr(agent, "needs_observation", True)
                else None
            )
            mask = state.legal_mask()
            hand = state.hand_number
            try:
                start = time.perf_counter()
                if seat.slowest < INLINE_SECONDS:  # quick agents act in the loop
                    action = agent.act(obs, mask, view)
                else:  # a slow one (search, a network) must not hold up the other tables
                    action = await asyncio.to_thread(agent.act, obs, mask, view)
                elapsed = time.perf_counter() - start
                seat.slowest = (
                    elapsed if seat.slowest == float("inf") else max(seat.slowest, elapsed)
                )
                if self.closed:
                    return
                if not state.is_legal(int(action)):
                    raise IllegalActionError(f"chose the illegal action {action!r}")
            except Exception as exc:  # a broken agent stops its table, visibly
                self.error = f"agent {seat.kind!r} (seat {seat.index}) failed: {exc}"
                logger.exception(self.error)
                self.notify()
                return
            self._apply(seat.index, int(action))
            if self.pace and self.state.hand_number != hand:
                await asyncio.sleep(3 * self.pace)  # time to read the hand's end

    def close(self) -> None:
        self.closed = True
        if self._runner is not None:
            self._runner.cancel()
        self.notify()

    # ------------------------------------------------------------------ listeners

    def listen(self) -> asyncio.Event:
        event = asyncio.Event()
        self._listeners.add(event)
        return event

    def unlisten(self, event: asyncio.Event) -> None:
        self._listeners.discard(event)

    @property
    def connections(self) -> int:
        return len(self._listeners)

    def notify(self) -> None:
        self.version += 1
        for event in self._listeners:
            event.set()
        if self._changed is not None:
            self._changed.set()

    # ------------------------------------------------------------------ messages

    def snapshot(self, seat: int | None) -> dict[str, Any]:
        """Everything ``seat`` (None: a spectator) may know now, as a JSON-able dict."""
        view = self.state.public_view(0 if seat is None else seat)
        return build_message(
            view,
            seat=seat,
            version=self.version,
            table=self.id,
            seat_kinds=[s.kind for s in self.seats],
            events=self.events,
            results=self.results,
            over=self.state.terminal,
            winner=self.state.winner,
            lang=self.lang,
            error=self.error,
        )

    def replay_record(self) -> dict[str, Any]:
        """The match as a ``bergen-replay/1`` record (hands shown): finished tables only."""
        if not self.state.terminal:
            raise TableError(409, "the match is still being played; its replay opens at the end")
        return self.recorder.finish()


# ---------------------------------------------------------------------- message parts


def parse_move(action: Any, num_actions: int) -> int:
    """An action id from a request: an id, or move text such as ``"[3|5]>left"`` or ``"draw"``."""
    if isinstance(action, bool) or not isinstance(action, (int, str)):
        raise TableError(422, f"'action' must be an action id or move text, got {action!r}")
    try:
        a = parse_action(action) if isinstance(action, str) else action
    except BergenError as exc:
        raise TableError(422, str(exc)) from None
    if not 0 <= a < num_actions:
        raise TableError(422, f"action {a} is out of range 0..{num_actions - 1}")
    return a


def move_dict(a: int) -> dict[str, Any]:
    """A public description of action ``a``: kind, tile and end (no hidden tile for a draw)."""
    if a < NUM_PLAY_ACTIONS:
        return {
            "action": a,
            "kind": "play",
            "tile": list(TILES[a >> 1]),
            "end": a & 1,
            "text": action_str(a),
        }
    if a == DRAW:
        return {"action": a, "kind": "draw", "text": "draw"}
    if a == PASS:
        return {"action": a, "kind": "pass", "text": "pass"}
    n = a - DOUBLE_PLAY
    return {"action": a, "kind": "double_play", "tile": [n, n], "text": action_str(a)}


def end_count(line: Sequence[Sequence[int]]) -> int:
    """The Fives count of a line: each end's number, a double end twice; one tile: its pips."""
    if not line:
        return 0
    if len(line) == 1:
        return sum(line[0])
    (a, b), (c, d) = line[0], line[-1]
    return (2 * a if a == b else a) + (2 * d if c == d else d)


def play_score_reason(rules: Rules, state: BergenState, a: int) -> dict[str, Any]:
    """What the play ``a`` (legal now, not yet applied) scores for and why, from public facts.

    Bergen: a header when both ends then show one number (``number``, with ``doubles`` crosswise
    double ends; ``full`` is its value before end caps). Fives: the ends' ``count``.
    """
    if a >= DOUBLE_PLAY:  # both [n|n] at once: two double ends
        n = a - DOUBLE_PLAY
        ends, doubles = (n, n), (True, True)
    else:
        t, e = a >> 1, a & 1
        if state.lead_tile is not None or not state.line:  # the first tile of the hand
            x, y = TILES[t]
            ends, doubles = (x, y), (IS_DOUBLE[t], IS_DOUBLE[t])
        else:
            new = OTHER_HALF[t * 7 + state.end_num[e]]
            other = state.end_num[1 - e]
            ends = (new, other)
            doubles = (IS_DOUBLE[t], state.end_dbl[1 - e])
    first = not state.line
    if getattr(rules, "play_scoring", "headers") == "fives":
        count = (
            sum(TILES[a >> 1])
            if first and a < DOUBLE_PLAY
            else sum(2 * n if d else n for n, d in zip(ends, doubles))
        )
        return {"kind": "fives", "count": count}
    if ends[0] != ends[1]:
        return {"kind": "none"}
    if a >= DOUBLE_PLAY:
        full = 5
    elif first:
        full = 2  # the opening double: both ends show its number
    else:
        full = (2, 3, 4)[doubles[0] + doubles[1]]
    return {
        "kind": "header",
        "number": ends[0],
        "doubles": 0 if first else int(doubles[0]) + int(doubles[1]),
        "full": full,
    }


def hand_summary(
    rules: Rules,
    number: int,
    result: dict[str, Any] | None,
    final_hands: list[list[int]],
) -> dict[str, Any]:
    """A finished hand as everyone sees it at its end: why it ended, points, the hands shown."""
    result = dict(result or {})
    tallies = []
    for side in range(rules.num_sides):
        tiles = [t for s, h in enumerate(final_hands) if rules.side_of[s] == side for t in h]
        doubles = [TILES[t][0] for t in tiles if IS_DOUBLE[t]]
        tallies.append(
            {
                "doubles": len(doubles),
                "lowest_double": min(doubles) if doubles else None,
                "pips": sum(PIPS[t] for t in tiles),
            }
        )
    return {
        "hand": number,
        "reason": result.get("reason"),
        "winner": result.get("winner"),
        "seat": result.get("seat"),
        "points": result.get("points"),
        "blocked_rule": result.get("blocked_rule"),
        "hands": [[list(TILES[t]) for t in h] for h in final_hands],
        "tallies": tallies,
    }


def build_message(
    view: PublicView,
    *,
    seat: int | None,
    version: int,
    table: str,
    seat_kinds: Sequence[str],
    events: Sequence[dict[str, Any]],
    results: Sequence[dict[str, Any]],
    over: bool,
    winner: int | None,
    lang: str = "en",
    error: str | None = None,
) -> dict[str, Any]:
    """The message for ``seat`` (None: a spectator) from its public view and the public log."""
    rules = view.rules
    own = seat is not None
    legal = []
    if own and not over:
        for a in view.legal_actions:
            legal.append(move_dict(a))
    return {
        "type": "state",
        "version": version,
        "table": table,
        "lang": lang,
        "seat": seat,
        "game": game_dict(rules),
        "seats": [
            {
                "seat": i,
                "kind": kind,
                "side": rules.side_of[i],
                "hand_size": view.hand_sizes[i],
            }
            for i, kind in enumerate(seat_kinds)
        ],
        "turn": None if over else view.current_player,
        "hand_number": view.hand_number,
        "line": [list(pair) for pair in view.line],
        "ends": list(view.ends) if view.ends is not None else None,
        "end_doubles": list(view.end_doubles),
        "boneyard": view.boneyard_size,
        "drawable": view.drawable,
        "scores": list(view.scores),
        "hand": [list(TILES[t]) + [t] for t in view.hand] if own else None,
        "legal": legal,
        "events": list(events),
        "results": list(results),
        "over": over,
        "winner": winner,
        "error": error,
    }


def game_dict(rules: Rules) -> dict[str, Any]:
    """The rules as the page shows them (every option, the preset's name, sides and target)."""
    out = rules.to_dict()
    out["num_sides"] = rules.num_sides
    out["side_of"] = list(rules.side_of)
    return out


# ---------------------------------------------------------------------- the manager


@dataclass
class TableManager:
    """All tables of one server: creation within limits, look-up by link, idle expiry."""

    agents: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_AGENTS))
    limits: Limits = field(default_factory=Limits)
    pace: float = 0.8
    clock: Callable[[], float] = time.monotonic
    tables: dict[str, Table] = field(default_factory=dict)
    _tokens: dict[str, tuple[str, int]] = field(default_factory=dict)

    def create(
        self, rules: Rules, kinds: Sequence[str], *, seed: int | None = None, lang: str = "en"
    ) -> Table:
        self.expire()
        if len(self.tables) >= self.limits.max_tables:
            raise TableError(
                503,
                f"the server already has {self.limits.max_tables} tables (its limit); "
                "try again when one has finished",
            )
        if seed is None:
            seed = secrets.randbits(32)
        table = Table(
            rules, kinds, self.agents, seed=seed, pace=self.pace, clock=self.clock, lang=lang
        )
        self.tables[table.id] = table
        for s in table.seats:
            if s.token is not None:
                self._tokens[s.token] = (table.id, s.index)
        return table

    def by_id(self, table_id: str) -> Table:
        table = self.tables.get(table_id)
        if table is None:
            raise TableError(404, self.gone_message("table"))
        return table

    def by_token(self, token: str) -> tuple[Table, int]:
        found = self._tokens.get(token)
        table = self.tables.get(found[0]) if found else None
        if table is None:
            raise TableError(404, self.gone_message("seat link"))
        return table, found[1]

    def gone_message(self, what: str) -> str:
        minutes = self.limits.idle_seconds / 60
        return (
            f"no such {what}: it is mistyped, or its table expired after {minutes:g} minutes "
            "without a move"
        )

    def expire(self) -> list[str]:
        """Remove tables with no move nor connection for longer than the limit; their ids."""
        now = self.clock()
        gone = [
            tid
            for tid, t in self.tables.items()
            if now - t.last_active > self.limits.idle_seconds and t.connections == 0
        ]
        for tid in gone:
            table = self.tables.pop(tid)
            table.close()
            for s in table.seats:
                if s.token is not None:
                    self._tokens.pop(s.token, None)
        return gone

    def close_all(self) -> None:
        for table in self.tables.values():
            table.close()
        self.tables.clear()
        self._tokens.clear()
