"""Where the batched env's compiled kernels count references: numba's ``NRT_incref`` and
``NRT_decref`` call sites in the optimised LLVM IR of each kernel.

Runs ``BergenVectorEnv`` (one thread and ``parallel=True``) and ``BergenLearnerVectorEnv``
(greedy opponents, through a few finished matches) on 2-player ``standard`` rules so every
kernel of :mod:`bergen_env.vector.kernels` and :mod:`bergen_env.vector.learner` is compiled,
then prints, per kernel, the call sites in its own body and in the out-of-line functions it
calls (numba's CPython wrappers left out: they run once per call from Python). A site inside a
per-row loop runs once per row and step (an atomic operation each). numba's inspection needs
freshly compiled code, so the script points ``NUMBA_CACHE_DIR`` at an empty folder before
numba is imported (nothing is read from or written to the kernels' own cache).

    python -m benchmarks.refcount_sites [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from typing import Any

from benchmarks.run import write_json

SITE = {
    "incref": re.compile(r"call void @NRT_incref"),
    "decref": re.compile(r"call void @NRT_decref"),
}


def compile_kernels() -> dict[str, Any]:
    """Compile every kernel the envs call (by playing them); the kernels by name."""
    from bergen_env.vector import BergenLearnerVectorEnv, BergenVectorEnv, learner
    from bergen_env.vector import kernels as K

    for parallel in (False, True):
        for copy in (True, False):  # the masked and the unmasked check of the actions
            env = BergenVectorEnv(num_envs=64, seed=0, parallel=parallel, copy=copy)
            obs, _ = env.reset()
            for _ in range(100):
                obs, *_ = env.step(env.random_actions(obs["action_mask"]))
            env.step_rows(env.greedy_actions(), env.all_rows)
    env = BergenLearnerVectorEnv(num_envs=64, seed=0, opponents="greedy")
    _, infos = env.reset()
    for _ in range(100):  # matches end: replay_final runs
        _, _, _, _, infos = env.step(infos["action_mask"].argmax(axis=1))
    kernels = {f"kernels.{k}": v for k, v in vars(K).items()}
    kernels.update({f"learner.{k}": v for k, v in vars(learner).items()})
    return {k: v for k, v in kernels.items() if getattr(v, "signatures", None)}


def sites(llvm: str) -> dict[str, dict[str, int]]:
    """Per function defined in ``llvm`` (CPython wrappers left out): its call sites."""
    out = {}
    for body in re.split(r"\ndefine ", llvm)[1:]:
        name = re.match(r'[^@]*@"?([^"(]*)', body).group(1)
        if name.startswith(("cpython.", "cfunc.", "NRT_", "_ZN7cpython", "_ZN5cfunc")):
            continue
        out[name] = {k: len(p.findall(body)) for k, p in SITE.items()}
    return out


def run() -> dict[str, Any]:
    kernels = compile_kernels()
    result = {}
    for name, kernel in sorted(kernels.items()):
        found = sites(kernel.inspect_llvm(kernel.signatures[0]))
        total = {k: sum(f[k] for f in found.values()) for k in SITE}
        result[name] = {"total": total, "functions": found}
        print(f"  {name:<36} incref {total['incref']:4d}  decref {total['decref']:4d}")
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache
        result = run()
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
