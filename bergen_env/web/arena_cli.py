"""``bergen-arena``: submit a policy file to an arena server, or refit an arena's ratings offline.

    bergen-arena submit policies/standard_2p.safetensors --server http://127.0.0.1:8000 --name me
    bergen-arena ratings --db bergen-arena.sqlite3 [--bootstrap 1000] [--json]

``submit`` checks the file locally first (the server checks it again), sends it with the standard
library's ``urllib`` and prints the answer: the file's SHA-256, its page and the pairs queued.
``ratings`` reads the stored results of an arena's SQLite file and fits every leaderboard again
(the same fit, bootstrap and seed as the server's), so anyone holding the file can reproduce the
ratings without a server.
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

from bergen_env.arena_store import (
    ArenaStore,
    SubmissionError,
    check_name,
    check_submission,
    leaderboard,
    leaderboard_markdown,
)

#: Seconds ``submit`` waits for the server's answer.
TIMEOUT_S = 120.0


def submit(path: str, server: str, name: str | None) -> int:
    """Send the file at ``path`` to ``server``; 0 when it was taken, 1 otherwise."""
    file = Path(path)
    try:
        data = file.read_bytes()
        check_submission(data, label=f"policy file {str(file)!r}")
        check_name(name)
    except OSError as exc:
        print(f"bergen-arena: cannot read {str(file)!r}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except SubmissionError as exc:
        print(f"bergen-arena: {exc}", file=sys.stderr)
        return 1
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
        print(f"bergen-arena: the server refused the file ({exc.code}): {message}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"bergen-arena: cannot reach {server}: {exc}", file=sys.stderr)
        return 1
    what = "new entry" if body.get("new") else "already in the arena"
    print(
        f"{body['sha256']} ({what}): {body.get('queued', 0)} pairs queued; "
        f"{server.rstrip('/')}{body['page']}"
    )
    return 0


def ratings(db: str, bootstrap: int, as_json: bool) -> int:
    """Print every leaderboard of the arena file ``db``, refitted from its stored results."""
    if not Path(db).is_file():
        print(f"bergen-arena: no arena database {db!r}", file=sys.stderr)
        return 1
    try:
        store = ArenaStore(db)
    except OSError as exc:
        print(f"bergen-arena: {exc}", file=sys.stderr)
        return 1
    try:
        boards = [
            leaderboard(store.board_data(key), bootstrap=bootstrap) for key in store.rules_keys()
        ]
    finally:
        store.close()
    if as_json:
        print(json.dumps({"boards": boards}, indent=1))
    else:
        print("\n\n".join(leaderboard_markdown(b) for b in boards if b["entries"]))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bergen-arena", description="Submit a policy file to an arena, or refit its ratings."
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
    return p


def main(argv: Sequence[str] | None = None) -> None:
    p = parser()
    args = p.parse_args(argv)
    if args.command == "submit":
        sys.exit(submit(args.file, args.server, args.name))
    if args.bootstrap < 1:
        p.error("--bootstrap must be >= 1")
    sys.exit(ratings(args.db, args.bootstrap, args.json))


if __name__ == "__main__":
    main()
