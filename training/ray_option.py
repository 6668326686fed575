"""The ``--ray [ADDRESS]`` option of the programs whose work runs as Ray tasks.

``--ray`` alone (or ``--ray local``) starts a local Ray instance (or joins the one
``RAY_ADDRESS`` names), ``--ray auto`` joins the cluster this machine belongs to (``ray start``),
``--ray HOST:PORT`` the cluster whose head is there. See docs/scale.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from .cli import UsageError, require_extra

#: Value of ``args.ray`` when ``--ray`` is given without an address: a local Ray instance.
LOCAL = "local"


def add_ray_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--ray [ADDRESS]`` (``args.ray``: None without the flag, :data:`LOCAL` alone or
    with ``local``)."""
    parser.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        default=None,
        metavar="ADDRESS",
        help=f"run {what} as Ray tasks: a local Ray instance without ADDRESS (or 'local'), "
        "'auto' for the cluster this machine joined with 'ray start', or a cluster's HOST:PORT "
        "(needs the [ray] extra)",
    )


def join_ray(address: str | None, flag: str = "--ray") -> Any:
    """Join Ray for ``flag`` (``address`` :data:`LOCAL`: a local instance); a missing extra or
    a cluster that cannot be joined is a one-line :class:`UsageError`."""
    require_extra("ray", flag, ["ray"])
    from bergen_env.ray_tasks import connect

    try:
        return connect(None if address == LOCAL else address)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "a local Ray instance" if address == LOCAL else f"the Ray cluster at {address!r}"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"{flag}: cannot join {where}: {first}") from None
