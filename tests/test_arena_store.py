"""The arena's records without a server: each kind of bad policy file refused in one line, one
entry per file, the queue a new policy costs, a restart that resumes it, and the ratings refitted
from the stored results alone (also by ``bergen-arena ratings``)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest

from bergen_env import arena_store
from bergen_env.arena_exploit import with_exploits
from bergen_env.arena_store import (
    PINNED,
    ArenaStore,
    SubmissionError,
    check_name,
    check_submission,
    file_id,
    leaderboard,
    rules_key,
)
from bergen_env.duplicate_pairs import PairOutcome, play_pair_outcome
from bergen_env.policy_file import HEADER_KEY, make_header
from bergen_env.ratings import expected_score
from bergen_env.rules import Rules

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ROOT / "policies"
STANDARD = Rules.preset("standard")


def shipped(name: str) -> bytes:
    return (POLICIES / f"{name}.safetensors").read_bytes()


def network_file(
    rules: Rules = STANDARD,
    sizes: tuple[int, ...] = (8,),
    obs_size: int | None = None,
    nan: bool = False,
    header_edit: dict | None = None,
    metadata: bool = True,
) -> bytes:
    """A policy file's bytes, written with safetensors directly (so it can be wrong)."""
    from safetensors.numpy import save

    from bergen_env.observation import OBS_SIZE

    rng = np.random.default_rng(0)
    dims = [obs_size or OBS_SIZE, *sizes, rules.num_actions]
    tensors = {}
    for i in range(len(dims) - 1):
        tensors[f"layers.{i}.weight"] = rng.normal(size=(dims[i + 1], dims[i])).astype(np.float32)
        tensors[f"layers.{i}.bias"] = np.zeros(dims[i + 1], np.float32)
    if nan:
        tensors["layers.0.bias"][0] = np.nan
    header = make_header(rules, ["relu"] * len(sizes) + ["identity"], len(dims) - 1)
    header.update(header_edit or {})
    meta = {HEADER_KEY: json.dumps(header)} if metadata else None
    return save(tensors, metadata=meta)


def _zip() -> bytes:
    out = BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("data", "{}")
    return out.getvalue()


