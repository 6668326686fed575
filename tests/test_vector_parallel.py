"""``BergenVectorEnv(parallel=True)`` (rows shared among numba's threads) steps exactly as the
one-thread kernel: every observation, mask, reward and end flag, under every game."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from bergen_env.vector import BergenVectorEnv  # noqa: E402


@pytest.mark.parametrize(
    "rules, options",
    [
        ("standard", dict(num_players=2)),
        ("double_set", dict(num_players=3, target=8, reward="points")),
        ("fives", dict(num_players=4, partnerships=True)),
        ("draw", dict(num_players=2)),
    ],
)
@pytest.mark.parametrize("copy", [True, False])
def test_parallel_steps_equal_one_thread(rules: str, options: dict, copy: bool) -> None:
    envs = [
        BergenVectorEnv(num_envs=64, rules=rules, seed=3, copy=copy, parallel=p, **options)
        for p in (False, True)
    ]
    first = [env.reset() for env in envs]
    np.testing.assert_array_equal(first[0][0]["observation"], first[1][0]["observation"])
    ended = 0
    for _ in range(150):
        actions = envs[0].random_actions(envs[0].masks)
        outs = [env.step(actions) for env in envs]
        (obs0, *rest0), (obs1, *rest1) = outs
        for key in ("observation", "action_mask"):
            np.testing.assert_array_equal(obs0[key], obs1[key])
        for a, b in zip(rest0[:3], rest1[:3]):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(rest0[3]["current_player"], rest1[3]["current_player"])
        ended += int(rest0[1].sum())
    assert ended > 0  # matches ended and restarted inside the threads


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_random_actions_and_checks_equal_one_thread(threads: int) -> None:
    """The batched random agent and the check of the actions, on numba's threads: the same
    actions from the same streams, and the same first illegal row named (masked and unmasked)."""
    from bergen_env.errors import IllegalActionError
    from bergen_env.vector._numba import numba

    numba.set_num_threads(threads)
    try:
        for copy in (True, False):
            envs = [
                BergenVectorEnv(num_envs=256, seed=5, copy=copy, parallel=p) for p in (False, True)
            ]
            for env in envs:
                env.reset()
            for _ in range(60):
                actions = [env.random_actions(env.masks) for env in envs]
                np.testing.assert_array_equal(actions[0], actions[1])
                for env in envs:
                    env.step(actions[0])
            bad = envs[0].random_actions(envs[0].masks)
            for row in (200, 17):  # two illegal rows: the first one is named
                bad[row] = np.flatnonzero(envs[0].masks[row] == 0)[0]
            messages = []
            for env in envs:
                with pytest.raises(IllegalActionError, match="^match 17: ") as err:
                    env.step(bad)
                messages.append(str(err.value))
            assert messages[0] == messages[1]
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
