"""The field's own checkers, run as shipped on the envs users construct: PettingZoo's
``api_test`` and ``seed_test`` on ``bergen_env.env(...)`` and Gymnasium's ``check_env`` on
``gymnasium.make("bergen_env/Bergen-v0", ...)``, over every preset and seating.

Nothing here wraps an env, patches a checker or filters what a checker passes. Warnings are
recorded and asserted: ``check_env`` must pass without any; ``api_test`` calls
``reset(seed=0, options={"options": 1})`` to check the signature, which the env ignores with the
one warning it gives for an option it does not use.

PettingZoo's ``max_cycles_test`` and parallel API tests do not apply: they need a
``parallel_env`` and a ``max_cycles`` argument, and Bergen is a turn-based (AEC-only) game whose
cap is ``max_hands`` (docs/environment-notes.md).
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import pettingzoo
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, render_test, seed_test

import bergen_env
from bergen_env.registration import ENV_ID
from bergen_env.rules import PRESETS

SEATINGS = {"2p": (2, False), "3p": (3, False), "4p": (4, False), "4p-partners": (4, True)}
CASES = [(preset, seating) for preset in PRESETS for seating in SEATINGS]
IDS = [f"{preset}-{seating}" for preset, seating in CASES]


def seating_kwargs(seating: str) -> dict:
    num_players, partnerships = SEATINGS[seating]
    return {"num_players": num_players, "partnerships": partnerships}


#: What ``api_test`` warns about a Bergen env: the signature probe's reset option (once), and two
#: heuristics about the ``{"observation", "action_mask"}`` dict of PettingZoo's classic games,
#: which the checker skips for its own games only (by name: ``env_obs_dicts``, ``env_obs_space``).
RESET_WARNING = "reset() ignores option(s) 'options': the keys it uses are ['deals']"
API_TEST_WARNINGS = {
    RESET_WARNING,
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or "
    "gymnasium.spaces.discrete",
}


def run_api_test(env: object) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        api_test(env, num_cycles=1000)
    messages = [str(w.message) for w in seen]
    assert set(messages) <= API_TEST_WARNINGS, messages
    assert messages.count(RESET_WARNING) == 1


@pytest.mark.parametrize(("preset", "seating"), CASES, ids=IDS)
def test_pettingzoo_api_test(preset: str, seating: str) -> None:
    run_api_test(bergen_env.env(rules=preset, **seating_kwargs(seating)))


def test_pettingzoo_api_test_on_the_registered_env() -> None:
    run_api_test(pettingzoo.make("aec", ENV_ID))


def test_pettingzoo_render_test() -> None:
    """Every mode of ``render_modes`` (``rgb_array`` too: Pillow is in the base install)."""
    render_test(bergen_env.env)


@pytest.mark.parametrize(("preset", "seating"), CASES, ids=IDS)
def test_pettingzoo_seed_test(preset: str, seating: str) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        seed_test(lambda: bergen_env.env(rules=preset, **seating_kwargs(seating)))
    assert not seen, [str(w.message) for w in seen]


@pytest.mark.parametrize(("preset", "seating"), CASES, ids=IDS)
def test_gymnasium_check_env_without_warnings(preset: str, seating: str) -> None:
    env = gym.make(ENV_ID, rules=preset, **seating_kwargs(seating))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        check_env(env.unwrapped)  # as check_env asks: the env, not gym.make's wrappers
        # and a match through gym.make's own wrappers (its passive checker), masks sampled
        _, info = env.reset(seed=1)
        done = False
        while not done:
            action = env.action_space.sample(info["action_mask"])
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    assert not seen, [str(w.message) for w in seen]
