"""The rule options of RULES.md §3 as one frozen, validated object, with the three presets.

>>> r = Rules.preset("standard", num_players=4, partnerships=True)
>>> (r.hand_size, r.target, r.num_sides)
(5, 15, 2)
>>> Rules.preset("standard", lead="highest", domino_points=5).lead
'highest'
>>> Rules.preset("standard", reserve=-1)
Traceback (most recent call last):
...
bergen_env.errors.InvalidOptionError: option 'reserve' must be >= 0, got -1
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

from bergen_env.errors import InvalidOptionError
from bergen_env.tiles import NUM_TILES
from bergen_env.validation import check_bool, check_int

PRESETS = ("standard", "traditional", "double_set")
LEADS = ("lowest", "highest")
BLOCKED_RULES = ("german", "american", "pips", "most_doubles")

#: Options that a preset sets and a keyword argument may override (RULES.md §3 and §5).
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
_BOOL_OPTIONS = ("partnerships", "end_caps", "voluntary_draw")


def _preset_values(preset: str, num_players: int, num_sides: int) -> dict[str, Any]:
    """The option values of a preset for a player count (RULES.md §3 table)."""
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
    raise InvalidOptionError(f"option 'rules': unknown preset {preset!r}; choose one of {PRESETS}")


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
    #: The preset this was built from (informational; ``"custom"`` for direct construction).
    name: str = "custom"

    @classmethod
    def preset(
        cls,
        rules: str = "standard",
        *,
        num_players: int = 2,
        partnerships: bool = False,
        **overrides: Any,
    ) -> Rules:
        """The preset ``rules`` for ``num_players`` seats, with single options overridden."""
        unknown = sorted(set(overrides) - set(RULE_OPTIONS))
        if unknown:
            raise InvalidOptionError(
                f"unknown rule option(s) {unknown}; valid options are {list(RULE_OPTIONS)}"
            )
        check_int("num_players", num_players)
        check_bool("partnerships", partnerships)
        if num_players not in (2, 3, 4):
            raise InvalidOptionError(f"option 'num_players' must be 2, 3 or 4, got {num_players}")
        num_sides = 2 if partnerships else num_players
        values = _preset_values(rules, num_players, num_sides)
        values.update(overrides)
        return cls(num_players=num_players, partnerships=partnerships, name=rules, **values)

    def replace(self, **overrides: Any) -> Rules:
        """A copy with some options changed (validated)."""
        unknown = sorted(set(overrides) - set(RULE_OPTIONS) - {"num_players", "partnerships"})
        if unknown:
            raise InvalidOptionError(f"unknown rule option(s) {unknown}")
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
        if self.target < 1:
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
    def num_tiles(self) -> int:
        """Tiles in play: 28 per set."""
        return NUM_TILES * self.sets

    @property
    def double_play(self) -> bool:
        """Whether the double play of both ``[n|n]`` copies exists (two sets only)."""
        return self.sets == 2

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
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidOptionError(f"unknown rule option(s) {unknown}")
        return cls(**data)

    def describe(self) -> str:
        """One line naming every option."""
        opts = ", ".join(f"{k}={getattr(self, k)!r}" for k in RULE_OPTIONS)
        seats = f"{self.num_players}p" + (" partnerships" if self.partnerships else "")
        return f"{self.name} ({seats}): {opts}"


def make_rules(rules: str | Rules = "standard", **kwargs: Any) -> Rules:
    """Resolve the env's keyword arguments (a preset name or ``Rules``, plus overrides)."""
    if isinstance(rules, Rules):
        for key in ("num_players", "partnerships"):
            if key in kwargs and kwargs[key] != getattr(rules, key):
                raise InvalidOptionError(
                    f"option {key!r}={kwargs[key]!r} contradicts the given Rules "
                    f"({key}={getattr(rules, key)!r})"
                )
            kwargs.pop(key, None)
        return rules.replace(**kwargs) if kwargs else rules
    if not isinstance(rules, str):
        raise InvalidOptionError(f"option 'rules' must be a preset name or Rules, got {rules!r}")
    return Rules.preset(rules, **kwargs)
