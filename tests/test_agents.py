"""Scripted agents: legality everywhere, strings, determinism, hidden information, tactics."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest

from bergen_env.actions import DOUBLE_PLAY, NUM_PLAY_ACTIONS, parse_action
from bergen_env.agents import (
    GreedyAgent,
    HeuristicAgent,
    RandomAgent,
    SearchAgent,
    make_agent,
    registered_agents,
)
from bergen_env.agents.belief import BeliefModel
from bergen_env.agents.play_outcomes import play_outcome
from bergen_env.engine import BergenState, PublicView
from bergen_env.hidden_tiles import (
    HiddenTileSampler,
    excluded_tiles,
    inferred_voids,
    public_voids,
)
from bergen_env.observation import Encoder
from bergen_env.rules import PRESETS, Rules
from bergen_env.tiles import IS_DOUBLE, NUM_TILES, NUMBER_BITS, parse_tile

AGENT_SPECS = [
    "random",
    "greedy",
    "heuristic",
    "tuned",
    "search:samples=4",
    "search:samples=3,rollout=random",
    "search:samples=3,rollout=greedy",
    "search:samples=2,rollout=heuristic",
    "search:samples=4,belief=1,candidates=3,temperature=0.2",
    "search:samples=3,rollout=heuristic,belief=1,candidates=2",
    "search:samples=6,rollout=heuristic,belief=1,batch=2",  # the strongest, made small
    "search:samples=6,rollout=heuristic,belief=1,batch=2,prune=true",
    "search:samples=6,rollout=heuristic,belief=1,batch=2,prune=true,history=sampled",
]
SEATINGS = [(2, False), (3, False), (4, False), (4, True)]


def _rules(preset: str, players: int, partnerships: bool) -> Rules:
    return Rules.preset(preset, num_players=players, partnerships=partnerships)


def _positions(rules: Rules, seed: int, count: int, min_legal: int = 1) -> list[BergenState]:
    """Copies of states at decisions of random matches (``min_legal`` legal actions or more)."""
    rng = np.random.default_rng(seed)
    out: list[BergenState] = []
    match = 0
    while len(out) < count:
        s = BergenState(rules, seed=seed * 1000 + match)
        match += 1
        while not s.terminal and len(out) < count:
            legal = s.legal_actions()
            if len(legal) >= min_legal and rng.random() < 0.3:
                out.append(s.clone())
            s.apply_unchecked(legal[rng.integers(len(legal))])
    return out


def _act(agent, s: BergenState, encoder: Encoder | None = None) -> int:
    p = s.current_player
    obs = encoder.observe(s, p) if encoder is not None else np.zeros(1, dtype=np.float32)
    return agent.act(obs, s.legal_mask(), s.public_view(p))


def _ready(spec: str, rules: Rules, seat: int, seed: int = 0):
    agent = make_agent(spec)
    agent.reset(rules, seat, np.random.default_rng(seed))
    return agent


# ---------------------------------------------------------------------- registry and strings


def test_kinds_registered() -> None:
    assert {"random", "greedy", "heuristic", "tuned", "search"} <= set(registered_agents())


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("random", RandomAgent),
        ("greedy", GreedyAgent),
        ("heuristic", HeuristicAgent),
        ("heuristic:threat=1.5,shed=0", HeuristicAgent),
        ("search", SearchAgent),
        ("search:samples=8", SearchAgent),
        ("search:samples=50,budget_ms=20,rollout=random", SearchAgent),
        ("search:belief=1,temperature=0.2,candidates=6", SearchAgent),
    ],
)
def test_make_agent(spec: str, cls: type) -> None:
    agent = make_agent(spec)
    assert isinstance(agent, cls)
    assert agent.name == spec


def test_search_parameters() -> None:
    agent = make_agent("search:samples=8,budget_ms=2.5,rollout=random")
    assert (agent.samples, agent.budget_ms, agent.rollout) == (8, 2.5, "random")
    default = make_agent("search")
    assert (default.samples, default.budget_ms, default.rollout) == (200, None, "public")
    belief = make_agent("search:belief=1,temperature=0.2,candidates=6,samples=30")
    assert (belief.belief, belief.temperature, belief.candidates, belief.samples) == (
        1,
        0.2,
        6,
        30,
    )


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("minimax", ["unknown agent 'minimax'"]),
        ("search:sample=8", ["'search:sample=8'", "sample"]),
        ("search:samples=0", ["'search:samples=0'", "samples"]),
        ("search:samples=2.5", ["'search:samples=2.5'", "samples"]),
        ("search:budget_ms=-1", ["'search:budget_ms=-1'", "budget_ms"]),
        ("search:rollout=smart", ["'search:rollout=smart'", "rollout"]),
        ("search:belief=2", ["'search:belief=2'", "belief"]),
        ("search:belief=1,temperature=0", ["temperature"]),
        ("search:belief=1,temperature=-0.5", ["temperature"]),
        ("search:partner_temperature=0.5", ["partner_temperature", "belief=1"]),
        ("search:belief=1,partner_temperature=0", ["partner_temperature"]),
        ("search:belief=learned", ["'search:belief=learned'", "belief"]),
        ("search:power=2", ["'search:power=2'", "power"]),
        ("search:history=sampled", ["history", "belief=1"]),
        ("search:belief=1,history=all", ["history", "'all'"]),
        ("search:candidates=0", ["'search:candidates=0'", "candidates"]),
        ("search:candidates=1.5", ["candidates"]),
        ("heuristic:threat=-1", ["'heuristic:threat=-1'", "threat"]),
        ("greedy:depth=2", ["'greedy:depth=2'", "depth"]),
        ("random:seed=1", ["'random:seed=1'", "seed"]),
    ],
)
def test_make_agent_errors_name_the_agent(spec: str, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        make_agent(spec)
    for word in words:
        assert word in str(info.value)


# ---------------------------------------------------------------------- legality everywhere


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_agents_play_only_legal_actions(preset: str, players: int, partnerships: bool) -> None:
    rules = _rules(preset, players, partnerships)
    encoder = Encoder(rules)
    states = _positions(rules, seed=players * 10 + partnerships, count=25)
    for spec in AGENT_SPECS:
        for i, s in enumerate(states):
            agent = _ready(spec, rules, s.current_player, seed=i)
            a = _act(agent, s, encoder)
            assert isinstance(a, int)
            assert s.is_legal(a), f"{spec} chose illegal {a} in {s!r}"


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_full_matches_between_agents(preset: str, players: int, partnerships: bool) -> None:
    """A mix of agents at one table plays many hands (``apply_action`` validates every move).

    Some tables never reach the target (leftover penalties in 4-player double_set push every
    score down), so this plays up to 3,000 moves rather than requiring the match to end.
    """
    rules = _rules(preset, players, partnerships)
    specs = ["heuristic", "greedy", "search:samples=2", "random"][:players]
    s = BergenState(rules, seed=7)
    agents = [_ready(spec, rules, seat, seed=seat) for seat, spec in enumerate(specs)]
    for _ in range(3000):
        if s.terminal:
            break
        s.apply_action(_act(agents[s.current_player], s))
    assert (s.terminal and s.winner is not None) or s.hand_number >= 10


# ---------------------------------------------------------------------- determinism, pickling


def _match_actions(specs: list[str], rules: Rules, seed: int) -> list[int]:
    s = BergenState(rules, seed=seed)
    agents = [_ready(spec, rules, seat, seed=100 + seat) for seat, spec in enumerate(specs)]
    actions = []
    while not s.terminal:
        a = _act(agents[s.current_player], s)
        actions.append(a)
        s.apply_action(a)
    return actions


@pytest.mark.parametrize("spec", AGENT_SPECS)
def test_same_seed_same_actions(spec: str) -> None:
    rules = Rules.preset("standard")
    first = _match_actions([spec, spec], rules, seed=3)
    assert first == _match_actions([spec, spec], rules, seed=3)


@pytest.mark.parametrize("spec", AGENT_SPECS)
def test_agents_pickle_mid_match(spec: str) -> None:
    """A pickled agent (as sent to a worker process) continues exactly like the original."""
    rules = Rules.preset("traditional", num_players=3)
    for s in _positions(rules, seed=5, count=5, min_legal=2):
        agent = _ready(spec, rules, s.current_player, seed=11)
        copy = pickle.loads(pickle.dumps(agent))
        assert _act(agent, s) == _act(copy, s)


# ---------------------------------------------------------------------- hidden information


def _reshuffle_hidden(s: BergenState, seat: int, rng: np.random.Generator) -> BergenState | None:
    """A copy of ``s`` where the tiles ``seat`` cannot see are permuted among the other hands and
    the undrawn boneyard, sizes and known voids kept; None if no different valid split was found.
    """
    others = [q for q in range(s.num_players) if q != seat]
    hidden = [t for q in others for t in s.hand_tiles(q)] + s.boneyard[s.bone_pos :]
    original = [sorted(s.hand_tiles(q)) for q in others] + [s.boneyard[s.bone_pos :]]
    for _ in range(2000):
        order = rng.permutation(hidden).tolist()
        split, k = [], 0
        for q in others:
            split.append(order[k : k + s.hand_len[q]])
            k += s.hand_len[q]
        bone = order[k:]
        if any(NUMBER_BITS[t] & s.voids[q] for q, h in zip(others, split) for t in h):
            continue
        if [sorted(h) for h in split] + [bone] == original:
            continue
        c = s.clone()
        for q, h in zip(others, split):
            row = [0] * NUM_TILES
            for t in h:
                row[t] += 1
            c.hands[q] = row
            c.hand_bits[q] = sum(1 << t for t in set(h))
        c.boneyard = s.boneyard[: s.bone_pos] + bone
        return c
    return None


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), [(2, False), (3, False), (4, True)])
def test_decisions_ignore_hidden_tiles(preset: str, players: int, partnerships: bool) -> None:
    rules = _rules(preset, players, partnerships)
    encoder = Encoder(rules)
    rng = np.random.default_rng(99)
    checked = 0
    for s in _positions(rules, seed=21, count=12, min_legal=2):
        seat = s.current_player
        c = _reshuffle_hidden(s, seat, rng)
        if c is None:
            continue
        assert [c.hand_tiles(q) for q in range(players)] != [
            s.hand_tiles(q) for q in range(players)
        ] or c.boneyard != s.boneyard
        assert c.public_view(seat) == s.public_view(seat)
        np.testing.assert_array_equal(encoder.observe(c, seat), encoder.observe(s, seat))
        for spec in AGENT_SPECS:
            a = _act(_ready(spec, rules, seat, seed=5), s, encoder)
            b = _act(_ready(spec, rules, seat, seed=5), c, encoder)
            assert a == b, f"{spec} changed its move when hidden tiles were reshuffled"
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
@pytest.mark.parametrize("voluntary_draw", [False, True])
def test_inferred_voids_are_true(
    preset: str, players: int, partnerships: bool, voluntary_draw: bool
) -> None:
    """Voids read from the move history (and excluded tiles) never deny a tile a seat holds."""
    rules = _rules(preset, players, partnerships).replace(voluntary_draw=voluntary_draw)
    for s in _positions(rules, seed=17, count=300):
        view = s.public_view(s.current_player)
        voids = inferred_voids(view)
        for q in range(players):
            assert voids[q] & view.voids[q] == view.voids[q]
            if q != view.seat:
                assert not any(NUMBER_BITS[t] & voids[q] for t in s.hand_tiles(q))
        hard, _ = excluded_tiles(view)
        for q in range(players):
            assert not any(hard[q] >> t & 1 for t in s.hand_tiles(q) if q != view.seat)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_public_voids_are_the_engines(preset: str, players: int, partnerships: bool) -> None:
    """The voids read from a hand's moves are the ones the engine shows every seat."""
    rules = _rules(preset, players, partnerships).replace(voluntary_draw=False)
    for s in _positions(rules, seed=23, count=200):
        view = s.public_view(s.current_player)
        assert public_voids(rules, view.moves) == view.voids


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("players", "partnerships"), SEATINGS)
def test_sampler_respects_view(preset: str, players: int, partnerships: bool) -> None:
    """Determinizations keep hand sizes, the unseen multiset, voids, and the view itself."""
    rules = _rules(preset, players, partnerships)
    rng = np.random.default_rng(4)
    for s in _positions(rules, seed=8, count=20):
        view = s.public_view(s.current_player)
        sampler = HiddenTileSampler(view)
        for _ in range(5):
            hands, bone = sampler.sample(rng)
            assert [len(h) for h in hands] == list(view.hand_sizes)
            assert len(bone) == view.boneyard_size
            assert hands[view.seat] == list(view.hand)
            seen = [0] * NUM_TILES
            for q, h in enumerate(hands):
                if q != view.seat:
                    for t in h:
                        seen[t] += 1
            for t in bone:
                seen[t] += 1
            assert tuple(seen) == view.unseen_counts
            if not sampler.relaxed:
                for q, h in enumerate(hands):
                    assert not any(sampler.excluded[q] >> t & 1 for t in h)
            det = BergenState.from_view(view, hands, bone, rng)
            assert det.public_view(view.seat) == view


