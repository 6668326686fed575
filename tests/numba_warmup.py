"""Compile the numba kernels into their on-disk cache before the test workers start.

``python -m tests.numba_warmup GROUP`` runs a tiny workload through every compiled entry point
of ``GROUP``: ``env`` (the batched envs) or ``agents`` (the compiled search playouts, belief
weights and heuristic matches). The kernels are ``cache=True``, so every later
process (the pytest-xdist workers, the subprocesses of the docs, example and benchmark tests)
loads their machine code instead of compiling it again: on a fresh machine each worker would
otherwise compile every kernel itself, at the same time. A signature missed here is simply
compiled where it is first called. ``tests/conftest.py`` runs both groups at once, one process
each, in the pytest-xdist controller.
"""

from __future__ import annotations

import sys

import numpy as np

GROUPS = ("env", "agents")


def warm_env() -> None:
    """The batched env (with and without observations, one thread and ``parallel``) and the
    learner env."""
    from bergen_env.vector import BergenLearnerVectorEnv, BergenVectorEnv

    for observations, parallel in ((True, False), (False, False), (True, True)):
        env = BergenVectorEnv(num_envs=2, seed=0, observations=observations, parallel=parallel)
        obs, _ = env.reset()
        for _ in range(3):
            obs, *_ = env.step(env.random_actions(obs["action_mask"]))
    for opponents in ("random", "greedy"):
        learner = BergenLearnerVectorEnv(num_envs=2, opponents=opponents, seed=0, max_hands=1)
        _, infos = learner.reset()
        for _ in range(200):  # until a match ends: its final observation is replayed
            actions = np.array([np.flatnonzero(row)[0] for row in infos["action_mask"]])
            _, _, _, _, infos = learner.step(actions)
            if "final_obs" in infos:
                break


def warm_agents() -> None:
    """Compiled search playouts (every rollout, both beliefs, both histories) and heuristic
    matches."""
    from bergen_env import Rules
    from bergen_env.agents import make_agent
    from bergen_env.agents.compiled.heuristic_matches import duplicate_wins
    from bergen_env.agents.compiled.heuristic_policy import DEFAULT_WEIGHTS
    from tests.search_positions import positions

    rules = Rules.preset("standard", num_players=3)
    duplicate_wins(rules, DEFAULT_WEIGHTS, DEFAULT_WEIGHTS, 1, seed=0)
    specs = [
        "search:samples=2",
        "search:samples=2,rollout=greedy",
        "search:samples=2,rollout=heuristic",
        "search:samples=2,rollout=heuristic,belief=1,batch=1",
        "search:samples=2,rollout=heuristic,belief=1,history=sampled",
    ]
    for k, view in enumerate(positions(rules, 3, seed=0)):
        for spec in specs:
            agent = make_agent(spec)
            agent.reset(rules, view.seat, np.random.default_rng(k))
            agent.act(None, None, view)


def main(argv: list[str] | None = None) -> None:
    groups = sys.argv[1:] if argv is None else argv
    for group in groups:
        if group not in GROUPS:
            raise SystemExit(f"unknown group {group!r}; groups: {GROUPS}")
        {"env": warm_env, "agents": warm_agents}[group]()


if __name__ == "__main__":
    main()
