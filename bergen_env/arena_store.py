"""The public arena's records: submitted policy files, the queue of duplicate pairs, their results.

A submission is a portable policy file (:mod:`bergen_env.policy_file`: arrays and a JSON
header, never a pickle). :func:`check_submission` reads it completely before anything is kept:
size, format, shapes, finite weights, the rules it was trained for, and a bound on its network's
size; a bad file raises :class:`SubmissionError` with one line naming the problem.

:class:`ArenaStore` keeps everything in one SQLite file (WAL mode; every write committed before
it returns): each policy file by the SHA-256 of its bytes (the same file twice is one entry),
each *pair job* (two agents, the rules, a match count), and each finished pair's outcomes per
match (:class:`~bergen_env.duplicate_pairs.PairOutcome`). A job is stored before it is played
and its result in the same transaction that marks it done, so after a restart the queue is the
jobs without a result: nothing finished is lost and nothing is counted twice.

A new policy costs the pairs :meth:`ArenaStore.plan` queues: against each *anchor* that can play
its rules (the scripted ``random``, ``greedy``, ``heuristic``, ``tuned``, any other agent
string the server names, and the operator's policy files of the same rules) and against at most
``rivals`` other submissions of the same rules, drawn with the operating system's randomness;
the anchors of a set of rules play each other once (the pairs not stored yet, when a policy of
those rules arrives). :func:`leaderboard` fits the Bradley-Terry ratings of
every stored result of one set of rules (:func:`bergen_env.ratings.fit_with_intervals`, random
pinned at 1000, the tournaments' prior of one virtual game a pair), so the numbers can be
refitted offline from the file alone (``bergen-arena ratings --db FILE``).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import tempfile
import threading
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.agents.base import make_agent
from bergen_env.agents.policy_agent import PolicyAgent
from bergen_env.arena import RATING_PRIOR
from bergen_env.atomic_files import write_bytes
from bergen_env.duplicate_pairs import OUTCOME_CHARS, PairOutcome
from bergen_env.errors import BergenError
from bergen_env.policy_file import PolicyFileError, describe_rules, read_policy_bytes
from bergen_env.ratings import fit_with_intervals
from bergen_env.rules import Rules
from bergen_env.sqlite_files import connect, immediate

#: The largest policy file the arena takes (the largest shipped one is about 3 MB).
MAX_FILE_BYTES = 4 * 1024 * 1024
#: The most weights and biases a submitted network may hold (its decisions cost the arena CPU;
#: tensors narrower than float32 would hold more than the file bound allows).
MAX_PARAMETERS = 1_000_000
#: The most dense layers of a submitted network (its action scorer's included).
MAX_LAYERS = 12
#: The scripted anchors, each in every set of rules it can play (a server may add others).
SCRIPTED_ANCHORS = ("random", "greedy", "heuristic", "tuned")
#: The agent every leaderboard pins, and its rating.
PINNED = ("random", 1000.0)
#: Fewer matches than this behind a rating (or pairs still queued) mark it provisional.
PROVISIONAL_MATCHES = 200
#: The longest submitter name.
MAX_NAME_CHARS = 40
#: Job states.
QUEUED, DONE, FAILED = "queued", "done", "failed"
#: The prefix of a policy file's agent id in jobs and results (then its SHA-256).
FILE_PREFIX = "file:"


class SubmissionError(BergenError, ValueError):
    """A submitted policy file the arena refuses; the message is one line naming the problem."""


@dataclass(frozen=True)
class Submission:
    """A checked policy file: its hash, the rules it was trained for, and its size."""

    sha256: str
    rules: Rules
    size: int
    parameters: int
    data: bytes


def _one_line(text: str) -> str:
    return " ".join(text.split())


def check_submission(
    data: bytes, label: str = "the file", max_bytes: int = MAX_FILE_BYTES
) -> Submission:
    """Read ``data`` as a portable policy file and check everything the arena needs; a
    :class:`SubmissionError` (one line, starting with ``label``) names the first problem."""
    if not data:
        raise SubmissionError(f"{label} is empty")
    if len(data) > max_bytes:
        raise SubmissionError(f"{label} has {len(data)} bytes; the arena takes at most {max_bytes}")
    try:  # from the bytes: nothing is written for a file that may be refused
        policy = read_policy_bytes(data, label)
        # the policy plays the rules it records (a scorer's feature set, the seating, ...)
        PolicyAgent.from_policy_file(policy).reset(policy.rules, 0, np.random.default_rng(0))
    except PolicyFileError as exc:
        message = str(exc)
        if "not a readable safetensors file" in message:
            message = _not_safetensors(data, label) or message
        raise SubmissionError(_one_line(message)) from None
    network = policy.network
    layers = [network] + ([network.scorer] if network.scorer is not None else [])
    arrays = [a for net in layers for group in net.arrays()[:2] for a in group]
    parameters = int(sum(a.size for a in arrays))
    depth = sum(len(net.layer_sizes) for net in layers)
    if parameters > MAX_PARAMETERS:
        raise SubmissionError(
            f"{label}: its network has {parameters} parameters; the arena takes at most "
            f"{MAX_PARAMETERS}"
        )
    if depth > MAX_LAYERS:
        raise SubmissionError(
            f"{label}: its network has {depth} layers; the arena takes at most {MAX_LAYERS}"
        )
    return Submission(hashlib.sha256(data).hexdigest(), policy.rules, len(data), parameters, data)


def _not_safetensors(data: bytes, label: str) -> str | None:
    """What an unreadable file seems to be instead, if it is a zip or a pickle."""
    if data[:4] == b"PK\x03\x04":
        return (
            f"{label} is a zip archive (a Stable-Baselines3 model?), not a portable policy file: "
            f"convert it with `bergen-export-policy MODEL.zip`"
        )
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return (
            f"{label} is a Python pickle; the arena reads only portable policy files "
            f"(safetensors and a JSON header: docs/policy-format.md)"
        )
    return None


def check_name(name: str | None) -> str:
    """A submitter's name: printable, at most :data:`MAX_NAME_CHARS` characters (``anonymous``
    when empty); a :class:`SubmissionError` otherwise."""
    name = (name or "").strip()
    if not name:
        return "anonymous"
    if len(name) > MAX_NAME_CHARS:
        raise SubmissionError(f"the name has {len(name)} characters; at most {MAX_NAME_CHARS}")
    if any(unicodedata.category(c)[0] in "CZ" and c != " " for c in name):
        raise SubmissionError("the name may hold letters, digits, punctuation and spaces only")
    return name


def rules_key(rules: Rules) -> str:
    """The canonical text of ``rules`` (every option and the seating): one leaderboard each."""
    return json.dumps(rules.to_dict(), sort_keys=True, separators=(",", ":"))


def board_id(key: str) -> str:
    """A short stable name of a leaderboard (its rules) for links."""
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def file_id(sha256: str) -> str:
    return FILE_PREFIX + sha256


# ---------------------------------------------------------------------- stored rows


@dataclass(frozen=True)
class PolicyEntry:
    """A stored policy file: a submission or an operator's anchor."""

    sha256: str
    name: str
    anchor: bool
    rules: Rules
    size: int
    parameters: int
    created: float

    @property
    def id(self) -> str:
        return file_id(self.sha256)


