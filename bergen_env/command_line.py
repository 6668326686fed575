"""The error style every command-line program of the package shares: a user error (a bad flag,
file or request) is one line on stderr, ``<program>: error: <the problem>``, and exit status
:data:`USER_ERROR`, with no traceback."""

from __future__ import annotations

import argparse
from typing import NoReturn

#: The exit status of a user error.
USER_ERROR = 2


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` with the one-line error style (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USER_ERROR, f"{self.prog}: error: {message}\n")
