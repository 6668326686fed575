"""How far the batched kernels are from the floor: their parts, and a minimal compiled step.

Times, in CPU time (``time.thread_time``) of one process on one core, ns per action of
2-player ``standard`` random legal play over a batch of ``--rows`` matches:

- the parts of :mod:`bergen_env.vector.kernels`, each in a compiled loop over the batch (no
  Python between rows): the legal mask (``legal_mask``), the random choice (``random_row``),
  the whole step without observations (mask, choice, ``apply_action`` and ``finish_row``: the
  scoring, end of hand and next deal), the deal alone (``start_hand``, reported per deal and
  per action at the measured deals per action) and the observation (``encode``);
- the floor: :func:`floor_play`, a compiled random legal play of the same rules that keeps only
  what the rules need: two 28-bit hands, the ends, the boneyard's order, the scores; legality
  from the seven precomputed end masks, the choice by popcount, the header by table, the deal
  shuffled in place;
- the clock: cycles per ns from a dependent chain of one-cycle integer operations, so each
  figure is also given in cycles (``perf stat`` counters are not available in this virtual
  machine);
- the scalar engine's random legal play (``apply_unchecked``, :func:`benchmarks.run.engine_loop`)
  in the same run, so each figure is also a ratio to it.

    taskset -c 0 python -m benchmarks.kernel_floor [--rows 4096] [--seconds 0.5] [--json PATH]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.run import engine_loop, pin_to_one_core, write_json
from benchmarks.vector_speed import cpu_rate
from bergen_env.rules import Rules
from bergen_env.tiles import CONTAINS, DOUBLE_ID, IS_DOUBLE, OTHER_HALF, PIPS
from bergen_env.vector import BergenVectorEnv
from bergen_env.vector import kernels as K
from bergen_env.vector._numba import njit, njit_borrowed

SEED = 0

# ---------------------------------------------------------------- the clock


@njit
def chain2(n, x):
    """``n`` links of ``x + (x >> 7)``: a shift and an add, two cycles a link."""
    for _ in range(n):
        x = x + (x >> 7)
    return x


@njit
def chain3(n, x):
    """``n`` links of ``(x ^ (x >> 7)) + 1``: shift, xor, add, three cycles a link."""
    for _ in range(n):
        x = (x ^ (x >> 7)) + 1
    return x


def cpu_time(call: Callable[[], Any], seconds: float) -> float:
    """The least CPU seconds of one ``call()`` over repeats filling about ``seconds``."""
    best = float("inf")
    spent = 0.0
    while spent < seconds or best == float("inf"):
        start = time.thread_time()
        call()
        took = time.thread_time() - start
        spent += took
        best = min(best, took)
    return best


def cycles_per_ns(seconds: float) -> dict[str, float]:
    """The core's clock, measured on two dependent chains (they agree when the model holds)."""
    n = 20_000_000
    chain2(10, 1)
    chain3(10, 1)
    two = 2 * n / (1e9 * cpu_time(lambda: chain2(n, 12345), seconds / 2))
    three = 3 * n / (1e9 * cpu_time(lambda: chain3(n, 12345), seconds / 2))
    return {"chain2": two, "chain3": three, "ghz": (two + three) / 2}


# ---------------------------------------------------------------- the kernels' parts


@njit_borrowed
def masks_pass(r, m, hands, bits, masks, reps):
    total = 0
    for _ in range(reps):
        for i in range(masks.shape[0]):
            total += K.legal_mask(r, i, m, hands, bits, masks)
    return total


@njit_borrowed
def choice_pass(masks, rng, out, reps):
    total = 0
    for _ in range(reps):
        for i in range(masks.shape[0]):
            out[i] = K.random_row(masks, rng, i)
            total += out[i]
    return total


@njit_borrowed
def encode_pass(r, m, scores, hands, hlen, voids, line, bone, masks, obs, reps):
    for _ in range(reps):
        for i in range(masks.shape[0]):
            K.encode(r, i, m, scores, hands, hlen, voids, line, bone, masks, m[i, K.CUR], obs)


@njit_borrowed
def deal_pass(r, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, reps):
    for _ in range(reps):
        for i in range(m.shape[0]):
            K.start_hand(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals)


