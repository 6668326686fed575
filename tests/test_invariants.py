"""Random-play invariants of the engine and the env over random rules, seeds and action choices.

The checking functions (``check_state``, ``check_scoring``, ``play_checked_match``) are plain
functions so ``benchmarks/soak.py`` runs the very same checks over many more matches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bergen_env import BergenState, Encoder, InvalidOptionError, Rules, raw_env
from bergen_env.actions import DOUBLE_PLAY, DRAW, NUM_PLAY_ACTIONS, PASS
from bergen_env.rules import BLOCKED_RULES, LEADS, PRESETS
from bergen_env.tiles import DOUBLE_ID, NUM_NUMBERS, NUM_TILES, PIPS, TILES

#: Every preset x seat configuration (RULES.md, "Presets").
SEATINGS = ((2, False), (3, False), (4, False), (4, True))
CONFIGS = tuple((preset, n, p) for preset in PRESETS for n, p in SEATINGS)

#: Hands after which a random match is cut off. Leftover penalties let scores fall below zero,
#: so random 4-player traditional / double_set matches can run for hundreds of hands.
MAX_HANDS = 40


# ---------------------------------------------------------------------- the checks

#: tile id of a tile on the line, in either orientation
_TILE_ID = {pair: t for t, pair in enumerate(TILES)} | {(b, a): t for t, (a, b) in enumerate(TILES)}
_BITS = tuple(1 << t for t in range(NUM_TILES))


def check_state(s: BergenState) -> None:
    """Structural invariants of a state: every tile in exactly one place, consistent caches."""
    rules = s.rules
    n = rules.num_players
    hands = s.hands
    assert len(hands) == n
    for seat, row in enumerate(hands):
        assert len(row) == NUM_TILES and min(row) >= 0 and max(row) <= rules.sets
        assert s.hand_len[seat] == sum(row), f"seat {seat}: hand_len out of sync"
        bits = sum(compress(_BITS, row))
        assert s.hand_bits[seat] == bits, f"seat {seat}: hand_bits out of sync"
    where = [sum(column) for column in zip(*hands, s.line_counts)]
    for t in s.boneyard[s.bone_pos :]:  # undrawn boneyard, reserve included
        where[t] += 1
    if where != [rules.sets] * NUM_TILES:
        wrong = [t for t in range(NUM_TILES) if where[t] != rules.sets]
        raise AssertionError(f"tiles {wrong} are not in exactly {rules.sets} place(s)")
    assert s.line_len == len(s.line) == sum(s.line_counts)
    # the line: adjacent halves match, its tiles are line_counts, its ends are end_num
    line = s.line
    on_line = [0] * NUM_TILES
    for t in map(_TILE_ID.__getitem__, line):
        on_line[t] += 1
    assert on_line == list(s.line_counts)
    assert all(x[1] == y[0] for x, y in zip(line, line[1:])), f"the line breaks: {line}"
    if s.line:
        assert (s.line[0][0], s.line[-1][1]) == tuple(s.end_num)
        assert s.end_dbl[0] == (s.line[0][0] == s.line[0][1])
        assert s.end_dbl[1] == (s.line[-1][0] == s.line[-1][1])
    assert 0 <= s.bone_pos <= len(s.boneyard)
    assert s.drawable == max(0, len(s.boneyard) - rules.reserve - s.bone_pos)
    if s.terminal:
        assert s.legal_actions() == []
        ended_by_hand = rules.single_hand and s.hand_results and s.hand_number == 0
        if ended_by_hand and not (rules.has_target and max(s.scores) >= rules.target):
            # a single-hand match: the hand's winner wins it, a tied block has no winner
            assert len(s.hand_results) == 1 and s.winner == s.hand_results[0].winner
            return
        assert s.winner is not None
        assert s.scores[s.winner] >= rules.target
        assert all(x < rules.target for k, x in enumerate(s.scores) if k != s.winner)
        return
    assert not rules.single_hand or not s.hand_results
    if rules.has_target:
        assert all(x < rules.target for x in s.scores)
    assert 0 <= s.current_player < n
    legal = s.legal_actions()
    assert legal, "the player on turn has no legal action"
    assert legal == sorted(set(legal))
    mask = s.legal_mask()
    assert mask.dtype == np.int8 and mask.shape == (rules.num_actions,)
    assert np.flatnonzero(mask).tolist() == legal
    assert all(s.is_legal(a) for a in legal)
    if s.lead_tile is not None:  # a fresh hand: the forced lead (RULES.md, "Dealing and the lead")
        assert legal == [2 * s.lead_tile]
        assert s.hands[s.current_player][s.lead_tile] >= 1
        assert s.line_len == 0 and s.bone_pos == 0 and not s.moves
        assert s.hand_len == [rules.hand_size] * n
        num = TILES[s.lead_tile][0]
        better = range(num) if rules.lead == "lowest" else range(num + 1, NUM_NUMBERS)
        assert not any(row[DOUBLE_ID[m]] for row in s.hands for m in better)
    elif not s.line_len:  # a free lead: any own tile, laid with end 0
        assert rules.lead in ("highest_any", "rotate")
        assert legal == [2 * t for t in range(NUM_TILES) if s.hands[s.current_player][t]]
        assert s.bone_pos == 0 and not s.moves
        if rules.lead == "rotate":
            assert s.current_player == s.hand_number % n
        else:
            held = [m for m in range(NUM_NUMBERS) if any(row[DOUBLE_ID[m]] for row in s.hands)]
            assert held and s.hands[s.current_player][DOUBLE_ID[max(held)]]


def _cap(header: int, need: int, end_caps: bool) -> int:
    """RULES.md's "End caps"."""
    if not end_caps:
        return header
    if need <= 2:
        return 1
    return min(header, 2) if need == 3 else header


