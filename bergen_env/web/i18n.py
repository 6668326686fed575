"""The languages of the page: one catalog of every UI text, and the rules page in each language.

The catalog (``static/i18n.json``) maps a language code to ``{key: text}``; texts may hold
``{name}`` fields that the page fills in. English is complete and the reference: a test checks
that every language has exactly its keys and fields.
"""

from __future__ import annotations

import html
import json
from functools import cache
from pathlib import Path

from bergen_env.rules import RULE_OPTIONS

STATIC = Path(__file__).parent / "static"

#: Language code -> its own name, in the order the page lists them.
LANGUAGES = {"en": "English", "fi": "Suomi", "nl": "Nederlands", "cs": "Čeština", "ru": "Русский"}


@cache
def catalog() -> dict[str, dict[str, str]]:
    """The whole catalog, read once."""
    with open(STATIC / "i18n.json", encoding="utf-8") as f:
        return json.load(f)


def text(lang: str, key: str, **fields: object) -> str:
    """One UI text in ``lang`` with its fields filled in."""
    return catalog()[lang][key].format(**fields)


def options_list(lang: str) -> str:
    """Every rule option in ``lang``: its label and one-line hint (``opt_*``, ``hint_*``)."""
    rows = "".join(
        f"<dt>{html.escape(text(lang, f'opt_{name}'))}</dt>"
        f"<dd>{html.escape(text(lang, f'hint_{name}'))}</dd>"
        for name in RULE_OPTIONS
    )
    return f'<h2>{html.escape(text(lang, "options"))}</h2><dl class="options-list">{rows}</dl>'


def rules_page(lang: str) -> str:
    """The rules page in ``lang``: the catalog's frame around ``static/rules/<lang>.html`` and
    the list of rule options."""
    body = (STATIC / "rules" / f"{lang}.html").read_text(encoding="utf-8") + options_list(lang)
    switch = " · ".join(
        f'<a href="/rules?lang={code}">{html.escape(name)}</a>' for code, name in LANGUAGES.items()
    )
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(text(lang, 'rules_title'))}</title>"
        '<link rel="stylesheet" href="/static/style.css"></head><body class="rules">'
        f'<nav><a href="/?lang={lang}">{html.escape(text(lang, "nav_home"))}</a>'
        f' <span class="langs">{switch}</span></nav><main>{body}</main></body></html>'
    )
