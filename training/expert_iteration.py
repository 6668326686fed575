"""Expert iteration: fit a policy network to search's action values, then repeat from its play.

    python -m bergen_env.training.expert_iteration --config configs/expert_iteration_2p.yaml \\
        [--set key=value]

Each iteration:

1. **Positions.** Whole matches are played in the single-agent env: the learner seat by the
   current network (``player: [network]``, its most probable legal action) or by scripted agents
   (``player`` is a list of agent strings drawn uniformly each match), the other seats by
   ``opponents``. In partnerships with ``partner: learner`` (the default) the learner's partner
   is played by a second copy of the learner's player of that match, so the network plays both
   seats of its team, as it does when evaluated. Every real choice of the learner seat (more
   than one legal action) is kept.
2. **Labels.** The ``teacher`` (a ``search`` agent string) values every legal action of each kept
   decision from the learner's public view (:meth:`SearchAgent.action_values`: the mean playout
   value over many sampled deals of the hidden tiles, in match units ``2 P(win) - 1`` here). The
   target is the soft distribution ``softmax(values / temperature)`` over the legal actions (zero
   on the illegal ones): averaged over deals, these values are far less noisy than the return of
   one match.
3. **Fit.** The network (the shipped policies' shape: dense layers, the observation in, one logit
   per action out) is fitted by cross-entropy to the soft targets on the masked logits, over the
   decisions of this iteration and of the earlier ones (``keep_data``). It starts from
   ``init_policy`` (a portable policy file, e.g. the shipped one) or from random weights. With
   ``scorer``, an action scorer adds to each legal action's logit one shared network's value of
   the last hidden layer and that action's features (:mod:`bergen_env.action_features`).
4. **Check.** On held-out matches: the agreement with search's best action, and the *regret* of
   the network's, the heuristic's and the first network's choices (search's value of its best
   action minus that of the chosen one, in match units). A short duplicate evaluation against
   ``eval_opponents`` follows; the network is written as a portable policy file
   (``iter_<k>.safetensors``; the last one also as ``policy.safetensors``).

Collection runs in jobs of ``job_decisions`` seeded from ``SeedSequence(seed)``, spread over
``workers`` processes or, with ``ray``, run as Ray tasks, so the data and the fitted network do
not depend on the worker count or the backend.
The run folder ``runs/expert_iteration/<name>__<seed>__<time>/`` holds ``config.yaml``,
``command.txt``, ``metrics.csv`` (one row per iteration), the policy files and ``data_<k>.npz``
(the labelled decisions of iteration ``k``; arrays only), ``state_<k>.safetensors`` (the network
and torch's random state after iteration ``k``) and, while a collection runs, ``jobs_<k>/`` (its
finished jobs). ``--resume RUN_DIR`` continues after the last intact state, at the first
unfinished job, as the uninterrupted run would have gone on.

This module is the command line; each step has its own module:
:mod:`.expert_iteration_config` (the config), :mod:`.expert_iteration_collection` (positions and
labels), :mod:`.expert_iteration_networks` (the torch networks and their policy files),
:mod:`.expert_iteration_fitting` (targets and the fit), :mod:`.expert_iteration_evaluation`
(the checks) and :mod:`.expert_iteration_run` (the iterations in a run folder, ``--resume``).
"""

from __future__ import annotations

if __name__ == "__main__":  # run as its console script runs it (bergen_env.training.cli)
    from .cli import program

    raise SystemExit(program("expert_iteration"))

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path

from bergen_env.atomic_files import append_line, write_text

from .cli import ArgumentParser
from .config import ConfigError, add_override_argument
from .expert_iteration_config import load_config
from .expert_iteration_run import DATA_FILES, PROG, train
from .ray_option import add_ray_argument
from .run_folder import claim_new_run, claim_resumed_run, remove_temp_files


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog=PROG,
        description="Expert iteration: fit a policy network to search's soft action values "
        "over positions from its own play, and repeat.",
    )
    parser.add_argument("--config", help="YAML config with a 'default:' block")
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR after its last finished iteration",
    )
    parser.add_argument(
        "--run-dir", default=None, help="run folder (default runs/expert_iteration/...)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--data",
        nargs="+",
        type=Path,
        default=None,
        metavar="NPZ",
        help="fit the first iteration on these saved decisions (data_<k>.npz of earlier runs) "
        "instead of collecting",
    )
    add_override_argument(parser)
    add_ray_argument(parser, "the labelling (the config key 'ray')")
    args = parser.parse_args(argv)
    if (args.config is None) == (args.resume is None):
        parser.error("give exactly one of --config or --resume")
    if args.resume is not None and (args.run_dir is not None or args.data is not None):
        parser.error("--resume continues in RUN_DIR with its own data; drop --run-dir and --data")
    return args


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    args_line = shlex.join(argv if argv is not None else sys.argv[1:])
    if args.resume is not None:
        run_dir = claim_resumed_run(args.resume)
        cfg = load_config(run_dir / "config.yaml", args.overrides)
        remove_temp_files(run_dir)
    else:
        cfg = load_config(args.config, args.overrides)
        for f in args.data or []:
            if not f.is_file():
                raise ConfigError(f"--data: file {str(f)!r} does not exist")
        parent = Path("runs") / "expert_iteration"
        run_dir = claim_new_run(args.run_dir, parent, f"{cfg.name}__{cfg.seed}")
        if args.data:
            write_text(run_dir / DATA_FILES, "".join(f"{f.resolve()}\n" for f in args.data))
    if args.ray is not None:
        cfg = dataclasses.replace(cfg, ray=args.ray)
    python = f"{sys.executable} -m bergen_env.training.expert_iteration"
    append_line(run_dir / "command.txt", f"{python} {args_line}")
    data_files = args.data
    if args.resume is not None and (run_dir / DATA_FILES).is_file():
        data_files = [Path(x) for x in (run_dir / DATA_FILES).read_text().splitlines()]
    try:
        path = train(
            cfg,
            run_dir,
            progress=not args.no_progress,
            data_files=data_files,
            command=f"{PROG} {args_line}",
            resume=args.resume is not None,
        )
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the finished iterations and jobs stay
        raise type(exc)(f"continue with --resume {run_dir}") from None
    print(f"policy: {path}\nrun folder: {run_dir}")
    return path
