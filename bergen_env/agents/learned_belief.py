"""A learned belief over hidden tiles: where each unseen tile is, from the public history.

:func:`belief_inputs` reads one seat's :class:`~bergen_env.engine.PublicView` (its own hand, the
line, hand sizes, the boneyard's size, and this hand's moves in order: plays, draws, passes) and
returns a feature vector, the *mask* of possible locations and the marginals every belief must
satisfy. The locations are the other seats in turn order after the viewer (relative seats 1, 2,
3, padded to 4 seats) and the undrawn boneyard: ``LOCATIONS = 4`` columns.

A small network (:class:`~bergen_env.policy_file.PolicyNetwork`, numpy) maps the features to one
logit per (tile, location); :func:`balance` turns ``exp(logits)`` on the mask into a matrix of
expected copies whose rows sum to each tile's unseen copies and whose columns sum to each
location's size (Sinkhorn scaling, i.e. iterative proportional fitting). Where the public
information rules a location out (the viewer's own hand, the line, a seat's known voids, the
doubles that would have led instead of the opening one) the probability is exactly zero. With
all logits zero the same scaling gives the count-only prior (uniform by hand sizes, voids kept),
:func:`prior_matrix`.

A belief file is a safetensors file with a JSON header under the metadata key ``bergen_belief``
(``format`` ``"bergen-belief"``, ``version`` 1, ``rules`` the network was trained on,
``num_features``, ``network`` as in a policy file, ``provenance``); it is read with the policy
file's machinery (:func:`bergen_env.policy_file.read_network_file`), so loading never runs code.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS
from bergen_env.agents.heuristic import HeuristicAgent
from bergen_env.agents.sampling import excluded_tiles
from bergen_env.agents.scoring import raw_play
from bergen_env.engine import PublicView
from bergen_env.policy_file import (
    PolicyFileError,
    PolicyNetwork,
    read_network_file,
    write_network_file,
)
from bergen_env.rules import Rules
from bergen_env.tiles import CONTAINS, DOUBLE_ID, NUM_NUMBERS, NUM_TILES

FORMAT_NAME = "bergen-belief"
FORMAT_VERSION = 1
HEADER_KEY = "bergen_belief"
MAX_SEATS = 4
#: Columns of a belief matrix: relative seats 1, 2, 3, then the undrawn boneyard.
LOCATIONS = MAX_SEATS
BONEYARD = LOCATIONS - 1
#: The shipped belief files, by (players, partnerships), in ``policies/`` of the source tree.
SHIPPED = {
    (2, False): "belief_2p.safetensors",
    (3, False): "belief_3p.safetensors",
    (4, False): "belief_4p.safetensors",
    (4, True): "belief_4p_partners.safetensors",
}
POLICIES_DIR = Path(__file__).resolve().parents[2] / "policies"

_BIT = np.int64(1) << np.arange(NUM_TILES, dtype=np.int64)
#: ``_HOLDS[x]``: 1.0 for the tiles holding number ``x``.
_HOLDS = np.array([[CONTAINS[x] >> t & 1 for t in range(NUM_TILES)] for x in range(NUM_NUMBERS)])
_HOLDS = _HOLDS.astype(np.float32)
#: Margins (heuristic points) are clipped to this and scaled by it.
MARGIN_CAP = 4.0
_EXPERT = HeuristicAgent()


@functools.lru_cache(maxsize=16384)
def play_margins(rules: Rules, moves: tuple[tuple[int, int], ...]) -> np.ndarray | None:
    """How much better the heuristic finds each tile than the one played by the last move.

    For the play ``moves[-1]`` (None for a draw, a pass or the opening), per tile ``u`` that
    fitted the ends then and was not on the line: the heuristic's score of its best play of
    ``u`` minus its score of the play made, both for a hand of just those two tiles, scored at
    the public state then (hand sizes, boneyard, line, ends) with zero scores and no voids.
    Positive where a heuristic player holding ``u`` would have played it instead (up to the
    parts of the score that depend on the rest of its hand). ``nan`` for other tiles. Reads the
    public moves only.
    """
    seat, action = moves[-1]
    if action in (DRAW, PASS) or action >= DOUBLE_PLAY:
        return None
    n = rules.num_players
    sizes = [rules.hand_size] * n
    bone = rules.boneyard_size
    line = [0] * NUM_TILES
    ends: tuple[int, int] | None = None
    flags = (False, False)
    for s, a in moves[:-1]:
        if a == DRAW:
            sizes[s] += 1
            bone -= 1
        elif a != PASS:
            for t in _tiles_played(a):
                line[t] += 1
                sizes[s] -= 1
            _, ends, flags = raw_play(a, ends, flags, rules.play_scoring)
    if ends is None:
        return None
    played = action >> 1
    out = np.full(NUM_TILES, np.nan, dtype=np.float32)
    fits = CONTAINS[ends[0]] | CONTAINS[ends[1]]
    base = dict(
        rules=rules,
        seat=seat,
        current_player=seat,
        hand=(),
        line=(),
        line_counts=tuple(line),
        ends=ends,
        end_doubles=flags,
        hand_sizes=tuple(sizes),
        boneyard_size=bone,
        drawable=max(0, bone - rules.reserve),
        scores=(0,) * rules.num_sides,
        voids=(0,) * n,
        moves=(),
        hand_number=0,
        lead_tile=None,
        legal_actions=(),
    )
    for u in range(NUM_TILES):
        if u == played or not fits >> u & 1 or line[u] >= rules.sets:
            continue
        counts = [0] * NUM_TILES
        counts[played] += 1
        counts[u] += 1
        view = PublicView(
            hand_counts=tuple(counts),
            unseen_counts=tuple(rules.sets - c - k for c, k in zip(counts, line)),
            **base,
        )
        chosen = _EXPERT.evaluate(view, action)
        best = max(_EXPERT.evaluate(view, 2 * u + k) for k in (0, 1) if CONTAINS[ends[k]] >> u & 1)
        out[u] = best - chosen
    return out


#: Per relative other seat: hard-excluded, soft-excluded, played, declined since its last draw,
#: declined before it, the same two for how much better the heuristic would have found each
#: declined tile (:func:`play_margins`), and 6 counters.
SEAT_FEATURES = 7 * NUM_TILES + 6
#: own hand, line, unseen, two ends, end doubles, line empty, hand sizes, boneyard, drawable,
#: players (2, 3, 4), partnerships, moves so far.
BASE_FEATURES = 3 * NUM_TILES + 2 * NUM_NUMBERS + 2 + 1 + MAX_SEATS + 2 + 3 + 1 + 1
NUM_FEATURES = BASE_FEATURES + (MAX_SEATS - 1) * SEAT_FEATURES
NUM_OUTPUTS = NUM_TILES * LOCATIONS


def _vec(bits: int) -> np.ndarray:
    return (np.int64(bits) & _BIT != 0).astype(np.float32)


def _tiles_played(action: int) -> tuple[int, ...]:
    if action >= DOUBLE_PLAY:
        t = DOUBLE_ID[action - DOUBLE_PLAY]
        return (t, t)
    return (action >> 1,)


def relative_seats(view: PublicView) -> list[int]:
    """The absolute seat of each seat column (relative seats 1 .. n-1 of the viewer)."""
    n = view.rules.num_players
    return [(view.seat + k) % n for k in range(1, n)]


def belief_inputs(view: PublicView) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(features, mask, rows, cols)`` of one public view.

    ``features``: ``(NUM_FEATURES,)`` float32. ``mask``: ``(NUM_TILES, LOCATIONS)`` bool, False
    where public information rules the location out. ``rows``: the unseen copies of each tile;
    ``cols``: each location's size (hand sizes of relative seats 1..3, then the boneyard), both
    float64: the marginals of every belief matrix.
    """
    rules = view.rules
    n = rules.num_players
    seats = relative_seats(view)
    hard, soft = excluded_tiles(view)
    unseen = np.array(view.unseen_counts, dtype=np.float64)
    seen = unseen > 0
    played = np.zeros((n, NUM_TILES), dtype=np.float32)
    since = np.zeros((n, NUM_TILES), dtype=np.float32)
    before = np.zeros((n, NUM_TILES), dtype=np.float32)
    margin_since = np.zeros((n, NUM_TILES), dtype=np.float32)
    margin_before = np.zeros((n, NUM_TILES), dtype=np.float32)
    counters = np.zeros((n, 5), dtype=np.float32)  # draws, passes, plays, draw run, drew last
    ends: tuple[int, int] | None = None
    flags = (False, False)
    moves = view.moves
    for i, (seat, a) in enumerate(moves):
        c = counters[seat]
        if a == DRAW:
            c[0] += 1
            c[3] += 1
            c[4] = 1
            before[seat] += since[seat]
            since[seat] = 0
            np.maximum(margin_before[seat], margin_since[seat], out=margin_before[seat])
            margin_since[seat] = 0
        elif a == PASS:
            c[1] += 1
            c[3] = c[4] = 0
        else:
            tiles = _tiles_played(a)
            if ends is not None:
                alt = np.maximum(_HOLDS[ends[0]], _HOLDS[ends[1]])
                alt[list(tiles)] = 0
                since[seat] += alt
                if seat != view.seat:
                    margins = play_margins(rules, moves[: i + 1])
                    if margins is not None:
                        np.fmax(margin_since[seat], margins, out=margin_since[seat])
            for t in tiles:
                played[seat, t] += 1
            c[2] += 1
            c[3] = c[4] = 0
            _, ends, flags = raw_play(a, ends, flags, rules.play_scoring)
    mask = np.zeros((NUM_TILES, LOCATIONS), dtype=bool)
    cols = np.zeros(LOCATIONS, dtype=np.float64)
    sizes = np.zeros(MAX_SEATS, dtype=np.float32)
    sizes[0] = view.hand_sizes[view.seat]
    seat_blocks = np.zeros((MAX_SEATS - 1, SEAT_FEATURES), dtype=np.float32)
    for k, s in enumerate(seats):
        size = view.hand_sizes[s]
        sizes[k + 1] = size
        cols[k] = size
        if size:
            mask[:, k] = seen & (np.int64(hard[s]) & _BIT == 0)
        block = seat_blocks[k]
        block[0:28] = _vec(hard[s])
        block[28:56] = _vec(soft[s])
        block[56:84] = played[s]
        block[84:112] = np.minimum(since[s], 3.0) * seen
        block[112:140] = np.minimum(before[s], 3.0) * seen
        block[140:168] = np.clip(margin_since[s], 0.0, MARGIN_CAP) / MARGIN_CAP * seen
        block[168:196] = np.clip(margin_before[s], 0.0, MARGIN_CAP) / MARGIN_CAP * seen
        c = counters[s]
        block[196:201] = (c[0] / 5, c[1] / 3, c[2] / 10, c[3] / 5, c[4])
        block[201] = size / 10
    cols[BONEYARD] = view.boneyard_size
    if view.boneyard_size:
        mask[:, BONEYARD] = seen
    ends_vec = np.zeros(2 * NUM_NUMBERS, dtype=np.float32)
    if view.ends is not None:
        ends_vec[view.ends[0]] = 1
        ends_vec[NUM_NUMBERS + view.ends[1]] = 1
    players = np.zeros(3, dtype=np.float32)
    players[n - 2] = 1
    base = np.concatenate(
        [
            np.array(view.hand_counts, dtype=np.float32),
            np.array(view.line_counts, dtype=np.float32),
            unseen.astype(np.float32),
            ends_vec,
            np.array(view.end_doubles, dtype=np.float32),
            np.array([view.ends is None], dtype=np.float32),
            sizes / 10,
            np.array([view.boneyard_size / 10, view.drawable / 10], dtype=np.float32),
            players,
            np.array([rules.partnerships, len(view.moves) / 40], dtype=np.float32),
        ]
    )
    features = np.concatenate([base, seat_blocks.ravel()])
    return features, mask, unseen, cols


