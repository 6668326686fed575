"""OpenSpiel bots as arena agents: ``make_agent("openspiel:bot=ismcts,simulations=100")``.

Needs the ``openspiel`` extra. The agent plays through :mod:`bergen_env.openspiel`: on its turn it
builds a game state from its public view (:func:`bergen_env.openspiel.state_from_view`, the
hidden tiles sampled) and asks the bot for a move. The bot:

- ``ismcts``: OpenSpiel's information-set MCTS (``open_spiel.python.algorithms.ismcts``), keyed
  by observation strings, each simulation on the hidden tiles dealt again
  (``BergenGameState.resample``), leaves valued by ``rollouts`` random playouts to the end of
  the match (``RandomRolloutEvaluator``).

Parameters: ``simulations`` (100), ``uct_c`` (2.0), ``rollouts`` (1), ``world_samples`` (0 for
a fresh sample per simulation, else that many kept samples), ``final`` (``max_visit_count`` or
``normalized_visit_count``). Every random choice comes from the RNG the agent is reset with, so
a seeded match is reproducible.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bergen_env.agents.base import Agent
from bergen_env.engine import PublicView
from bergen_env.rules import Rules

BOTS = ("ismcts",)
FINAL_POLICIES = ("max_visit_count", "normalized_visit_count")


class OpenSpielAgent(Agent):
    """An OpenSpiel bot playing one seat through the ``bergen`` OpenSpiel game."""

    needs_observation = False

    def __init__(
        self,
        bot: str = "ismcts",
        simulations: int = 100,
        uct_c: float = 2.0,
        rollouts: int = 1,
        world_samples: int = 0,
        final: str = "max_visit_count",
    ) -> None:
        if bot not in BOTS:
            raise ValueError(f"bot must be one of {BOTS}, got {bot!r}")
        for name, value in (
            ("simulations", simulations),
            ("rollouts", rollouts),
            ("world_samples", world_samples + 1),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(uct_c, (int, float)) or uct_c < 0:
            raise ValueError(f"uct_c must be a number >= 0, got {uct_c!r}")
        if final not in FINAL_POLICIES:
            raise ValueError(f"final must be one of {FINAL_POLICIES}, got {final!r}")
        import pyspiel  # noqa: F401  (fail here, with the extra's name, if it is missing)

        import bergen_env.openspiel  # noqa: F401  (registers the game)

        self.bot, self.simulations, self.uct_c = bot, simulations, float(uct_c)
        self.rollouts, self.world_samples, self.final = rollouts, world_samples, final
        self._game: Any = None
        self._game_rules: Rules | None = None

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        super().reset(rules, seat, rng)
        if rules != self._game_rules:
            import pyspiel

            from bergen_env.openspiel import game_parameters

            self._game = pyspiel.load_game("bergen", game_parameters(rules))
            self._game_rules = rules

    def _make_bot(self, seed: int) -> Any:
        from open_spiel.python.algorithms import ismcts, mcts

        random_state = np.random.RandomState(seed)
        final = {
            "max_visit_count": ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT,
            "normalized_visit_count": ismcts.ISMCTSFinalPolicyType.NORMALIZED_VISITED_COUNT,
        }[self.final]
        bot = ismcts.ISMCTSBot(
            self._game,
            mcts.RandomRolloutEvaluator(self.rollouts, random_state),
            self.uct_c,
            self.simulations,
            max_world_samples=self.world_samples or ismcts.UNLIMITED_NUM_WORLD_SAMPLES,
            random_state=random_state,
            final_policy_type=final,
            use_observation_string=True,
        )
        bot.set_resampler(lambda state, player: state.resample(player, self.rng))
        return bot

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, view: PublicView) -> int:
        from bergen_env.openspiel import state_from_view

        if view is None:
            raise ValueError(f"agent {self.name!r} needs the public view")
        legal = view.legal_actions
        if len(legal) == 1:
            return int(legal[0])
        state = state_from_view(self._game, view, self.rng)
        bot = self._make_bot(int(self.rng.integers(2**31)))
        return int(bot.step(state))
