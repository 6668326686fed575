"""The web app: pages, the JSON API and live updates over WebSockets (Starlette).

Pages: ``/`` (create a table, open a replay), ``/play?...`` (quick start: creates a table and
redirects to seat 0), ``/s/{token}`` (a seat), ``/w/{table}`` (a spectator), ``/replay`` and
``/replay/{table}``, ``/rules?lang=xx``. API (JSON; errors are ``{"error": "..."}`` with a 4xx):

- ``GET /api/meta``: presets, their options per seating, the agent menu (and which of its
  agents play unchanged presets only), the languages.
- ``POST /api/tables``: create a table; answers every seat's link and the spectator link.
- ``GET /api/s/{token}``, ``POST /api/s/{token}/move`` (``{"action": id}`` or
  ``{"action": "[3|5]>left"}``), ``WS /ws/s/{token}``: a seat's view, moves and updates.
- ``GET /api/w/{table}``, ``WS /ws/w/{table}``: the spectator's view and updates.
- ``GET /api/w/{table}/replay`` (the finished match, ``bergen-replay/1``),
  ``GET /api/w/{table}/frames``, ``POST /api/replay`` (a replay file's text): frames to step.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from bergen_env import rules as rules_module
from bergen_env.errors import BergenError, InvalidOptionError
from bergen_env.rules import PRESETS, RULE_OPTIONS, Rules
from bergen_env.web.i18n import LANGUAGES, rules_page
from bergen_env.web.replays import parse_replay_text, replay_frames
from bergen_env.web.tables import PERSON, Table, TableError, TableManager, presets_only

STATIC = Path(__file__).parent / "static"

#: Query parameters of ``/play`` besides the rule options.
PLAY_PARAMS = (
    "players",
    "num_players",
    "partnerships",
    "preset",
    "rules",
    "opponents",
    "seats",
    "seed",
    "lang",
)
#: Keys of a ``POST /api/tables`` body.
CREATE_KEYS = ("preset", "num_players", "partnerships", "options", "seats", "seed", "lang")


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


# ---------------------------------------------------------------------- request limits


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``max_bytes`` with 413 naming the limit."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body too large: the limit is {self.max_bytes} bytes"
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await error(413, message)(scope, receive, send)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    raise TableError(413, message)
            return msg

        await self.app(scope, limited, send)


# ---------------------------------------------------------------------- parsing rules


def _parse_bool(name: str, text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise TableError(400, f"option {name!r} must be true or false, got {text!r}")


def _parse_int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise TableError(400, f"option {name!r} must be an integer, got {text!r}") from None


def build_rules(
    preset: str, num_players: Any, partnerships: Any, options: Mapping[str, Any], *, text: bool
) -> Rules:
    """Validated :class:`Rules` from a preset, a seating and option overrides.

    With ``text=True`` (query strings) values are parsed by the type the preset gives each
    option; JSON values are passed as they are. A bad option is a ``TableError(400)`` naming it.
    """
    if text:
        num_players = _parse_int("players", str(num_players))
        partnerships = _parse_bool("partnerships", str(partnerships))
    unknown = sorted(set(options) - set(RULE_OPTIONS))
    if unknown:
        raise TableError(400, f"unknown rule option(s) {unknown}; valid: {list(RULE_OPTIONS)}")
    try:
        base = Rules.preset(preset, num_players=num_players, partnerships=partnerships)
        overrides: dict[str, Any] = {}
        for name, value in options.items():
            if text:
                current = getattr(base, name)
                if isinstance(current, bool):
                    value = _parse_bool(name, value)
                elif isinstance(current, int):
                    value = _parse_int(name, value)
            overrides[name] = value
        return Rules.preset(preset, num_players=num_players, partnerships=partnerships, **overrides)
    except InvalidOptionError as exc:
        raise TableError(400, str(exc)) from None


def _seat_kinds(rules: Rules, seats: Any, opponents: Any) -> list[str]:
    if seats is not None:
        kinds = seats.split(",") if isinstance(seats, str) else seats
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise TableError(400, "'seats' must be a list of seat kinds (person or an agent)")
        return [k.strip() for k in kinds]
    others = [k.strip() for k in str(opponents).split(",")]
    if len(others) == 1:
        others *= rules.num_players - 1
    if len(others) != rules.num_players - 1:
        raise TableError(
            400,
            f"'opponents' names {len(others)} agents for {rules.num_players - 1} other seat(s); "
            "name one for all or one per seat",
        )
    return [PERSON, *others]


def _lang(value: Any) -> str:
    lang = str(value or "en")
    if lang not in LANGUAGES:
        raise TableError(400, f"unknown language {lang!r}; choose one of {list(LANGUAGES)}")
    return lang


def _seed(value: Any, text: bool) -> int | None:
    if value is None:
        return None
    seed = _parse_int("seed", value) if text else value
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TableError(400, f"'seed' must be an integer >= 0, got {value!r}")
    return seed


# ---------------------------------------------------------------------- the app


def links(table: Table) -> dict[str, Any]:
    """Every person seat's link and the spectator link (paths; the page makes them absolute)."""
    return {
        "table": table.id,
        "seats": [
            {"seat": s.index, "kind": s.kind, "link": f"/s/{s.token}" if s.token else None}
            for s in table.seats
        ],
        "watch": f"/w/{table.id}",
    }


