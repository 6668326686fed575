"""The stored comparisons of responders (``benchmarks/results/responders/``) are what the docs
show, by value: each table row and each block of paired differences is regenerated from the
stored JSON by the benchmark's own formatting, and every row of the docs that names one of these
responders must be one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.responders import pairs, pooled, table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "responders"
REPORT = ROOT / "docs" / "experiments" / "2026-12-06-compiled-best-response.md"
DOCS = [ROOT / "docs" / "exploitability.md", ROOT / "docs" / "baselines.md", REPORT]


def _stored() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))}


def test_every_stored_row_and_paired_difference_is_in_the_report() -> None:
    text = REPORT.read_text()
    stored = _stored()
    assert len(stored) >= 2
    for name, result in stored.items():
        for line in table(result["rows"]).splitlines():
            assert line in text, f"{name}: row not in the report: {line}"
        assert pairs(result["rows"]) in text, f"{name}: paired differences not in the report"


def test_the_pooled_seeds_are_in_the_report() -> None:
    stored = _stored()
    by_policy: dict[str, list[dict]] = {}
    for result in stored.values():
        by_policy.setdefault(result["config"]["policy"], []).append(result)
    pooled_blocks = [pooled(results) for results in by_policy.values() if len(results) > 1]
    assert pooled_blocks
    text = REPORT.read_text()
    for block in pooled_blocks:
        assert block in text, block


def test_every_docs_row_of_a_stored_responder_is_stored() -> None:
    """A row naming the compiled best response in the docs' tables is a stored row, unedited."""
    lines = {line for r in _stored().values() for line in table(r["rows"]).splitlines()}
    seen = 0
    for page in DOCS:
        for row in page.read_text().splitlines():
            if row.startswith("| `best_response:samples=800,playouts=compiled"):
                assert row in lines, f"{page.name}: {row}"
                seen += 1
    assert seen >= 3


def test_pooling_refuses_two_results_of_one_seed() -> None:
    result = next(iter(_stored().values()))
    with pytest.raises(ValueError, match="share their deals"):
        pooled([result, result])


_FIGURE = re.compile(r"[+-]?\d\.\d{3} \[[+-]?\d\.\d{3}, [+-]?\d\.\d{3}\]")


def _stored_figures() -> set[str]:
    stored = _stored()
    text = "\n".join(table(r["rows"]) + "\n" + pairs(r["rows"]) for r in stored.values())
    by_policy: dict[str, list[dict]] = {}
    for result in stored.values():
        by_policy.setdefault(result["config"]["policy"], []).append(result)
    text += "\n".join(pooled(rs) for rs in by_policy.values() if len(rs) > 1)
    return {f.lstrip("+") for f in _FIGURE.findall(text)}


def test_every_interval_quoted_from_these_runs_is_a_stored_one() -> None:
    """The prose too: each figure with an interval in the report, and in the paragraphs of the
    other pages about the 800-deal best response (its section of exploitability.md), is one the
    stored results give."""
    figures = _stored_figures()
    texts = [REPORT.read_text()]
    page = (ROOT / "docs" / "exploitability.md").read_text()
    start = page.index("## A stronger best response")
    texts.append(page[start : page.index("\n## ", start + 1)])
    for page in (ROOT / "docs" / "baselines.md", ROOT / "docs" / "evaluation.md"):
        texts += [
            p for p in page.read_text().split("\n\n") if p.startswith("A stronger best response")
        ]
    quoted = [f for text in texts for f in _FIGURE.findall(re.sub(r"\s+", " ", text))]
    assert len(quoted) >= 40
    for figure in quoted:
        assert figure.lstrip("+") in figures, figure
