"""Tables: seats and links, moves kept in a store, agents at a watchable pace, rematches.

No HTTP here: :class:`TableManager` holds the live tables and :class:`Table` one table (the
match being played and, after a rematch, the next). Every move is written to the
:class:`~bergen_env.web.store.TableStore` before it is applied, so a move a player was told
was accepted survives a restart; :meth:`TableManager.restore` rebuilds every live table from
its seed and moves. A finished table frees its slot at once and stays readable as a replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW
from bergen_env.agents.base import Agent, agent_factory, make_agent, parse_agent_spec
from bergen_env.engine import BergenState
from bergen_env.errors import IllegalActionError
from bergen_env.observation import Encoder
from bergen_env.replay import MatchRecorder, hands_at_end
from bergen_env.rules import Rules
from bergen_env.web.agent_pool import AgentPool
from bergen_env.web.errors import TableError, excerpt
from bergen_env.web.messages import (
    build_message,
    hand_summary,
    move_dict,
    parse_move,
    play_score_reason,
)
from bergen_env.web.options import PERSON, TableRequest
from bergen_env.web.replay_frames import place
from bergen_env.web.store import EXPIRED, FINISHED, LIVE, SQLiteStore, TableRow, TableStore

logger = logging.getLogger(__name__)

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


@dataclass
class Limits:
    """Bounds that keep one server fair and healthy with many tables and hostile clients."""

    max_tables: int = 200  # tables being played at once (finished ones hold no slot)
    tables_per_address: int = 8  # tables being played that one client address created
    creations_per_minute: float = 6.0  # new tables per client address (a burst of as many)
    replays_per_minute: float = 12.0  # uploaded replay files per client address (a burst too)
    idle_seconds: float = 1800.0  # a table with no move for this long expires
    max_hands: int = 100  # hands per match at a web table
    replay_days: float = 7.0  # finished matches stay readable this long
    spectators_per_table: int = 32  # open spectator sockets of one table
    sockets_per_seat: int = 4  # open sockets of one seat link (a person's pages)
    sockets_per_address: int = 64  # open WebSockets of one client address
    spectators_per_address: int = 4  # open spectator sockets of one table from one address
    max_sockets: int = 512  # open WebSockets of the server
    connections_per_address: int = 32  # open HTTP connections of one client address
    max_connections: int = 256  # open HTTP connections of the server
    header_seconds: float = 10.0  # a request's head must arrive within this (else: closed)
    body_seconds: float = 60.0  # a request's body must arrive within this (else: 408)
    max_body_bytes: int = 2 * 1024 * 1024  # request bodies (replay files are the largest)
    max_json_bytes: int = 16 * 1024  # JSON bodies of the API besides replay files


def quota_key(address: str) -> str:
    """Whom a quota counts: the address, or for IPv6 its /64 (one subscriber's network)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # "testclient", "unknown": as given
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return address


@dataclass
class Seat:
    """One seat: a person with an unguessable token, or an agent from the menu."""

    index: int
    kind: str
    token: str | None = None
    agent: Agent | None = None


def new_token(nbytes: int = 18) -> str:
    return secrets.token_urlsafe(nbytes)


#: Bits of a match's deal seed: too many to tabulate deals or to narrow down from one's hand.
SEED_BITS = 128


def match_seed() -> int:
    """A fresh secret seed for one match, from the operating system's randomness."""
    return secrets.randbits(SEED_BITS)


def owner_token(row: TableRow) -> str | None:
    """The creator's seat token: the first person of the seating before any rematch rotated
    it (``row.owner`` when stored; this derives it for rows stored without)."""
    n, m = len(row.kinds), row.match
    first = [(row.kinds[(j + m) % n], row.tokens[(j + m) % n]) for j in range(n)]
    return next((token for kind, token in first if kind == PERSON), None)


#: An agent whose decisions all took less than this (CPU seconds) acts in the event loop.
INLINE_SECONDS = 0.002


def _timed_act(agent: Agent, obs: Any, mask: Any, view: Any) -> tuple[int, float]:
    """The agent's action and the CPU time of its thread it took to decide."""
    start = time.thread_time()
    action = int(agent.act(obs, mask, view))
    return action, time.thread_time() - start


class Table:
    """One table: its row in the store, the match being played, its public log, listeners."""

    def __init__(
        self,
        row: TableRow,
        agent_specs: dict[str, str],
        *,
        store: TableStore,
        limits: Limits,
        pace: float,
        clock: Callable[[], float],
        pool: AgentPool | None = None,
        speeds: dict[str, float] | None = None,
        moves: Sequence[tuple[int, int]] = (),
        with_agents: bool = True,
        writer: Executor | None = None,
    ) -> None:
        self.row = row
        self.id = row.id
        self.rules = Rules.from_dict(row.rules)
        self.store = store
        self.limits = limits
        self.pace = pace
        self.pool = pool
        #: The one thread the store's writes of the server wait in (None: the caller's).
        self.writer = writer
        #: Held while a move is checked, kept and applied: one move of this table at a time.
        self.lock = asyncio.Lock()
        #: The slowest decision of each agent of the menu so far (seconds), shared by the tables
        #: of a server: an agent that has always been quick acts in the event loop.
        self.speeds: dict[str, float] = speeds if speeds is not None else {}
        self._clock = clock
        self._agent_specs = agent_specs
        self.last_move = clock()
        #: Counts changes; it starts at the time in microseconds so that it grows across restarts.
        self.version = time.time_ns() // 1000
        self.closed = False
        self.on_finish: Callable[[Table], None] | None = None
        #: The replay frames of the last finished match, keyed by it (built on first request).
        self.frames: tuple[Any, Any] = (None, None)
        self._changed: asyncio.Event | None = None
        #: Each open socket's event: its seat link (None: a spectator) and client address.
        self._listeners: dict[asyncio.Event, tuple[str | None, str]] = {}
        self.evicted: set[asyncio.Event] = set()  # sockets told to close (a newer one came)
        self._runner: asyncio.Task | None = None
        self._deal(row, with_agents)
        for seat, action in moves:
            self._apply(seat, action)

    def _deal(self, row: TableRow, with_agents: bool) -> None:
        """Seat everyone and deal the match ``row.match`` of ``row``; then ``row`` is this
        table's row. Everything is built before anything changes (a refusal changes nothing)."""
        rules, match = self.rules, row.match
        seats: list[Seat] = []
        for index, (kind, token) in enumerate(zip(row.kinds, row.tokens)):
            if kind == PERSON:
                seats.append(Seat(index, kind, token=token))
                continue
            agent = self._make_agent(row, index, kind) if with_agents else None
            seats.append(Seat(index, kind, agent=agent))
        key = (0,) if match == 0 or row.fresh_seeds else (0, match)
        rng = np.random.default_rng(np.random.SeedSequence(row.seed, spawn_key=key))
        state = BergenState(rules, seed=rng)
        recorder = MatchRecorder(state, [s.kind for s in seats], seed=row.seed)
        needs_obs = any(
            s.agent is not None and getattr(s.agent, "needs_observation", True) for s in seats
        )
        self.row, self.seats, self.state, self.recorder = row, seats, state, recorder
        self.encoder = Encoder(rules) if needs_obs else None
        self.events: list[dict[str, Any]] = []  # public log of the hand being played
        self.last_result: dict[str, Any] | None = None  # the last finished hand, with its log
        self.hands_done = 0
        self.moves_made = 0  # moves of this match so far (the store's move numbers)

    def _make_agent(self, row: TableRow, index: int, kind: str) -> Agent:
        specs = self._agent_specs
        if kind not in specs:
            raise TableError(
                400,
                "unknown_agent",
                f"seat {index}: unknown seat kind {kind!r}; choose {PERSON!r} or an agent "
                f"of {sorted(specs)}",
                seat=index,
            )
        key = (1, index) if row.match == 0 or row.fresh_seeds else (1, index, row.match)
        rng = np.random.default_rng(np.random.SeedSequence(row.seed, spawn_key=key))
        try:
            agent = make_agent(specs[kind])
            agent.reset(self.rules, index, rng)
        except (ValueError, OSError) as exc:  # e.g. a policy trained for other rules
            message = f"seat {index}: agent {kind!r} cannot play this game: {exc}"
            if presets_only(specs[kind]):
                message = (
                    f"seat {index}: agent {kind!r} plays the presets' rules only and these "
                    f"change an option; keep the preset's options or choose another agent "
                    f"({exc})"
                )
            raise TableError(400, "agent_refuses", message, seat=index) from None
        return agent

    # ------------------------------------------------------------------ queries

    @property
    def over(self) -> bool:
        """The match has ended: a side reached the target, or the hand cap was reached."""
        return self.state.terminal or self.state.hand_number >= self.limits.max_hands

    @property
    def terminal(self) -> bool:
        return self.over

    @property
    def end_reason(self) -> str | None:
        if self.state.terminal:
            return "one_hand" if self.rules.single_hand else "target"
        return "hand_cap" if self.over else None

    @property
    def host(self) -> int | None:
        """The seat of the person who created the table (the one who shares its links) in the
        current match; None when no person sits."""
        owner = self.row.owner or owner_token(self.row)
        return None if owner is None else self.row.tokens.index(owner)

    @property
    def has_agents(self) -> bool:
        return any(s.agent is not None for s in self.seats)

    @property
    def error(self) -> str | None:
        return self.row.error

    def seat_of(self, token: str) -> int:
        """The seat ``token`` plays in the current match (seats rotate at a rematch)."""
        return self.row.tokens.index(token)

    # ------------------------------------------------------------------ moves

    def move(self, seat: int, action: Any, version: Any = None) -> None:
        """A person's move; raises :class:`TableError` (409/422) when it may not be made.

        ``version``, when given, is the version of the view the move was chosen in: a move
        chosen in an older view (e.g. sent again after its answer was lost) is refused. The
        store's write waits in this thread; the server's event loop uses :meth:`play`."""
        a = self._checked(seat, action, version)
        self._keep_move(seat, a)
        self._apply(seat, a)
        try:
            if self.over:
                self._end(self._record_end)
        finally:
            self.notify()

    async def play(self, seat: int, action: Any, version: Any = None) -> None:
        """:meth:`move` for the event loop: one move of a table at a time, in order, and the
        disk waits in the store's writer thread; done even if the request is cancelled."""
        await asyncio.shield(self._play(seat, action, version))

    async def _play(self, seat: int, action: Any, version: Any) -> None:
        async with self.lock:
            await self._commit(seat, self._checked(seat, action, version))

    def _checked(self, seat: int, action: Any, version: Any) -> int:
        """The action ``seat`` may make now, or the :class:`TableError` saying why not."""
        if self.over:
            raise TableError(409, "match_over", "the match is over; no more moves")
        if self.closed:
            raise TableError(410, "expired", "this table has closed")
        if self.seats[seat].kind != PERSON:
            raise TableError(403, "agent_seat", f"seat {seat} is played by an agent", seat=seat)
        turn = self.state.current_player
        if seat != turn:
            raise TableError(
                409,
                "not_your_turn",
                f"it is not your turn: seat {turn} is on turn (seats count from 0)",
                turn=turn,
            )
        if version is not None and version != self.version:
            if isinstance(version, bool) or not isinstance(version, int):
                raise TableError(
                    400, "bad_action", f"'version' must be an integer, got {excerpt(version)}"
                )
            raise TableError(
                409,
                "stale_view",
                f"the table changed since view {version}; it is at {self.version}",
                version=self.version,
            )
        a = parse_move(action, self.rules.num_actions)
        if not self.state.is_legal(a):
            raise TableError(
                422,
                "illegal_move",
                f"action {a} ({move_dict(a)['text']}) is not legal now; legal: "
                f"{self.state.legal_actions_text()}",
                action=a,
            )
        return a

    async def _off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the store's writer thread (in this one without a writer)."""
        if self.writer is None:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self.writer, fn, *args)

    async def _commit(self, seat: int, a: int) -> None:
        """Keep the move, apply it, record the match's end; then tell every page (hold
        :attr:`lock`)."""
        await self._off_loop(self._keep_move, seat, a)
        self._apply(seat, a)
        try:
            if self.over:
                row = await self._off_loop(self._end, self._record_end, False)
                self._ended(row)
        finally:
            self.notify()

    def _keep_move(self, seat: int, a: int) -> None:
        """Write the move to the store (committed on return; 503 when the store refuses)."""
        try:
            self.store.add_move(self.id, self.row.match, self.moves_made, seat, a)
        except Exception as exc:
            logger.exception("table %s: the store refused a move", self.id)
            raise TableError(
                503, "store_failed", f"the move could not be kept, try again ({exc})"[:200]
            ) from None

    def _apply(self, seat: int, a: int) -> None:
        """Apply a move kept in the store to the match and the public log (no notice)."""
        state = self.state
        self.moves_made += 1
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
            summary = hand_summary(self.rules, self.hands_done, hand_record["result"], final)
            summary["line"] = [list(pair) for pair in line]
            summary["scores"] = state.scores[:]
            summary["events"] = self.events
            self.last_result = summary
            self.hands_done += 1
            self.events = []
        self.last_move = self._clock()

    def _record_end(self) -> TableRow:
        """Keep the finished match's record and the finished row in the store; that row."""
        now = time.time()
        self.store.add_replay(self.id, self.row.match, self.recorder.finish(), now)
        row = dataclasses.replace(self.row, status=FINISHED, ended=now)
        self.store.save(row)
        return row

    def _end(self, record: Callable[[], TableRow], apply: bool = True) -> TableRow:
        """``record()`` with a 503 when the store refuses (the manager's sweep tries again);
        with ``apply`` the finished row then becomes the table's."""
        try:
            row = record()
        except Exception as exc:
            logger.exception("table %s: the store refused the match's end", self.id)
            raise TableError(
                503,
                "finish_failed",
                f"the move was kept but the match's end could not be recorded yet ({exc})"[:200],
            ) from None
        if apply:
            self._ended(row)
        return row

    def _ended(self, row: TableRow) -> None:
        self.row = row
        if self.on_finish is not None:
            self.on_finish(self)

    def finish(self) -> None:
        """Keep the finished match's record and mark the table finished (frees its slot)."""
        self._ended(self._record_end())

    def rematch(self) -> None:
        """The next match at this table: the same people and links, seats rotated one on."""
        if not self.over:
            raise TableError(409, "match_not_over", "the match is still being played")
        row = dataclasses.replace(
            self.row,
            match=self.row.match + 1,
            seed=match_seed(),  # drawn now: nothing published before deals this match
            fresh_seeds=True,
            owner=self.row.owner or owner_token(self.row),
            kinds=self.row.kinds[-1:] + self.row.kinds[:-1],
            tokens=self.row.tokens[-1:] + self.row.tokens[:-1],
            status=LIVE,
            ended=None,
            error=None,
        )
        old = self.__dict__.copy()
        self._deal(row, with_agents=True)  # may refuse: then nothing has changed
        try:
            self.store.save(row)
        except Exception:
            self.__dict__.update(old)
            raise
        self.last_move = self._clock()
        self.closed = False
        self.notify()
        self.start()

    # ------------------------------------------------------------------ agents

    def start(self) -> None:
        """Start the agents' loop (inside the running event loop) if any seat is an agent."""
        running = self._runner is not None and not self._runner.done()
        if self.has_agents and not running and not self.over and not self.closed:
            self._changed = asyncio.Event()
            self._runner = asyncio.get_running_loop().create_task(self._run_agents())

    async def _run_agents(self) -> None:
        while not self.closed and not self.over:
            seat = self.seats[self.state.current_player]
            if seat.agent is None:
                assert self._changed is not None
                self._changed.clear()
                await self._changed.wait()
                continue
            if self.pace:
                await asyncio.sleep(self.pace)
            state = self.state
            hand = state.hand_number
            try:
                action = await self._decide(seat)
                if self.closed or state is not self.state:
                    return
                if not state.is_legal(int(action)):
                    raise IllegalActionError(f"chose the illegal action {action!r}")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a broken agent stops its table, visibly
                self._stop(f"agent {seat.kind!r} (seat {seat.index}) failed: {exc}")
                return
            try:
                await asyncio.shield(self._agent_move(seat.index, int(action), state))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store refused the move (or the match's end)
                self._stop(f"the table could not keep a move: {exc}")
                return
            if self.pace and self.state.hand_number != hand:
                await asyncio.sleep(3 * self.pace)  # time to read the hand's end

    async def _agent_move(self, seat: int, a: int, state: BergenState) -> None:
        async with self.lock:
            if not self.closed and state is self.state:
                await self._commit(seat, a)

    def _stop(self, error: str) -> None:
        self.row.error = error[:300]
        logger.exception(self.row.error)
        with contextlib.suppress(Exception):
            self.store.save(self.row)
        self.notify()

    async def _decide(self, seat: Seat) -> int:
        state, agent = self.state, seat.agent
        assert agent is not None
        view = state.public_view(seat.index) if getattr(agent, "needs_view", True) else None
        obs = (
            self.encoder.observe(state, seat.index)
            if self.encoder is not None and getattr(agent, "needs_observation", True)
            else None
        )
        mask = state.legal_mask()
        slowest = self.speeds.get(seat.kind)
        if slowest is None:  # a kind not seen yet: its first decision, timed in a thread
            action, cpu = await asyncio.to_thread(_timed_act, agent, obs, mask, view)
            self.speeds[seat.kind] = cpu
        elif slowest < INLINE_SECONDS:  # quick agents act in the loop
            action, cpu = _timed_act(agent, obs, mask, view)
            self.speeds[seat.kind] = max(slowest, cpu)
        elif self.pool is not None:  # slow ones (search, a network) in the agent pool
            action, seat.agent = await self.pool.act(agent, obs, mask, view)
        else:
            action = await asyncio.to_thread(agent.act, obs, mask, view)
        return int(action)

    def close(self) -> None:
        self.closed = True
        if self._runner is not None:
            self._runner.cancel()
        self.notify()

    # ------------------------------------------------------------------ listeners

    def listen(self, key: str | None = None, address: str = "") -> asyncio.Event:
        """An event set at every change, for a socket of seat link ``key`` (None: a spectator)
        from client ``address``."""
        event = asyncio.Event()
        self._listeners[event] = (key, address)
        return event

    def unlisten(self, event: asyncio.Event) -> None:
        self._listeners.pop(event, None)
        self.evicted.discard(event)

    def connections(self, key: str | None = None, address: str | None = None) -> int:
        """Open sockets of seat link ``key`` (None: of spectators), of ``address`` if given."""
        return sum(
            1
            for event, (k, a) in self._listeners.items()
            if k == key and address in (None, a) and event not in self.evicted
        )

    def evict_oldest(self, key: str) -> None:
        """Tell the oldest open socket of seat link ``key`` to close: a newer page of the same
        person takes its place (the person's latest page always gets the updates)."""
        for event, (k, _) in self._listeners.items():
            if k == key and event not in self.evicted:
                self.evicted.add(event)
                event.set()
                return

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
        over = self.over
        return build_message(
            view,
            seat=seat,
            version=self.version,
            table=self.id,
            seat_kinds=[s.kind for s in self.seats],
            events=self.events,
            last_result=self.last_result,
            hands_done=self.hands_done,
            over=over,
            winner=self.state.winner if over else None,
            lang=self.row.lang,
            error=self.error,
            match=self.row.match,
            end_reason=self.end_reason,
        )

    def replay_record(self) -> dict[str, Any]:
        """The last finished match as a ``bergen-replay/1`` record (hands shown)."""
        record = self.store.replay(self.id)
        if record is None:
            raise TableError(
                409, "match_not_over", "the match is still being played; its replay opens then"
            )
        return record

    async def finished_record(self) -> dict[str, Any]:
        """:meth:`replay_record` once a match's last move, if one is being kept, is recorded.

        A page sees the match over as soon as its last move is applied; its record reaches the
        store a moment later (under :attr:`lock`), so a replay asked for in between waits."""
        async with self.lock:
            return self.replay_record()

    def links(self) -> dict[str, Any]:
        """Every person seat's link and the spectator link (paths; the page makes them absolute)."""
        return {
            "table": self.id,
            "seats": [
                {"seat": s.index, "kind": s.kind, "link": f"/s/{s.token}" if s.token else None}
                for s in self.seats
            ],
            "watch": f"/w/{self.id}",
        }


# ---------------------------------------------------------------------- the manager


@dataclass
class TableManager:
    """All tables of one server: creation within quotas, look-up by link, expiry, restore."""

    agents: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_AGENTS))
    limits: Limits = field(default_factory=Limits)
    pace: float = 0.8
    clock: Callable[[], float] = time.monotonic
    store: TableStore = field(default_factory=lambda: SQLiteStore(":memory:"))
    pool: AgentPool | None = None
    speeds: dict[str, float] = field(default_factory=dict)  # see Table.speeds
    tables: dict[str, Table] = field(default_factory=dict)  # live tables
    _tokens: dict[str, str] = field(default_factory=dict)
    _finished: OrderedDict[str, Table] = field(default_factory=OrderedDict)
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    sockets: Counter[str] = field(default_factory=Counter)  # open WebSockets per address
    #: The store's writes of moves and match ends wait in this one thread, not the event loop.
    writer: Executor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="bergen-store")
    )

    # ------------------------------------------------------------------ creation

    def create(
        self,
        rules: Rules,
        kinds: Sequence[str],
        *,
        seed: int | None = None,
        lang: str = "en",
        address: str = "local",
    ) -> Table:
        """A new live table (its agents not started: call :meth:`Table.start`)."""
        address = quota_key(address)
        self.expire()
        self._admit(address)
        if len(kinds) != rules.num_players:
            raise TableError(
                400,
                "bad_seats",
                f"'seats' names {len(kinds)} seat(s) but the game has {rules.num_players}",
            )
        now = time.time()
        row = TableRow(
            id=new_token(9),
            rules=rules.to_dict(),
            kinds=list(kinds),
            tokens=[new_token() if k == PERSON else None for k in kinds],
            seed=match_seed() if seed is None else seed,
            lang=lang,
            address=address,
            created=now,
            fresh_seeds=True,
        )
        row.owner = owner_token(row)
        table = self._table(row)
        self._spend(address)
        self.store.save(row)
        self._add(table)
        return table

    def create_from(self, request: TableRequest, address: str) -> Table:
        table = self.create(
            request.rules, request.kinds, seed=request.seed, lang=request.lang, address=address
        )
        table.start()
        return table

    def _table(self, row: TableRow, moves: Sequence[tuple[int, int]] = (), **kw: Any) -> Table:
        return Table(
            row,
            self.agents,
            store=self.store,
            limits=self.limits,
            pace=self.pace,
            clock=self.clock,
            pool=self.pool,
            speeds=self.speeds,
            moves=moves,
            writer=self.writer,
            **kw,
        )

    def _add(self, table: Table) -> None:
        table.on_finish = self._finished_table
        self.tables[table.id] = table
        for token in table.row.tokens:
            if token is not None:
                self._tokens[token] = table.id

    def _admit(self, address: str) -> None:
        """Refuse a new live table over the server's or the address's quota (429/503)."""
        if len(self.tables) >= self.limits.max_tables:
            raise TableError(
                503,
                "server_full",
                f"the server is playing {self.limits.max_tables} tables (its limit); "
                "try again in a minute",
                retry_after=60,
            )
        mine = sum(1 for t in self.tables.values() if t.row.address == address)
        if mine >= self.limits.tables_per_address:
            raise TableError(
                429,
                "too_many_tables",
                f"your address already plays {mine} tables (the limit); finish one first",
                retry_after=60,
            )
        self._check_rate(address, None, "too_many_new_tables", "new tables")

    def _check_rate(self, address: str, per_minute: float | None, code: str, what: str) -> None:
        """A 429 with ``Retry-After`` when ``address``'s bucket has no token left."""
        tokens, _ = self._bucket(address, per_minute)
        if tokens < 1:
            rate = (per_minute or self.limits.creations_per_minute) / 60
            wait = max(1, int((1 - tokens) / rate) + 1)
            raise TableError(
                429,
                code,
                f"too many {what} from your address; try again in {wait} s",
                retry_after=wait,
            )

    def _bucket(self, address: str, per_minute: float | None = None) -> tuple[float, float]:
        """The tokens of ``address``'s bucket (``per_minute``: of another request kind)."""
        now = self.clock()
        burst = self.limits.creations_per_minute if per_minute is None else per_minute
        key = address if per_minute is None else f"{per_minute}:{address}"
        tokens, then = self._buckets.get(key, (burst, now))
        tokens = min(burst, tokens + (now - then) * burst / 60)
        return tokens, now

    def _spend(self, address: str, per_minute: float | None = None) -> None:
        tokens, now = self._bucket(address, per_minute)
        key = address if per_minute is None else f"{per_minute}:{address}"
        self._buckets[key] = (tokens - 1, now)
        if len(self._buckets) > 10_000:  # forget buckets that are full again
            full = [k for k, (n, t) in self._buckets.items() if n >= 1 and now - t > 60]
            for k in full[:5000]:
                del self._buckets[k]

    def charge_replay(self, address: str) -> None:
        """Spend one of ``address``'s replay uploads; 429 with ``Retry-After`` when none left."""
        self.charge(address, self.limits.replays_per_minute, "replay files")

    def charge(self, address: str, per_minute: float, what: str) -> None:
        """Spend one of ``address``'s requests of a kind allowed ``per_minute`` (a burst of as
        many); 429 ``too_many_requests`` with ``Retry-After`` naming ``what`` when none left."""
        address = quota_key(address)
        self._check_rate(address, per_minute, "too_many_requests", what)
        self._spend(address, per_minute)

    async def rematch(self, table: Table) -> Table:
        """The next match at a finished table: it takes a live slot again, within the quotas
        of the address that created the table (429/503 as :meth:`create`)."""
        if not table.over:
            raise TableError(409, "match_not_over", "the match is still being played")
        async with table.lock:  # not while the match's last move is being kept
            creator = table.row.address  # a rematch is a new live table of its creator
            self.expire()
            self._admit(creator)
            table.rematch()
            self._spend(creator)
            self._finished.pop(table.id, None)
            self._add(table)
        return table

    # ------------------------------------------------------------------ look-up

    def by_id(self, table_id: str) -> Table:
        table = self.tables.get(table_id) or self._finished.get(table_id)
        if table is not None:
            return table
        return self._from_store(table_id if len(table_id) < 40 else "", "table")

    def by_token(self, token: str) -> tuple[Table, int]:
        table_id = self._tokens.get(token)
        if table_id is None and len(token) < 60:
            table_id = self.store.find_token(token)
        table = self.by_id(table_id) if table_id else self._from_store("", "seat link")
        return table, table.seat_of(token)

    def _from_store(self, table_id: str, what: str) -> Table:
        row = self.store.load(table_id) if table_id else None
        if row is None:
            kept = "" if self.store.durable else ", or the server restarted (it keeps no tables)"
            raise TableError(404, "unknown_link", f"no such {what}: it is mistyped{kept}")
        if row.status == EXPIRED:
            minutes = self.limits.idle_seconds / 60
            raise TableError(
                410,
                "expired",
                f"this table expired after {minutes:g} minutes without a move",
                minutes=minutes,
            )
        live = row.status == LIVE  # live in the store but not here: restore it
        table = self._table(row, self.store.moves(row.id, row.match), with_agents=live)
        if live:
            self._resume(table)
        else:
            self._keep_finished(table)
        return table

    def _resume(self, table: Table) -> None:
        self._add(table)
        if table.over:  # its last move was kept but the server stopped before the match's end
            table.finish()
        else:
            table.start()

    # ------------------------------------------------------------------ ends

    def _finished_table(self, table: Table) -> None:
        """A match ended: its slot is free at once; it stays readable."""
        self.tables.pop(table.id, None)
        for seat in table.seats:
            seat.agent = None
        self._keep_finished(table)

    def _keep_finished(self, table: Table) -> None:
        self._finished[table.id] = table
        self._finished.move_to_end(table.id)
        while len(self._finished) > self.limits.max_tables:
            old, gone = self._finished.popitem(last=False)
            for token in gone.row.tokens:
                if token is not None and self._tokens.get(token) == old:
                    del self._tokens[token]
        for token in table.row.tokens:
            if token is not None:
                self._tokens[token] = table.id

    def expire(self) -> list[str]:
        """Close live tables without a move for longer than the limit; their ids."""
        now = self.clock()
        gone = [
            tid for tid, t in self.tables.items() if now - t.last_move > self.limits.idle_seconds
        ]
        for table in [t for t in self.tables.values() if t.over and not t.lock.locked()]:
            with contextlib.suppress(TableError):  # a match's end the store refused before
                table._end(table._record_end)
        for tid in gone:
            table = self.tables.pop(tid)
            table.row.status, table.row.ended = EXPIRED, time.time()
            self.store.save(table.row)
            table.close()
            for token in table.row.tokens:
                if token is not None:
                    self._tokens.pop(token, None)
        if gone or secrets.randbelow(100) == 0:
            self.store.purge(time.time() - self.limits.replay_days * 86400)
        return gone

    def restore(self) -> int:
        """Rebuild every live table of the store and start its agents; how many."""
        count = 0
        for row in self.store.live():
            try:
                moves = self.store.moves(row.id, row.match)
            except Exception:  # a read failed: the table stays live for a later look-up
                logger.exception("table %s: its moves could not be read", row.id)
                continue
            try:
                table = self._table(row, moves)
            except Exception as exc:  # e.g. its agent left the menu: the table cannot go on
                logger.warning("table %s cannot be restored: %s", row.id, exc)
                row.status, row.ended = EXPIRED, time.time()
                row.error = f"could not be restored: {exc}"[:300]
                self.store.save(row)
                continue
            self._resume(table)
            count += 1
        return count

    def close_all(self) -> None:
        for table in self.tables.values():
            table.close()
        self.tables.clear()
        self._tokens.clear()
        self._finished.clear()
