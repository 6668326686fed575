"""Batched, compiled Bergen, Draw and Fives: N matches as arrays stepped together (needs the
``[vector]`` extra).

- :class:`BergenVectorEnv`: the whole batch, every seat (the pgx shape).
- :class:`BergenLearnerVectorEnv`: a Gymnasium ``VectorEnv`` with one learner seat per match,
  the other seats played inside the batch.

Importing this package imports numba; the kernels compile at their first call and are cached
on disk. ``import bergen_env`` never imports it.
"""

from bergen_env.vector.env import BergenVectorEnv
from bergen_env.vector.learner import BergenLearnerVectorEnv

__all__ = ["BergenLearnerVectorEnv", "BergenVectorEnv"]
