"""The compiled opponents' move (:mod:`bergen_env.agents.batch_opponents`) on the batched
kernels' state, for the batched learner env's numba loop."""

from __future__ import annotations

from bergen_env.agents.batch_opponents import GREEDY, RANDOM
from bergen_env.agents.compiled.heuristic_policy import heuristic_action
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit_inline


@njit_inline
def opponent_move(r, i, code, weights, m, scores, hands, bits, hlen, voids, line, masks, agent_rng):
    """The move of a compiled opponent (``code``: ``RANDOM``, ``GREEDY`` or ``HEURISTIC`` with
    ``weights``) for the seat on turn of row ``i``; ``masks[i]`` holds its legal actions. The
    random one draws from stream ``i`` of ``agent_rng``."""
    if code == RANDOM:
        return K.random_row(masks, agent_rng, i)
    if code == GREEDY:
        return K.greedy_row(r, i, masks, m, scores, hlen)
    return heuristic_action(r, i, m, scores, hands, bits, hlen, voids, line, weights)
