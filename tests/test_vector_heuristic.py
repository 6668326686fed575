"""The compiled heuristic (``bergen_env.agents.compiled.heuristic_policy``) and search with compiled
heuristic playouts: the same choices, action values and decisions as the Python ones."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from bergen_env import BergenState, Rules  # noqa: E402
from bergen_env.agents import make_agent  # noqa: E402
from bergen_env.agents.compiled.heuristic_policy import (  # noqa: E402
    heuristic_action,
    heuristic_weights,
    seen_masks,
)
from bergen_env.agents.compiled.playouts import OUT_NEW_HAND, CompiledPlayouts, permute  # noqa: E402
from bergen_env.agents.heuristic import HeuristicAgent  # noqa: E402
from bergen_env.agents.search import SearchAgent  # noqa: E402
from bergen_env.engine import PublicView, trailing_draws  # noqa: E402
from bergen_env.rules import BLOCKED_RULES, PRESETS  # noqa: E402
from bergen_env.tiles import NUM_TILES  # noqa: E402
from bergen_env.vector import kernels as K  # noqa: E402
from bergen_env.vector._numba import njit  # noqa: E402
from tests.search_positions import (  # noqa: E402
    assert_legal_reproducible_picklable,
    assert_same_values,
    positions,
)

SEATINGS = ((2, False), (3, False), (4, False), (4, True))
#: Every preset at every seating, then single options overridden.
RULE_SETS = [
    *((preset, dict(num_players=n, partnerships=p)) for preset in PRESETS for n, p in SEATINGS),
    *(
        ("standard", dict(num_players=n, blocked_rule=rule))
        for n, rule in zip((2, 3, 4, 2), BLOCKED_RULES, strict=True)
    ),
    ("standard", dict(num_players=2, voluntary_draw=True, reserve=0)),
    ("standard", dict(num_players=3, lead="rotate", end_caps=False)),
    ("standard", dict(num_players=2, target=5)),  # end caps and match wins early
    ("standard", dict(num_players=4, partnerships=True, domino_points=4, leftover_penalty=1)),
    ("traditional", dict(num_players=2, lead="highest_any", blocked_rule="american")),
    ("double_set", dict(num_players=3, voluntary_draw=True, blocked_rule="german")),
    ("fives", dict(num_players=2, target=12)),  # counts that win the match
    ("fives", dict(num_players=3, out_scoring="pips", lead="lowest")),
    ("fives", dict(num_players=2, single_hand=True, target=0)),  # no target
    ("draw", dict(num_players=2, out_scoring="pips_fives", blocked_rule="german")),
    (
        "draw",
        dict(num_players=3, single_hand=False, target=10, out_scoring="fixed", domino_points=2),
    ),
]
#: Moves looked at per match (a match with leftover penalties can take long to end).
MOVES = 300


def _id(config: tuple) -> str:
    preset, kwargs = config
    return preset + "-" + ",".join(f"{k}={v}" for k, v in kwargs.items())


def kernel_row(view: PublicView) -> tuple[np.ndarray, ...]:
    """The kernels' arrays (one row) of ``view``'s public information: the other hands are left
    empty (only their sizes are known), so the compiled heuristic can read nothing else."""
    rules = view.rules
    r = K.rule_vector(rules, None, "match")
    m = np.zeros((1, K.NUM_FIELDS), dtype=np.int32)
    m[0, K.CUR] = view.current_player
    m[0, K.LEAD] = -1 if view.lead_tile is None else view.lead_tile
    m[0, K.BPOS] = rules.boneyard_size - view.boneyard_size
    m[0, K.LLEN] = sum(view.line_counts)
    if view.ends is not None:
        m[0, K.E0], m[0, K.E1] = view.ends
    m[0, K.D0], m[0, K.D1] = view.end_doubles
    m[0, K.RUN_DRAWS] = trailing_draws(view)
    m[0, K.HAND_NO] = view.hand_number
    scores = np.zeros((1, K.MAX_SEATS), dtype=np.int32)
    scores[0, : rules.num_sides] = view.scores
    hands = np.zeros((1, K.MAX_SEATS, NUM_TILES), dtype=np.int8)
    hands[0, view.seat] = view.hand_counts
    bits = np.zeros((1, K.MAX_SEATS), dtype=np.int64)
    bits[0, view.seat] = sum(1 << t for t in range(NUM_TILES) if view.hand_counts[t])
    hlen = np.zeros((1, K.MAX_SEATS), dtype=np.int32)
    hlen[0, : rules.num_players] = view.hand_sizes
    voids = np.zeros((1, K.MAX_SEATS), dtype=np.int32)
    voids[0, : rules.num_players] = view.voids
    line = np.array([view.line_counts], dtype=np.int8)
    return r, m, scores, hands, bits, hlen, voids, line


def compiled_choice(view: PublicView, weights: np.ndarray) -> int:
    r, m, scores, hands, bits, hlen, voids, line = kernel_row(view)
    return int(heuristic_action(r, 0, m, scores, hands, bits, hlen, voids, line, weights))


@pytest.mark.parametrize("config", RULE_SETS, ids=_id)
def test_compiled_heuristic_is_the_heuristic_agent(config: tuple) -> None:
    """Every position of random and heuristic matches: the same action (ties included)."""
    preset, kwargs = config
    rules = Rules.preset(preset, **kwargs)
    agent = HeuristicAgent()
    weights = heuristic_weights(agent)
    rng = np.random.default_rng(len(_id(config)))
    checked = 0
    for match in range(6 if rules.single_hand else 3):
        s = BergenState(rules, seed=match)
        heuristic_seats = match % 2  # odd matches: every seat plays the heuristic
        for _ in range(MOVES):
            if s.terminal:
                break
            view = s.public_view(s.current_player)
            expected = agent.act(None, None, view)
            assert compiled_choice(view, weights) == expected, (view.moves, view.hand)
            checked += 1
            legal = view.legal_actions
            s.apply_action(expected if heuristic_seats else legal[int(rng.integers(len(legal)))])
    assert checked > 60


def test_compiled_heuristic_with_other_weights() -> None:
    rules = Rules.preset("standard", num_players=3)
    agent = make_agent("heuristic:threat=1.5,shed=0.05,variety=0.7,follow=0,stuck=2")
    weights = heuristic_weights(agent)
    rng = np.random.default_rng(3)
    for seed in range(3):
        s = BergenState(rules, seed=seed)
        for _ in range(MOVES):
            if s.terminal:
                break
            view = s.public_view(s.current_player)
            assert compiled_choice(view, weights) == agent.act(None, None, view)
            legal = view.legal_actions
            s.apply_action(legal[int(rng.integers(len(legal)))])


SEARCH_CONFIGS = [
    ("standard", dict(num_players=2)),
    ("standard", dict(num_players=2, target=5)),  # playouts that end the match
    ("traditional", dict(num_players=3)),  # margin values, leftover penalties
    ("double_set", dict(num_players=4, partnerships=True)),  # double plays, partners
    ("fives", dict(num_players=2)),
    ("fives", dict(num_players=4)),  # partnerships
    ("draw", dict(num_players=3)),  # the single-hand match
]


@pytest.mark.parametrize("belief", ["0", "1"])
@pytest.mark.parametrize("config", SEARCH_CONFIGS, ids=_id)
def test_compiled_heuristic_playouts_give_the_same_values(config: tuple, belief: str) -> None:
    preset, kwargs = config
    rules = Rules.preset(preset, **kwargs)
    spec = f"search:samples=6,rollout=heuristic,belief={belief},playouts="
    python, compiled = make_agent(spec + "python"), make_agent(spec + "compiled")
    assert_same_values(python, compiled, positions(rules, 6, seed=len(_id(config))), 7)


@njit
def _permutations(rng, src, count, out):
    for k in range(count):
        permute(rng, src, out[k])


@pytest.mark.parametrize("size", [1, 2, 14, 28, 56])
def test_permute_draws_numpys_permutation(size: int) -> None:
    """The compiled in-place shuffle gives numpy's ``Generator.permutation`` and leaves the
    generator where numpy does (the searches' draws depend on it)."""
    src = np.arange(size, dtype=np.int64) // 2
    for seed in range(5):
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        out = np.full((20, size + 3), -1, dtype=np.int64)
        _permutations(ours, src, 20, out)
        for row in out:
            assert row[:size].tolist() == theirs.permutation(src).tolist()
            assert (row[size:] == -1).all()
        assert ours.random() == theirs.random()


def test_popcount_counts_set_bits() -> None:
    rng = np.random.default_rng(0)
    for x in [0, 1, (1 << NUM_TILES) - 1, (1 << 56) - 1, *rng.integers(0, 1 << 56, 200)]:
        assert K.popcount(np.int64(x)) == bin(int(x)).count("1")


@pytest.mark.parametrize("preset", ["standard", "double_set"])
def test_seen_masks_are_the_tiles_held_and_unseen(preset: str) -> None:
    """Held tiles, and tiles with at least one / two copies the player does not see."""
    rules = Rules.preset(preset, num_players=3)
    sets = rules.sets
    for view in (p.public_view(p.current_player) for p in _states(rules, 40)):
        r, m, scores, hands, bits, hlen, voids, line = kernel_row(view)
        held, once, twice = seen_masks(r, 0, hands, line, view.seat)
        unseen = [sets - h - c for h, c in zip(view.hand_counts, view.line_counts, strict=True)]
        assert held == bits[0, view.seat]
        assert once == sum(1 << t for t in range(NUM_TILES) if unseen[t] >= 1)
        assert twice == sum(1 << t for t in range(NUM_TILES) if unseen[t] >= 2)


def _states(rules: Rules, count: int) -> list[BergenState]:
    """``count`` states of random matches, one per move."""
    rng = np.random.default_rng(1)
    out: list[BergenState] = []
    s = BergenState(rules, seed=0)
    while len(out) < count:
        if s.terminal:
            s = BergenState(rules, seed=len(out))
        out.append(s.clone())
        legal = s.legal_actions()
        s.apply_action(legal[int(rng.integers(len(legal)))])
    return out


def test_playouts_do_not_deal_the_next_hand() -> None:
    """A playout stops at its hand's end: the next hand is reported but not dealt (the
    kernels' random stream that would deal it is never drawn from)."""
    rules = Rules.preset("standard", num_players=2)
    new_hands = 0
    for s in _states(rules, 300):
        view = s.public_view(s.current_player)
        root = CompiledPlayouts(view, None, 0, "heuristic")
        hands = [[t for t in range(NUM_TILES) for _ in range(row[t])] for row in s.hands]
        out, _ = root.run(hands, s.boneyard[s.bone_pos :])
        assert root.rng[0] == 0
        new_hands += int(out[:, OUT_NEW_HAND].sum())
    assert new_hands > 100


def test_heuristic_playouts_are_compiled_by_default() -> None:
    assert SearchAgent(rollout="heuristic").compiled
    assert not SearchAgent(rollout="heuristic", playouts="python").compiled


def test_search_with_heuristic_playouts_is_legal_reproducible_and_picklable() -> None:
    rules = Rules.preset("standard", num_players=3)
    spec = "search:samples=4,rollout=heuristic,belief=1"
    assert_legal_reproducible_picklable(spec, positions(rules, 8, seed=2))
