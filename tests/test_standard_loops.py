"""The envs in the loops researchers bring: vector envs with masks in ``infos``, autoreset,
unmasked sampling, ``check_env`` and SB3 with defaults, ``rgb_array`` frames."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import bergen_env
from bergen_env.engine import BergenState
from bergen_env.errors import IllegalActionError
from bergen_env.render_image import FRAME_SHAPE, render_rgb
from bergen_env.rules import Rules
from bergen_env.single_agent import BergenSingleAgentEnv

NUM_ENVS = 4


def masked_sample(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row from a uniform masked softmax, as a CleanRL agent's Categorical."""
    logits = np.where(masks.astype(bool), 0.0, -np.inf)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    assert np.isfinite(probs).all()
    return np.array([rng.choice(len(p), p=p) for p in probs])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_cleanrl_style_loop_reads_masks_from_infos(mode: str) -> None:
    envs = gymnasium.make_vec("bergen_env/Bergen-v0", num_envs=NUM_ENVS, vectorization_mode=mode)
    try:
        _, infos = envs.reset(seed=0)
        rng = np.random.default_rng(0)
        episodes = 0
        ended = np.zeros(NUM_ENVS, dtype=bool)
        for _ in range(3000):
            masks = infos["action_mask"]
            assert masks.shape == (NUM_ENVS, 58) and masks.dtype == np.int8
            assert masks.any(axis=1).all(), "an all-zero mask row"
            assert infos["_action_mask"].all()
            # the step after an episode's end resets that env: its mask there is all ones
            assert masks[ended].all()
            actions = masked_sample(masks, rng)
            _, _, terminated, truncated, infos = envs.step(actions)
            ended = terminated | truncated
            episodes += int(ended.sum())
        assert episodes > 100
    finally:
        envs.close()


def test_same_step_autoreset_gives_the_new_episode_mask() -> None:
    envs = gymnasium.make_vec(
        "bergen_env/Bergen-v0",
        num_envs=NUM_ENVS,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP},
    )
    _, infos = envs.reset(seed=2)
    rng = np.random.default_rng(2)
    finals = 0
    for _ in range(600):
        masks = infos["action_mask"]
        assert masks.any(axis=1).all()
        _, _, terminated, truncated, infos = envs.step(masked_sample(masks, rng))
        ended = terminated | truncated
        if ended.any():
            final = infos["final_info"]["action_mask"][ended]
            assert final.all()  # the ended episode's last mask: all ones
            finals += int(ended.sum())
    assert finals > 10
    envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_unmasked_vector_sampling_loses_instead_of_crashing(mode: str) -> None:
    envs = gymnasium.make_vec("bergen_env/Bergen-v0", num_envs=2, vectorization_mode=mode)
    try:
        envs.reset(seed=1)
        envs.action_space.seed(1)
        illegal = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the default "lose" warns at each illegal action
            for _ in range(200):
                _, rewards, terminated, _, infos = envs.step(envs.action_space.sample())
                lost = infos.get("_illegal_action", np.zeros(2, dtype=bool))
                assert (terminated[lost]).all() and (rewards[lost] == -1.0).all()
                illegal += int(lost.sum())
        assert illegal > 0
    finally:
        envs.close()


def test_raise_mode_reaches_the_caller_as_an_illegal_action_error() -> None:
    envs = gymnasium.make_vec(
        "bergen_env/Bergen-v0", num_envs=2, vectorization_mode="sync", illegal_action="raise"
    )
    _, infos = envs.reset(seed=0)
    illegal = np.array([int(np.flatnonzero(row == 0)[0]) for row in infos["action_mask"]])
    with pytest.raises(IllegalActionError, match=r"is illegal for the learner.*legal actions: "):
        envs.step(illegal)


def test_check_env_passes_on_the_registered_env_with_defaults() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")  # check_env plays an action sampled before a reset
        check_env(gymnasium.make("bergen_env/Bergen-v0").unwrapped)
    assert not seen, [str(w.message) for w in seen]


