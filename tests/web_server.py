"""A real server on a free localhost port in a background thread, for browser and load tests
(uvicorn with the settings of ``bergen-web``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from bergen_env.web import TableManager
from bergen_env.web.app import create_app
from bergen_env.web.arena_runner import ArenaRunner
from bergen_env.web.serving import server_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
