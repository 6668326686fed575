"""``search``'s ``belief=1`` compiled (``bergen_env.agents.compiled.belief_weights``): the same deal
weights, action values and random stream as the Python belief model and search."""

from __future__ import annotations

from itertools import chain

import numpy as np
import pytest

pytest.importorskip("numba")

from bergen_env import BergenState, Rules  # noqa: E402
from bergen_env.agents.belief import BeliefModel, resample  # noqa: E402
from bergen_env.agents.compiled.belief_weights import CompiledBelief  # noqa: E402
from bergen_env.agents.search import SearchAgent  # noqa: E402
from bergen_env.hidden_tiles import HiddenTileSampler  # noqa: E402
from tests.search_positions import assert_same_values, positions  # noqa: E402
from tests.test_vector_heuristic import RULE_SETS, _id  # noqa: E402


def _flat(hands: list[list[int]], boneyard: list[int]) -> list[int]:
    return list(chain(*hands, boneyard))


def _heuristic_views(rules: Rules, seed: int, count: int) -> list[tuple]:
    """``(view, true hands, true boneyard)`` of the player on turn in heuristic self-play, where
    the view has past plays to score (the belief's plays are the heuristic's own)."""
    from bergen_env.agents.heuristic import HeuristicAgent

    agent = HeuristicAgent()
    out = []
    match = 0
    while len(out) < count and match < 20:
        s = BergenState(rules, seed=seed + match)
        match += 1
        while not s.terminal and len(out) < count:
            view = s.public_view(s.current_player)
            if len(view.legal_actions) > 1 and BeliefModel(view, 0.5).decisions:
                hands = [s.hand_tiles(q) for q in range(rules.num_players)]
                out.append((view, hands, s.boneyard[s.bone_pos :]))
            s.apply_action(agent.act(None, None, view))
    return out


@pytest.mark.parametrize("history", ["exact", "sampled"])
@pytest.mark.parametrize("config", RULE_SETS, ids=_id)
def test_compiled_weights_are_the_belief_models(config: tuple, history: str) -> None:
    """Sampled deals and the true one, under every preset, seating and overridden rule set:
    the compiled log-weights equal ``BeliefModel.log_weight`` exactly (with ``sampled``, from
    the same draws of the same rng, which both leave in the same state)."""
    preset, kwargs = config
    rules = Rules.preset(preset, **kwargs)
    views = _heuristic_views(rules, seed=len(_id(config)), count=8)
    if rules.voluntary_draw:  # a draw tells nothing: no play is scored
        assert not views
        return
    assert views
    rng = np.random.default_rng(7)
    for k, (view, hands, boneyard) in enumerate(views):
        partner = (None, 1.5, 0.1)[k % 3] if rules.partnerships else None
        model = BeliefModel(
            view, (0.2, 0.5, 2.0)[k % 3], partner_temperature=partner, history=history
        )
        sampler = HiddenTileSampler(view)
        pool = [(hands, boneyard)] + [sampler.sample(rng) for _ in range(12)]
        deals = np.array([_flat(h, b) for h, b in pool], dtype=np.int64)
        python_rng, compiled_rng = np.random.default_rng(k), np.random.default_rng(k)
        if history == "exact":
            python_rng = compiled_rng = None
        compiled = CompiledBelief(model).log_weights(deals, compiled_rng)
        assert compiled.tolist() == [model.log_weight(h, python_rng) for h, _ in pool]
        assert np.isfinite(compiled[0])  # the true deal explains every play
        if history == "sampled":
            assert python_rng.random() == compiled_rng.random()


def test_compiled_weights_use_the_models_heuristic() -> None:
    from bergen_env.agents.heuristic import HeuristicAgent

    rules = Rules.preset("standard", num_players=3)
    other = HeuristicAgent(threat=2.0, shed=0.1, variety=0.5)
    rng = np.random.default_rng(2)
    for view, hands, boneyard in _heuristic_views(rules, seed=4, count=6):
        model = BeliefModel(view, 0.3, model=other)
        sampler = HiddenTileSampler(view)
        pool = [(hands, boneyard)] + [sampler.sample(rng) for _ in range(8)]
        deals = np.array([_flat(h, b) for h, b in pool], dtype=np.int64)
        assert CompiledBelief(model).log_weights(deals).tolist() == [
            model.log_weight(h) for h, _ in pool
        ]


def test_compiled_weights_doubt_a_declined_header() -> None:
    """The compiled weights keep the model's meaning: seat 1 skipped a header it held."""
    from bergen_env.tiles import NUM_TILES, parse_tile
    from tests.test_agents import _declined_header_view

    view, hands = _declined_header_view()
    swap = {parse_tile("[0|2]"): parse_tile("[3|3]")}  # [3|3] is in the boneyard
    other = [hands[0], [swap.get(t, t) for t in hands[1]]]
    deals = []
    for h in (hands, other):
        seen = set(chain(*h)) | {t for t in range(NUM_TILES) if view.line_counts[t]}
        deals.append(_flat(h, [t for t in range(NUM_TILES) if t not in seen]))
    model = BeliefModel(view, 0.5)
    declined, unable = CompiledBelief(model).log_weights(np.array(deals, dtype=np.int64))
    assert declined < unable - 1.0
    assert [declined, unable] == [model.log_weight(hands), model.log_weight(other)]


BELIEF_CONFIGS = [
    ("standard", dict(num_players=2)),
    ("standard", dict(num_players=3, voluntary_draw=True)),  # nothing scored: uniform deals
    ("double_set", dict(num_players=4, partnerships=True)),
    ("fives", dict(num_players=3)),
    ("draw", dict(num_players=2)),
]


@pytest.mark.parametrize("rollout", ["public", "heuristic"])
@pytest.mark.parametrize("config", BELIEF_CONFIGS, ids=_id)
def test_compiled_belief_search_gives_the_same_values(config: tuple, rollout: str) -> None:
    preset, kwargs = config
    rules = Rules.preset(preset, **kwargs)
    spec = dict(samples=5, rollout=rollout, belief=1, candidates=3)
    if rules.partnerships:  # a partner's plays read more loosely
        spec["partner_temperature"] = 1.5
    python = SearchAgent(**spec, playouts="python")
    compiled = SearchAgent(**spec, playouts="compiled")
    assert_same_values(python, compiled, positions(rules, 10, seed=len(_id(config))), 11)


@pytest.mark.parametrize("config", BELIEF_CONFIGS, ids=_id)
def test_compiled_sampled_history_search_gives_the_same_values(config: tuple) -> None:
    rules = Rules.preset(config[0], **config[1])
    spec = dict(samples=5, rollout="heuristic", belief=1, candidates=3, history="sampled")
    python = SearchAgent(**spec, playouts="python")
    compiled = SearchAgent(**spec, playouts="compiled")
    assert_same_values(python, compiled, positions(rules, 10, seed=len(_id(config))), 11)


def test_resample_picks_in_proportion_and_skips_zero_weights() -> None:
    logw = np.array([np.log(0.5), -np.inf, np.log(0.25), np.log(0.25)])
    picks = resample(logw, np.random.default_rng(0), 8)
    assert sorted(picks.tolist()) == [0, 0, 0, 0, 2, 2, 3, 3]
    rng = np.random.default_rng(1)
    assert resample(np.full(3, -np.inf), rng, 2) is None
    assert rng.random() == np.random.default_rng(1).random()  # no draw was taken
