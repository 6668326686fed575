"""What a web table may be: its rules within bounds, its seats, seed and language.

A table is asked for in two forms: a JSON body (``POST /api/tables``; values typed) and the
query of a ``/play?...`` link (``POST /api/play``; every value text, typed here by the preset's
own type for each option). Both end in :func:`table_request`. Bad input is a
:class:`~bergen_env.web.errors.TableError` naming the option or key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bergen_env.errors import InvalidOptionError
from bergen_env.rules import RULE_OPTIONS, Rules
from bergen_env.validation import unknown_message
from bergen_env.web.errors import TableError, excerpt
from bergen_env.web.i18n import LANGUAGES

#: The seat kind of a person (every other kind names an agent of the menu).
PERSON = "person"

#: The largest value of each integer rule option at a web table (the engine allows more), so
#: that no table can ask for a match that never ends. Every match also ends after
#: :attr:`Limits.max_hands` hands.
OPTION_LIMITS: dict[str, int] = {
    "target": 500,
    "hand_size": 28,
    "reserve": 28,
    "domino_points": 100,
    "blocked_points": 100,
    "leftover_penalty": 100,
    "sets": 2,
}

#: The largest deal seed.
MAX_SEED = 2**63 - 1

#: Query parameters of a ``/play`` link besides the rule options.
PLAY_PARAMS = (
    "players",
    "num_players",
    "partnerships",
    "preset",
    "rules",
    "opponents",
    "seats",
    "seed",
    "lang",
)
#: Keys of a ``POST /api/tables`` body.
CREATE_KEYS = ("preset", "num_players", "partnerships", "options", "seats", "seed", "lang")


@dataclass(frozen=True)
class TableRequest:
    """A checked request for a table."""

    rules: Rules
    kinds: list[str]
    seed: int | None
    lang: str


def _bad_option(name: str, message: str) -> TableError:
    return TableError(400, "bad_option", message, option=name)


def _parse_bool(name: str, text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise _bad_option(name, f"option {name!r} must be true or false, got {excerpt(text)}")


def _parse_int(name: str, text: str) -> int:
    text = text.strip()
    if len(text) > 20 or not text.lstrip("-").isdigit():
        raise _bad_option(name, f"option {name!r} must be an integer, got {excerpt(text)}")
    return int(text)


def refuse_unknown(names: Iterable[Any], valid: Sequence[str], what: str) -> None:
    """A 400 naming the first unknown name of ``names`` and the closest valid one."""
    unknown = sorted((str(n) for n in names if n not in valid), key=len)
    if not unknown:
        return
    first = unknown[0][:30]
    raise TableError(400, "unknown_option", unknown_message([first], valid, what), option=first)


def build_rules(
    preset: Any, num_players: Any, partnerships: Any, options: Mapping[str, Any], *, text: bool
) -> Rules:
    """Validated :class:`Rules` within :data:`OPTION_LIMITS` from a preset, seating and options.

    With ``text=True`` (query strings) values are parsed by the type the preset gives each
    option; JSON values are passed as they are.
    """
    if text:
        num_players = _parse_int("players", str(num_players))
        partnerships = _parse_bool("partnerships", str(partnerships))
    refuse_unknown(options, RULE_OPTIONS, "rule option")
    if not isinstance(preset, str) or len(preset) > 40:
        raise _bad_option("preset", f"'preset' must be a preset name, got {excerpt(preset)}")
    try:
        base = Rules.preset(preset, num_players=num_players, partnerships=partnerships)
        overrides: dict[str, Any] = {}
        for name, value in options.items():
            current = getattr(base, name)
            if text:
                if isinstance(current, bool):
                    value = _parse_bool(name, value)
                elif isinstance(current, int):
                    value = _parse_int(name, value)
            if type(value) is not type(current):
                raise _bad_option(
                    name,
                    f"option {name!r} must be a {type(current).__name__}, got {excerpt(value)}",
                )
            top = OPTION_LIMITS.get(name)
            if top is not None and value > top:
                raise _bad_option(
                    name, f"option {name!r} must be <= {top} at web tables, got {value}"
                )
            overrides[name] = value
        return Rules.preset(preset, num_players=num_players, partnerships=partnerships, **overrides)
    except InvalidOptionError as exc:
        raise TableError(400, "bad_option", str(exc)[:300]) from None
    except TypeError:
        raise _bad_option("num_players", "the seating must be an integer and a boolean") from None


def seat_kinds(rules: Rules, seats: Any, opponents: Any) -> list[str]:
    """Every seat's kind from ``seats`` (all of them) or ``opponents`` (the seats after 1)."""
    if seats is not None:
        kinds = seats.split(",") if isinstance(seats, str) else seats
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise TableError(
                400, "bad_seats", "'seats' must be a list of seat kinds (person or an agent)"
            )
        if len(kinds) != rules.num_players:
            raise TableError(
                400,
                "bad_seats",
                f"'seats' names {len(kinds)} seat(s) but the game has {rules.num_players}",
            )
        return [k.strip()[:40] for k in kinds]
    others = [k.strip()[:40] for k in str(opponents)[:400].split(",")]
    if len(others) == 1:
        others *= rules.num_players - 1
    if len(others) != rules.num_players - 1:
        raise TableError(
            400,
            "bad_seats",
            f"'opponents' names {len(others)} agents for {rules.num_players - 1} other seat(s); "
            "name one for all or one per seat",
        )
    return [PERSON, *others]


