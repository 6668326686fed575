"""What a web table may be: its rules within bounds, its seats, seed and language.

A table is asked for in two forms: a JSON body (``POST /api/tables``; values typed) and the
query of a ``/play?...`` link (``POST /api/play``; every value text, typed by each option's type
with the one rule of :mod:`bergen_env.option_text`). Both end in :func:`table_request`. Their keys
are the keywords of :func:`bergen_env.rules.build_rules` (``rules``, ``num_players``,
``partnerships``). A link's former ``preset`` and ``players`` still open the table they meant
(read as ``rules`` and ``num_players``); a JSON body refuses them with the new name. Bad input is a
:class:`~bergen_env.web.errors.TableError` naming the option or key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bergen_env.errors import InvalidOptionError
from bergen_env.option_text import parse_value
from bergen_env.rules import OPTION_TYPES, RULE_OPTIONS, Rules, build_rules
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

#: Query parameters of a ``/play`` link besides the rule options (the keywords of
#: :func:`bergen_env.rules.build_rules`, as every entry point spells them).
PLAY_PARAMS = ("rules", "num_players", "partnerships", "opponents", "seats", "seed", "lang")
#: Keys of a ``POST /api/tables`` body.
CREATE_KEYS = ("rules", "num_players", "partnerships", "options", "seats", "seed", "lang")
#: Former names of keys and query parameters: a link's are read as the new name (links shared
#: before the rename open the table they meant), a JSON body's are refused with the new name.
RENAMED = {"preset": "rules", "players": "num_players"}


@dataclass(frozen=True)
class TableRequest:
    """A checked request for a table."""

    rules: Rules
    kinds: list[str]
    seed: int | None
    lang: str


def _bad_option(name: str, message: str) -> TableError:
    return TableError(400, "bad_option", message, option=name)


def _typed(name: str, text: Any, kind: type, label: str = "option") -> Any:
    """A text value of a link as a ``kind`` (:func:`bergen_env.option_text.parse_value`)."""
    try:
        return parse_value(name, str(text)[:60], kind, label=label)
    except InvalidOptionError as exc:
        raise _bad_option(name, str(exc)) from None


def refuse_unknown(names: Iterable[Any], valid: Sequence[str], what: str) -> None:
    """A 400 naming the first unknown name of ``names`` and the closest valid one (a former name
    of a key: its new name)."""
    for name in names:
        if name in RENAMED and RENAMED[name] in valid:
            raise TableError(
                400,
                "renamed_option",
                f"{what} {name!r} is now called {RENAMED[name]!r}",
                option=name,
                new=RENAMED[name],
            )
    unknown = sorted((str(n) for n in names if n not in valid), key=len)
    if not unknown:
        return
    first = unknown[0][:30]
    raise TableError(400, "unknown_option", unknown_message([first], valid, what), option=first)


def table_rules(
    preset: Any, num_players: Any, partnerships: Any, options: Mapping[str, Any], *, text: bool
) -> Rules:
    """Validated :class:`Rules` within :data:`OPTION_LIMITS` from a preset, seating and options
    (:func:`bergen_env.rules.build_rules`).

    With ``text=True`` (a link's query) each value is typed by its option's type
    (:func:`bergen_env.option_text.parse_value`); JSON values must have that type already.
    """
    refuse_unknown(options, RULE_OPTIONS, "rule option")
    if not isinstance(preset, str) or len(preset) > 40:
        raise _bad_option("rules", f"'rules' must be a preset name, got {excerpt(preset)}")
    if text:
        num_players = _typed("num_players", num_players, int)
        partnerships = _typed("partnerships", partnerships, bool)
    overrides: dict[str, Any] = {}
    for name, value in options.items():
        kind = OPTION_TYPES[name]
        if text:
            value = _typed(name, value, kind, "rule option")
        if type(value) is not kind:
            raise _bad_option(
                name, f"option {name!r} must be a {kind.__name__}, got {excerpt(value)}"
            )
        top = OPTION_LIMITS.get(name)
        if top is not None and value > top:
            raise _bad_option(name, f"option {name!r} must be <= {top} at web tables, got {value}")
        overrides[name] = value
    try:
        return build_rules(preset, num_players=num_players, partnerships=partnerships, **overrides)
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
    seed = _typed("seed", value, int) if text else value
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
    rules = table_rules(
        body.get("rules", "standard"),
        body.get("num_players", 2),
        body.get("partnerships", False),
        options,
        text=False,
    )
    kinds = seat_kinds(rules, body.get("seats"), "greedy")
    return table_request(rules, kinds, body.get("seed"), body.get("lang"), text=False)


def current_names(query: Mapping[str, Any]) -> dict[str, Any]:
    """A link's query with its former parameter names (:data:`RENAMED`) read as the new ones; a
    link that gives both names different values is a 400 naming both."""
    out = dict(query)
    for old, new in RENAMED.items():
        if old not in out:
            continue
        value = out.pop(old)
        if out.setdefault(new, value) != value:
            raise TableError(
                400,
                "renamed_option",
                f"query parameter {old!r} is the former name of {new!r}, and the link gives "
                f"both with different values: keep {new!r} only",
                option=old,
                new=new,
            )
    return out


def from_query(query: Mapping[str, Any]) -> TableRequest:
    """The table asked for by a ``/play?...`` link's query (every value text)."""
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in query.items()):
        raise TableError(400, "bad_query", "a link's query holds text values only")
    query = current_names(query)
    refuse_unknown(query, PLAY_PARAMS + RULE_OPTIONS, "query parameter")
    options = {k: query[k] for k in RULE_OPTIONS if k in query}
    rules = table_rules(
        query.get("rules", "standard"),
        query.get("num_players", "2"),
        query.get("partnerships", "false"),
        options,
        text=True,
    )
    kinds = seat_kinds(rules, query.get("seats"), query.get("opponents", "greedy"))
    return table_request(rules, kinds, query.get("seed"), query.get("lang"), text=True)
