"""``BeliefModel(history="sampled")``: every past play of the others scored, with the order of
their draws sampled per deal by a walk back from the sampled hand. Checked against a brute-force
enumeration of the histories a deal allows, and against the true deals of played matches."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import islice

import numpy as np
import pytest

from bergen_env import BergenState, Rules
from bergen_env.actions import DRAW, PASS
from bergen_env.agents import belief as belief_module
from bergen_env.agents.belief import (
    DRAW_SLOT,
    KNOWN_DRAW,
    PLAY,
    BeliefModel,
    SeatHistory,
)
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.engine import PublicView
from bergen_env.hidden_tiles import HiddenTileSampler
from bergen_env.tiles import NUM_TILES

SEATINGS = [("standard", 2, False), ("standard", 3, False), ("standard", 4, True)]
SEATINGS += [("double_set", 2, False), ("fives", 3, False), ("draw", 4, False)]
SEATINGS += [("traditional", 4, True)]


def _id(config: tuple) -> str:
    preset, n, partners = config
    return f"{preset}-{n}p" + ("-partners" if partners else "")


def _views(rules: Rules, seed: int, matches: int) -> Iterator[tuple[PublicView, list[list[int]]]]:
    """Views of the seat on turn (with the true hands) in matches where each move is the
    heuristic's or a random one, half and half: plays the heuristic would not make too."""
    rng = np.random.default_rng(seed)
    agent = HeuristicAgent()
    for match in range(matches):
        s = BergenState(rules, seed=seed + match)
        while not s.terminal:
            view = s.public_view(s.current_player)
            yield view, [s.hand_tiles(q) for q in range(rules.num_players)]
            if rng.random() < 0.5:
                s.apply_action(agent.act(None, None, view))
            else:
                legal = s.legal_actions()
                s.apply_action(legal[rng.integers(len(legal))])


def _blocked(h: SeatHistory, index: int) -> int:
    return sum(mask for i, mask in h.voids if i == index)


def _histories(model: BeliefModel, h: SeatHistory, hand: list[int]) -> Iterator[float]:
    """Brute force: the likelihood of the seat's plays under every history of its draws that
    the deal allows, checked move by move against the voids (no deadlines, no pruning)."""
    passes = {i for i, _ in h.voids} - {i for _, i, *_ in h.events} - {0}
    steps = sorted([(e[1], e) for e in h.events] + [(i, None) for i in passes], reverse=True)

    def walk(step: int, tiles: list[int], weight: float) -> Iterator[float]:
        if step == len(steps):
            if not any(_blocked(h, 0) >> t & 1 for t in tiles):  # the lead's doubles
                yield weight
            return
        index, event = steps[step]
        if event is None:  # a pass: the seat held no tile that fit
            if not any(_blocked(h, index) >> t & 1 for t in tiles):
                yield from walk(step + 1, tiles, weight)
            return
        kind, _, t0, t1, k = event
        if kind == PLAY:
            tiles = tiles + [t for t in (t0, t1) if t >= 0]
            if k >= 0:
                counts = [0] * NUM_TILES
                for t in tiles:
                    counts[t] += 1
                weight += model._cached(model.decisions[k], counts)
            yield from walk(step + 1, tiles, weight)
            return
        if kind == KNOWN_DRAW:
            rest = list(tiles)
            rest.reverse()
            rest.remove(t0)
            rest.reverse()
            options = [rest]
        else:  # any tile that did not fit may have been drawn here
            options = [
                tiles[:j] + tiles[j + 1 :]
                for j, t in enumerate(tiles)
                if not _blocked(h, index) >> t & 1
            ]
        for rest in options:
            if not any(_blocked(h, index) >> t & 1 for t in rest):
                yield from walk(step + 1, rest, weight)

    yield from walk(0, list(hand), 0.0)


class _Picker:
    """Stands in for both the walk's rng and its ``_draw_choices``: each draw with 2 or more
    choices takes the one ``picks`` names (then the first), and the choice counts are kept."""

    def __init__(self, picks: list[int]) -> None:
        self.picks = list(picks)
        self.sizes: list[int] = []
        self.next = 0.0
        self.original = belief_module._draw_choices

    def choices(self, *args):
        choices = self.original(*args)
        if len(choices) > 1:
            depth = len(self.sizes)
            pick = self.picks[depth] if depth < len(self.picks) else 0
            self.sizes.append(len(choices))
            self.next = (pick + 0.5) / len(choices)
        return choices

    def random(self) -> float:
        return self.next


def _walk_tree(
    model: BeliefModel, h: SeatHistory, hand: list[int], monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[float, float]]:
    """Every leaf of the walk's random choices: ``(probability of the branch, log-weight)``."""
    pending: list[list[int]] = [[]]  # a branch: the choice taken at each draw with 2 or more
    while pending:
        picks = pending.pop()
        picker = _Picker(picks)
        monkeypatch.setattr(belief_module, "_draw_choices", picker.choices)
        log_weight = model._walk(h, hand, picker)  # type: ignore[arg-type]
        monkeypatch.setattr(belief_module, "_draw_choices", picker.original)
        yield math.prod(1 / c for c in picker.sizes), log_weight
        chosen = picks + [0] * (len(picker.sizes) - len(picks))
        for depth in range(len(picks), len(picker.sizes)):
            for j in range(1, picker.sizes[depth]):
                pending.append(chosen[:depth] + [j])


