"""The documentation holds: links resolve, the README's code runs, the config pages match the code.

- Every relative link in ``README.md`` and ``docs/**/*.md`` points at a file or folder of the
  repository, and a ``#anchor`` at a heading of the target page (GitHub's heading slugs).
- Every stored result a page names (``benchmarks/results/...``, braces expanded) is in the
  repository: a figure's data cannot be cited and missing.
- Every ``python`` block of the README and of ``docs/`` runs as written, from the repository
  root (one interpreter per page, a fresh namespace per block). A block preceded by the line
  ``<!-- no-test -->`` is skipped.
- ``docs/configs.md`` documents exactly the YAML keys of ``TrainConfig`` and ``RLlibConfig``,
  each with its default as it is in the code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
NO_TEST = "<!-- no-test -->"

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^()\s]+)\)")


def prose_lines(text: str) -> list[str]:
    """The lines of a markdown text outside fenced code blocks, inline code removed."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "``", line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown page (repeated headings get -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text().splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    """The link targets of a page (inline links and images, outside code)."""
    text = "\n".join(prose_lines(path.read_text()))
    return _LINK.findall(text) + _IMAGE.findall(text)


def relative_links() -> list[tuple[Path, str]]:
    return [
        (page, target)
        for page in PAGES
        for target in links(page)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_readme_is_a_short_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"


def test_there_are_pages_and_links() -> None:
    assert (ROOT / "docs" / "index.md") in PAGES
    assert len(relative_links()) > 50


@pytest.mark.parametrize(
    ("page", "target"),
    relative_links(),
    ids=lambda x: str(x.relative_to(ROOT)) if isinstance(x, Path) else x,
)
def test_relative_link_resolves(page: Path, target: str) -> None:
    file_part, _, anchor = target.partition("#")
    dest = (page.parent / file_part).resolve() if file_part else page
    assert dest.exists(), f"{page.relative_to(ROOT)}: link {target!r}: no such file {dest}"
    assert ROOT in dest.parents or dest == ROOT, (
        f"{page.relative_to(ROOT)}: {target!r} leaves the repository"
    )
    if anchor:
        assert dest.suffix == ".md", f"{page.relative_to(ROOT)}: anchor on a non-markdown file"
        assert anchor in anchors(dest), (
            f"{page.relative_to(ROOT)}: link {target!r}: no heading with anchor #{anchor} in "
            f"{dest.relative_to(ROOT)}"
        )


_STORED = re.compile(r"benchmarks/results/[\w./{},-]*[\w}]")


def _expand_braces(path: str) -> list[str]:
    """``a{0,1}b`` -> ``[a0b, a1b]``, nested left to right."""
    m = re.search(r"\{([^{}]*)\}", path)
    if m is None:
        return [path]
    return [
        q
        for alt in m.group(1).split(",")
        for q in _expand_braces(path[: m.start()] + alt + path[m.end() :])
    ]


def stored_results_named() -> list[tuple[Path, str]]:
    """``(page, path)`` for every stored result file or folder a page names; a path a command
    writes (``--json PATH``) is output, not a citation."""
    named = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _STORED.finditer(text):
            if text[: m.start()].rstrip().endswith("--json"):
                continue
            named += [(page, q) for q in _expand_braces(m.group(0))]
    return named


def test_stored_results_the_docs_name_are_in_the_repository() -> None:
    named = stored_results_named()
    assert len(named) > 10
    missing = sorted(
        {f"{page.relative_to(ROOT)}: {q}" for page, q in named if not (ROOT / q).exists()}
    )
    assert not missing, "named in the docs but not stored:\n" + "\n".join(missing)


def test_slug_follows_github() -> None:
    assert slug("Rules and options") == "rules-and-options"
    assert slug("`TrainConfig`: the training keys") == "trainconfig-the-training-keys"
    assert slug("6. Scoring during play (headers)") == "6-scoring-during-play-headers"
    assert slug("Draw and Fives: `draw`, `fives`") == "draw-and-fives-draw-fives"


# ---------------------------------------------------------------------- README snippets


def python_blocks(page: Path) -> list[tuple[int, str, bool]]:
    """``(line number, code, skipped)`` for every ```python block of a page."""
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            before = next(
                (lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), ""
            )
            blocks.append((start + 1, "\n".join(lines[start + 1 : j]), before == NO_TEST))
            i = j
        i += 1
    return blocks


#: Runs the blocks it reads from stdin (JSON), each in a fresh namespace. A block whose optional
#: third-party dependency is not installed is reported on stdout as "missing: <block> <module>"
#: and the rest still run; any other error exits 1 (a missing project module is an error).
_RUNNER = """
import json, sys, traceback
OWN = {"bergen_env", "training", "benchmarks", "examples"}
for name, code in json.load(sys.stdin):
    try:
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] in OWN:
            traceback.print_exc()
            sys.exit(1)
        print(f"missing: {name} {exc.name}")
    except Exception as exc:
        if type(exc).__name__ == "DependencyNotInstalled":
            print(f"missing: {name} {exc}")
            continue
        print(f"{name} failed:\\n{code}\\n", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
"""

PAGES_WITH_CODE = [page for page in PAGES if python_blocks(page)]


def test_readme_has_python_blocks() -> None:
    blocks = python_blocks(ROOT / "README.md")
    assert len(blocks) >= 3
    assert sum(skipped for _, _, skipped in blocks) <= 1, "keep untested README blocks few"


@pytest.mark.parametrize(
    "page", PAGES_WITH_CODE, ids=[str(p.relative_to(ROOT)) for p in PAGES_WITH_CODE]
)
def test_python_blocks_run(page: Path) -> None:
    """Every ```python block of the page runs as written, from the repository root.

    A block that needs an optional package that is not installed (an extra) is skipped.
    """
    name = page.relative_to(ROOT)
    todo = [(f"{name}:{line}", code) for line, code, skipped in python_blocks(page) if not skipped]
    if not todo:
        pytest.skip(f"every python block of {name} is marked {NO_TEST}")
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(todo),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    missing = [line for line in proc.stdout.splitlines() if line.startswith("missing: ")]
    if len(missing) == len(todo):
        pytest.skip("; ".join(missing))


# ---------------------------------------------------------------------- the config schema


def documented_keys(section: str) -> dict[str, str]:
    """``{key: default}`` from the table under the heading ``section`` of docs/configs.md.

    A row is ``| `key` | `default` | meaning |``; the table ends at the next heading.
    """
    text = (ROOT / "docs" / "configs.md").read_text().splitlines()
    starts = [i for i, line in enumerate(text) if line.startswith("#") and section in line]
    assert len(starts) == 1, f"docs/configs.md: one heading containing {section!r} expected"
    rows: dict[str, str] = {}
    for line in text[starts[0] + 1 :]:
        if line.startswith("#"):
            break
        m = re.match(r"^\|\s*`([a-z_]+)`\s*\|\s*`(.*?)`\s*\|", line)
        if m:
            assert m.group(1) not in rows, f"docs/configs.md: key {m.group(1)!r} twice"
            rows[m.group(1)] = m.group(2)
    return rows


def yaml_default(f: dataclasses.Field) -> str:
    """A field's default as one line of YAML flow style (what a config file would hold)."""
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    return (
        yaml.safe_dump(value, default_flow_style=True, width=1000)
        .strip()
        .removesuffix("\n...")
        .strip()
    )


