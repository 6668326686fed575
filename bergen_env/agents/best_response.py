"""``best_response``: search that knows the policy it plays against (an approximate best response).

How much a best response gains against a policy is the measure of how exploitable it is
(exploitability). Exact best responses need the whole game tree, which only small variants
have (:mod:`bergen_env.openspiel`, ``SMALL_GAME``); in the full games this agent approximates
one, as in "approximate exploitability" (Timbers et al., 2020), by search with the policy as
the model of every opponent:

- **Deals** (the hidden tiles) are weighted by the policy's own probabilities of the moves the
  opponents were seen to make this hand: ``candidates * samples`` deals are drawn uniformly among
  those the rules allow (:class:`~bergen_env.hidden_tiles.HiddenTileSampler` without its soft
  guesses about how people play), each weighed by :class:`PolicyBelief` (the likelihood
  machinery of :class:`~bergen_env.agents.belief.BeliefModel` with the policy in place of the
  heuristic's softmax; ``history="sampled"`` scores every play of the hand, drawing which tiles
  were drawn when) and ``samples`` of them resampled in proportion.
- **Playouts** (one per legal action per deal, to the end of the hand) move every opponent by
  sampling the policy's action distribution; the best response's own seats (and its partner's)
  play ``rollout``: ``"heuristic"`` (default), ``"greedy"``, ``"random"`` or ``"policy"``.
- With ``playouts="compiled"`` (the ``[vector]`` extra: numba) every seat of a playout, the
  opponents included, plays the heuristic in the compiled kernels of plain search, and the
  policy enters through the deals' weights alone. A playout then costs a small fraction of a
  policy-driven one, so a decision can afford many more deals (and ``batch``/``prune``).
- **Leaves** are valued as :class:`~bergen_env.agents.search.SearchAgent` values them (a won
  match, or the match-win chance from the scores after the hand); with ``max_hands`` a hand
  that ends when that many hands have been played is worth 0 (a match cut unfinished, as
  OpenSpiel's ``max_hands`` cuts it).

The action with the best mean playout value is played. It is a lower bound on the exact best
response's value (it plays some strategy; search over sampled deals cannot plan to use
information it will only get later); ``docs/exploitability.md`` measures the gap on the small
variant, where exact best responses are known.

The policy under test is any agent with a stated distribution, the :class:`StatedPolicy`
protocol: ``action_probabilities(view)``, the probabilities of ``view.legal_actions`` with which
it plays from that public view. Scripted agents that play one action for sure (``heuristic``,
``greedy``, ``tuned``) state a point mass; ``random`` is uniform; ``policy:FILE`` states a point
mass on the network's most probable legal action (what it plays). A point mass makes a deal in
which the opponent would have played otherwise unlikely, not impossible: every probability is
at least ``floor`` (default 1e-4) in the likelihood, which keeps sampling total.

Parameters: ``policy`` (an agent string; ``%2C`` stands for a comma inside it, so the string
fits in this agent's own), ``samples`` (default 100), ``candidates`` (4), ``rollout``,
``history`` (``"sampled"``), ``floor``, ``max_hands`` (None), ``batch``/``certainty``/
``tolerance``/``prune`` (as in search), ``playouts`` (``"python"``, default, or
``"compiled"``: then ``rollout`` must be ``"heuristic"`` and ``max_hands`` None). Decisions are
reproducible from the RNG given to ``reset``. The policy is reset for the rules at ``reset``,
so a policy file trained for other rules or seating is refused there.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Protocol, runtime_checkable
from urllib.parse import unquote

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.agents.base import Agent, make_agent
from bergen_env.agents.belief import BeliefModel, _Decision, legal_plays
from bergen_env.agents.greedy import GreedyAgent
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.search import SearchAgent, leaf_value
from bergen_env.engine import BergenState, PublicView
from bergen_env.hidden_tiles import HiddenTileSampler
from bergen_env.rules import Rules
from bergen_env.tiles import NUM_TILES, OTHER_HALF, TILES
from bergen_env.validation import check_int, check_number

#: How the best response's own seats move inside its playouts.
OWN_ROLLOUTS = ("heuristic", "greedy", "random", "policy")
#: Where the playouts run: ``"python"`` (the opponents play the policy) or ``"compiled"``.
PLAYOUTS = ("python", "compiled")


@runtime_checkable
class StatedPolicy(Protocol):
    """An agent that states the distribution it plays from a public view."""

    def action_probabilities(self, view: PublicView) -> np.ndarray:
        """The probabilities of ``view.legal_actions`` (in that order), summing to 1."""
        ...


def quote_policy(spec: str) -> str:
    """``spec`` written to fit inside a best response's agent string (``%`` as ``%25``, commas
    as ``%2C``); the agent reads it back with ``unquote``."""
    return spec.replace("%", "%25").replace(",", "%2C")


def stated_policy(spec: str | Agent) -> Agent:
    """The agent of ``spec`` (a string or an instance), checked to state its distribution."""
    agent = make_agent(spec) if isinstance(spec, str) else spec
    if not isinstance(agent, StatedPolicy):
        raise ValueError(
            f"agent {agent.name!r} states no action distribution (action_probabilities), so no "
            f"best response can model it; stated ones: random, greedy, heuristic, tuned, "
            f"policy:FILE"
        )
    return agent


def line_before(moves: tuple[tuple[int, int], ...]) -> list[tuple[tuple[int, int], ...]]:
    """The line (oriented tiles, left to right) before each of a hand's ``moves``."""
    line: list[tuple[int, int]] = []
    ends = [0, 0]
    out = []
    for _, a in moves:
        out.append(tuple(line))
        if a in (DRAW, PASS):
            continue
        if a >= DOUBLE_PLAY:
            n = a - DOUBLE_PLAY
            line.insert(0, (n, n))
            line.append((n, n))
        elif not line:
            ends[:] = TILES[a >> 1]
            line.append(TILES[a >> 1])
        else:
            e = a & 1
            n = ends[e]
            other = OTHER_HALF[(a >> 1) * 7 + n]
            ends[e] = other
            if e:
                line.append((n, other))
            else:
                line.insert(0, (other, n))
    return out


