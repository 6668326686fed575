"""The learned belief over hidden tiles: marginals, masks, files, deals, and search with it."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from bergen_env.agents import make_agent
from bergen_env.agents.learned_belief import (
    BONEYARD,
    LOCATIONS,
    NUM_FEATURES,
    NUM_OUTPUTS,
    SHIPPED,
    LearnedDeals,
    belief_inputs,
    draw_deal,
    prior_matrix,
    read_belief_file,
    relative_seats,
    save_belief_file,
    shipped_belief_path,
)
from bergen_env.agents.sampling import excluded_tiles
from bergen_env.engine import BergenState, PublicView
from bergen_env.policy_file import PolicyFileError
from bergen_env.rules import PRESETS, Rules
from bergen_env.tiles import NUM_TILES

SEATINGS = [(2, False), (3, False), (4, False), (4, True)]


def _positions(rules: Rules, seed: int, count: int) -> list[BergenState]:
    """Copies of states with a real choice from heuristic matches."""
    rng = np.random.default_rng(seed)
    agent = make_agent("heuristic")
    agent.reset(rules, 0, np.random.default_rng(seed))
    out: list[BergenState] = []
    match = 0
    while len(out) < count:
        s = BergenState(rules, seed=seed * 100 + match)
        match += 1
        while not s.terminal and len(out) < count:
            view = s.public_view(s.current_player)
            if len(view.legal_actions) > 1 and rng.random() < 0.25:
                out.append(s.clone())
            s.apply_action(agent.act(None, None, view))
    return out


@pytest.fixture(scope="module")
def random_belief(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A belief file with random weights: every property but calibration must hold for it."""
    rng = np.random.default_rng(0)
    w = [rng.normal(0, 0.3, (32, NUM_FEATURES)), rng.normal(0, 1.0, (NUM_OUTPUTS, 32))]
    b = [np.zeros(32), rng.normal(0, 1.0, NUM_OUTPUTS)]
    path = tmp_path_factory.mktemp("belief") / "random.safetensors"
    return save_belief_file(path, Rules.preset("standard"), w, b, ["tanh", "identity"])


def _networks(random_belief: Path, rules: Rules) -> list:
    nets = [read_belief_file(random_belief)]
    key = (rules.num_players, rules.partnerships)
    if key in SHIPPED:
        nets.append(read_belief_file(shipped_belief_path(rules)))
    return nets


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_marginals_and_zeros(
    random_belief: Path, preset: str, players: int, partnerships: bool
) -> None:
    """Rows sum to each tile's unseen copies, columns to the hand sizes and the boneyard, and
    nothing is placed where the public view rules it out (own hand, line, voids, lead doubles)."""
    rules = Rules.preset(preset, num_players=players, partnerships=partnerships)
    nets = _networks(random_belief, rules)
    for s in _positions(rules, seed=players + 7 * partnerships, count=12):
        view = s.public_view(s.current_player)
        hard, _ = excluded_tiles(view)
        seats = relative_seats(view)
        for net in nets:
            m = net.matrix(view)
            assert m.shape == (NUM_TILES, LOCATIONS)
            assert (m >= 0).all()
            np.testing.assert_allclose(m.sum(axis=1), view.unseen_counts, atol=1e-9)
            sizes = [view.hand_sizes[q] for q in seats] + [0] * (3 - len(seats))
            # where the sizes force tiles into one place the scaling converges slowly
            np.testing.assert_allclose(m.sum(axis=0), [*sizes, view.boneyard_size], atol=2e-3)
            p = net.probabilities(view)
            unseen = np.array(view.unseen_counts) > 0
            np.testing.assert_allclose(p.sum(axis=1)[unseen], 1.0, atol=1e-6)
            for t in range(NUM_TILES):
                if view.hand_counts[t] + view.line_counts[t] == rules.sets:  # all copies seen
                    assert not m[t].any()
                for k, q in enumerate(seats):
                    if hard[q] >> t & 1:  # a void number or a double that would have led
                        assert m[t, k] == 0.0
            if not view.boneyard_size:
                assert not m[:, BONEYARD].any()


def test_voids_and_seen_tiles_are_masked_in_a_known_position() -> None:
    """A seat that drew shows a void: no tile of the ends' numbers in its column."""
    rules = Rules.preset("standard")
    for s in _positions(rules, seed=3, count=200):
        view = s.public_view(s.current_player)
        other = 1 - view.seat
        if view.voids[other]:
            _, mask, rows, cols = belief_inputs(view)
            for t in range(NUM_TILES):
                if any(view.voids[other] >> x & 1 for x in _numbers(t)):
                    assert not mask[t, 0]
                if view.hand_counts[t] or view.line_counts[t]:
                    assert not mask[t].any()
            prior = prior_matrix(mask, rows, cols)
            assert prior[~mask].sum() == 0
            return
    pytest.fail("no position with a known void")