# ---------------------------------------------------------------------- tactics


def _header_position() -> BergenState:
    """2-player standard: after [0|0], [0|5]>right, [2|5]>right seat 1 holds [0|2] on ends 0/2.

    ``[0|2]>right`` makes a triple header (the left end is the double [0|0]): 3 points;
    ``[0|2]>left`` a double header: 2 points; ``[2|6]>right`` scores nothing.
    """
    hands = [
        ["[0|0]", "[2|5]", "[3|4]", "[4|4]", "[1|3]", "[1|4]"],
        ["[0|5]", "[0|2]", "[6|6]", "[3|6]", "[1|6]", "[2|6]"],
    ]
    used = {parse_tile(t) for h in hands for t in h}
    bone = [t for t in range(NUM_TILES) if t not in used]
    s = BergenState(Rules.preset("standard"), seed=0, deals=[{"hands": hands, "boneyard": bone}])
    for text in ("[0|0]>left", "[0|5]>right", "[2|5]>right"):
        s.apply_action(parse_action(text))
    assert s.current_player == 1
    return s


def test_greedy_takes_the_best_header() -> None:
    s = _header_position()
    view = s.public_view(1)
    assert set(view.legal_actions) == {
        parse_action(x) for x in ("[0|2]>left", "[0|2]>right", "[2|6]>right")
    }
    assert play_outcome(view, parse_action("[0|2]>right")).points == 3
    assert _act(_ready("greedy", s.rules, 1), s) == parse_action("[0|2]>right")


