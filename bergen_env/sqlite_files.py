"""Opening a SQLite file the way every store of the project does, and its write transactions.

:func:`connect` opens a file for use from several threads (the caller holds a lock around each
use) in autocommit mode; a file on disk (not ``:memory:``) is checked first (SQLite's
``quick_check``: a damaged file is refused, never used) and then runs in WAL mode with full
``synchronous``, so a committed write survives a crash. :func:`immediate` is one write
transaction: it takes the write lock at its start and rolls back if its block fails.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator

MEMORY = ":memory:"


def connect(path: str) -> sqlite3.Connection:
    """A connection to ``path`` (checked, WAL, full sync on disk); ``sqlite3.Error`` if the
    file cannot be opened or is damaged (``the file is damaged: ...``)."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    if path != MEMORY:
        problems = [r[0] for r in db.execute("PRAGMA quick_check(3)").fetchall()]
        if problems != ["ok"]:
            db.close()
            first = " ".join(" ".join(problems).split())[:160]
            raise sqlite3.DatabaseError(f"the file is damaged: {first}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
    return db


@contextlib.contextmanager
def immediate(db: sqlite3.Connection, lock: threading.Lock) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``db`` under ``lock``: committed when the block ends, rolled
    back if it raises."""
    with lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
