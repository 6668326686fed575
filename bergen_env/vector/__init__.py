"""Batched, compiled Bergen, Draw and Fives: N matches as arrays stepped together (needs the
``[vector]`` extra).

- :class:`BergenVectorEnv`: the whole batch, every seat (the pgx shape).
- :class:`BergenLearnerVectorEnv`: a Gymnasium ``VectorEnv`` with one learner seat per match,
  the other seats played inside the batch.
- :mod:`~bergen_env.vector.kernels`: the compiled rules both envs (and the compiled agents of
  :mod:`bergen_env.agents.compiled`) step.

Importing this package imports numba; the kernels compile at their first call and are cached
on disk. The two envs (and Gymnasium) are imported when first named, so the kernels load
without them. ``import bergen_env`` never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bergen_env.vector import _numba  # noqa: F401  (a clear error when numba is missing)

if TYPE_CHECKING:
    from bergen_env.vector.env import BergenVectorEnv
    from bergen_env.vector.learner import BergenLearnerVectorEnv

__all__ = ["BergenLearnerVectorEnv", "BergenVectorEnv"]


def __getattr__(name: str) -> Any:
    if name == "BergenVectorEnv":
        from bergen_env.vector.env import BergenVectorEnv

        return BergenVectorEnv
    if name == "BergenLearnerVectorEnv":
        from bergen_env.vector.learner import BergenLearnerVectorEnv

        return BergenLearnerVectorEnv
    raise AttributeError(f"module 'bergen_env.vector' has no attribute {name!r}")
