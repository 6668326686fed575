"""Whole matches between ``heuristic`` players with different weights, compiled.

:func:`play_heuristic_matches` plays one match per row with the compiled
:func:`~bergen_env.agents.compiled.heuristic_policy.heuristic_action` in every seat, each seat
with its own weight vector (in :data:`~bergen_env.agents.heuristic.WEIGHT_NAMES` order): the
matches ``HeuristicAgent``s with those weights play through the engine. :func:`duplicate_wins`
is the evaluation of a weight vector against another under duplicate deals: every deal stream
is played once with the candidate's weights in each side's seats, so both sides get the same
cards. The weight tuner (``bergen_env.training.tune_heuristic``) is built on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bergen_env.agents.compiled.heuristic_policy import heuristic_action
from bergen_env.agents.heuristic import WEIGHT_NAMES
from bergen_env.env_options import DEFAULT_MAX_HANDS
from bergen_env.rules import Rules
from bergen_env.tiles import NUM_TILES
from bergen_env.validation import check_int
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit_borrowed


@njit_borrowed
def _play(r, streams, seat_weights, max_hands, m, scores, hands, bits, hlen, voids, line, bone,
          rng, deals, winners, final):  # fmt: skip
    for i in range(m.shape[0]):
        rng[i] = streams[i]
        m[i, K.DEAL_POS] = 0
        K.new_match(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)
        while not m[i, K.TERMINAL] and m[i, K.HAND_NO] < max_hands:
            w = seat_weights[i, m[i, K.CUR]]
            a = heuristic_action(r, i, m, scores, hands, bits, hlen, voids, line, w)
            K.apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a)
        winners[i] = m[i, K.WINNER]
        for s in range(K.MAX_SEATS):
            final[i, s] = scores[i, s]


def _weights(name: str, value: Any) -> np.ndarray:
    w = np.asarray(value, dtype=np.float64)
    if w.shape[-1:] != (len(WEIGHT_NAMES),):
        raise ValueError(
            f"{name} must end in an axis of {len(WEIGHT_NAMES)} weights {WEIGHT_NAMES}, "
            f"got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {w.tolist()}")
    return w


def play_heuristic_matches(
    rules: Rules,
    seat_weights: np.ndarray,
    streams: np.ndarray,
    deals: Sequence[Sequence[dict[str, Sequence[int]]]] | None = None,
    max_hands: int = DEFAULT_MAX_HANDS,
) -> tuple[np.ndarray, np.ndarray]:
    """Play one match per row to its end; returns ``(winners, scores)``.

    ``seat_weights[i, seat]``: the weights of ``seat`` in row ``i`` (``(rows, players, 7)``);
    ``streams[i]``: row ``i``'s 64-bit deal stream (see ``kernels.seed_streams``), which deals
    every hand after the given ``deals[i]`` (the scalar env's ``{"hands", "boneyard"}`` deals,
    one per hand). ``winners[i]``: the winning side (-1: a tie, or a match still running after
    ``max_hands`` hands, which is stopped there as the arena stops it); ``scores[i]``: the sides'
    final scores.
    """
    n = rules.num_players
    max_hands = check_int("max_hands", max_hands, minimum=1)
    seat_weights = _weights("seat_weights", seat_weights)
    if seat_weights.ndim != 3 or seat_weights.shape[1] != n:
        raise ValueError(
            f"seat_weights must have shape (rows, {n}, {len(WEIGHT_NAMES)}), "
            f"got {seat_weights.shape}"
        )
    rows = seat_weights.shape[0]
    streams = np.asarray(streams, dtype=np.uint64)
    if streams.shape != (rows,):
        raise ValueError(f"streams must have shape ({rows},), got {streams.shape}")
    given = 0 if deals is None else max((len(d) for d in deals), default=0)
    if deals is not None and len(deals) != rows:
        raise ValueError(f"deals must hold one list per row ({rows}), got {len(deals)}")
    flat = np.zeros((rows, given, rules.num_tiles), dtype=np.int8)
    m = np.zeros((rows, K.NUM_FIELDS), dtype=np.int32)
    for i, row in enumerate(deals or ()):
        for k, deal in enumerate(row):
            order = [t for hand in deal["hands"] for t in hand] + list(deal["boneyard"])
            if len(order) != rules.num_tiles:
                raise ValueError(
                    f"deal {k} of row {i} holds {len(order)} tiles, the rules deal "
                    f"{rules.num_tiles}"
                )
            flat[i, k] = order
        m[i, K.DEALS] = len(row)
    full = np.zeros((rows, K.MAX_SEATS, len(WEIGHT_NAMES)), dtype=np.float64)
    full[:, :n] = seat_weights
    winners = np.zeros(rows, dtype=np.int64)
    scores = np.zeros((rows, K.MAX_SEATS), dtype=np.int64)
    _play(
        K.rule_vector(rules, None, "match"), streams, full, max_hands, m,
        np.zeros((rows, K.MAX_SEATS), dtype=np.int32),
        np.zeros((rows, K.MAX_SEATS, NUM_TILES), dtype=np.int8),
        np.zeros((rows, K.MAX_SEATS), dtype=np.int64),
        np.zeros((rows, K.MAX_SEATS), dtype=np.int32),
        np.zeros((rows, K.MAX_SEATS), dtype=np.int32),
        np.zeros((rows, NUM_TILES), dtype=np.int8),
        np.zeros((rows, K.MAX_BONE), dtype=np.int8),
        np.zeros(rows, dtype=np.uint64), flat, winners, scores,
    )  # fmt: skip
    return winners, scores[:, : rules.num_sides]


def duplicate_wins(
    rules: Rules, weights: Any, opponent: Any, matches: int, seed: int
) -> np.ndarray:
    """The match wins of ``weights`` against ``opponent`` on ``matches`` duplicate deal streams.

    Stream ``j`` (of ``seed``) is played once per side with ``weights`` in that side's seats and
    ``opponent`` in the others; entry ``j`` is the share of those matches the candidate won
    (ties count 0), so its mean is the candidate's match-win rate, an equal share being
    ``1 / sides``.
    """
    matches = check_int("matches", matches, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    w = _weights("weights", weights)
    o = _weights("opponent", opponent)
    if w.ndim != 1 or o.ndim != 1:
        raise ValueError("weights and opponent must each be one weight vector")
    sides = rules.num_sides
    streams = np.zeros(matches, dtype=np.uint64)
    K.seed_streams(seed, 0, streams)
    side = np.tile(np.arange(sides), matches)  # the candidate's side in each row
    mine = np.array(rules.side_of)[None, :] == side[:, None]  # (rows, players)
    seat_weights = np.where(mine[:, :, None], w, o)
    winners, _ = play_heuristic_matches(rules, seat_weights, np.repeat(streams, sides))
    return (winners == side).reshape(matches, sides).mean(axis=1)
