"""The ``--ray [ADDRESS]`` option of the programs whose work runs as Ray tasks.

``--ray`` alone (or ``--ray local``) starts a local Ray instance (or joins the one
``RAY_ADDRESS`` names), ``--ray auto`` joins the cluster this machine belongs to (``ray start``),
``--ray HOST:PORT`` the cluster whose head is there. See docs/scale.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from bergen_env.ray_tasks import LOCAL, RayJoinError, join

from .cli import UsageError, require_extra


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
    try:
        return join(address, flag)
    except RayJoinError as exc:
        raise UsageError(str(exc)) from None