@pytest.mark.parametrize(
    "spec", ["greedy", "heuristic", "search:samples=8", "search:samples=4,rollout=random"]
)
def test_agents_take_a_winning_header(spec: str) -> None:
    """With 14 of 15 points any header wins (capped to 1 point): every agent but random takes it."""
    s = _header_position()
    s.scores[1] = 14
    a = _act(_ready(spec, s.rules, 1), s)
    assert a in {parse_action("[0|2]>left"), parse_action("[0|2]>right")}


@pytest.mark.parametrize("preset", [p for p in PRESETS if not Rules.preset(p).single_hand])
@pytest.mark.parametrize("spec", ["greedy", "heuristic", "search:samples=6"])
def test_agents_take_a_winning_play(preset: str, spec: str) -> None:
    """Whenever a play (header or domino) wins the match now, the agent plays a winning one.

    (Draw is left out: its only winning play is going out with the last tile, never a choice.)
    """
    rules = Rules.preset(preset)
    found = 0
    for s in _positions(rules, seed=31, count=800, min_legal=2):
        view = s.public_view(s.current_player)
        wins = {
            a
            for a in view.legal_actions
            if (a < NUM_PLAY_ACTIONS or a >= DOUBLE_PLAY) and play_outcome(view, a).wins
        }
        if wins and len(wins) < len(view.legal_actions):
            found += 1
            assert _act(_ready(spec, rules, s.current_player), s) in wins
    assert found >= 3


