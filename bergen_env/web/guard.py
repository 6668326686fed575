"""What every request passes before the app sees it: headers, origins, body limits, JSON.

:class:`Guard` is ASGI middleware: it adds the security headers to every answer, refuses
state-changing requests that are not same-origin JSON, bounds request bodies (in bytes and in
the time they take to arrive) and refuses WebSockets opened from another site.
:func:`read_json` parses a body with limits on its depth, size and number lengths (a bad body
is a 400, never a 500)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bergen_env.web.errors import TableError, excerpt
from bergen_env.web.options import refuse_unknown

#: Every answer carries these (the seat token is in the URL: no referrer leaves the page).
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)

#: Methods that change state: they need a JSON body and, when sent, a same-origin Origin.
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: The bodies an upload path takes: the file itself, or a form whose field holds it.
FILE_BODY, FORM_BODY = "application/octet-stream", "multipart/form-data"
#: Bytes a form's body may hold beyond its upload path's bound (its fields' headers, the
#: boundaries and a short text field).
FORM_OVERHEAD = 16 * 1024

#: Limits of a JSON request body.
MAX_JSON_DEPTH = 8
MAX_NUMBER_CHARS = 20


def error_response(exc: TableError) -> JSONResponse:
    """The JSON answer of a refused request: the message, its code and the code's fields."""
    return JSONResponse(
        {"error": exc.message, "code": exc.code, "params": exc.params}, status_code=exc.status
    )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def _own_origins(scope: Scope) -> set[str]:
    host = _header(scope, b"host") or ""
    return {f"http://{host}", f"https://{host}"}


def cross_site(scope: Scope) -> bool:
    """Whether the request says it comes from another site (``Origin``, ``Sec-Fetch-Site``).

    A form a page of this site posts itself says ``Origin: null`` (the pages send no
    referrer); the browser's ``Sec-Fetch-Site: same-origin``, which no page can set, vouches
    for it then."""
    origin = _header(scope, b"origin")
    fetch_site = _header(scope, b"sec-fetch-site")
    if origin == "null" and fetch_site == "same-origin":
        return False
    if origin is not None and origin not in _own_origins(scope):
        return True
    return fetch_site == "cross-site"


class Guard:
    """ASGI middleware: security headers, same-origin JSON for state changes, body limits.

    ``uploads`` maps a path that takes a file instead of JSON (the body itself,
    ``application/octet-stream``, or a ``multipart/form-data`` form, whose body may be
    :data:`FORM_OVERHEAD` bytes larger) to its own body limit in bytes.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int,
        body_seconds: float = 60.0,
        uploads: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_seconds = body_seconds
        self.uploads = dict(uploads or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            if cross_site(scope):  # a page of another site may not read a seat's updates
                await send({"type": "websocket.close", "code": 4403})
                return
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0] != b"server"]
                present = {k for k, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        refusal = self._refusal(scope)
        if refusal is not None:
            await error_response(refusal)(scope, receive, send_with_headers)
            return
        seen = 0
        limit = self._limit(scope)
        deadline = asyncio.get_running_loop().time() + self.body_seconds
        arrived = False

        async def limited() -> Message:
            nonlocal seen, arrived
            if arrived:  # the body is in: what follows is the client leaving, whenever
                return await receive()
            left = deadline - asyncio.get_running_loop().time()
            try:
                msg = await asyncio.wait_for(receive(), max(left, 0.001))
            except TimeoutError:
                raise TableError(
                    408,
                    "body_too_slow",
                    f"the request body did not arrive within {self.body_seconds:g} s",
                    seconds=self.body_seconds,
                ) from None
            arrived = msg["type"] != "http.request" or not msg.get("more_body", False)
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise TableError(413, "body_too_large", _too_large(limit), limit=limit)
            return msg

        await self.app(scope, limited, send_with_headers)

    def _limit(self, scope: Scope) -> int:
        """The most bytes the request's body may hold."""
        if scope["path"] not in self.uploads:
            return self.max_body_bytes
        form = content_type(scope) == FORM_BODY
        return self.uploads[scope["path"]] + (FORM_OVERHEAD if form else 0)

    def _refusal(self, scope: Scope) -> TableError | None:
        length = _header(scope, b"content-length")
        limit = self._limit(scope)
        if length is not None and (not length.isdigit() or int(length) > limit):
            return TableError(413, "body_too_large", _too_large(limit), limit=limit)
        if scope["method"] not in UNSAFE_METHODS:
            return None
        if cross_site(scope):
            return TableError(
                403, "cross_site", "requests that change state must come from this site's pages"
            )
        kind = content_type(scope)
        if scope["path"] in self.uploads:
            if kind not in (FILE_BODY, FORM_BODY):
                return TableError(
                    415,
                    "file_only",
                    f"send the file as the body with content-type {FILE_BODY}, or as the field "
                    f"'file' of a {FORM_BODY} form, not {excerpt(kind)}",
                )
        elif kind != "application/json":
            return TableError(
                415,
                "json_only",
                f"send a JSON body with content-type application/json, not {excerpt(kind)}",
            )
        return None


def content_type(scope: Scope) -> str:
    """The request's content type without its parameters, in lower case."""
    return (_header(scope, b"content-type") or "").split(";")[0].strip().lower()


def _too_large(limit: int) -> str:
    return f"request body too large: the limit is {limit} bytes"


def _bounded_number(text: str) -> int | float:
    if len(text) > MAX_NUMBER_CHARS:
        raise TableError(
            400,
            "bad_json",
            f"a number in the body has more than {MAX_NUMBER_CHARS} characters",
        )
    value = float(text) if any(c in text for c in ".eE") else int(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise TableError(400, "bad_json", f"the number {excerpt(text)} is out of range")
    return value


def _refuse_constant(name: str) -> Any:
    raise TableError(400, "bad_json", f"{name} is not a JSON number")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def parse_json(raw: bytes) -> Any:
    """A JSON document with bounded nesting and numbers; :class:`TableError` 400 otherwise."""
    try:
        value = json.loads(
            raw or b"null",
            parse_int=_bounded_number,
            parse_float=_bounded_number,
            parse_constant=_refuse_constant,
        )
    except RecursionError:
        value = None
        depth_exceeded = True
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        raise TableError(400, "bad_json", "the request body is not valid JSON") from None
    else:
        depth_exceeded = _depth(value) > MAX_JSON_DEPTH
    if depth_exceeded:
        raise TableError(
            400, "bad_json", f"the request body nests deeper than {MAX_JSON_DEPTH} levels"
        )
    return value


async def read_json(request: Request, keys: tuple[str, ...], max_bytes: int) -> dict[str, Any]:
    """The request's JSON object of at most ``max_bytes``, holding only ``keys``."""
    raw = await request.body()
    if len(raw) > max_bytes:
        raise TableError(413, "body_too_large", _too_large(max_bytes), limit=max_bytes)
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise TableError(400, "bad_json", "the request body must be a JSON object")
    refuse_unknown(body, keys, "key")
    return body
