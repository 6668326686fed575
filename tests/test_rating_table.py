"""The rating table: a stored round robin of duplicate pairs, Bradley-Terry with bootstrap CIs."""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

import pytest

from benchmarks import rating_table as rt
from bergen_env.arena import placed_ahead, run_tournament
from bergen_env.rules import Rules

STANDARD = Rules.preset("standard")


def _run(path: Path | None, specs: list[str], **kwargs: object) -> rt.RoundRobin:
    options = {"matches": 40, "seed": 0, "workers": 1, **kwargs}
    return rt.round_robin(specs, STANDARD, results=path, **options)  # type: ignore[arg-type]


def _pair(a: str, b: str, outcomes: str) -> rt.PairResult:
    return rt.PairResult(
        agents=(a, b),
        files={},
        rules=STANDARD.to_dict(),
        seed=0,
        matches=len(outcomes),
        rotations=2,
        outcomes=outcomes,
        wins=(outcomes.count("2"), outcomes.count("0")),
        seconds=0.0,
        commit=None,
    )


def test_ratings_follow_the_outcomes_on_the_elo_scale() -> None:
    # A placed ahead of B in 30 of 40 matches; the prior adds half a game each way.
    run = rt.RoundRobin(["B", "A"], [_pair("A", "B", "2" * 30 + "0" * 10)], [])
    table = rt.rating_table(run, bootstrap=200, anchor=("B", 1000.0))
    assert table.agents == ["A", "B"]
    assert table.ratings["B"] == 1000.0
    assert table.ratings["A"] - 1000.0 == pytest.approx(400 * math.log10(30.5 / 10.5))
    assert table.score["A"]["B"] == 0.75 and table.score["B"]["A"] == 0.25
    assert table.matches["A"]["B"] == 40
    assert rt.expected_score(table.ratings["A"], table.ratings["B"]) == pytest.approx(30.5 / 41)
    assert "| `A` | `B` | 40 | 0.750 | [0.598, 0.858] | 0.750 | 0.744 |" in table.pairs_markdown()
    # level matches count half for each side
    level = rt.RoundRobin(["A", "B"], [_pair("A", "B", "1" * 40)], [])
    even = rt.rating_table(level, bootstrap=50, anchor=None)
    assert even.ratings["A"] == pytest.approx(even.ratings["B"]) == pytest.approx(1500.0)


def test_tiny_round_robin_orders_the_ladder_and_intervals_hold_the_estimate(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path / "r.json", ["heuristic", "random", "greedy"], matches=100)
    assert [p.agents for p in run.pairs] == [
        ("greedy", "heuristic"),
        ("greedy", "random"),
        ("heuristic", "random"),
    ]
    assert all(p.matches == 100 and len(p.outcomes) == 100 for p in run.pairs)
    table = rt.rating_table(run, bootstrap=300)
    assert table.agents[-1] == "random"
    assert table.anchor == ("random", 1000.0)
    assert table.ratings["random"] == 1000.0
    for name in table.agents:
        lo, hi = table.intervals[name]
        assert lo <= table.ratings[name] <= hi, name
        if name != "random":
            assert table.ratings[name] > 1100 and hi - lo > 10, name
    text = table.markdown()
    assert "| 3 | `random` | 1000 | [1000, 1000] | 200 |" in text
    assert text.count("(100)") == 6  # every off-diagonal cell of the score matrix