def _sampled_positions(config: tuple, matches: int, every: int = 3) -> Iterator[tuple]:
    """``(view, true hands, model)`` at every ``every``-th position with a scored play."""
    preset, n, partners = config
    rules = Rules.preset(preset, num_players=n, partnerships=partners)
    for k, (view, hands) in enumerate(_views(rules, seed=n, matches=matches)):
        if k % every == 0:
            model = BeliefModel(view, 0.5, history="sampled")
            if model.decisions:
                yield view, hands, model


@pytest.mark.parametrize("config", SEATINGS[:5], ids=_id)
def test_the_walk_sums_the_likelihood_over_every_history(
    config: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Averaged over its random choices, a walk's weight is the likelihood summed over every
    history of draws the deal allows (so the weights are unbiased), and no branch of the walk
    ends in a history that breaks the voids: the true deal and sampled ones."""
    rng = np.random.default_rng(5)
    checked = draws = 0
    for view, hands, model in _sampled_positions(config, matches=2, every=5):
        sampler = HiddenTileSampler(view)
        for deal in [hands] + [sampler.sample(rng)[0] for _ in range(2)]:
            for h in model.histories:
                brute = [math.exp(w) for w in islice(_histories(model, h, deal[h.seat]), 301)]
                if len(brute) > 300:
                    continue
                leaves = list(_walk_tree(model, h, deal[h.seat], monkeypatch))
                tree = sum(p * math.exp(w) for p, w in leaves)
                assert math.isclose(tree, sum(brute), rel_tol=1e-9, abs_tol=1e-300)
                assert all(np.isfinite(w) for _, w in leaves) == bool(brute)
                assert math.isclose(sum(p for p, _ in leaves), 1.0)
                checked += 1
                draws += len(leaves) > 1
            assert np.isfinite(model.log_weight(hands, rng))
    assert checked > 20 and draws > 3


@pytest.mark.parametrize("config", SEATINGS, ids=_id)
def test_the_true_deal_is_never_ruled_out(config: tuple) -> None:
    rng = np.random.default_rng(0)
    walked = 0
    for _, hands, model in _sampled_positions(config, matches=3, every=2):
        assert np.isfinite(model.log_weight(hands, rng))
        walked += any(e[0] == DRAW_SLOT for h in model.histories for e in h.events)
    assert walked > 10


@pytest.mark.parametrize("config", SEATINGS[:3] + SEATINGS[5:6], ids=_id)
def test_the_walk_rebuilds_possible_hands(config: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """Walked back from the true deal, the hand at each scored play has the seat's size then and
    holds the tiles played; where no kept draw of the seat follows the play it is the hand the
    seat really held."""
    preset, n, partners = config
    rules = Rules.preset(preset, num_players=n, partnerships=partners)
    rng = np.random.default_rng(1)
    exact = scored = 0
    held: list[list[int]] = []  # the mover's true hand before each move of this hand
    for view, hands in _views(rules, seed=9, matches=3):
        if not view.moves:
            held = []
        held.append(list(hands[view.seat]))
        model = BeliefModel(view, 0.5, history="sampled")
        seen: dict[int, list[int]] = {}
        original = model._cached

        def recording(d, counts, seen=seen, original=original):
            seen[d.index] = list(counts)
            return original(d, counts)

        monkeypatch.setattr(model, "_cached", recording)
        model.log_weight(hands, rng)
        for h in model.histories:
            for kind, index, t0, t1, k in h.events:
                if kind != PLAY or k < 0:
                    continue
                counts = seen[index]
                d = model.decisions[k]
                assert sum(counts) == d.view.hand_sizes[h.seat]
                assert counts[t0] >= 1 + (t1 == t0) and (t1 < 0 or counts[t1] >= 1)
                if not any(e[0] == DRAW_SLOT and e[1] > index for e in h.events):
                    truth = [0] * NUM_TILES
                    for t in held[index]:
                        truth[t] += 1
                    assert counts == truth
                    exact += 1
                scored += 1
    assert scored > 100 and exact > 50


@pytest.mark.parametrize("config", SEATINGS, ids=_id)
def test_sampled_history_scores_every_play_of_the_others(config: tuple) -> None:
    """Every play of another seat after the lead is scored; ``exact`` scores some of them."""
    some = False
    for view, _, model in _sampled_positions(config, matches=1):
        plays = [
            i
            for i, (seat, a) in enumerate(view.moves)
            if i and seat != view.seat and a not in (DRAW, PASS)
        ]
        assert [d.index for d in model.decisions] == plays
        exact = [d.index for d in BeliefModel(view, 0.5).decisions]
        assert set(exact) <= set(plays)
        some = some or len(exact) < len(plays)
        assert [h.seat for h in model.histories] == [
            s for s in range(view.rules.num_players) if s != view.seat
        ]
    assert some


def test_a_walk_is_reproducible_and_needs_its_rng() -> None:
    config = ("double_set", 2, False)
    rng = np.random.default_rng(3)
    positions = list(_sampled_positions(config, matches=1))
    assert positions
    differ = False
    for view, hands, model in positions:
        sampler = HiddenTileSampler(view)
        deal = sampler.sample(rng)[0]
        first = model.log_weight(deal, np.random.default_rng(4))
        again = BeliefModel(view, 0.5, history="sampled").log_weight(deal, np.random.default_rng(4))
        assert first == again or (math.isnan(first) and math.isnan(again))
        other = model.log_weight(deal, np.random.default_rng(5))
        differ = differ or first != other
        with pytest.raises(ValueError, match="rng"):
            model.log_weight(hands)
    assert differ  # the walk's choices come from the rng


def test_history_is_checked() -> None:
    view = next(_views(Rules.preset("standard"), seed=0, matches=1))[0]
    with pytest.raises(ValueError, match="history"):
        BeliefModel(view, 0.5, history="all")
