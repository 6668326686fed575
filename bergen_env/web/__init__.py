"""Play Bergen in the browser: tables shared by links, agents at a watchable pace, replays.

Start it with ``bergen-web`` (``--host``, ``--port``; 127.0.0.1:8000 by default) or ``make
play``. Needs the ``web`` extra (Starlette and uvicorn). An app layer: it imports the engine,
the agents and the replay format; nothing in the library imports it. See ``docs/web.md``.
"""

from bergen_env.web.tables import DEFAULT_AGENTS, Limits, Table, TableError, TableManager

__all__ = ["DEFAULT_AGENTS", "Limits", "Table", "TableError", "TableManager", "create_app"]


def __getattr__(name: str):  # create_app needs Starlette: import it only when asked for
    if name == "create_app":
        from bergen_env.web.app import create_app

        return create_app
    raise AttributeError(f"module 'bergen_env.web' has no attribute {name!r}")
