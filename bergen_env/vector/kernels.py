"""Compiled Bergen rules over a batch of matches: the arrays of :class:`BatchState` and the
``@njit`` functions that deal, step, mask and encode them.

Every function mirrors one method of :class:`bergen_env.engine.BergenState` (the reference);
the differential tests compare them move by move. A match is row ``i`` of each array:

=============  ==============  ==========================================================
array          shape, dtype    meaning
=============  ==============  ==========================================================
``m``          (N, F) int32    the small per-match fields (``CUR``, ``LEAD``, ... below)
``scores``     (N, 4) int32    per side
``hands``      (N, 4, 28) int8 per seat: copies held of each tile id
``bits``       (N, 4) int64    per seat: bitmask of the tile ids held
``hlen``       (N, 4) int32    per seat: tiles held
``voids``      (N, 4) int32    per seat: 7-bit mask of numbers known not held
``line``       (N, 28) int8    copies of each tile id on the line
``bone``       (N, 56) int8    the hand's deal: hands, then the boneyard (a draw takes the
                               tile ``BPOS`` places after the hands)
``rng``        (N,) uint64     the match's own random stream (splitmix64 state)
``deals``      (N, K, T) int8  given deals (hands then boneyard), ``m[DEALS]`` of them
=============  ==============  ==========================================================

Rules are an int64 vector ``r`` (indices ``R_*``), built by :func:`rule_vector`. Every option
of docs/rules.md is played (Bergen's presets, Draw and Fives); the points of a play and of a won
hand are read from tables built from :mod:`bergen_env.scoring` (``T_PLAY_POINTS``,
``T_OPENING_POINTS``, ``T_OUT_POINTS``).

The kernels called from Python and the out-of-line parts of a move (the deal, the end of a
hand) are built with :data:`~bergen_env.vector._numba.njit_borrowed` (the threaded step with
:data:`~bergen_env.vector._numba.njit_parallel_borrowed`): they allocate nothing and count no
references to the arrays they borrow, so the small ``@njit_inline`` functions inlined into them
cost no atomic operations per call either. Scratch lives in the caller's arrays or in scalars.
"""

from __future__ import annotations

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, NUM_PLAY_ACTIONS, PASS
from bergen_env.observation import NEED_BINS, OBS_SIZE, OBS_SLICES, STATE_SLICES
from bergen_env.rules import BLOCKED_RULES, LEADS, Rules
from bergen_env.scoring import (
    DOUBLE_PLAY_HEADER,
    HEADER_BY_DOUBLES,
    OPENING_POINTS,
    OUT_SCORINGS,
    PLAY_POINTS,
    PLAY_SCORINGS,
    out_points,
)
from bergen_env.tiles import (
    CONTAINS,
    DOUBLE_ID,
    IS_DOUBLE,
    MATCH_EITHER,
    NUM_NUMBERS,
    NUM_TILES,
    OTHER_HALF,
    PIPS,
    TILE_ID,
    TILES,
)
from bergen_env.vector._numba import (
    njit,
    njit_borrowed,
    njit_inline,
    njit_parallel,
    njit_parallel_borrowed,
    numba,
)

MAX_SEATS = 4
MAX_BONE = 2 * NUM_TILES

# ---------------------------------------------------------------- rule vector indices
R_N, R_SIDES, R_PARTNERS, R_SETS, R_HAND, R_LEAD, R_RESERVE, R_DOMINO = range(8)
R_BLOCKED, R_BLOCKED_PTS, R_PENALTY, R_CAPS, R_TARGET, R_VOLUNTARY = range(8, 14)
R_ACTIONS, R_BONE, R_MAX_HANDS, R_REWARD = range(14, 18)
R_PLAY, R_OUT, R_SINGLE, R_HAS_TARGET, R_SCALE = range(18, 23)
#: Set by playouts that stop at the hand's end: a finished hand does not deal the next one.
R_NO_DEAL = 23
NUM_R = 24
REWARD_MATCH, REWARD_POINTS = 0, 1
#: ``r[R_LEAD]`` values (``LEADS`` order): a forced double, the highest double's holder leading
#: any tile, seat ``hand mod n`` leading any tile.
LEAD_LOWEST, LEAD_HIGHEST, LEAD_HIGHEST_ANY, LEAD_ROTATE = (
    LEADS.index(x) for x in ("lowest", "highest", "highest_any", "rotate")
)
#: ``r[R_PLAY]`` of Bergen's headers (computed inline on the hot path) and ``r[R_OUT]`` of the
#: fixed domino/blocked points.
PLAY_HEADERS = PLAY_SCORINGS.index("headers")
OUT_FIXED = OUT_SCORINGS.index("fixed")
#: ``r[R_TARGET]`` of a match without a target (a single hand with ``target=0``): never reached.
NO_TARGET = 1 << 30

# ---------------------------------------------------------------- per-match fields of ``m``
CUR, LEAD, BPOS, LLEN, E0, E1, D0, D1 = range(8)
RUN_DRAWS, RUN_VOIDS, HAND_NO, TERMINAL, WINNER, DEAL_POS, DEALS = range(8, 15)
NUM_FIELDS = 15