@pytest.mark.parametrize("preset", PRESETS)
def test_greedy_scores_the_most_points(preset: str) -> None:
    rules = Rules.preset(preset, num_players=3)
    for s in _positions(rules, seed=2, count=150, min_legal=2):
        view = s.public_view(s.current_player)
        plays = [a for a in view.legal_actions if a < NUM_PLAY_ACTIONS or a >= DOUBLE_PLAY]
        if not plays:
            continue
        best = max(play_outcome(view, a).points for a in plays)
        a = _act(_ready("greedy", rules, s.current_player), s)
        assert play_outcome(view, a).points == best


def test_heuristic_keeps_doubles_under_most_doubles() -> None:
    """The same positions: under most_doubles the heuristic plays a double far less often."""
    rules = Rules.preset("traditional")
    german = rules.replace(blocked_rule="german")
    agent = HeuristicAgent()
    chose = {"most_doubles": 0, "german": 0}
    total = 0
    for s in _positions(rules, seed=13, count=600, min_legal=2):
        view = s.public_view(s.current_player)
        plays = [a for a in view.legal_actions if a < NUM_PLAY_ACTIONS]
        kinds = {IS_DOUBLE[a >> 1] for a in plays}
        if kinds != {True, False}:
            continue
        total += 1
        for name, r in (("most_doubles", rules), ("german", german)):
            v: PublicView = dataclasses.replace(view, rules=r)
            agent.reset(r, view.seat, np.random.default_rng(0))
            chose[name] += IS_DOUBLE[agent.act(np.zeros(1), s.legal_mask(), v) >> 1]
    assert total >= 20
    assert chose["most_doubles"] < 0.5 * total < chose["german"]


