"""Multi-agent Tianshou on the AEC env: a masked DQN learner in one seat, masked random play in
the other, through Tianshou's ``PettingZooEnv`` and ``MultiAgentOffPolicyAlgorithm``.

    python examples/tianshou_multiagent_dqn.py --epochs 20 --epoch-steps 5000
    python examples/tianshou_multiagent_dqn.py --epochs 1 --epoch-steps 200 --test-episodes 2

``PettingZooEnv`` turns the AEC env's ``{"observation", "action_mask"}`` into Tianshou's
``{"agent_id", "obs", "mask"}``; the DQN policy pushes the Q-values of masked actions below every
legal one (and explores among legal actions only), and the multi-agent algorithm routes each
step to the algorithm of the agent on turn. The returns reported are the learner's (+1 won
match, -1 lost).

Needs the ``[train,tianshou]`` extras (torch, tianshou).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

import bergen_env

LEARNER = 0  # the learner plays player_0


def make_env() -> PettingZooEnv:
    return PettingZooEnv(bergen_env.env(num_players=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--epoch-steps", type=int, default=5000, help="env steps per epoch")
    parser.add_argument("--train-envs", type=int, default=4)
    parser.add_argument("--test-episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002  (Tianshou's epsilon-greedy draws from it)
    torch.set_num_threads(1)

    env = make_env()
    obs_space = env.observation_space["observation"]
    net = Net(
        state_shape=obs_space.shape,
        action_shape=env.action_space.n,
        hidden_sizes=[256, 256],
    )
    learner = DQN(
        policy=DiscreteQLearningPolicy(
            model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0
        ),
        optim=AdamOptimizerFactory(lr=1e-4),
        gamma=0.99,
        n_step_return_horizon=3,
        target_update_freq=320,
    )
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    seats = [learner, opponent] if LEARNER == 0 else [opponent, learner]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=seats, env=env)

    train_envs = DummyVectorEnv([make_env for _ in range(args.train_envs)])
    test_envs = DummyVectorEnv([make_env for _ in range(2)])
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + 1)
    train_collector = Collector[CollectStats](
        algorithm,
        train_envs,
        VectorReplayBuffer(20_000, len(train_envs)),
        exploration_noise=True,
    )
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=64 * args.train_envs)  # warm up the replay buffer

    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epochs,
            epoch_num_steps=args.epoch_steps,
            collection_step_num_env_steps=4 * args.train_envs,
            test_step_num_episodes=args.test_episodes,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.1,
            test_in_training=False,
            multi_agent_return_reduction=lambda returns: returns[:, LEARNER],
        )
    )
    print(f"best test return of the learner (+1 win, -1 loss): {result.best_score:+.3f}")

    test_collector.reset()
    stats = test_collector.collect(n_episode=args.test_episodes, reset_before_collect=True)
    learner_returns = np.asarray(stats.returns)[:, LEARNER]
    print(f"vs random: win rate {np.mean(learner_returns > 0):.3f} over {len(learner_returns)}")


if __name__ == "__main__":
    main()
