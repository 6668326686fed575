"""The oracle diagnostic of benchmarks/oracle.py: what it may see, and that it runs."""

from __future__ import annotations

import numpy as np

from benchmarks.oracle import main, oracle_action
from bergen_env.agents.search import SearchAgent
from bergen_env.engine import BergenState
from bergen_env.rules import Rules


def _choice_positions(count: int) -> list[BergenState]:
    rules = Rules.preset("standard")
    rng = np.random.default_rng(4)
    out = []
    for seed in range(200):
        s = BergenState(rules, seed=seed)
        while not s.terminal and len(out) < count:
            legal = s.legal_actions()
            if len(legal) > 2 and s.drawable > 1:
                out.append(s.clone())
            s.apply_unchecked(legal[int(rng.integers(len(legal)))])
    return out


def _oracle(s: BergenState, samples: int | None) -> int:
    search = SearchAgent(samples=1, rollout="public")
    search.reset(s.rules, s.current_player, np.random.default_rng(0))
    return oracle_action(search, s, samples)


def test_hands_oracle_does_not_see_the_boneyard_order() -> None:
    for s in _choice_positions(12):
        other = s.clone()
        undrawn = other.boneyard[other.bone_pos :]
        other.boneyard = other.boneyard[: other.bone_pos] + undrawn[::-1]
        assert _oracle(s, samples=5) == _oracle(other, samples=5)
        assert _oracle(s, samples=5) in s.legal_actions()


def test_oracle_runs(capsys) -> None:
    args = ["--matches", "2", "--sees", "hands", "--samples", "2", "--opponent", "greedy"]
    assert main(args) == 0
    assert "sees every hand," in capsys.readouterr().out
    assert main(["--matches", "2"]) == 0
    assert "every hand and the boneyard" in capsys.readouterr().out
