"""How far a policy is from the search it imitates, judged by an independent run of search.

python -m benchmarks.teacher_gap --policy policy:policies/expert_2p.safetensors
    [--teacher SPEC] [--judge SPEC] [--opponent heuristic] [--decisions 3000] [--seed 7]
    [--rules standard] [--players 2] [--json PATH]

The ``--policy`` agent plays the learner seat (a random seat each match) of the single-agent env
against ``--opponent`` in every other seat, as expert iteration's positions are played
(:mod:`bergen_env.training.expert_iteration`). At each real choice (more than one legal action) the
``--teacher`` (a ``search`` agent string, by default expert iteration's 2-player teacher) names
its best action and the ``--judge`` (by default the teacher's string again, with its own random
numbers) values every legal action. Each of the policy, the teacher and ``heuristic`` is given
its **regret** under the judge's values: the judge's best value minus its value of the agent's
choice, in match units ``2 P(win) - 1``, averaged over the choices, with a standard error.

Because the judge draws its own deals, its noise does not favour the teacher's choices: the
teacher's regret is how much two runs of the same search disagree (the noise of its labels),
and the policy's regret above the teacher's (``gap``, with a paired standard error) is what
imitating the teacher could still remove.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.agents import make_agent
from bergen_env.agents.search import WIN_VALUE
from bergen_env.single_agent import BergenSingleAgentEnv
from bergen_env.stats import standard_error

#: Expert iteration's 2-player teacher (``configs/expert_iteration_2p_scorer.yaml``).
DEFAULT_TEACHER = (
    "search:rollout=heuristic,samples=800,belief=1,batch=200,prune=true,temperature=0.03"
)
AGENTS = ("policy", "teacher", "heuristic")


def _mean_se(x: np.ndarray) -> dict[str, float]:
    return {"mean": float(x.mean()), "se": standard_error(x)}


def measure(
    policy: str,
    teacher: str = DEFAULT_TEACHER,
    judge: str | None = None,
    opponent: str = "heuristic",
    decisions: int = 3000,
    seed: int = 7,
    rules: str = "standard",
    players: int = 2,
) -> dict[str, Any]:
    """The regrets (see the module) over at least ``decisions`` real choices of the policy's
    own matches (the last match is played to its end)."""
    if decisions < 2:
        raise ValueError(f"--decisions must be at least 2, got {decisions}")
    judge = judge or teacher
    agents = {
        "policy": make_agent(policy),
        "teacher": make_agent(teacher),
        "heuristic": make_agent("heuristic"),
        "judge": make_agent(judge),
    }
    for name, spec in (("teacher", teacher), ("judge", judge)):
        if not hasattr(agents[name], "action_values"):
            raise ValueError(f"--{name} {spec!r} is not a search agent (it values no actions)")
    env = BergenSingleAgentEnv(
        num_players=players, rules=rules, opponents=[opponent], learner_seat="random"
    )
    win = WIN_VALUE * env.rules.score_scale
    rng = np.random.default_rng(seed)
    regrets: list[list[float]] = []
    agree = 0
    matches = 0
    while len(regrets) < decisions:
        obs, _ = env.reset(seed=int(rng.integers(2**63)))
        for agent in agents.values():
            agent.reset(env.rules, env.seat, np.random.default_rng(int(rng.integers(2**63))))
        matches += 1
        done = False
        while not done:
            mask = env.action_masks().astype(np.int8)
            view = env.game.public_view(env.seat)
            played = int(agents["policy"].act(obs, mask, view))
            if len(view.legal_actions) > 1:
                taught = agents["teacher"].action_values(view)
                best_taught = max(taught, key=taught.__getitem__)
                chosen = {
                    "policy": played,
                    "teacher": best_taught,
                    "heuristic": int(agents["heuristic"].act(obs, mask, view)),
                }
                values = agents["judge"].action_values(view)
                best = max(values.values())
                regrets.append([(best - values[chosen[k]]) / win for k in AGENTS])
                agree += played == best_taught
            obs, _, terminated, truncated, _ = env.step(played)
            done = terminated or truncated
    r = np.array(regrets)
    return {
        "policy": policy,
        "teacher": teacher,
        "judge": judge,
        "opponent": opponent,
        "rules": env.rules.name,
        "players": players,
        "seed": seed,
        "matches": matches,
        "decisions": len(r),
        "regret": {k: _mean_se(r[:, i]) for i, k in enumerate(AGENTS)},
        "gap": _mean_se(r[:, 0] - r[:, 1]),
        "agreement": agree / len(r),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.teacher_gap",
        description="Regret of a policy, its search teacher and the heuristic under an "
        "independent run of search.",
    )
    p.add_argument("--policy", required=True, help="agent string of the policy that plays")
    p.add_argument("--teacher", default=DEFAULT_TEACHER, help="search agent string it imitates")
    p.add_argument(
        "--judge", default=None, help="search agent string that values (default: --teacher)"
    )
    p.add_argument("--opponent", default="heuristic", help="agent string of the other seats")
    p.add_argument("--decisions", type=int, default=3000, help="real choices to judge")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--rules", default="standard", help="rules preset")
    p.add_argument("--players", type=int, default=2, help="individual players (2-4)")
    p.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = p.parse_args(argv)
    if args.json is not None and not args.json.parent.is_dir():
        p.error(f"--json {str(args.json)!r}: folder {str(args.json.parent)!r} does not exist")
    try:
        report = measure(
            args.policy,
            args.teacher,
            args.judge,
            args.opponent,
            args.decisions,
            args.seed,
            args.rules,
            args.players,
        )
    except ValueError as exc:
        p.error(str(exc))
    print(
        f"{report['decisions']} real choices of {report['policy']} in {report['matches']} "
        f"matches against {report['opponent']} ({report['rules']}, {report['players']} players)"
    )
    print(f"teacher: {report['teacher']}\njudge:   {report['judge']}")
    print(f"{'agent':10s} {'regret':>8s} {'± s.e.':>8s}")
    for k in AGENTS:
        row = report["regret"][k]
        print(f"{k:10s} {row['mean']:8.4f} {row['se']:8.4f}")
    gap = report["gap"]
    print(f"policy - teacher: {gap['mean']:.4f} ± {gap['se']:.4f}")
    print(f"agreement with the teacher's best action: {report['agreement']:.3f}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
