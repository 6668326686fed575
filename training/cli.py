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

``python -m bergen_env.training.<name>`` runs the same program as its console script, from any
directory: each program module starts with
``if __name__ == "__main__": raise SystemExit(program("<name>"))``, before its own imports, so a
missing extra is reported exactly as the console script reports it (:data:`PROGRAMS` also holds
the programs without a console script, ``expert_iteration``, and ``tune_heuristic``).

Without ``--rules``, ``bergen-evaluate`` and ``bergen-play`` play the rules that the trained
policies among the agents record (:func:`command_rules`).

A user error (a bad option, file, config key or agent string, or a feature whose extra is not
installed) is reported as one line, ``<program>: error: <the problem>``, on stderr with exit
status 2 and no traceback. Agents that load trained policies (``ppo:PATH``, ``rllib:PATH``)
need their extra; scripted agents need nothing beyond the base install.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from bergen_env.agents.base import agent_factory, parse_agent_spec
from bergen_env.arena import recorded_rules
from bergen_env.atomic_files import OutputError
from bergen_env.command_line import USER_ERROR
from bergen_env.command_line import ArgumentParser as ArgumentParser  # for the programs
from bergen_env.errors import BergenError, install_hint
from bergen_env.rules import PRESETS, Rules, build_rules, parse_rule_options
from bergen_env.stop import Terminated, handle_stop_signals

#: Top-level modules each extra brings (checked without importing them).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "train": ("torch", "stable_baselines3", "sb3_contrib", "yaml"),
    "rllib": ("ray", "torch", "yaml"),
    "vector": ("numba",),
}


class Program(NamedTuple):
    """A command-line program: its name in messages and what it cannot start without."""

    prog: str
    #: ``(extra, modules)`` pairs checked before the module is imported (``None``: all of them).
    needs: tuple[tuple[str, tuple[str, ...] | None], ...] = ()


#: Every program of this package by module name (``bergen_env.training.<name>``).
PROGRAMS: dict[str, Program] = {
    "train": Program("bergen-train", (("train", None), ("vector", None))),
    "evaluate": Program("bergen-evaluate"),
    "play": Program("bergen-play"),
    "replay": Program("bergen-replay"),
    "train_rllib": Program("bergen-train-rllib", (("train", None), ("rllib", None))),
    "export_policy": Program("bergen-export-policy"),
    "exploit": Program("bergen-exploit"),
    "expert_iteration": Program(
        "python -m bergen_env.training.expert_iteration", (("train", None),)
    ),
    "tune_heuristic": Program(
        "python -m bergen_env.training.tune_heuristic", (("train", ("yaml",)), ("vector", None))
    ),
}

Main = Callable[[Sequence[str] | None], Any]


class UsageError(Exception):
    """Bad input from the user; the message names the problem and is shown as one line."""


class MissingExtraError(UsageError, ImportError):
    """A feature needs an optional dependency group (an extra) that is not installed (an
    ImportError too, so an import of a module that needs the extra fails with this message)."""


def add_rules_arguments(p: argparse.ArgumentParser) -> None:
    """``--players``, ``--partnerships``, ``--rules`` and ``--rule-override``, as
    :func:`rules_from_arguments` reads them: the keywords ``num_players``, ``partnerships``,
    ``rules`` and single rule options of :func:`bergen_env.rules.build_rules`."""
    from bergen_env.rules import RULE_OPTIONS

    p.add_argument(
        "--players",
        type=int,
        default=None,
        help="seats: 2, 3 or 4 (default: as a policy among the agents records, else 2)",
    )
    p.add_argument(
        "--partnerships",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="4 players in two teams (default: on for draw and fives, off otherwise)",
    )
    p.add_argument(
        "--rules",
        default=None,
        help=f"rules preset: {', '.join(PRESETS)} (default: the rules a policy among the agents "
        "records, else standard)",
    )
    p.add_argument(
        "--rule-override",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a rule option; options: {', '.join(RULE_OPTIONS)}",
    )


def rules_from_arguments(args: argparse.Namespace, agents: Sequence[str]) -> Rules:
    """The rules of :func:`add_rules_arguments`' flags (``--rule-override`` typed by
    :func:`bergen_env.rules.parse_rule_options`); without ``--rules``, the rules that the
    policies among ``agents`` record (:func:`command_rules`)."""
    overrides = parse_rule_options(
        args.rule_override, error=UsageError, context="--rule-override: "
    )
    return command_rules(args.rules, args.players, args.partnerships, agents, overrides)


def check_match_arguments(args: argparse.Namespace, counts: Sequence[str]) -> None:
    """The checks of a command that plays matches: each of ``counts`` (``matches``, ``workers``,
    ...) at least 1, ``--seed`` at least 0, and ``--ray`` without ``--workers``."""
    for flag in counts:
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be >= 1")
    if args.seed < 0:
        raise UsageError("--seed must be >= 0")
    if args.ray is not None and args.workers > 1:
        raise UsageError("--ray uses the Ray cluster's CPUs: leave out --workers")


