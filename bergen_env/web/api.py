"""The JSON API: the menu, creating tables, a seat's view and moves, rematches, replays.

Every answer to a refused request is ``{"error", "code", "params"}`` with a 4xx status (see
:class:`~bergen_env.web.errors.TableError`); bodies are read by
:func:`~bergen_env.web.guard.read_json` with its limits.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bergen_env import rules as rules_module
from bergen_env.errors import InvalidOptionError
from bergen_env.rules import PRESETS, RULE_OPTIONS, Rules
from bergen_env.web import replay_frames
from bergen_env.web.arena_runner import AGENT_PREFIX
from bergen_env.web.errors import TableError, excerpt
from bergen_env.web.guard import read_json
from bergen_env.web.i18n import LANGUAGES
from bergen_env.web.options import CREATE_KEYS, OPTION_LIMITS, from_body, from_query
from bergen_env.web.tables import Table, TableManager, presets_only


def manager(request: Request) -> TableManager:
    return request.app.state.tables


def address(request: Request) -> str:
    """The client's address (the socket's; a trusted proxy's when the server names one)."""
    return request.client.host if request.client else "unknown"


def seat_message(table: Table, seat: int) -> dict[str, Any]:
    """A seat's view; the table's first person also gets every link to hand out."""
    msg = table.snapshot(seat)
    if seat == table.host:
        msg["share"] = table.links()
    return msg


async def meta(request: Request) -> Response:
    tables = manager(request)
    presets = {}
    for preset in PRESETS:
        seatings = {}
        for n, p in ((2, False), (3, False), (4, False), (4, True)):
            try:
                r = Rules.preset(preset, num_players=n, partnerships=p)
            except InvalidOptionError:
                continue
            seatings[f"{n}{'p' if p else ''}"] = {k: getattr(r, k) for k in RULE_OPTIONS}
        presets[preset] = seatings
    choices = {}  # the allowed values of text options: rules.LEADS for lead, ...
    for name in RULE_OPTIONS:
        values = getattr(rules_module, f"{name.upper()}S", None)
        if isinstance(values, tuple) and all(isinstance(v, str) for v in values):
            choices[name] = list(values)
    limits = tables.limits
    # the arena's policies sit at tables by its play links, not from the menu
    menu = {n: spec for n, spec in tables.agents.items() if not n.startswith(AGENT_PREFIX)}
    return JSONResponse(
        {
            "presets": presets,
            "options": list(RULE_OPTIONS),
            "option_limits": OPTION_LIMITS,
            "choices": choices,
            "agents": sorted(menu),
            # agents the page leaves out of the menu once an option differs from the preset
            "presets_only": sorted(n for n, spec in menu.items() if presets_only(spec)),
            "languages": LANGUAGES,
            "arena": getattr(request.app.state, "arena", None) is not None,
            "limits": {
                "max_tables": limits.max_tables,
                "tables_per_address": limits.tables_per_address,
                "creations_per_minute": limits.creations_per_minute,
                "idle_seconds": limits.idle_seconds,
                "max_hands": limits.max_hands,
                "replay_days": limits.replay_days,
                "max_body_bytes": limits.max_body_bytes,
            },
        }
    )


def created(table: Table) -> Response:
    """A new table's links and ``open``: the page its creator goes to (their own seat, or the
    spectators' page when no person sits)."""
    out = table.links()
    host = table.host
    out["open"] = f"/w/{table.id}" if host is None else f"/s/{table.seats[host].token}"
    return JSONResponse(out, status_code=201)


async def create(request: Request) -> Response:
    body = await read_json(request, CREATE_KEYS, manager(request).limits.max_json_bytes)
    return created(manager(request).create_from(from_body(body), address(request)))


