"""Throughput of the engine, the AEC env, the single-agent env and the agents, side by side.

Run ``python -m benchmarks.run [--json PATH] [--quick]``. It pins itself to one CPU core (the
vector-env rows use one process per worker), prints a table and writes JSON with the machine
(CPU model, Python, numpy, PettingZoo, Gymnasium versions).

Every throughput row runs its loop ``REPEATS`` times for a fixed wall-clock slice and reports the
best slice (like ``timeit``: the least disturbed by other processes on a shared machine). All
randomness is seeded, so the work done per step is the same from run to run.

Rows
----
* ``engine``: random legal play on :class:`~bergen_env.engine.BergenState` through
  ``legal_actions()`` + ``apply_unchecked`` (no observation), and through the validating
  ``apply_action``.
* ``aec``: ``bergen_env.env()`` (wrapped) driven exactly as
  ``pettingzoo.test.performance_benchmark`` drives an env (``env.last()`` with observation and
  mask, a random legal action from the mask), and the same loop over PettingZoo's
  ``tictactoe_v3`` and ``connect_four_v3``, with the ratio of ours to each.
* ``single_agent``: learner steps/s of ``BergenSingleAgentEnv`` against ``random`` opponents.
* ``agent:<kind>``: decisions/s and ms/decision of every registered agent kind.
* ``memory``: tracemalloc bytes per reset env instance (100 instances).
* ``vector``: ``gymnasium.vector.AsyncVectorEnv`` over the single-agent env, 1 and 2 workers.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import random
import sys
import time
import tracemalloc
import types
from collections.abc import Callable
from typing import Any

import numpy as np

import bergen_env
from bergen_env.agents import Agent, registered_agents
from bergen_env.engine import BergenState
from bergen_env.rules import Rules

REPEATS = 3
SEED = 12345
TARGETS = {
    "aec_vs_tictactoe": 2.0,
    "engine_steps_per_s": 400_000,
    "single_agent_steps_per_s": 25_000,
    "bytes_per_env": 1_000_000,
}


# ---------------------------------------------------------------------------- timing helpers


def best_rate(loop: Callable[[float], int], seconds: float) -> dict[str, float]:
    """Run ``loop(deadline) -> steps`` REPEATS times for ``seconds / REPEATS`` each; best rate."""
    rates = []
    for _ in range(REPEATS):
        gc.collect()
        start = time.perf_counter()
        steps = loop(start + seconds / REPEATS)
        rates.append(steps / (time.perf_counter() - start))
    return {"rate": max(rates), "median": sorted(rates)[len(rates) // 2]}


# ---------------------------------------------------------------------------- engine


ENGINE_CONFIGS = {
    "standard 2p": dict(rules="standard", num_players=2),
    "standard 4p partnerships": dict(rules="standard", num_players=4, partnerships=True),
    "double_set 3p": dict(rules="double_set", num_players=3),
}


def _rules(config: dict[str, Any]) -> Rules:
    options = dict(config)
    return Rules.preset(options.pop("rules"), **options)


def engine_loop(rules: Rules, validate: bool) -> Callable[[float], int]:
    """Random legal play; a finished match is replaced by a new one (its deal is counted)."""
    pick = random.Random(SEED)
    seeds = iter(range(SEED, SEED + 10**9))

    def loop(deadline: float) -> int:
        steps = 0
        clock = time.perf_counter
        while clock() < deadline:
            state = BergenState(rules, seed=next(seeds))
            apply = state.apply_action if validate else state.apply_unchecked
            while not state.terminal:
                legal = state.legal_actions()
                apply(legal[int(pick.random() * len(legal))])
                steps += 1
        return steps

    return loop


# ---------------------------------------------------------------------------- AEC envs


def _import_classic(name: str) -> tuple[Any, str]:
    """Import ``pettingzoo.classic.<name>``; pygame (used only to render) may be absent."""
    note = ""
    try:
        import pygame  # noqa: F401
    except ImportError:
        # tictactoe_v3 / connect_four_v3 import pygame at module level but call it only in
        # render(), which this benchmark never does. pygame-ce is a large binary wheel, so we
        # import them with an empty module in its place rather than install it.
        sys.modules["pygame"] = types.ModuleType("pygame")
        note = "pygame not installed: imported with an empty pygame module (render unused)"
    return importlib.import_module(f"pettingzoo.classic.{name}"), note


def aec_loop(make_env: Callable[[], Any]) -> Callable[[float], int]:
    """``pettingzoo.test.performance_benchmark``'s loop, with a seeded chooser and deadline."""
    env = make_env()
    pick = random.Random(SEED)
    env.reset(seed=SEED)

    def loop(deadline: float) -> int:
        turn = 0
        while time.perf_counter() < deadline:
            for agent in env.agent_iter(env.num_agents):
                obs, reward, termination, truncation, info = env.last()
                if termination or truncation:
                    action = None
                elif isinstance(obs, dict) and "action_mask" in obs:
                    action = pick.choice(np.flatnonzero(obs["action_mask"]).tolist())
                else:
                    action = env.action_space(agent).sample()
                env.step(action)
                turn += 1
                if all(env.terminations.values()) or all(env.truncations.values()):
                    env.reset()
        return turn

    return loop