@dataclass(frozen=True)
class Job:
    """A pair to play: agent ids ``a`` and ``b`` (scripted names or ``file:SHA256``)."""

    id: int
    rules: Rules
    a: str
    b: str
    matches: int


@dataclass(frozen=True)
class StoredPair:
    """A finished job's result, from ``a``'s side."""

    job: int
    a: str
    b: str
    outcome: PairOutcome
    seconds: float


SCHEMA = """
CREATE TABLE IF NOT EXISTS policies (
    sha256 TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    anchor INTEGER NOT NULL,
    address TEXT NOT NULL,
    rules_key TEXT NOT NULL,
    size INTEGER NOT NULL,
    parameters INTEGER NOT NULL,
    created REAL NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS policies_by_address ON policies (address, created);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    rules_key TEXT NOT NULL,
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    matches INTEGER NOT NULL,
    state TEXT NOT NULL,
    error TEXT,
    created REAL NOT NULL,
    UNIQUE (rules_key, a, b)
);
CREATE TABLE IF NOT EXISTS results (
    job INTEGER PRIMARY KEY REFERENCES jobs (id),
    outcomes TEXT NOT NULL,
    wins_a INTEGER NOT NULL,
    wins_b INTEGER NOT NULL,
    rotations INTEGER NOT NULL,
    comparisons INTEGER NOT NULL,
    lineups INTEGER NOT NULL,
    seconds REAL NOT NULL,
    played REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS exploits (
    sha256 TEXT PRIMARY KEY REFERENCES policies (sha256),
    gain REAL NOT NULL,
    gain_lo REAL NOT NULL,
    gain_hi REAL NOT NULL,
    win_rate REAL NOT NULL,
    win_lo REAL NOT NULL,
    win_hi REAL NOT NULL,
    matches INTEGER NOT NULL,
    best_response TEXT,
    seed INTEGER,
    result TEXT NOT NULL,
    measured REAL NOT NULL
);
"""


