"""Where tables live between moves and restarts: a small store interface and its SQLite home.

A table is its row (rules, seats and their links, seed, language, which match of the table
is being played, its state) plus the moves of that match, in order. That is all a server needs
to rebuild the table after a restart: the engine replays the moves from the seed. A finished
match is kept as its ``bergen-replay/1`` record for :attr:`Limits.replay_days` days.

:class:`SQLiteStore` uses the standard library's ``sqlite3`` in WAL mode; every write is
committed before it returns, so a move is on disk before the player is told it was accepted;
a damaged file is refused when it is opened (SQLite's ``quick_check``); the server waits for
writes in one writer thread, and reads use a second connection.
Another database replaces it by implementing :class:`TableStore`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from bergen_env.sqlite_files import connect, immediate

#: Table states as stored.
LIVE, FINISHED, EXPIRED = "live", "finished", "expired"


@dataclass
class TableRow:
    """What a store keeps of a table besides its moves."""

    id: str
    rules: dict[str, Any]
    kinds: list[str]
    tokens: list[str | None]
    seed: int  # the seed of match ``match`` only (see ``fresh_seeds``)
    lang: str
    address: str
    created: float
    match: int = 0
    status: str = LIVE
    ended: float | None = None
    error: str | None = None
    #: The seat token of the person who created the table (None: no person sits); the share
    #: box with every link goes to them whatever seat a rematch gives them.
    owner: str | None = None
    #: True: every match has its own secret seed, drawn at its start (``seed``). False: a row
    #: stored before that, whose match ``match`` is dealt from the table's one seed.
    fresh_seeds: bool = False


class TableStore(Protocol):
    """The operations the tables need from a database."""

    #: False when nothing outlives the process (``:memory:``).
    durable: bool

    def save(self, row: TableRow) -> None:
        """Insert or replace a table's row (committed on return)."""

    def add_move(self, table: str, match: int, number: int, seat: int, action: int) -> None:
        """Append one move of a table's current match (committed on return)."""

    def add_replay(self, table: str, match: int, record: dict[str, Any], when: float) -> None:
        """Keep a finished match's record."""

    def load(self, table: str) -> TableRow | None:
        """A table's row, or None."""

    def find_token(self, token: str) -> str | None:
        """The id of the table a seat token belongs to, or None."""

    def moves(self, table: str, match: int) -> list[tuple[int, int]]:
        """The ``(seat, action)`` moves of one match in order."""

    def replay(self, table: str, match: int | None = None) -> dict[str, Any] | None:
        """A finished match's record (the table's last one by default), or None."""

    def live(self) -> list[TableRow]:
        """Every table still being played."""

    def purge(self, before: float) -> int:
        """Forget finished and expired tables that ended before ``before``; how many."""

    def close(self) -> None:
        """Release the database."""


SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    row TEXT NOT NULL,
    ended REAL
);
CREATE INDEX IF NOT EXISTS tables_status ON tables (status, ended);
CREATE TABLE IF NOT EXISTS tokens (
    token TEXT PRIMARY KEY,
    table_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tokens_table ON tokens (table_id);
CREATE TABLE IF NOT EXISTS moves (
    table_id TEXT NOT NULL,
    match INTEGER NOT NULL,
    number INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    action INTEGER NOT NULL,
    PRIMARY KEY (table_id, match, number)
);
CREATE TABLE IF NOT EXISTS replays (
    table_id TEXT NOT NULL,
    match INTEGER NOT NULL,
    record TEXT NOT NULL,
    ended REAL NOT NULL,
    PRIMARY KEY (table_id, match)
);
"""


#: What to do about a table store that cannot be used.
MEND = (
    "move the file aside (with its -wal and -shm files) to start with an empty store, "
    "or restore a backup; `sqlite3 FILE .recover` may save its tables"
)


class SQLiteStore:
    """:class:`TableStore` in one SQLite file (WAL); ``":memory:"`` keeps nothing."""

    def __init__(self, path: str = "bergen-web.sqlite3") -> None:
        self.path = str(path)
        self.durable = self.path != ":memory:"
        self._lock = threading.Lock()
        try:
            self._db = connect(self.path)
            self._db.executescript(SCHEMA)
            # reads (on the server's event loop) have their own connection and lock: in WAL
            # mode they never wait for a write being committed in the writer thread
            self._reader, self._read_lock = self._db, self._lock
            if self.durable:
                self._reader = sqlite3.connect(
                    self.path, check_same_thread=False, isolation_level=None
                )
                self._read_lock = threading.Lock()
        except sqlite3.Error as exc:
            raise OSError(
                f"--db {self.path}: cannot open the table store ({exc}); {MEND}"
            ) from None

    def _write(self, sql: str, *rows: tuple[Any, ...]) -> None:
        with immediate(self._db, self._lock) as db:
            for params in rows:
                db.execute(sql, params)

    def save(self, row: TableRow) -> None:
        text = json.dumps(row.__dict__, separators=(",", ":"))
        with immediate(self._db, self._lock) as db:
            db.execute(
                "INSERT OR REPLACE INTO tables (id, status, row, ended) VALUES (?, ?, ?, ?)",
                (row.id, row.status, text, row.ended),
            )
            db.executemany(
                "INSERT OR REPLACE INTO tokens (token, table_id) VALUES (?, ?)",
                [(t, row.id) for t in row.tokens if t is not None],
            )

    def add_move(self, table: str, match: int, number: int, seat: int, action: int) -> None:
        self._write(
            "INSERT INTO moves (table_id, match, number, seat, action) VALUES (?, ?, ?, ?, ?)",
            (table, match, number, seat, action),
        )

    def add_replay(self, table: str, match: int, record: dict[str, Any], when: float) -> None:
        self._write(
            "INSERT OR REPLACE INTO replays (table_id, match, record, ended) VALUES (?, ?, ?, ?)",
            (table, match, json.dumps(record, separators=(",", ":")), when),
        )

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return self._reader.execute(sql, params).fetchall()

    def load(self, table: str) -> TableRow | None:
        rows = self._read("SELECT row FROM tables WHERE id = ?", (table,))
        return TableRow(**json.loads(rows[0][0])) if rows else None

    def find_token(self, token: str) -> str | None:
        rows = self._read("SELECT table_id FROM tokens WHERE token = ?", (token,))
        return rows[0][0] if rows else None

    def moves(self, table: str, match: int) -> list[tuple[int, int]]:
        rows = self._read(
            "SELECT seat, action FROM moves WHERE table_id = ? AND match = ? ORDER BY number",
            (table, match),
        )
        return [(int(s), int(a)) for s, a in rows]

    def replay(self, table: str, match: int | None = None) -> dict[str, Any] | None:
        if match is None:
            rows = self._read(
                "SELECT record FROM replays WHERE table_id = ? ORDER BY match DESC LIMIT 1",
                (table,),
            )
        else:
            rows = self._read(
                "SELECT record FROM replays WHERE table_id = ? AND match = ?", (table, match)
            )
        return json.loads(rows[0][0]) if rows else None

    def live(self) -> list[TableRow]:
        rows = self._read("SELECT row FROM tables WHERE status = ?", (LIVE,))
        return [TableRow(**json.loads(r[0])) for r in rows]

    def purge(self, before: float) -> int:
        gone = [
            r[0]
            for r in self._read(
                "SELECT id FROM tables WHERE status != ? AND ended < ?", (LIVE, before)
            )
        ]
        for sql in (
            "DELETE FROM moves WHERE table_id = ?",
            "DELETE FROM replays WHERE table_id = ?",
            "DELETE FROM tokens WHERE table_id = ?",
            "DELETE FROM tables WHERE id = ?",
        ):
            self._write(sql, *[(t,) for t in gone])
        return len(gone)

    def close(self) -> None:
        with self._lock, self._read_lock if self._reader is not self._db else nullcontext():
            self._reader.close()
            self._db.close()