# ---------------------------------------------------------------------------- single-agent env


class UniformRandomAgent(Agent):
    """A uniformly random legal action that asks the env for the mask only (no observation,
    no view); the opponent of the ``mask-only random`` rows, and of every single-agent row while
    no ``"random"`` kind is registered."""

    needs_observation = False
    needs_view = False

    def act(self, observation: Any, action_mask: np.ndarray, view: Any) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.integers(len(legal))])


def random_opponent() -> str | type[Agent]:
    """The registered ``"random"`` agent, else :class:`UniformRandomAgent` (a factory)."""
    return "random" if "random" in registered_agents() else UniformRandomAgent


def make_single_agent(mask_only: bool = False, **kwargs: Any) -> Any:
    """The single-agent env against random opponents (raises if it cannot be built)."""
    from bergen_env.single_agent import BergenSingleAgentEnv

    opponent = UniformRandomAgent if mask_only else random_opponent()
    return BergenSingleAgentEnv(opponents=[opponent], **kwargs)


def single_agent_loop(env: Any) -> Callable[[float], int]:
    pick = random.Random(SEED)
    env.reset(seed=SEED)

    def loop(deadline: float) -> int:
        steps = 0
        while time.perf_counter() < deadline:
            legal = np.flatnonzero(env.action_masks())
            _, _, terminated, truncated, _ = env.step(int(legal[int(pick.random() * len(legal))]))
            steps += 1
            if terminated or truncated:
                env.reset()
        return steps

    return loop


def vector_rate(workers: int, seconds: float) -> dict[str, float]:
    """Env steps/s of ``AsyncVectorEnv`` over the single-agent env with ``workers`` processes."""
    import gymnasium

    envs = gymnasium.vector.AsyncVectorEnv(
        [make_single_agent for _ in range(workers)], context="fork"
    )
    try:
        pick = np.random.default_rng(SEED)
        envs.reset(seed=SEED)
        masks = np.array(envs.call("action_masks"))

        def loop(deadline: float) -> int:
            nonlocal masks
            steps = 0
            while time.perf_counter() < deadline:
                # a random legal action per env: argmax of random keys over the legal ids
                keys = pick.random(masks.shape) * masks
                envs.step(keys.argmax(axis=1))
                masks = np.array(envs.call("action_masks"))
                steps += workers
            return steps

        return best_rate(loop, seconds)
    finally:
        envs.close()


# ---------------------------------------------------------------------------- agents


def agent_rate(kind: str, decisions: int, seconds: float) -> dict[str, float]:
    """Decisions/s of ``make_agent(kind)`` in every seat of a 2-player standard match."""
    from bergen_env.agents import make_agent

    raw = bergen_env.raw_env(num_players=2)
    agents = [make_agent(kind) for _ in range(2)]
    rng = np.random.default_rng(SEED)
    raw.reset(seed=SEED)
    for seat, agent in enumerate(agents):
        agent.reset(raw.rules, seat, np.random.default_rng(SEED + seat))
    done = 0
    spent = 0.0
    while done < decisions and spent < seconds:
        agent_name = raw.agent_selection
        seat = raw.agent_name_mapping[agent_name]
        obs = raw.observe(agent_name)
        view = raw.public_view(agent_name)
        start = time.perf_counter()
        action = agents[seat].act(obs["observation"], obs["action_mask"], view)
        spent += time.perf_counter() - start
        done += 1
        raw.step(int(action))
        if raw.terminations[agent_name] or raw.truncations[agent_name]:
            raw.reset(seed=int(rng.integers(2**31)))
            for s, agent in enumerate(agents):
                agent.reset(raw.rules, s, np.random.default_rng(int(rng.integers(2**31))))
    return {"rate": done / spent, "ms_per_decision": 1000 * spent / done, "decisions": done}