def check_scoring(
    s: BergenState,
    mover: int,
    action: int,
    scores_before: Sequence[int],
    hand_len_before: Sequence[int],
    was_lead: bool,
    results_before: int,
    pips_after: Sequence[int] | None = None,
) -> None:
    """The score change of one action is what RULES.md allows ("Scoring during play", "End of a
    hand").

    A header (1..5) or a Fives count (1..4) for the mover's side, plus at a hand end the
    engine's ``HandResult``: domino/blocked points (or, under pip scoring, the other sides'
    pips, ``pips_after``: per side, held after the action) for the winning side and
    ``-leftover_penalty * tiles`` for the others.
    """
    rules = s.rules
    sides = rules.num_sides
    side = s.side_of[mover]
    diff = [now - old for now, old in zip(s.scores, scores_before)]
    new = s.hand_results[results_before:]
    assert len(new) <= 1, "one action ended more than one hand"
    end_points = [0] * sides
    if new:
        res = new[0]
        end_points = list(res.points)
        # tiles each side held when the hand ended
        left = [0] * sides
        for seat, size in enumerate(hand_len_before):
            left[s.side_of[seat]] += size
        if action < NUM_PLAY_ACTIONS:
            left[side] -= 1
        elif action >= DOUBLE_PLAY:
            left[side] -= 2
        elif action == DRAW:
            left[side] += 1
        if res.reason == "domino":
            assert action < NUM_PLAY_ACTIONS or action >= DOUBLE_PLAY
            assert res.seat == mover and res.winner == side
            assert hand_len_before[mover] == (2 if action >= DOUBLE_PLAY else 1)
        else:
            assert res.reason == "blocked" and res.blocked_rule == rules.blocked_rule
            assert res.winner is None or 0 <= res.winner < sides
        gain = rules.domino_points if res.reason == "domino" else rules.blocked_points
        if rules.out_scoring != "fixed" and res.winner is not None:
            assert pips_after is not None
            others = sum(p for k, p in enumerate(pips_after) if k != res.winner)
            gain = others if rules.out_scoring == "pips" else int(others / 5 + 0.5)
        # the match ends the moment the winner reaches the target: no penalties then
        reached = s.terminal and rules.has_target and max(s.scores) >= rules.target
        penalised = not reached and rules.leftover_penalty > 0
        for k in range(sides):
            expected = gain if k == res.winner else 0
            if penalised and k != res.winner:
                expected -= rules.leftover_penalty * left[k]
            assert res.points[k] == expected, f"hand result {res} expected side {k}: {expected}"
        if not s.terminal:
            assert s.hand_number == res.hand + 1
    header = [d - e for d, e in zip(diff, end_points)]
    assert all(h == 0 for k, h in enumerate(header) if k != side), f"non-mover scored: {header}"
    h = header[side]
    need = rules.target - scores_before[side]
    if action in (DRAW, PASS) or rules.play_scoring == "none":
        assert h == 0
    elif rules.play_scoring == "fives":  # a count of 5..20 (a single tile: 5 or 10 pips)
        assert h in (0, 1, 2, 3, 4)
    elif action >= DOUBLE_PLAY:
        assert h == _cap(5, need, rules.end_caps)
    elif was_lead:
        assert h == _cap(2, need, rules.end_caps)
    else:
        raw = (2, 3, 4) if rules.sets == 2 else (2, 3)
        allowed = {0} | {_cap(x, need, rules.end_caps) for x in raw}
        assert h in allowed, f"header {h} not allowed (need {need}, caps {rules.end_caps})"