@njit_borrowed
def play_pass(
    r, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, masks, agent_rng,
    rewards, terminated, truncated, steps,
):  # fmt: skip
    """``steps`` random legal actions in every row (mask, choice, step); returns the hands
    dealt."""
    dealt = 0
    for _ in range(steps):
        for i in range(m.shape[0]):
            K.legal_mask(r, i, m, hands, bits, masks)
            a = K.random_row(masks, agent_rng, i)
            before = m[i, K.HAND_NO] + m[i, K.TERMINAL] + m[i, K.DEAL_POS]
            b0, b1, b2, b3 = scores[i, 0], scores[i, 1], scores[i, 2], scores[i, 3]
            K.apply_action(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals, a)
            K.finish_row(r, i, m, scores, hands, bits, hlen, voids, line, bone, rng, deals,
                         rewards, terminated, truncated, b0, b1, b2, b3)  # fmt: skip
            if terminated[i] or truncated[i] or m[i, K.HAND_NO] + m[i, K.DEAL_POS] != before:
                dealt += 1
    return dealt


# ---------------------------------------------------------------- the floor

F_CONTAINS = np.array(CONTAINS, dtype=np.int64)
F_OTHER = np.array(OTHER_HALF, dtype=np.int64)
F_DOUBLE = np.array(IS_DOUBLE, dtype=np.int64)
F_DOUBLE_ID = np.array(DOUBLE_ID, dtype=np.int64)
F_PIPS = np.array(PIPS, dtype=np.int64)
F_LOW = np.array([min(t) for t in K.TILES], dtype=np.int64)
F_HIGH = np.array([max(t) for t in K.TILES], dtype=np.int64)
F_DOUBLES_MASK = sum(1 << t for t in range(28) if IS_DOUBLE[t])
#: ``F_PIPS_OF_BYTE[k, b]``: the pips of the tiles ``8k .. 8k+7`` set in the byte ``b``.
F_PIPS_OF_BYTE = np.array(
    [[sum(PIPS[8 * k + j] for j in range(8) if b >> j & 1 and 8 * k + j < 28) for b in range(256)]
     for k in range(4)],
    dtype=np.int64,
)  # fmt: skip
#: ``standard`` with two players: hands of 6, boneyard of 16 of which 2 are never drawn, headers
#: 2 / 3 by double ends, 2 points for a domino or a blocked hand (german rule), end caps, 15.
HAND, DRAWABLE, TARGET, OUT = 6, 14, 15, 2


@njit
def _pips(h):
    return (
        F_PIPS_OF_BYTE[0, h & 255] + F_PIPS_OF_BYTE[1, (h >> 8) & 255]
        + F_PIPS_OF_BYTE[2, (h >> 16) & 255] + F_PIPS_OF_BYTE[3, (h >> 24) & 255]
    )  # fmt: skip


@njit_borrowed
def _deal(i, hand, lead, cur, bone, bpos, rng, order):
    while True:
        for j in range(28):
            order[j] = j
        for j in range(27, 0, -1):
            k = K.below(rng, i, j + 1)
            t = order[j]
            order[j] = order[k]
            order[k] = t
        h0 = 0
        h1 = 0
        for j in range(HAND):
            h0 |= np.int64(1) << order[j]
            h1 |= np.int64(1) << order[HAND + j]
        if (h0 | h1) & F_DOUBLES_MASK:
            break
    hand[i, 0] = h0
    hand[i, 1] = h1
    for j in range(28 - 2 * HAND):
        bone[i, j] = order[2 * HAND + j]
    bpos[i] = 0
    for x in range(7):  # the lowest double leads it
        t = F_DOUBLE_ID[x]
        if (h0 >> t) & 1:
            lead[i] = t
            cur[i] = 0
            return
        if (h1 >> t) & 1:
            lead[i] = t
            cur[i] = 1
            return


@njit
def _score(score, i, side, pts):
    score[i, side] += pts
    if score[i, side] >= TARGET:
        score[i, 0] = 0
        score[i, 1] = 0
        return 1
    return 0


