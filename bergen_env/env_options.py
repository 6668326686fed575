"""The options every Bergen env takes, resolved and validated once.

Both envs (the AEC :func:`bergen_env.env` and the single-agent
``gymnasium.make("bergen_env/Bergen-v0")``) and both training configs
(``bergen_env.training.config``, ``bergen_env.training.train_rllib``) take the same block of
options: the rules (a preset name or :class:`~bergen_env.rules.Rules`, the seating, single rule
overrides), the reward mode and the ``max_hands`` cap. :meth:`EnvOptions.resolve` turns those
keyword arguments into one frozen, checked value; each env adds only its own options.

>>> opts = EnvOptions.resolve(rules="standard", num_players=3, target=7)
>>> (opts.rules.num_players, opts.rules.target, opts.reward, opts.max_hands)
(3, 7, 'match', 2000)
>>> EnvOptions.resolve(max_hands=0)
Traceback (most recent call last):
...
bergen_env.errors.InvalidOptionError: option 'max_hands' must be an int >= 1 or None, got 0
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bergen_env.rules import RULE_OPTIONS, Rules, build_rules
from bergen_env.validation import (
    check_choice,
    check_int,
    check_keywords,
    did_you_mean,
    invalid,
    keyword_names,
)

#: Reward modes of the AEC env; the single-agent env adds its own (``"shaped"``, ``"win"``).
REWARD_MODES = ("match", "points")
#: A match still running after this many hands is truncated: the one default hand cap of the
#: envs, the arena and ``bergen-evaluate`` (the OpenSpiel game derives its own from it,
#: :data:`bergen_env.openspiel.MAX_HANDS`).
DEFAULT_MAX_HANDS = 2000


@dataclass(frozen=True)
class EnvOptions:
    """The rules, reward mode, hand cap and render mode of one env."""

    rules: Rules
    reward: str = "match"
    max_hands: int | None = DEFAULT_MAX_HANDS
    render_mode: str | None = None

    @classmethod
    def resolve(
        cls,
        rules: str | Rules = "standard",
        num_players: int | None = None,
        partnerships: bool | None = None,
        reward: str = "match",
        max_hands: int | None = DEFAULT_MAX_HANDS,
        render_mode: str | None = None,
        *,
        reward_modes: Sequence[str] = REWARD_MODES,
        render_modes: Sequence[str] = (),
        env_keywords: Sequence[str] = (),
        **overrides: Any,
    ) -> EnvOptions:
        """Check the env keyword arguments; ``overrides`` are single rule options.

        ``num_players`` / ``partnerships`` of None keep a given ``Rules``' seating (or the
        preset's 2 players without partnerships). ``reward_modes`` and ``render_modes``: what
        the env supports; ``env_keywords``: the env's own keyword arguments, listed (with every
        rule option) when an override is no rule option. Errors are
        :class:`~bergen_env.errors.InvalidOptionError` naming the option.
        """
        check_env_keywords(overrides, env_keywords or keyword_names(cls.resolve)[:6])
        seating = {"num_players": num_players, "partnerships": partnerships}
        seating = {k: v for k, v in seating.items() if v is not None}
        resolved = build_rules(rules, **seating, **overrides)
        check_choice("reward", reward, reward_modes)
        max_hands = check_int("max_hands", max_hands, minimum=1, allow_none=True)
        if render_mode is not None and render_mode not in render_modes:
            raise invalid("render_mode", f"one of {list(render_modes)} or None", render_mode)
        return cls(resolved, reward, max_hands, render_mode)


def check_env_keywords(overrides: dict[str, Any], env_keywords: Sequence[str]) -> None:
    """An env's ``**overrides`` must be rule options; an unknown one is an error naming the
    closest of the env's own keywords (``env_keywords``) and the rule options, and listing them."""
    if not set(overrides) <= set(RULE_OPTIONS):
        check_keywords(overrides, [*env_keywords, *RULE_OPTIONS])


#: The keys of ``reset(options=...)`` that the envs use.
RESET_OPTIONS = ("deals",)


def reset_deals(options: dict[str, Any] | None, ignored: set[str] | None = None) -> Any:
    """The ``deals`` of a ``reset(options=...)`` (None when absent).

    Other keys are ignored, as Gymnasium and PettingZoo envs do, with one warning that names
    them and the keys the envs use; ``ignored`` (the env's set of keys already warned about)
    keeps a key from being warned about at every reset.
    """
    if not options:
        return None
    unknown = set(options) - set(RESET_OPTIONS)
    if ignored is not None:
        unknown -= ignored
        ignored |= unknown
    if unknown:
        names = [did_you_mean(key, RESET_OPTIONS) for key in sorted(unknown, key=str)]
        warnings.warn(
            f"reset() ignores option(s) {', '.join(names)}: the keys it uses are "
            f"{list(RESET_OPTIONS)}",
            UserWarning,
            stacklevel=3,
        )
    return options.get("deals")