def test_default_illegal_action_loses_quietly() -> None:
    env = BergenSingleAgentEnv(learner_seat=0, auto_forced=False)
    _, info = env.reset(seed=0)
    bad = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the loss and info report it; no warning
        _, reward, terminated, _, info = env.step(bad)
    assert (reward, terminated, info["illegal_action"]) == (-1.0, True, bad)
    assert info["action_mask"].all()  # the episode is over: no all-zero mask


def test_out_of_space_action_names_it_and_the_legal_ones() -> None:
    env = BergenSingleAgentEnv(learner_seat=0, auto_forced=False)
    _, info = env.reset(seed=0)
    with pytest.raises(IllegalActionError, match=r"action 999 .*player_0.*legal actions: \d+ \("):
        env.step(999)


def test_info_mask_matches_action_masks_while_the_episode_runs() -> None:
    env = BergenSingleAgentEnv(num_players=3, opponents=["greedy"], reward="points")
    _, info = env.reset(seed=4)
    done = False
    while not done:
        np.testing.assert_array_equal(info["action_mask"], env.action_masks())
        action = int(np.flatnonzero(info["action_mask"])[-1])
        _, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert info["action_mask"].all() and not env.action_masks().any()


def test_sb3_make_vec_env_with_defaults_trains_maskable_ppo() -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env("bergen_env/Bergen-v0", n_envs=2, seed=0)  # render_mode="rgb_array"
    model = MaskablePPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    assert vec.render_mode == "rgb_array"
    frames = vec.get_images()
    assert [f.shape for f in frames] == [FRAME_SHAPE, FRAME_SHAPE]
    vec.close()


# ---------------------------------------------------------------------- rgb_array


def test_single_agent_frames_have_a_fixed_shape_and_follow_the_table() -> None:
    env = gymnasium.make("bergen_env/Bergen-v0", render_mode="rgb_array", num_players=3)
    _, info = env.reset(seed=0)
    first = env.render()
    assert first.shape == FRAME_SHAPE and first.dtype == np.uint8
    np.testing.assert_array_equal(env.render(), first)  # same table, same picture
    frames = [first]
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        done = terminated or truncated
        frame = env.render()
        assert frame.shape == FRAME_SHAPE and frame.dtype == np.uint8
        assert not np.array_equal(frame, frames[-1])  # a move (at least) changed the table
        frames.append(frame)
    assert len(frames) > 2


@pytest.mark.parametrize("rules", ["standard", "double_set"])
def test_aec_frames_have_a_fixed_shape_and_follow_the_table(rules: str) -> None:
    env = bergen_env.env(num_players=4, partnerships=True, rules=rules, render_mode="rgb_array")
    env.reset(seed=0)
    previous = env.render()
    for _ in range(60):
        agent = env.agent_selection
        mask = env.observe(agent)["action_mask"]
        if env.terminations[agent] or env.truncations[agent]:
            break
        env.step(int(np.flatnonzero(mask)[0]))
        frame = env.render()
        assert frame.shape == FRAME_SHAPE and frame.dtype == np.uint8
        assert not np.array_equal(frame, previous)
        previous = frame


def test_the_frame_shows_the_viewer_hand_face_up_and_others_face_down() -> None:
    rules = Rules.preset("standard")
    deal = {"hands": [[0, 1, 2, 3, 4, 5], [7, 8, 9, 10, 11, 12]], "boneyard": [*range(13, 28), 6]}
    state = BergenState(rules, seed=0, deals=[deal])
    other = {"hands": [[7, 8, 9, 10, 11, 12], [0, 1, 2, 3, 4, 5]], "boneyard": deal["boneyard"]}
    swapped = BergenState(rules, seed=0, deals=[other])
    # the same seat sees different own tiles; the other seat's tiles (face down) look the same
    assert not np.array_equal(render_rgb(state, 0), render_rgb(swapped, 0))
    seen_by_1 = render_rgb(state, 1)
    assert seen_by_1.shape == FRAME_SHAPE
    assert not np.array_equal(seen_by_1, render_rgb(state, 0))