@njit_borrowed
def floor_play(hand, ends, dbl, cur, lead, bone, bpos, score, rng, agent_rng, order, steps):
    """``steps`` random legal actions in every row of a 2-player ``standard`` batch; returns
    (hands ended, matches ended). A finished match restarts with zero scores."""
    hands_done = 0
    matches = 0
    for _ in range(steps):
        for i in range(hand.shape[0]):
            p = cur[i]
            h = hand[i, p]
            ended = 0
            if lead[i] >= 0:  # the forced opening double
                t = lead[i]
                lead[i] = -1
                h &= ~(np.int64(1) << t)
                hand[i, p] = h
                ends[i, 0] = F_LOW[t]
                ends[i, 1] = F_LOW[t]
                dbl[i, 0] = 1
                dbl[i, 1] = 1
                header = 2
                e = 0
                played = True
            else:
                e0 = ends[i, 0]
                e1 = ends[i, 1]
                m0 = h & F_CONTAINS[e0]
                m1 = h & F_CONTAINS[e1]
                c0 = K.popcount(m0)
                count = c0 + K.popcount(m1)
                played = count > 0
                header = 0
                if played:
                    k = K.below(agent_rng, i, count) if count > 1 else 0
                    e = 0 if k < c0 else 1
                    x = m0 if e == 0 else m1
                    k = k if e == 0 else k - c0
                    for _ in range(k):  # the k-th set bit
                        x &= x - 1
                    t = K.popcount((x & -x) - 1)
                    h &= ~(np.int64(1) << t)
                    hand[i, p] = h
                    ends[i, e] = F_OTHER[t * 7 + ends[i, e]]
                    dbl[i, e] = F_DOUBLE[t]
                    if ends[i, 0] == ends[i, 1]:
                        header = 2 + dbl[i, 0] + dbl[i, 1]
                elif bpos[i] < DRAWABLE:  # draw; the same player acts again
                    hand[i, p] = h | (np.int64(1) << bone[i, bpos[i]])
                    bpos[i] += 1
                else:  # pass
                    cur[i] = 1 - p
            if played:
                if header:
                    need = TARGET - score[i, p]
                    if need <= 2:
                        header = 1
                    elif need == 3 and header > 2:
                        header = 2
                    ended = 2 * _score(score, i, p, header)
                if not ended and h == 0:  # domino
                    matches += _score(score, i, p, OUT)
                    ended = 1
                if not ended:
                    cur[i] = 1 - p
            if not ended and bpos[i] >= DRAWABLE:  # blocked: nobody holds a fitting tile
                fits = F_CONTAINS[ends[i, 0]] | F_CONTAINS[ends[i, 1]]
                h0 = hand[i, 0]
                h1 = hand[i, 1]
                if not ((h0 | h1) & fits):
                    ended = 1
                    d0 = K.popcount(h0 & F_DOUBLES_MASK)
                    d1 = K.popcount(h1 & F_DOUBLES_MASK)
                    winner = -1
                    if d0 != d1:
                        winner = 0 if d0 < d1 else 1
                    else:
                        p0 = _pips(h0)
                        p1 = _pips(h1)
                        if p0 != p1:
                            winner = 0 if p0 < p1 else 1
                    if winner >= 0:
                        matches += _score(score, i, winner, OUT)
            if ended:
                matches += ended == 2
                hands_done += 1
                _deal(i, hand, lead, cur, bone, bpos, rng, order)
    return hands_done, matches


def floor_state(rows: int) -> tuple[np.ndarray, ...]:
    """A dealt batch for :func:`floor_play` (its arrays, in its argument order)."""
    hand = np.zeros((rows, 2), dtype=np.int64)
    ends = np.zeros((rows, 2), dtype=np.int64)
    dbl = np.zeros((rows, 2), dtype=np.int64)
    cur = np.zeros(rows, dtype=np.int64)
    lead = np.zeros(rows, dtype=np.int64)
    bone = np.zeros((rows, 28), dtype=np.int64)
    bpos = np.zeros(rows, dtype=np.int64)
    score = np.zeros((rows, 2), dtype=np.int64)
    rng = np.zeros(rows, dtype=np.uint64)
    agent_rng = np.zeros(rows, dtype=np.uint64)
    K.seed_streams(np.uint64(1), 0, rng)
    K.seed_streams(np.uint64(2), 0, agent_rng)
    order = np.zeros(28, dtype=np.int64)
    for i in range(rows):
        _deal(i, hand, lead, cur, bone, bpos, rng, order)
    return hand, ends, dbl, cur, lead, bone, bpos, score, rng, agent_rng, order


