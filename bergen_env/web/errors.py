"""The one error the web app raises for a refused request, and how it quotes client input."""

from __future__ import annotations

from typing import Any

#: An error quotes at most this many characters of what a client sent.
EXCERPT_CHARS = 60


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (``...`` when cut): safe to echo."""
    try:
        text = repr(value[: limit + 1] if isinstance(value, str) else value)
    except ValueError:  # e.g. an integer too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class TableError(Exception):
    """A refused request: the HTTP ``status``, a stable ``code`` the page translates, the
    English ``message`` and the code's ``params`` (seats are 0-based; the page numbers them)."""

    def __init__(self, status: int, code: str, message: str, **params: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.params = params