class PolicyBelief(BeliefModel):
    """:class:`BeliefModel` with a stated policy as the model of the opponents' plays.

    A play is scored by ``log max(p, floor)``, ``p`` the policy's probability of it from the
    mover's public view then (rebuilt from the public moves and the mover's hand in the deal).
    Plays of the viewer's own side are not scored (its strategy is the searcher's, not stated).
    A lead that is a choice (:attr:`~bergen_env.rules.Rules.free_lead`) is scored like any play.
    Tiles the view shows can never be dealt (outside a small variant's pool: unseen, held and
    on the line sum to less than the copies of a set) stay out of the rebuilt views too.
    """

    scores_lead = True

    def __init__(
        self, view: PublicView, policy: StatedPolicy, floor: float, history: str = "sampled"
    ) -> None:
        super().__init__(view, 1.0, history=history)
        self.policy = policy
        self.log_floor = math.log(floor)
        self.pool = [
            u + h + k for u, h, k in zip(view.unseen_counts, view.hand_counts, view.line_counts)
        ]
        self._lines = line_before(view.moves) if self.decisions else []

    def _log_prob(self, d: _Decision, counts: list[int], sets: int) -> float:
        v = d.view
        plays = legal_plays(counts, v.ends, sets)
        if d.action not in plays:
            return -math.inf  # the deal contradicts the move
        rules = self.view.rules
        if len(plays) == 1 or rules.side_of[d.seat] == rules.side_of[self.view.seat]:
            return 0.0
        seat_view = self.seat_view(d, counts, plays)
        p = float(self.policy.action_probabilities(seat_view)[plays.index(d.action)])
        return max(math.log(p) if p > 0 else -math.inf, self.log_floor)

    def seat_view(self, d: _Decision, counts: list[int], plays: list[int]) -> PublicView:
        """The public view the mover of ``d`` had, holding ``counts`` (per tile) with the legal
        ``plays``: rebuilt from the public moves before it."""
        v = d.view
        rules = self.view.rules
        hand = tuple(t for t in range(NUM_TILES) for _ in range(counts[t]))
        return PublicView(
            rules=rules,
            seat=d.seat,
            current_player=d.seat,
            hand=hand,
            hand_counts=tuple(counts),
            line=self._lines[d.index],
            line_counts=tuple(d.line_counts),
            unseen_counts=tuple(
                max(0, p - c - k) for p, c, k in zip(self.pool, counts, d.line_counts)
            ),
            ends=v.ends,
            end_doubles=v.end_doubles,
            hand_sizes=v.hand_sizes,
            boneyard_size=v.boneyard_size,
            drawable=v.drawable,
            scores=v.scores,
            voids=v.voids,
            moves=self.view.moves[: d.index],
            hand_number=self.view.hand_number,
            lead_tile=None,
            legal_actions=tuple(plays),
        )