# ---------------------------------------------------------------- tables as arrays
T_CONTAINS = np.array(CONTAINS, dtype=np.int64)
T_MATCH_EITHER = np.array(MATCH_EITHER, dtype=np.int64)
T_OTHER_HALF = np.array(OTHER_HALF, dtype=np.int64)
T_IS_DOUBLE = np.array(IS_DOUBLE, dtype=np.int64)
T_PIPS = np.array(PIPS, dtype=np.int64)
T_DOUBLE_ID = np.array(DOUBLE_ID, dtype=np.int64)
T_LOW = np.array([a for a, _ in TILES], dtype=np.int64)
T_HIGH = np.array([b for _, b in TILES], dtype=np.int64)
T_HEADER_TILE = np.array(
    [TILE_ID[(e0, e1)] for e0 in range(NUM_NUMBERS) for e1 in range(NUM_NUMBERS)], dtype=np.int64
)
T_HEADER_BY_DOUBLES = np.array(HEADER_BY_DOUBLES, dtype=np.int64)
#: ``T_VOID_TILES[v]``: the tiles holding a number of the 7-bit void mask ``v``.
T_VOID_TILES = np.zeros(1 << NUM_NUMBERS, dtype=np.int64)
for _v in range(1 << NUM_NUMBERS):
    for _x in range(NUM_NUMBERS):
        if _v >> _x & 1:
            T_VOID_TILES[_v] |= CONTAINS[_x]
#: ``T_PLAY_POINTS[r[R_PLAY], scoring.play_index(...)]``: ``scoring.PLAY_POINTS`` per scoring.
T_PLAY_POINTS = np.array([PLAY_POINTS[k] for k in PLAY_SCORINGS], dtype=np.int64)
#: ``T_OPENING_POINTS[r[R_PLAY], tile]``: ``scoring.OPENING_POINTS`` per scoring.
T_OPENING_POINTS = np.array([OPENING_POINTS[k] for k in PLAY_SCORINGS], dtype=np.int64)
#: The most pips the hands of one hand can hold (two sets).
MAX_PIPS = 2 * sum(PIPS)
#: ``T_OUT_POINTS[r[R_OUT], pips]``: ``scoring.out_points`` of the other sides' pips (the
#: ``fixed`` row is unused: those points are ``r[R_DOMINO]``/``r[R_BLOCKED_PTS]``).
T_OUT_POINTS = np.array(
    [[out_points(k, pips) for pips in range(MAX_PIPS + 1)] for k in OUT_SCORINGS], dtype=np.int64
)

# observation offsets
O_HAND, O_LINE, O_UNSEEN = (OBS_SLICES[k].start for k in ("hand", "line", "unseen"))
O_PARTNER, O_POINTS = OBS_SLICES["partner"].start, OBS_SLICES["play_points"].start
OBS_LEN = OBS_SIZE
# global-state offsets
S_HANDS, S_LINE, S_BONE_TILES = (STATE_SLICES[k].start for k in ("hands", "line", "boneyard_tiles"))
#: The offsets of the views both layouts share, in the order :func:`encode_shared` reads them.
_SHARED = ("left_end", "right_end", "end_doubles", "line_empty", "to_move", "seats")
_SHARED += ("hand_sizes", "voids", "boneyard", "scores", "need")
O_SHARED = tuple(OBS_SLICES[k].start for k in _SHARED)
S_SHARED = tuple(STATE_SLICES[k].start for k in _SHARED)

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def rule_vector(rules: Rules, max_hands: int | None, reward: str) -> np.ndarray:
    """The rules (and the env's ``max_hands`` and ``reward``) as the kernels' int64 vector."""
    r = np.zeros(NUM_R, dtype=np.int64)
    r[R_N] = rules.num_players
    r[R_SIDES] = rules.num_sides
    r[R_PARTNERS] = rules.partnerships
    r[R_SETS] = rules.sets
    r[R_HAND] = rules.hand_size
    r[R_LEAD] = LEADS.index(rules.lead)
    r[R_RESERVE] = rules.reserve
    r[R_DOMINO] = rules.domino_points
    r[R_BLOCKED] = BLOCKED_RULES.index(rules.blocked_rule)
    r[R_BLOCKED_PTS] = rules.blocked_points
    r[R_PENALTY] = rules.leftover_penalty
    r[R_CAPS] = rules.end_caps
    r[R_TARGET] = rules.target if rules.has_target else NO_TARGET
    r[R_VOLUNTARY] = rules.voluntary_draw
    r[R_ACTIONS] = rules.num_actions
    r[R_BONE] = rules.boneyard_size
    r[R_MAX_HANDS] = 0 if max_hands is None else max_hands
    r[R_REWARD] = ("match", "points").index(reward)
    r[R_PLAY] = PLAY_SCORINGS.index(rules.play_scoring)
    r[R_OUT] = OUT_SCORINGS.index(rules.out_scoring)
    r[R_SINGLE] = rules.single_hand
    r[R_HAS_TARGET] = rules.has_target
    r[R_SCALE] = rules.score_scale
    return r


# ================================================================ random numbers


@njit_inline
def next_u64(rng, i):
    """splitmix64: the next 64 random bits of stream ``i``."""
    rng[i] += _M1
    z = rng[i]
    z = (z ^ (z >> np.uint64(30))) * _M2
    z = (z ^ (z >> np.uint64(27))) * _M3
    return z ^ (z >> np.uint64(31))


@njit_inline
def below(rng, i, k):
    """A uniform int in ``0..k-1`` from stream ``i`` (multiply-shift on 32 random bits)."""
    x = next_u64(rng, i) >> np.uint64(32)
    return np.int64((x * np.uint64(k)) >> np.uint64(32))


