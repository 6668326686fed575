"""``search``'s ``belief=1`` compiled: deals weighed by how well they explain others' plays.

:class:`CompiledBelief` holds the past decisions of a
:class:`~bergen_env.agents.belief.BeliefModel` as rows of the kernels' arrays (one row per
scored play: the public state it was made in, the seat's hand filled per deal) and
:func:`log_weights` scores a pool of deals with the compiled heuristic
(:func:`~bergen_env.agents.compiled.heuristic_policy.evaluate`): the same log-likelihoods as
``BeliefModel.log_weight``, float for float. :func:`weighted_search` is the whole of
``SearchAgent.action_values`` under ``belief=1``: the pool drawn as ``HiddenTileSampler`` draws
it, the systematic resampling of :func:`bergen_env.agents.belief.resample`, and the compiled
playouts of the picked deals, with the random stream advanced as in the Python search.
"""

from __future__ import annotations

import math

import numpy as np

from bergen_env.actions import DOUBLE_PLAY
from bergen_env.agents.belief import DRAW_SLOT, KNOWN_DRAW, PLAY, BeliefModel, resample
from bergen_env.agents.compiled.heuristic_policy import evaluate, heuristic_weights, seen_masks
from bergen_env.agents.compiled.playouts import (
    CompiledPlayouts,
    add_values,
    greedy_playouts,
    next_hand_shuffles,
    sample_hidden,
    sample_work,
    sampler_arrays,
)
from bergen_env.engine import TILE_POOLS
from bergen_env.hidden_tiles import HiddenTileSampler
from bergen_env.tiles import NUM_TILES
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit_borrowed, njit_inline