def test_search_budget_stops_sampling() -> None:
    """A time budget ends the sampling loop: a million samples with 1 ms still returns a move."""
    s = _header_position()
    agent = _ready("search:samples=1000000,budget_ms=1", s.rules, 1)
    assert s.is_legal(_act(agent, s))


@pytest.mark.parametrize("spec", ["search", "heuristic", "greedy", "random"])
def test_forced_move_is_immediate(spec: str) -> None:
    """With a single legal action it is returned without touching the RNG."""
    rules = Rules.preset("standard")
    s = next(x for x in _positions(rules, seed=3, count=200) if len(x.legal_actions()) == 1)
    agent = _ready(spec, rules, s.current_player)
    before = agent.rng.bit_generator.state
    assert _act(agent, s) == s.legal_actions()[0]
    assert agent.rng.bit_generator.state == before


def test_random_is_uniform() -> None:
    s = _header_position()  # three legal actions
    agent = _ready("random", s.rules, 1, seed=0)
    counts = {a: 0 for a in s.legal_actions()}
    for _ in range(900):
        counts[_act(agent, s)] += 1
    assert all(250 <= c <= 350 for c in counts.values()), counts


# ---------------------------------------------------------------------- belief over hidden tiles


def _declined_header_view() -> tuple[PublicView, list[list[int]]]:
    """Seat 1 held ``[0|2]`` on ends 0/2 (a triple header) and played ``[2|6]>right`` instead.

    Returns seat 0's view and the true hands (seat 1 still holds ``[0|2]``).
    """
    hands = [
        ["[0|0]", "[2|5]", "[3|4]", "[4|4]", "[1|3]", "[1|4]"],
        ["[0|5]", "[0|2]", "[6|6]", "[3|6]", "[1|6]", "[2|6]"],
    ]
    used = {parse_tile(t) for h in hands for t in h}
    bone = [t for t in range(NUM_TILES) if t not in used]
    s = BergenState(Rules.preset("standard"), seed=0, deals=[{"hands": hands, "boneyard": bone}])
    for text in ("[0|0]>left", "[0|5]>right", "[2|5]>right", "[2|6]>right"):
        s.apply_action(parse_action(text))
    assert s.current_player == 0
    return s.public_view(0), [s.hand_tiles(0), s.hand_tiles(1)]


@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0])
def test_belief_doubts_a_declined_header(temperature: float) -> None:
    """A deal where seat 1 skipped a header it held weighs less than one where it had none."""
    view, hands = _declined_header_view()
    held = hands[1]
    assert parse_tile("[0|2]") in held
    # The same hand with [3|3] (in the boneyard) instead of [0|2]: [2|6] was its only play.
    other = [parse_tile("[3|3]") if t == parse_tile("[0|2]") else t for t in held]
    model = BeliefModel(view, temperature)
    assert [d.index for d in model.decisions] == [1, 3]
    declined = model.log_weight([hands[0], held])
    unable = model.log_weight([hands[0], other])
    assert declined < unable - 1.0
    assert unable <= 0.0