def balance(
    weights: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    iterations: int = 1000,
    tol: float = 1e-9,
) -> np.ndarray:
    """Scale the nonnegative ``weights`` (``(..., tiles, locations)``) until each row sums to
    ``rows`` and each column to ``cols`` (Sinkhorn / iterative proportional fitting).

    Zeros stay zero. Each pass scales the columns, then the rows, so the rows are exact; it stops
    when every column sum is within ``tol`` of its target or after ``iterations`` passes (where
    the sizes force tiles into one place the scaling converges slowly: the columns then end
    within about 1e-3).
    """
    w = np.array(weights, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    cols = np.asarray(cols, dtype=np.float64)
    for _ in range(iterations):
        c = w.sum(axis=-2)
        w *= np.divide(cols, c, out=np.zeros_like(c), where=c > 0)[..., None, :]
        r = w.sum(axis=-1)
        w *= np.divide(rows, r, out=np.zeros_like(r), where=r > 0)[..., :, None]
        if np.abs(w.sum(axis=-2) - cols).max() < tol:
            break
    return w


def prior_matrix(mask: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The count-only prior: expected copies with every allowed location equally weighted."""
    return balance(mask.astype(np.float64), rows, cols)


class BeliefNetwork:
    """A loaded belief file: the network and the rules it was trained on."""

    def __init__(self, path: str | Path, header: dict[str, Any], network: PolicyNetwork) -> None:
        self.path = str(path)
        self.header = header
        self.network = network
        self.rules = Rules.from_dict(header["rules"])

    def matrix(self, view: PublicView) -> np.ndarray:
        """Expected copies of each tile in each location (``(NUM_TILES, LOCATIONS)``):
        rows sum to the unseen copies, columns to the locations' sizes, zeros where ruled out."""
        return self.matrix_and_inputs(view)[0]

    def matrix_and_inputs(
        self, view: PublicView
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(matrix, mask, rows, cols)``: :meth:`matrix` and the :func:`belief_inputs` used."""
        features, mask, rows, cols = belief_inputs(view)
        logits = self.network.logits(features).reshape(NUM_TILES, LOCATIONS).astype(np.float64)
        logits = np.where(mask, logits, -np.inf)
        top = logits[mask].max() if mask.any() else 0.0
        return balance(np.where(mask, np.exp(logits - top), 0.0), rows, cols), mask, rows, cols

    def probabilities(self, view: PublicView) -> np.ndarray:
        """Per tile (rows of unseen tiles), the chance that a copy is in each location."""
        m = self.matrix(view)
        rows = np.array(view.unseen_counts, dtype=np.float64)
        return np.divide(m, rows[:, None], out=np.zeros_like(m), where=rows[:, None] > 0)


def save_belief_file(
    path: str | Path,
    rules: Rules,
    weights: Sequence[np.ndarray],
    biases: Sequence[np.ndarray],
    activations: Sequence[str],
    provenance: dict[str, Any] | None = None,
) -> Path:
    """Write a belief file (see the module docstring)."""
    network = PolicyNetwork(weights, biases, activations)  # checks shapes and activations
    if network.input_size != NUM_FEATURES or network.output_size != NUM_OUTPUTS:
        raise ValueError(
            f"a belief network maps {NUM_FEATURES} features to {NUM_OUTPUTS} logits, got "
            f"{network.input_size} -> {network.output_size}"
        )
    header = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "rules": rules.to_dict(),
        "num_features": NUM_FEATURES,
        "network": {
            "input": "belief_features",
            "output": "logits (tile-major: tile * 4 + location)",
            "layers": [
                {"weight": f"layers.{i}.weight", "bias": f"layers.{i}.bias", "activation": a}
                for i, a in enumerate(activations)
            ],
        },
        "provenance": provenance or {},
    }
    return write_network_file(path, HEADER_KEY, header, weights, biases)


def read_belief_file(path: str | Path) -> BeliefNetwork:
    """Load and check a belief file; every error names the file and the problem."""
    path = Path(path)
    where = f"belief file {str(path)!r}"
    if not path.is_file():
        raise PolicyFileError(f"{where} does not exist")
    header, network = read_network_file(path, HEADER_KEY, FORMAT_NAME, FORMAT_VERSION, where)
    if header.get("num_features") != NUM_FEATURES or network.input_size != NUM_FEATURES:
        raise PolicyFileError(
            f"{where} reads {network.input_size} features (header num_features="
            f"{header.get('num_features')!r}), but this package's belief features have "
            f"{NUM_FEATURES}"
        )
    if network.output_size != NUM_OUTPUTS:
        raise PolicyFileError(
            f"{where}: the network has {network.output_size} outputs, not {NUM_OUTPUTS} "
            f"({NUM_TILES} tiles x {LOCATIONS} locations)"
        )
    try:
        return BeliefNetwork(path, header, network)
    except (KeyError, TypeError, ValueError) as exc:
        raise PolicyFileError(f"{where}: bad 'rules' in its header ({exc})") from None


def shipped_belief_path(rules: Rules) -> Path:
    """The shipped belief file for ``rules``' seating; a clear error where none is shipped."""
    key = (rules.num_players, rules.partnerships)
    if key not in SHIPPED:
        have = ", ".join(f"{p} players{' in partnerships' if t else ''}" for p, t in SHIPPED)
        raise PolicyFileError(
            f"no shipped belief file for {rules.num_players} players"
            f"{' in partnerships' if rules.partnerships else ''} (shipped: {have}); "
            f"give one with belief_file=PATH"
        )
    return POLICIES_DIR / SHIPPED[key]


def draw_deal(rng, pool, q, caps, tries, where):  # type: ignore[no-untyped-def]  # fmt: skip
    """Deal the shuffled copies of ``pool`` to locations: ``where[0, j]`` a copy, ``where[1, j]``
    its location (``caps[l]`` copies go to location ``l``). Returns the level used.

    ``q[level]`` (``(levels, tiles, locations)``) are per-copy location probabilities, tried in
    order. At a level, the copies are placed one at a time in a random order, each with chance
    proportional to ``q[t, l] * free[l] / expected[l]`` (``free``: places left in ``l``;
    ``expected``: the copies still to place that ``q`` expects in ``l``), which keeps the draws
    to the sizes and near ``q``; ``tries`` attempts that run into a tile with no free allowed
    location move on to the next level, and after the last one the copies are dealt in shuffled
    order with no constraint (``levels`` is returned), which keeps dealing total.

    Plain numpy; ``bergen_env.vector.belief_playouts`` compiles the same source with numba.
    """
    m = pool.shape[0]
    locs = q.shape[2]
    expected = np.zeros(locs)
    w = np.zeros(locs)
    for level in range(q.shape[0]):
        for _ in range(tries):
            rest = rng.permutation(pool)
            free = caps.copy()
            expected[:] = 0.0
            for j in range(m):
                for x in range(locs):
                    expected[x] += q[level, rest[j], x]
            ok = True
            for j in range(m):
                t = rest[j]
                total = 0.0
                for x in range(locs):
                    w[x] = 0.0
                    if free[x] > 0 and q[level, t, x] > 0.0:
                        w[x] = q[level, t, x] * free[x] / max(expected[x], 1e-12)
                        total += w[x]
                    expected[x] -= q[level, t, x]
                if total <= 0.0:
                    ok = False
                    break
                u = rng.random() * total
                pick = -1
                for x in range(locs):
                    if w[x] > 0.0:
                        pick = x
                        u -= w[x]
                        if u < 0.0:
                            break
                free[pick] -= 1
                where[0, j] = t
                where[1, j] = pick
            if ok:
                return level
    rest = rng.permutation(pool)
    j = 0
    for x in range(locs):
        for _ in range(caps[x]):
            where[0, j] = rest[j]
            where[1, j] = x
            j += 1
    return q.shape[0]


class LearnedDeals:
    """Deals of one decision drawn from a belief matrix (and the count-only prior as fallback).

    ``draw`` is :func:`draw_deal` or its compiled twin; both consume ``rng`` alike.
    """

    def __init__(
        self,
        view: PublicView,
        matrix: np.ndarray,
        power: float = 1.0,
        tries: int = 20,
        inputs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """``inputs``: ``(mask, rows, cols)`` of :func:`belief_inputs` if already computed."""
        mask, rows, cols = belief_inputs(view)[1:] if inputs is None else inputs
        self.view = view
        self.seats = relative_seats(view)
        self.pool = np.array(
            [t for t in range(NUM_TILES) for _ in range(view.unseen_counts[t])], dtype=np.int64
        )
        self.caps = cols.astype(np.int64)
        self.q = np.stack(
            [per_copy(matrix, rows, power), per_copy(prior_matrix(mask, rows, cols), rows)]
        )
        self.tries = tries
        self.where = np.zeros((2, len(self.pool)), dtype=np.int64)
        #: Deals that fell back to the prior / to no constraint.
        self.levels = [0, 0, 0]

    def sample(
        self, rng: np.random.Generator, draw: Any = draw_deal
    ) -> tuple[list[list[int]], list[int]]:
        """One deal: every seat's hand (own included) and the undrawn boneyard, in draw order."""
        self.levels[draw(rng, self.pool, self.q, self.caps, self.tries, self.where)] += 1
        tiles, locs = self.where.tolist()
        hands: list[list[int]] = [[] for _ in range(self.view.rules.num_players)]
        hands[self.view.seat] = list(self.view.hand)
        by_loc: list[list[int]] = [[] for _ in range(LOCATIONS)]
        for t, x in zip(tiles, locs):
            by_loc[x].append(t)
        for k, s in enumerate(self.seats):
            hands[s] = by_loc[k]
        return hands, by_loc[BONEYARD]


def per_copy(matrix: np.ndarray, rows: np.ndarray, power: float = 1.0) -> np.ndarray:
    """Per-copy location probabilities from a belief matrix (rows of unseen tiles sum to 1),
    sharpened (``power`` > 1) or flattened (< 1) and renormalized per tile."""
    q = np.divide(matrix, rows[:, None], out=np.zeros_like(matrix), where=rows[:, None] > 0)
    if power != 1.0:
        q = q**power
        s = q.sum(axis=1, keepdims=True)
        q = np.divide(q, s, out=np.zeros_like(q), where=s > 0)
    return q
