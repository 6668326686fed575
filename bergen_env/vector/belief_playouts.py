"""``search``'s compiled playouts over deals drawn from a learned belief (``belief=learned``).

:func:`draw_deal` is :func:`bergen_env.agents.learned_belief.draw_deal` compiled (same source,
same draws from the numpy Generator); :func:`belief_search_totals` draws ``samples`` deals with
it and plays each legal action out with :func:`~bergen_env.vector.rollouts.greedy_playouts`, as
:func:`~bergen_env.vector.rollouts.search_totals` does with the uniform sampler.
"""

from __future__ import annotations

import numpy as np

from bergen_env.agents import learned_belief
from bergen_env.agents.learned_belief import LearnedDeals
from bergen_env.engine import TILE_POOLS
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit
from bergen_env.vector.rollouts import (
    CompiledPlayouts,
    add_values,
    greedy_playouts,
    next_hand_shuffles,
)

draw_deal = njit(learned_belief.draw_deal)


@njit
def belief_search_totals(rng, samples, pool, q, caps, tries, loc_of, seat, own, levels, r, m0,
                         scores0, hlen0, voids0, line0, legal, policy, weights, deal_rng, deals,
                         out, value_table, low, values, work, deal_pool, totals,
                         products):  # fmt: skip
    """``samples`` deals from :func:`draw_deal` (``loc_of[s]``: the belief column of seat ``s``,
    -1 for the searcher), each with one playout per legal action; ``totals`` and ``products``
    as in :func:`~bergen_env.vector.rollouts.search_totals`, ``levels[level]`` += 1 per deal.
    The RNG advances as in the Python search."""
    n = r[K.R_N]
    m = pool.shape[0]
    where = np.zeros((2, m), dtype=np.int64)
    tiles = np.empty(m + own.shape[0], dtype=np.int64)
    bone = q.shape[2] - 1
    dealt = r[K.R_N] * r[K.R_HAND]
    order = np.empty_like(deal_pool)
    for _ in range(samples):
        levels[draw_deal(rng, pool, q, caps, tries, where)] += 1
        k = 0
        for s in range(n):
            if loc_of[s] < 0:
                for j in range(own.shape[0]):
                    tiles[k] = own[j]
                    k += 1
            else:
                for j in range(m):
                    if where[1, j] == loc_of[s]:
                        tiles[k] = where[0, j]
                        k += 1
        for j in range(m):
            if where[1, j] == bone:
                tiles[k] = where[0, j]
                k += 1
        new_hands = greedy_playouts(
            r, m0, scores0, hlen0, voids0, line0, tiles, legal, policy, weights, deal_rng, deals,
            out, value_table, low, values, work,
        )  # fmt: skip
        next_hand_shuffles(rng, r, deal_pool, dealt, new_hands, order)
        add_values(values, totals, products)


def learned_search(
    root: CompiledPlayouts,
    deals: LearnedDeals,
    rng: np.random.Generator,
    samples: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The summed values of each legal action over ``samples`` deals of ``deals``, and the
    summed products of their values, drawn from ``rng`` in one compiled call (the draws of
    ``SearchAgent.action_values``' Python loop), with ``root``'s rollout."""
    view = deals.view
    loc_of = np.full(view.rules.num_players, -1, dtype=np.int64)
    for k, s in enumerate(deals.seats):
        loc_of[s] = k
    own = np.array(view.hand, dtype=np.int64)
    levels = np.zeros(deals.q.shape[0] + 1, dtype=np.int64)
    totals = np.zeros(len(root.legal), dtype=np.float64)
    products = np.zeros((len(root.legal), len(root.legal)), dtype=np.float64)
    belief_search_totals(
        rng, samples, deals.pool, deals.q, deals.caps, deals.tries, loc_of, view.seat, own,
        levels, root.r, root.m, root.scores, root.hlen, root.voids, root.line, root.legal,
        root.policy, root.weights, root.rng, root.deals, root.out, root.table, root.low,
        root.values, root.work, TILE_POOLS[view.rules.sets], totals, products,
    )  # fmt: skip
    for i, c in enumerate(levels.tolist()):
        deals.levels[i] += c
    return totals, products