def _numbers(t: int) -> tuple[int, int]:
    from bergen_env.tiles import TILES

    return TILES[t]


def test_matrix_reads_the_public_view_only(random_belief: Path) -> None:
    """Two states that differ only in hidden tiles give identical inputs and beliefs."""
    from tests.test_hidden_information import hidden_swap

    rules = Rules.preset("standard")
    net = read_belief_file(random_belief)
    rng = np.random.default_rng(5)
    checked = 0
    for s in _positions(rules, seed=11, count=40):
        seat = s.current_player
        c = hidden_swap(s, seat, rng)
        if c is None or [c.hands, c.boneyard] == [s.hands, s.boneyard]:
            continue
        a, b = s.public_view(seat), c.public_view(seat)
        for x, y in zip(belief_inputs(a), belief_inputs(b)):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(net.matrix(a), net.matrix(b))
        checked += 1
    assert checked > 10


def test_matrix_is_reproducible(random_belief: Path) -> None:
    rules = Rules.preset("standard", num_players=4, partnerships=True)
    net = read_belief_file(random_belief)
    for s in _positions(rules, seed=2, count=5):
        view = s.public_view(s.current_player)
        np.testing.assert_array_equal(
            net.matrix(view), read_belief_file(random_belief).matrix(view)
        )


def _view_with_choice(rules: Rules, seed: int) -> PublicView:
    s = _positions(rules, seed=seed, count=1)[0]
    return s.public_view(s.current_player)


@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_deals_keep_sizes_and_masks_and_follow_the_matrix(
    random_belief: Path, players: int, partnerships: bool
) -> None:
    rules = Rules.preset("standard", num_players=players, partnerships=partnerships)
    view = _view_with_choice(rules, seed=players)
    net = read_belief_file(random_belief)
    matrix = net.matrix(view)
    deals = LearnedDeals(view, matrix)
    _, mask, rows, _ = belief_inputs(view)
    seats = relative_seats(view)
    rng = np.random.default_rng(1)
    counts = np.zeros((NUM_TILES, LOCATIONS))
    draws = 3000
    for _ in range(draws):
        hands, boneyard = deals.sample(rng)
        assert hands[view.seat] == list(view.hand)
        assert len(boneyard) == view.boneyard_size
        for k, q in enumerate(seats):
            assert len(hands[q]) == view.hand_sizes[q]
            for t in hands[q]:
                counts[t, k] += 1
                assert mask[t, k], f"tile {t} dealt to seat {q}, which cannot hold it"
        for t in boneyard:
            counts[t, BONEYARD] += 1
    assert deals.levels[0] == draws  # never fell back for these views
    # The deals follow the matrix (the sequential draw is close, not exact).
    np.testing.assert_allclose(counts / draws, matrix, atol=0.08)
    # ... far closer than to the count-only prior, where the two differ.
    prior = prior_matrix(mask, rows, belief_inputs(view)[3])
    far = np.abs(matrix - prior) > 0.3
    if far.any():
        assert (
            np.abs(counts / draws - matrix)[far].max() < np.abs(counts / draws - prior)[far].min()
        )


def test_impossible_belief_falls_back_to_the_prior() -> None:
    """A matrix that cannot fill the sizes (all mass on one seat) falls back, still legal."""
    rules = Rules.preset("standard")
    view = _view_with_choice(rules, seed=4)
    _, mask, rows, cols = belief_inputs(view)
    bad = np.zeros((NUM_TILES, LOCATIONS))
    bad[:, BONEYARD] = rows  # every tile in the boneyard: the other hand cannot be filled
    deals = LearnedDeals(view, bad)
    hands, boneyard = deals.sample(np.random.default_rng(0))
    assert deals.levels[1] == 1
    assert len(hands[1 - view.seat]) == view.hand_sizes[1 - view.seat]


def test_compiled_and_python_draws_agree(random_belief: Path) -> None:
    pytest.importorskip("numba")
    from bergen_env.vector.belief_playouts import draw_deal as compiled_draw

    view = _view_with_choice(Rules.preset("standard", num_players=3), seed=9)
    deals = LearnedDeals(view, read_belief_file(random_belief).matrix(view))
    a = [deals.sample(np.random.default_rng(4), draw_deal) for _ in range(3)]
    b = [deals.sample(np.random.default_rng(4), compiled_draw) for _ in range(3)]
    assert a == b