async def play(request: Request) -> Response:
    """A ``/play?...`` link's table: ``{"query": {name: text}}`` as the link's query holds it."""
    body = await read_json(request, ("query",), manager(request).limits.max_json_bytes)
    query = body.get("query", {})
    if not isinstance(query, dict):
        raise TableError(400, "bad_query", "'query' must be an object of the link's parameters")
    return created(manager(request).create_from(from_query(query), address(request)))


async def seat_state(request: Request) -> Response:
    table, seat = manager(request).by_token(request.path_params["token"])
    return JSONResponse(seat_message(table, seat))


async def seat_move(request: Request) -> Response:
    start = time.perf_counter()
    tables = manager(request)
    table, seat = tables.by_token(request.path_params["token"])
    body = await read_json(request, ("action", "version"), tables.limits.max_json_bytes)
    if "action" not in body:
        raise TableError(
            400, "bad_action", 'a move is {"action": id or move text}, e.g. "[3|5]>left"'
        )
    await table.play(seat, body["action"], body.get("version"))
    response = JSONResponse(seat_message(table, seat))
    # the server's own share of the move's latency (read by benchmarks/web_load.py)
    response.headers["server-timing"] = f"app;dur={(time.perf_counter() - start) * 1000:.3f}"
    return response


async def rematch(request: Request) -> Response:
    tables = manager(request)
    table, _ = tables.by_token(request.path_params["token"])
    await read_json(request, (), tables.limits.max_json_bytes)
    await tables.rematch(table)
    return JSONResponse(seat_message(table, table.seat_of(request.path_params["token"])))


async def watch_state(request: Request) -> Response:
    table = manager(request).by_id(request.path_params["table"])
    return JSONResponse(table.snapshot(None))


async def table_replay(request: Request) -> Response:
    table = manager(request).by_id(request.path_params["table"])
    text = json.dumps(await table.finished_record(), separators=(",", ":")) + "\n"
    return Response(
        text,
        media_type="application/x-ndjson",
        headers={"content-disposition": f'attachment; filename="bergen-{table.id}.jsonl"'},
    )


async def table_frames(request: Request) -> Response:
    table = manager(request).by_id(request.path_params["table"])
    record = await table.finished_record()
    key = (table.id, record["seed"], len(record["hands"]), table.row.match)
    if table.frames[0] != key:  # re-simulated once per finished match, not per request
        table.frames = (key, await asyncio.to_thread(replay_frames.replay_frames, record))
    return JSONResponse(table.frames[1])


async def upload_frames(request: Request) -> Response:
    """Frames of an uploaded replay file: ``{"text": the file's text, "match": i}``."""
    tables = manager(request)
    tables.charge_replay(address(request))
    body = await read_json(request, ("text", "match"), tables.limits.max_body_bytes)
    text, match = body.get("text"), body.get("match", 0)
    if not isinstance(text, str):
        raise TableError(400, "bad_replay", "'text' must be the replay file's text")
    if isinstance(match, bool) or not isinstance(match, int):
        raise TableError(400, "bad_replay", f"'match' must be an integer, got {excerpt(match)}")
    # the heaviest request: in a worker process (the GIL and the event loop stay free)
    if tables.pool is not None:
        out, problem = await tables.pool.run(replay_frames.upload_frames, text, match)
    else:
        out, problem = await asyncio.to_thread(replay_frames.upload_frames, text, match)
    if problem is not None:
        raise TableError(400, "bad_replay", problem)
    return Response(out, media_type="application/json")


ROUTES = [
    Route("/api/meta", meta),
    Route("/api/tables", create, methods=["POST"]),
    Route("/api/play", play, methods=["POST"]),
    Route("/api/s/{token}", seat_state),
    Route("/api/s/{token}/move", seat_move, methods=["POST"]),
    Route("/api/s/{token}/rematch", rematch, methods=["POST"]),
    Route("/api/w/{table}", watch_state),
    Route("/api/w/{table}/replay", table_replay),
    Route("/api/w/{table}/frames", table_frames),
    Route("/api/replay", upload_frames, methods=["POST"]),
]
