"""Option text: ``key=value,key=value`` split into names and values, each typed by one rule.

Every program that reads options as text uses this module: agent strings
(``"search:samples=200,prune=true"``), ``--rule-override KEY=VALUE`` of the command lines, the
query of a web ``/play?...`` link, and :func:`bergen_env.rules.parse_rule_options`.

The typing rule, applied to the stripped text of one value:

==============  ========================================================================
declared type   accepted text
==============  ========================================================================
``bool``        ``true`` or ``false`` (any case); nothing else (not ``1``, ``yes``, ``on``)
``int``         decimal digits with an optional leading ``-`` (at most 20 characters;
                no ``+``, ``_``, spaces or ``3.0``)
``float``       an int as above, or a decimal number ``-1.5``, ``.5``, ``2e-3``; not
                ``nan`` or ``inf``
``str``         any text, as it is
a union         its members tried in the order bool, int, float, str (``None`` is no
                text: leave the option out for its default)
none declared   the first of bool, int, float that accepts the text, else the text
==============  ========================================================================

A value that its declared type refuses is an error naming the option and the value; an
unknown name is an error naming the closest valid one (:func:`bergen_env.validation.closest`).

>>> parse_options("samples=200, prune=TRUE, temperature=1", {"samples": int, "prune": bool,
...     "temperature": float})
{'samples': 200, 'prune': True, 'temperature': 1.0}
>>> parse_options("target=ten", {"target": int})
Traceback (most recent call last):
...
bergen_env.errors.InvalidOptionError: option 'target' must be an int, got 'ten'
>>> parse_options("traget=5", {"target": int})
Traceback (most recent call last):
...
bergen_env.errors.InvalidOptionError: unknown option 'traget' (did you mean 'target'?); valid options: ['target']
"""  # noqa: E501

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bergen_env.errors import InvalidOptionError
from bergen_env.validation import check_keywords, invalid

#: The words of a yes/no value.
BOOL_WORDS = {"true": True, "false": False}
#: The longest int text (enough for any 64-bit value): longer text is refused, not parsed.
MAX_INT_CHARS = 20
_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
#: The order in which the members of a union (and an undeclared value) are tried.
_ORDER = (bool, int, float, str)
_REQUIREMENT = {bool: "true or false", int: "an int", float: "a number", str: "text"}


def _typed(text: str, kind: type) -> tuple[bool, Any]:
    """``(True, value)`` if ``text`` is a ``kind`` by the typing rule, else ``(False, None)``."""
    if kind is bool:
        word = text.lower()
        return (word in BOOL_WORDS, BOOL_WORDS.get(word))
    if kind is int:
        ok = len(text) <= MAX_INT_CHARS and _INT.fullmatch(text) is not None
        return (ok, int(text) if ok else None)
    if kind is float:
        ok = len(text) <= 2 * MAX_INT_CHARS and _FLOAT.fullmatch(text) is not None
        value = float(text) if ok else None
        return (ok and value is not None and abs(value) != float("inf"), value)
    return (True, text)


def _kinds(declared: Any) -> tuple[type, ...]:
    """The types of :data:`_ORDER` that ``declared`` (a type, a union or None) allows."""
    if declared is None or declared is Any:
        return ()
    members = typing.get_args(declared) if _is_union(declared) else (declared,)
    allowed = tuple(k for k in _ORDER if k in members)
    if not allowed:  # a type the text cannot spell (a path, an agent): the text itself
        return (str,)
    return allowed


def _is_union(declared: Any) -> bool:
    return typing.get_origin(declared) in (typing.Union, types.UnionType)


def parse_value(
    name: str,
    text: str,
    declared: Any = None,
    *,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
) -> Any:
    """``text`` (stripped) as a value of ``declared`` by the typing rule of this module.

    ``declared`` is a type, a union of types, or None (nothing declared: bool, int, float,
    else the text). A value the declared type refuses raises ``error`` naming ``name``.
    """
    text = text.strip()
    kinds = _kinds(declared)
    for kind in kinds or _ORDER:
        ok, value = _typed(text, kind)
        if ok:
            return value
    requirement = " or ".join(_REQUIREMENT[k] for k in kinds)
    raise invalid(name, requirement, text[:60], label, error)


def split_options(
    text: str,
    *,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
    context: str = "",
) -> dict[str, str]:
    """``"key=value,key=value"`` as ``{key: value text}`` (keys and values stripped).

    An empty text has no options; an item without ``=`` or a key, and a key given twice, raise
    ``error`` (prefixed by ``context``).
    """
    if not text.strip():
        return {}
    return split_items(text.split(","), label=label, error=error, context=context)


def split_items(
    items: Iterable[str],
    *,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
    context: str = "",
) -> dict[str, str]:
    """Each ``"key=value"`` of ``items`` as ``{key: value text}`` (see :func:`split_options`)."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise error(f"{context}expected key=value, got {item!r}")
        if key in out:
            raise error(f"{context}{label} {key!r} is given twice")
        out[key] = value.strip()
    return out


def parse_options(
    text: str | Mapping[str, str] | Iterable[str],
    declared: Mapping[str, Any],
    *,
    label: str = "option",
    error: type[Exception] = InvalidOptionError,
    context: str = "",
    any_name: bool = False,
) -> dict[str, Any]:
    """Options as typed values: ``text`` is ``"key=value,..."``, ``"key=value"`` items or a
    mapping of names to value texts; ``declared`` maps each valid name to its type.

    An unknown name is an error naming the closest valid one (unless ``any_name``: then a name
    without a declared type is typed by the text alone).
    """
    if isinstance(text, str):
        raw = split_options(text, label=label, error=error, context=context)
    elif isinstance(text, Mapping):
        raw = dict(text)
    else:
        raw = split_items(text, label=label, error=error, context=context)
    if not any_name:
        check_keywords(raw, declared, label=label, error=error, context=context)
    return {
        name: _value_in_context(name, value, declared.get(name), label, error, context)
        for name, value in raw.items()
    }


def _value_in_context(
    name: str, text: str, declared: Any, label: str, error: type[Exception], context: str
) -> Any:
    if not isinstance(text, str):
        raise error(f"{context}{label} {name!r} must be text, got {type(text).__name__}")
    try:
        return parse_value(name, text, declared, label=label, error=error)
    except error as exc:
        raise error(f"{context}{exc}") from None


def declared_types(func: Callable[..., Any]) -> dict[str, Any]:
    """The declared type of each keyword parameter of ``func`` (a class: its ``__init__``);
    empty when the annotations cannot be resolved."""
    stated = getattr(func, "__signature__", None)
    if isinstance(stated, inspect.Signature):  # a class that states its keywords and types
        return {
            p.name: p.annotation
            for p in stated.parameters.values()
            if p.annotation is not inspect.Parameter.empty
        }
    target = func.__init__ if isinstance(func, type) else func
    try:
        hints = typing.get_type_hints(target)
    except (NameError, TypeError, AttributeError):
        return {}
    hints.pop("return", None)
    return hints
