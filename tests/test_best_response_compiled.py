"""The best response with compiled playouts (``playouts="compiled"``): every seat plays the
compiled heuristic, and the deals are still weighed by the policy's likelihood. Needs the
[vector] extra (numba)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("numba", reason="compiled playouts need the [vector] extra (numba)")

from benchmarks.best_response_choices import explains, positions, self_play  # noqa: E402
from benchmarks.responders import compare, responder_spec  # noqa: E402
from bergen_env.agents import BestResponseAgent, make_agent  # noqa: E402
from bergen_env.agents.best_response import PolicyBelief, PolicyWeights  # noqa: E402
from bergen_env.hidden_tiles import HiddenTileSampler  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.training.exploit import main as exploit_main  # noqa: E402

STANDARD = Rules.preset("standard")


def _heuristic_positions(matches: int, every: int = 2):
    heuristic = make_agent("heuristic")
    heuristic.reset(STANDARD, 1, np.random.default_rng(0))
    return heuristic, positions(self_play(heuristic, STANDARD, range(matches)), every=every)


def test_policy_weights_are_the_beliefs_log_weights_of_each_row():
    """A deal as the compiled search holds it (a flat row: the hands by seat, then the boneyard)
    gets the log-weight :class:`PolicyBelief` gives its hands, with the same random draws."""
    heuristic, found = _heuristic_positions(3)
    checked = 0
    for k, (state, _) in enumerate(found[:12]):
        view = state.public_view(state.current_player)
        model = PolicyBelief(view, heuristic, 1e-4)
        sampler = HiddenTileSampler(view, soft=False)
        rng = np.random.default_rng(k)
        deals = [sampler.sample(rng) for _ in range(20)]
        rows = np.array(
            [[t for hand in hands for t in hand] + boneyard for hands, boneyard in deals]
        )
        got = PolicyWeights(model).log_weights(rows, np.random.default_rng((5, k)))
        again = np.random.default_rng((5, k))
        want = [model.log_weight(hands, again) for hands, _ in deals]
        np.testing.assert_array_equal(got, want)
        checked += bool(model.decisions)
    assert checked >= 5


class _Recording(BestResponseAgent):
    """Records the deals its compiled search weighs and their log-weights."""

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self.weighed: list[tuple[object, np.ndarray, np.ndarray]] = []

    def act(self, observation, action_mask, view):
        self._now = view
        return super().act(observation, action_mask, view)

    def compiled_belief(self, model):
        weights = super().compiled_belief(model)
        record, view = self.weighed, self._now

        class Recorder:
            def log_weights(self, deals, rng):
                out = weights.log_weights(deals, rng)
                record.append((view, deals.copy(), out.copy()))
                return out

        return Recorder()


def test_the_deals_weighed_explain_the_policys_plays():
    """At positions of standard two-player matches of the heuristic against itself, the compiled
    best response to the heuristic puts almost all its weight on deals in which the heuristic
    would have made the plays it was seen to make (checked by replaying them through the engine,
    independently of the likelihood): 0.99 of the weight of 8,456 deals here, where weighed
    uniformly the same deals explain them 0.49 of the time. With the heuristic's softmax in
    place of the policy's likelihood (plain search's belief) the share is 0.66, with uniform
    weights 0.49: both fail."""
    heuristic, found = _heuristic_positions(10)
    weighted = uniform = total = 0.0
    rows = 0
    for k, (state, before) in enumerate(found):
        view = state.public_view(state.current_player)
        responder = _Recording(policy="heuristic", samples=20, playouts="compiled")
        responder.reset(STANDARD, view.seat, np.random.default_rng((3, k)))
        responder.act(None, None, view)
        for seen, deals, logw in responder.weighed:
            other = 1 - seen.seat
            start = sum(seen.hand_sizes[:other])
            w = np.exp(logw - logw.max())
            for row, weight in zip(deals.tolist(), w.tolist()):
                verdict = explains(
                    before, seen, row[start : start + seen.hand_sizes[other]], heuristic
                )
                if verdict is None:
                    continue
                weighted += weight * verdict
                total += weight
                uniform += verdict
                rows += 1
    assert rows > 1000, rows
    share, plain = weighted / total, uniform / rows
    assert share > 0.9 and plain < 0.8, (share, plain, rows)


def test_compiled_playouts_refuse_what_they_cannot_play():
    with pytest.raises(ValueError, match="rollout' must be 'heuristic'"):
        BestResponseAgent(policy="heuristic", playouts="compiled", rollout="policy")
    with pytest.raises(ValueError, match="max_hands"):
        BestResponseAgent(policy="heuristic", playouts="compiled", max_hands=1)
    with pytest.raises(ValueError, match="'playouts' must be one of"):
        BestResponseAgent(policy="heuristic", playouts="numba")


def test_a_compiled_decision_is_the_same_from_the_same_seed():
    _, found = _heuristic_positions(2)
    for k, (state, _) in enumerate(found[:6]):
        view = state.public_view(state.current_player)
        chosen = []
        for _ in range(2):
            agent = make_agent("best_response:samples=50,playouts=compiled,policy=heuristic")
            agent.reset(STANDARD, view.seat, np.random.default_rng(k))
            chosen.append((agent.act(None, None, view), agent.action_values(view)))
        assert chosen[0] == chosen[1]


def test_bergen_exploit_plays_the_compiled_best_response(capsys):
    argv = ["--policy", "heuristic", "--matches", "2", "--samples", "40", "--seed", "2"]
    argv += ["--playouts", "compiled", "--batch", "20", "--prune", "--json", "-", "--no-progress"]
    assert exploit_main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best_response"] == (
        "best_response:samples=40,rollout=heuristic,playouts=compiled,batch=20,prune=true,"
        "policy=heuristic"
    )
    assert data["matches"] == 2


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--prune"], "--prune needs --batch"),
        (["--batch", "0"], "--batch must be >= 1"),
        (["--playouts", "compiled", "--rollout", "random"], "rollout' must be 'heuristic'"),
    ],
)
def test_bergen_exploit_refuses_bad_search_options_in_one_line(capsys, flags, needle):
    assert exploit_main(["--policy", "heuristic", "--matches", "2", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bergen-exploit: error: "), err
    assert needle in err


def test_responders_are_compared_on_the_same_deals():
    """The benchmark's paired column: a responder against itself differs by exactly 0."""
    spec = "best_response:samples=10,playouts=compiled,policy={policy}"
    assert responder_spec(spec, "a,b") == "best_response:samples=10,playouts=compiled,policy=a%2Cb"
    rows = compare("heuristic", [spec, spec, "greedy"], STANDARD, matches=4, seed=0)
    assert rows[1]["minus_first"] == 0.0 and rows[1]["minus_first_ci95"] == [0.0, 0.0]
    assert rows[0]["groups"] == 2 and "minus_first" not in rows[0]
    assert rows[2]["return"] - rows[0]["return"] == pytest.approx(rows[2]["minus_first"])