class ArenaStore:
    """The arena's SQLite file (``:memory:`` keeps nothing); policy files are also written
    under ``files`` (default: beside the database) for the agents that play them."""

    def __init__(
        self, path: str | Path = "bergen-arena.sqlite3", files: str | Path | None = None
    ) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            self._db = connect(self.path)
            self._db.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise OSError(f"arena database {self.path!r} cannot be used: {exc}") from None
        if files is None:
            if self.path == ":memory:":
                self._scratch = tempfile.TemporaryDirectory(prefix="bergen-arena-files-")
                files = self._scratch.name
            else:
                files = Path(self.path).with_name(Path(self.path).name + ".files")
        self.files = Path(files)

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ policies

    def add_policy(
        self, sub: Submission, name: str, address: str = "local", anchor: bool = False
    ) -> tuple[PolicyEntry, bool]:
        """Keep a checked file; ``(entry, True)`` if new, the existing entry and False if a
        file with the same bytes is stored already."""
        with immediate(self._db, self._lock) as db:
            if db.execute("SELECT 1 FROM policies WHERE sha256 = ?", (sub.sha256,)).fetchone():
                created = False
            else:
                db.execute(
                    "INSERT INTO policies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        sub.sha256,
                        name,
                        int(anchor),
                        address,
                        rules_key(sub.rules),
                        sub.size,
                        sub.parameters,
                        time.time(),
                        sub.data,
                    ),
                )
                created = True
        entry = self.policy(sub.sha256)
        assert entry is not None
        return entry, created

    def policy(self, sha256: str) -> PolicyEntry | None:
        rows = self._rows(f"SELECT {_POLICY_COLUMNS} FROM policies WHERE sha256 = ?", (sha256,))
        return _policy(rows[0]) if rows else None

    def policies(self, key: str | None = None) -> list[PolicyEntry]:
        """Every stored policy (of the rules ``key``), oldest first."""
        where, args = ("WHERE rules_key = ?", (key,)) if key is not None else ("", ())
        rows = self._rows(f"SELECT {_POLICY_COLUMNS} FROM policies {where} ORDER BY created", args)
        return [_policy(r) for r in rows]

    def submissions_since(self, address: str, since: float) -> int:
        """Submissions (not anchors) ``address`` made after the time ``since``."""
        rows = self._rows(
            "SELECT COUNT(*) FROM policies WHERE address = ? AND created > ? AND anchor = 0",
            (address, since),
        )
        return int(rows[0][0])

    def policy_path(self, sha256: str) -> Path:
        """The stored file of ``sha256`` on disk (written there at the first call)."""
        path = self.files / f"{sha256}.safetensors"
        if not path.is_file():
            rows = self._rows("SELECT data FROM policies WHERE sha256 = ?", (sha256,))
            if not rows:
                raise KeyError(f"no stored policy file {sha256}")
            self.files.mkdir(parents=True, exist_ok=True)
            write_bytes(path, rows[0][0])
        return path

    def agent_spec(self, agent: str) -> str:
        """The agent string that plays the agent id ``agent``."""
        if agent.startswith(FILE_PREFIX):
            return f"policy:{self.policy_path(agent[len(FILE_PREFIX) :])}"
        return agent

    def set_exploit(self, sha256: str, record: dict[str, Any]) -> None:
        """Keep the exploitability measured for the stored policy ``sha256`` (a record of
        :func:`bergen_env.arena_exploit.check_exploit`), replacing an earlier one."""
        lo, hi = record["gain_ci95"]
        win_lo, win_hi = record["best_response_win_rate_ci95"]
        with immediate(self._db, self._lock) as db:
            if not db.execute("SELECT 1 FROM policies WHERE sha256 = ?", (sha256,)).fetchone():
                raise KeyError(f"no stored policy file {sha256}")
            db.execute(
                "INSERT OR REPLACE INTO exploits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sha256,
                    record["gain"],
                    lo,
                    hi,
                    record["best_response_win_rate"],
                    win_lo,
                    win_hi,
                    record["matches"],
                    record["best_response"],
                    record["seed"],
                    record["result"],
                    time.time(),
                ),
            )

    def exploits(self) -> dict[str, dict[str, Any]]:
        """Every stored exploitability measurement by its policy's SHA-256 (without the
        whole ``bergen-exploit`` result, which stays in the file)."""
        rows = self._rows(
            "SELECT sha256, gain, gain_lo, gain_hi, win_rate, win_lo, win_hi, matches, "
            "best_response, seed, measured FROM exploits"
        )
        return {
            r[0]: {
                "gain": r[1],
                "gain_ci95": [r[2], r[3]],
                "best_response_win_rate": r[4],
                "best_response_win_rate_ci95": [r[5], r[6]],
                "matches": r[7],
                "best_response": r[8],
                "seed": r[9],
                "measured": r[10],
            }
            for r in rows
        }

    # ------------------------------------------------------------------ the queue

    def plan(
        self,
        entry: PolicyEntry,
        matches: int,
        rivals: int,
        agents: Sequence[str] = SCRIPTED_ANCHORS,
    ) -> list[Job]:
        """Queue ``entry``'s pairs (see the module docstring; ``agents``: the anchors given
        by agent strings) and the anchors' pairs not stored yet; the jobs queued."""
        key = rules_key(entry.rules)
        anchors = [a for a in agents if _plays(a, entry.rules)]
        others = [p for p in self.policies(key) if p.sha256 != entry.sha256]
        anchors += [p.id for p in others if p.anchor]
        # the anchors' round robin (pairs stored already are skipped), then the new policy's
        pairs = [(a, b) for i, a in enumerate(anchors) for b in anchors[i + 1 :]]
        pairs += [(entry.id, a) for a in anchors]
        if not entry.anchor:
            pool = [p.id for p in others if not p.anchor]
            drawn = secrets.SystemRandom().sample(pool, min(rivals, len(pool)))
            pairs += [(entry.id, r) for r in drawn]
        return self.add_jobs(entry.rules, pairs, matches)

    def add_jobs(self, rules: Rules, pairs: Sequence[tuple[str, str]], matches: int) -> list[Job]:
        """Queue each pair not stored yet (in either order) under ``rules``; the new jobs."""
        key, now, new = rules_key(rules), time.time(), []
        with immediate(self._db, self._lock) as db:
            for a, b in pairs:
                if a == b:
                    continue
                known = db.execute(
                    "SELECT 1 FROM jobs WHERE rules_key = ? "
                    "AND ((a = ? AND b = ?) OR (a = ? AND b = ?))",
                    (key, a, b, b, a),
                ).fetchone()
                if known:
                    continue
                cur = db.execute(
                    "INSERT INTO jobs (rules_key, a, b, matches, state, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (key, a, b, matches, QUEUED, now),
                )
                new.append(Job(int(cur.lastrowid), rules, a, b, matches))
        return new

    def queued(self, limit: int | None = None) -> list[Job]:
        """Jobs without a result, oldest first."""
        sql = "SELECT id, rules_key, a, b, matches FROM jobs WHERE state = ? ORDER BY id"
        rows = self._rows(
            sql + (" LIMIT ?" if limit else ""), (QUEUED, limit) if limit else (QUEUED,)
        )
        return [Job(i, Rules.from_dict(json.loads(k)), a, b, n) for i, k, a, b, n in rows]

    def queued_count(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM jobs WHERE state = ?", (QUEUED,))[0][0])

    def record(self, job: int, outcome: PairOutcome, seconds: float) -> bool:
        """Store a played job's result and mark it done, in one transaction; False (nothing
        stored) when the job is not queued any more (its result is stored already)."""
        with immediate(self._db, self._lock) as db:
            row = db.execute("SELECT state FROM jobs WHERE id = ?", (job,)).fetchone()
            if row is None or row[0] != QUEUED:
                return False
            db.execute(
                "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job,
                    outcome.outcomes,
                    outcome.wins[0],
                    outcome.wins[1],
                    outcome.rotations,
                    outcome.comparisons,
                    outcome.lineups,
                    round(seconds, 3),
                    time.time(),
                ),
            )
            db.execute("UPDATE jobs SET state = ? WHERE id = ?", (DONE, job))
        return True

    def fail(self, job: int, error: str) -> None:
        """Mark a job that cannot be played (it leaves the queue; its error is kept)."""
        with immediate(self._db, self._lock) as db:
            db.execute(
                "UPDATE jobs SET state = ?, error = ? WHERE id = ? AND state = ?",
                (FAILED, error[:500], job, QUEUED),
            )

    def results(self, key: str | None = None) -> list[StoredPair]:
        """Every stored result (of the rules ``key``), in the order played."""
        where, args = ("WHERE j.rules_key = ?", (key,)) if key is not None else ("", ())
        rows = self._rows(
            "SELECT r.job, j.a, j.b, r.outcomes, r.wins_a, r.wins_b, r.rotations, "
            "r.comparisons, r.lineups, r.seconds FROM results r JOIN jobs j ON j.id = r.job "
            f"{where} ORDER BY r.job",
            args,
        )
        return [
            StoredPair(job, a, b, PairOutcome(o, (wa, wb), rot, comp, lin), secs)
            for job, a, b, o, wa, wb, rot, comp, lin, secs in rows
        ]

    def rules_keys(self) -> list[str]:
        """Every set of rules that has a stored policy or job, in order of first appearance."""
        rows = self._rows(
            "SELECT rules_key FROM (SELECT rules_key, created FROM policies UNION ALL "
            "SELECT rules_key, created FROM jobs) GROUP BY rules_key ORDER BY MIN(created)"
        )
        return [r[0] for r in rows]

    def board_data(self, key: str) -> BoardData:
        """The rows :func:`leaderboard` fits for the rules ``key``."""
        pending: dict[str, int] = {}
        sql = "SELECT a, b FROM jobs WHERE rules_key = ? AND state = ?"
        for a, b in self._rows(sql, (key, QUEUED)):
            pending[a] = pending.get(a, 0) + 1
            pending[b] = pending.get(b, 0) + 1
        return BoardData(key, self.results(key), self.policies(key), pending)