@pytest.mark.parametrize(
    ("module", "cls", "section"),
    [
        ("bergen_env.training.config", "TrainConfig", "`TrainConfig`"),
        ("bergen_env.training.train_rllib", "RLlibConfig", "`RLlibConfig`"),
        (
            "bergen_env.training.expert_iteration_config",
            "ExpertIterationConfig",
            "`ExpertIterationConfig`",
        ),
        ("bergen_env.training.tune_heuristic", "TuneConfig", "`TuneConfig`"),
    ],
)
def test_configs_page_documents_every_key(module: str, cls: str, section: str) -> None:
    mod = __import__(module, fromlist=[cls])
    fields = {f.name: f for f in dataclasses.fields(getattr(mod, cls))}
    documented = documented_keys(section)
    missing = sorted(set(fields) - set(documented))
    extra = sorted(set(documented) - set(fields))
    assert not missing, f"docs/configs.md lacks {cls} key(s) {missing}"
    assert not extra, f"docs/configs.md documents key(s) {extra} that {cls} does not have"
    for name, f in fields.items():
        assert documented[name] == yaml_default(f), (
            f"docs/configs.md: {cls}.{name} default is `{yaml_default(f)}` in the code, "
            f"`{documented[name]}` in the docs"
        )


# ---------------------------------------------------------------------- the observation table