class CompiledBelief:
    """The scored past plays of ``model`` as kernel rows, scored with its heuristic's weights."""

    def __init__(self, model: BeliefModel) -> None:
        view = model.view
        rules = view.rules
        decisions = model.decisions
        d = len(decisions)
        self.temperature = np.array([dec.temperature for dec in decisions], dtype=np.float64)
        self.r = K.rule_vector(rules, None, "match")
        self.m = np.zeros((d, K.NUM_FIELDS), dtype=np.int32)
        self.scores = np.zeros((d, K.MAX_SEATS), dtype=np.int32)
        self.hlen = np.zeros((d, K.MAX_SEATS), dtype=np.int32)
        self.voids = np.zeros((d, K.MAX_SEATS), dtype=np.int32)
        self.line = np.zeros((d, NUM_TILES), dtype=np.int8)
        self.hands = np.zeros((d, K.MAX_SEATS, NUM_TILES), dtype=np.int8)
        self.played = np.zeros((d, NUM_TILES), dtype=np.int64)
        self.seat = np.zeros(d, dtype=np.int64)
        self.action = np.zeros(d, dtype=np.int64)
        n = rules.num_players
        for k, dec in enumerate(decisions):
            v = dec.view
            m = self.m[k]
            m[K.CUR] = dec.seat
            m[K.LEAD] = -1
            m[K.BPOS] = rules.boneyard_size - v.boneyard_size
            m[K.LLEN] = sum(dec.line_counts)
            m[K.E0], m[K.E1] = v.ends
            m[K.D0], m[K.D1] = v.end_doubles
            m[K.WINNER] = -1
            self.scores[k, : rules.num_sides] = v.scores
            self.hlen[k, :n] = v.hand_sizes
            self.voids[k, :n] = v.voids
            self.line[k] = dec.line_counts
            self.played[k] = dec.played_since
            self.seat[k] = dec.seat
            self.action[k] = dec.action
        # where each seat's hand starts in a deal's flat tiles (hands by seat, then the boneyard)
        self.start = np.zeros(K.MAX_SEATS + 1, dtype=np.int64)
        self.start[1 : n + 1] = np.cumsum(view.hand_sizes)
        self.weights = heuristic_weights(model.model)
        histories = model.histories
        count = len(histories)
        events = max([len(h.events) for h in histories], default=0)
        voids = max([len(h.voids) for h in histories], default=0)
        futures = max([len(h.futures) for h in histories], default=0)
        #: ``history="sampled"``: the seat histories as padded rows (none with ``"exact"``).
        self.walked = count > 0
        self.hseat = np.array([h.seat for h in histories], dtype=np.int64)
        self.events = np.zeros((count, max(events, 1), 5), dtype=np.int64)
        self.nevents = np.array([len(h.events) for h in histories], dtype=np.int64)
        self.void_index = np.zeros((count, max(voids, 1)), dtype=np.int64)
        self.void_mask = np.zeros((count, max(voids, 1)), dtype=np.int64)
        self.nvoids = np.array([len(h.voids) for h in histories], dtype=np.int64)
        self.futures = np.zeros((count, max(futures, 1), 2), dtype=np.int64)
        self.nfutures = np.array([len(h.futures) for h in histories], dtype=np.int64)
        size = 2 * NUM_TILES + 2 * self.events.shape[1]
        #: :func:`walk_log_weights`' scratch (``tiles``, ``due``, ``dl``, ``choices``).
        self.walk_scratch = (
            np.empty(size, dtype=np.int64),
            np.empty(size + self.futures.shape[1], dtype=np.int64),
            np.empty(size, dtype=np.int64),
            np.empty(size, dtype=np.int64),
        )
        for k, h in enumerate(histories):
            if h.events:
                self.events[k, : len(h.events)] = h.events
            for v, (index, mask) in enumerate(h.voids):
                self.void_index[k, v] = index
                self.void_mask[k, v] = mask
            if h.futures:
                self.futures[k, : len(h.futures)] = h.futures

    def log_weights(self, deals: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """``BeliefModel.log_weight`` of each deal (rows of flat tiles) of ``deals``, in order,
        with the same draws from ``rng`` (needed with ``history="sampled"``)."""
        out = np.zeros(deals.shape[0], dtype=np.float64)
        if self.walked:
            if rng is None:
                raise ValueError("history='sampled' weighs a deal with random draws: pass rng")
            walk_log_weights(
                rng, self.r, self.m, self.scores, self.hands, self.hlen, self.voids, self.line,
                self.weights, self.action, self.temperature, self.start, self.hseat,
                self.events, self.nevents, self.void_index, self.void_mask, self.nvoids,
                self.futures, self.nfutures, deals, out, *self.walk_scratch, *play_scratch(),
            )  # fmt: skip
            return out
        log_weights(
            self.r, self.m, self.scores, self.hands, self.hlen, self.voids, self.line,
            self.weights, self.played, self.seat, self.action, self.start, self.temperature,
            deals, out, *play_scratch(),
        )  # fmt: skip
        return out


def play_scratch() -> tuple[np.ndarray, np.ndarray]:
    """Scratch for one hand's plays and their scaled scores (``plays``, ``scaled``)."""
    return np.empty(2 * NUM_TILES + 1, dtype=np.int64), np.empty(2 * NUM_TILES + 1)


@njit_borrowed
def log_weights(r, m, scores, hands, hlen, voids, line, weights, played, seat, action, start,
                temperature, deals, out, plays, scaled):  # fmt: skip
    """``out[k]``: the sum over the past plays (rows of ``m`` ...) of log P(play | the seat's
    hand then, its tiles in deal ``k`` plus ``played``) under the softmax with the row's
    ``temperature`` of :func:`evaluate`'s scores of the plays that hand had (see
    ``BeliefModel._log_prob``); ``plays`` and ``scaled``: scratch (:func:`play_scratch`)."""
    d = m.shape[0]
    for k in range(deals.shape[0]):
        total = 0.0
        for i in range(d):
            p = seat[i]
            for t in range(NUM_TILES):
                hands[i, p, t] = played[i, t]
            for j in range(start[p], start[p + 1]):
                hands[i, p, deals[k, j]] += 1
            total += row_log_prob(r, m, scores, hands, hlen, voids, line, weights, action,
                                  temperature, i, p, plays, scaled)  # fmt: skip
        out[k] = total


@njit_inline
def row_log_prob(r, m, scores, hands, hlen, voids, line, weights, action, temperature, i, p,
                 plays, scaled):  # fmt: skip
    """log P(``action[i]`` | seat ``p``'s hand ``hands[i, p]``) of row ``i`` (the softmax of
    ``BeliefModel._log_prob``); ``plays`` and ``scaled`` are scratch."""
    e0 = m[i, K.E0]
    e1 = m[i, K.E1]
    count = 0
    for t in range(NUM_TILES):
        if hands[i, p, t]:
            if (K.T_CONTAINS[e0] >> t) & 1:
                plays[count] = 2 * t
                count += 1
            if (K.T_CONTAINS[e1] >> t) & 1:
                plays[count] = 2 * t + 1
                count += 1
    if r[K.R_SETS] == 2 and e0 == e1 and hands[i, p, K.T_DOUBLE_ID[e0]] >= 2:
        plays[count] = DOUBLE_PLAY + e0
        count += 1
    chosen = -1
    for j in range(count):
        if plays[j] == action[i]:
            chosen = j
            break
    if chosen < 0:  # the deal contradicts the move (cannot happen for sampled deals)
        return -math.inf
    if count == 1:  # a forced play: log 1
        return 0.0
    held, once, twice = seen_masks(r, i, hands, line, p)
    top = -math.inf
    for j in range(count):
        scaled[j] = evaluate(r, i, m, scores, hands, hlen, voids, line, weights, plays[j], held,
                             once, twice, -math.inf) / temperature[i]  # fmt: skip
        if scaled[j] > top:
            top = scaled[j]
    norm = 0.0
    for j in range(count):
        norm += math.exp(scaled[j] - top)
    return scaled[chosen] - (top + math.log(norm))


@njit_inline
def deadline(void_index, void_mask, count, tile, before):
    """``SeatHistory.deadline`` over the first ``count`` voids (``before`` -1: none)."""
    last = -1
    for v in range(count):
        if before >= 0 and void_index[v] >= before:
            break
        if (void_mask[v] >> tile) & 1:
            last = void_index[v]
    return last


@njit_inline
def drop(tiles, dl, j, n):
    """Remove entry ``j`` of the first ``n`` of ``tiles`` and ``dl``, keeping the order (as
    ``del`` on the Python walk's lists); the new count."""
    for q in range(j, n - 1):
        tiles[q] = tiles[q + 1]
        dl[q] = dl[q + 1]
    return n - 1


@njit_borrowed
def walk_log_weights(rng, r, m, scores, hands, hlen, voids, line, weights, action, temperature,
                     start, hseat, events, nevents, void_index, void_mask, nvoids, futures,
                     nfutures, deals, out, tiles, due, dl, choices, plays, scaled):  # fmt: skip
    """``out[k]``: ``BeliefModel.log_weight`` of deal ``k`` under ``history="sampled"``, with
    the same draws from the numpy Generator ``rng``: one walk back per seat history (row ``h``
    of ``hseat``, ``events``, ``void_index``, ``void_mask``, ``futures``), in order.
    ``tiles``, ``due``, ``dl``, ``choices`` (``CompiledBelief.walk_scratch``), ``plays`` and
    ``scaled`` (:func:`play_scratch`) are scratch."""
    for k in range(deals.shape[0]):
        total = 0.0
        for h in range(hseat.shape[0]):
            p = hseat[h]
            vi = void_index[h]
            vm = void_mask[h]
            nv = nvoids[h]
            n = 0
            for j in range(start[p], start[p + 1]):
                tiles[n] = deals[k, j]
                dl[n] = deadline(vi, vm, nv, deals[k, j], -1)
                n += 1
            sub = 0.0
            ok = True
            f = 0
            for e in range(nevents[h]):
                kind = events[h, e, 0]
                index = events[h, e, 1]
                if kind == PLAY:
                    for c in range(2, 4):
                        t = events[h, e, c]
                        if t >= 0:
                            tiles[n] = t
                            dl[n] = deadline(vi, vm, nv, t, index)
                            n += 1
                    i = events[h, e, 4]
                    if i >= 0:
                        for t in range(NUM_TILES):
                            hands[i, p, t] = 0
                        for j in range(n):
                            hands[i, p, tiles[j]] += 1
                        sub += row_log_prob(r, m, scores, hands, hlen, voids, line, weights,
                                            action, temperature, i, p, plays, scaled)  # fmt: skip
                elif kind == KNOWN_DRAW:
                    j = n - 1
                    while tiles[j] != events[h, e, 2]:
                        j -= 1
                    n = drop(tiles, dl, j, n)
                else:
                    while f < nfutures[h] and futures[h, f, 0] > index:
                        f += 1
                    nd = 0
                    for j in range(n):
                        if dl[j] >= 0:
                            due[nd] = dl[j]
                            nd += 1
                    for q in range(f, nfutures[h]):
                        if futures[h, q, 1] >= 0:
                            due[nd] = futures[h, q, 1]
                            nd += 1
                    tight = -1
                    for a in range(nd):
                        bound = due[a]
                        need = 0
                        for b in range(nd):
                            if due[b] >= bound:
                                need += 1
                        have = 0
                        for q in range(nevents[h]):
                            if (events[h, q, 0] == DRAW_SLOT and events[h, q, 1] <= index
                                    and events[h, q, 1] > bound):  # fmt: skip
                                have += 1
                        if need > have:
                            ok = False
                            break
                        if need == have and bound > tight:
                            tight = bound
                    if not ok:
                        break
                    nc = 0
                    for j in range(n):
                        if dl[j] < index and (tight < 0 or dl[j] >= tight):
                            choices[nc] = j
                            nc += 1
                    if nc == 0:
                        ok = False
                        break
                    pick = choices[0]
                    if nc > 1:
                        pick = choices[int(rng.random() * nc)]
                        sub += math.log(nc)
                    n = drop(tiles, dl, pick, n)
            if ok:
                for j in range(n):
                    if dl[j] >= 0:
                        ok = False
            if not ok:
                total = -math.inf
                break
            total += sub
            if total == -math.inf:
                break
        out[k] = total


@njit_borrowed
def draw_deals(rng, pool, excluded, orders, order_lens, in_order, sizes, seat, own, tries,
               counters, deals, hand_buf, keep, rest):  # fmt: skip
    """``deals.shape[0]`` determinizations drawn by :func:`sample_hidden`, one per row
    (``hand_buf``, ``keep``, ``rest``: its scratch, :func:`sample_work`)."""
    for k in range(deals.shape[0]):
        sample_hidden(rng, pool, excluded, orders, order_lens, in_order, sizes, seat, own,
                      tries, counters, deals[k], hand_buf, keep, rest)  # fmt: skip


@njit_borrowed
def picked_totals(rng, picks, deals, r, m0, scores0, hlen0, voids0, line0, legal, policy,
                  weights, deal_rng, hand_deals, out, value_table, low, values, work,
                  deal_pool, totals, products, order):  # fmt: skip
    """One playout per legal action of each deal ``deals[picks[j]]`` in turn, every hand ended
    drawing the next hand's shuffle from ``rng``; ``totals`` and ``products`` as in
    :func:`~bergen_env.agents.compiled.playouts.search_totals`. A deal picked again right after
    itself (resampling's picks are sorted) reuses its playouts: they are deterministic.
    ``order``: scratch of ``deal_pool``'s size."""
    dealt = r[K.R_N] * r[K.R_HAND]
    new_hands = 0
    for j in range(picks.shape[0]):
        if j == 0 or picks[j] != picks[j - 1]:
            new_hands = greedy_playouts(
                r, m0, scores0, hlen0, voids0, line0, deals[picks[j]], legal, policy, weights,
                deal_rng, hand_deals, out, value_table, low, values, work,
            )  # fmt: skip
        next_hand_shuffles(rng, r, deal_pool, dealt, new_hands, order)
        add_values(values, totals, products)


def weighted_search(
    root: CompiledPlayouts,
    belief: CompiledBelief | None,
    sampler: HiddenTileSampler,
    rng: np.random.Generator,
    samples: int,
    candidates: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The summed values (and products of values) of each legal action of ``root`` over
    ``samples`` deals resampled by ``belief``'s weights from ``candidates * samples`` drawn by
    ``sampler`` (the ``samples`` drawn deals when ``belief`` is None: no past play is scored):
    ``SearchAgent``'s sums under ``belief=1``, with the same draws from ``rng``."""
    count = samples * candidates if belief is not None else samples
    deals = np.empty((count, root.tiles), dtype=np.int64)
    counters = np.zeros(2, dtype=np.int64)
    draw_deals(rng, *sampler_arrays(sampler), counters, deals, *sample_work(sampler.pool))
    sampler.relaxed += int(counters[0])
    sampler.fallbacks += int(counters[1])
    picks = None if belief is None else resample(belief.log_weights(deals, rng), rng, samples)
    if picks is None:
        picks = np.arange(samples)
    totals = np.zeros(len(root.legal), dtype=np.float64)
    products = np.zeros((len(root.legal), len(root.legal)), dtype=np.float64)
    deal_pool = TILE_POOLS[sampler.view.rules.sets]
    picked_totals(
        rng, picks, deals, root.r, root.m, root.scores, root.hlen, root.voids, root.line,
        root.legal, root.policy, root.weights, root.rng, root.deals, root.out, root.table,
        root.low, root.values, root.work, deal_pool, totals, products, np.empty_like(deal_pool),
    )  # fmt: skip
    return totals, products