@njit
def seed_streams(base, first, out):
    """``out[j]``: the stream of match ``first + j`` under the 64-bit seed ``base``."""
    for j in range(out.shape[0]):
        z = np.uint64(base) + np.uint64(first + j + 1) * _M1
        z = (z ^ (z >> np.uint64(30))) * _M2
        z = (z ^ (z >> np.uint64(27))) * _M3
        out[j] = z ^ (z >> np.uint64(31))


# ================================================================ small rules


@njit_inline
def popcount(x):
    """The set bits of the non-negative ``x`` (below 2**56)."""
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (x * 0x0101010101010101) >> 56


@njit_inline
def popcount64(x):
    """The set bits of the uint64 ``x``."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit_inline
def trailing_zeros64(x):
    """The zero bits below the lowest set bit of the non-zero uint64 ``x``."""
    return popcount64((x & (~x + np.uint64(1))) - np.uint64(1))


@njit_inline
def next_seat(r, seat):
    """The seat after ``seat`` in turn order."""
    return 0 if seat + 1 == r[R_N] else seat + 1


@njit_inline
def side_of(r, seat):
    return seat % 2 if r[R_PARTNERS] else seat


@njit_inline
def capped(r, scores, i, side, header):
    """A header's value after end caps (docs/rules.md, "End caps")."""
    if header and r[R_CAPS]:
        need = r[R_TARGET] - scores[i, side]
        if need <= 2:
            return 1
        if need == 3 and header > 2:
            return 2
    return header


#: Per-side tallies of a blocked hand travel packed in one int64, ``SIDE_BITS`` bits a side
#: (:func:`side_field`): a count of doubles, pips (at most ``MAX_PIPS``), the lowest double.
SIDE_BITS = 16
SIDE_MASK = (1 << SIDE_BITS) - 1


@njit_inline
def side_field(packed, side):
    """Side ``side``'s field of the packed per-side tallies ``packed``."""
    return (packed >> (SIDE_BITS * side)) & SIDE_MASK


@njit_borrowed
def blocked_winner(rule, doubles, pips, lowest, sides):
    """The side winning a blocked hand, -1 on a tie (``engine.blocked_winner``); ``doubles``,
    ``pips`` and ``lowest`` are per-side tallies packed by :func:`side_field`."""
    every = (1 << sides) - 1  # the candidate sides, a bit each
    if rule == 2:  # pips
        return _single_min(every, pips, sides)
    if rule == 0:  # german: fewest doubles, then fewest pips
        low = 99
        for s in range(sides):
            low = min(low, side_field(doubles, s))
        best = 0
        for s in range(sides):
            if side_field(doubles, s) == low:
                best |= 1 << s
        return _single_min(best, pips, sides)
    if rule == 1:  # american
        best = 0
        for s in range(sides):
            if side_field(doubles, s) == 0:
                best |= 1 << s
        if best:
            return _single_min(best, pips, sides)
        return _single_min(every, lowest, sides)
    # most_doubles
    high = -1
    for s in range(sides):
        high = max(high, side_field(doubles, s))
    if high == 0:
        return _single_min(every, pips, sides)
    best = 0
    for s in range(sides):
        if side_field(doubles, s) == high:
            best |= 1 << s
    return _single_min(best, lowest, sides)


@njit_borrowed
def _single_min(candidates, key, sides):
    """The one side of the bit set ``candidates`` with the least packed ``key``, -1 on a tie."""
    low = 1 << 30
    for s in range(sides):
        if candidates >> s & 1 and side_field(key, s) < low:
            low = side_field(key, s)
    found = -1
    for s in range(sides):
        if candidates >> s & 1 and side_field(key, s) == low:
            if found >= 0:
                return -1
            found = s
    return found


# ================================================================ dealing


@njit_borrowed
def start_hand(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals):
    """Deal hand ``m[i, HAND_NO]`` (redealing while no seat holds a double): the deal's order
    (hands, then the boneyard) is shuffled in place in row ``i`` of ``bone``."""
    n = r[R_N]
    size = r[R_HAND]
    sets = r[R_SETS]
    total = NUM_TILES * sets
    first = m[i, HAND_NO] % n
    while True:
        if m[i, DEAL_POS] < m[i, DEALS]:
            k = m[i, DEAL_POS]
            m[i, DEAL_POS] = k + 1
            for j in range(total):
                bone[i, j] = deals[i, k, j]
        else:
            for j in range(total):
                bone[i, j] = j // sets
            for j in range(total - 1, 0, -1):
                k = below(rng, i, j + 1)
                tmp = bone[i, j]
                bone[i, j] = bone[i, k]
                bone[i, k] = tmp
        for s in range(MAX_SEATS):
            bits[i, s] = 0
            hlen[i, s] = 0
            for t in range(NUM_TILES):
                hands[i, s, t] = 0
        for s in range(n):
            for j in range(size):
                t = bone[i, s * size + j]
                hands[i, s, t] += 1
                bits[i, s] |= np.int64(1) << t
            hlen[i, s] = size
        leader = -1
        lead_tile = -1
        if r[R_LEAD] == LEAD_ROTATE:  # seat hand mod n leads any tile; no redeal
            leader = first
            break
        for q in range(NUM_NUMBERS):
            num = q if r[R_LEAD] == LEAD_LOWEST else NUM_NUMBERS - 1 - q
            t = T_DOUBLE_ID[num]
            for k in range(n):
                seat = (first + k) % n
                if hands[i, seat, t]:
                    leader = seat
                    lead_tile = t if r[R_LEAD] != LEAD_HIGHEST_ANY else -1
                    break
            if leader >= 0:
                break
        if leader >= 0:
            break
    m[i, BPOS] = 0
    for t in range(NUM_TILES):
        line[i, t] = 0
    m[i, LLEN] = 0
    m[i, E0] = 0
    m[i, E1] = 0
    m[i, D0] = 0
    m[i, D1] = 0
    for s in range(MAX_SEATS):
        voids[i, s] = 0
    m[i, RUN_DRAWS] = 0
    m[i, RUN_VOIDS] = 0
    m[i, CUR] = leader
    m[i, LEAD] = lead_tile