def view_tables(page: Path) -> list[list[tuple[str, int, int]]]:
    """``(view, start, size)`` rows of every ``| view | start | size | meaning |`` table."""
    text = page.read_text()
    pattern = r"^\| view \| start \| size \| meaning \|\n\|[-|]+\|\n((?:\|.*\n)+)"
    tables = []
    for body in re.findall(pattern, text, flags=re.M):
        rows = [re.match(r"^\| `(\w+)` \| (\d+) \| (\d+) \|", line) for line in body.splitlines()]
        assert all(rows), f"{page.name}: a view row is not | `name` | start | size | ...:\n{body}"
        tables.append([(m.group(1), int(m.group(2)), int(m.group(3))) for m in rows])
    return tables


def test_observation_and_state_tables_match_the_encoder() -> None:
    """docs/environment.md gives every named view of the observation and the global state, in
    order, with the start index and size the encoder uses (``OBS_SLICES``, ``STATE_SLICES``)."""
    from bergen_env.observation import OBS_SIZE, OBS_SLICES, STATE_SIZE, STATE_SLICES

    page = ROOT / "docs" / "environment.md"
    tables = view_tables(page)
    assert len(tables) == 2, "docs/environment.md: the observation table, then the state table"
    for table, slices in zip(tables, (OBS_SLICES, STATE_SLICES)):
        assert table == [(name, s.start, s.stop - s.start) for name, s in slices.items()]
    text = page.read_text()
    assert f"`OBS_SIZE = {OBS_SIZE}`" in text and f"`STATE_SIZE = {STATE_SIZE}`" in text


# ---------------------------------------------------------------------- the front page


