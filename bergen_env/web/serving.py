"""How the server listens: uvicorn's settings and the HTTP connections a stranger may hold.

uvicorn closes a kept-alive connection that stays silent after an answer
(``timeout_keep_alive``) and answers 503 over ``limit_concurrency``; it has no deadline for the
head of a request, so a client that sends nothing, or drips a header line every few seconds,
holds its connection for ever (and with httptools, its parser by default, no bound on the
head's size either). :class:`GuardedProtocol` (uvicorn's httptools protocol, or its h11 one
where httptools is missing) adds what is missing: a request's head must be at most
:data:`MAX_HEAD_BYTES` and arrive within :attr:`Limits.header_seconds` of the connection (or
of the previous answer), and one client address (:func:`~bergen_env.web.tables.quota_key`)
may hold at most :attr:`Limits.connections_per_address` open HTTP connections, the server
:attr:`Limits.max_connections`; a connection over the address's bound is closed at once, and
one over the server's takes the place of the connection idle longest (a silent crowd cannot
keep a newcomer out). A WebSocket leaves these counts when it is upgraded (the sockets have
their own bounds, in :mod:`~bergen_env.web.sockets`). A request's body has its own deadline
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

try:  # uvicorn's faster parser, in uvicorn[standard]
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

from bergen_env.web.tables import Limits, quota_key

#: The largest request head (request line and headers) a client may send, in bytes.
MAX_HEAD_BYTES = 16 * 1024

#: The largest WebSocket message a client may send (larger: the socket is closed, 1009).
WS_MAX_BYTES = 4096


class ConnectionGate:
    """Open HTTP connections by client address, within a bound per address and in all.

    When the server is full, a new connection takes the place of the one that has waited
    longest for a request's head (a connection answering a request is never closed)."""

    def __init__(self, per_address: int, total: int, proxies: Sequence[str] = ()) -> None:
        self.per_address = per_address
        self.total = total
        self.proxies = frozenset(proxies)  # trusted reverse proxies: bounded in all only
        self.open: Counter[str] = Counter()
        #: Every counted connection, the one idle longest first.
        self.counted: dict[_Guarded, str] = {}

    def admit(self, protocol: _Guarded, address: str) -> bool:
        """Count ``protocol``'s connection from ``address``, or False (nothing counted) over the
        address's bound, or over the server's with no idle connection to close instead."""
        if address not in self.proxies and self.open[address] >= self.per_address:
            return False
        if len(self.counted) >= self.total:
            oldest = next((p for p in self.counted if p.idle), None)
            if oldest is None:
                return False
            oldest.transport.close()
            self.release(oldest)
        self.open[address] += 1
        self.counted[protocol] = address
        return True

    def waiting(self, protocol: _Guarded) -> None:
        """``protocol`` starts waiting for a request's head: it is the latest to."""
        address = self.counted.pop(protocol, None)
        if address is not None:
            self.counted[protocol] = address

    def release(self, protocol: _Guarded) -> None:
        address = self.counted.pop(protocol, None)
        if address is None:
            return
        self.open[address] -= 1
        if self.open[address] <= 0:
            del self.open[address]


class _Guarded:
    """A deadline for request heads and bounded connections, over one of uvicorn's HTTP
    protocols (the class it is mixed into)."""

    cycle: Any
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    client: tuple[str, int] | None

    def __init__(self, *args: Any, gate: ConnectionGate, header_seconds: float, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._gate = gate
        self._header_seconds = header_seconds
        self._deadline: asyncio.TimerHandle | None = None
        self._head_bytes = 0

    @property
    def idle(self) -> bool:
        """No request is being answered (one may be arriving)."""
        return self.cycle is None or self.cycle.response_complete

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        address = quota_key(self.client[0]) if self.client else "unknown"
        if not self._gate.admit(self, address):  # type: ignore[arg-type]
            transport.abort()
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self.idle:
            self._head_bytes += len(data)
        super().data_received(data)  # type: ignore[misc]
        counted = self in self._gate.counted  # not once upgraded to a WebSocket
        too_long = self.idle and self._head_bytes > MAX_HEAD_BYTES
        if counted and too_long and not self.transport.is_closing():
            self.send_400_response("Request head too large.")  # type: ignore[attr-defined]

    def _await_head(self) -> None:
        """Close the connection unless a request's head has arrived within the deadline."""
        self._stop_waiting()
        self._head_bytes = 0
        self._gate.waiting(self)  # type: ignore[arg-type]
        self._deadline = self.loop.call_later(self._header_seconds, self._head_late)

    def _head_late(self) -> None:
        self._deadline = None
        if self.idle and not self.transport.is_closing():
            self.transport.close()

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _release(self) -> None:
        self._stop_waiting()
        self._gate.release(self)  # type: ignore[arg-type]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing() and self in self._gate.counted:
            self._await_head()

    def handle_websocket_upgrade(self, *args: Any) -> None:
        self._release()  # the socket is no longer this protocol's
        super().handle_websocket_upgrade(*args)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        super().connection_lost(exc)  # type: ignore[misc]


class GuardedH11Protocol(_Guarded, H11Protocol):
    """uvicorn's h11 protocol, guarded (pure Python: where httptools is missing)."""


if HttpToolsProtocol is not None:

    class GuardedHttpToolsProtocol(_Guarded, HttpToolsProtocol):
        """uvicorn's httptools protocol, guarded (uvicorn's default where httptools is)."""

    GuardedProtocol: type[_Guarded] = GuardedHttpToolsProtocol
else:
    GuardedProtocol = GuardedH11Protocol


def server_config(
    app: Any, limits: Limits, proxies: Sequence[str] = (), **kw: Any
) -> uvicorn.Config:
    """uvicorn's settings for ``app`` under ``limits``: ``proxies`` are the trusted reverse
    proxies (their ``X-Forwarded-For`` names the client); ``kw``: host, port, log level..."""
    gate = ConnectionGate(limits.connections_per_address, limits.max_connections, proxies)
    protocol = functools.partial(GuardedProtocol, gate=gate, header_seconds=limits.header_seconds)
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