def language(value: Any) -> str:
    """A language code of the catalog (English when none is given)."""
    lang = "en" if value is None or value == "" else value
    if not isinstance(lang, str) or lang not in LANGUAGES:
        raise TableError(
            400,
            "bad_language",
            f"unknown language {excerpt(lang, 20)}; choose one of {list(LANGUAGES)}",
        )
    return lang


def seed_value(value: Any, text: bool) -> int | None:
    """The deal seed of a request (None: a random one)."""
    if value is None:
        return None
    seed = _parse_int("seed", value) if text else value
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise TableError(
            400, "bad_seed", f"'seed' must be an integer in 0..{MAX_SEED}, got {excerpt(value)}"
        )
    return seed


def table_request(rules: Rules, kinds: list[str], seed: Any, lang: Any, text: bool) -> TableRequest:
    """A checked request; a seed is refused where two or more people sit: whoever chose it
    would know the others' hands and the boneyard."""
    chosen = seed_value(seed, text)
    if chosen is not None and kinds.count(PERSON) >= 2:
        raise TableError(
            400,
            "seed_with_people",
            "'seed' is refused at a table of two or more people: whoever chose it would know "
            "the others' tiles; leave it out for a random deal",
        )
    return TableRequest(rules, kinds, chosen, language(lang))


def from_body(body: Mapping[str, Any]) -> TableRequest:
    """The table asked for by a ``POST /api/tables`` body."""
    options = body.get("options", {})
    if not isinstance(options, dict):
        raise TableError(400, "bad_option", "'options' must be an object of rule options")
    rules = build_rules(
        body.get("preset", "standard"),
        body.get("num_players", 2),
        body.get("partnerships", False),
        options,
        text=False,
    )
    kinds = seat_kinds(rules, body.get("seats"), "greedy")
    return table_request(rules, kinds, body.get("seed"), body.get("lang"), text=False)


def from_query(query: Mapping[str, Any]) -> TableRequest:
    """The table asked for by a ``/play?...`` link's query (every value text)."""
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in query.items()):
        raise TableError(400, "bad_query", "a link's query holds text values only")
    refuse_unknown(query, PLAY_PARAMS + RULE_OPTIONS, "query parameter")
    options = {k: query[k] for k in RULE_OPTIONS if k in query}
    players = query.get("players", query.get("num_players", "2"))
    preset = query.get("preset", query.get("rules", "standard"))
    rules = build_rules(preset, players, query.get("partnerships", "false"), options, text=True)
    kinds = seat_kinds(rules, query.get("seats"), query.get("opponents", "greedy"))
    return table_request(rules, kinds, query.get("seed"), query.get("lang"), text=True)
