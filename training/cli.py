"""What every command-line program shares: one error style, optional extras, the entry points.

======================  ========================  ==============================
console script          module                    needs
======================  ========================  ==============================
``bergen-train``        :mod:`.train`             the ``[train]`` extra
``bergen-evaluate``     :mod:`.evaluate`          the base install
``bergen-play``         :mod:`.play`              the base install
``bergen-replay``       :mod:`.replay`            the base install
``bergen-train-rllib``  :mod:`.train_rllib`       the ``[train,rllib]`` extras
======================  ========================  ==============================

Installed, the modules are ``bergen_env.training.<name>``; from a checkout of the repository
``python -m training.<name>`` runs the same program.

A user error (a bad option, file, config key or agent string, or a feature whose extra is not
installed) is reported as one line, ``<program>: error: <the problem>``, on stderr with exit
status 2 and no traceback. Agents that load trained policies (``ppo:PATH``, ``rllib:PATH``)
need their extra; scripted agents need nothing beyond the base install.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

from bergen_env.agents import parse_agent_spec, registered_agents

#: Top-level modules each extra brings (checked without importing them).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "train": ("torch", "stable_baselines3", "sb3_contrib", "yaml"),
    "rllib": ("ray", "torch", "yaml"),
}

Main = Callable[[Sequence[str] | None], Any]


class UsageError(Exception):
    """Bad input from the user; the message names the problem and is shown as one line."""


class MissingExtraError(UsageError):
    """A feature needs an optional dependency group (an extra) that is not installed."""


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` with the one-line error style (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def add_rules_arguments(p: argparse.ArgumentParser) -> None:
    """``--players``, ``--partnerships``, ``--rules`` and ``--rule-override``, as
    ``evaluate.build_rules`` reads them."""
    from bergen_env.rules import PRESETS, RULE_OPTIONS

    p.add_argument("--players", type=int, default=2, help="seats: 2, 3 or 4 (default 2)")
    p.add_argument(
        "--partnerships",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="4 players in two teams (default: on for draw and fives, off otherwise)",
    )
    p.add_argument("--rules", default="standard", help=f"rules preset: {', '.join(PRESETS)}")
    p.add_argument(
        "--rule-override",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a rule option; options: {', '.join(RULE_OPTIONS)}",
    )


def require_extra(extra: str, feature: str, modules: Sequence[str] | None = None) -> None:
    """Raise :class:`MissingExtraError` naming ``feature`` if a module it needs is missing.

    ``modules`` defaults to every module of ``extra`` (:data:`EXTRA_MODULES`)."""
    needed = EXTRA_MODULES[extra] if modules is None else modules
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError(
            f"{feature} needs the [{extra}] extra (missing: {', '.join(missing)}); "
            f"install it with: pip install 'bergen_env[{extra}]'"
        )


def register_policy_kinds(specs: Iterable[str]) -> None:
    """Register the agent kinds of trained policies (``ppo``, ``rllib``) that ``specs`` use.

    Scripted-only runs import nothing here, so they (and their worker processes) never import
    torch. An empty agent string or a missing extra is a :class:`UsageError`.
    """
    for spec in specs:
        try:
            kind = parse_agent_spec(spec)[0]
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if kind in registered_agents():
            continue
        if kind == "ppo":
            require_extra("train", f"agent {spec!r}", ["torch", "sb3_contrib"])
            from . import policies  # noqa: F401  (registers "ppo")
        elif kind == "rllib":
            require_extra("rllib", f"agent {spec!r}", ["ray", "torch"])
            from . import rllib_policies  # noqa: F401  (registers "rllib")


#: Agent kinds whose files are unpickled, so they load only with ``trust_pickle=true``.
PICKLE_KINDS = ("ppo", "rllib")


def with_trust_pickle(spec: str) -> str:
    """An agent string with ``trust_pickle=true`` added if its kind unpickles files (for CLI flags).

    ``"ppo:run/model.zip"`` -> ``"ppo:path=run/model.zip,trust_pickle=true"``; other kinds and
    strings that already say ``trust_pickle`` are returned unchanged.
    """
    kind, kwargs = parse_agent_spec(spec)
    if kind not in PICKLE_KINDS or "trust_pickle" in kwargs:
        return spec
    kwargs["trust_pickle"] = True
    return f"{kind}:" + ",".join(
        f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in kwargs.items()
    )


def trust_pickle(specs: Iterable[str | None]) -> list[str | None]:
    """``specs`` with ``trust_pickle=true`` added to each ``ppo`` zip and ``rllib`` checkpoint (the
    ``--trust-pickle`` flag)."""
    return [None if spec is None else with_trust_pickle(spec) for spec in specs]


def run(prog: str, main: Main, argv: Sequence[str] | None = None) -> int:
    """Call ``main(argv)`` as program ``prog``: a :class:`UsageError` becomes one line on stderr
    and exit status 2, Ctrl-C exit status 130; otherwise ``main``'s int result (or 0)."""
    try:
        result = main(argv)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0


def _lazy(module: str, extras: Sequence[str] = ()) -> Main:
    """``module``'s ``main``, imported only after the extras it needs are found."""

    def main(argv: Sequence[str] | None) -> Any:
        for extra in extras:
            require_extra(extra, "this command")
        return importlib.import_module(f"{__package__}.{module}").main(argv)

    return main


# --- console scripts (``[project.scripts]`` in pyproject.toml)


def train() -> int:
    """``bergen-train``: masked PPO from a YAML config (:mod:`.train`)."""
    return run("bergen-train", _lazy("train", ["train"]))


def evaluate() -> int:
    """``bergen-evaluate``: a duplicate tournament between agents (:mod:`.evaluate`)."""
    return run("bergen-evaluate", _lazy("evaluate"))


def play() -> int:
    """``bergen-play``: play in the terminal against agents (:mod:`.play`)."""
    return run("bergen-play", _lazy("play"))


def replay() -> int:
    """``bergen-replay``: print or check recorded matches (:mod:`.replay`)."""
    return run("bergen-replay", _lazy("replay"))


def exploit() -> int:
    """``bergen-exploit``: an approximate best response against a policy (:mod:`.exploit`)."""
    return run("bergen-exploit", _lazy("exploit"))


def train_rllib() -> int:
    """``bergen-train-rllib``: multi-agent PPO on Ray RLlib (:mod:`.train_rllib`)."""
    return run("bergen-train-rllib", _lazy("train_rllib", ["train", "rllib"]))
