"""Live updates: a seat's or a spectator's view over a WebSocket, sent again after every change.

A socket only listens: moves go to the API. Spectators' sockets are bounded per table and per
table and address (a spectator link cannot crowd out the players, nor one address the other
spectators), the server's sockets in all and per address; a socket over a bound closes with
``4429`` and the page tries again later. A seat link's sockets are bounded too, but there the
newest page wins: the oldest socket is told ``opened_elsewhere`` and closed with ``4409`` (the
page stops reconnecting), so whoever holds a copy of a link cannot starve its owner's page. A
socket of a table that expires gets the reason and is closed with ``4410``; an unknown link
closes with ``4404`` (the page stops reconnecting on those).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bergen_env.web.api import seat_message
from bergen_env.web.errors import TableError
from bergen_env.web.store import EXPIRED
from bergen_env.web.tables import Table, TableManager, quota_key


def _error(exc: TableError) -> dict[str, Any]:
    return {"type": "error", "error": exc.message, "code": exc.code, "params": exc.params}


async def refuse(ws: WebSocket, exc: TableError) -> None:
    await ws.accept()
    await ws.send_json(_error(exc))
    await ws.close(4000 + exc.status)


async def seat_socket(ws: WebSocket) -> None:
    tables: TableManager = ws.app.state.tables
    token = ws.path_params["token"]
    try:
        table, _ = tables.by_token(token)
    except TableError as exc:
        await refuse(ws, exc)
        return
    await serve(ws, tables, table, lambda: seat_message(table, table.seat_of(token)), token)


async def watch_socket(ws: WebSocket) -> None:
    tables: TableManager = ws.app.state.tables
    try:
        table = tables.by_id(ws.path_params["table"])
    except TableError as exc:
        await refuse(ws, exc)
        return
    await serve(ws, tables, table, lambda: table.snapshot(None))


async def serve(
    ws: WebSocket,
    tables: TableManager,
    table: Table,
    snapshot: Callable[[], dict[str, Any]],
    token: str | None = None,
) -> None:
    """Send ``snapshot()`` now and after every change of ``table`` until either side closes
    (``token``: the seat link of the socket; None: a spectator)."""
    address = quota_key(ws.client.host if ws.client else "unknown")
    limits = tables.limits
    full = (
        tables.sockets[address] >= limits.sockets_per_address
        or tables.sockets.total() >= limits.max_sockets
    )
    if token is None:
        full = full or table.connections(None) >= limits.spectators_per_table
        full = full or table.connections(None, address) >= limits.spectators_per_address
    if full:
        await refuse(ws, TableError(429, "too_many_sockets", "too many open connections"))
        return
    if token is not None and table.connections(token) >= limits.sockets_per_seat:
        table.evict_oldest(token)
    await ws.accept()
    tables.sockets[address] += 1
    changed = table.listen(token, address)
    receiving = asyncio.ensure_future(ws.receive())
    sent = -1
    try:
        while True:
            changed.clear()
            if table.version != sent:
                sent = table.version
                await ws.send_json(snapshot())
            if table.closed:
                await close_closed(ws, tables, table)
                return
            if changed in table.evicted:
                exc = TableError(
                    409, "opened_elsewhere", "this seat was opened in a newer page; it gets updates"
                )
                await ws.send_json(_error(exc))
                await ws.close(4409)
                return
            waiting = asyncio.ensure_future(changed.wait())
            done, _ = await asyncio.wait({receiving, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if receiving in done:
                waiting.cancel()
                message = receiving.result()
                if message["type"] == "websocket.disconnect":
                    return
                await ws.send_json(
                    _error(
                        TableError(
                            400,
                            "socket_listens",
                            "this socket only sends updates; POST moves to the API",
                        )
                    )
                )
                receiving = asyncio.ensure_future(ws.receive())
    except (WebSocketDisconnect, RuntimeError):
        return
    finally:
        receiving.cancel()
        table.unlisten(changed)
        tables.sockets[address] -= 1
        if tables.sockets[address] <= 0:
            del tables.sockets[address]


async def close_closed(ws: WebSocket, tables: TableManager, table: Table) -> None:
    """Say why a table's updates stop: it expired (4410), or the server is stopping (1012)."""
    if table.row.status == EXPIRED:
        minutes = tables.limits.idle_seconds / 60
        exc = TableError(
            410,
            "expired",
            f"this table expired after {minutes:g} minutes without a move",
            minutes=minutes,
        )
        await ws.send_json(_error(exc))
        await ws.close(4410)
        return
    if tables.store.durable:
        exc = TableError(503, "restarting", "the server is restarting; the table is kept")
    else:
        exc = TableError(503, "stopping", "the server is stopping and keeps no tables")
    await ws.send_json(_error(exc))
    await ws.close(1012)


ROUTES = [
    WebSocketRoute("/ws/s/{token}", seat_socket),
    WebSocketRoute("/ws/w/{table}", watch_socket),
]