def test_readme_opens_with_the_two_commands() -> None:
    """After the title and the pitch, the first block is ``make train`` then ``make test``."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("```bash")
    assert start <= 8, "README.md: the two commands come right after the pitch"
    block = lines[start + 1 : lines.index("```", start + 1)]
    assert [line.split()[:2] for line in block] == [["make", "train"], ["make", "test"]]


def test_licence_citation_and_changelog_match_the_package() -> None:
    import bergen_env
    from bergen_env.registration import ENV_ID

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = project["version"]
    assert bergen_env.__version__ == version
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for key in ("cff-version", "message", "title", "authors"):
        assert citation.get(key), f"CITATION.cff lacks {key!r}"
    assert str(citation["version"]) == version
    assert citation["license"] == project["license"]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"\n## {version}\n" in changelog, f"CHANGELOG.md has no section for {version}"
    row = next(line for line in changelog.splitlines() if line.startswith(f"| {version} |"))
    assert f"`{ENV_ID}`" in row, f"CHANGELOG.md: the {version} row names no {ENV_ID}"
    readme = (ROOT / "README.md").read_text()
    for target in ("(LICENSE)", "(CITATION.cff)", "(CHANGELOG.md)"):
        assert target in readme, f"README.md does not link {target}"


#: A win rate with its interval, as the docs print them: 0.518 [0.497, 0.540]
_RATE = re.compile(r"\d\.\d{3,4} \[\d\.\d{3}, \d\.\d{3}\]")
#: A rating with its interval: 1242 [1234, 1250]
_RATING = re.compile(r"(?<![\d.])\d{4} \[\d{4}, \d{4}\]")


def readme_results() -> str:
    text = (ROOT / "README.md").read_text()
    return text[text.index("\n## Results\n") : text.index("\n## Documentation\n")]


def test_readme_results_are_copied_from_measured_rows() -> None:
    """Every win rate and rating of the README's headline tables is printed, with the same
    interval, on a page that gives its command (baselines, ratings, evaluation, experiments)."""
    sources = "\n".join(
        p.read_text()
        for p in [
            ROOT / "docs" / "baselines.md",
            ROOT / "docs" / "ratings.md",
            ROOT / "docs" / "evaluation.md",
            *sorted((ROOT / "docs" / "experiments").glob("*.md")),
        ]
    )
    results = readme_results()
    rates, ratings = _RATE.findall(results), _RATING.findall(results)
    assert len(rates) >= 12 and len(ratings) >= 8
    for figure in rates:
        rate, interval = figure.split(" ", 1)
        assert figure in sources or f"| {rate} | {interval} |" in sources, (
            f"README.md: {figure} is in no measured row of docs/"
        )
    rows = [line for line in sources.splitlines() if line.startswith("| ")]
    for figure in ratings:
        value, interval = figure.split(" ", 1)
        assert any(f"| {value} | {interval} |" in row for row in rows), (
            f"README.md: rating {figure} is in no table of docs/ratings.md"
        )


def test_rating_tables_are_the_stored_round_robins() -> None:
    """docs/ratings.md's rank tables are what the stored results give (as the chart draws them)."""
    from benchmarks.figures import RATING_FILES, RESULTS, stored_rating_table

    text = (ROOT / "docs" / "ratings.md").read_text()
    for name, _ in RATING_FILES:
        table = stored_rating_table(RESULTS / name)
        for rank, agent in enumerate(table.agents, 1):
            lo, hi = table.intervals[agent]
            row = f"| {rank} | `{agent}` | {table.ratings[agent]:.0f} | [{lo:.0f}, {hi:.0f}] |"
            assert row in text, f"docs/ratings.md lacks {row} ({name})"


def test_readme_position_is_what_the_figures_command_prints(tmp_path: Path) -> None:
    """The README's table text is ``python -m benchmarks.figures table``'s, and the picture it
    links is that position's ``rgb_array`` render (compared by shape: glyphs may be drawn a pixel
    apart by another Pillow)."""
    pytest.importorskip("PIL")
    from PIL import Image

    from benchmarks.figures import table_position

    text = table_position(tmp_path / "table.png", seed=3, plays=7)
    readme = (ROOT / "README.md").read_text()
    assert f"```\n{text.rstrip()}\n```" in readme
    assert "(docs/img/table.png)" in readme
    new = np.asarray(Image.open(tmp_path / "table.png"))
    assert new.shape == np.asarray(Image.open(ROOT / "docs" / "img" / "table.png")).shape


def test_make_train_figures_are_the_stored_runs() -> None:
    """Each stored ``make train`` run's final evaluation is in docs/reproducibility.md with its
    interval, and the README gives the range over the stored seeds."""
    import csv

    page = (ROOT / "docs" / "reproducibility.md").read_text()
    runs = sorted((ROOT / "benchmarks" / "results" / "make_train").glob("seed*.csv"))
    assert len(runs) >= 3
    finals: dict[str, list[float]] = {}
    for path in runs:
        rows = list(csv.DictReader(path.open(newline="")))
        last = max(int(r["timesteps"]) for r in rows)
        for r in rows:
            if int(r["timesteps"]) == last:
                rate, lo, hi = (float(r[k]) for k in ("win_rate", "ci_low", "ci_high"))
                figure = f"{rate:.3f} [{lo:.3f}, {hi:.3f}]"
                assert figure in page, f"docs/reproducibility.md lacks {path.name}'s {figure}"
                finals.setdefault(r["opponent"], []).append(rate)
    readme = (ROOT / "README.md").read_text()
    for rates in finals.values():
        span = f"{min(rates):.3f}–{max(rates):.3f}"
        assert span in readme, f"README.md: the range over the stored seeds is {span}"
