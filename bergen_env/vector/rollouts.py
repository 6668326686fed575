"""Compiled playouts of ``search``'s greedy rollout policy over one determinization.

:func:`bergen_env.agents.search.greedy_rollout` is the reference: :class:`CompiledPlayouts`
plays the same moves with the batched kernels (a batch of one match), so the search's action
values, and its decisions, are the same.

A determinization is the searcher's public view plus a guess of the hidden tiles;
:meth:`CompiledPlayouts.run` takes the guess as one flat array (every seat's hand in seat order,
then the undrawn boneyard), plays each legal action and then the rollout to the end of the hand
(or the match), and reports per action the scores, whether the match ended (and who won) and
whether a new hand was dealt.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.engine import PublicView, trailing_draws
from bergen_env.tiles import CONTAINS, IS_DOUBLE, NUM_NUMBERS, NUM_TILES, PIPS
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit

#: The rollout's preference among playable tiles: doubles, then pips, then id (descending).
ROLLOUT_ORDER = np.array(
    sorted(range(NUM_TILES), key=lambda t: (IS_DOUBLE[t], PIPS[t], t), reverse=True),
    dtype=np.int64,
)
ALL_TILES = (1 << NUM_TILES) - 1
#: ``VOID_TILES[v]``: the tiles holding a number of the 7-bit void mask ``v``.
VOID_TILES = np.zeros(1 << NUM_NUMBERS, dtype=np.int64)
for _v in range(1 << NUM_NUMBERS):
    for _x in range(NUM_NUMBERS):
        if _v >> _x & 1:
            VOID_TILES[_v] |= CONTAINS[_x]
#: Per outcome row: scores of 4 sides, terminal, winner, a new hand dealt.
OUT_TERMINAL, OUT_WINNER, OUT_NEW_HAND = 4, 5, 6


@njit
def _rollout_action(r, m, hands, bits, voids, line, on_line, clairvoyant):
    """The greedy rollout's move for the player on turn (``search.greedy_rollout``)."""
    if m[0, K.LEAD] >= 0:
        return 2 * m[0, K.LEAD]
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
        threats = ALL_TILES & ~(b | on_line) & ~VOID_TILES[voids[0, q]]
    else:
        threats = 0
        for t in range(NUM_TILES):
            if hands[0, p, t] + line[0, t] < 2:
                threats |= np.int64(1) << t
        threats &= ~VOID_TILES[voids[0, q]]
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
def greedy_playouts(
    r, m0, scores0, hlen0, voids0, line0, tiles, legal, clairvoyant, rng, deals, out
):
    """One playout per action of ``legal`` from the root (``m0`` ... ``line0``, one row each)
    with the hidden tiles ``tiles`` (hands by seat with the sizes of ``hlen0``, then the
    boneyard); ``out[k]``: the outcome of ``legal[k]`` (see ``OUT_*``)."""
    n = r[K.R_N]
    m = np.empty_like(m0)
    scores = np.empty_like(scores0)
    hands = np.zeros((1, K.MAX_SEATS, NUM_TILES), dtype=np.int8)
    bits = np.zeros((1, K.MAX_SEATS), dtype=np.int64)
    hlen = np.empty_like(hlen0)
    voids = np.empty_like(voids0)
    line = np.empty_like(line0)
    bone = np.zeros((1, K.MAX_BONE), dtype=np.int8)
    root_bone = np.zeros(K.MAX_BONE, dtype=np.int8)
    root_hands = np.zeros((K.MAX_SEATS, NUM_TILES), dtype=np.int8)
    root_bits = np.zeros(K.MAX_SEATS, dtype=np.int64)
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
    for x in range(legal.shape[0]):
        m[:] = m0
        scores[:] = scores0
        hlen[:] = hlen0
        voids[:] = voids0
        line[:] = line0
        hands[0] = root_hands
        bits[0] = root_bits
        bone[0] = root_bone  # a playout that ends the hand deals the next one into it
        on_line = on_line0
        a = legal[x]
        while True:
            K.apply_action(r, 0, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a)
            if a < DRAW:
                on_line |= np.int64(1) << (a >> 1)
            if m[0, K.TERMINAL] or m[0, K.HAND_NO] != hand:
                break
            a = _rollout_action(r, m, hands, bits, voids, line, on_line, clairvoyant)
        for s in range(K.MAX_SEATS):
            out[x, s] = scores[0, s]
        out[x, OUT_TERMINAL] = m[0, K.TERMINAL]
        out[x, OUT_WINNER] = m[0, K.WINNER]
        out[x, OUT_NEW_HAND] = 0 if m[0, K.TERMINAL] else 1


class CompiledPlayouts:
    """The root of one decision (the public part, shared by every determinization) and the
    compiled playouts from it; see the module docstring."""

    def __init__(self, view: PublicView) -> None:
        rules = view.rules
        self.r = K.rule_vector(rules, None, "match")
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
        self.rng = np.zeros(1, dtype=np.uint64)  # deals the next hand, which no playout plays
        self.deals = np.zeros((1, 0, rules.num_tiles), dtype=np.int8)
        self.legal = np.array(view.legal_actions, dtype=np.int64)
        self.out = np.zeros((len(self.legal), 7), dtype=np.int64)

    def run(
        self, hands: Sequence[Sequence[int]], boneyard: Sequence[int], clairvoyant: bool
    ) -> np.ndarray:
        """Outcomes of every legal action on the determinization ``hands``/``boneyard``: an
        ``(actions, 7)`` array (scores of 4 sides, terminal, winner side, new hand dealt)."""
        tiles = np.array([t for h in hands for t in h] + list(boneyard), dtype=np.int64)
        greedy_playouts(
            self.r, self.m, self.scores, self.hlen, self.voids, self.line, tiles, self.legal,
            clairvoyant, self.rng, self.deals, self.out,
        )  # fmt: skip
        return self.out