# (bytes, words the one-line message must hold)
BAD_FILES = {
    "empty": (lambda: b"", "is empty"),
    "zip": (_zip, "zip archive"),
    "pickle": (lambda: pickle.dumps({"weights": [1, 2]}), "pickle"),
    "not_safetensors": (lambda: b"\x10\x00\x00\x00\x00\x00\x00\x00{" + b"x" * 40, "safetensors"),
    "no_header": (lambda: network_file(metadata=False), "no 'bergen_policy' header"),
    "nan": (lambda: network_file(nan=True), "non-finite"),
    "wrong_obs_size": (lambda: network_file(obs_size=7), "observations of size 7"),
    "wrong_format": (lambda: network_file(header_edit={"format": "other"}), "format"),
    "wrong_version": (lambda: network_file(header_edit={"version": 99}), "version 99"),
    "bad_rules": (
        lambda: network_file(header_edit={"rules": {**STANDARD.to_dict(), "target": -3}}),
        "target",
    ),
    "actions_differ": (
        lambda: network_file(header_edit={"num_actions": 5}),
        "the header says 5 actions",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_each_bad_file_is_refused_in_one_line_naming_the_problem(kind: str) -> None:
    make, words = BAD_FILES[kind]
    with pytest.raises(SubmissionError) as info:
        check_submission(make(), label="upload.safetensors")
    message = str(info.value)
    assert "\n" not in message and len(message) < 400
    assert message.startswith("upload.safetensors") and words in message, message
    assert "/tmp" not in message  # the checker's scratch path is not shown


def test_size_and_network_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    good = shipped("standard_2p")
    with pytest.raises(
        SubmissionError, match=f"has {len(good)} bytes; the arena takes at most 1000"
    ):
        check_submission(good, max_bytes=1000)
    big = network_file(sizes=(16,) * 13)
    with pytest.raises(SubmissionError, match="14 layers; the arena takes at most 12"):
        check_submission(big)
    monkeypatch.setattr(arena_store, "MAX_PARAMETERS", 1000)
    with pytest.raises(SubmissionError, match="parameters; the arena takes at most 1000"):
        check_submission(good)


def test_a_good_file_records_its_rules_hash_and_size() -> None:
    import hashlib

    data = shipped("standard_3p")
    sub = check_submission(data)
    assert sub.rules == Rules.preset("standard", num_players=3)
    assert sub.sha256 == hashlib.sha256(data).hexdigest() and sub.size == len(data)
    assert sub.parameters > 1000


@pytest.mark.parametrize(
    ("name", "problem"), [("x" * 41, "41 characters"), ("a\nb", "letters"), ("a\x00", "letters")]
)
def test_names(name: str, problem: str) -> None:
    assert check_name("  Ada  ") == "Ada" and check_name(None) == "anonymous"
    with pytest.raises(SubmissionError, match=problem):
        check_name(name)


def test_the_same_file_twice_is_one_entry() -> None:
    store = ArenaStore(":memory:")
    sub = check_submission(shipped("standard_2p"))
    first, new = store.add_policy(sub, "ada", "1.2.3.4")
    again, new_again = store.add_policy(check_submission(shipped("standard_2p")), "bob", "5.6.7.8")
    assert new and not new_again and again == first and again.name == "ada"
    assert len(store.policies()) == 1
    assert store.submissions_since("1.2.3.4", 0) == 1 and store.submissions_since("5.6.7.8", 0) == 0
    assert store.policy_path(sub.sha256).read_bytes() == sub.data


def test_a_new_policy_costs_its_anchors_and_a_bounded_sample_of_rivals() -> None:
    store = ArenaStore(":memory:")
    anchor, _ = store.add_policy(check_submission(shipped("expert_2p")), "expert_2p", anchor=True)
    first = store.plan(anchor, 8, rivals=2)
    scripted = ["random", "greedy", "heuristic", "tuned"]
    # the scripted anchors' round robin, then the new anchor against each of them
    assert [(j.a, j.b) for j in first] == [
        (a, b) for i, a in enumerate(scripted) for b in scripted[i + 1 :]
    ] + [(anchor.id, a) for a in scripted]
    subs = []
    for name in ("standard_2p", "scratch_2p"):
        entry, _ = store.add_policy(check_submission(shipped(name)), name)
        subs.append((entry, store.plan(entry, 8, rivals=2)))
    (one, jobs_one), (two, jobs_two) = subs
    assert {j.b for j in jobs_one} == {*scripted, anchor.id}  # no rival yet
    assert {j.b for j in jobs_two} == {*scripted, anchor.id, one.id}  # one rival, of at most 2
    assert all(j.a != j.b for j in store.queued())
    # another game's policy: tuned plays presets only, so a changed option leaves it out
    fives = Rules.preset("fives")
    custom = network_file(rules=Rules.preset("standard", target=21))
    entry, _ = store.add_policy(check_submission(custom), "custom")
    assert "tuned" not in {x for j in store.plan(entry, 8, 2) for x in (j.a, j.b)}
    assert rules_key(fives) != rules_key(STANDARD)


def test_a_server_may_name_other_anchor_agents() -> None:
    store = ArenaStore(":memory:")
    entry, _ = store.add_policy(check_submission(shipped("standard_2p")), "ada")
    search = "search:samples=4"
    jobs = store.plan(entry, 4, rivals=0, agents=("random", search))
    assert [(j.a, j.b) for j in jobs] == [
        ("random", search),
        (entry.id, "random"),
        (entry.id, search),
    ]
    rng = np.random.default_rng(0)
    for job in jobs:
        store.record(job.id, _fake_outcome(2.0, 1.0, 2, rng), 1.0)
    board = leaderboard(store.board_data(rules_key(STANDARD)), bootstrap=10)
    anchors = {e["agent"] for e in board["entries"] if e["anchor"]}
    assert anchors == {"random", search}
    mine = next(e for e in board["entries"] if e["agent"] == entry.id)
    assert set(mine["against_anchors"]) == {"random", search}


def _fake_outcome(strength_a: float, strength_b: float, groups: int, rng) -> PairOutcome:
    """Two-player duplicate outcomes drawn from Bradley-Terry odds (two seatings a group)."""
    p = strength_a / (strength_a + strength_b)
    chars = "".join("2" if rng.random() < p else "0" for _ in range(2 * groups))
    return PairOutcome(chars, (chars.count("2"), chars.count("0")), 2, 1, 1)


def _filled(path: Path | str, strengths: dict[str, float], groups: int = 200) -> ArenaStore:
    store = ArenaStore(path)
    rng = np.random.default_rng(1)
    entry, _ = store.add_policy(check_submission(shipped("standard_2p")), "ada")
    for job in store.plan(entry, 2 * groups, rivals=0):
        s = {**strengths, entry.id: strengths["policy"]}
        store.record(job.id, _fake_outcome(s[job.a], s[job.b], groups, rng), 1.0)
    return store


STRENGTHS = {"random": 1.0, "greedy": 2.0, "heuristic": 4.0, "tuned": 4.0, "policy": 3.0}


def test_ratings_are_the_bradley_terry_fit_of_the_stored_results(tmp_path: Path) -> None:
    store = _filled(tmp_path / "a.sqlite3", STRENGTHS)
    board = leaderboard(store.board_data(rules_key(STANDARD)), bootstrap=200)
    by = {e["agent"]: e for e in board["entries"]}
    assert by["random"]["rating"] == PINNED[1] and by["random"]["interval"] == [1000.0, 1000.0]
    policy = by[file_id(store.policies()[0].sha256)]
    assert policy["name"] == "ada" and not policy["anchor"] and policy["matches"] == 4 * 400
    assert not policy["provisional"] and policy["queued"] == 0
    # the fit recovers the strengths' order and their Elo gaps within its intervals
    for name, s in STRENGTHS.items():
        entry = policy if name == "policy" else by[name]
        true = 1000 + 400 * np.log10(s)
        lo, hi = entry["interval"]
        assert lo - 40 <= true <= hi + 40, (name, true, entry)
        assert lo <= entry["rating"] <= hi
    # each score against an anchor is what the ratings predict, roughly
    vs_random = policy["against_anchors"]["random"]
    assert abs(vs_random["score"] - expected_score(policy["rating"], 1000.0)) < 0.06
    assert vs_random["matches"] == 400
    # the same rows give the same board
    assert leaderboard(store.board_data(rules_key(STANDARD)), bootstrap=200) == board


def test_few_matches_or_queued_pairs_are_provisional() -> None:
    store = ArenaStore(":memory:")
    entry, _ = store.add_policy(check_submission(shipped("standard_2p")), "ada")
    jobs = store.plan(entry, 8, rivals=0)
    rng = np.random.default_rng(0)
    for job in jobs[:-1]:  # one pair still queued
        store.record(job.id, _fake_outcome(2.0, 1.0, 4, rng), 1.0)
    board = leaderboard(store.board_data(rules_key(STANDARD)), bootstrap=20)
    mine = next(e for e in board["entries"] if e["agent"] == entry.id)
    assert mine["provisional"] and mine["queued"] == 1
    assert all(e["provisional"] for e in board["entries"])  # 8 matches a pair: too few


def test_a_restart_resumes_the_queue_and_counts_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "arena.sqlite3"
    store = ArenaStore(path)
    entry, _ = store.add_policy(check_submission(shipped("standard_2p")), "ada")
    jobs = store.plan(entry, 4, rivals=0)
    done = jobs[:3]
    for job in done:  # a real pair, played on the stored file
        a, b = store.agent_spec(job.a), store.agent_spec(job.b)
        store.record(job.id, play_pair_outcome(a, b, job.rules, job.matches, seed=7), 0.5)
    store.close()  # the server stops mid-queue

    again = ArenaStore(path)
    assert [j.id for j in again.queued()] == [j.id for j in jobs[3:]]
    assert [p.job for p in again.results()] == [j.id for j in done]
    first = again.results()[0]
    assert not again.record(first.job, first.outcome, 1.0)  # a late duplicate is not stored
    assert len(again.results()) == 3
    for job in again.queued():
        a, b = again.agent_spec(job.a), again.agent_spec(job.b)
        again.record(job.id, play_pair_outcome(a, b, job.rules, job.matches, seed=8), 0.5)
    assert again.queued() == [] and len(again.results()) == len(jobs)
    assert again.plan(entry, 4, rivals=0) == []  # its pairs are stored: nothing again


def test_a_failed_pair_leaves_the_queue_with_its_error() -> None:
    store = ArenaStore(":memory:")
    entry, _ = store.add_policy(check_submission(shipped("standard_2p")), "ada")
    job = store.plan(entry, 4, rivals=0)[0]
    store.fail(job.id, "boom")
    assert job.id not in [j.id for j in store.queued()]


def test_a_damaged_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite3"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(OSError, match="cannot be used"):
        ArenaStore(path)


def test_ratings_command_refits_offline(tmp_path: Path) -> None:
    path = tmp_path / "arena.sqlite3"
    store = _filled(path, STRENGTHS, groups=50)
    board = leaderboard(store.board_data(rules_key(STANDARD)), bootstrap=50)
    store.close()
    out = subprocess.run(
        [sys.executable, "-m", "bergen_env.web.arena_cli", "ratings", "--db", str(path)]
        + ["--bootstrap", "50", "--json"],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    expected = with_exploits([board], {})  # nothing measured: every entry's exploit is None
    assert json.loads(out.stdout)["boards"] == json.loads(json.dumps(expected))
    text = subprocess.run(
        [sys.executable, "-m", "bergen_env.web.arena_cli", "ratings", "--db", str(path)]
        + ["--bootstrap", "50"],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    ).stdout
    assert "| 1 |" in text and "ada" in text and "'standard' rules, 2 players" in text
    missing = subprocess.run(
        [sys.executable, "-m", "bergen_env.web.arena_cli", "ratings", "--db", "nowhere.db"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert missing.returncode == 2 and "no arena database 'nowhere.db'" in missing.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["submit", "nowhere.safetensors", "--server", "http://127.0.0.1:9"], "cannot read"),
        (
            ["submit", str(POLICIES / "standard_2p.safetensors"), "--server", "http://127.0.0.1:9"],
            "cannot reach http://127.0.0.1:9",
        ),
        (["ratings", "--db", "nowhere.db", "--bootstrap", "0"], "--bootstrap must be >= 1"),
        (["ratings"], "the following arguments are required: --db"),
    ],
)
def test_bergen_arena_reports_a_user_error_in_one_line_and_exits_2(
    args: list[str], words: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bergen_env.web.arena_cli", *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("bergen-arena") and ": error: " in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and words in out.stderr, out.stderr


def test_the_module_bounds_are_what_the_docs_say() -> None:
    assert len(shipped("expert_3p")) <= arena_store.MAX_FILE_BYTES  # every shipped file fits
    for path in POLICIES.glob("*.safetensors"):
        check_submission(path.read_bytes())


def test_bergen_arena_needs_no_web_framework() -> None:
    """``bergen-arena`` (submit and ratings) runs on the base install: it imports neither
    Starlette, uvicorn nor torch."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('starlette', 'uvicorn', 'httpx2', 'torch'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from bergen_env.web.arena_cli import main\n"
        "main(sys.argv[1:])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "submit", str(POLICIES / "standard_2p.zip")]
        + ["--server", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert out.returncode == 2 and "is a zip archive" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