# ---------------------------------------------------------------------------- memory


def bytes_per_env(make_env: Callable[[], Any], count: int = 100) -> float:
    """tracemalloc growth per instance over ``count`` reset instances."""
    make_env().reset(seed=0)  # warm caches (imports, lazily built tables) before measuring
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    envs = []
    for i in range(count):
        e = make_env()
        e.reset(seed=i)
        envs.append(e)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del envs
    return (after - before) / count


# ---------------------------------------------------------------------------- machine


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import gymnasium
    import pettingzoo

    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gymnasium": gymnasium.__version__,
        "pettingzoo": pettingzoo.__version__,
        "platform": platform.platform(),
    }


def pin_to_one_core() -> tuple[set[int] | None, str]:
    """Pin this process to one core; returns the previous affinity to restore."""
    if not hasattr(os, "sched_setaffinity"):
        return None, "not pinned (no sched_setaffinity)"
    before = os.sched_getaffinity(0)
    core = min(before)
    os.sched_setaffinity(0, {core})
    return before, f"pinned to cpu {core}"


def print_pinned_command(module: str) -> None:
    """Print the command that reproduces this run, pinned to one core as the docs give it."""
    import shlex

    print("command:", shlex.join(["taskset", "-c", "0", "python", "-m", module, *sys.argv[1:]]))


def write_json(path: str | None, result: Any) -> None:
    """Write ``result`` as indented JSON to ``path`` (atomically); nothing when ``path`` is None."""
    if path:
        from bergen_env.atomic_files import write_text

        write_text(path, json.dumps(result, indent=2))


def check_targets(checks: dict[str, float | None]) -> dict[str, dict[str, Any]]:
    """Each of :data:`TARGETS` with its measured value and whether it is met (printed)."""
    targets = {}
    print("targets")
    for key, target in TARGETS.items():
        value = checks[key]
        if value is None:
            met = None
        elif key == "bytes_per_env":
            met = value < target
        else:
            met = value >= target
        targets[key] = {"value": value, "target": target, "met": met}
        shown = "n/a" if value is None else f"{value:,.2f}"
        verdict = {True: "MET", False: "NOT MET", None: "not measured"}[met]
        relation = "<" if key == "bytes_per_env" else ">="
        print(f"  {key:<30} {shown:>16} ({relation} {target:,}) {verdict}")
    return targets


# ---------------------------------------------------------------------------- main