# Fives with 3-tile hands: a rotating lead, whose next hands need no double though most lack one
@pytest.mark.parametrize("rollout", ["public", "heuristic"])
@pytest.mark.parametrize(("preset", "options"), [("standard", {}), ("fives", {"hand_size": 3})])
def test_search_with_learned_belief_compiled_equals_python(
    random_belief: Path, preset: str, options: dict, rollout: str
) -> None:
    pytest.importorskip("numba")
    rules = Rules.preset(preset, **options)
    for seed in range(4):
        view = _view_with_choice(rules, seed=20 + seed)
        values, states = [], []
        for playouts in ("compiled", "python"):
            agent = make_agent(
                f"search:samples=12,belief=learned,belief_file={random_belief},"
                f"rollout={rollout},playouts={playouts}"
            )
            agent.reset(rules, view.seat, np.random.default_rng(seed))
            values.append(agent.action_values(view))
            states.append(agent.rng.bit_generator.state)
        assert values[0].keys() == values[1].keys()
        for a in values[0]:
            assert values[0][a] == pytest.approx(values[1][a])
        assert states[0] == states[1]  # the next hands' shuffles drawn alike


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_search_learned_is_legal_reproducible_and_picklable(
    preset: str, players: int, partnerships: bool
) -> None:
    rules = Rules.preset(preset, num_players=players, partnerships=partnerships)
    spec = "search:samples=4,belief=learned"
    for i, s in enumerate(_positions(rules, seed=30 + players, count=4)):
        seat = s.current_player
        view = s.public_view(seat)
        agent = make_agent(spec)
        agent.reset(rules, seat, np.random.default_rng(i))
        copy = pickle.loads(pickle.dumps(agent))
        again = make_agent(spec)
        again.reset(rules, seat, np.random.default_rng(i))
        a = agent.act(None, None, view)
        assert a in view.legal_actions
        assert copy.act(None, None, view) == a
        assert again.act(None, None, view) == a


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("search:belief=learned2", ["belief", "learned"]),
        ("search:belief=1,belief_file=x.safetensors", ["belief_file", "learned"]),
        ("search:belief=learned,power=0", ["power"]),
        ("search:belief=learned,belief_file=/nonexistent/b.safetensors", ["/nonexistent/b"]),
    ],
)
def test_bad_belief_options_are_named(spec: str, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        make_agent(spec)
    for word in words:
        assert word in str(info.value)


def test_malformed_belief_files_name_the_file(tmp_path: Path, random_belief: Path) -> None:
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\x00not a safetensors file")
    with pytest.raises(PolicyFileError, match="garbage.safetensors"):
        read_belief_file(garbage)
    policy = Path("policies/standard_2p.safetensors")
    with pytest.raises(PolicyFileError, match="standard_2p.safetensors.*bergen_belief"):
        read_belief_file(policy)
    small = tmp_path / "small.safetensors"
    from bergen_env.agents.learned_belief import HEADER_KEY
    from bergen_env.policy_file import write_network_file

    header = {
        "format": "bergen-belief",
        "version": 1,
        "rules": Rules.preset("standard").to_dict(),
        "num_features": 10,
        "network": {"layers": [{"weight": "w", "bias": "b", "activation": "identity"}]},
    }
    write_network_file(
        small, HEADER_KEY, header, [np.zeros((NUM_OUTPUTS, 10))], [np.zeros(NUM_OUTPUTS)]
    )
    with pytest.raises(PolicyFileError, match="small.safetensors.*10 features"):
        read_belief_file(small)
    with pytest.raises(ValueError, match="small.safetensors"):
        make_agent(f"search:belief=learned,belief_file={small}")
    with pytest.raises(ValueError, match=f"{NUM_FEATURES} features"):
        save_belief_file(
            tmp_path / "x",
            Rules.preset("standard"),
            [np.zeros((4, 3))],
            [np.zeros(4)],
            ["identity"],
        )


def test_belief_file_for_another_player_count_is_refused(random_belief: Path) -> None:
    agent = make_agent(f"search:belief=learned,belief_file={random_belief}")
    with pytest.raises(ValueError, match="trained for 2 players, not 3"):
        agent.reset(Rules.preset("standard", num_players=3), 0, np.random.default_rng(0))
