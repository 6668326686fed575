"""Asymmetric actor-critic: the hidden-tile encoding, the privileged env, the split policy."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import gymnasium  # noqa: E402
import torch  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

import bergen_env  # noqa: E402, F401  (registers the gymnasium env)
from bergen_env.actions import DRAW  # noqa: E402
from bergen_env.engine import BergenState  # noqa: E402
from bergen_env.errors import InvalidOptionError  # noqa: E402
from bergen_env.observation import (  # noqa: E402
    HIDDEN_SIZE,
    HIDDEN_SLICES,
    OBS_SIZE,
    Encoder,
    obs_bounds,
)
from bergen_env.rules import make_rules  # noqa: E402
from bergen_env.single_agent import BergenSingleAgentEnv  # noqa: E402
from bergen_env.tiles import NUM_TILES  # noqa: E402
from training.config import ConfigError, TrainConfig  # noqa: E402
from training.oracle_critic import OracleCriticPolicy  # noqa: E402


def random_positions(rules_name: str, n: int, seed: int, **kw):
    """States along random playouts (every position, several matches)."""
    rules = make_rules(rules_name, num_players=n, **kw)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        s = BergenState(rules, seed=rng)
        while not s.terminal:
            yield rules, s
            legal = s.legal_actions()
            s.apply_unchecked(int(legal[rng.integers(len(legal))]))


@pytest.mark.parametrize(
    "rules_name, n, kw",
    [
        ("standard", 2, {}),
        ("standard", 3, {}),
        ("standard", 4, {"partnerships": True}),
        ("double_set", 2, {}),
        ("traditional", 4, {}),
    ],
)
def test_hidden_holds_the_other_hands_the_boneyard_and_the_next_draw(rules_name, n, kw) -> None:
    seen_next = 0
    for rules, s in random_positions(rules_name, n, seed=n, **kw):
        enc = Encoder(rules)
        low, high = obs_bounds(rules, "hidden")
        for seat in range(n):
            h = enc.hidden(s, seat)
            assert h.shape == (HIDDEN_SIZE,) and h.dtype == np.float32
            assert np.all(h >= low) and np.all(h <= high)
            others = h[HIDDEN_SLICES["other_hands"]].reshape(3, NUM_TILES)
            for k in range(1, 4):
                expected = s.hands[(seat + k) % n] if k < n else np.zeros(NUM_TILES)
                np.testing.assert_array_equal(others[k - 1], expected)
            bone = h[HIDDEN_SLICES["boneyard_tiles"]]
            # every copy of every tile is in exactly one place
            total = bone + others.sum(0) + np.asarray(s.hands[seat]) + np.asarray(s.line_counts)
            np.testing.assert_array_equal(total, rules.sets)
            assert bone.sum() == s.boneyard_size
            nxt = h[HIDDEN_SLICES["next_draw"]]
            assert nxt.sum() == (1 if s.drawable else 0)
        if DRAW in s.legal_actions():  # the next draw gives exactly the announced tile
            player = s.current_player
            tile = int(np.flatnonzero(enc.hidden(s, player)[HIDDEN_SLICES["next_draw"]])[0])
            c = s.clone()
            before = np.asarray(c.hands[player]).copy()
            c.apply_unchecked(DRAW)
            gained = np.asarray(c.hands[player]) - before
            if gained.sum() == 1:  # (a draw that ends the hand empties nothing into the hand)
                assert int(np.flatnonzero(gained)[0]) == tile
                seen_next += 1
    assert seen_next > 0


def test_hidden_bounds_name_the_layout() -> None:
    with pytest.raises(ValueError, match="layout"):
        obs_bounds(make_rules("standard"), "secret")


@pytest.mark.parametrize(
    "kwargs",
    [dict(num_players=2), dict(num_players=4, partnerships=True), dict(rules="double_set")],
)
def test_privileged_env_appends_the_hidden_tiles_and_passes_check_env(kwargs: dict) -> None:
    env = gymnasium.make("bergen_env/Bergen-v0", illegal_action="lose", privileged=True, **kwargs)
    check_env(env.unwrapped)
    plain = BergenSingleAgentEnv(**kwargs)
    priv = BergenSingleAgentEnv(privileged=True, **kwargs)
    assert priv.observation_space.shape == (OBS_SIZE + HIDDEN_SIZE,)
    obs_p, _ = priv.reset(seed=5)
    obs, _ = plain.reset(seed=5)
    for _ in range(200):  # same seed, same match; the first OBS_SIZE entries are the observation
        np.testing.assert_array_equal(obs_p[:OBS_SIZE], obs)
        np.testing.assert_array_equal(
            obs_p[OBS_SIZE:], Encoder(priv.rules).hidden(priv.game, priv.seat)
        )
        assert priv.observation_space.contains(obs_p)
        a = int(np.flatnonzero(plain.action_masks())[0])
        obs, _, done, trunc, _ = plain.step(a)
        obs_p, _, done_p, trunc_p, _ = priv.step(a)
        assert (done, trunc) == (done_p, trunc_p)
        if done or trunc:
            obs_p, _ = priv.reset(seed=6)
            obs, _ = plain.reset(seed=6)


def test_privileged_must_be_a_bool() -> None:
    with pytest.raises(InvalidOptionError, match="'privileged'"):
        BergenSingleAgentEnv(privileged="yes")


def make_policy() -> OracleCriticPolicy:
    env = BergenSingleAgentEnv(privileged=True)
    return OracleCriticPolicy(
        env.observation_space, env.action_space, lambda _: 1e-3, net_arch=[32, 32]
    )


def test_policy_reads_only_the_observation_and_critic_reads_the_hidden_tiles() -> None:
    torch.manual_seed(0)
    policy = make_policy()
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.random((5, OBS_SIZE + HIDDEN_SIZE)), dtype=torch.float32)
    y = x.clone()
    y[:, OBS_SIZE:] = torch.as_tensor(rng.random((5, HIDDEN_SIZE)), dtype=torch.float32)
    with torch.no_grad():
        lx = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(x)))
        ly = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(y)))
        plain = policy.action_net(
            policy.mlp_extractor.forward_actor(policy.extract_features(x[:, :OBS_SIZE]))
        )
        vx, vy = policy.predict_values(x), policy.predict_values(y)
    torch.testing.assert_close(lx, ly)
    torch.testing.assert_close(lx, plain)  # acts on a plain observation too
    assert not torch.allclose(vx, vy)


def test_policy_needs_the_privileged_observation_and_the_flatten_extractor() -> None:
    from stable_baselines3.common.torch_layers import NatureCNN

    env = BergenSingleAgentEnv()
    with pytest.raises(ValueError, match="privileged=True"):
        OracleCriticPolicy(env.observation_space, env.action_space, lambda _: 1e-3)
    priv = BergenSingleAgentEnv(privileged=True)
    with pytest.raises(ValueError, match="FlattenExtractor only"):
        OracleCriticPolicy(
            priv.observation_space,
            priv.action_space,
            lambda _: 1e-3,
            features_extractor_class=NatureCNN,
        )


def test_critic_config_key() -> None:
    assert TrainConfig().env_kwargs()["privileged"] is False
    assert TrainConfig(critic="oracle").env_kwargs()["privileged"] is True
    with pytest.raises(ConfigError, match="'critic'"):
        TrainConfig(critic="cheat")