class PolicyWeights:
    """A :class:`PolicyBelief`'s log-weights of the compiled playouts' deals (flat rows of
    tiles: the hands by seat, then the boneyard)."""

    def __init__(self, model: BeliefModel) -> None:
        self.model = model
        ends = np.cumsum(model.view.hand_sizes).tolist()
        self.bounds = list(zip([0, *ends[:-1]], ends))

    def log_weights(self, deals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The log-weight of each row of ``deals``, in order, drawing from ``rng`` as
        :meth:`BeliefModel.log_weight` does."""
        log_weight, bounds = self.model.log_weight, self.bounds
        return np.array(
            [log_weight([row[a:b] for a, b in bounds], rng) for row in deals.tolist()],
            dtype=np.float64,
        )


class BestResponseAgent(SearchAgent):
    """Search with the policy under test as the model of every opponent; see the module."""

    needs_observation = False
    __signature__ = None  # its own keywords (below), not the search's

    def __init__(
        self,
        policy: str | Agent | None = None,
        samples: int = 100,
        candidates: int = 4,
        rollout: str = "heuristic",
        history: str = "sampled",
        floor: float = 1e-4,
        max_hands: int | None = None,
        batch: int | None = None,
        certainty: float = 2.0,
        tolerance: float = 0.002,
        prune: bool = False,
        playouts: str = "python",
    ) -> None:
        if policy is None:
            raise ValueError("a best response needs the policy it answers (policy=SPEC)")
        if rollout not in OWN_ROLLOUTS:
            raise ValueError(f"parameter 'rollout' must be one of {OWN_ROLLOUTS}, got {rollout!r}")
        check_number("floor", floor, above=0, label="parameter", error=ValueError)
        if not floor < 1:
            raise ValueError(f"parameter 'floor' must be < 1, got {floor!r}")
        check_int(
            "max_hands", max_hands, minimum=1, allow_none=True, label="parameter", error=ValueError
        )
        if playouts not in PLAYOUTS:
            raise ValueError(f"parameter 'playouts' must be one of {PLAYOUTS}, got {playouts!r}")
        compiled = playouts == "compiled"
        if compiled and rollout != "heuristic":
            raise ValueError(
                f"playouts='compiled' plays the heuristic for every seat, so parameter 'rollout' "
                f"must be 'heuristic', got {rollout!r}"
            )
        if compiled and max_hands is not None:
            raise ValueError("playouts='compiled' cannot cut a match (max_hands); use 'python'")
        super().__init__(
            samples=samples,
            rollout="heuristic" if compiled else "random",  # python: the playouts are this class's
            belief=1,
            candidates=candidates,
            playouts=playouts,
            history=history,
            batch=batch,
            certainty=certainty,
            tolerance=tolerance,
            prune=prune,
        )
        self.policy_spec = unquote(policy) if isinstance(policy, str) else policy.name
        # an instance is copied: the model is reset for its own seat
        self.model = stated_policy(
            unquote(policy) if isinstance(policy, str) else copy.deepcopy(policy)
        )
        self.own_rollout = rollout
        self.floor = float(floor)
        self.max_hands = max_hands
        self._own: Agent | None = {"heuristic": HeuristicAgent, "greedy": GreedyAgent}.get(
            rollout, lambda: None
        )()
        self._pool: list[int] | None = None

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        super().reset(rules, seat, rng)
        # The policy's seat: the next one (an opponent). A file trained for other rules or
        # seating is refused here. Its stated distributions draw nothing from this RNG.
        self.model.reset(rules, (seat + 1) % rules.num_players, np.random.default_rng(0))
        if self._own is not None:
            self._own.reset(rules, seat, np.random.default_rng(0))

    def hidden_sampler(self, view: PublicView) -> HiddenTileSampler:
        """Deals among those the rules allow, with no guess about how the opponents play."""
        return HiddenTileSampler(view, soft=False)

    def belief_model(self, view: PublicView) -> BeliefModel:
        return PolicyBelief(view, self.model, self.floor, self.config.history)

    def compiled_belief(self, model: BeliefModel) -> PolicyWeights:
        return PolicyWeights(model)

    def action_values(self, view: PublicView) -> dict[int, float]:
        pool = [
            u + h + k for u, h, k in zip(view.unseen_counts, view.hand_counts, view.line_counts)
        ]
        self._pool = None if all(c == view.rules.sets for c in pool) else pool
        return super().action_values(view)

    def _view(self, s: BergenState, seat: int) -> PublicView:
        """``seat``'s view in a playout (its unseen tiles limited to a small variant's pool)."""
        view = s.public_view(seat)
        if self._pool is None:
            return view
        unseen = tuple(
            max(0, p - c - k) for p, c, k in zip(self._pool, view.hand_counts, view.line_counts)
        )
        return dataclasses.replace(view, unseen_counts=unseen)

    def playout_values(self, root: BergenState, legal: list[int]) -> list[float]:
        """One playout of each action of ``legal`` from ``root``: the opponents sample the
        policy's distribution, the own side plays ``rollout``."""
        rng = self.rng
        rules = root.rules
        side_of = rules.side_of
        side = side_of[root.current_player]
        hand = root.hand_number
        table = self._win_table(rules)
        model, own = self.model, self._own
        out = []
        for first in legal:
            s = root.clone(rng=rng)
            s.apply_unchecked(first)
            while not s.terminal and s.hand_number == hand:
                moves = s.legal_actions()
                if len(moves) == 1:
                    a = moves[0]
                elif side_of[s.current_player] != side or self.own_rollout == "policy":
                    p = model.action_probabilities(self._view(s, s.current_player))
                    a = moves[_pick(p, rng)]
                elif own is not None:
                    a = own.act(None, None, self._view(s, s.current_player))
                else:
                    a = moves[int(rng.integers(len(moves)))]
                s.apply_unchecked(a)
            if not s.terminal and self.max_hands is not None and s.hand_number >= self.max_hands:
                out.append(0.0)  # the match is cut unfinished
            else:
                out.append(leaf_value(s, side, table))
        return out


def _pick(p: np.ndarray, rng: np.random.Generator) -> int:
    """An index drawn with probabilities ``p`` (no draw from ``rng`` for a point mass)."""
    top = int(np.argmax(p))
    if p[top] >= 1.0:
        return top
    k = int(np.searchsorted(np.cumsum(p), rng.random() * float(np.sum(p)), side="right"))
    return min(k, len(p) - 1)


__all__ = [
    "OWN_ROLLOUTS",
    "PLAYOUTS",
    "BestResponseAgent",
    "PolicyBelief",
    "PolicyWeights",
    "StatedPolicy",
    "line_before",
    "quote_policy",
    "stated_policy",
]
