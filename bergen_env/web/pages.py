"""The HTML pages: static files that script themselves, and the rules page in each language.

Every page is a fixed file of ``static/`` (its script is a same-origin module; nothing inline),
so no request value is ever written into a page's HTML. ``/play?...`` links open a page that
creates the table with a same-origin JSON request: a GET never creates anything.
"""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from bergen_env.web.errors import TableError
from bergen_env.web.i18n import STATIC, rules_page
from bergen_env.web.options import language


def _file(name: str):
    async def page(request: Request) -> Response:
        return FileResponse(STATIC / name, headers={"cache-control": "no-store"})

    return page


async def rules(request: Request) -> Response:
    try:
        lang = language(request.query_params.get("lang"))
    except TableError as exc:
        return HTMLResponse(
            "<!doctype html><meta charset=utf-8><title>Bergen</title>"
            f"<p>{html.escape(exc.message)}</p><p><a href='/rules'>Rules</a>",
            status_code=exc.status,
        )
    return HTMLResponse(rules_page(lang))


async def no_icon(request: Request) -> Response:
    return Response(status_code=204)


ROUTES = [
    Route("/favicon.ico", no_icon),
    Route("/", _file("index.html")),
    Route("/play", _file("play.html")),
    Route("/s/{token}", _file("table.html")),
    Route("/w/{table}", _file("table.html")),
    Route("/replay", _file("replay.html")),
    Route("/replay/{table}", _file("replay.html")),
    Route("/rules", rules),
]
