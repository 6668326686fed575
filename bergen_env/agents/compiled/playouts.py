"""Compiled playouts of ``search``'s rollout policies over one determinization.

:func:`bergen_env.agents.search.greedy_rollout` (Bergen's headers),
:func:`~bergen_env.agents.search.points_rollout` (Fives and Draw) and
:func:`~bergen_env.agents.search.heuristic_rollout` (the heuristic agent at every seat,
:mod:`bergen_env.agents.compiled.heuristic_policy`) are the reference:
:class:`CompiledPlayouts` plays the same moves with the batched kernels (a batch of one match),
so the search's action values, and its decisions, are the same.

A determinization is the searcher's public view plus a guess of the hidden tiles;
:meth:`CompiledPlayouts.run` takes the guess as one flat array (every seat's hand in seat order,
then the undrawn boneyard), plays each legal action and then the rollout to the end of the hand
(or the match), and reports per action the scores, whether the match ended (and who won) and
whether a new hand is due. Playouts stop there: the kernels do not deal that hand
(``K.R_NO_DEAL``), and the search draws its shuffle from its own random stream
(:func:`next_hand_shuffles`) as ``BergenState`` would.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from itertools import chain

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.agents.compiled.heuristic_policy import (
    DEFAULT_WEIGHTS,
    heuristic_action,
    heuristic_weights,
)
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.engine import TILE_POOLS, PublicView, trailing_draws
from bergen_env.hidden_tiles import HiddenTileSampler
from bergen_env.tiles import IS_DOUBLE, NUM_TILES, PIPS
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit, njit_borrowed, njit_inline, numba, random_interval

#: The rollout's preference among playable tiles: doubles, then pips, then id (descending).
ROLLOUT_ORDER = np.array(
    sorted(range(NUM_TILES), key=lambda t: (IS_DOUBLE[t], PIPS[t], t), reverse=True),
    dtype=np.int64,
)
ALL_TILES = (1 << NUM_TILES) - 1
#: The most tiles one hand can hold (two sets: every tile but the other seat's).
MAX_HAND = 2 * NUM_TILES
#: A won match is worth this many targets of points (``bergen_env.agents.search.WIN_VALUE``).
WIN_VALUE = 10
#: Per outcome row: scores of 4 sides, terminal, winner, a new hand dealt.
OUT_TERMINAL, OUT_WINNER, OUT_NEW_HAND = 4, 5, 6
#: The rollout policies of the compiled playouts (``policy`` of :func:`greedy_playouts`).
POLICY_PUBLIC, POLICY_GREEDY, POLICY_HEURISTIC = 0, 1, 2
POLICIES = {"public": POLICY_PUBLIC, "greedy": POLICY_GREEDY, "heuristic": POLICY_HEURISTIC}


@njit_borrowed
def _best_opening(r, b):
    """A free lead's tile (``search.best_opening``): the most opening points, then the
    rollout order."""
    a = -1
    best = -1
    for j in range(NUM_TILES):
        t = ROLLOUT_ORDER[j]
        if (b >> t) & 1 and K.T_OPENING_POINTS[r[K.R_PLAY], t] > best:
            a = 2 * t
            best = K.T_OPENING_POINTS[r[K.R_PLAY], t]
    return a


@njit_borrowed
def _points_action(r, m, bits):
    """The rollout's move in games without headers (``search.points_rollout``): the play that
    scores the most now, ties to the rollout order; else draw, else pass."""
    p = m[0, K.CUR]
    b = bits[0, p]
    if m[0, K.LLEN] == 0:
        return _best_opening(r, b)
    e0 = m[0, K.E0]
    e1 = m[0, K.E1]
    d0 = m[0, K.D0]
    d1 = m[0, K.D1]
    m0 = b & K.T_CONTAINS[e0]
    m1 = b & K.T_CONTAINS[e1]
    if m0 | m1:
        ps = r[K.R_PLAY]
        a = -1
        best = -1
        for j in range(NUM_TILES):
            t = ROLLOUT_ORDER[j]
            if (m0 >> t) & 1:
                x = K.T_OTHER_HALF[t * 7 + e0]
                v = K.T_PLAY_POINTS[ps, ((t * 7 + x) * 7 + e1) * 4 + 2 * K.T_IS_DOUBLE[t] + d1]
                if v > best:
                    a = 2 * t
                    best = v
            if (m1 >> t) & 1:
                x = K.T_OTHER_HALF[t * 7 + e1]
                v = K.T_PLAY_POINTS[ps, ((t * 7 + e0) * 7 + x) * 4 + 2 * d0 + K.T_IS_DOUBLE[t]]
                if v > best:
                    a = 2 * t + 1
                    best = v
        return a
    if m[0, K.BPOS] < r[K.R_BONE] - r[K.R_RESERVE]:
        return DRAW
    return PASS


@njit_borrowed
def _rollout_action(r, m, hands, bits, voids, line, on_line, clairvoyant):
    """The rollout's move for the player on turn (``search.greedy_rollout``, or
    ``search.points_rollout`` in games without headers)."""
    if m[0, K.LEAD] >= 0:
        return 2 * m[0, K.LEAD]
    if r[K.R_PLAY] != K.PLAY_HEADERS:
        return _points_action(r, m, bits)
    if m[0, K.LLEN] == 0:
        return _best_opening(r, bits[0, m[0, K.CUR]])
    p = m[0, K.CUR]
    n = r[K.R_N]
    two_sets = r[K.R_SETS] == 2
    b = bits[0, p]
    e0 = m[0, K.E0]
    e1 = m[0, K.E1]
    m0 = b & K.T_CONTAINS[e0]
    m1 = b & K.T_CONTAINS[e1]
    playable = m0 | m1
    if playable == 0:
        if m[0, K.BPOS] < r[K.R_BONE] - r[K.R_RESERVE]:
            return DRAW
        return PASS
    h = K.T_HEADER_TILE[e0 * 7 + e1]
    if two_sets and e0 == e1 and hands[0, p, K.T_DOUBLE_ID[e0]] >= 2:
        return DOUBLE_PLAY + e0
    if (b >> h) & 1:
        return 2 * h + m[0, K.D0]
    q = (p + 1) % n
    if clairvoyant:
        threats = bits[0, q]
    elif not two_sets:
        threats = ALL_TILES & ~(b | on_line) & ~K.T_VOID_TILES[voids[0, q]]
    else:
        threats = 0
        for t in range(NUM_TILES):
            if hands[0, p, t] + line[0, t] < 2:
                threats |= np.int64(1) << t
        threats &= ~K.T_VOID_TILES[voids[0, q]]
    first = -1
    for j in range(NUM_TILES):
        t = ROLLOUT_ORDER[j]
        if not (playable >> t) & 1:
            continue
        if (m0 >> t) & 1:
            if not (threats >> K.T_HEADER_TILE[K.T_OTHER_HALF[t * 7 + e0] * 7 + e1]) & 1:
                return 2 * t
            if first < 0:
                first = 2 * t
        if (m1 >> t) & 1:
            if not (threats >> K.T_HEADER_TILE[e0 * 7 + K.T_OTHER_HALF[t * 7 + e1]]) & 1:
                return 2 * t + 1
            if first < 0:
                first = 2 * t + 1
    return first


@njit
def playout_work(m0, scores0, hlen0, voids0, line0):
    """The scratch arrays of :func:`greedy_playouts` from the root ``m0`` ... ``line0``: made
    once a root (``CompiledPlayouts.work``) and reused for every determinization."""
    return (
        np.empty_like(m0),
        np.empty_like(scores0),
        np.zeros((1, K.MAX_SEATS, NUM_TILES), dtype=np.int8),
        np.zeros((1, K.MAX_SEATS), dtype=np.int64),
        np.empty_like(hlen0),
        np.empty_like(voids0),
        np.empty_like(line0),
        np.zeros((1, K.MAX_BONE), dtype=np.int8),
        np.zeros(K.MAX_BONE, dtype=np.int8),
        np.zeros((K.MAX_SEATS, NUM_TILES), dtype=np.int8),
        np.zeros(K.MAX_SEATS, dtype=np.int64),
    )


@njit_borrowed
def greedy_playouts(
    r, m0, scores0, hlen0, voids0, line0, tiles, legal, policy, weights, rng, deals, out,
    value_table, low, values, work,
):  # fmt: skip
    """One playout per action of ``legal`` from the root (``m0`` ... ``line0``, one row each)
    with the hidden tiles ``tiles`` (hands by seat with the sizes of ``hlen0``, then the
    boneyard), the rollout ``policy`` (``POLICY_*``; ``weights``: the heuristic's) choosing
    every later move; ``out[k]``: the outcome of ``legal[k]`` (see ``OUT_*``); ``values[k]``:
    its value for the player on turn (see :meth:`CompiledPlayouts.run`); ``work``: the root's
    :func:`playout_work`."""
    n = r[K.R_N]
    m, scores, hands, bits, hlen, voids, line, bone, root_bone, root_hands, root_bits = work
    root_bone[:] = 0
    root_hands[:] = 0
    root_bits[:] = 0
    k = 0
    for s in range(n):
        for _ in range(hlen0[0, s]):
            t = tiles[k]
            root_hands[s, t] += 1
            root_bits[s] |= np.int64(1) << t
            k += 1
    start = n * r[K.R_HAND] + m0[0, K.BPOS]
    for j in range(k, tiles.shape[0]):
        root_bone[start + j - k] = tiles[j]
    on_line0 = np.int64(0)
    for t in range(NUM_TILES):
        if line0[0, t]:
            on_line0 |= np.int64(1) << t
    hand = m0[0, K.HAND_NO]
    new_hands = 0
    for x in range(legal.shape[0]):
        # the root's rows, copied element by element (cheaper than numba's slice assignment)
        for f in range(K.NUM_FIELDS):
            m[0, f] = m0[0, f]
        for s in range(K.MAX_SEATS):
            scores[0, s] = scores0[0, s]
            hlen[0, s] = hlen0[0, s]
            voids[0, s] = voids0[0, s]
            bits[0, s] = root_bits[s]
            for t in range(NUM_TILES):
                hands[0, s, t] = root_hands[s, t]
        for t in range(NUM_TILES):
            line[0, t] = line0[0, t]
        for j in range(K.MAX_BONE):  # a kernel row that deals the next hand writes it
            bone[0, j] = root_bone[j]
        on_line = on_line0
        a = legal[x]
        while True:
            K.apply_action(r, 0, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a)
            if a < DRAW:
                on_line |= np.int64(1) << (a >> 1)
            if m[0, K.TERMINAL] or m[0, K.HAND_NO] != hand:
                break
            if policy == POLICY_HEURISTIC:
                a = heuristic_action(r, 0, m, scores, hands, bits, hlen, voids, line, weights)
            else:
                a = _rollout_action(
                    r, m, hands, bits, voids, line, on_line, policy == POLICY_GREEDY
                )
        for s in range(K.MAX_SEATS):
            out[x, s] = scores[0, s]
        out[x, OUT_TERMINAL] = m[0, K.TERMINAL]
        out[x, OUT_WINNER] = m[0, K.WINNER]
        out[x, OUT_NEW_HAND] = 0 if m[0, K.TERMINAL] else 1
        new_hands += out[x, OUT_NEW_HAND]
        values[x] = _value(r, m, scores, m0[0, K.CUR], value_table, low)
    return new_hands


@njit_inline
def permute(rng, src, out):
    """``out[:len(src)] = rng.permutation(src)`` without allocating: numpy's Fisher-Yates
    shuffle with the same draws from the numpy Generator ``rng`` (its ``random_interval``)."""
    n = src.shape[0]
    for i in range(n):  # element by element: a slice copy may allocate a temporary
        out[i] = src[i]
    bit_generator = rng.bit_generator
    for i in range(n - 1, 0, -1):
        j = numba.types.intp(random_interval(bit_generator, i))
        if i != j:
            tmp = out[i]
            out[i] = out[j]
            out[j] = tmp


def sample_work(pool: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scratch arrays of :func:`sample_hidden` (``hand_buf``, ``keep``, ``rest``)."""
    return (
        np.empty((K.MAX_SEATS, MAX_HAND), dtype=np.int64),
        np.empty(pool.shape[0], np.int64),
        np.empty(pool.shape[0], np.int64),
    )


@njit_borrowed
def sample_hidden(rng, pool, excluded, orders, order_lens, in_order, sizes, seat, own, tries,
                  counters, tiles, hand_buf, keep, rest):  # fmt: skip
    """``HiddenTileSampler.sample`` with the same draws from the numpy Generator ``rng``:
    writes every seat's hand (own included, by seat) and then the boneyard into ``tiles``.
    ``excluded[level, seat]``, ``orders[level]`` (the constrained seats, filled first),
    ``order_lens``, ``in_order`` are the sampler's levels; ``counters`` += (relaxed, fallbacks);
    ``hand_buf``, ``keep`` and ``rest`` are scratch (:func:`sample_work`).
    """
    n = sizes.shape[0]
    for level in range(excluded.shape[0]):
        olen = order_lens[level]
        for _ in range(tries if olen else 1):
            permute(rng, pool, rest)
            rlen = pool.shape[0]
            ok = True
            for j in range(olen):
                s = orders[level, j]
                out = excluded[level, s]
                size = sizes[s]
                nt = 0
                nk = 0
                for q in range(rlen):
                    t = rest[q]
                    if nt < size and not (out >> t) & 1:
                        hand_buf[s, nt] = t
                        nt += 1
                    else:
                        keep[nk] = t
                        nk += 1
                if nt < size:
                    ok = False
                    break
                for q in range(nk):
                    rest[q] = keep[q]
                rlen = nk
            if ok:
                counters[0] += level >= 1
                counters[1] += level == 2
                pos = 0
                for s in range(n):
                    if s != seat and not in_order[level, s]:
                        for q in range(sizes[s]):
                            hand_buf[s, q] = rest[pos + q]
                        pos += sizes[s]
                k = 0
                for s in range(n):
                    for j in range(sizes[s]):
                        tiles[k] = own[j] if s == seat else hand_buf[s, j]
                        k += 1
                for q in range(pos, rlen):
                    tiles[k] = rest[q]
                    k += 1
                return
    raise AssertionError("unreachable: the unconstrained level always succeeds")


@njit_borrowed
def next_hand_shuffles(rng, r, deal_pool, dealt, new_hands, order):
    """Draw from ``rng`` the shuffles of ``new_hands`` next hands as ``BergenState`` deals them:
    one shuffle under a rotating lead, else redeals while no seat holds a double (``order``:
    scratch of ``deal_pool``'s size)."""
    for _ in range(new_hands):
        while True:
            permute(rng, deal_pool, order)
            if r[K.R_LEAD] == K.LEAD_ROTATE:  # no double needed: one shuffle
                break
            found = False
            for j in range(dealt):
                if K.T_IS_DOUBLE[order[j]]:
                    found = True
                    break
            if found:
                break


@njit_borrowed
def search_totals(rng, samples, pool, excluded, orders, order_lens, in_order, sizes, seat, own,
                  tries, counters, r, m0, scores0, hlen0, voids0, line0, legal, policy, weights,
                  deal_rng, deals, out, value_table, low, values, work, deal_pool,
                  totals, products, tiles, hand_buf, keep, rest, order):  # fmt: skip
    """``samples`` determinizations drawn from ``rng`` (:func:`sample_hidden`), each with one
    playout per legal action (:func:`greedy_playouts`); ``totals[k]`` += the values of
    ``legal[k]``, ``products[j, k]`` += the products of their values (:func:`add_values`).
    Every playout that ends the hand draws the next hand's shuffle from ``rng`` (as
    ``BergenState`` deals it), so ``rng`` ends where the Python search leaves it. ``tiles``
    (one deal), ``hand_buf``, ``keep``, ``rest`` (:func:`sample_work`) and ``order`` (the size
    of ``deal_pool``) are scratch."""
    dealt = r[K.R_N] * r[K.R_HAND]
    for _ in range(samples):
        sample_hidden(rng, pool, excluded, orders, order_lens, in_order, sizes, seat, own,
                      tries, counters, tiles, hand_buf, keep, rest)  # fmt: skip
        new_hands = greedy_playouts(
            r, m0, scores0, hlen0, voids0, line0, tiles, legal, policy, weights, deal_rng, deals,
            out, value_table, low, values, work,
        )  # fmt: skip
        next_hand_shuffles(rng, r, deal_pool, dealt, new_hands, order)
        add_values(values, totals, products)


@njit_borrowed
def add_values(values, totals, products):
    """``totals`` += ``values`` and ``products`` += their outer product (one deal's values of
    every legal action: the sums of a search's means and paired spreads)."""
    a = values.shape[0]
    for x in range(a):
        totals[x] += values[x]
    for x in range(a):
        for y in range(a):
            products[x, y] += values[x] * values[y]


@njit_borrowed
def _value(r, m, scores, player, value_table, low):
    """``SearchAgent.playout_values``' value of a finished playout for ``player``: a won or
    lost match is worth +/- ``WIN_VALUE * target`` (``score_scale``; 0 for a tied single
    hand); otherwise, with a match-win table (flat,
    side-major, ``target - low`` scores per side from ``low``) the win chance scaled to that
    range, and without one (an empty table) the side's score minus the best other side's."""
    side = K.side_of(r, player)
    sides = r[K.R_SIDES]
    win = WIN_VALUE * r[K.R_SCALE]
    if m[0, K.TERMINAL]:
        if m[0, K.WINNER] < 0:
            return 0.0
        return win if m[0, K.WINNER] == side else -win
    if value_table.shape[0]:
        size = r[K.R_TARGET] - low
        index = 0
        for k in range(sides):
            index = index * size + max(scores[0, (side + k) % sides], low) - low
        return win * (2.0 * value_table[index] - 1.0)
    best = -(1 << 30)
    for o in range(sides):
        if o != side:
            best = max(best, scores[0, o])
    return scores[0, side] - best


class CompiledPlayouts:
    """The root of one decision (the public part, shared by every determinization) and the
    compiled playouts from it with the rollout ``rollout`` (``"public"``, ``"greedy"`` or
    ``"heuristic"``: :class:`~bergen_env.agents.heuristic.HeuristicAgent` with the weights of
    ``heuristic``, default ones if None); see the module docstring."""

    def __init__(
        self,
        view: PublicView,
        table: np.ndarray | None,
        low: int = 0,
        rollout: str = "public",
        heuristic: HeuristicAgent | None = None,
    ) -> None:
        if rollout not in POLICIES:
            raise ValueError(f"rollout must be one of {tuple(POLICIES)}, got {rollout!r}")
        self.policy = POLICIES[rollout]
        self.weights = DEFAULT_WEIGHTS if heuristic is None else heuristic_weights(heuristic)
        rules = view.rules
        self.table = (
            np.zeros(0) if table is None else np.ascontiguousarray(table, np.float64).ravel()
        )
        self.low = low
        self.r = K.rule_vector(rules, None, "match")
        self.r[K.R_NO_DEAL] = 1
        self.m = np.zeros((1, K.NUM_FIELDS), dtype=np.int32)
        m = self.m[0]
        m[K.CUR] = view.current_player
        m[K.LEAD] = -1 if view.lead_tile is None else view.lead_tile
        m[K.BPOS] = rules.boneyard_size - view.boneyard_size
        m[K.LLEN] = sum(view.line_counts)
        if view.ends is not None:
            m[K.E0], m[K.E1] = view.ends
        m[K.D0], m[K.D1] = view.end_doubles
        m[K.RUN_DRAWS] = trailing_draws(view)
        m[K.HAND_NO] = view.hand_number
        m[K.WINNER] = -1
        self.scores = np.zeros((1, K.MAX_SEATS), dtype=np.int32)
        self.scores[0, : rules.num_sides] = view.scores
        self.hlen = np.zeros((1, K.MAX_SEATS), dtype=np.int32)
        self.hlen[0, : rules.num_players] = view.hand_sizes
        self.voids = np.zeros((1, K.MAX_SEATS), dtype=np.int32)
        self.voids[0, : rules.num_players] = view.voids
        self.line = np.array([view.line_counts], dtype=np.int8)
        self.rng = np.zeros(1, dtype=np.uint64)  # never drawn from: no playout deals (R_NO_DEAL)
        self.deals = np.zeros((1, 0, rules.num_tiles), dtype=np.int8)
        self.tiles = sum(view.hand_sizes) + view.boneyard_size
        self.legal = np.array(view.legal_actions, dtype=np.int64)
        self.out = np.zeros((len(self.legal), 7), dtype=np.int64)
        self.values = np.zeros(len(self.legal), dtype=np.float64)
        self.work = playout_work(self.m, self.scores, self.hlen, self.voids, self.line)

    def restricted(self, indices: np.ndarray) -> CompiledPlayouts:
        """This root with only the legal actions at ``indices`` (own output buffers, the same
        playout scratch)."""
        root = copy.copy(self)
        root.legal = self.legal[indices]
        root.out = np.zeros((len(root.legal), 7), dtype=np.int64)
        root.values = np.zeros(len(root.legal), dtype=np.float64)
        return root

    def run(
        self, hands: Sequence[Sequence[int]], boneyard: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Play every legal action on the determinization ``hands``/``boneyard``; return the
        outcomes, an ``(actions, 7)`` array (scores of 4 sides, terminal, winner side, new hand
        dealt), and the values of the actions for the player on turn (``(actions,)``; with the
        match-win ``table`` given at construction, else the score margin)."""
        tiles = np.fromiter(chain(*hands, boneyard), dtype=np.int64, count=self.tiles)
        greedy_playouts(
            self.r, self.m, self.scores, self.hlen, self.voids, self.line, tiles, self.legal,
            self.policy, self.weights, self.rng, self.deals, self.out, self.table, self.low,
            self.values, self.work,
        )  # fmt: skip
        return self.out, self.values

    def search(
        self, rng: np.random.Generator, sampler: HiddenTileSampler, samples: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The summed values of each legal action over ``samples`` determinizations drawn by
        ``sampler`` from ``rng``, and the summed products of their values (actions × actions):
        ``SearchAgent.action_values``' sums, with the same draws."""
        counters = np.zeros(2, dtype=np.int64)
        totals = np.zeros(len(self.legal), dtype=np.float64)
        products = np.zeros((len(self.legal), len(self.legal)), dtype=np.float64)
        deal_pool = TILE_POOLS[sampler.view.rules.sets]
        search_totals(
            rng, samples, *sampler_arrays(sampler), counters, self.r, self.m, self.scores,
            self.hlen, self.voids, self.line, self.legal, self.policy, self.weights, self.rng,
            self.deals, self.out, self.table, self.low, self.values, self.work, deal_pool,
            totals, products, np.empty(self.tiles, dtype=np.int64), *sample_work(sampler.pool),
            np.empty_like(deal_pool),
        )  # fmt: skip
        sampler.relaxed += int(counters[0])
        sampler.fallbacks += int(counters[1])
        return totals, products


def sampler_arrays(sampler: HiddenTileSampler) -> tuple:
    """``sampler`` as :func:`sample_hidden`'s arguments from ``pool`` to ``tries``."""
    n = sampler.view.rules.num_players
    levels = len(sampler.levels)
    excluded = np.array(sampler.levels, dtype=np.int64).reshape(levels, n)
    orders = np.zeros((levels, K.MAX_SEATS), dtype=np.int64)
    order_lens = np.zeros(levels, dtype=np.int64)
    in_order = np.zeros((levels, K.MAX_SEATS), dtype=np.bool_)
    for level, row in enumerate(sampler.levels):
        order = sampler.constrained_order(row)
        orders[level, : len(order)] = order
        order_lens[level] = len(order)
        in_order[level, order] = True
    sizes = np.array(sampler.sizes, dtype=np.int64)
    own = np.array(sampler.own, dtype=np.int64)
    return (
        sampler.pool, excluded, orders, order_lens, in_order, sizes, sampler.view.seat, own,
        sampler.tries,
    )  # fmt: skip
