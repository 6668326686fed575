"""Every figure of ``docs/speed.md`` and ``docs/vector.md`` sits next to the command that
measured it, and that command exists: its script, and each of its ``--options``.

A *figure* is a number with a unit (ms, ns, µs, s, steps/s, ×, cycles, GHz, KB, bytes,
decisions, times, %). A paragraph or table holding one must contain a command, or have one in
the two blocks before it or the block after it. Speed commands (CPU-time benchmarks) must be
pinned to one core.

And a ratio printed beside the figures it follows from is held by value, on every page of
``docs/``: a row's ``N×`` must be the quotient of the row's two rates, or of the reference row's
figure (the ``1×`` row) over the row's, up to the rounding of the printed numbers.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["docs/speed.md", "docs/vector.md"]
COMMAND = re.compile(
    r"(?P<pin>taskset -c 0 )?python "
    r"(?:-m (?P<module>(?:benchmarks|examples|bergen_env\.training)\.\w+)"
    r"|(?P<path>(?:benchmarks|examples)/\w+\.py))(?P<args>[^`\n]*)"
)
FIGURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?"
    r"(?:ms|ns|µs|s|steps/s|×|x|cycles|GHz|KB|bytes|decisions|times|%)(?![\w/])"
)
#: Benchmarks whose figures are CPU-time rates or ratios: their commands run on one core.
PINNED = {
    "benchmarks.vector_speed",
    "benchmarks.kernel_floor",
    "benchmarks.speed_page",
    "benchmarks.opponent_cost",
}


def blocks(text: str) -> list[str]:
    """Paragraphs, tables and fenced code blocks (a fence is one block, blank lines and all)."""
    out: list[str] = []
    current: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                out.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        out.append("\n".join(current))
    return out


def _source(match: re.Match) -> Path:
    if match["module"]:
        return ROOT / (match["module"].replace(".", "/") + ".py")
    return ROOT / match["path"]


@functools.cache
def _help(script: str) -> str:
    """The ``--help`` text of a script (``-m module`` or a path), run from the repository."""
    call = script.split()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, *call, "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"{script} --help failed:\n{done.stderr[-2000:]}"
    return done.stdout


@pytest.mark.parametrize("page", PAGES)
def test_every_figure_has_its_command(page: str) -> None:
    parts = blocks((ROOT / page).read_text())
    missing = []
    for k, block in enumerate(parts):
        if block.startswith("#") or not FIGURE.search(block):
            continue
        near = "\n".join(parts[max(0, k - 2) : k + 2])
        if not COMMAND.search(near):
            missing.append(block[:160])
    assert not missing, f"{page}: figures without a command next to them:\n" + "\n---\n".join(
        missing
    )


@pytest.mark.parametrize("page", PAGES)
def test_commands_exist_and_speed_commands_are_pinned(page: str) -> None:
    text = (ROOT / page).read_text()
    commands = list(COMMAND.finditer(text))
    assert commands, page
    for match in commands:
        source = _source(match)
        assert source.is_file(), f"{page}: {match[0]!r} names no script ({source})"
        options = re.findall(r"(?<![\w-])--[a-z][\w-]*", match["args"])
        if options:
            script = f"-m {match['module']}" if match["module"] else match["path"]
            known = _help(script)
            for option in options:
                assert option in known, f"{page}: {match[0]!r}: {script} has no {option}"
        if match["module"] in PINNED:
            assert match["pin"], f"{page}: {match[0]!r} measures CPU time: run it with taskset"


def test_the_figure_pattern_sees_figures() -> None:
    seen = [bool(FIGURE.search(x)) for x in ("4.2×", "523,000 steps/s", "19.9 ns", "9 ms")]
    unseen = [bool(FIGURE.search(x)) for x in ("RULES.md §1–9", "N=4096", "2 players")]
    assert all(seen) and not any(unseen)


# ------------------------------------------------------------ ratios held by value
NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
RATE = re.compile(rf"^\**{NUMBER} ?(steps/s|ms|ns)\**$")
RATIO = re.compile(rf"^\**{NUMBER}×(?: fewer)?\**$")
PLAIN = re.compile(rf"^\**{NUMBER}\**$")


def _value(text: str) -> tuple[float, float]:
    """A printed number and half a unit of its last digit (its rounding)."""
    digits = text.replace(",", "")
    places = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), 0.5 * 10.0**-places


def _quotient_fits(ratio: str, top: str, bottom: str) -> bool:
    """Whether the printed ``ratio`` is ``top / bottom`` up to the rounding of all three."""
    r, dr = _value(ratio)
    t, dt = _value(top)
    b, db = _value(bottom)
    return (t - dt) / (b + db) - dr <= r <= (t + dt) / (b - db) + dr


def tables(text: str) -> list[list[list[str]]]:
    """Every markdown table of ``text``: its body rows, as lists of stripped cells."""
    out: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
        elif rows:
            out.append(rows[1:])  # the header row is no figure
            rows = []
    return out


def ratio_problems(text: str) -> list[str]:
    """The ratios of ``text``'s tables that do not follow from the figures of their row: a row
    with two rates (steps/s, ms or ns) and one ``N×`` must have N = the larger over the smaller;
    in a table with a ``1×`` row (the reference), a row's ``N×`` is the reference's first number
    over the row's."""
    problems = []
    for rows in tables(text):
        ref = None
        for cells in rows:
            if any(c == "1×" for c in cells):
                ref = next(m[1] for c in cells if (m := PLAIN.match(c)))
        for cells in rows:
            ratios = [m[1] for c in cells if (m := RATIO.match(c))]
            if len(ratios) != 1 or ratios[0] == "1":
                continue
            rates = [(m[1], m[2]) for c in cells if (m := RATE.match(c))]
            if len(rates) == 2 and rates[0][1] == rates[1][1]:
                a, b = (x for x, _ in rates)
                top, bottom = (a, b) if _value(a)[0] >= _value(b)[0] else (b, a)
            elif ref is not None:
                top = ref
                bottom = next(m[1] for c in cells if (m := PLAIN.match(c)))
            else:
                continue
            if not _quotient_fits(ratios[0], top, bottom):
                problems.append(f"{ratios[0]}× is not {top} / {bottom}: | {' | '.join(cells)} |")
    return problems


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")))
def test_ratios_follow_from_their_row(page: str) -> None:
    problems = ratio_problems((ROOT / "docs" / page).read_text())
    assert not problems, f"docs/{page}:\n" + "\n".join(problems)


def test_ratio_check_sees_a_changed_figure() -> None:
    """What the check reads: the vector page's ratio rows and the kernel table's ``1×`` rows."""
    text = (ROOT / "docs/vector.md").read_text()
    checked = sum(
        1
        for rows in tables(text)
        for cells in rows
        if any(RATIO.match(c) for c in cells) and "1×" not in cells
    )
    assert checked >= 15 and not ratio_problems(text)
    assert ratio_problems(text.replace("**25.0×**", "**250.0×**"))
    assert ratio_problems(text.replace("| 138.2× |", "| 128.2× |"))
    assert ratio_problems(text.replace("22.91 ms", "25.91 ms"))
