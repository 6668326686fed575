"""``tuned``: the ``heuristic`` with its weights tuned for the rule set and seating.

The weights of :class:`~bergen_env.agents.heuristic.HeuristicAgent` were set by hand. For each
preset and seating, ``bergen_env.training.tune_heuristic`` (``configs/tune_heuristic.yaml`` with the
preset and seating set) searched them by the cross-entropy method on duplicate matches against the
default heuristic; :data:`TUNED_WEIGHTS` holds the results (the default weights where the tuned ones
did not win more than an equal share on the tuner's hold-out deals) and ``docs/agents.md`` their
measured strength. The agent reads the rules at ``reset`` and plays the weights of that preset and
seating; rules that are no preset (a changed option) have no tuned weights, which is an error at
``reset``: tune them, then play ``heuristic:threat=...`` with the weights found.
"""

from __future__ import annotations

import numpy as np

from bergen_env.agents.heuristic import HeuristicAgent, default_weights
from bergen_env.engine import PublicView
from bergen_env.rules import PRESETS, Rules


def _weights(**tuned: float) -> dict[str, float]:
    """The default heuristic's weights with the ``tuned`` ones changed."""
    return default_weights() | tuned


#: ``(preset, players, partnerships)`` -> the weights ``tuned`` plays: those found by
#: ``bergen_env.training.tune_heuristic`` (seed 0, ``configs/tune_heuristic.yaml``), the defaults
#: where its hold-out showed no gain or where the seating was not tuned.
TUNED_WEIGHTS: dict[tuple[str, int, bool], dict[str, float]] = {
    ("standard", 2, False): _weights(
        threat=0.799, stuck=0.996, shed=0.325, variety=0.0, follow=0.148
    ),
    ("standard", 3, False): _weights(
        threat=0.738, stuck=0.984, shed=0.373, variety=0.014, follow=0.21
    ),
    ("standard", 4, False): _weights(),  # no gain found
    ("standard", 4, True): _weights(
        threat=1.673, stuck=0.921, shed=0.345, variety=0.084, follow=0.358, partner=0.243
    ),
    ("traditional", 2, False): _weights(
        threat=1.27, stuck=1.075, shed=0.085, variety=0.0, follow=0.297
    ),
    ("traditional", 3, False): _weights(
        threat=0.886, stuck=1.376, shed=0.032, variety=0.151, follow=0.301
    ),
    ("traditional", 4, False): _weights(),  # not tuned
    ("traditional", 4, True): _weights(
        threat=0.847, stuck=1.308, shed=0.055, variety=0.299, follow=0.19, partner=0.338
    ),
    ("double_set", 2, False): _weights(
        threat=1.394, stuck=0.954, shed=0.035, variety=0.0, follow=0.326
    ),
    ("double_set", 3, False): _weights(
        threat=0.586, stuck=1.332, shed=0.005, variety=0.159, follow=0.313
    ),
    ("double_set", 4, False): _weights(),  # not tuned
    ("double_set", 4, True): _weights(
        threat=0.892, stuck=1.369, shed=0.052, variety=0.255, partner=0.351
    ),
    ("draw", 2, False): _weights(
        threat=0.341, stuck=1.125, shed=0.035, variety=0.008, follow=0.044
    ),
    ("draw", 3, False): _weights(
        threat=0.617, stuck=1.118, shed=0.073, variety=0.121, follow=0.023
    ),
    ("draw", 4, False): _weights(
        threat=0.969, stuck=0.967, shed=0.191, variety=0.225, follow=0.057
    ),
    ("draw", 4, True): _weights(
        threat=0.284, stuck=1.59, shed=0.118, variety=0.202, follow=0.034, partner=0.481
    ),
    ("fives", 2, False): _weights(
        threat=1.673, stuck=1.736, shed=0.317, variety=0.067, follow=0.29, keep=0.004
    ),
    ("fives", 3, False): _weights(
        threat=0.553, stuck=2.018, shed=0.252, variety=0.259, follow=0.244, keep=0.013
    ),
    ("fives", 4, False): _weights(),  # not tuned
    ("fives", 4, True): _weights(
        threat=1.101,
        stuck=2.206,
        shed=0.367,
        variety=0.349,
        follow=0.164,
        partner=0.391,
        keep=0.021,
    ),
}


def _key(rules: Rules) -> tuple[str, int, bool] | None:
    """The :data:`TUNED_WEIGHTS` key of ``rules``: the preset they equal (name aside)."""
    mine = rules.to_dict() | {"name": ""}
    seat = dict(num_players=rules.num_players, partnerships=rules.partnerships)
    for preset in PRESETS:
        try:
            same = Rules.preset(preset, **seat).to_dict() | {"name": ""} == mine
        except ValueError:  # a seating the preset does not have
            continue
        if same:
            return preset, rules.num_players, rules.partnerships
    return None


def tuned_weights(rules: Rules) -> dict[str, float]:
    """The tuned weights for ``rules``; a ValueError naming the rules where none are tuned."""
    key = _key(rules)
    if key is None or key not in TUNED_WEIGHTS:
        seating = f"{rules.num_players} players" + (
            " in partnerships" if rules.partnerships else ""
        )
        what = (
            f"preset {key[0]!r}, {seating}"
            if key
            else f"rules that are no preset as it is ({rules.name!r} with options changed, "
            f"{seating})"
        )
        raise ValueError(
            f"no tuned heuristic weights for {what}: tune them with `python -m "
            f"bergen_env.training.tune_heuristic` and play the weights found as "
            f"heuristic:threat=...,..."
        )
    return dict(TUNED_WEIGHTS[key])


class TunedHeuristicAgent(HeuristicAgent):
    """The heuristic with the :data:`TUNED_WEIGHTS` of the match's rules (set at ``reset``)."""

    presets_only = True

    def __init__(self) -> None:
        super().__init__()
        self.weights_for: Rules | None = None

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        super().reset(rules, seat, rng)
        for name, value in tuned_weights(rules).items():
            setattr(self, f"w_{name}", float(value))
        self.weights_for = rules

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView) -> int:
        if self.weights_for is None:
            raise RuntimeError(
                f"agent {self.name!r}: call reset(rules, seat, rng) first (its weights depend "
                "on the rules)"
            )
        if view.rules is not self.weights_for and view.rules != self.weights_for:
            raise ValueError(
                f"agent {self.name!r} was reset for other rules than this view's; reset it "
                "for the match it plays"
            )
        return super().act(observation, action_mask, view)
