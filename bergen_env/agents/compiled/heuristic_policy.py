"""The ``heuristic`` agent's choice compiled: :class:`bergen_env.agents.heuristic.HeuristicAgent`
on the batched kernels' state.

:func:`heuristic_action` gives the action ``HeuristicAgent.act`` gives (same scores, same float
arithmetic in the same order, ties to the lowest action id) for the player on turn of row ``i``
of the kernels' arrays (:mod:`bergen_env.vector.kernels`), reading only what that player's public
view holds: its own hand, the line, the hand sizes, the voids, the boneyard's size and the
scores. The weights are an array in :data:`WEIGHT_NAMES` order (:func:`heuristic_weights`).
"""

from __future__ import annotations

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.agents.heuristic import MATCH_VALUE, SCORING_TILES, WEIGHT_NAMES, HeuristicAgent
from bergen_env.rules import BLOCKED_RULES
from bergen_env.scoring import DOUBLE_PLAY_HEADER, PLAY_SCORINGS, cap_header
from bergen_env.tiles import NUM_TILES, NUMBER_BITS
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit_borrowed, njit_inline

W_THREAT, W_STUCK, W_SHED, W_VARIETY, W_FOLLOW, W_PARTNER, W_KEEP = range(len(WEIGHT_NAMES))
#: ``T_NUMBER_BITS[t]``: the 7-bit mask of the numbers of tile ``t``.
T_NUMBER_BITS = np.array(NUMBER_BITS, dtype=np.int64)
#: ``NUMBERS_OF_TILES[c, x]``: the 7-bit mask of the numbers on the tiles of the 7-bit mask ``x``
#: of tiles ``7c`` to ``7c + 6``.
NUMBERS_OF_TILES = np.array(
    [
        [
            np.bitwise_or.reduce([NUMBER_BITS[7 * c + j] for j in range(7) if (x >> j) & 1] or [0])
            for x in range(128)
        ]
        for c in range(NUM_TILES // 7)
    ],
    dtype=np.int64,
)
#: Fives: bitmask of the tiles worth keeping for a count (``heuristic.SCORING_TILES``).
SCORING_MASK = sum(1 << t for t in SCORING_TILES)
PLAY_FIVES = PLAY_SCORINGS.index("fives")
BLOCKED_PIPS = BLOCKED_RULES.index("pips")


def heuristic_weights(agent: HeuristicAgent) -> np.ndarray:
    """The weights of ``agent`` as :func:`heuristic_action` reads them."""
    return np.array(list(agent.weights.values()), dtype=np.float64)


#: The default ``HeuristicAgent``'s weights.
DEFAULT_WEIGHTS = heuristic_weights(HeuristicAgent())


#: ``scoring.cap_header`` compiled.
_cap = njit_inline(cap_header)


@njit_inline
def _unseen(r, i, hands, line, p, t):
    """Copies of tile ``t`` that seat ``p`` does not see (not in its hand, not on the line)."""
    return r[K.R_SETS] - hands[i, p, t] - line[i, t]


@njit_inline
def _tile_chance(r, i, hands, hlen, voids, line, p, bone_size, seat, tile):
    """``HeuristicAgent._tile_chance``: the chance that ``seat`` holds an unseen ``tile``."""
    copies = _unseen(r, i, hands, line, p, tile)
    numbers = T_NUMBER_BITS[tile]
    if not copies or voids[i, seat] & numbers or not hlen[i, seat]:
        return 0.0
    holders = bone_size
    for s in range(r[K.R_N]):
        if s != p and not voids[i, s] & numbers:
            holders += hlen[i, s]
    share = min(1.0, hlen[i, seat] / holders)
    if copies == 1:  # pow(x, 1.0) is x exactly: skip the call (one set: always)
        return 1.0 - (1.0 - share)
    return 1.0 - (1.0 - share) ** np.float64(copies)


@njit_inline
def seen_masks(r, i, hands, line, p):
    """What seat ``p`` sees of the tiles, as bitmasks: those it holds, those with one or more
    copies it does not see (not in its hand, not on the line) and those with two."""
    held = np.int64(0)
    once = np.int64(0)
    twice = np.int64(0)
    for t in range(NUM_TILES):  # branch-free
        c = _unseen(r, i, hands, line, p, t)
        held |= np.int64(hands[i, p, t] != 0) << t
        once |= np.int64(c >= 1) << t
        twice |= np.int64(c >= 2) << t
    return held, once, twice


#: The most hidden tiles and hand size the power table covers (one set: every case).
POW_MAX = NUM_TILES
#: ``MISS_POWERS[(hidden * (POW_MAX + 1) + fitting) * (POW_MAX + 1) + size]``:
#: ``(1.0 - fitting / hidden) ** size`` as Python (and numba) compute it, for
#: ``1 <= fitting <= hidden <= POW_MAX`` and ``size <= POW_MAX``.
MISS_POWERS = np.array(
    [
        (1.0 - f / h) ** float(s) if 1 <= f <= h else 0.0
        for h in range(POW_MAX + 1)
        for f in range(POW_MAX + 1)
        for s in range(POW_MAX + 1)
    ],
    dtype=np.float64,
)


@njit_inline
def _miss_power(fitting, hidden, size):
    """``(1.0 - fitting / hidden) ** size``, from :data:`MISS_POWERS` when it covers it."""
    if hidden <= POW_MAX and size <= POW_MAX:
        return MISS_POWERS[(hidden * (POW_MAX + 1) + fitting) * (POW_MAX + 1) + size]
    return (1.0 - fitting / hidden) ** np.float64(size)


@njit_inline
def _play_chance(hlen, voids, i, seat, fits, once, twice):
    """``HeuristicAgent._play_chance``: the chance that ``seat`` holds a tile of ``fits``
    (``once``/``twice``: the unseen tiles of :func:`seen_masks`)."""
    size = hlen[i, seat]
    if not size:
        return 0.0
    free = ~K.T_VOID_TILES[voids[i, seat]]
    hidden = K.popcount(once & free) + K.popcount(twice & free)
    fitting = K.popcount(once & free & fits) + K.popcount(twice & free & fits)
    if not hidden or not fitting:
        return 0.0
    return 1.0 - _miss_power(fitting, hidden, size)


@njit_inline
def _out_value(r, i, scores, hands, hlen, line, p, target, side):
    """``HeuristicAgent._out_value``: the expected award (``MATCH_VALUE`` for a match won) of
    ``side`` going out under pip scoring."""
    if r[K.R_SINGLE]:
        return MATCH_VALUE
    hidden = 0
    weight = 0
    own = 0
    for t in range(NUM_TILES):
        c = _unseen(r, i, hands, line, p, t)
        hidden += c
        weight += c * K.T_PIPS[t]
        own += K.T_PIPS[t] * hands[i, p, t]
    mean = weight / hidden if hidden else 0.0
    pips = 0.0
    for seat in range(r[K.R_N]):
        if K.side_of(r, seat) == side:
            continue
        if seat == p:
            pips += own
        else:
            pips += mean * hlen[i, seat]
    award = K.T_OUT_POINTS[r[K.R_OUT], np.int64(np.rint(pips))]  # rint: Python's round
    if r[K.R_HAS_TARGET] and scores[i, side] + award >= target:
        return MATCH_VALUE
    return np.float64(award)


@njit_inline
def _header_threat(r, i, scores, hands, hlen, voids, line, p, bone_size, target, seat, e0, e1,
                   d0, d1):  # fmt: skip
    """``HeuristicAgent._header_threat``: ``seat``'s expected header next on ends ``e0``/``e1``."""
    chance = _tile_chance(
        r, i, hands, hlen, voids, line, p, bone_size, seat, K.T_HEADER_TILE[e0 * 7 + e1]
    )
    if not chance:
        return 0.0
    score = scores[i, K.side_of(r, seat)]
    best = 1 if d0 or d1 else 0
    value = K.T_HEADER_BY_DOUBLES[1 + best] if e0 == e1 else K.T_HEADER_BY_DOUBLES[best]
    points = _cap(value, target - score, r[K.R_CAPS])
    if score + points >= target:
        return chance * MATCH_VALUE
    if hlen[i, seat] == 1:  # the header tile is their last: domino too
        points += r[K.R_DOMINO]
        if score + points >= target:
            return chance * MATCH_VALUE
    return chance * points


@njit_inline
def _fives_threat(r, i, scores, hands, hlen, voids, line, p, bone_size, target, seat, e0, e1,
                  d0, d1):  # fmt: skip
    """``HeuristicAgent._fives_threat``: ``seat``'s best chance-weighted Fives count next."""
    both = (1 << e0) | (1 << e1)
    if not hlen[i, seat] or voids[i, seat] & both == both:
        return 0.0
    score = scores[i, K.side_of(r, seat)]
    fits = K.T_CONTAINS[e0] | K.T_CONTAINS[e1]
    worst = 0.0
    for t in range(NUM_TILES):
        if not (fits >> t) & 1 or not _unseen(r, i, hands, line, p, t):
            continue
        best = 0
        dbl = K.T_IS_DOUBLE[t]
        if (K.T_CONTAINS[e0] >> t) & 1:
            x = K.T_OTHER_HALF[t * 7 + e0]
            best = max(best, K.T_PLAY_POINTS[PLAY_FIVES, ((t * 7 + x) * 7 + e1) * 4 + 2 * dbl + d1])
        if (K.T_CONTAINS[e1] >> t) & 1:
            x = K.T_OTHER_HALF[t * 7 + e1]
            best = max(best, K.T_PLAY_POINTS[PLAY_FIVES, ((t * 7 + e0) * 7 + x) * 4 + 2 * d0 + dbl])
        if not best:
            continue
        chance = _tile_chance(r, i, hands, hlen, voids, line, p, bone_size, seat, t)
        worth = MATCH_VALUE if score + best >= target else np.float64(best)
        worst = max(worst, chance * worth)
    return worst


@njit_inline
def _domino_threat(r, i, scores, hands, hlen, voids, line, p, target, seat, fits, once, twice):
    """``HeuristicAgent._domino_threat``: ``seat`` going out on its next turn."""
    if hlen[i, seat] != 1:
        return 0.0
    chance = _play_chance(hlen, voids, i, seat, fits, once, twice)
    side = K.side_of(r, seat)
    if r[K.R_OUT] != K.OUT_FIXED:
        return chance * _out_value(r, i, scores, hands, hlen, line, p, target, side)
    if scores[i, side] + r[K.R_DOMINO] >= target:
        return chance * MATCH_VALUE
    return chance * r[K.R_DOMINO]


@njit_inline
def evaluate(r, i, m, scores, hands, hlen, voids, line, weights, a, held, once, twice, floor):
    """``HeuristicAgent.evaluate``: the score of the play ``a`` for the player on turn
    (``held``, ``once``, ``twice``: its :func:`seen_masks`, shared by the plays of one turn).
    A play that cannot score above ``floor`` may return any value ``<= floor`` instead (a bound
    computed without the threats): the choice among plays is the same. ``-np.inf``: exact."""
    p = m[i, K.CUR]
    n = r[K.R_N]
    side = K.side_of(r, p)
    has_target = r[K.R_HAS_TARGET] != 0
    target = r[K.R_TARGET] if has_target else 0  # rules.target (0: none)
    score = scores[i, side]
    if a >= DOUBLE_PLAY:
        e0 = a - DOUBLE_PLAY
        e1 = e0
        d0 = 1
        d1 = 1
        t = K.T_DOUBLE_ID[e0]
        used = 2
        raw = DOUBLE_PLAY_HEADER if r[K.R_PLAY] == K.PLAY_HEADERS else 0
    elif m[i, K.LLEN] == 0:
        t = a >> 1
        e0 = K.T_LOW[t]
        e1 = K.T_HIGH[t]
        d0 = K.T_IS_DOUBLE[t]
        d1 = d0
        used = 1
        raw = K.T_OPENING_POINTS[r[K.R_PLAY], t]
    else:
        t = a >> 1
        e0 = m[i, K.E0]
        e1 = m[i, K.E1]
        d0 = m[i, K.D0]
        d1 = m[i, K.D1]
        if a & 1:
            e1 = K.T_OTHER_HALF[t * 7 + e1]
            d1 = K.T_IS_DOUBLE[t]
        else:
            e0 = K.T_OTHER_HALF[t * 7 + e0]
            d0 = K.T_IS_DOUBLE[t]
        used = 1
        raw = K.T_PLAY_POINTS[r[K.R_PLAY], ((t * 7 + e0) * 7 + e1) * 4 + 2 * d0 + d1]
    header = _cap(raw, target - score, r[K.R_CAPS])
    goes_out = hlen[i, p] == used
    points = header
    reaches = has_target and score + header >= target
    fixed = r[K.R_OUT] == K.OUT_FIXED
    if goes_out and not reaches and fixed:
        points += r[K.R_DOMINO]
    if (has_target and score + points >= target) or (goes_out and r[K.R_SINGLE]):
        return MATCH_VALUE + points
    value = np.float64(points)
    # shedding (HeuristicAgent._shed_value)
    drawable = max(0, r[K.R_BONE] - r[K.R_RESERVE] - m[i, K.BPOS])
    near = 1.0 if drawable == 0 else 1.0 / (1.0 + drawable)
    # the other hands' pips are the award (not fixed): shed always
    weight = weights[W_SHED] * ((0.25 if fixed else 1.0) + near)
    rule = r[K.R_BLOCKED]
    dbl = K.T_IS_DOUBLE[t]
    pips = K.T_PIPS[t] / 12.0
    shed = 0.0
    for _ in range(used):
        if rule < BLOCKED_PIPS:  # german, american
            shed += (1.0 if dbl else 0.0) + pips
        elif rule == BLOCKED_PIPS:
            shed += pips
        else:  # most_doubles: doubles win blocks, keep them
            shed += (-1.0 if dbl else 0.0) + 0.25 * pips
    value += weight * shed
    if goes_out:
        if fixed:
            return value
        return value + _out_value(r, i, scores, hands, hlen, line, p, target, side)
    if r[K.R_PLAY] == PLAY_FIVES and not header:
        value -= weights[W_KEEP] * (used if (SCORING_MASK >> t) & 1 else 0)
    fits = K.T_CONTAINS[e0] | K.T_CONTAINS[e1]
    nxt = (p + 1) % n
    threatened = K.side_of(r, nxt) != side
    mate = (p + 2) % n
    stranded = r[K.R_PARTNERS] and voids[i, mate] & (1 << e0) and voids[i, mate] & (1 << e1)
    # own flexibility: distinct numbers kept and a tile that fits the new ends
    kept = held & ~(np.int64(1) << t) if hands[i, p, t] == used else held
    numbers = K.popcount(
        NUMBERS_OF_TILES[0, kept & 127]
        | NUMBERS_OF_TILES[1, (kept >> 7) & 127]
        | NUMBERS_OF_TILES[2, (kept >> 14) & 127]
        | NUMBERS_OF_TILES[3, kept >> 21]
    )
    follow = min(K.popcount(kept & fits), 2)
    # the same sums with the threats at 0 and the next seat surely stuck: a bound on the score
    # (rounding is monotone and every weight is >= 0); below ``floor``, skip the threats
    bound = value + weights[W_STUCK] if threatened else value
    if stranded:
        bound -= weights[W_PARTNER]
    bound += weights[W_VARIETY] * numbers
    bound += weights[W_FOLLOW] * follow
    if bound <= floor:
        return bound
    if threatened:
        bone_size = r[K.R_BONE] - m[i, K.BPOS]
        if r[K.R_PLAY] == K.PLAY_HEADERS:
            value -= weights[W_THREAT] * _header_threat(
                r, i, scores, hands, hlen, voids, line, p, bone_size, target, nxt, e0, e1, d0, d1
            )
        elif r[K.R_PLAY] == PLAY_FIVES:
            value -= weights[W_THREAT] * _fives_threat(
                r, i, scores, hands, hlen, voids, line, p, bone_size, target, nxt, e0, e1, d0, d1
            )
        value -= weights[W_THREAT] * _domino_threat(
            r, i, scores, hands, hlen, voids, line, p, target, nxt, fits, once, twice
        )
        value += weights[W_STUCK] * (1.0 - _play_chance(hlen, voids, i, nxt, fits, once, twice))
    if stranded:
        value -= weights[W_PARTNER]
    value += weights[W_VARIETY] * numbers
    value += weights[W_FOLLOW] * follow
    return value


@njit_inline
def _spread(x):
    """The bits of ``x`` (below 2**32) moved to the even positions: bit ``t`` to bit ``2t``."""
    x = (x | (x << 16)) & 0x0000FFFF0000FFFF
    x = (x | (x << 8)) & 0x00FF00FF00FF00FF
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0F
    x = (x | (x << 2)) & 0x3333333333333333
    return (x | (x << 1)) & 0x5555555555555555


@njit_borrowed
def heuristic_action(r, i, m, scores, hands, bits, hlen, voids, line, weights):
    """``HeuristicAgent.act`` for the player on turn of row ``i``: the forced lead, else the
    best-scoring play (:func:`evaluate`; ties to the lowest action id), else draw, else pass."""
    if m[i, K.LEAD] >= 0:
        return 2 * m[i, K.LEAD]
    p = m[i, K.CUR]
    b = bits[i, p]
    e0 = m[i, K.E0]
    if m[i, K.LLEN] == 0:  # a free lead: any tile held, laid with end 0
        m0 = b
        m1 = np.int64(0)
        double = False
    else:
        m0 = b & K.T_CONTAINS[e0]
        m1 = b & K.T_CONTAINS[m[i, K.E1]]
        double = r[K.R_SETS] == 2 and e0 == m[i, K.E1] and hands[i, p, K.T_DOUBLE_ID[e0]] >= 2
    count = (1 if double else 0) + K.popcount(m0) + K.popcount(m1)
    if count == 0:
        if m[i, K.BPOS] < r[K.R_BONE] - r[K.R_RESERVE]:
            return DRAW
        return PASS
    # the plays in action order: tile by tile (end 0, then end 1), then the double play
    plays = _spread(m0) | (_spread(m1) << 1)
    if count == 1:
        return K.popcount((plays & -plays) - 1) if plays else DOUBLE_PLAY + e0
    held, once, twice = seen_masks(r, i, hands, line, p)
    best = -1
    best_value = -np.inf
    while plays or double:
        if plays:
            low = plays & -plays
            plays ^= low
            a = K.popcount(low - 1)
        else:
            a = DOUBLE_PLAY + e0
            double = False
        value = evaluate(
            r, i, m, scores, hands, hlen, voids, line, weights, a, held, once, twice, best_value
        )
        if value > best_value:
            best = a
            best_value = value
    return best