def run(quick: bool) -> dict[str, Any]:
    t = 1.2 if quick else 4.5  # seconds per throughput row
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    affinity, pin_note = pin_to_one_core()
    notes.append(pin_note)

    def add(name: str, unit: str, result: dict[str, Any] | None, note: str = "") -> None:
        row = {"name": name, "unit": unit, "note": note}
        if result is not None:
            row.update(result)
        rows.append(row)
        value = f"{row['rate']:>12,.0f}" if "rate" in row else f"{'n/a':>12}"
        print(f"  {name:<44} {value} {unit:<18} {note}", flush=True)

    print("engine (random legal play, no observation)")
    for label, config in ENGINE_CONFIGS.items():
        rules = _rules(config)
        add(f"engine apply_unchecked {label}", "steps/s", best_rate(engine_loop(rules, False), t))
    rules = _rules(ENGINE_CONFIGS["standard 2p"])
    add("engine apply_action standard 2p", "steps/s", best_rate(engine_loop(rules, True), t))

    print("AEC env (performance_benchmark loop: last() + random legal action from the mask)")
    aec = {}
    aec["bergen"] = best_rate(aec_loop(lambda: bergen_env.env(num_players=2)), t)
    add("aec bergen_env.env() standard 2p", "steps/s", aec["bergen"])
    add(
        "aec bergen_env.env() standard 4p partnerships",
        "steps/s",
        best_rate(aec_loop(lambda: bergen_env.env(num_players=4, partnerships=True)), t),
    )
    for name in ("tictactoe_v3", "connect_four_v3"):
        try:
            module, note = _import_classic(name)
        except ImportError as exc:
            add(f"aec {name}", "steps/s", None, f"not available: {exc}")
            continue
        if note and note not in notes:
            notes.append(note)
        aec[name] = best_rate(aec_loop(module.env), t)
        add(f"aec {name}", "steps/s", aec[name])
    ratios = {
        f"bergen_vs_{name}": aec["bergen"]["rate"] / aec[name]["rate"]
        for name in ("tictactoe_v3", "connect_four_v3")
        if name in aec
    }
    for key, value in ratios.items():
        print(f"  {'ratio ' + key:<44} {value:>12.2f} x")

    print("single-agent env (learner steps vs random opponents)")
    if random_opponent() is UniformRandomAgent:
        notes.append("no 'random' agent registered: opponents are UniformRandomAgent (this file)")
    try:
        single = make_single_agent(num_players=2)
        single_error = ""
    except Exception as exc:  # the env or the "random" agent may not exist yet
        single, single_error = None, f"not available: {type(exc).__name__}: {exc}"
    if single is not None:
        single_rate = best_rate(single_agent_loop(single), t)
        add("single_agent standard 2p vs random", "steps/s", single_rate)
        single4 = make_single_agent(num_players=4, partnerships=True)
        add(
            "single_agent standard 4p partnerships vs random",
            "steps/s",
            best_rate(single_agent_loop(single4), t),
        )
        add(
            "single_agent standard 2p vs mask-only random",
            "steps/s",
            best_rate(single_agent_loop(make_single_agent(mask_only=True, num_players=2)), t),
            "opponents need no observation or view",
        )
    else:
        add("single_agent standard 2p vs random", "steps/s", None, single_error)

    print("agents (every registered kind, all seats, 2p standard)")
    kinds = registered_agents()
    if not kinds:
        add("agent (none registered)", "decisions/s", None, "no agent kinds registered")
    for kind in kinds:
        slow = kind.startswith(("search", "mcts", "ismcts"))
        decisions = (5 if quick else 40) if slow else (300 if quick else 3000)
        try:
            result = agent_rate(kind, decisions, seconds=t * 2)
            add(
                f"agent {kind}",
                "decisions/s",
                result,
                f"{result['ms_per_decision']:.3f} ms/decision over {result['decisions']}",
            )
        except Exception as exc:
            add(f"agent {kind}", "decisions/s", None, f"failed: {type(exc).__name__}: {exc}")

    print("memory (tracemalloc, 100 reset instances)")
    memory = {"aec_env": bytes_per_env(lambda: bergen_env.env(num_players=2))}
    if single is not None:
        memory["single_agent_env"] = bytes_per_env(lambda: make_single_agent(num_players=2))
    for key, value in memory.items():
        add(f"memory {key}", "bytes/instance", {"rate": value})

    print("vector env (gymnasium AsyncVectorEnv over the single-agent env)")
    if affinity is not None:
        os.sched_setaffinity(0, affinity)  # workers need their own cores
    vector = {}
    for workers in (1, 2):
        name = f"vector AsyncVectorEnv {workers} worker(s)"
        if single is None:
            add(name, "steps/s", None, single_error)
            continue
        vector[workers] = vector_rate(workers, t)
        add(name, "steps/s", vector[workers])

    def rate(name: str) -> float | None:
        return next((r["rate"] for r in rows if r["name"] == name and "rate" in r), None)

    engine = rate("engine apply_unchecked standard 2p")
    single_rate = rate("single_agent standard 2p vs random")
    checks = {
        "aec_vs_tictactoe": ratios.get("bergen_vs_tictactoe_v3"),
        "engine_steps_per_s": engine,
        "single_agent_steps_per_s": single_rate,
        "bytes_per_env": memory["aec_env"],
    }
    targets = check_targets(checks)
    for note in notes:
        print(f"note: {note}")
    return {
        "machine": machine(),
        "quick": quick,
        "seconds_per_row": t,
        "repeats": REPEATS,
        "seed": SEED,
        "notes": notes,
        "rows": rows,
        "ratios": ratios,
        "targets": targets,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="a ~20 s smoke run")
    args = parser.parse_args(argv)
    info = machine()
    print(f"{info['cpu']} | python {info['python']} | numpy {info['numpy']}")
    start = time.perf_counter()
    results = run(args.quick)
    results["total_seconds"] = time.perf_counter() - start
    print(f"total {results['total_seconds']:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