_POLICY_COLUMNS = "sha256, name, anchor, rules_key, size, parameters, created"


def _policy(row: tuple) -> PolicyEntry:
    sha, name, anchor, key, size, parameters, created = row
    return PolicyEntry(
        sha, name, bool(anchor), Rules.from_dict(json.loads(key)), size, parameters, created
    )


def _plays(spec: str, rules: Rules) -> bool:
    """Whether the agent ``spec`` can play ``rules`` (``tuned``: presets only)."""
    try:
        make_agent(spec).reset(rules, 0, np.random.default_rng(0))
    except (ValueError, OSError):
        return False
    return True


# ---------------------------------------------------------------------- the leaderboard


def check_outcome(outcome: PairOutcome) -> None:
    """Refuse a stored result that is not whole deal groups of valid characters."""
    chars = OUTCOME_CHARS[: 2 * outcome.comparisons + 1]
    if (
        outcome.rotations < 1
        or not outcome.outcomes
        or len(outcome.outcomes) % outcome.rotations
        or set(outcome.outcomes) - set(chars)
    ):
        raise ValueError(f"a stored result is damaged: {outcome!r:.200}")


@dataclass(frozen=True)
class BoardData:
    """What a leaderboard is fitted from: one set of rules' stored rows."""

    key: str
    pairs: list[StoredPair]
    policies: list[PolicyEntry]
    pending: dict[str, int]


