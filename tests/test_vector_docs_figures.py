"""Every figure of ``docs/speed.md`` and ``docs/vector.md`` sits next to the command that
measured it, and that command exists: its script, and each of its ``--options``.

A *figure* is a number with a unit (ms, ns, µs, s, steps/s, ×, cycles, GHz, KB, bytes,
decisions, times, %). A paragraph or table holding one must contain a command, or have one in
the two blocks before it or the block after it. Speed commands (CPU-time benchmarks) must be
pinned to one core.
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
    r"(?P<pin>taskset -c 0 )?python (?:-m (?P<module>(?:benchmarks|examples|training)\.\w+)"
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
