"""Checks of option values: one home for what counts as an int, a number, a bool or a choice.

``True`` is not an int here (Python says it is), and numpy scalars count as their Python kind.
Every ``check_*`` returns the value as a plain Python value, or raises ``error`` with the message
``"<label> '<name>' must be <requirement>, got <value>"``:

>>> check_int("max_hands", 3, minimum=1)
3
>>> check_int("max_hands", True, minimum=1)
Traceback (most recent call last):
...
bergen_env.errors.InvalidOptionError: option 'max_hands' must be an int >= 1, got True
>>> check_number("temperature", 0, above=0, label="parameter", error=ValueError)
Traceback (most recent call last):
...
ValueError: parameter 'temperature' must be a number > 0, got 0
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Collection, Iterable
from typing import Any, TypeVar

import numpy as np

from bergen_env.errors import InvalidOptionError

T = TypeVar("T")


def is_bool(value: object) -> bool:
    """``True``/``False``, as Python or numpy bools."""
    return isinstance(value, (bool, np.bool_))


def is_int(value: object) -> bool:
    """A Python or numpy integer that is not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_number(value: object) -> bool:
    """An int (as :func:`is_int`) or a Python or numpy float."""
    return is_int(value) or isinstance(value, (float, np.floating))


def invalid(
    name: str,
    requirement: str,
    value: object,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
) -> Exception:
    """The error saying that ``name`` must be ``requirement`` (raise it)."""
    return error(f"{label} {name!r} must be {requirement}, got {value!r}")


def check_int(
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = False,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
) -> int | None:
    """``value`` as an int in ``minimum..maximum`` (or None where allowed)."""
    if value is None and allow_none:
        return None
    if (
        not is_int(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        if minimum is not None and maximum is not None:
            requirement = f"an int in {minimum}..{maximum}"
        elif minimum is not None:
            requirement = f"an int >= {minimum}"
        elif maximum is not None:
            requirement = f"an int <= {maximum}"
        else:
            requirement = "an int"
        raise invalid(name, requirement + (" or None" if allow_none else ""), value, label, error)
    return int(value)


def check_number(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    above: float | None = None,
    allow_none: bool = False,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
) -> float | None:
    """``value`` as a float, ``>= minimum`` and ``> above`` where given (or None if allowed)."""
    if value is None and allow_none:
        return None
    if (
        not is_number(value)
        or (minimum is not None and not value >= minimum)
        or (above is not None and not value > above)
    ):
        requirement = "a number"
        if minimum is not None:
            requirement += f" >= {minimum}"
        if above is not None:
            requirement += f" > {above}"
        raise invalid(name, requirement + (" or None" if allow_none else ""), value, label, error)
    return float(value)


def check_bool(
    name: str, value: Any, *, label: str = "option", error: type[Exception] = InvalidOptionError
) -> bool:
    """``value`` as a bool (``True``/``False`` only, not 0/1)."""
    if not is_bool(value):
        raise invalid(name, "True or False", value, label, error)
    return bool(value)


def check_choice(
    name: str,
    value: T,
    choices: Collection[Any],
    *,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
) -> T:
    """``value`` if it is one of ``choices`` (compared by type too, so ``True`` is not ``1``)."""
    if not any(type(value) is type(c) and value == c for c in choices):
        raise invalid(name, f"one of {tuple(choices)}", value, label, error)
    return value


def keyword_names(func: Callable[..., Any]) -> list[str]:
    """The parameters of ``func`` that a caller can pass by keyword (no ``self``, ``*args``,
    ``**kwargs``), in signature order."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        p.name
        for p in inspect.signature(func).parameters.values()
        if p.kind in kinds and p.name != "self"
    ]


def takes_any_keyword(func: Callable[..., Any]) -> bool:
    """Whether ``func`` has a ``**kwargs`` parameter (so any keyword may be valid)."""
    kinds = {p.kind for p in inspect.signature(func).parameters.values()}
    return inspect.Parameter.VAR_KEYWORD in kinds


def did_you_mean(name: object, valid: Iterable[object]) -> str:
    """``name`` quoted, with the closest of ``valid`` (difflib) where one is close.

    >>> did_you_mean("sampels", ["samples", "seed"])
    "'sampels' (did you mean 'samples'?)"
    """
    return f"{name!r}{closest(name, valid)}"


def closest(name: object, valid: Iterable[object]) -> str:
    """`` (did you mean 'x'?)`` with the closest of ``valid`` to ``name`` (difflib), or ``""``."""
    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_message(unknown: Iterable[str], valid: Iterable[str], label: str = "option") -> str:
    """The message for ``unknown`` keywords: each named with the closest valid one, then every
    valid keyword.

    >>> unknown_message(["num_player"], ["num_players", "rules"])
    "unknown option 'num_player' (did you mean 'num_players'?); valid options: ['num_players', 'rules']"
    """  # noqa: E501
    valid = list(dict.fromkeys(valid))
    named = [did_you_mean(name, valid) for name in sorted(set(unknown), key=str)]
    plural = "s" if len(named) > 1 else ""
    return f"unknown {label}{plural} {', '.join(named)}; valid {label}s: {valid}"


def check_keywords(
    given: Iterable[str],
    valid: Iterable[str],
    *,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
    context: str = "",
) -> None:
    """Raise ``error(context + unknown_message(...))`` if any of ``given`` is not in ``valid``."""
    valid = list(valid)
    unknown = set(given) - set(valid)
    if unknown:
        raise error(context + unknown_message(unknown, valid, label))
