"""Advice features: the heuristic's judgement of every legal play, as extra policy inputs.

A network that reads only the flat observation has to learn the arithmetic behind a sound play
(which tile makes a header for the next seat and how likely that seat holds it) from the reward
alone. ``Advisor.features(view)`` gives it that arithmetic per action id, from what the seat may
know (its :class:`~bergen_env.engine.PublicView`), computed by
:meth:`bergen_env.agents.heuristic.HeuristicAgent.assess`:

==================  =====  ================================================================
view                size   meaning (per action id; 0 for draw, pass and illegal actions)
==================  =====  ================================================================
advice_value        65     ``1 + (score - best score) / ADVICE_SCALE``, clipped to [0, 1]:
                           1 for the heuristic's choice, lower for plays it ranks lower
advice_threat       65     the next opponent's expected header and domino points after the
                           play, a match it would win counted as ``MATCH_VALUE``; / MATCH_VALUE
advice_stuck        65     the chance that the next opponent cannot play on the new ends
==================  =====  ================================================================

All entries are 0 when the seat is not on turn or has no play (only a draw or a pass). The
single-agent env appends them to the learner's observation with ``advice=True``;
:class:`training.policies.PPOAgent` computes them itself for a policy trained that way.

>>> from bergen_env.engine import BergenState
>>> from bergen_env.rules import make_rules
>>> state = BergenState(make_rules("standard"), seed=0)
>>> features = Advisor(state.rules).features(state.public_view(state.current_player))
>>> features.shape, float(features.max())
((195,), 1.0)
"""

from __future__ import annotations

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, NUM_ACTIONS_TWO_SETS, NUM_PLAY_ACTIONS
from bergen_env.agents.heuristic import MATCH_VALUE, HeuristicAgent
from bergen_env.engine import PublicView
from bergen_env.rules import Rules

ADVICE_LAYOUT: tuple[tuple[str, int], ...] = (
    ("advice_value", NUM_ACTIONS_TWO_SETS),
    ("advice_threat", NUM_ACTIONS_TWO_SETS),
    ("advice_stuck", NUM_ACTIONS_TWO_SETS),
)
ADVICE_SIZE = sum(size for _, size in ADVICE_LAYOUT)
#: Heuristic score points below the best play at which ``advice_value`` reaches 0.
ADVICE_SCALE = 10.0
_THREAT = NUM_ACTIONS_TWO_SETS
_STUCK = 2 * NUM_ACTIONS_TWO_SETS


def advice_slices() -> dict[str, slice]:
    """Named slices of the advice vector."""
    out, start = {}, 0
    for name, size in ADVICE_LAYOUT:
        out[name] = slice(start, start + size)
        start += size
    return out


class Advisor:
    """Computes advice features for one rules set with a (default-weighted) heuristic."""

    def __init__(self, rules: Rules, heuristic: HeuristicAgent | None = None) -> None:
        self.rules = rules
        self.heuristic = heuristic if heuristic is not None else HeuristicAgent()

    def features(self, view: PublicView | None) -> np.ndarray:
        """The advice vector (a new ``float32`` array of ``ADVICE_SIZE``) for ``view``'s seat.

        ``None`` (a seat with no decision, e.g. the final observation) gives all zeros.
        """
        out = np.zeros(ADVICE_SIZE, dtype=np.float32)
        if view is None:
            return out
        if view.rules is not self.rules and view.rules != self.rules:
            raise ValueError(
                f"Advisor for rules {self.rules.describe()} got a view of other rules "
                f"{view.rules.describe()}"
            )
        plays = [a for a in view.legal_actions if a < NUM_PLAY_ACTIONS or a >= DOUBLE_PLAY]
        if not plays:
            return out
        assess = self.heuristic.assess
        results = [assess(view, a) for a in plays]
        best = max(r[0] for r in results)
        for a, (score, threat, stuck) in zip(plays, results):
            out[a] = min(1.0, max(0.0, 1.0 + (score - best) / ADVICE_SCALE))
            out[_THREAT + a] = min(1.0, threat / MATCH_VALUE)
            out[_STUCK + a] = stuck
        return out
