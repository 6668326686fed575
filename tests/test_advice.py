"""Advice features: the heuristic's judgement of each play as policy inputs, the env option,
the policy that hands them to its action head, and a trained advice policy acting."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import bergen_env  # noqa: F401  (registers the gymnasium env)
from bergen_env.actions import DOUBLE_PLAY, NUM_PLAY_ACTIONS
from bergen_env.agents.advice import ADVICE_SCALE, ADVICE_SIZE, Advisor, advice_slices
from bergen_env.agents.heuristic import MATCH_VALUE, HeuristicAgent
from bergen_env.engine import BergenState
from bergen_env.errors import InvalidOptionError
from bergen_env.observation import OBS_SIZE, Encoder
from bergen_env.rules import make_rules
from bergen_env.single_agent import BergenSingleAgentEnv

SETTINGS = [
    ("standard", 2, {}),
    ("standard", 3, {}),
    ("standard", 4, {"partnerships": True}),
    ("double_set", 2, {}),
    ("traditional", 4, {}),
]
SLICES = advice_slices()


def positions(rules_name: str, n: int, seed: int, **kw):
    """States along heuristic-vs-random playouts (every position of a few matches)."""
    rules = make_rules(rules_name, num_players=n, **kw)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        s = BergenState(rules, seed=rng)
        while not s.terminal:
            yield rules, s
            legal = s.legal_actions()
            s._apply(int(legal[rng.integers(len(legal))]))


def plays_of(legal) -> list[int]:
    return [a for a in legal if a < NUM_PLAY_ACTIONS or a >= DOUBLE_PLAY]


@pytest.mark.parametrize("rules_name, n, kw", SETTINGS)
def test_features_are_the_heuristics_judgement_of_each_play(rules_name, n, kw) -> None:
    heuristic = HeuristicAgent()
    advisor = None
    choices = threats = 0
    for rules, s in positions(rules_name, n, seed=n, **kw):
        advisor = advisor or Advisor(rules)
        seat = s.current_player
        view = s.public_view(seat)
        f = advisor.features(view)
        assert f.shape == (ADVICE_SIZE,) and f.dtype == np.float32
        assert np.all(f >= 0.0) and np.all(f <= 1.0)
        value, threat, stuck = (
            f[SLICES[k]] for k in ("advice_value", "advice_threat", "advice_stuck")
        )
        plays = plays_of(view.legal_actions)
        others = np.ones(value.size, dtype=bool)
        others[plays] = False
        for part in (value, threat, stuck):  # draw, pass and illegal actions read 0
            assert not part[others].any()
        if not plays:
            continue
        parts = [heuristic.assess(view, a) for a in plays]
        best = max(p[0] for p in parts)
        for a, (score, th, st) in zip(plays, parts):
            assert value[a] == pytest.approx(min(1.0, max(0.0, 1 + (score - best) / ADVICE_SCALE)))
            assert threat[a] == pytest.approx(min(1.0, th / MATCH_VALUE))
            assert stuck[a] == pytest.approx(st)
            assert score == heuristic.evaluate(view, a)
            threats += th > 0
        if len(plays) > 1:  # the heuristic's choice is the lowest play with advice_value 1
            heuristic.reset(rules, seat, np.random.default_rng(0))
            chosen = heuristic.act(None, s.legal_mask(), view)
            assert chosen == min(a for a in plays if value[a] == 1.0)
            choices += 1
    assert choices > 20 and threats > 5


def test_no_decision_means_no_advice() -> None:
    rules = make_rules("standard")
    s = BergenState(rules, seed=1)
    advisor = Advisor(rules)
    off_turn = 1 - s.current_player
    assert not advisor.features(s.public_view(off_turn)).any()  # not on turn: no legal actions
    assert not advisor.features(None).any()
    with pytest.raises(ValueError, match="other rules"):
        advisor.features(BergenState(make_rules("double_set"), seed=1).public_view(0))


@pytest.mark.parametrize("kwargs", [dict(num_players=2), dict(num_players=4, partnerships=True)])
def test_advice_env_appends_the_features_and_passes_check_env(kwargs: dict) -> None:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("bergen_env/Bergen-v0", illegal_action="lose", advice=True, **kwargs)
    check_env(env.unwrapped)
    plain = BergenSingleAgentEnv(opponents=["heuristic"], **kwargs)
    adv = BergenSingleAgentEnv(opponents=["heuristic"], advice=True, **kwargs)
    assert adv.observation_space.shape == (OBS_SIZE + ADVICE_SIZE,)
    advisor = Advisor(adv.rules)
    obs_a, _ = adv.reset(seed=5)
    obs, _ = plain.reset(seed=5)
    for step in range(300):  # same seed, same match
        np.testing.assert_array_equal(obs_a[:OBS_SIZE], obs)
        assert adv.observation_space.contains(obs_a)
        done = adv.game.terminal or adv.game.current_player != adv.seat
        expected = advisor.features(None if done else adv.game.public_view(adv.seat))
        np.testing.assert_array_equal(obs_a[OBS_SIZE:], expected)
        if done:
            obs_a, _ = adv.reset(seed=100 + step)
            obs, _ = plain.reset(seed=100 + step)
            continue
        a = int(np.flatnonzero(plain.action_masks())[-1])
        obs, _, *_ = plain.step(a)
        obs_a, _, *_ = adv.step(a)


def test_advice_option_errors() -> None:
    with pytest.raises(InvalidOptionError, match="'advice' must be a bool"):
        BergenSingleAgentEnv(advice="yes")
    with pytest.raises(InvalidOptionError, match="'advice' and 'privileged'"):
        BergenSingleAgentEnv(advice=True, privileged=True)


def test_features_ignore_the_hidden_tiles() -> None:
    """Two determinizations of one public view give the same advice."""
    rules = make_rules("standard", num_players=3)
    advisor = Advisor(rules)
    rng = np.random.default_rng(3)
    compared = 0
    for _, s in positions("standard", 3, seed=4):
        seat = s.current_player
        view = s.public_view(seat)
        if len(plays_of(view.legal_actions)) < 2 or s.lead_tile is not None:
            continue
        hidden = [t for p in range(3) if p != seat for t in s.hand_tiles(p)]
        hidden += list(s.boneyard[s.bone_pos :])
        other = None
        for _ in range(50):  # a reshuffle that respects the sizes and the voids
            perm = [hidden[i] for i in rng.permutation(len(hidden))]
            hands, k = [], 0
            for p in range(3):
                if p == seat:
                    hands.append(s.hand_tiles(p))
                else:
                    size = s.hand_len[p]
                    hands.append(perm[k : k + size])
                    k += size
            if all(
                not any(s.voids[p] >> x & 1 for t in hands[p] for x in _numbers(t))
                for p in range(3)
                if p != seat
            ):
                other = BergenState.from_view(view, hands, perm[k:], rng)
                break
        if other is None:
            continue
        twin = other.public_view(seat)
        assert twin == view
        np.testing.assert_array_equal(advisor.features(view), advisor.features(twin))
        assert (
            Encoder(rules).observe(s, seat).tolist() == Encoder(rules).observe(other, seat).tolist()
        )
        compared += 1
    assert compared > 10


def _numbers(tile: int) -> tuple[int, int]:
    from bergen_env.tiles import TILES

    return TILES[tile]


# ---------------------------------------------------------------------- the policy


def test_advice_policy_hands_the_features_to_the_action_head() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    from training.advice_policy import AdvicePolicy

    env = BergenSingleAgentEnv(advice=True)
    policy = AdvicePolicy(env.observation_space, env.action_space, lambda _: 1e-3, net_arch=[32])
    x = torch.rand(4, OBS_SIZE + ADVICE_SIZE)
    latent = policy.mlp_extractor.forward_actor(policy.extract_features(x))
    assert latent.shape == (4, 32 + ADVICE_SIZE)
    torch.testing.assert_close(latent[:, 32:], x[:, OBS_SIZE:])
    # a logit that is a weight on one advice entry: the action head can copy the advice
    with torch.no_grad():
        policy.action_net.weight.zero_()
        policy.action_net.bias.zero_()
        for a in range(env.action_space.n):
            policy.action_net.weight[a, 32 + a] = 5.0
        logits = policy.action_net(latent)
    torch.testing.assert_close(logits, 5.0 * x[:, OBS_SIZE : OBS_SIZE + env.action_space.n])
    plain = BergenSingleAgentEnv()
    with pytest.raises(ValueError, match="advice=True"):
        AdvicePolicy(plain.observation_space, plain.action_space, lambda _: 1e-3)


def test_advice_run_trains_and_its_policy_acts_in_the_aec_env(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from test_training import TINY, play_aec_match

    from training.advice_policy import AdvicePolicy
    from training.config import ConfigError
    from training.policies import load_model, load_policy
    from training.train import main

    run = tmp_path / "advice"
    sets = [*TINY, "advice=true", "eval_opponents=[random]"]
    out = main(
        ["--config", "configs/quick.yaml", "--run-dir", str(run)]
        + [x for s in sets for x in ("--set", s)]
    )
    assert out["timesteps"] == 512
    model, meta = load_model(run / "final_model.zip")
    assert isinstance(model.policy, AdvicePolicy) and meta["advice"] is True
    agent = load_policy(run / "final_model.zip")
    assert agent.needs_view
    assert play_aec_match(agent, seat=0, seed=4) > 5
    agent.reset(make_rules("standard"), 0, np.random.default_rng(0))
    s = BergenState(make_rules("standard"), seed=2)
    while len(s.legal_actions()) < 2:
        s._apply(s.legal_actions()[0])
    obs = Encoder(s.rules).observe(s, s.current_player)
    with pytest.raises(ValueError, match="public view"):
        agent.act(obs, s.legal_mask(), None)
    with pytest.raises(ConfigError, match="'advice' and 'privileged'"):
        main(
            ["--config", "configs/quick.yaml", "--run-dir", str(tmp_path / "both")]
            + [x for s in [*sets, "critic=oracle"] for x in ("--set", s)]
        )
    assert not (tmp_path / "both").exists()