# ---------------------------------------------------------------- the run


def run(rows: int, seconds: float) -> dict[str, Any]:
    pin_to_one_core()
    ghz = cycles_per_ns(seconds)
    engine = engine_loop(Rules.preset("standard", num_players=2), False)
    engine(time.perf_counter() + 0.2)
    engine_ns = 1e9 / max(cpu_rate(engine, seconds) for _ in range(3))
    env = BergenVectorEnv(num_envs=rows, seed=SEED, observations=True)
    env.reset()
    for _ in range(50):  # mid-hand positions, some with a drawn boneyard
        env.step(env.random_actions(env.masks))
    r, st = env.rule_array, env.state_arrays()
    m, scores, hands, bits, hlen, voids, line, bone, rng, deals = st
    masks, obs = env.masks, env.obs_buffer
    agent_rng = env.agent_rng
    out = np.zeros(rows, dtype=np.int64)
    rewards, term, trunc = env.rewards_buffer, env.terminated_buffer, env.truncated_buffer
    results: dict[str, float] = {}

    def per_row(name: str, call: Callable[[int], Any], reps: int) -> float:
        call(1)  # compile
        ns = 1e9 * cpu_time(lambda: call(reps), seconds) / (reps * rows)
        results[name] = ns
        return ns

    per_row("legal mask", lambda k: masks_pass(r, m, hands, bits, masks, k), 20)
    per_row("random choice", lambda k: choice_pass(masks, agent_rng, out, k), 20)
    per_row("observation", lambda k: encode_pass(r, m, scores, hands, hlen, voids, line, bone,
                                                 masks, obs, k), 5)  # fmt: skip
    saved = [a.copy() for a in st]
    per_row("deal (per deal)", lambda k: deal_pass(r, *st, k), 5)
    for a, b in zip(st, saved):
        a[...] = b
    dealt = [0, 0]

    def play(k: int) -> None:
        dealt[0] += play_pass(r, *st, masks, agent_rng, rewards, term, trunc, k)
        dealt[1] += k * rows

    play(1)
    dealt[:] = [0, 0]
    per_row("step without observation", play, 20)
    deals_per_action = dealt[0] / dealt[1]
    results["deal (per action)"] = results["deal (per deal)"] * deals_per_action
    results["apply, score, end of hand (rest of the step)"] = (
        results["step without observation"] - results["legal mask"] - results["random choice"]
        - results["deal (per action)"]
    )  # fmt: skip
    fst = floor_state(rows)
    counts = [0, 0]

    def floor(k: int) -> None:
        hands_done, _ = floor_play(*fst, k)
        counts[0] += hands_done
        counts[1] += k * rows

    floor(1)
    counts[:] = [0, 0]
    per_row("floor: minimal compiled step", floor, 50)
    floor_actions_per_hand = counts[1] / counts[0]
    kernel_actions_per_hand = 1 / deals_per_action
    print(f"one core, CPU time; {rows} rows; clock {ghz['ghz']:.2f} GHz "
          f"(chains: {ghz['chain2']:.2f}, {ghz['chain3']:.2f} cycles/ns)")  # fmt: skip
    print(f"actions per hand: kernels {kernel_actions_per_hand:.1f}, floor "
          f"{floor_actions_per_hand:.1f}")  # fmt: skip
    results["scalar engine (apply_unchecked)"] = engine_ns
    for name, ns in results.items():
        print(
            f"  {name:<46} {ns:8.1f} ns  {ns * ghz['ghz']:8.0f} cycles  "
            f"{engine_ns / ns:7.1f}x the scalar engine"
        )
    return dict(
        rows=rows, ghz=ghz, ns=results, deals_per_action=deals_per_action,
        kernel_actions_per_hand=kernel_actions_per_hand,
        floor_actions_per_hand=floor_actions_per_hand,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--seconds", type=float, default=0.5, help="per figure")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    result = run(args.rows, args.seconds)
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
