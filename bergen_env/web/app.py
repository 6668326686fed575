"""The web app: pages, the JSON API and live updates over WebSockets (Starlette).

Pages (:mod:`~bergen_env.web.pages`): ``/`` (create a table, open a replay), ``/play?...`` (a
quick-start link: the page creates the table), ``/s/{token}`` (a seat), ``/w/{table}`` (a
spectator), ``/replay`` and ``/replay/{table}``, ``/rules?lang=xx``; with a policy arena,
``/arena`` (:mod:`~bergen_env.web.arena_api`). The API (:mod:`~bergen_env.web.api`) and the
sockets (:mod:`~bergen_env.web.sockets`) are described in ``docs/web.md``. Every request passes
:class:`~bergen_env.web.guard.Guard` first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from bergen_env.web import api, arena_api, pages, sockets
from bergen_env.web.arena_runner import ArenaRunner
from bergen_env.web.errors import TableError
from bergen_env.web.guard import Guard, error_response
from bergen_env.web.i18n import STATIC
from bergen_env.web.tables import TableManager


async def _table_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TableError)
    response = error_response(exc)
    if "retry_after" in exc.params:
        response.headers["retry-after"] = str(exc.params["retry_after"])
    return response


def create_app(
    manager: TableManager | None = None,
    *,
    sweep_seconds: float = 30.0,
    arena: ArenaRunner | None = None,
) -> Starlette:
    """The Starlette app over ``manager`` (a new :class:`TableManager` by default), with the
    policy arena of ``arena`` if given (:mod:`~bergen_env.web.arena_api`).

    At start-up the manager restores the live tables of its store and the arena resumes its
    queue; every ``sweep_seconds`` idle tables expire.
    """
    tables = manager if manager is not None else TableManager()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if tables.pool is not None:  # worker processes start now, not while tables play
            await tables.pool.start()
        if arena is not None:  # tables may seat arena policies: their agents before restoring
            tables.agents.update(await asyncio.to_thread(arena.agents))
            arena.start()
        tables.restore()

        async def sweep() -> None:
            while True:
                await asyncio.sleep(sweep_seconds)
                tables.expire()

        task = asyncio.get_running_loop().create_task(sweep())
        try:
            yield
        finally:
            task.cancel()
            if arena is not None:
                await arena.close()
            tables.close_all()
            if tables.pool is not None:  # before the server's process ends (on a signal too)
                tables.pool.close()

    routes = [
        *pages.ROUTES,
        *api.ROUTES,
        *arena_api.ROUTES,
        *sockets.ROUTES,
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={TableError: _table_error}, lifespan=lifespan)
    app.state.tables = tables
    app.state.arena = arena
    limits = tables.limits
    uploads = {"/api/arena": arena.settings.max_file_bytes} if arena is not None else {}
    app.add_middleware(
        Guard,
        max_body_bytes=limits.max_body_bytes,
        body_seconds=limits.body_seconds,
        uploads=uploads,
    )
    return app