def require_extra(extra: str, feature: str, modules: Sequence[str] | None = None) -> None:
    """Raise :class:`MissingExtraError` naming ``feature`` if a module it needs is missing.

    ``modules`` defaults to every module of ``extra`` (:data:`EXTRA_MODULES`)."""
    needed = EXTRA_MODULES[extra] if modules is None else modules
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError(
            f"{feature} needs the [{extra}] extra (missing: {', '.join(missing)}); "
            f"install it with: {install_hint(extra)}"
        )


def register_policy_kinds(specs: Iterable[str]) -> None:
    """Load the agent kinds that ``specs`` use and bergen_env finds as plugins (``ppo``,
    ``rllib``: the ``bergen_env.agents`` entry points), before any match starts.

    Scripted-only runs load nothing, so they (and their worker processes) never import torch. An
    empty agent string or a missing extra is a :class:`UsageError`; an unknown kind is left to
    ``make_agent``, which names the closest known one.
    """
    for spec in specs:
        try:
            kind = parse_agent_spec(spec)[0]
            agent_factory(kind)
        except ValueError as exc:
            raise UsageError(f"agent {spec!r}: {exc}") from None
        if kind == "rllib":  # its module loads without Ray; the agent needs it
            require_extra("rllib", f"agent {spec!r}", ["ray", "torch"])


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


def command_rules(
    preset: str | None,
    players: int | None,
    partnerships: bool | None,
    agents: Sequence[str],
    overrides: dict[str, Any] | None = None,
) -> Rules:
    """The rules of a command line (``--rules``, ``--players``, ``--partnerships``, overrides).

    Without ``--rules`` (``preset=None``) they come from the trained policies among ``agents``
    (:func:`~bergen_env.arena.recorded_rules`): exactly the recorded rules (with ``overrides``)
    when no player count or partnerships flag is given, else the preset they were built from
    with those flags; agents that were trained for other rules are then refused when they are
    reset. With no policy among the agents the preset is ``standard`` for 2 players. Policies
    that record different rules, and bad rules, are a :class:`UsageError`.
    """
    overrides = overrides or {}
    try:  # builds the agents: an unknown one or a missing file fails here, named
        recorded = recorded_rules(agents) if preset is None else None
    except (ValueError, OSError, BergenError) as exc:
        raise UsageError(str(exc)) from None
    try:
        if recorded is not None:
            if players is None and partnerships is None:
                return build_rules(recorded, **overrides)
            preset = recorded.name if recorded.name in PRESETS else None
            players = recorded.num_players if players is None else players
        return build_rules(
            preset or "standard", num_players=players, partnerships=partnerships, **overrides
        )
    except BergenError as exc:
        raise UsageError(f"bad rules: {exc}") from None


#: Errors of a full disk or quota, reported in one line wherever they happen.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def run(prog: str, main: Main, argv: Sequence[str] | None = None) -> int:
    """Call ``main(argv)`` as program ``prog``: a :class:`UsageError`, an unwritable output
    (:class:`OutputError`) or a full disk becomes one line on stderr and exit status 2, Ctrl-C
    exit status 130, SIGTERM exit status 143; otherwise ``main``'s int result (or 0).

    Ctrl-C and SIGTERM only set a flag (:func:`bergen_env.stop.handle_stop_signals`); the work
    loops check it and stop between two units of work."""
    try:
        with handle_stop_signals():
            result = main(argv)
    except (UsageError, OutputError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return USER_ERROR
    except OSError as exc:  # a full disk or quota anywhere: one line, not a traceback
        if exc.errno not in DISK_FULL:
            raise
        where = f"cannot write {str(exc.filename)!r}: " if exc.filename else ""
        print(f"{prog}: error: {where}{exc.strerror}", file=sys.stderr)
        return USER_ERROR
    except KeyboardInterrupt as exc:
        stopped = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(f"\n{prog}: {stopped}" + (f": {exc}" if str(exc) else ""), file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    return result if isinstance(result, int) else 0


def program(module: str, argv: Sequence[str] | None = None) -> int:
    """Run the program of ``bergen_env.training.<module>`` (:data:`PROGRAMS`): its extras are
    checked before the module is imported, so a missing one is a one-line error too."""
    prog, needs = PROGRAMS[module]

    def main(args: Sequence[str] | None) -> Any:
        for extra, modules in needs:
            require_extra(extra, "this command", modules)
        return importlib.import_module(f"{__package__}.{module}").main(args)

    return run(prog, main, argv)


# --- console scripts (``[project.scripts]`` in pyproject.toml)


def train() -> int:
    """``bergen-train``: masked PPO from a YAML config (:mod:`.train`)."""
    return program("train")


def evaluate() -> int:
    """``bergen-evaluate``: a duplicate tournament between agents (:mod:`.evaluate`)."""
    return program("evaluate")


def play() -> int:
    """``bergen-play``: play in the terminal against agents (:mod:`.play`)."""
    return program("play")


def replay() -> int:
    """``bergen-replay``: print or check recorded matches (:mod:`.replay`)."""
    return program("replay")


def exploit() -> int:
    """``bergen-exploit``: an approximate best response against a policy (:mod:`.exploit`)."""
    return program("exploit")


def train_rllib() -> int:
    """``bergen-train-rllib``: multi-agent PPO on Ray RLlib (:mod:`.train_rllib`)."""
    return program("train_rllib")
