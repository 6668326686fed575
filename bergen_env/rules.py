"""The rule options of RULES.md ("Options") as one frozen, validated object, with the five
presets (standard, traditional, double_set, draw and fives; RULES.md, "Presets").

>>> r = Rules.preset("standard", num_players=4, partnerships=True)
>>> (r.hand_size, r.target, r.num_sides)
(5, 15, 2)
>>> Rules.preset("standard", lead="highest", domino_points=5).lead
'highest'
>>> Rules.preset("fives", num_players=4).num_sides  # Fives and Draw: partners by default
2
>>> Rules.preset("standard", reserve=-1)
Traceback (most recent call last):
...
bergen_env.errors.InvalidOptionError: option 'reserve' must be >= 0, got -1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from bergen_env.errors import InvalidOptionError
from bergen_env.option_text import parse_options
from bergen_env.scoring import OUT_SCORINGS, PLAY_SCORINGS
from bergen_env.tiles import NUM_TILES
from bergen_env.validation import check_bool, check_int, check_keywords, did_you_mean

PRESETS = ("standard", "traditional", "double_set", "draw", "fives")
#: Presets that seat four players as two partnerships unless ``partnerships=False``
#: (RULES.md, "Presets").
PARTNERSHIP_PRESETS = ("draw", "fives")
LEADS = ("lowest", "highest", "highest_any", "rotate")
#: Leads decided by a double: a deal in which no seat holds one is redealt
#: (RULES.md, "Dealing and the lead").
DOUBLE_LEADS = ("lowest", "highest", "highest_any")
#: Leads where the hand's first play is any tile the leader holds, a choice (the others force
#: the deciding double) (RULES.md, "Dealing and the lead").
FREE_LEADS = ("highest_any", "rotate")
BLOCKED_RULES = ("german", "american", "pips", "most_doubles")

#: Options that a preset sets and a keyword argument may override (RULES.md, "Presets").
RULE_OPTIONS = (
    "sets",
    "hand_size",
    "lead",
    "reserve",
    "domino_points",
    "blocked_rule",
    "blocked_points",
    "leftover_penalty",
    "end_caps",
    "target",
    "voluntary_draw",
    "play_scoring",
    "out_scoring",
    "single_hand",
)

_INT_OPTIONS = (
    "num_players",
    "sets",
    "hand_size",
    "reserve",
    "domino_points",
    "blocked_points",
    "leftover_penalty",
    "target",
)
_BOOL_OPTIONS = ("partnerships", "end_caps", "voluntary_draw", "single_hand")
#: The seating keywords of every entry point (envs, configs, the web, OpenSpiel).
SEATING = ("num_players", "partnerships")
#: The declared type of the preset keyword, the seating and every rule option: what their text
#: is typed as (:mod:`bergen_env.option_text`).
OPTION_TYPES: dict[str, type] = {
    "rules": str,
    **{name: int if name in _INT_OPTIONS else bool for name in SEATING},
    **{
        name: int if name in _INT_OPTIONS else bool if name in _BOOL_OPTIONS else str
        for name in RULE_OPTIONS
    },
}


def _preset_values(preset: str, num_players: int, num_sides: int) -> dict[str, Any]:
    """The option values of a preset for a player count (the table of RULES.md, "Presets")."""
    if preset == "standard":
        return dict(
            sets=1,
            hand_size={2: 6, 3: 6, 4: 5}[num_players],
            lead="lowest",
            reserve=2,
            domino_points=2,
            blocked_rule="german",
            blocked_points=2,
            leftover_penalty=0,
            end_caps=True,
            target=15 if num_sides == 2 else 10,
            voluntary_draw=False,
        )
    if preset in ("traditional", "double_set"):
        return dict(
            sets=2 if preset == "double_set" else 1,
            hand_size=8 - num_players,
            lead="highest",
            reserve=0,
            domino_points=1,
            blocked_rule="most_doubles",
            blocked_points=1,
            leftover_penalty=1,
            end_caps=False,
            target=25 if preset == "double_set" else 15,
            voluntary_draw=False,
        )
    if preset in ("draw", "fives"):
        fives = preset == "fives"
        return dict(
            sets=1,
            hand_size={2: 7, 3: 5, 4: 5}[num_players],
            lead="rotate" if fives else "highest_any",
            reserve=(2 if num_players == 2 else 1) if fives else 0,
            domino_points=0,
            blocked_rule="pips",
            blocked_points=0,
            leftover_penalty=0,
            end_caps=False,
            target=61 if fives else 0,
            voluntary_draw=False,
            play_scoring="fives" if fives else "none",
            out_scoring="pips_fives" if fives else "pips",
            single_hand=not fives,
        )
    raise InvalidOptionError(
        f"option 'rules': unknown preset {did_you_mean(preset, PRESETS)}; choose one of {PRESETS}"
    )


@dataclass(frozen=True, kw_only=True)
class Rules:
    """Every rule option of a Bergen match. Build one with :meth:`preset`.

    Direct construction needs every option; it is validated either way and an error names the
    offending option.
    """

    num_players: int
    partnerships: bool = False
    sets: int
    hand_size: int
    lead: str
    reserve: int
    domino_points: int
    blocked_rule: str
    blocked_points: int
    leftover_penalty: int
    end_caps: bool
    target: int
    voluntary_draw: bool = False
    play_scoring: str = "headers"
    out_scoring: str = "fixed"
    single_hand: bool = False
    #: The preset this was built from (informational; ``"custom"`` for direct construction).
    name: str = "custom"

    @classmethod
    def preset(
        cls,
        rules: str = "standard",
        *,
        num_players: int = 2,
        partnerships: bool | None = None,
        **overrides: Any,
    ) -> Rules:
        """The preset ``rules`` for ``num_players`` seats, with single options overridden.

        ``partnerships=None``: partnerships for ``draw`` and ``fives`` with four players (as
        those games are played), individual play otherwise.
        """
        check_keywords(overrides, RULE_OPTIONS, label="rule option")
        check_int("num_players", num_players)
        if partnerships is None:
            partnerships = num_players == 4 and rules in PARTNERSHIP_PRESETS
        check_bool("partnerships", partnerships)
        if num_players not in (2, 3, 4):
            raise InvalidOptionError(f"option 'num_players' must be 2, 3 or 4, got {num_players}")
        num_sides = 2 if partnerships else num_players
        values = _preset_values(rules, num_players, num_sides)
        values.update(overrides)
        return cls(num_players=num_players, partnerships=partnerships, name=rules, **values)

    def replace(self, **overrides: Any) -> Rules:
        """A copy with some options changed (validated)."""
        check_keywords(overrides, [*RULE_OPTIONS, "num_players", "partnerships"], label="option")
        return dataclasses.replace(self, **overrides)

    def __post_init__(self) -> None:
        for name in _INT_OPTIONS:
            object.__setattr__(self, name, check_int(name, getattr(self, name)))  # numpy -> int
        for name in _BOOL_OPTIONS:
            object.__setattr__(self, name, check_bool(name, getattr(self, name)))
        if self.num_players not in (2, 3, 4):
            raise InvalidOptionError(
                f"option 'num_players' must be 2, 3 or 4, got {self.num_players}"
            )
        if self.partnerships and self.num_players != 4:
            raise InvalidOptionError(
                f"option 'partnerships' needs 4 players, got num_players={self.num_players}"
            )
        if self.sets not in (1, 2):
            raise InvalidOptionError(f"option 'sets' must be 1 or 2, got {self.sets}")
        if self.lead not in LEADS:
            raise InvalidOptionError(f"option 'lead' must be one of {LEADS}, got {self.lead!r}")
        if self.blocked_rule not in BLOCKED_RULES:
            raise InvalidOptionError(
                f"option 'blocked_rule' must be one of {BLOCKED_RULES}, got {self.blocked_rule!r}"
            )
        if self.hand_size < 1:
            raise InvalidOptionError(f"option 'hand_size' must be >= 1, got {self.hand_size}")
        for name in ("reserve", "domino_points", "blocked_points", "leftover_penalty"):
            if getattr(self, name) < 0:
                raise InvalidOptionError(f"option {name!r} must be >= 0, got {getattr(self, name)}")
        if self.play_scoring not in PLAY_SCORINGS:
            raise InvalidOptionError(
                f"option 'play_scoring' must be one of {PLAY_SCORINGS}, got {self.play_scoring!r}"
            )
        if self.out_scoring not in OUT_SCORINGS:
            raise InvalidOptionError(
                f"option 'out_scoring' must be one of {OUT_SCORINGS}, got {self.out_scoring!r}"
            )
        if self.end_caps and self.play_scoring != "headers":
            raise InvalidOptionError(
                f"option 'end_caps' applies to play_scoring='headers' only, "
                f"not {self.play_scoring!r}; set end_caps=False"
            )
        if self.double_play and self.play_scoring != "headers":
            raise InvalidOptionError(
                f"option 'sets'=2 (the double play) needs play_scoring='headers', "
                f"got {self.play_scoring!r}"
            )
        if self.out_scoring != "fixed":
            for name in ("domino_points", "blocked_points", "leftover_penalty"):
                if getattr(self, name):
                    raise InvalidOptionError(
                        f"option {name!r} applies to out_scoring='fixed' only, not "
                        f"{self.out_scoring!r}; set {name}=0"
                    )
        if self.single_hand:
            if self.target < 0:
                raise InvalidOptionError(
                    f"option 'target' must be >= 0 (0: none) with single_hand, got {self.target}"
                )
        elif self.target < 1:
            raise InvalidOptionError(f"option 'target' must be >= 1, got {self.target}")
        dealt = self.num_players * self.hand_size + self.reserve
        if dealt > self.num_tiles:
            raise InvalidOptionError(
                f"options 'hand_size' and 'reserve': {self.num_players} hands of "
                f"{self.hand_size} plus a reserve of {self.reserve} need {dealt} tiles, "
                f"but the set has {self.num_tiles}"
            )

    # Derived quantities -------------------------------------------------------------------

    @property
    def num_sides(self) -> int:
        """Number of scoring sides (2 in partnerships, else one per seat)."""
        return 2 if self.partnerships else self.num_players

    @property
    def side_of(self) -> tuple[int, ...]:
        """``side_of[seat]``: seats 0 & 2 and 1 & 3 are partners in partnerships."""
        if self.partnerships:
            return tuple(seat % 2 for seat in range(self.num_players))
        return tuple(range(self.num_players))

    @property
    def free_lead(self) -> bool:
        """Whether a hand's first play is the leader's choice of any tile it holds
        (:data:`FREE_LEADS`), not a forced double."""
        return self.lead in FREE_LEADS

    @property
    def num_tiles(self) -> int:
        """Tiles in play: 28 per set."""
        return NUM_TILES * self.sets

    @property
    def double_play(self) -> bool:
        """Whether the double play of both ``[n|n]`` copies exists (two sets only)."""
        return self.sets == 2

    @property
    def has_target(self) -> bool:
        """Whether reaching ``target`` ends the match (not so for ``target=0`` of a single hand)."""
        return self.target > 0

    @property
    def score_scale(self) -> int:
        """What scores are measured against: the target, or 100 points without one."""
        return self.target if self.target > 0 else 100

    @property
    def num_actions(self) -> int:
        """Size of the action space: 58, or 65 with the double plays."""
        return 65 if self.double_play else 58

    @property
    def boneyard_size(self) -> int:
        """Tiles left undealt at the start of a hand."""
        return self.num_tiles - self.num_players * self.hand_size

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON-able values."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rules:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        check_keywords(data, [f.name for f in fields(cls)], label="option")
        return cls(**data)

    def describe(self) -> str:
        """One line naming every option."""
        opts = ", ".join(f"{k}={getattr(self, k)!r}" for k in RULE_OPTIONS)
        seats = f"{self.num_players}p" + (" partnerships" if self.partnerships else "")
        return f"{self.name} ({seats}): {opts}"


def build_rules(
    rules: str | Rules = "standard",
    *,
    num_players: int | None = None,
    partnerships: bool | None = None,
    **options: Any,
) -> Rules:
    """The rules of every entry point: a preset name (or a :class:`Rules`), the seating and
    single rule options, checked once (errors name the option).

    ``num_players=None`` keeps a given ``Rules``' count, else 2; ``partnerships=None`` keeps a
    given ``Rules``' seating, else as the preset plays it (:meth:`Rules.preset`). Option text is
    typed first by :func:`parse_rule_options`.

    >>> build_rules("fives", num_players=4, target=31).describe()[:34]
    'fives (4p partnerships): sets=1, h'
    """
    if isinstance(rules, Rules):
        seating = {"num_players": num_players, "partnerships": partnerships}
        for key, value in seating.items():
            if value is not None and value != getattr(rules, key):
                raise InvalidOptionError(
                    f"option {key!r}={value!r} contradicts the given Rules "
                    f"({key}={getattr(rules, key)!r})"
                )
        return rules.replace(**options) if options else rules
    if not isinstance(rules, str):
        raise InvalidOptionError(f"option 'rules' must be a preset name or Rules, got {rules!r}")
    return Rules.preset(
        rules,
        num_players=2 if num_players is None else num_players,
        partnerships=partnerships,
        **options,
    )


def parse_rule_options(
    text: str | Mapping[str, str] | Iterable[str],
    *,
    names: Iterable[str] = RULE_OPTIONS,
    error: type[Exception] = InvalidOptionError,
    context: str = "",
) -> dict[str, Any]:
    """Rule options written as text (``"target=31,end_caps=false"``, ``"key=value"`` items or
    a mapping of texts), each typed by its option's type (:data:`OPTION_TYPES`).

    >>> parse_rule_options("target=31, end_caps=false, lead=highest")
    {'target': 31, 'end_caps': False, 'lead': 'highest'}
    """
    declared = {name: OPTION_TYPES[name] for name in names}
    return parse_options(text, declared, label="rule option", error=error, context=context)