@njit_borrowed
def new_match(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals):
    """Start a fresh match in row ``i`` (given deals first, if any are left)."""
    for s in range(MAX_SEATS):
        scores[i, s] = 0
    m[i, HAND_NO] = 0
    m[i, TERMINAL] = 0
    m[i, WINNER] = -1
    start_hand(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


# ================================================================ queries


@njit_inline
def legal_mask(r, i, m, hands, bits, masks):
    """Fill row ``i`` of ``masks`` (N, A) with the 0/1 legal mask of the player on turn; return
    the count."""
    if m[i, LEAD] >= 0:
        for a in range(masks.shape[1]):
            masks[i, a] = 0
        masks[i, 2 * m[i, LEAD]] = 1
        return 1
    p = m[i, CUR]
    b = bits[i, p]
    opening = m[i, LLEN] == 0
    if opening:  # a free lead (``highest_any``, ``rotate``): any tile held, laid with end 0
        m0 = b
        m1 = np.int64(0)
    else:
        m0 = b & T_CONTAINS[m[i, E0]]
        m1 = b & T_CONTAINS[m[i, E1]]
    for t in range(NUM_TILES):  # branch-free: one pass over the play actions
        masks[i, 2 * t] = (m0 >> t) & 1
        masks[i, 2 * t + 1] = (m1 >> t) & 1
    count = popcount(m0) + popcount(m1)
    for a in range(NUM_PLAY_ACTIONS, masks.shape[1]):
        masks[i, a] = 0
    if opening:
        return count
    playable = m0 | m1
    can_draw = m[i, BPOS] < r[R_BONE] - r[R_RESERVE]
    if can_draw and (playable == 0 or r[R_VOLUNTARY]):
        masks[i, DRAW] = 1
        count += 1
    if playable == 0 and not can_draw:
        masks[i, PASS] = 1
        count += 1
    e0 = m[i, E0]
    if r[R_SETS] == 2 and e0 == m[i, E1] and hands[i, p, T_DOUBLE_ID[e0]] >= 2:
        masks[i, DOUBLE_PLAY + e0] = 1
        count += 1
    return count


@njit_inline
def is_legal(r, i, m, hands, bits, a):
    """Whether action ``a`` is legal for the player on turn of match ``i``."""
    if m[i, TERMINAL] or a < 0 or a >= r[R_ACTIONS]:
        return False
    p = m[i, CUR]
    if m[i, LEAD] >= 0:
        return a == 2 * m[i, LEAD]
    b = bits[i, p]
    if m[i, LLEN] == 0:  # a free lead: any own tile on end 0
        return a < NUM_PLAY_ACTIONS and (a & 1) == 0 and ((b >> (a >> 1)) & 1) == 1
    if a < NUM_PLAY_ACTIONS:
        t = a >> 1
        end = m[i, E0] if (a & 1) == 0 else m[i, E1]
        return ((b >> t) & 1) == 1 and ((T_CONTAINS[end] >> t) & 1) == 1
    playable = (b & T_MATCH_EITHER[m[i, E0] * 7 + m[i, E1]]) != 0
    can_draw = m[i, BPOS] < r[R_BONE] - r[R_RESERVE]
    if a == DRAW:
        return can_draw and (not playable or r[R_VOLUNTARY] != 0)
    if a == PASS:
        return not playable and not can_draw
    n = a - DOUBLE_PLAY
    return m[i, E0] == n and m[i, E1] == n and hands[i, p, T_DOUBLE_ID[n]] >= 2


@njit_inline
def action_points(r, i, m, scores, hlen, a):
    """Points the player on turn scores by the legal play ``a`` now (``BergenState``'s)."""
    if a in (DRAW, PASS):
        return 0
    p = m[i, CUR]
    used = 1
    if a >= DOUBLE_PLAY:
        header = DOUBLE_PLAY_HEADER
        used = 2
    elif m[i, LLEN] == 0:
        header = T_OPENING_POINTS[r[R_PLAY], a >> 1]
    elif r[R_PLAY] == PLAY_HEADERS:
        t = a >> 1
        e = a & 1
        end_e = m[i, E0 + e]
        end_o = m[i, E1 - e]
        header = 0
        if T_OTHER_HALF[t * 7 + end_e] == end_o:
            header = T_HEADER_BY_DOUBLES[T_IS_DOUBLE[t] + m[i, D1 - e]]
    else:
        header = _table_points(r, i, m, a >> 1, a & 1)
    side = side_of(r, p)
    header = capped(r, scores, i, side, header)
    if hlen[i, p] == used and r[R_OUT] == OUT_FIXED and header < r[R_TARGET] - scores[i, side]:
        return header + r[R_DOMINO]
    return header


@njit_inline
def _table_points(r, i, m, t, e):
    """``scoring.PLAY_POINTS`` of tile ``t`` played on end ``e`` of the line now."""
    x0 = m[i, E0]
    x1 = m[i, E1]
    f0 = m[i, D0]
    f1 = m[i, D1]
    if e == 0:
        x0 = T_OTHER_HALF[t * 7 + x0]
        f0 = T_IS_DOUBLE[t]
    else:
        x1 = T_OTHER_HALF[t * 7 + x1]
        f1 = T_IS_DOUBLE[t]
    return T_PLAY_POINTS[r[R_PLAY], ((t * 7 + x0) * 7 + x1) * 4 + 2 * f0 + f1]


# ================================================================ acting


@njit_inline
def apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a):
    """Apply the legal action ``a`` (``BergenState._apply``); a finished hand deals the next."""
    p = m[i, CUR]
    if a < NUM_PLAY_ACTIONS or a > PASS:
        if m[i, RUN_DRAWS]:
            ends = (1 << m[i, E0]) | (1 << m[i, E1])
            voids[i, p] = ends | (m[i, RUN_VOIDS] if m[i, RUN_DRAWS] == 1 else 0)
            m[i, RUN_DRAWS] = 0
        if a < NUM_PLAY_ACTIONS:
            _play(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, p, a)
        else:
            _double_play(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, p, a)
    elif a == DRAW:
        t = bone[i, r[R_N] * r[R_HAND] + m[i, BPOS]]
        m[i, BPOS] += 1
        hands[i, p, t] += 1
        bits[i, p] |= np.int64(1) << t
        hlen[i, p] += 1
        if not r[R_VOLUNTARY]:
            if not m[i, RUN_DRAWS]:
                m[i, RUN_VOIDS] = voids[i, p]
            m[i, RUN_DRAWS] += 1
        voids[i, p] = 0
        _check_blocked(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)
    else:
        m[i, RUN_DRAWS] = 0
        voids[i, p] |= (1 << m[i, E0]) | (1 << m[i, E1])
        m[i, CUR] = next_seat(r, p)
        _check_blocked(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


@njit_inline
def _remove(i, hands, bits, hlen, line, m, p, t):
    hands[i, p, t] -= 1
    if hands[i, p, t] == 0:
        bits[i, p] &= ~(np.int64(1) << t)
    hlen[i, p] -= 1
    line[i, t] += 1
    m[i, LLEN] += 1


@njit_inline
def _play(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, p, a):
    t = a >> 1
    e = a & 1
    opening = m[i, LLEN] == 0
    _remove(i, hands, bits, hlen, line, m, p, t)
    dbl = T_IS_DOUBLE[t]
    if opening:
        m[i, LEAD] = -1
        m[i, E0] = T_LOW[t]
        m[i, E1] = T_HIGH[t]
        m[i, D0] = dbl
        m[i, D1] = dbl
        header = T_OPENING_POINTS[r[R_PLAY], t]
    else:
        n = m[i, E0 + e]
        m[i, E0 + e] = T_OTHER_HALF[t * 7 + n]
        m[i, D0 + e] = dbl
        header = 0
        if r[R_PLAY] == PLAY_HEADERS:
            if m[i, E0] == m[i, E1]:
                header = T_HEADER_BY_DOUBLES[m[i, D0] + m[i, D1]]
        else:
            header = T_PLAY_POINTS[
                r[R_PLAY],
                ((t * 7 + m[i, E0]) * 7 + m[i, E1]) * 4 + 2 * m[i, D0] + m[i, D1],
            ]
    _after_play(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, p, header)


@njit_inline
def _double_play(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, p, a):
    t = T_DOUBLE_ID[a - DOUBLE_PLAY]
    _remove(i, hands, bits, hlen, line, m, p, t)
    _remove(i, hands, bits, hlen, line, m, p, t)
    m[i, D0] = 1
    m[i, D1] = 1
    _after_play(
        r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, p, DOUBLE_PLAY_HEADER
    )


@njit_inline
def _score(r, i, m, scores, side, points):
    """Add points; end the match (True) when the side reaches the target."""
    scores[i, side] += points
    if scores[i, side] >= r[R_TARGET]:
        m[i, TERMINAL] = 1
        m[i, WINNER] = side
        return True
    return False


@njit_inline
def _after_play(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, p, header):
    side = side_of(r, p)
    if header and _score(r, i, m, scores, side, capped(r, scores, i, side, header)):
        return
    if hlen[i, p] == 0:
        _end_hand(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, 1, side)
        return
    m[i, CUR] = next_seat(r, p)
    _check_blocked(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


@njit_inline
def _check_blocked(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals):
    """End the hand if it is blocked: nobody may draw and no seat holds a tile that fits."""
    if m[i, BPOS] < r[R_BONE] - r[R_RESERVE]:
        return
    fits = T_MATCH_EITHER[m[i, E0] * 7 + m[i, E1]]
    for s in range(r[R_N]):
        if bits[i, s] & fits:
            return
    _end_blocked(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


@njit_borrowed
def _end_blocked(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals):
    doubles = 0  # per side, packed (side_field)
    pips = 0
    lowest = 0
    for side in range(r[R_SIDES]):
        lowest |= NUM_NUMBERS << (SIDE_BITS * side)
    for s in range(r[R_N]):
        shift = SIDE_BITS * side_of(r, s)
        for t in range(NUM_TILES):
            c = np.int64(hands[i, s, t])
            if c:
                pips += T_PIPS[t] * c << shift
                if T_IS_DOUBLE[t]:
                    doubles += c << shift
                    low = (lowest >> shift) & SIDE_MASK
                    if T_LOW[t] < low:
                        lowest += (T_LOW[t] - low) << shift
    winner = blocked_winner(r[R_BLOCKED], doubles, pips, lowest, r[R_SIDES])
    _end_hand(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, 0, winner)


@njit_borrowed
def _end_hand(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, domino, winner):
    done = False
    if winner >= 0:
        if r[R_OUT] == OUT_FIXED:
            gain = r[R_DOMINO] if domino else r[R_BLOCKED_PTS]
        else:  # the pips left in the other sides' hands
            pips = 0
            for s in range(r[R_N]):
                if side_of(r, s) != winner:
                    for t in range(NUM_TILES):
                        pips += T_PIPS[t] * hands[i, s, t]
            gain = T_OUT_POINTS[r[R_OUT], pips]
        done = _score(r, i, m, scores, winner, gain)
    if not done and r[R_PENALTY]:
        for side in range(r[R_SIDES]):
            if side == winner:
                continue
            left = 0
            for s in range(r[R_N]):
                if side_of(r, s) == side:
                    left += hlen[i, s]
            scores[i, side] -= r[R_PENALTY] * left
    if r[R_SINGLE] and not m[i, TERMINAL]:  # the match is this one hand (a tie: no winner)
        m[i, TERMINAL] = 1
        m[i, WINNER] = winner
    if not m[i, TERMINAL]:
        m[i, HAND_NO] += 1
        if not r[R_NO_DEAL]:
            start_hand(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


# ================================================================ observations


@njit_inline
def encode_shared(r, i, m, scores, hlen, voids, seat, out, starts):
    """Write the views the observation and the global state share into row ``i`` of ``out``,
    seen from ``seat`` (0: the global state's absolute seats and sides); ``starts``: their
    offsets (``O_SHARED`` or ``S_SHARED``), as ``observation._fill_shared`` reads them."""
    left, right, dbl, empty, to_move, seats, sizes, voids_at, bone_at, scores_at, need_at = starts
    n = r[R_N]
    laid = m[i, LLEN] != 0
    e0 = m[i, E0] if laid else -1
    e1 = m[i, E1] if laid else -1
    for x in range(NUM_NUMBERS):
        out[i, left + x] = x == e0
        out[i, right + x] = x == e1
    out[i, dbl] = m[i, D0] if laid else 0
    out[i, dbl + 1] = m[i, D1] if laid else 0
    out[i, empty] = not laid
    rel = m[i, CUR] - seat
    if rel < 0:
        rel += n
    for k in range(MAX_SEATS):
        out[i, to_move + k] = k == rel
        out[i, seats + k] = k < n
        other = seat + k
        if other >= n:
            other -= n
        v = voids[i, other] if k < n else 0
        out[i, sizes + k] = hlen[i, other] if k < n else 0
        for x in range(NUM_NUMBERS):
            out[i, voids_at + k * NUM_NUMBERS + x] = (v >> x) & 1
    limit = r[R_BONE] - r[R_RESERVE]
    out[i, bone_at] = r[R_BONE] - m[i, BPOS]
    out[i, bone_at + 1] = max(0, limit - m[i, BPOS])
    sides = r[R_SIDES]
    first = side_of(r, seat)
    for k in range(MAX_SEATS * NEED_BINS):
        out[i, need_at + k] = 0.0
    for j in range(MAX_SEATS):
        if j < sides:
            score = scores[i, (first + j) % sides]
            out[i, scores_at + j] = np.float32(min(1.0, max(-2.0, score / r[R_SCALE])))
            if r[R_HAS_TARGET]:  # no target (Draw): need stays 0
                need = min(max(r[R_TARGET] - score, 1), NEED_BINS)
                out[i, need_at + j * NEED_BINS + need - 1] = 1.0
        else:
            out[i, scores_at + j] = 0.0


@njit_inline
def encode(r, i, m, scores, hands, hlen, voids, line, bone, masks, seat, obs):
    """Write ``Encoder.observe`` of ``seat`` into row ``i`` of ``obs``, every entry once (row
    ``i`` of ``masks``: the legal mask when ``seat`` is on turn, for ``play_points``; all zeros
    otherwise)."""
    sets = r[R_SETS]
    for t in range(NUM_TILES):
        h = hands[i, seat, t]
        ln = line[i, t]
        obs[i, O_HAND + t] = h
        obs[i, O_LINE + t] = ln
        obs[i, O_UNSEEN + t] = sets - h - ln
    encode_shared(r, i, m, scores, hlen, voids, seat, obs, O_SHARED)
    partners = r[R_PARTNERS] != 0
    for k in range(MAX_SEATS):
        obs[i, O_PARTNER + k] = partners and k == 2
    actions = masks.shape[1]
    for a in range(OBS_LEN - O_POINTS):
        obs[i, O_POINTS + a] = 0.0
    for a in range(actions):
        if masks[i, a] and (a < DRAW or a > PASS):
            obs[i, O_POINTS + a] = action_points(r, i, m, scores, hlen, a)


@njit_inline
def encode_state(r, i, m, scores, hands, hlen, voids, line, bone, out):
    """Write ``Encoder.state`` (absolute seats and sides, every hand and the boneyard's
    contents) of row ``i`` into row ``i`` of ``out``, every entry once."""
    n = r[R_N]
    for k in range(MAX_SEATS):
        for t in range(NUM_TILES):
            out[i, S_HANDS + k * NUM_TILES + t] = hands[i, k, t] if k < n else 0
    for t in range(NUM_TILES):
        out[i, S_LINE + t] = line[i, t]
        out[i, S_BONE_TILES + t] = 0.0
    dealt = n * r[R_HAND]
    for j in range(dealt + m[i, BPOS], dealt + r[R_BONE]):
        out[i, S_BONE_TILES + bone[i, j]] += 1.0
    encode_shared(r, i, m, scores, hlen, voids, 0, out, S_SHARED)


@njit_borrowed
def state_rows(r, m, scores, hands, hlen, voids, line, bone, out):
    """:func:`encode_state` of every row into ``out`` (N, STATE_SIZE) float32."""
    for i in range(out.shape[0]):
        encode_state(r, i, m, scores, hands, hlen, voids, line, bone, out)


# ================================================================ the batch


@njit_borrowed
def reset_rows(r, rows, m, scores, hands, bits, hlen, voids, line, bone, rng, deals):
    """Start a new match in each row of ``rows`` (its given deals first)."""
    for i in rows:
        m[i, DEAL_POS] = 0
        new_match(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


@njit_inline
def unmasked(actions, masks, i):
    """Row ``i``'s action is out of range or not set in its row of ``masks``."""
    a = actions[i]
    return a < 0 or a >= masks.shape[1] or not masks[i, a]


@njit_inline
def illegal(r, actions, active, m, hands, bits, i):
    """Row ``i`` is active and its action is illegal."""
    return active[i] and not is_legal(r, i, m, hands, bits, actions[i])


@njit
def first_unmasked(actions, masks):
    """The first row whose action is out of range or not set in its row of ``masks``, or -1."""
    for i in range(actions.shape[0]):
        if unmasked(actions, masks, i):
            return i
    return -1


@njit_borrowed
def first_illegal(r, actions, active, m, hands, bits):
    """The first active row whose action is illegal, or -1."""
    for i in range(actions.shape[0]):
        if illegal(r, actions, active, m, hands, bits, i):
            return i
    return -1


@njit_parallel
def unmasked_rows_parallel(actions, masks, bad):
    """``bad[i]``: :func:`unmasked` of row ``i``, the rows shared among threads."""
    for i in numba.prange(actions.shape[0]):
        bad[i] = unmasked(actions, masks, i)


@njit_parallel
def illegal_rows_parallel(r, actions, active, m, hands, bits, bad):
    """``bad[i]``: :func:`illegal` of row ``i``, the rows shared among threads."""
    for i in numba.prange(actions.shape[0]):
        bad[i] = illegal(r, actions, active, m, hands, bits, i)


@njit_borrowed
def step_rows(
    r, actions, active, m, scores, hands, bits, hlen, voids, line, bone, rng, deals,
    rewards, terminated, truncated,
):  # fmt: skip
    """Apply ``actions[i]`` in every active row (legal, checked before); write each finished
    match's rewards (per seat) and end flags, and restart it at once."""
    for i in range(actions.shape[0]):
        for s in range(r[R_N]):
            rewards[i, s] = 0.0
        terminated[i] = False
        truncated[i] = False
        if active[i]:
            b0, b1, b2, b3 = scores[i, 0], scores[i, 1], scores[i, 2], scores[i, 3]
            apply_action(
                r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, actions[i]
            )
            finish_row(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, rewards,
                       terminated, truncated, b0, b1, b2, b3)  # fmt: skip


@njit_inline
def finish_row(
    r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals,
    rewards, terminated, truncated, b0, b1, b2, b3,
):  # fmt: skip
    """After :func:`apply_action` in row ``i`` (``b0`` ... ``b3``: the sides' scores before
    it): ``rewards[i]`` (per seat) and the end flags of row ``i`` are set (to their values for
    this step), and a finished match restarts. The callers apply the action in their own loop
    body: numba's inlining of one function holding both costs more than the step itself."""
    n = r[R_N]
    sides = r[R_SIDES]
    points = r[R_REWARD] == REWARD_POINTS
    terminated[i] = False
    truncated[i] = False
    if points:
        d0 = scores[i, 0] - b0
        d1 = scores[i, 1] - b1
        d2 = scores[i, 2] - b2
        d3 = scores[i, 3] - b3
        total = d0 + d1 + d2 + d3
        for s in range(n):
            side = side_of(r, s)
            d = d0 if side == 0 else d1 if side == 1 else d2 if side == 2 else d3
            rewards[i, s] = d - (total - d) / (sides - 1)
    else:
        for s in range(n):
            rewards[i, s] = 0.0
    if m[i, TERMINAL]:
        terminated[i] = True
        if not points and m[i, WINNER] >= 0:
            loss = -1.0 / (sides - 1)
            for s in range(n):
                rewards[i, s] = 1.0 if side_of(r, s) == m[i, WINNER] else loss
    elif r[R_MAX_HANDS] and m[i, HAND_NO] >= r[R_MAX_HANDS]:
        truncated[i] = True
    if terminated[i] or truncated[i]:
        m[i, DEAL_POS] = m[i, DEALS]  # given deals belong to the match reset() started
        new_match(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


@njit_borrowed
def step_observe_rows(
    r, actions, m, scores, hands, bits, hlen, voids, line, bone, rng, deals,
    rewards, terminated, truncated, masks, obs, cur, with_obs,
):  # fmt: skip
    """:func:`step_rows` and then :func:`observe_rows` over every row, in one pass (each row
    is stepped and encoded while it is in cache)."""
    for i in range(actions.shape[0]):
        b0, b1, b2, b3 = scores[i, 0], scores[i, 1], scores[i, 2], scores[i, 3]
        apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, actions[i])
        finish_row(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, rewards,
                   terminated, truncated, b0, b1, b2, b3)  # fmt: skip
        cur[i] = m[i, CUR]
        legal_mask(r, i, m, hands, bits, masks)
        if with_obs:
            encode(r, i, m, scores, hands, hlen, voids, line, bone, masks, m[i, CUR], obs)


@njit_parallel_borrowed
def step_observe_rows_parallel(
    r, actions, m, scores, hands, bits, hlen, voids, line, bone, rng, deals,
    rewards, terminated, truncated, masks, obs, cur, with_obs,
):  # fmt: skip
    """:func:`step_observe_rows` with the rows shared among numba's threads (each row has its
    own random stream, so the result does not depend on the threads). The loop body is
    repeated, not shared: an inlined function holding ``apply_action`` costs the step about
    60 ns an action (see :func:`finish_row`)."""
    for i in numba.prange(actions.shape[0]):
        b0, b1, b2, b3 = scores[i, 0], scores[i, 1], scores[i, 2], scores[i, 3]
        apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, actions[i])
        finish_row(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, rewards,
                   terminated, truncated, b0, b1, b2, b3)  # fmt: skip
        cur[i] = m[i, CUR]
        legal_mask(r, i, m, hands, bits, masks)
        if with_obs:
            encode(r, i, m, scores, hands, hlen, voids, line, bone, masks, m[i, CUR], obs)


@njit_borrowed
def observe_rows(
    r, active, m, scores, hands, bits, hlen, voids, line, bone, masks, obs, cur, with_obs
):
    """Masks (and observations, with ``with_obs``) of the seat on turn in every active row."""
    for i in range(masks.shape[0]):
        if not active[i]:
            continue
        cur[i] = m[i, CUR]
        legal_mask(r, i, m, hands, bits, masks)
        if with_obs:
            encode(r, i, m, scores, hands, hlen, voids, line, bone, masks, m[i, CUR], obs)


# ================================================================ batched agents


@njit_borrowed
def random_actions(masks, active, rng, out):
    """A uniform legal action per active row, from that row's stream of ``rng``."""
    for i in range(masks.shape[0]):
        if active[i]:
            out[i] = random_row(masks, rng, i)


@njit_parallel
def random_actions_parallel(masks, active, rng, out):
    """:func:`random_actions` with the rows shared among threads (each row its own stream, so
    the actions do not depend on the threads)."""
    for i in numba.prange(masks.shape[0]):
        if active[i]:
            out[i] = random_row(masks, rng, i)


@njit_inline
def random_row(masks, rng, i):
    """A uniform legal action of row ``i`` of ``masks`` from stream ``i`` (no draw when only one
    is legal): the legal actions as bits of a word, the draw's rank found by clearing the lower
    set bits."""
    actions = masks.shape[1]
    low = np.uint64(0)  # actions 0..63
    for a in range(min(actions, 64)):
        low |= np.uint64(masks[i, a] != 0) << np.uint64(a)
    count_low = popcount64(low)
    count = count_low
    last = -1
    for a in range(64, actions):
        if masks[i, a]:
            count += 1
            last = a
    if count == 1:
        return last if last >= 0 else trailing_zeros64(low)
    k = below(rng, i, count)
    if k >= count_low:  # among actions 64 and above
        k -= count_low
        for a in range(64, actions):
            if masks[i, a]:
                if k == 0:
                    return a
                k -= 1
        return last
    for _ in range(k):
        low &= low - np.uint64(1)
    return trailing_zeros64(low)


@njit_borrowed
def greedy_actions(r, masks, active, m, scores, hlen, out):
    """``GreedyAgent``'s choice per active row (see :func:`greedy_row`)."""
    for i in range(masks.shape[0]):
        if active[i]:
            out[i] = greedy_row(r, i, masks, m, scores, hlen)


@njit_inline
def greedy_row(r, i, masks, m, scores, hlen):
    """``GreedyAgent``: the most points now (a play reaching the target first), then a double,
    then the heavier tile, then the lowest action id."""
    target = r[R_TARGET]
    side = side_of(r, m[i, CUR])
    best = -1
    bk0 = bk1 = bk2 = bk3 = -(1 << 30)
    for a in range(masks.shape[1]):
        if not masks[i, a]:
            continue
        if a in (DRAW, PASS):
            k0, k1, k2, k3 = 0, -1, 0, 0
        else:
            pts = action_points(r, i, m, scores, hlen, a)
            k0 = 1 if scores[i, side] + pts >= target else 0
            if r[R_SINGLE] and hlen[i, m[i, CUR]] == (2 if a >= DOUBLE_PLAY else 1):
                k0 = 1  # going out wins a single-hand match
            k1 = pts
            if a >= DOUBLE_PLAY:
                k2, k3 = 1, 4 * (a - DOUBLE_PLAY)
            else:
                k2, k3 = T_IS_DOUBLE[a >> 1], T_PIPS[a >> 1]
        # strictly better only: equal keys keep the lower action id (the -action tie-break)
        if (k0, k1, k2, k3) > (bk0, bk1, bk2, bk3):
            best = a
            bk0, bk1, bk2, bk3 = k0, k1, k2, k3
    return best


@njit
def draw_seats(rng, rows, n, out):
    """A uniform seat in ``0..n-1`` for every row of ``rows`` (a bool mask), from its stream."""
    for i in range(rows.shape[0]):
        if rows[i]:
            out[i] = below(rng, i, n)