def play_checked_match(
    rules: Rules,
    seed: int | np.random.Generator,
    choose: Callable[[list[int]], int],
    max_hands: int = MAX_HANDS,
    encoder: Encoder | None = None,
) -> BergenState:
    """Play one match with every check after every action; return the final state.

    ``choose(legal)`` picks the index of the action to play. With an ``encoder`` every seat's
    observation is also encoded after every action (and checked for finiteness).
    """
    s = BergenState(rules, seed=seed)
    check_state(s)
    n = rules.num_players
    steps_this_hand = 0
    hand = s.hand_number
    # per hand: every tile played or drawn at most once, at most n - 1 passes before each play
    step_bound = rules.num_tiles + rules.boneyard_size + (n - 1) * (rules.num_tiles + 1)
    while not s.terminal and s.hand_number < max_hands:
        legal = s.legal_actions()
        action = legal[choose(legal)]
        mover = s.current_player
        before = (s.scores[:], s.hand_len[:], s.lead_tile is not None, len(s.hand_results))
        pips = [0] * rules.num_sides  # per side, held after the action (before a new deal)
        for seat in range(n):
            pips[s.side_of[seat]] += sum(PIPS[t] * c for t, c in enumerate(s.hands[seat]))
        if action < NUM_PLAY_ACTIONS:
            pips[s.side_of[mover]] -= PIPS[action >> 1]
        elif action == DRAW:
            pips[s.side_of[mover]] += PIPS[s.boneyard[s.bone_pos]]
        s.apply_action(action)
        check_scoring(s, mover, action, *before, pips_after=pips)
        check_state(s)
        if encoder is not None:
            for seat in range(n):
                assert np.isfinite(encoder.observe(s, seat)).all()
        if s.hand_number != hand:
            hand, steps_this_hand = s.hand_number, 0
        else:
            steps_this_hand += 1
            assert steps_this_hand <= step_bound, "a hand does not end"
    assert s.terminal or s.hand_number >= max_hands
    return s


def random_chooser(rng: np.random.Generator) -> Callable[[list[int]], int]:
    return lambda legal: int(rng.integers(len(legal)))


# ---------------------------------------------------------------------- strategies


@st.composite
def rules_strategy(draw: st.DrawFn) -> Rules:
    """Any playable rules: a preset, a seating and a random subset of overridden options."""
    preset = draw(st.sampled_from(PRESETS))
    n, partnerships = draw(st.sampled_from(SEATINGS))
    optional = {
        "reserve": st.integers(0, 4),
        "hand_size": st.integers(1, 7),
        "voluntary_draw": st.booleans(),
        "lead": st.sampled_from(LEADS),
        "blocked_rule": st.sampled_from(BLOCKED_RULES),
        "single_hand": st.booleans(),
    }
    if preset in ("draw", "fives"):  # pip scoring: the fixed hand-end points do not apply
        optional["target"] = st.integers(0 if preset == "draw" else 1, 80)
    else:
        optional |= {
            "end_caps": st.booleans(),
            "target": st.integers(1, 30),
            "domino_points": st.integers(0, 5),
            "blocked_points": st.integers(0, 5),
            "leftover_penalty": st.integers(0, 2),
        }
    overrides = draw(st.fixed_dictionaries({}, optional=optional))
    try:
        return Rules.preset(preset, num_players=n, partnerships=partnerships, **overrides)
    except InvalidOptionError:  # e.g. hands plus reserve larger than the set
        from hypothesis import reject

        reject()


INVARIANT_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# ---------------------------------------------------------------------- tests