def create_app(manager: TableManager | None = None, *, sweep_seconds: float = 30.0) -> Starlette:
    """The Starlette app over ``manager`` (a new :class:`TableManager` by default)."""
    tables = manager if manager is not None else TableManager()

    def seat_snapshot(table: Table, seat: int) -> dict[str, Any]:
        msg = table.snapshot(seat)
        if seat == table.host:  # the person who made the table hands out the other links
            msg["share"] = links(table)
        return msg

    async def home(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def table_page(request: Request) -> Response:
        return FileResponse(STATIC / "table.html")

    async def replay_page(request: Request) -> Response:
        return FileResponse(STATIC / "replay.html")

    async def rules(request: Request) -> Response:
        try:
            lang = _lang(request.query_params.get("lang"))
        except TableError as exc:
            return HTMLResponse(exc.message, status_code=exc.status)
        return HTMLResponse(rules_page(lang))

    async def play(request: Request) -> Response:
        q = request.query_params
        unknown = sorted(set(q) - set(PLAY_PARAMS) - set(RULE_OPTIONS))
        try:
            if unknown:
                raise TableError(
                    400,
                    f"unknown query parameter(s) {unknown}; valid: "
                    f"{list(PLAY_PARAMS) + list(RULE_OPTIONS)}",
                )
            options = {k: q[k] for k in RULE_OPTIONS if k in q}
            players = q.get("players", q.get("num_players", "2"))
            preset = q.get("preset", q.get("rules", "standard"))
            rules_ = build_rules(
                preset, players, q.get("partnerships", "false"), options, text=True
            )
            kinds = _seat_kinds(rules_, q.get("seats"), q.get("opponents", "greedy"))
            lang = _lang(q.get("lang"))
            table = tables.create(rules_, kinds, seed=_seed(q.get("seed"), True), lang=lang)
        except TableError as exc:
            return HTMLResponse(
                f"<!doctype html><meta charset=utf-8><title>Bergen</title>"
                f"<p>Cannot start this table: {_html(exc.message)}</p><p><a href='/'>Back</a>",
                status_code=exc.status,
            )
        table.start()
        if table.host is None:  # agents only: watch them
            return RedirectResponse(f"/w/{table.id}?lang={lang}", 303)
        return RedirectResponse(f"/s/{table.seats[table.host].token}?lang={lang}", 303)

    async def meta(request: Request) -> Response:
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
        return JSONResponse(
            {
                "presets": presets,
                "options": list(RULE_OPTIONS),
                "choices": choices,
                "agents": sorted(tables.agents),
                # agents the page leaves out of the menu once an option differs from the preset
                "presets_only": sorted(
                    n for n, spec in tables.agents.items() if presets_only(spec)
                ),
                "languages": LANGUAGES,
                "limits": {
                    "max_tables": tables.limits.max_tables,
                    "idle_seconds": tables.limits.idle_seconds,
                    "max_body_bytes": tables.limits.max_body_bytes,
                },
            }
        )

    async def create(request: Request) -> Response:
        body = await _json_body(request)
        unknown = sorted(set(body) - set(CREATE_KEYS))
        if unknown:
            raise TableError(400, f"unknown key(s) {unknown}; valid: {list(CREATE_KEYS)}")
        options = body.get("options", {})
        if not isinstance(options, dict):
            raise TableError(400, "'options' must be an object of rule options")
        rules_ = build_rules(
            body.get("preset", "standard"),
            body.get("num_players", 2),
            body.get("partnerships", False),
            options,
            text=False,
        )
        kinds = _seat_kinds(rules_, body.get("seats"), "greedy")
        table = tables.create(
            rules_, kinds, seed=_seed(body.get("seed"), False), lang=_lang(body.get("lang"))
        )
        table.start()
        return JSONResponse(links(table), status_code=201)

    async def seat_state(request: Request) -> Response:
        table, seat = tables.by_token(request.path_params["token"])
        table.touch()
        return JSONResponse(seat_snapshot(table, seat))

    async def seat_move(request: Request) -> Response:
        start = time.perf_counter()
        table, seat = tables.by_token(request.path_params["token"])
        body = await _json_body(request)
        unknown = sorted(set(body) - {"action"})
        if "action" not in body or unknown:
            raise TableError(400, 'a move is {"action": id or move text}, e.g. "[3|5]>left"')
        table.move(seat, body["action"])
        response = JSONResponse(seat_snapshot(table, seat))
        # the server's own share of the move's latency (read by benchmarks/web_load.py)
        response.headers["server-timing"] = f"app;dur={(time.perf_counter() - start) * 1000:.3f}"
        return response

    async def watch_state(request: Request) -> Response:
        table = tables.by_id(request.path_params["table"])
        return JSONResponse(table.snapshot(None))

    async def table_replay(request: Request) -> Response:
        table = tables.by_id(request.path_params["table"])
        text = json.dumps(table.replay_record(), separators=(",", ":")) + "\n"
        return Response(
            text,
            media_type="application/x-ndjson",
            headers={"content-disposition": f'attachment; filename="bergen-{table.id}.jsonl"'},
        )

    async def table_frames(request: Request) -> Response:
        table = tables.by_id(request.path_params["table"])
        return JSONResponse(replay_frames(table.replay_record()))

    async def upload_frames(request: Request) -> Response:
        raw = await request.body()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise TableError(400, "the replay file is not UTF-8 text") from None
        match_text = request.query_params.get("match", "0")
        match = _parse_int("match", match_text)
        try:
            records = parse_replay_text(text)
            if not 0 <= match < len(records):
                raise TableError(
                    400, f"'match' {match} is out of range: the file holds {len(records)} match(es)"
                )
            out = replay_frames(records[match], match)
        except BergenError as exc:
            raise TableError(400, f"not a usable bergen-replay/1 file: {exc}") from None
        out["matches"] = len(records)
        return JSONResponse(out)

    async def seat_socket(ws: WebSocket) -> None:
        try:
            table, seat = tables.by_token(ws.path_params["token"])
        except TableError as exc:
            await _refuse(ws, exc)
            return
        await _serve_socket(ws, table, lambda: seat_snapshot(table, seat))

    async def watch_socket(ws: WebSocket) -> None:
        try:
            table = tables.by_id(ws.path_params["table"])
        except TableError as exc:
            await _refuse(ws, exc)
            return
        await _serve_socket(ws, table, lambda: table.snapshot(None))

    async def _serve_socket(ws: WebSocket, table: Table, snapshot: Any) -> None:
        if table.connections >= tables.limits.max_connections_per_table:
            await _refuse(ws, TableError(429, "too many connections to this table"))
            return
        await ws.accept()
        changed = table.listen()
        table.touch()
        receiving = asyncio.ensure_future(ws.receive())
        sent = -1
        try:
            while True:
                changed.clear()
                if table.version != sent:
                    sent = table.version
                    await ws.send_json(snapshot())
                if table.closed:
                    await ws.send_json({"type": "error", "error": tables.gone_message("table")})
                    await ws.close(4404)
                    return
                waiting = asyncio.ensure_future(changed.wait())
                done, _ = await asyncio.wait(
                    {receiving, waiting}, return_when=asyncio.FIRST_COMPLETED
                )
                if receiving in done:
                    waiting.cancel()
                    message = receiving.result()
                    if message["type"] == "websocket.disconnect":
                        return
                    await ws.send_json(
                        {
                            "type": "error",
                            "error": "this socket only sends updates; POST moves to the API",
                        }
                    )
                    receiving = asyncio.ensure_future(ws.receive())
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            receiving.cancel()
            table.unlisten(changed)
            table.touch()

    async def _refuse(ws: WebSocket, exc: TableError) -> None:
        await ws.accept()
        await ws.send_json({"type": "error", "error": exc.message})
        await ws.close(4000 + exc.status)

    async def table_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, TableError)
        return error(exc.status, exc.message)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async def sweep() -> None:
            while True:
                await asyncio.sleep(sweep_seconds)
                tables.expire()

        task = asyncio.get_running_loop().create_task(sweep())
        try:
            yield
        finally:
            task.cancel()
            tables.close_all()

    routes = [
        Route("/", home),
        Route("/play", play),
        Route("/s/{token}", table_page),
        Route("/w/{table}", table_page),
        Route("/replay", replay_page),
        Route("/replay/{table}", replay_page),
        Route("/rules", rules),
        Route("/api/meta", meta),
        Route("/api/tables", create, methods=["POST"]),
        Route("/api/s/{token}", seat_state),
        Route("/api/s/{token}/move", seat_move, methods=["POST"]),
        Route("/api/w/{table}", watch_state),
        Route("/api/w/{table}/replay", table_replay),
        Route("/api/w/{table}/frames", table_frames),
        Route("/api/replay", upload_frames, methods=["POST"]),
        WebSocketRoute("/ws/s/{token}", seat_socket),
        WebSocketRoute("/ws/w/{table}", watch_socket),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={TableError: table_error}, lifespan=lifespan)
    app.state.tables = tables
    app.add_middleware(BodyLimit, max_bytes=tables.limits.max_body_bytes)
    return app


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TableError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise TableError(400, "the request body must be a JSON object")
    return body


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