@pytest.mark.parametrize(("players", "partnerships"), [(2, False), (3, False), (4, True)])
def test_belief_rebuilds_past_hands_exactly(players: int, partnerships: bool) -> None:
    """Every scored play is another seat's, and its rebuilt hand is the hand it really held."""
    rules = _rules("standard", players, partnerships)
    rng = np.random.default_rng(6)
    scored = 0
    for match in range(4):
        s = BergenState(rules, seed=40 + match)
        held: list[list[int]] = []  # the mover's true hand before each move of this hand
        hand = s.hand_number
        while not s.terminal:
            if s.hand_number != hand:
                held, hand = [], s.hand_number
            view = s.public_view(s.current_player)
            model = BeliefModel(view, 0.5)
            truth = [s.hand_tiles(q) for q in range(players)]
            for d in model.decisions:
                seat, action = view.moves[d.index]
                assert (seat, action) == (d.seat, d.action) and seat != view.seat and d.index > 0
                rebuilt = list(d.played_since)
                for t in truth[seat]:
                    rebuilt[t] += 1
                assert rebuilt == held[d.index]
                assert sum(rebuilt) == d.view.hand_sizes[seat]
                scored += 1
            assert np.isfinite(model.log_weight(truth))
            held.append(list(s.hands[s.current_player]))
            legal = s.legal_actions()
            s.apply_unchecked(legal[rng.integers(len(legal))])
    assert scored > 50


@pytest.mark.parametrize(("players", "partnerships"), [(2, False), (3, False), (4, True)])
def test_belief_rebuilds_the_views_the_heuristic_saw(players: int, partnerships: bool) -> None:
    """Between heuristic seats, each scored play's rebuilt view is the mover's view then (the
    scores too while no header of the hand could have met an end cap), and under it the true
    hand makes the play the heuristic's best: it keeps its weight as the temperature falls."""
    rules = _rules("standard", players, partnerships)
    seats = [HeuristicAgent() for _ in range(players)]
    fields = ("ends", "end_doubles", "hand_sizes", "boneyard_size", "drawable", "voids")
    scored = 0
    for match in range(3):
        s = BergenState(rules, seed=70 + match)
        seen: dict[int, PublicView] = {}  # this hand's views of the movers, by move index
        hand = s.hand_number
        while not s.terminal:
            if s.hand_number != hand:
                seen, hand = {}, s.hand_number
            view = s.public_view(s.current_player)
            seen[len(view.moves)] = view
            model = BeliefModel(view, 0.01)
            truth = [s.hand_tiles(q) for q in range(players)]
            uncapped = max(view.scores) < rules.target - 3
            for d in model.decisions:
                then = seen[d.index]
                assert [getattr(d.view, f) for f in fields] == [getattr(then, f) for f in fields]
                assert not uncapped or d.view.scores == then.scores
                counts = list(d.played_since)
                for t in truth[d.seat]:
                    counts[t] += 1
                if uncapped:  # the true play is the best (ties share the probability)
                    assert model._log_prob(d, counts, rules.sets) > -math.log(4)
                scored += 1
            s.apply_action(seats[s.current_player].act(None, None, view))
    assert scored > 50


PARTNER_SPEC = "search:samples=6,rollout=heuristic,belief=1,batch=2,partner_temperature=2"


def test_partner_temperature_needs_partners() -> None:
    agent = make_agent(PARTNER_SPEC)
    for players in (2, 3, 4):
        with pytest.raises(ValueError, match="partner_temperature.*partners") as info:
            agent.reset(_rules("standard", players, False), 0, np.random.default_rng(0))
        assert PARTNER_SPEC in str(info.value)
    agent.reset(_rules("standard", 4, True), 0, np.random.default_rng(0))


@pytest.mark.parametrize("preset", PRESETS)
def test_partner_temperature_agent_plays_full_matches(preset: str) -> None:
    """Under every preset, in partnerships: legal, reproducible, picklable mid-match."""
    rules = _rules(preset, 4, True)
    specs = [PARTNER_SPEC, "heuristic", PARTNER_SPEC, "greedy"]
    s = BergenState(rules, seed=9)
    agents = [_ready(spec, rules, seat, seed=seat) for seat, spec in enumerate(specs)]
    twins = [_ready(spec, rules, seat, seed=seat) for seat, spec in enumerate(specs)]
    for move in range(400):
        if s.terminal:
            break
        seat = s.current_player
        if move == 200:
            agents = [pickle.loads(pickle.dumps(a)) for a in agents]
        a = _act(agents[seat], s)
        assert a == _act(twins[seat], s)
        s.apply_action(a)