@INVARIANT_SETTINGS
@given(rules=rules_strategy(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_engine_invariants_with_drawn_choices(rules: Rules, seed: int, data: st.DataObject) -> None:
    """Hypothesis picks every action of the first 150 moves, a seeded Generator the rest."""
    rng = np.random.default_rng(seed)
    count = [0]

    def choose(legal: list[int]) -> int:
        count[0] += 1
        if count[0] <= 150:
            return data.draw(st.integers(0, len(legal) - 1))
        return int(rng.integers(len(legal)))

    play_checked_match(rules, seed, choose, max_hands=8, encoder=Encoder(rules))


@INVARIANT_SETTINGS
@given(rules=rules_strategy(), seed=st.integers(0, 2**32 - 1), choice_seed=st.integers(0, 2**32))
def test_engine_invariants_whole_matches(rules: Rules, seed: int, choice_seed: int) -> None:
    play_checked_match(rules, seed, random_chooser(np.random.default_rng(choice_seed)), 25)


def play_env_match(env: raw_env, seed: int, choice_seed: int) -> tuple[dict[str, float], int]:
    """Play ``env`` with random legal actions checking the AEC invariants; return total rewards."""
    rng = np.random.default_rng(choice_seed)
    env.reset(seed=seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            assert all(env.terminations[a] or env.truncations[a] for a in env.agents)
            for a in env.agents:
                assert not env.observe(a)["action_mask"].any()
            env.step(None)
            continue
        masks = {a: env.observe(a)["action_mask"] for a in env.agents}
        on_turn = [a for a, m in masks.items() if m.any()]
        assert on_turn == [agent], f"agents with a legal move: {on_turn}, selected {agent}"
        assert agent == f"player_{env.game.current_player}"
        env.step(int(rng.choice(np.flatnonzero(masks[agent]))))
        steps += 1
        assert sum(env.rewards.values()) == pytest.approx(0.0, abs=1e-9)
        for a, r in env.rewards.items():
            totals[a] += r
    return totals, steps


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rules=rules_strategy(),
    reward=st.sampled_from(["match", "points"]),
    max_hands=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    choice_seed=st.integers(0, 2**32 - 1),
)
def test_env_turns_rewards_and_termination(
    rules: Rules, reward: str, max_hands: int, seed: int, choice_seed: int
) -> None:
    env = raw_env(rules=rules, reward=reward, max_hands=max_hands)
    game_totals, _ = play_env_match(env, seed, choice_seed)
    game = env.game
    assert sum(game_totals.values()) == pytest.approx(0.0, abs=1e-9)
    if game.terminal:
        assert all(env.terminations.values()) and not any(env.truncations.values())
    else:
        assert all(env.truncations.values()) and game.hand_number == max_hands
    sides = rules.num_sides
    for seat, agent in enumerate(env.possible_agents):
        own = game.side_of[seat]
        if reward == "match":
            expected = game.returns()[seat]
            if game.terminal and game.winner is None:  # a single hand that ends tied
                assert expected == 0.0 and rules.single_hand
            elif game.terminal:
                assert expected == (1.0 if own == game.winner else -1.0 / (sides - 1))
        else:  # dense: own side's points minus the mean of the other sides'
            others = sum(game.scores) - game.scores[own]
            expected = game.scores[own] - others / (sides - 1)
        assert game_totals[agent] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("preset", "num_players", "partnerships"), CONFIGS)
def test_many_random_matches(preset: str, num_players: int, partnerships: bool) -> None:
    """250 engine-level random matches per configuration: tiles conserved, every match ends."""
    rules = Rules.preset(preset, num_players=num_players, partnerships=partnerships)
    rng = np.random.default_rng([num_players, partnerships, PRESETS.index(preset)])
    ended = 0
    for _ in range(250):
        s = BergenState(rules, seed=rng)
        hand, steps = 0, 0
        while not s.terminal and s.hand_number < MAX_HANDS:
            legal = s.legal_actions()
            assert legal
            s.apply_action(legal[int(rng.integers(len(legal)))])
            if s.hand_number != hand:
                hand, steps = s.hand_number, 0
                check_state(s)
            steps += 1
            assert steps <= rules.num_tiles + rules.boneyard_size + 3 * (rules.num_tiles + 1)
        check_state(s)
        ended += s.terminal
    assert ended > 0
