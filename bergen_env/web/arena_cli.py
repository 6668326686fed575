"""``bergen-arena``: submit a policy file to an arena server, or refit an arena's ratings offline.

    bergen-arena submit policies/standard_2p.safetensors --server http://127.0.0.1:8000 --name me
    bergen-arena ratings --db bergen-arena.sqlite3 [--bootstrap 1000] [--json]
    bergen-arena exploit --db bergen-arena.sqlite3 --sha256 HASH --json exploit.json

``submit`` checks the file locally first (the server checks it again), sends it with the standard
library's ``urllib`` and prints the answer: the file's SHA-256, its page and the pairs queued.
``ratings`` reads the stored results of an arena's SQLite file and fits every leaderboard again
(the same fit, bootstrap and seed as the server's), so anyone holding the file can reproduce the
ratings without a server. ``exploit`` attaches a ``bergen-exploit --json`` result to a stored
policy (checked by :func:`bergen_env.arena_exploit.check_exploit`), which the boards then show.
A user error (an unreadable or refused file, a server that cannot be reached, no such arena or
policy, a bad flag) is one line on stderr, ``bergen-arena: error: <the problem>``, and exit
status 2, as every command of the package.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from bergen_env.arena_exploit import ExploitError, check_exploit, with_exploits
from bergen_env.arena_store import (
    ArenaStore,
    SubmissionError,
    check_name,
    check_submission,
    leaderboard,
    leaderboard_markdown,
)
from bergen_env.command_line import USER_ERROR, ArgumentParser

#: Seconds ``submit`` waits for the server's answer.
TIMEOUT_S = 120.0
PROG = "bergen-arena"


def user_error(message: str) -> int:
    """Print ``message`` as the one line of a user error on stderr; :data:`USER_ERROR`."""
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return USER_ERROR


def submit(path: str, server: str, name: str | None) -> int:
    """Send the file at ``path`` to ``server``; 0 when it was taken, else
    :data:`USER_ERROR` after one line naming the problem."""
    file = Path(path)
    try:
        data = file.read_bytes()
        check_submission(data, label=f"policy file {str(file)!r}")
        check_name(name)
    except OSError as exc:
        return user_error(f"cannot read {str(file)!r}: {exc.strerror or exc}")
    except SubmissionError as exc:
        return user_error(str(exc))
    url = server.rstrip("/") + "/api/arena"
    if name:
        url += "?" + urllib.parse.urlencode({"name": name})
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"content-type": "application/octet-stream"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error", exc.reason)
        except (ValueError, AttributeError):
            message = exc.reason
        return user_error(f"the server refused the file ({exc.code}): {message}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return user_error(f"cannot reach {server}: {exc}")
    what = "new entry" if body.get("new") else "already in the arena"
    print(
        f"{body['sha256']} ({what}): {body.get('queued', 0)} pairs queued; "
        f"{server.rstrip('/')}{body['page']}"
    )
    return 0


def _open(db: str) -> ArenaStore | None:
    """The arena file ``db``, or None after a one-line error (no such file, or unusable)."""
    if not Path(db).is_file():
        user_error(f"no arena database {db!r}")
        return None
    try:
        return ArenaStore(db)
    except OSError as exc:
        user_error(str(exc))
        return None


def ratings(db: str, bootstrap: int, as_json: bool) -> int:
    """Print every leaderboard of the arena file ``db``, refitted from its stored results."""
    store = _open(db)
    if store is None:
        return USER_ERROR
    try:
        boards = [
            leaderboard(store.board_data(key), bootstrap=bootstrap) for key in store.rules_keys()
        ]
        boards = with_exploits(boards, store.exploits())
    finally:
        store.close()
    if as_json:
        print(json.dumps({"boards": boards}, indent=1))
    else:
        print("\n\n".join(leaderboard_markdown(b) for b in boards if b["entries"]))
    return 0


def exploit(db: str, sha256: str, result_path: str) -> int:
    """Attach the ``bergen-exploit --json`` result at ``result_path`` to the policy ``sha256``
    of the arena file ``db``; 0 when it was stored, else :data:`USER_ERROR`."""
    try:
        result = json.loads(Path(result_path).read_text(encoding="utf-8"))
    except OSError as exc:
        return user_error(f"cannot read {result_path!r}: {exc.strerror or exc}")
    except ValueError as exc:
        return user_error(f"{result_path!r} is not JSON: {exc}")
    store = _open(db)
    if store is None:
        return USER_ERROR
    try:
        entry = store.policy(sha256.lower())
        if entry is None:
            return user_error(f"no policy with SHA-256 {sha256!r} in {db!r}")
        record = check_exploit(result, entry, label=repr(result_path))
        store.set_exploit(entry.sha256, record)
    except ExploitError as exc:
        return user_error(str(exc))
    finally:
        store.close()
    lo, hi = record["gain_ci95"]
    print(
        f"{entry.sha256} ({entry.name}): a best response's gain {record['gain']:+.3f} "
        f"[{lo:+.3f}, {hi:+.3f}] over {record['matches']} matches"
    )
    return 0


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=PROG, description="Submit a policy file to an arena, or refit its ratings."
    )
    commands = p.add_subparsers(dest="command", required=True)
    s = commands.add_parser("submit", help="send a portable policy file to an arena server")
    s.add_argument("file", help="a portable policy file (.safetensors)")
    s.add_argument("--server", required=True, help="the server's address, e.g. http://host:8000")
    s.add_argument("--name", help="the name shown beside the policy (no account)")
    r = commands.add_parser("ratings", help="refit an arena's ratings from its SQLite file")
    r.add_argument("--db", required=True, help="the arena's SQLite file (bergen-web --arena FILE)")
    r.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates")
    r.add_argument("--json", action="store_true", help="print the boards as JSON")
    e = commands.add_parser(
        "exploit", help="attach a bergen-exploit --json result to a stored policy"
    )
    e.add_argument("--db", required=True, help="the arena's SQLite file (bergen-web --arena FILE)")
    e.add_argument("--sha256", required=True, help="the policy's SHA-256 (its page's address)")
    e.add_argument(
        "--json",
        required=True,
        metavar="RESULT",
        help="the file bergen-exploit --policy policy:FILE --json RESULT wrote (FILE as named "
        "there, from the working directory)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> None:
    p = parser()
    args = p.parse_args(argv)
    if args.command == "submit":
        sys.exit(submit(args.file, args.server, args.name))
    if args.command == "exploit":
        sys.exit(exploit(args.db, args.sha256, args.json))
    if args.bootstrap < 1:
        p.error("--bootstrap must be >= 1")
    sys.exit(ratings(args.db, args.bootstrap, args.json))


if __name__ == "__main__":
    main()