def leaderboard(data: BoardData, *, bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The leaderboard of one set of rules: every agent with a result, best first, with its
    rating, 95% interval, matches, score against each anchor, and whether it is provisional
    (``seed`` seeds the bootstrap, so the same rows give the same board)."""
    key, pairs = data.key, data.pairs
    rules = Rules.from_dict(json.loads(key))
    policies = {p.id: p for p in data.policies}
    names = sorted({x for p in pairs for x in (p.a, p.b)})
    board: dict[str, Any] = {
        "id": board_id(key),
        "rules": rules.to_dict(),
        "description": describe_rules(rules),
        "bootstrap": bootstrap,
        "pinned": list(PINNED),
        "entries": [],
    }
    if len(names) < 2:
        return board
    index = {n: k for k, n in enumerate(names)}
    for p in pairs:
        check_outcome(p.outcome)
    fit = fit_with_intervals(
        len(names),
        [p.outcome.points(index[p.a], index[p.b]) for p in pairs],
        prior=RATING_PRIOR,
        bootstrap=bootstrap,
        seed=seed,
        anchor=index.get(PINNED[0]),
        anchor_rating=PINNED[1],
    )
    # every agent given by its string is an anchor, and the operator's files
    anchors = [n for n in names if not n.startswith(FILE_PREFIX) or policies[n].anchor]
    matches = dict.fromkeys(names, 0)
    scores: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in names}
    for p in pairs:
        n, s = p.outcome.matches, p.outcome.score
        matches[p.a] += n
        matches[p.b] += n
        scores[p.a][p.b] = {"score": round(s, 4), "matches": n}
        scores[p.b][p.a] = {"score": round(1 - s, 4), "matches": n}
    pending = data.pending
    order = sorted(names, key=lambda n: (-fit.ratings[index[n]], n))
    for rank, n in enumerate(order, 1):
        k = index[n]
        entry = policies.get(n)
        board["entries"].append(
            {
                "rank": rank,
                "agent": n,
                "name": entry.name if entry is not None else n,
                "anchor": n in anchors,
                "sha256": entry.sha256 if entry is not None else None,
                "rating": round(float(fit.ratings[k]), 1),
                "interval": [round(float(fit.low[k]), 1), round(float(fit.high[k]), 1)],
                "matches": matches[n],
                "queued": pending.get(n, 0),
                "provisional": matches[n] < PROVISIONAL_MATCHES or pending.get(n, 0) > 0,
                "against_anchors": {
                    _label(a, policies): scores[n][a] for a in anchors if a in scores[n]
                },
                "submitted": entry.created if entry is not None else None,
            }
        )
    return board


def _label(agent: str, policies: dict[str, PolicyEntry]) -> str:
    return policies[agent].name if agent in policies else agent


def leaderboard_markdown(board: dict[str, Any]) -> str:
    """A leaderboard as a Markdown table (the offline command prints this); an entry's
    ``exploit`` (:func:`bergen_env.arena_exploit.with_exploits`) is its gain and interval."""
    lines = [
        f"### {board['description']}",
        "",
        "| rank | agent | rating | 95% interval | matches | exploitability (gain) | file |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in board["entries"]:
        lo, hi = e["interval"]
        mark = " (provisional)" if e["provisional"] else ""
        sha = f"`{e['sha256'][:12]}`" if e["sha256"] else ""
        x = e.get("exploit")
        gain = f"{x['gain']:+.3f} [{x['gain_ci95'][0]:+.3f}, {x['gain_ci95'][1]:+.3f}]" if x else ""
        lines.append(
            f"| {e['rank']} | {e['name']}{mark} | {e['rating']:.0f} | [{lo:.0f}, {hi:.0f}] "
            f"| {e['matches']} | {gain} | {sha} |"
        )
    return "\n".join(lines)