def test_partner_plays_are_scored_with_the_partner_temperature() -> None:
    """In partnerships, a partner's plays are scored at ``partner_temperature`` and the
    opponents' at ``temperature``; without it (or with it equal) every play at ``temperature``."""
    rules = _rules("standard", 4, True)
    kinds = set()
    for s in _positions(rules, seed=8, count=40, min_legal=2):
        view = s.public_view(s.current_player)
        truth = [s.hand_tiles(q) for q in range(4)]
        cold = BeliefModel(view, 0.3)
        assert cold.log_weight(truth) == BeliefModel(view, 0.3, partner_temperature=0.3).log_weight(
            truth
        )
        loose = BeliefModel(view, 0.3, partner_temperature=2.0)
        warm = BeliefModel(view, 2.0)
        for d, c, w in zip(loose.decisions, cold.decisions, warm.decisions, strict=True):
            partner = rules.side_of[d.seat] == rules.side_of[view.seat]
            kinds.add(partner)
            assert d.temperature == (2.0 if partner else 0.3)
            counts = list(d.played_since)
            for t in truth[d.seat]:
                counts[t] += 1
            expected = (warm if partner else cold)._log_prob(
                w if partner else c, counts, rules.sets
            )
            assert loose._log_prob(d, counts, rules.sets) == expected
    assert kinds == {True, False}


def test_belief_resampling_is_reproducible_and_uses_the_view_only() -> None:
    view, hands = _declined_header_view()
    rules = Rules.preset("standard")
    values = []
    for _ in range(2):
        agent = _ready("search:samples=20,belief=1,temperature=0.2", rules, 0, seed=3)
        values.append(agent.action_values(view))
    assert values[0] == values[1]
    agent = _ready("search:samples=20,belief=1,temperature=0.2", rules, 0, seed=3)
    deals = agent._weighted_deals(BeliefModel(view, 0.2), HiddenTileSampler(view), 20)
    assert len(deals) == 20
    # Resampling moves mass to deals that explain seat 1's plays better than uniform ones.
    model = BeliefModel(view, 0.2)
    rng = np.random.default_rng(3)
    plain = HiddenTileSampler(view)
    prior = np.mean([model.log_weight(plain.sample(rng)[0]) for _ in range(400)])
    posterior = np.mean([model.log_weight(hands) for hands, _ in deals])
    assert posterior > prior


class _FirstMove(Exception):
    pass


class _StopAtFirstMove(BergenState):
    __slots__ = ()

    def apply_unchecked(self, a: int) -> None:
        raise _FirstMove(a)


def _first_rollout_move(s: BergenState, rollout: str) -> int:
    """The first action the ``rollout`` policy of search takes from ``s`` (on a clone)."""
    from bergen_env.agents.search import greedy_rollout, heuristic_rollout

    c = s.clone()
    c.__class__ = _StopAtFirstMove
    with pytest.raises(_FirstMove) as taken:
        if rollout == "heuristic":
            heuristic_rollout(c, c.hand_number, HeuristicAgent())
        else:
            greedy_rollout(c, c.hand_number, clairvoyant=rollout == "greedy")
    return taken.value.args[0]


@pytest.mark.parametrize("preset", PRESETS)
def test_public_rollout_ignores_hidden_tiles(preset: str) -> None:
    """Re-dealing the tiles hidden from the player on turn never changes the public or heuristic
    rollout's move (the latter is the heuristic agent's choice); the greedy (clairvoyant)
    rollout's move does change for some positions (it reads them)."""
    rules = Rules.preset(preset)
    rng = np.random.default_rng(5)
    clairvoyant_changed = 0
    for s in _positions(rules, seed=17, count=300, min_legal=2):
        view = s.public_view(s.current_player)
        sampler = HiddenTileSampler(view)
        deals = [BergenState.from_view(view, *sampler.sample(rng), rng) for _ in range(6)]
        assert len({_first_rollout_move(d, "public") for d in deals}) == 1
        heuristic = {_first_rollout_move(d, "heuristic") for d in deals}
        assert heuristic == {HeuristicAgent().act(None, None, view)}
        clairvoyant_changed += len({_first_rollout_move(d, "greedy") for d in deals}) > 1
    assert clairvoyant_changed > 0
