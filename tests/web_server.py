"""A real server on a free localhost port in a background thread, for browser and load tests
(uvicorn with the settings of ``bergen-web``), and a client that waits for a server started in
another process to answer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import uvicorn

from bergen_env.web import TableManager
from bergen_env.web.app import create_app
from bergen_env.web.arena_runner import ArenaRunner
from bergen_env.web.serving import server_config

if TYPE_CHECKING:
    import httpx2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answering(base: str, seconds: float = 30.0) -> httpx2.Client:
    """A client of the server at ``base`` (started in another process) once it answers
    ``GET /api/meta``; RuntimeError if it does not within ``seconds``."""
    import httpx2  # the dev extra's, as the tests that start servers use

    client = httpx2.Client(base_url=base, timeout=30)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            client.get("/api/meta")
            return client
        except httpx2.TransportError:
            time.sleep(0.1)
    client.close()
    raise RuntimeError(f"the server at {base} did not start")


@contextmanager
def running_server(manager: TableManager, arena: ArenaRunner | None = None) -> Iterator[str]:
    """Serve ``manager``'s app (with ``arena``) on 127.0.0.1; yields the base URL; stops it at
    the end."""
    port = free_port()
    config = server_config(
        create_app(manager, arena=arena),
        manager.limits,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="websockets-sansio",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
