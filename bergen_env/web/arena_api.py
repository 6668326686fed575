"""The arena's JSON API and pages: submit a policy file, read the leaderboards, play a policy.

``POST /api/arena?name=NAME`` takes a portable policy file as the raw body
(``application/octet-stream``, at most :attr:`ArenaSettings.max_file_bytes`) or as the file
field ``file`` of a ``multipart/form-data`` form (the name, if any, in its text field ``name``:
the ``/arena`` page's form, which works without its script too). The file is checked in a worker
(a bad file is a 400 whose ``error`` names the problem in one line), kept by its SHA-256 (201;
the same file again: 200 and the entry it already has) and its pairs are queued; a form sent by
a browser that asks for HTML is answered by a redirect (303) to the policy's page. Quotas per
client address: upload requests per minute (checked before the body is read) and new files per
hour (429 with ``Retry-After``), and a bound on the queue (503). ``GET /api/arena`` gives
every leaderboard (with the exploitability measured for an entry, if any);
``GET /api/arena/{sha256}`` one policy's entry, its pairs, its exploitability and the link that
opens a table against it. ``/arena`` and ``/arena/{sha256}`` are the pages. A server without
an arena answers 404.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import urllib.parse
from typing import Any

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from bergen_env.arena_exploit import with_exploits
from bergen_env.arena_store import (
    PolicyEntry,
    SubmissionError,
    board_id,
    check_name,
    file_id,
    rules_key,
)
from bergen_env.rules import RULE_OPTIONS, Rules
from bergen_env.web.api import address as client_address
from bergen_env.web.arena_runner import ArenaRunner, agent_name, check_upload
from bergen_env.web.errors import TableError
from bergen_env.web.guard import FORM_BODY, content_type
from bergen_env.web.i18n import STATIC
from bergen_env.web.tables import TableManager, quota_key

#: A policy page's path holds a full SHA-256.
SHA_CHARS = frozenset("0123456789abcdef")


def arena(request: Request) -> ArenaRunner:
    runner = getattr(request.app.state, "arena", None)
    if runner is None:
        raise TableError(404, "no_arena", "this server runs no arena (start it with --arena FILE)")
    return runner


def play_link(rules: Rules, sha256: str) -> str:
    """The ``/play`` link of a table where a person plays against the policy in every other seat
    (the rule options that differ from the preset's are in the link)."""
    preset = Rules.preset(
        rules.name, num_players=rules.num_players, partnerships=rules.partnerships
    )
    query: dict[str, str] = {
        "rules": rules.name,
        "num_players": str(rules.num_players),
        "partnerships": str(rules.partnerships).lower(),
    }
    for name in RULE_OPTIONS:
        value = getattr(rules, name)
        if value != getattr(preset, name):
            query[name] = str(value).lower() if isinstance(value, bool) else str(value)
    query["opponents"] = agent_name(sha256)
    return "/play?" + urllib.parse.urlencode(query)


def _entry_json(entry: PolicyEntry) -> dict[str, Any]:
    return {
        "sha256": entry.sha256,
        "name": entry.name,
        "anchor": entry.anchor,
        "rules": entry.rules.to_dict(),
        "board": board_id(rules_key(entry.rules)),
        "size": entry.size,
        "parameters": entry.parameters,
        "submitted": entry.created,
        "page": f"/arena/{entry.sha256}",
        "play": play_link(entry.rules, entry.sha256),
    }


async def submit(request: Request) -> Response:
    runner = arena(request)
    settings = runner.settings
    address = quota_key(client_address(request))
    tables: TableManager = request.app.state.tables
    tables.charge(address, settings.uploads_per_minute, "policy uploads")
    form = content_type(request.scope) == FORM_BODY
    name = _name(request.query_params.get("name"))
    if form:
        data, form_name = await _form_file(request)
        if form_name:
            name = _name(form_name)
    else:
        data = await request.body()
    # reading a whole network costs CPU: in the worker for heavy requests, as replay files
    if tables.pool is not None:
        sub, problem = await tables.pool.run(check_upload, data, settings.max_file_bytes)
    else:
        sub, problem = await asyncio.to_thread(check_upload, data, settings.max_file_bytes)
    if sub is None:
        raise TableError(400, "bad_policy", str(problem))
    sub = dataclasses.replace(sub, data=data)  # the worker's answer leaves the bytes out
    # the store's calls in threads: a write being committed (its fsync) never holds the loop
    known = await asyncio.to_thread(runner.store.policy, sub.sha256)
    if known is None:
        hour = await _count(runner, address)
        if hour >= settings.submissions_per_hour:
            raise TableError(
                429,
                "too_many_policies",
                f"your address submitted {hour} new policies in the last hour (the limit); "
                "try again later",
                retry_after=600,
            )
        if await asyncio.to_thread(runner.store.queued_count) >= settings.max_queued:
            raise TableError(
                503,
                "arena_busy",
                "the arena's queue is full; submit again in a few minutes",
                retry_after=300,
            )
    entry, new, queued = await runner.add(sub, name, address)
    spec = await asyncio.to_thread(runner.store.agent_spec, entry.id)  # writes the file once
    tables.agents.setdefault(agent_name(entry.sha256), spec)
    out = {**_entry_json(entry), "new": new, "queued": queued}
    if form and "text/html" in request.headers.get("accept", ""):  # a form without its script
        return RedirectResponse(out["page"], status_code=303)
    return JSONResponse(out, status_code=201 if new else 200)


def _name(text: str | None) -> str:
    try:
        return check_name(text)
    except SubmissionError as exc:
        raise TableError(400, "bad_name", str(exc)) from None


async def _form_file(request: Request) -> tuple[bytes, str | None]:
    """The field ``file`` of a ``multipart/form-data`` body and its text field ``name``, if any
    (Starlette's parser, which python-multipart drives; no other field is taken)."""
    try:
        async with request.form(max_files=1, max_fields=1, max_part_size=1024) as fields:
            upload, name = fields.get("file"), fields.get("name")
            if not isinstance(upload, UploadFile):
                raise TableError(400, "bad_policy", "the form has no file field 'file'")
            data = await upload.read()
    except (MultiPartException, HTTPException) as exc:
        detail = exc.message if isinstance(exc, MultiPartException) else exc.detail
        raise TableError(400, "bad_policy", f"the form cannot be read: {detail}") from None
    return data, name if isinstance(name, str) else None


async def _count(runner: ArenaRunner, address: str) -> int:
    return await asyncio.to_thread(runner.store.submissions_since, address, time.time() - 3600)


async def boards(request: Request) -> Response:
    runner = arena(request)
    settings = runner.settings
    exploits = await asyncio.to_thread(runner.store.exploits)
    fitted = await asyncio.to_thread(runner.boards)
    return JSONResponse(
        {
            "boards": with_exploits(fitted, exploits),
            "queued": await asyncio.to_thread(runner.store.queued_count),
            "settings": {
                "matches": settings.matches,
                "rivals": settings.rivals,
                "bootstrap": settings.bootstrap,
                "max_file_bytes": settings.max_file_bytes,
            },
        }
    )


async def policy(request: Request) -> Response:
    runner = arena(request)
    sha = request.path_params["sha256"]
    entry = None
    if len(sha) == 64 and set(sha) <= SHA_CHARS:
        entry = await asyncio.to_thread(runner.store.policy, sha)
    if entry is None:
        raise TableError(404, "no_policy", "no policy with this SHA-256 in the arena")
    key = rules_key(entry.rules)
    data = await asyncio.to_thread(runner.store.board_data, key)
    board = runner.board_of(key) or {"entries": []}
    me = file_id(sha)
    names = {e["agent"]: e["name"] for e in board["entries"]}
    pairs = []
    for p in data.pairs:
        if me not in (p.a, p.b):
            continue
        first = p.a == me
        other = p.b if first else p.a
        pairs.append(
            {
                "opponent": names.get(other, other),
                "matches": p.outcome.matches,
                "score": round(p.outcome.score if first else 1 - p.outcome.score, 4),
                "wins": p.outcome.wins[0 if first else 1],
            }
        )
    exploits = await asyncio.to_thread(runner.store.exploits)
    out = _entry_json(entry)
    out["entry"] = next((e for e in board["entries"] if e["agent"] == me), None)
    out["exploit"] = exploits.get(sha)
    out["pairs"] = pairs
    out["queued"] = data.pending.get(me, 0)
    return JSONResponse(out)


async def page(request: Request) -> Response:
    """``/arena`` and ``/arena/{sha256}``: one page that scripts itself (another path: 404)."""
    sha = request.path_params.get("sha256")
    if sha is not None and not (len(sha) == 64 and set(sha) <= SHA_CHARS):
        return HTMLResponse(
            "<!doctype html><meta charset=utf-8><title>Bergen</title>"
            "<p>No such policy. <a href='/arena'>Arena</a>",
            status_code=404,
        )
    return FileResponse(STATIC / "arena.html", headers={"cache-control": "no-store"})


ROUTES = [
    Route("/api/arena", submit, methods=["POST"]),
    Route("/api/arena", boards),
    Route("/api/arena/{sha256}", policy),
    Route("/arena", page),
    Route("/arena/{sha256}", page),
]
