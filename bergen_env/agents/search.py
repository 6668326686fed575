"""``search``: Perfect-Information Monte Carlo over determinizations of the hidden tiles.

For each of ``samples`` determinizations (hidden tiles dealt consistently with the public view by
:class:`~bergen_env.hidden_tiles.HiddenTileSampler`, then
:meth:`BergenState.from_view`), every legal action is applied to a clone of the same
determinization (common random numbers) and played out to the end of the current hand (or of
the match) with a fast policy written directly against the engine state. A won match is worth
``+WIN_VALUE * target`` and a lost one ``-WIN_VALUE * target``; a hand that ends with the match
still on is worth, with ``value="win"``, ``WIN_VALUE * target * (2p - 1)`` where ``p`` is the
chance to win the match from the new scores (:func:`~bergen_env.agents.match_value.win_table`;
rule sets with more than ``MAX_STATES`` score combinations have none), and with
``value="margin"`` the searcher's side's score minus the best other side's score.
``value="auto"`` (the default) is ``"win"`` where the rules have a table (two sides under every
preset, Fives' 61 included; three or four players under the standard one) and ``"margin"``
elsewhere. A single-hand match (Draw) has no table: every playout reaches the match's end, worth
``+-WIN_VALUE * 100`` (0 for a tie).
The action with the best mean wins (ties: the greedy order).

Parameters: ``samples`` (default 200), ``budget_ms`` (stop sampling once this much time has
passed; results then depend on the machine, so the default is None), ``rollout`` (default
``"public"``: the fast policy of :func:`greedy_rollout` with every player deciding from what its
own seat may know; ``"greedy"``: the same policy reading the determinization's hidden hands;
in games without headers (Fives, Draw) both are :func:`points_rollout`;
``"random"``: uniform legal moves; ``"heuristic"``: the heuristic agent makes every choice of the
playout from the mover's own public view, a model of a strong player at several times the
cost per sample; ``benchmarks/agents_speed.py`` measures each).
``value``: see above.
``belief=1`` (default 0) weighs deals by how well they explain the other seats' plays of this
hand (:class:`~bergen_env.agents.belief.BeliefModel`, a softmax with ``temperature``, default
0.5, over the heuristic's scores): ``candidates * samples`` deals are drawn (``candidates``,
default 4) and ``samples`` of them resampled in proportion to their likelihood.
``partner_temperature`` (default None: ``temperature``) scores a partner's plays with a softmax
of its own, for seatings with partnerships: a searching partner plays unlike the heuristic.
``history="sampled"`` (default ``"exact"``) scores every play of the others, sampling per deal
which of their kept tiles they drew when (see :mod:`~bergen_env.agents.belief`); ``"exact"``
scores only the plays made with a hand the deal tells exactly.
``playouts``: ``"python"`` plays the rollouts on :class:`BergenState`; ``"compiled"`` plays
the ``"public"``, ``"greedy"`` and ``"heuristic"`` rollouts with the compiled kernels of
:mod:`bergen_env.agents.compiled.playouts` (the ``[vector]`` extra: numba), and weighs
``belief=1``'s deals with :mod:`bergen_env.agents.compiled.belief_weights`, with the same values
and decisions, the random stream consumed the same way; ``"auto"`` (default) is ``"compiled"``
where numba is installed and the rollout has compiled playouts, else ``"python"``. The compiled
kernels play every rule option (Bergen, Draw and Fives).
``batch`` (default None: one round of ``samples``): sample ``batch`` deals at a time, up to
``samples``, and stop once :func:`settled`: every other action is behind the leader by more than
``certainty`` (default 2) standard errors of the paired difference, or surely within
``tolerance`` (default 0.002, in match wins: ``WIN_VALUE * score_scale`` value units) of it;
``used`` holds the deals of the last decision (``played``: per action). ``prune=true`` (default
false) stops playing an action once it is behind the leader by more than ``certainty`` standard
errors (:func:`beaten`), so later rounds spend their playouts on the actions still in
contention; each action's value is then its mean over the deals it was played on, and the
choice is among the actions played on every deal.
With ``budget_ms=None`` decisions are reproducible from the RNG given to ``reset``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import time
import typing
from functools import reduce
from operator import or_
from typing import Any

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.agents.base import Agent
from bergen_env.agents.belief import HISTORIES, BeliefModel, resample
from bergen_env.agents.greedy import greedy_key
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.match_value import MAX_STATES, WinTable, has_table, table_states, win_table
from bergen_env.engine import TILE_POOLS, BergenState, PublicView
from bergen_env.errors import install_hint
from bergen_env.hidden_tiles import HiddenTileSampler
from bergen_env.rules import DOUBLE_LEADS, Rules
from bergen_env.scoring import OPENING_POINTS, PLAY_POINTS
from bergen_env.tiles import (
    CONTAINS,
    DOUBLE_ID,
    IS_DOUBLE,
    NUM_NUMBERS,
    NUM_TILES,
    OTHER_HALF,
    PIPS,
    TILE_ID,
)
from bergen_env.validation import check_int, check_keywords, check_number

ROLLOUTS = ("greedy", "public", "random", "heuristic")
VALUES = ("auto", "win", "margin")
PLAYOUTS = ("auto", "compiled", "python")
BELIEFS = (0, 1)
#: The rollouts that have compiled playouts (``bergen_env.agents.compiled.playouts``).
COMPILED_ROLLOUTS = ("greedy", "public", "heuristic")
#: The greedy rollout's preference among playable tiles: doubles, then pips, then id (descending).
ROLLOUT_ORDER = tuple(
    sorted(range(NUM_TILES), key=lambda t: (IS_DOUBLE[t], PIPS[t], t), reverse=True)
)
#: A match outcome is worth this many targets of points (beyond any point difference in play).
WIN_VALUE = 10
ALL_TILES = (1 << NUM_TILES) - 1
#: ``VOID_TILES[v]``: the tiles holding a number of the 7-bit void mask ``v``.
VOID_TILES = tuple(
    reduce(or_, (CONTAINS[x] for x in range(NUM_NUMBERS) if v >> x & 1), 0)
    for v in range(1 << NUM_NUMBERS)
)
#: ``HEADER_TILE[e0 * 7 + e1]``: the tile that makes a header on ends ``e0``/``e1``.
HEADER_TILE = tuple(TILE_ID[(e0, e1)] for e0 in range(NUM_NUMBERS) for e1 in range(NUM_NUMBERS))


def greedy_rollout(s: BergenState, hand: int, clairvoyant: bool = True) -> None:
    """Play ``s`` to the end of hand ``hand`` (or of the match) with the fast greedy policy.

    A header tile is played when held (on the end that keeps a double end), else the first
    playable tile in ``ROLLOUT_ORDER`` (doubles, then heavy tiles) whose new ends the next seat
    cannot header, else draw, else pass. Whether the next seat can header: with ``clairvoyant``
    its hand in the determinization says; otherwise only what the player on turn may know
    does (the header tile may be hidden: neither in its own hand nor on the line, and the next
    seat is not known void in its numbers), so the other hands are never read.
    """
    two_sets = s.rules.sets == 2
    n = s.num_players
    hands = s.hands
    hand_bits = s.hand_bits
    line_counts = s.line_counts
    voids = s.voids
    end_num = s.end_num
    end_dbl = s.end_dbl
    apply = s.apply_unchecked
    on_line = 0
    if not clairvoyant:
        for t in range(NUM_TILES):
            if line_counts[t]:
                on_line |= 1 << t
    opening = OPENING_POINTS[s.rules.play_scoring]
    while True:
        p = s.current_player
        if s.lead_tile is not None:
            a = 2 * s.lead_tile
        elif not s.line_len:  # a free lead (a custom rule set: headers with lead=rotate)
            a = best_opening(hand_bits[p], opening)
        else:
            bits = hand_bits[p]
            e0, e1 = end_num
            m0 = bits & CONTAINS[e0]
            playable = m0 | bits & CONTAINS[e1]
            if playable:
                h = HEADER_TILE[e0 * 7 + e1]
                if two_sets and e0 == e1 and hands[p][DOUBLE_ID[e0]] >= 2:
                    a = DOUBLE_PLAY + e0
                elif bits >> h & 1:
                    a = 2 * h + end_dbl[0]  # keep a double end: 3 points instead of 2
                else:
                    # Skip plays whose new ends the next seat can header; if all do, the first.
                    q = (p + 1) % n
                    if clairvoyant:
                        threats = hand_bits[q]
                    elif not two_sets:
                        threats = ALL_TILES & ~(bits | on_line) & ~VOID_TILES[voids[q]]
                    else:
                        held = hands[p]
                        threats = 0
                        for t in range(NUM_TILES):
                            if held[t] + line_counts[t] < 2:
                                threats |= 1 << t
                        threats &= ~VOID_TILES[voids[q]]
                    m1 = bits & CONTAINS[e1]
                    a = -1
                    first = -1
                    for t in ROLLOUT_ORDER:
                        if not playable >> t & 1:
                            continue
                        if m0 >> t & 1:
                            if not threats >> HEADER_TILE[OTHER_HALF[t * 7 + e0] * 7 + e1] & 1:
                                a = 2 * t
                                break
                            if first < 0:
                                first = 2 * t
                        if m1 >> t & 1:
                            if not threats >> HEADER_TILE[e0 * 7 + OTHER_HALF[t * 7 + e1]] & 1:
                                a = 2 * t + 1
                                break
                            if first < 0:
                                first = 2 * t + 1
                    if a < 0:
                        a = first
            elif s.bone_pos < s.draw_limit:
                a = DRAW
            else:
                a = PASS
        apply(a)
        if a < DRAW:
            on_line |= 1 << (a >> 1)
        if s.terminal or s.hand_number != hand:
            return


def points_rollout(s: BergenState, hand: int) -> None:
    """Play ``s`` to the end of hand ``hand`` (or of the match) with the fast greedy policy of the
    games without headers (Fives, Draw): the play that scores the most now (the Fives count),
    ties to the first in ``ROLLOUT_ORDER`` (doubles, then heavy tiles: shed weight before a
    block); else draw, else pass. It reads the player's own hand and the line only.
    """
    table = PLAY_POINTS[s.rules.play_scoring]
    opening = OPENING_POINTS[s.rules.play_scoring]
    hand_bits = s.hand_bits
    end_num = s.end_num
    end_dbl = s.end_dbl
    apply = s.apply_unchecked
    while True:
        p = s.current_player
        bits = hand_bits[p]
        if s.lead_tile is not None:
            a = 2 * s.lead_tile
        elif not s.line_len:  # a free lead: the best-scoring tile, then the order
            a = best_opening(bits, opening)
        else:
            e0, e1 = end_num
            d0, d1 = end_dbl
            m0 = bits & CONTAINS[e0]
            m1 = bits & CONTAINS[e1]
            if m0 | m1:
                a, best = -1, -1
                for t in ROLLOUT_ORDER:
                    if m0 >> t & 1:
                        x = OTHER_HALF[t * 7 + e0]
                        v = table[((t * 7 + x) * 7 + e1) * 4 + 2 * IS_DOUBLE[t] + d1]
                        if v > best:
                            a, best = 2 * t, v
                    if m1 >> t & 1:
                        x = OTHER_HALF[t * 7 + e1]
                        v = table[((t * 7 + e0) * 7 + x) * 4 + 2 * d0 + IS_DOUBLE[t]]
                        if v > best:
                            a, best = 2 * t + 1, v
            elif s.bone_pos < s.draw_limit:
                a = DRAW
            else:
                a = PASS
        apply(a)
        if s.terminal or s.hand_number != hand:
            return


def leaf_value(s: BergenState, side: int, table: WinTable | None) -> float:
    """The value for ``side`` of a playout that ended (a match, or a hand): a won match is
    ``+WIN_VALUE * score_scale`` (lost: minus that; tied: 0); a finished hand is valued by the
    match-win ``table``, or without one by the side's score minus the best other side's."""
    rules = s.rules
    win = WIN_VALUE * rules.score_scale
    if s.terminal:  # a single hand can end tied: nobody wins
        return 0.0 if s.winner is None else win if s.winner == side else -win
    if table is not None:
        return win * (2.0 * table.of_side(s.scores, side) - 1.0)
    scores = s.scores
    return scores[side] - max(scores[o] for o in range(rules.num_sides) if o != side)


def best_opening(bits: int, opening: tuple[int, ...]) -> int:
    """The rollouts' free lead from the hand ``bits``: the tile with the most ``opening``
    points (``scoring.OPENING_POINTS`` of the game), ties to the first in ``ROLLOUT_ORDER``."""
    a, best = -1, -1
    for t in ROLLOUT_ORDER:
        if bits >> t & 1 and opening[t] > best:
            a, best = 2 * t, opening[t]
    return a


def heuristic_rollout(s: BergenState, hand: int, agent: HeuristicAgent) -> None:
    """Play ``s`` to the end of hand ``hand`` (or of the match) with ``agent`` deciding every
    real choice from the public view of the seat on turn (its own hand, never the others')."""
    apply = s.apply_unchecked
    legal_actions = s.legal_actions
    while True:
        legal = legal_actions()
        a = legal[0] if len(legal) == 1 else agent.act(None, None, s.public_view(s.current_player))
        apply(a)
        if s.terminal or s.hand_number != hand:
            return


def random_rollout(s: BergenState, hand: int, rng: np.random.Generator) -> None:
    """Play ``s`` to the end of hand ``hand`` (or of the match) with uniform legal moves."""
    apply = s.apply_unchecked
    legal_actions = s.legal_actions
    # A block of uniforms per playout: far cheaper than one Generator call per move.
    uniforms = rng.random(64).tolist()
    k = 0
    while True:
        legal = legal_actions()
        if len(legal) == 1:
            a = legal[0]
        else:
            if k == len(uniforms):
                uniforms = rng.random(64).tolist()
                k = 0
            a = legal[int(uniforms[k] * len(legal))]
            k += 1
        apply(a)
        if s.terminal or s.hand_number != hand:
            return


def deal_next_hand(rules: Rules, rng: np.random.Generator) -> None:
    """Draw from ``rng`` what ``BergenState`` draws to deal a hand (redealing while no seat
    holds a double, under the leads that need one), discarding the deal: keeps the stream of
    compiled playouts in step."""
    dealt = rules.num_players * rules.hand_size
    buffer = _DEAL_BUFFERS[rules.sets]
    while True:
        buffer[:] = TILE_POOLS[rules.sets]
        rng.shuffle(buffer)  # what Generator.permutation does to its copy
        if rules.lead not in DOUBLE_LEADS or _IS_DOUBLE[buffer[:dealt]].any():
            return


def numba_installed() -> bool:
    """Whether the ``[vector]`` extra (numba) can be imported."""
    return importlib.util.find_spec("numba") is not None


_IS_DOUBLE = np.array(IS_DOUBLE, dtype=bool)
_DEAL_BUFFERS = {sets: pool.copy() for sets, pool in TILE_POOLS.items()}


def _gaps(
    totals: np.ndarray, products: np.ndarray, count: int, certainty: float
) -> tuple[int, np.ndarray, np.ndarray]:
    """The leading action, and each action's mean value behind it with ``certainty`` standard
    errors of the paired difference (both 0 for the leader)."""
    best = int(np.argmax(totals))
    lead = (totals[best] - totals) / count
    square = (products[best, best] + np.diag(products) - 2 * products[best]) / count
    variance = np.maximum(square - lead * lead, 0.0) * count / (count - 1)
    return best, lead, certainty * np.sqrt(variance / count)


def settled(
    totals: np.ndarray, products: np.ndarray, count: int, certainty: float, tolerance: float = 0.0
) -> bool:
    """Whether the leading action is known well enough after ``count`` deals, from the summed
    values of each action (``totals``) and of the products of their values (``products``,
    actions × actions; every deal values all actions, so the differences are paired): every
    other action is behind by more than ``certainty`` standard errors of the difference, or
    surely within ``tolerance`` of the leader (the choice hardly matters)."""
    if count < 2:
        return False
    best, lead, error = _gaps(totals, products, count, certainty)
    others = np.arange(len(totals)) != best
    return bool(np.all(((lead > error) | (lead + error < tolerance))[others]))


def beaten(totals: np.ndarray, products: np.ndarray, count: int, certainty: float) -> np.ndarray:
    """Which actions are behind the leader by more than ``certainty`` standard errors of the
    paired difference after ``count`` deals (``totals`` and ``products`` as in :func:`settled`):
    those ``batch`` search with ``prune=True`` stops playing."""
    if count < 2:
        return np.zeros(len(totals), dtype=bool)
    _, lead, error = _gaps(totals, products, count, certainty)
    return lead > error


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """The knobs of :class:`SearchAgent` (see the module docstring), checked together when
    built: a bad value or combination is a ``ValueError`` naming the parameter.

    The fields are the agent string's keywords, in this order: ``search:samples=400,batch=100``
    is ``SearchAgent(samples=400, batch=100)`` is ``SearchAgent(SearchConfig(samples=400,
    batch=100))``.
    """

    samples: int = 200
    budget_ms: float | None = None
    rollout: str = "public"
    belief: int = 0
    temperature: float = 0.5
    candidates: int = 4
    value: str = "auto"
    playouts: str = "auto"
    batch: int | None = None
    certainty: float = 2.0
    tolerance: float = 0.002
    prune: bool = False
    partner_temperature: float | None = None
    history: str = "exact"

    def __post_init__(self) -> None:
        param = dict(label="parameter", error=ValueError)
        check_int("samples", self.samples, minimum=1, **param)
        check_number("budget_ms", self.budget_ms, above=0, allow_none=True, **param)
        rollout, playouts, belief = self.rollout, self.playouts, self.belief
        if rollout not in ROLLOUTS:
            raise ValueError(f"parameter 'rollout' must be one of {ROLLOUTS}, got {rollout!r}")
        if self.value not in VALUES:
            raise ValueError(f"parameter 'value' must be one of {VALUES}, got {self.value!r}")
        if playouts not in PLAYOUTS:
            raise ValueError(f"parameter 'playouts' must be one of {PLAYOUTS}, got {playouts!r}")
        if playouts == "compiled" and rollout not in COMPILED_ROLLOUTS:
            raise ValueError(
                f"parameter playouts='compiled' needs rollout in {COMPILED_ROLLOUTS}, "
                f"got {rollout!r}"
            )
        if playouts == "compiled" and not numba_installed():
            raise ValueError(
                "parameter playouts='compiled' needs numba, the [vector] extra: "
                + install_hint("vector")
            )
        if isinstance(belief, bool) or belief not in BELIEFS:
            raise ValueError(f"parameter 'belief' must be one of {BELIEFS}, got {belief!r}")
        check_number("temperature", self.temperature, above=0, **param)
        check_number(
            "partner_temperature",
            self.partner_temperature,
            above=0,
            allow_none=True,
            **param,
        )
        if self.partner_temperature is not None and belief != 1:
            raise ValueError(
                f"parameter 'partner_temperature' needs belief=1, got belief={belief!r}"
            )
        if self.history not in HISTORIES:
            raise ValueError(
                f"parameter 'history' must be one of {HISTORIES}, got {self.history!r}"
            )
        if self.history != "exact" and belief != 1:
            raise ValueError(f"parameter 'history' needs belief=1, got belief={belief!r}")
        check_int("candidates", self.candidates, minimum=1, **param)
        check_int("batch", self.batch, minimum=1, allow_none=True, **param)
        check_number("certainty", self.certainty, above=0, **param)
        check_number("tolerance", self.tolerance, minimum=0, **param)
        if self.batch is not None and self.budget_ms is not None:
            raise ValueError("parameters 'batch' and 'budget_ms' cannot be combined")
        if not isinstance(self.prune, bool):
            raise ValueError(f"parameter 'prune' must be true or false, got {self.prune!r}")
        if self.prune and self.batch is None:
            raise ValueError("parameter 'prune' needs 'batch' (it acts between rounds)")
        for name in ("temperature", "certainty", "tolerance"):
            object.__setattr__(self, name, float(getattr(self, name)))
        if self.partner_temperature is not None:
            object.__setattr__(self, "partner_temperature", float(self.partner_temperature))

    @property
    def compiled(self) -> bool:
        """Whether the playouts run compiled: a rollout that has them, with ``playouts``
        ``"compiled"``, or ``"auto"`` where numba is installed."""
        return self.rollout in COMPILED_ROLLOUTS and (
            self.playouts == "compiled" or (self.playouts == "auto" and numba_installed())
        )


#: The keywords of :class:`SearchConfig`, in order (the agent string's parameters).
SEARCH_KNOBS = tuple(f.name for f in dataclasses.fields(SearchConfig))


class SearchAgent(Agent):
    """PIMC: sampled determinizations, one playout per legal action per sample.

    ``SearchAgent(samples=400, batch=100)`` or ``SearchAgent(SearchConfig(...))``; keywords
    given with a config replace its fields. ``config`` holds every knob; ``agent.samples`` and
    the others read it.
    """

    needs_observation = False  # decides from the public view alone

    def __init__(self, config: SearchConfig | None = None, /, **knobs: Any) -> None:
        if config is not None and not isinstance(config, SearchConfig):
            raise TypeError(f"SearchAgent takes a SearchConfig or keywords, got {config!r}")
        check_keywords(knobs, SEARCH_KNOBS, label="parameter", error=TypeError)
        config = SearchConfig() if config is None else config
        self.config = dataclasses.replace(config, **knobs) if knobs else config
        self.compiled = self.config.compiled
        self.used = 0  # samples played at the last decision
        self.played: dict[int, int] = {}  # of those, the deals each action was played on
        self._expert = HeuristicAgent() if self.config.rollout == "heuristic" else None
        self._table_rules: Rules | None = None
        self._table: WinTable | None = None

    def __getattr__(self, name: str) -> Any:
        """The knobs read as attributes (``agent.samples``): the config's fields."""
        if name in SEARCH_KNOBS:
            return getattr(self.config, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in SEARCH_KNOBS:
            raise AttributeError(
                f"parameter {name!r} is fixed when the agent is built: "
                f"SearchAgent(..., {name}=...) or SearchAgent(config)"
            )
        super().__setattr__(name, value)

    def reset(self, rules: Rules, seat: int, rng: np.random.Generator) -> None:
        self._win_table(rules)  # a bad value/rules pair fails here, before the first decision
        if self.config.partner_temperature is not None and not rules.partnerships:
            raise ValueError(
                f"agent {self.name!r}: parameter 'partner_temperature' needs a seating with "
                f"partners, and these rules seat {rules.num_players} players on their own"
            )
        super().reset(rules, seat, rng)

    def _win_table(self, rules: Rules) -> WinTable | None:
        """The match-win table the leaves of ``rules`` are valued by, or None for the margin."""
        if self._table_rules is not rules:
            fits = has_table(rules)
            if self.config.value == "win" and not fits:
                if not rules.has_target or rules.single_hand:
                    why = "a single-hand match (or one without a target) has none"
                else:
                    why = (
                        f"these rules ({rules.num_sides} sides to {rules.target}) have "
                        f"{table_states(rules)} score combinations, more than {MAX_STATES}"
                    )
                raise ValueError(
                    f"agent {self.name!r}: parameter value='win' needs a match-win table, and "
                    f"{why} (use value='margin' or 'auto')"
                )
            use = self.config.value == "win" or (self.config.value == "auto" and fits)
            self._table = win_table(rules) if use else None
            self._table_rules = rules
        return self._table

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"agent {self.name!r}: seat {view.seat} has no legal action")
        if len(legal) == 1:
            return legal[0]
        values = self.action_values(view)
        if (
            self.config.prune
        ):  # a beaten action's mean is of fewer deals: the choice is among the rest
            legal = [a for a in legal if self.played[a] == self.used]
        return max(legal, key=lambda a: (values[a], greedy_key(view, a)))

    def action_values(self, view: PublicView) -> dict[int, float]:
        """Mean playout value of each legal action over the samples drawn."""
        deadline = (
            None
            if self.config.budget_ms is None
            else time.perf_counter() + self.config.budget_ms / 1000.0
        )
        legal = view.legal_actions
        sampler = self.hidden_sampler(view)
        compiled = self._compiled_root(view) if self.compiled else None
        model = self.belief_model(view) if self.config.belief == 1 else None
        rows = None  # the scored past plays as compiled rows, built once per decision
        if compiled is not None and model is not None and model.decisions:
            rows = self.compiled_belief(model)
        parts = (view, sampler, compiled, model, rows)
        if self.config.batch is None:
            totals, _, done = self._totals(*parts, self.config.samples, deadline)
            counts = [done] * len(legal)
        else:
            totals, done, counts = self._rounds(view, parts)
        self.used = done
        self.played = dict(zip(legal, counts))
        return {a: v / c for a, v, c in zip(legal, totals.tolist(), counts)}

    def hidden_sampler(self, view: PublicView) -> HiddenTileSampler:
        """The sampler of the deals of one decision (soft guesses included)."""
        return HiddenTileSampler(view)

    def belief_model(self, view: PublicView) -> BeliefModel:
        """The model that weighs deals with ``belief=1``: the heuristic's softmax."""
        return BeliefModel(
            view,
            self.config.temperature,
            partner_temperature=self.config.partner_temperature,
            history=self.config.history,
        )

    def compiled_belief(self, model: BeliefModel) -> Any:
        """``model``'s weights of the compiled playouts' deals (flat rows of tiles, hands by seat
        then the boneyard): an object with ``log_weights(deals, rng)``, as
        :class:`~bergen_env.agents.compiled.belief_weights.CompiledBelief`."""
        from bergen_env.agents.compiled.belief_weights import CompiledBelief

        return CompiledBelief(model)

    def _rounds(self, view: PublicView, parts: tuple) -> tuple[np.ndarray, int, list[int]]:
        """``batch`` deals at a time until :func:`settled` (or ``samples``); with ``prune``, the
        actions :func:`beaten` so far are not played again. The summed values of each action,
        the deals played, and how many of them each action was played on."""
        size = len(view.legal_actions)
        totals, products, done = np.zeros(size), np.zeros((size, size)), 0
        counts = np.zeros(size, dtype=np.int64)
        tolerance = self.config.tolerance * WIN_VALUE * view.rules.score_scale
        active = np.arange(size)
        while done < self.config.samples:
            count = min(self.config.batch, self.config.samples - done)
            sums, squares, _ = self._totals(*parts, count, None, active)
            block = np.ix_(active, active)
            totals[active] += sums
            products[block] += squares
            counts[active] += count
            done += count
            if settled(totals[active], products[block], done, self.config.certainty, tolerance):
                break
            if self.config.prune:
                active = active[
                    ~beaten(totals[active], products[block], done, self.config.certainty)
                ]
        return totals, done, counts.tolist()

    def _totals(
        self,
        view: PublicView,
        sampler: HiddenTileSampler,
        compiled: Any,
        model: BeliefModel | None,
        rows: Any,
        samples: int,
        deadline: float | None,
        active: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """The summed playout values of each legal action (of those at the indices ``active``
        if given) over ``samples`` deals (fewer if the ``deadline`` passes), the summed products
        of their values (actions × actions), and how many deals were played."""
        rng = self.rng
        legal = view.legal_actions
        if active is not None and len(active) < len(legal):
            legal = [legal[k] for k in active.tolist()]
            if compiled is not None:
                compiled = compiled.restricted(active)
        if compiled is not None and deadline is None:  # one compiled call
            if model is not None:
                from bergen_env.agents.compiled.belief_weights import weighted_search

                sums = weighted_search(
                    compiled, rows, sampler, rng, samples, self.config.candidates
                )
            else:
                sums = compiled.search(rng, sampler, samples)
            return *sums, samples
        deals = self._weighted_deals(model, sampler, samples) if model is not None else None
        totals = np.zeros(len(legal))
        products = np.zeros((len(legal), len(legal)))
        done = 0
        for k in range(samples):
            if deals is not None:
                hands, boneyard = deals[k]
            else:
                hands, boneyard = sampler.sample(rng)
            if compiled is not None:
                values = self._compiled_values(compiled, view, hands, boneyard)
            else:
                values = self.playout_values(
                    BergenState.from_view(view, hands, boneyard, rng), legal
                )
            row = np.array(values)
            totals += row
            products += np.outer(row, row)
            done += 1
            if deadline is not None and time.perf_counter() > deadline:
                break
        return totals, products, done

    def _compiled_root(self, view: PublicView) -> Any:
        """The compiled playouts' root of this decision (``CompiledPlayouts``)."""
        from bergen_env.agents.compiled.playouts import CompiledPlayouts

        table = self._win_table(view.rules)
        if table is None:
            return CompiledPlayouts(view, None, 0, self.config.rollout, self._expert)
        return CompiledPlayouts(view, table.table, table.low, self.config.rollout, self._expert)

    def _compiled_values(
        self, compiled: Any, view: PublicView, hands: list[list[int]], boneyard: list[int]
    ) -> list[float]:
        """:meth:`playout_values` with compiled playouts; the RNG is advanced exactly as the
        Python playouts advance it (each playout that ends the hand deals the next one)."""
        from bergen_env.agents.compiled.playouts import OUT_NEW_HAND

        out, values = compiled.run(hands, boneyard)
        for _ in range(int(out[:, OUT_NEW_HAND].sum())):
            deal_next_hand(view.rules, self.rng)
        return values.tolist()

    def playout_values(self, root: BergenState, legal: list[int]) -> list[float]:
        """One playout of each action of ``legal`` from ``root`` (a full state: a determinization,
        or the true state in a diagnostic): the value of each for the player on turn."""
        rng = self.rng
        rules = root.rules
        side = rules.side_of[root.current_player]
        hand = root.hand_number
        rollout = self.config.rollout
        table = self._win_table(rules)
        out = []
        for a in legal:
            s = root.clone(rng=rng)
            s.apply_unchecked(a)
            if not s.terminal and s.hand_number == hand:
                if rollout == "random":
                    random_rollout(s, hand, rng)
                elif rollout == "heuristic":
                    heuristic_rollout(s, hand, self._expert)
                elif rules.play_scoring != "headers":
                    points_rollout(s, hand)
                else:
                    greedy_rollout(s, hand, clairvoyant=rollout == "greedy")
            out.append(leaf_value(s, side, table))
        return out

    def _weighted_deals(
        self, model: BeliefModel, sampler: HiddenTileSampler, samples: int
    ) -> list[tuple[list[list[int]], list[int]]]:
        """``samples`` deals resampled from ``candidates * samples`` by ``model``'s weights.

        Systematic resampling in proportion to :meth:`BeliefModel.log_weight`; uniform when no
        other seat's play of this hand tells anything.
        """
        rng = self.rng
        if not model.decisions:
            return [sampler.sample(rng) for _ in range(samples)]
        pool = [sampler.sample(rng) for _ in range(samples * self.config.candidates)]
        logw = np.array([model.log_weight(hands, rng) for hands, _ in pool])
        picks = resample(logw, rng, samples)
        if picks is None:
            return pool[:samples]
        return [pool[int(j)] for j in picks]


# The agent string's keywords and their types are the config's (make_agent checks the names,
# with typo hints, and types the values by them).
_KNOB_TYPES = typing.get_type_hints(SearchConfig)
SearchAgent.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=f.default,
            annotation=_KNOB_TYPES[f.name],
        )
        for f in dataclasses.fields(SearchConfig)
    ]
)
