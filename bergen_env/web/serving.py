"""How the server listens: uvicorn's settings and the HTTP connections a stranger may hold.

uvicorn closes a kept-alive connection that stays silent after an answer
(``timeout_keep_alive``), bounds the size of a request's head (``h11_max_incomplete_event_size``)
and answers 503 over ``limit_concurrency``; it has no deadline for the head of a request,
so a client that sends nothing, or drips a header line every few seconds, holds its connection
for ever. :class:`GuardedH11Protocol` adds what is missing: the head of every request must
arrive within :attr:`Limits.header_seconds` of the connection (or of the previous answer),
and one client address (:func:`~bergen_env.web.tables.quota_key`) may hold at most
:attr:`Limits.connections_per_address` open HTTP connections, the server
:attr:`Limits.max_connections`; a connection over a bound is closed at once. A WebSocket leaves
these counts when it is upgraded (the sockets have their own bounds, in
:mod:`~bergen_env.web.sockets`). A request's body has its own deadline
(:attr:`Limits.body_seconds`, in :class:`~bergen_env.web.guard.Guard`).
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from bergen_env.web.tables import Limits, quota_key

#: The largest request head (request line and headers) a client may send, in bytes.
MAX_HEAD_BYTES = 16 * 1024

#: The largest WebSocket message a client may send (larger: the socket is closed, 1009).
WS_MAX_BYTES = 4096


class ConnectionGate:
    """Open HTTP connections by client address, within a bound per address and in all."""

    def __init__(self, per_address: int, total: int, proxies: Sequence[str] = ()) -> None:
        self.per_address = per_address
        self.total = total
        self.proxies = frozenset(proxies)  # trusted reverse proxies: bounded in all only
        self.open: Counter[str] = Counter()
        self.count = 0

    def admit(self, address: str) -> bool:
        """Count one more connection of ``address``, or False (nothing counted) over a bound."""
        mine = 0 if address in self.proxies else self.open[address]
        if mine >= self.per_address or self.count >= self.total:
            return False
        self.open[address] += 1
        self.count += 1
        return True

    def release(self, address: str) -> None:
        self.count -= 1
        self.open[address] -= 1
        if self.open[address] <= 0:
            del self.open[address]


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for request heads and bounded connections."""

    def __init__(self, *args: Any, gate: ConnectionGate, header_seconds: float, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._gate = gate
        self._header_seconds = header_seconds
        self._address: str | None = None  # set while this connection is counted
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = quota_key(self.client[0]) if self.client else "unknown"
        if not self._gate.admit(address):
            transport.abort()
            return
        self._address = address
        self._await_head()

    def _await_head(self) -> None:
        """Close the connection unless a request's head has arrived within the deadline."""
        self._stop_waiting()
        self._deadline = self.loop.call_later(self._header_seconds, self._head_late)

    def _head_late(self) -> None:
        self._deadline = None
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self.transport.is_closing():
            self.transport.close()

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _release(self) -> None:
        self._stop_waiting()
        if self._address is not None:
            self._gate.release(self._address)
            self._address = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self._address is not None:
            self._await_head()

    def handle_websocket_upgrade(self, event: Any) -> None:
        self._release()  # the socket is no longer this protocol's
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        super().connection_lost(exc)


def server_config(
    app: Any, limits: Limits, proxies: Sequence[str] = (), **kw: Any
) -> uvicorn.Config:
    """uvicorn's settings for ``app`` under ``limits``: ``proxies`` are the trusted reverse
    proxies (their ``X-Forwarded-For`` names the client); ``kw``: host, port, log level..."""
    gate = ConnectionGate(limits.connections_per_address, limits.max_connections, proxies)
    protocol = functools.partial(
        GuardedH11Protocol, gate=gate, header_seconds=limits.header_seconds
    )
    return uvicorn.Config(
        app,
        http=protocol,  # type: ignore[arg-type]
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        timeout_keep_alive=min(5, limits.header_seconds),
        ws_max_size=WS_MAX_BYTES,  # the sockets only listen: a client has nothing big to send
        proxy_headers=bool(proxies),
        forwarded_allow_ips=list(proxies) or None,
        **kw,
    )