def test_rerun_plays_nothing_and_a_new_agent_plays_only_its_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    from bergen_env import duplicate_pairs

    real = duplicate_pairs.run_tournament

    def counting(agents: list[str], *args: object, **kwargs: object) -> object:
        calls.append(list(agents))
        return real(agents, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(duplicate_pairs, "run_tournament", counting)
    path = tmp_path / "r.json"
    first = _run(path, ["random", "greedy"])
    assert first.played == [("greedy", "random")] and len(calls) == 1
    again = _run(path, ["greedy", "random"])
    assert again.played == [] and len(calls) == 1
    assert again.pairs == first.pairs
    grown = _run(path, ["random", "greedy", "heuristic"])
    assert grown.played == [("greedy", "heuristic"), ("heuristic", "random")]
    assert len(calls) == 3
    assert len(json.loads(path.read_text())["pairs"]) == 3
    # a different match count, seed or rules is a different key: played anew
    _run(path, ["random", "greedy"], matches=20)
    _run(path, ["random", "greedy"], seed=1)
    assert len(calls) == 5
    assert len(rt.load_results(path)) == 5


def test_slow_agents_get_fewer_matches(tmp_path: Path) -> None:
    run = _run(None, ["random", "greedy", "heuristic"], matches=30, matches_for={"heuristic": 9})
    counts = {p.agents: p.matches for p in run.pairs}
    # 9 rounds up to whole deal groups of 2 seatings
    assert counts == {
        ("greedy", "heuristic"): 10,
        ("greedy", "random"): 30,
        ("heuristic", "random"): 10,
    }


def test_same_seed_same_table_and_another_seed_differs(tmp_path: Path) -> None:
    specs = ["random", "greedy", "heuristic"]
    a = _run(tmp_path / "a.json", specs)
    b = _run(tmp_path / "b.json", specs)
    c = _run(tmp_path / "c.json", specs, seed=1)
    assert [p.outcomes for p in a.pairs] == [p.outcomes for p in b.pairs]
    assert [p.outcomes for p in a.pairs] != [p.outcomes for p in c.pairs]
    ta, tb = rt.rating_table(a, bootstrap=100, seed=3), rt.rating_table(b, bootstrap=100, seed=3)
    assert ta.ratings == tb.ratings and ta.intervals == tb.intervals
    assert rt.rating_table(a, bootstrap=100, seed=4).intervals != ta.intervals


def test_a_changed_policy_file_is_played_again(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    spec = "policy:policies/standard_2p.safetensors"
    first = _run(path, ["random", spec], matches=4)
    stored = first.pairs[0]
    assert list(stored.files) == ["policies/standard_2p.safetensors"]
    assert len(stored.files["policies/standard_2p.safetensors"]) == 64
    data = json.loads(path.read_text())
    data["pairs"][0]["files"]["policies/standard_2p.safetensors"] = "0" * 64  # another file
    path.write_text(json.dumps(data))
    assert _run(path, ["random", spec], matches=4).played == [(spec, "random")]


def test_partnerships_pair_an_agent_and_its_copy(tmp_path: Path) -> None:
    rules = Rules.preset("standard", num_players=4, partnerships=True)
    run = rt.round_robin(["random", "greedy"], rules, matches=6, results=tmp_path / "p.json")
    assert run.pairs[0].rotations == 2 and run.pairs[0].matches == 6
    assert run.pairs[0].rules["partnerships"] is True


@pytest.mark.parametrize("players", [3, 4])
def test_individual_players_play_each_agent_alone_against_copies_of_the_other(
    players: int, tmp_path: Path
) -> None:
    rules = Rules.preset("standard", num_players=players)
    rotations = 6 if players == 3 else 24
    run = rt.round_robin(["random", "greedy"], rules, matches=8, results=tmp_path / "i.json")
    (pair,) = run.pairs
    assert pair.agents == ("greedy", "random") and pair.lineups == 2
    assert pair.matches == 2 * rotations and pair.rotations == rotations  # whole groups of both
    assert pair.comparisons == players - 1
    # the first half is greedy alone against copies of random, on the same deals as the second
    alone = run_tournament(["greedy"] + ["random"] * (players - 1), rules, matches=rotations)
    others = run_tournament(["random"] + ["greedy"] * (players - 1), rules, matches=rotations)
    expected = []
    for result, mine in ((alone, {0}), (others, set(range(1, players)))):
        for r in result.records:
            a = [s for s, i in enumerate(r.lineup) if i in mine]
            b = [s for s, i in enumerate(r.lineup) if i not in mine]
            expected.append(str(int(sum(2 * placed_ahead(r, x, y) for x in a for y in b))))
    assert pair.outcomes == "".join(expected)
    assert pair.wins == (
        sum(r.winner == r.lineup.index(0) for r in alone.records),
        sum(r.winner == r.lineup.index(0) for r in others.records),
    )
    assert pair.score == sum(map(int, expected)) / (2 * (players - 1) * pair.matches)
    assert rt.load_results(tmp_path / "i.json") == [pair]  # stored and read back whole
    table = rt.rating_table(run, bootstrap=50)
    assert table.score["greedy"]["random"] == pytest.approx(pair.score)
    assert f"| `greedy` | `random` | {2 * rotations} | {pair.wins[0] / rotations:.3f} |" in (
        table.pairs_markdown()
    )


def test_a_version_1_file_reads_as_two_sided_pairs(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    _run(path, ["random", "greedy"], matches=2)
    data = json.loads(path.read_text())
    assert data["version"] == rt.VERSION == 2
    data["version"] = 1
    for entry in data["pairs"]:
        del entry["comparisons"], entry["lineups"]
    path.write_text(json.dumps(data))
    (pair,) = rt.load_results(path)
    assert (pair.comparisons, pair.lineups) == (1, 1)
    data["pairs"][0]["lineups"] = 1  # not a field of version 1
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"unknown fields \['lineups'\]"):
        rt.load_results(path)


@pytest.mark.parametrize(
    ("specs", "rules", "message"),
    [
        (["random", "nosuchagent"], STANDARD, "nosuchagent"),
        (["random", "policy:no/such/file.safetensors"], STANDARD, "no/such/file.safetensors"),
        (["random", "heuristic:bogus=1"], STANDARD, "bogus"),
        (["random", "random"], STANDARD, "listed twice"),
        (["random"], STANDARD, "at least 2 agents"),
    ],
)
def test_bad_setups_name_the_problem(specs: list[str], rules: Rules, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        rt.round_robin(specs, rules, matches=2)


def test_bad_options_name_the_problem() -> None:
    with pytest.raises(ValueError, match="matches for 'search'"):
        _run(None, ["random", "greedy"], matches_for={"search": 10})
    with pytest.raises(ValueError, match="matches must be an integer >= 1"):
        _run(None, ["random", "greedy"], matches=0)
    run = _run(None, ["random", "greedy"], matches=2)
    with pytest.raises(ValueError, match="anchor 'heuristic' is not one of the agents"):
        rt.rating_table(run, anchor=("heuristic", 1500.0))
    with pytest.raises(ValueError, match="bootstrap must be"):
        rt.rating_table(run, bootstrap=0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not readable JSON"),
        ('{"format": "something else"}', "not a rating results file"),
        ('{"format": "bergen_env rating results", "version": 9, "pairs": []}', "version 9"),
    ],
)
def test_bad_results_files_name_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        _run(path, ["random", "greedy"], matches=2)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("outcomes", "2x", "'outcomes' must be 2 characters"),
        ("outcomes", "2", "'outcomes' must be 2 characters"),
        ("matches", 3, "not whole deal groups"),
        ("comparisons", 0, "'comparisons' must be 1 to 3"),
        ("lineups", 3, "'lineups' 1 or 2"),
        ("lineups", 2, "not whole deal groups of 2 seatings in each of 2 lineups"),
        ("agents", ["random"], "two agent strings"),
        ("wins", None, "'wins' must be two integers"),
        ("seconds", "slow", "'seconds' must be a number"),
        ("commit", 7, "'commit' must be a string or null"),
        ("rules", [], "'rules' must be a dict"),
    ],
)
def test_corrupt_stored_pairs_name_the_pair(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = tmp_path / "r.json"
    _run(path, ["random", "greedy"], matches=2)
    data = json.loads(path.read_text())
    data["pairs"][0][field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message) as info:
        rt.load_results(path)
    assert "pair 0" in str(info.value)


def test_command_line_prints_the_tables_and_rejects_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    argv = ["--agents", "random", "greedy", "--matches", "8", "--bootstrap", "50"]
    assert rt.main([*argv, "--results", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 pairs (1 played, 0 from" in out
    assert "| 1 | `greedy` |" in out and "| `greedy` | `random` | 8 |" in out
    assert rt.main([*argv, "--results", str(path)]) == 0
    assert rt.main([*argv, "--results", str(path), "--anchor", "greedy", "0"]) == 0
    out = capsys.readouterr().out
    assert "(0 played, 1 from" in out and "| 1 | `greedy` | 0 | [0, 0] | 8 |" in out
    with pytest.raises(SystemExit) as exit_info:
        rt.main(["--agents", "random", "nosuchagent"])
    assert exit_info.value.code == 2
    assert "nosuchagent" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        rt.main([*argv, "--matches-for", "greedy", "many"])
    assert "--matches-for 'greedy': 'many' is not an integer" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        rt.main([*argv, "--anchor", "search", "1000"])
    assert "anchor 'search' is not one of the agents" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        rt.main([*argv, "--results", str(tmp_path / "missing" / "r.json")])
    assert "does not exist" in capsys.readouterr().err


def test_the_stored_table_of_the_docs_reads_back() -> None:
    path = Path(__file__).resolve().parent.parent / "benchmarks/results/ratings_standard_2p.json"
    pairs = rt.load_results(path)
    agents = sorted({a for p in pairs for a in p.agents})
    assert len(agents) == 9 and len(pairs) == 36 and "tuned" in agents
    assert {p.rules["num_players"] for p in pairs} == {2} and {p.seed for p in pairs} == {0}
    table = rt.rating_table(rt.RoundRobin(agents, pairs, []), bootstrap=100)
    assert table.agents[-1] == "random" and table.agents.index("search") < 3


def _docs_sections() -> list[tuple[str, str]]:
    """(stored results file, the section's text) for every stored table in docs/ratings.md."""
    text = (Path(__file__).resolve().parent.parent / "docs/ratings.md").read_text()
    marks = list(re.finditer(r"<!-- table: .*?stored in (\S+) -->", text))
    ends = [m.start() for m in marks[1:]] + [text.index("## Adding an agent")]
    return [(m.group(1), text[m.start() : end]) for m, end in zip(marks, ends, strict=True)]


@pytest.mark.parametrize("stored", [f for f, _ in _docs_sections()])
def test_the_docs_tables_are_what_their_command_prints(
    stored: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ratings section's command, run on its stored results, prints the section's tables."""
    section = dict(_docs_sections())[stored]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, f"no command in the section of {stored}"
    argv = shlex.split(block.group(1).replace("\\\n", " "))
    assert argv[:3] == ["python", "-m", "benchmarks.rating_table"]
    assert argv[argv.index("--results") + 1] == stored
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)  # the policy paths are relative
    assert rt.main(argv[3:]) == 0
    out = capsys.readouterr().out
    assert "(0 played," in out  # every pair read back, none played
    tables = [t.strip() for t in out.split("\n\n") if t.lstrip().startswith("|")]
    assert len(tables) == 3
    for table in tables:
        assert table in section, f"docs/ratings.md differs from the command's table:\n{table}"
