"""Observation and global-state encoders: one flat ``float32`` array with named views.

The layout is fixed (padded to 4 seats and 4 sides) so one network fits every player count.
Everything is *relative to the observer*: relative seat ``k`` is seat ``(observer + k) % n``
and relative side ``j`` is side ``(own side + j) % sides``. Slots of absent seats/sides are 0.

Observation (``OBS_SIZE = 240``), what the observer may know and nothing else:

==============  =====  ===================================================================
view            size   meaning
==============  =====  ===================================================================
hand            28     own tile counts by canonical tile id (0..2 with two sets)
line            28     tile counts on the line
unseen          28     counts neither in own hand nor on the line (others' hands + boneyard)
left_end        7      one-hot number of the left end (all 0 before the first play)
right_end       7      one-hot number of the right end
end_doubles     2      1 where an end is a double end (laid crosswise)
line_empty      1      1 before the first play of the hand
to_move         4      one-hot relative seat on turn
seats           4      1 for relative seats that exist
partner         4      1 for the partner's relative seat (partnerships)
hand_sizes      4      tiles held, per relative seat
voids           28     4 relative seats x 7 numbers: 1 = known not to hold that number
boneyard        2      [tiles in the boneyard, tiles that may still be drawn]
scores          4      score / target per relative side, clipped to [-2, 1] (no target: / 100)
need            24     4 relative sides x one-hot of target - score in {1,2,3,4,5,>=6}
                       (all 0 without a target: Draw)
play_points     65     by action id: points each legal action scores now (the header after end
                       caps, or the Fives count's points; plus domino points if it goes out
                       under fixed hand-end points); 0 off turn, for draw/pass
==============  =====  ===================================================================

The global state (``STATE_SIZE``), for centralized critics, uses absolute seats and sides and
adds every hand and the boneyard's contents (not its order): views ``hands`` (4 x 28),
``line``, ``boneyard_tiles``, ``left_end``, ``right_end``, ``end_doubles``, ``line_empty``,
``to_move``, ``seats``, ``hand_sizes``, ``voids``, ``boneyard``, ``scores``, ``need``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bergen_env.actions import DRAW, NUM_ACTIONS_TWO_SETS, PASS
from bergen_env.engine import BergenState
from bergen_env.rules import Rules
from bergen_env.tiles import NUM_NUMBERS, NUM_TILES

MAX_SEATS = 4
NEED_BINS = 6

OBS_LAYOUT: tuple[tuple[str, int], ...] = (
    ("hand", NUM_TILES),
    ("line", NUM_TILES),
    ("unseen", NUM_TILES),
    ("left_end", NUM_NUMBERS),
    ("right_end", NUM_NUMBERS),
    ("end_doubles", 2),
    ("line_empty", 1),
    ("to_move", MAX_SEATS),
    ("seats", MAX_SEATS),
    ("partner", MAX_SEATS),
    ("hand_sizes", MAX_SEATS),
    ("voids", MAX_SEATS * NUM_NUMBERS),
    ("boneyard", 2),
    ("scores", MAX_SEATS),
    ("need", MAX_SEATS * NEED_BINS),
    ("play_points", NUM_ACTIONS_TWO_SETS),
)
STATE_LAYOUT: tuple[tuple[str, int], ...] = (
    ("hands", MAX_SEATS * NUM_TILES),
    ("line", NUM_TILES),
    ("boneyard_tiles", NUM_TILES),
    ("left_end", NUM_NUMBERS),
    ("right_end", NUM_NUMBERS),
    ("end_doubles", 2),
    ("line_empty", 1),
    ("to_move", MAX_SEATS),
    ("seats", MAX_SEATS),
    ("hand_sizes", MAX_SEATS),
    ("voids", MAX_SEATS * NUM_NUMBERS),
    ("boneyard", 2),
    ("scores", MAX_SEATS),
    ("need", MAX_SEATS * NEED_BINS),
)


def _offsets(layout: tuple[tuple[str, int], ...]) -> dict[str, slice]:
    out, start = {}, 0
    for name, size in layout:
        out[name] = slice(start, start + size)
        start += size
    return out


OBS_SLICES = _offsets(OBS_LAYOUT)
STATE_SLICES = _offsets(STATE_LAYOUT)
OBS_SIZE = sum(size for _, size in OBS_LAYOUT)
STATE_SIZE = sum(size for _, size in STATE_LAYOUT)
#: ``_VOID_ROWS[mask]``: the 7 flags of a 7-bit void mask, as bytes (one per number).
_VOID_ROWS = tuple(
    bytes((mask >> n) & 1 for n in range(NUM_NUMBERS)) for mask in range(1 << NUM_NUMBERS)
)


def _shared_starts(slices: dict[str, slice]) -> tuple[int, ...]:
    """Start offsets of the views both layouts hold, in the order :func:`_fill_shared` reads."""
    names = ("line", "left_end", "right_end", "end_doubles", "line_empty", "to_move")
    names += ("hand_sizes", "voids", "boneyard", "need")
    return tuple(slices[k].start for k in names)


_OBS_SHARED = _shared_starts(OBS_SLICES)
_STATE_SHARED = _shared_starts(STATE_SLICES)
_HAND, _UNSEEN, _POINTS = (OBS_SLICES[k].start for k in ("hand", "unseen", "play_points"))
_LINE = OBS_SLICES["line"].start
_OBS_SCORES, _STATE_SCORES = OBS_SLICES["scores"].start, STATE_SLICES["scores"].start
_HANDS, _STATE_BONE = STATE_SLICES["hands"].start, STATE_SLICES["boneyard_tiles"].start


def _fill_shared(
    b: bytearray, starts: tuple[int, ...], s: BergenState, seat: int, first_side: int
) -> None:
    """Write the views both layouts share, as bytes, from ``seat``'s point of view (seat 0 and
    side 0 first: the absolute order of the global state)."""
    line, left, right, doubles, empty, to_move, sizes, voids_at, bone, need = starts
    b[line : line + NUM_TILES] = s.line_counts
    if s.line_len:
        b[left + s.end_num[0]] = 1
        b[right + s.end_num[1]] = 1
        b[doubles] = s.end_dbl[0]
        b[doubles + 1] = s.end_dbl[1]
    else:
        b[empty] = 1
    n = s.num_players
    b[to_move + (s.current_player - seat) % n] = 1
    hand_len, voids = s.hand_len, s.voids
    for k in range(n):
        other = (seat + k) % n
        b[sizes + k] = hand_len[other]
        start = voids_at + k * NUM_NUMBERS
        b[start : start + NUM_NUMBERS] = _VOID_ROWS[voids[other]]
    b[bone] = s.boneyard_size
    b[bone + 1] = s.drawable
    target, sides, scores = s.rules.target, s.num_sides, s.scores
    for j in range(sides if target else 0):  # no target (target=0, one hand): need stays 0
        score = scores[(first_side + j) % sides]
        b[need + j * NEED_BINS + min(max(target - score, 1), NEED_BINS) - 1] = 1


def _write_scores(out: np.ndarray, start: int, s: BergenState, first_side: int) -> None:
    """Score / target (100 without one) per side from ``first_side`` on, clipped to [-2, 1]."""
    scale, sides, scores = s.rules.score_scale, s.num_sides, s.scores
    for j in range(sides):
        out[start + j] = min(1.0, max(-2.0, scores[(first_side + j) % sides] / scale))


def obs_bounds(rules: Rules, layout: str = "obs") -> tuple[np.ndarray, np.ndarray]:
    """Elementwise (low, high) of the observation or state array under ``rules``."""
    if layout not in ("obs", "state"):
        raise ValueError(f"layout must be 'obs' or 'state', got {layout!r}")
    slices = OBS_SLICES if layout == "obs" else STATE_SLICES
    size = OBS_SIZE if layout == "obs" else STATE_SIZE
    low = np.zeros(size, dtype=np.float32)
    high = np.ones(size, dtype=np.float32)
    for name in ("hand", "hands", "line", "unseen", "boneyard_tiles"):
        if name in slices:
            high[slices[name]] = rules.sets
    high[slices["hand_sizes"]] = rules.num_tiles
    high[slices["boneyard"]] = rules.num_tiles
    low[slices["scores"]] = -2.0
    if "play_points" in slices:  # a double play's 5-point header plus going out
        high[slices["play_points"]] = 5 + rules.domino_points
    return low, high


class Encoder:
    """Fills observations (and the global state) of one rules set.

    Both are written the same way: every integer-valued entry as one byte into a buffer that
    starts from the layout's constant template (:func:`_fill_shared` writes the views both
    layouts hold), converted to a new float32 array in one call, then the scores (the only
    entries that are not small integers) are written as floats.
    ``views(array)`` gives the named views of any array of this layout, e.g.
    ``Encoder.views(obs)["hand"]``.
    """

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.n = rules.num_players
        self.sides = rules.num_sides
        # constant parts: which relative seats exist and who is partner
        self._seats = np.zeros(MAX_SEATS, dtype=np.float32)
        self._seats[: self.n] = 1.0
        self._partner = np.zeros(MAX_SEATS, dtype=np.float32)
        if rules.partnerships:
            self._partner[2] = 1.0
        template = np.zeros(OBS_SIZE, dtype=np.uint8)
        Encoder.views(template)["seats"][:] = self._seats
        Encoder.views(template)["partner"][:] = self._partner
        self._template = template.tobytes()
        self._bytes = bytearray(self._template)
        self._bytes_array = np.frombuffer(self._bytes, dtype=np.uint8)
        state_template = np.zeros(STATE_SIZE, dtype=np.uint8)
        Encoder.views(state_template, "state")["seats"][:] = self._seats
        self._state_template = state_template.tobytes()
        self._state_bytes = bytearray(self._state_template)
        self._state_bytes_array = np.frombuffer(self._state_bytes, dtype=np.uint8)
        self._sets = np.full(NUM_TILES, rules.sets, dtype=np.uint8)

    @staticmethod
    def views(array: np.ndarray, layout: str = "obs") -> dict[str, np.ndarray]:
        """Named views into an observation (``layout="obs"``) or state array."""
        slices = OBS_SLICES if layout == "obs" else STATE_SLICES
        return {name: array[..., s] for name, s in slices.items()}

    def observe(self, s: BergenState, seat: int, legal: Sequence[int] | None = None) -> np.ndarray:
        """The observation of ``seat`` (a new array).

        ``legal``: the legal actions behind ``play_points`` (default: ``s.legal_actions()`` when
        ``seat`` is on turn, else none), for callers that also build the mask from them.
        """
        b = self._bytes
        b[:] = self._template
        b[_HAND : _HAND + NUM_TILES] = s.hands[seat]
        first = s.side_of[seat]
        _fill_shared(b, _OBS_SHARED, s, seat, first)
        if legal is None:
            legal = s.legal_actions() if seat == s.current_player else ()
        for a in legal:
            if a < DRAW or a > PASS:
                b[_POINTS + a] = s.action_points(a)
        ba = self._bytes_array  # unseen = sets - hand - line, still in bytes (never negative)
        unseen = ba[_UNSEEN : _UNSEEN + NUM_TILES]
        np.subtract(self._sets, ba[_HAND : _HAND + NUM_TILES], out=unseen)
        unseen -= ba[_LINE : _LINE + NUM_TILES]
        out = ba.astype(np.float32)  # the one float conversion, into a new array
        _write_scores(out, _OBS_SCORES, s, first)
        return out

    def state(self, s: BergenState) -> np.ndarray:
        """The global state (a new array): every hand and the boneyard's contents included."""
        b = self._state_bytes
        b[:] = self._state_template
        for seat in range(self.n):
            start = _HANDS + seat * NUM_TILES
            b[start : start + NUM_TILES] = s.hands[seat]
        for t in s.boneyard[s.bone_pos :]:
            b[_STATE_BONE + t] += 1
        _fill_shared(b, _STATE_SHARED, s, 0, 0)
        out = self._state_bytes_array.astype(np.float32)
        _write_scores(out, _STATE_SCORES, s, 0)
        return out

    def __getstate__(self) -> dict:
        return {"rules": self.rules}  # views into buffers are rebuilt, not copied

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["rules"])
