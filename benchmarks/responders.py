"""Responders to one policy on the same duplicate deals, each compared with the first, paired.

    python -m benchmarks.responders --policy policy:policies/standard_2p.safetensors
        --responders "search:samples=30,rollout=heuristic"
                     "best_response:samples=800,playouts=compiled,batch=200,prune=true,policy={policy}"
        [--rules standard] [--matches 200] [--seed 1] [--workers 1] [--json PATH]
    python -m benchmarks.responders --pool RESULT.json RESULT.json ...

Each responder (an agent string; ``{policy}`` stands for the policy's agent string, its commas
written ``%2C``) plays the arena's duplicate matches against copies of the policy, with the same
seed: the same deal groups and seatings for every responder. Reported for each: the match-win
rate (95% Wilson interval), the mean return (+1 a won match, -1/(sides-1) a lost one; 95%
Student-t interval over the deal groups) and its return minus the first responder's, paired by
deal group (a Student-t interval over the groups of the differences of the groups' means), with
the CPU seconds of its matches (this process and its workers, from rusage). At the end, every
pair's paired difference; the JSON keeps each responder's return by deal group.

``--pool`` reads stored results of the same responders on other seeds (their deal groups are
different deals) and gives every pair's paired difference over all their groups together.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.cpu_time import waited_cpu
from benchmarks.rating_table import git_commit
from bergen_env.agents.best_response import quote_policy
from bergen_env.arena import run_tournament
from bergen_env.atomic_files import write_text
from bergen_env.exploit import Side, check_policy, paired_gain
from bergen_env.rules import Rules
from bergen_env.stats import t_interval


def responder_spec(template: str, policy: str) -> str:
    """``template`` with ``{policy}`` replaced by ``policy`` written for an agent string."""
    return template.replace("{policy}", quote_policy(policy))


def compare(
    policy: str,
    responders: Sequence[str],
    rules: Rules,
    matches: int,
    seed: int,
    workers: int = 1,
) -> list[dict]:
    """One row a responder (see the module), the first the reference of the paired columns."""
    check_policy(policy, rules)
    others = 1 if rules.partnerships else rules.num_players - 1
    rows: list[dict] = []
    sides: list[Side] = []
    reference: Side | None = None
    for template in responders:
        spec = responder_spec(template, policy)
        start = waited_cpu()
        result = run_tournament(
            [spec] + [policy] * others, rules, matches=matches, seed=seed, workers=workers
        )
        side = Side.of(result.records, 0, rules)
        row = {
            "responder": spec,
            "matches": side.matches,
            "groups": result.config["groups"],
            "win_rate": side.win_rate,
            "win_rate_ci95": list(side.win_rate_ci95),
            "return": side.mean_return,
            "return_ci95": list(side.return_ci95),
            "cpu_seconds": waited_cpu() - start,
            "group_returns": side.group_returns,
        }
        if reference is None:
            reference = side
        else:
            mean, lo, hi = paired_gain(side, reference, rules)
            row["minus_first"] = mean
            row["minus_first_ci95"] = [lo, hi]
        rows.append(row)
        sides.append(side)
        print(table(rows[-1:]), flush=True)
    for k, row in enumerate(rows):
        row["minus"] = [list(paired_gain(sides[k], other, rules)) for other in sides]
    return rows


def pairs(rows: Sequence[dict]) -> str:
    """Every responder's return minus each earlier one's, paired by deal group."""
    lines = []
    for k, row in enumerate(rows):
        for j in range(k):
            mean, lo, hi = row["minus"][j]
            lines.append(f"{k + 1} minus {j + 1}: {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    return "\n".join(lines)


def pooled(results: Sequence[dict]) -> str:
    """Every pair's paired difference over the deal groups of all ``results`` (JSON as written
    by :func:`main`, each of another seed), for the responders every result holds (numbered in
    the first result's order)."""
    seeds = [res["config"]["seed"] for res in results]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"two results of one seed share their deals: seeds {seeds}")
    by_spec = [{r["responder"]: r for r in res["rows"]} for res in results]
    common = [spec for spec in by_spec[0] if all(spec in rows for rows in by_spec)]
    if len(common) < 2:
        raise ValueError("the results share fewer than two responders")
    rules = {res["config"]["rules"] for res in results}
    if len(rules) != 1:
        raise ValueError(f"the results are of different rules: {sorted(rules)}")
    loss = -1.0 / (Rules.preset(rules.pop()).num_sides - 1)
    groups = [(rows, g) for rows in by_spec for g in rows[common[0]]["group_returns"]]
    returns = [[rows[spec]["group_returns"][g] for rows, g in groups] for spec in common]
    lines = [f"{len(groups)} deal groups, seeds {', '.join(map(str, seeds))}"]
    lines += [f"{k + 1}: {spec}" for k, spec in enumerate(common)]
    for k in range(len(common)):
        for j in range(k):
            diffs = [a - b for a, b in zip(returns[k], returns[j])]
            mean, lo, hi = t_interval(diffs, bounds=(loss - 1.0, 1.0 - loss))
            lines.append(f"{k + 1} minus {j + 1}: {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    return "\n".join(lines)


def table(rows: Sequence[dict]) -> str:
    """The rows as Markdown table lines (no header)."""
    lines = []
    for r in rows:
        lo, hi = r["win_rate_ci95"]
        rlo, rhi = r["return_ci95"]
        paired = "—"
        if "minus_first" in r:
            dlo, dhi = r["minus_first_ci95"]
            paired = f"{r['minus_first']:+.3f} [{dlo:+.3f}, {dhi:+.3f}]"
        lines.append(
            f"| `{r['responder']}` | {r['matches']} | {r['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] | "
            f"{r['return']:+.3f} [{rlo:+.3f}, {rhi:+.3f}] | {paired} | {r['cpu_seconds']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.responders", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--policy", help="the policy's agent string")
    p.add_argument("--responders", nargs="+", metavar="SPEC")
    p.add_argument("--pool", nargs="+", metavar="JSON", help="pool stored results instead")
    p.add_argument("--rules", default="standard", help="a preset (default standard)")
    p.add_argument("--matches", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--json", help="write the rows as JSON here")
    args = p.parse_args(argv)
    if args.pool:
        try:
            print(pooled([json.loads(Path(f).read_text()) for f in args.pool]))
        except (OSError, ValueError, KeyError) as exc:
            p.error(f"--pool: {exc}")
        return 0
    if not args.policy or not args.responders:
        p.error("--policy and --responders are needed (or --pool)")
    rules = Rules.preset(args.rules)
    commit = git_commit()  # the code this process runs, whatever is committed meanwhile
    print("| responder | matches | win rate [95% CI] | return [95% t-CI] | return minus the first "
          "[paired 95% t-CI] | CPU s |\n|---|---:|---:|---:|---:|---:|", flush=True)  # fmt: skip
    rows = compare(args.policy, args.responders, rules, args.matches, args.seed, args.workers)
    print("\npaired over the deal groups (responders numbered in order):\n" + pairs(rows))
    if args.json:
        config = {k: v for k, v in vars(args).items() if k != "json"}
        config["commit"] = commit
        config["command"] = ["python", "-m", "benchmarks.responders", *(argv or sys.argv[1:])]
        write_text(Path(args.json), json.dumps({"config": config, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
