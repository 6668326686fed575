"""``heuristic``: an expert rule player that reads only its seat's public view.

Each legal play gets a score, the best one is played (lowest action id on ties):

- points now (header after end caps, domino points); a play that wins the match beats all;
- minus the expected header of the next opponent on the ends left behind: the chance that it
  holds the one header tile ``[x|y]``, estimated from the unseen copies of that tile, its hand
  size, the other hidden holders and the known voids; a header that would win them the match
  counts as a lost match; likewise the chance that an opponent with one tile goes out;
- plus the chance that the next opponent cannot play at all on the new ends;
- shedding: doubles and heavy tiles are dumped (german/american: doubles then pips; pips: pips),
  more so as a block nears (nothing left to draw); with ``most_doubles`` doubles are kept;
- variety: prefer keeping many different numbers and a tile that fits the new ends;
- partnerships: avoid leaving two ends the partner is known to be void in (it would have to
  draw or pass).

Fives and Draw (docs/rules.md, "Presets") change what the rules above weigh:

- Fives: points now are the count's; the threat is the next opponent's best count on the ends
  left behind (a multiple of 5 within its reach), from the chance it holds each fitting tile;
  the five-tiles (pips a multiple of 5) and the heavy doubles are kept for scoring (``keep``)
  unless they score now; going out is worth the other hands' expected pips rounded to fives;
  heavy pips are shed as a block nears.
- Draw: going out wins the hand (and the one-hand match); heavy tiles are shed from the start
  (a block is won on pips); variety is kept; ends the next opponent is known or likely to lack
  are preferred (``stuck``).

When only a draw or a pass is legal it is taken; a voluntary draw is never chosen over a play.
Weights are parameters, e.g. ``"heuristic:threat=1.5,shed=0.5"``.
"""

from __future__ import annotations

import numpy as np

from bergen_env.actions import DOUBLE_PLAY, NUM_PLAY_ACTIONS
from bergen_env.agents.base import Agent, point_mass
from bergen_env.agents.play_outcomes import header_threat_value, play_outcome
from bergen_env.engine import PublicView
from bergen_env.rules import Rules
from bergen_env.scoring import FIVE, cap_header, out_points, play_result
from bergen_env.tiles import CONTAINS, IS_DOUBLE, NUM_TILES, NUMBER_BITS, PIPS, TILE_ID
from bergen_env.validation import check_number

#: Points-equivalent of winning (or losing) the match, used to rank decisive plays.
MATCH_VALUE = 20.0
#: Fives: tiles worth keeping for a count (pips a multiple of 5, and the heavy doubles).
SCORING_TILES = frozenset(
    t
    for t in range(NUM_TILES)
    if (PIPS[t] and PIPS[t] % FIVE == 0) or (IS_DOUBLE[t] and PIPS[t] >= 8)
)


#: The parameters of :class:`HeuristicAgent`, the weights of its terms (the compiled
#: heuristic's weight-array order).
WEIGHT_NAMES = ("threat", "stuck", "shed", "variety", "follow", "partner", "keep")


def used_weights(rules: Rules) -> tuple[str, ...]:
    """The weights that can change :class:`HeuristicAgent`'s play under ``rules``: ``partner``
    only in partnerships, ``keep`` only in Fives."""
    return tuple(
        name
        for name in WEIGHT_NAMES
        if (name != "partner" or rules.partnerships)
        and (name != "keep" or rules.play_scoring == "fives")
    )


class HeuristicAgent(Agent):
    """Expert rules: points, defence against headers, shedding, variety, partner play."""

    needs_observation = False  # decides from the public view alone

    def __init__(
        self,
        threat: float = 1.0,
        stuck: float = 0.6,
        shed: float = 0.4,
        variety: float = 0.15,
        follow: float = 0.3,
        partner: float = 0.4,
        keep: float = 0.3,
    ) -> None:
        for key, value in dict(
            threat=threat,
            stuck=stuck,
            shed=shed,
            variety=variety,
            follow=follow,
            partner=partner,
            keep=keep,
        ).items():
            check_number(key, value, minimum=0, label="parameter", error=ValueError)
        self.w_threat = float(threat)
        self.w_stuck = float(stuck)
        self.w_shed = float(shed)
        self.w_variety = float(variety)
        self.w_follow = float(follow)
        self.w_partner = float(partner)
        self.w_keep = float(keep)

    @property
    def weights(self) -> dict[str, float]:
        """The weights in use, by name (:data:`WEIGHT_NAMES` order)."""
        return {name: getattr(self, f"w_{name}") for name in WEIGHT_NAMES}

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PublicView) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"agent {self.name!r}: seat {view.seat} has no legal action")
        plays = [a for a in legal if a < NUM_PLAY_ACTIONS or a >= DOUBLE_PLAY]
        if not plays:
            return legal[0]  # only a draw or a pass
        if len(plays) == 1:
            return plays[0]
        best, best_value = plays[0], -float("inf")
        for a in plays:
            value = self.evaluate(view, a)
            if value > best_value:
                best, best_value = a, value
        return best

    def action_probabilities(self, view: PublicView) -> np.ndarray:
        """All on the action :meth:`act` plays, over ``view.legal_actions``."""
        return point_mass(view, self.act(None, None, view))

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, view: PublicView, action: int) -> float:
        """The score of a play (larger is better)."""
        rules = view.rules
        out = play_outcome(view, action)
        if out.wins:
            return MATCH_VALUE + out.points
        value = float(out.points)
        counts = list(view.hand_counts)
        if action >= DOUBLE_PLAY:
            tiles = [TILE_ID[(action - DOUBLE_PLAY,) * 2]] * 2
        else:
            tiles = [action >> 1]
        for t in tiles:
            counts[t] -= 1
        value += self._shed_value(view, tiles)
        if out.goes_out:
            if rules.out_scoring == "fixed":
                return value
            return value + self._out_value(view, view.side, 0)
        if rules.play_scoring == "fives" and not out.header:
            value -= self.w_keep * sum(t in SCORING_TILES for t in tiles)
        n = rules.num_players
        side_of = rules.side_of
        ends, flags = out.ends, out.end_doubles
        fits = CONTAINS[ends[0]] | CONTAINS[ends[1]]
        nxt = (view.seat + 1) % n
        if side_of[nxt] != view.side:
            if rules.play_scoring == "headers":
                value -= self.w_threat * self._header_threat(view, nxt, ends, flags)
            elif rules.play_scoring == "fives":
                value -= self.w_threat * self._fives_threat(view, nxt, ends, flags)
            value -= self.w_threat * self._domino_threat(view, nxt, fits)
            value += self.w_stuck * (1.0 - self._play_chance(view, nxt, fits))
        if rules.partnerships:
            mate = (view.seat + 2) % n
            if view.voids[mate] & (1 << ends[0]) and view.voids[mate] & (1 << ends[1]):
                value -= self.w_partner
        # Own flexibility: distinct numbers kept and a tile that fits the new ends.
        numbers = 0
        own_fit = 0
        for t in range(NUM_TILES):
            if counts[t]:
                numbers |= NUMBER_BITS[t]
                if fits >> t & 1:
                    own_fit += 1
        value += self.w_variety * numbers.bit_count()
        value += self.w_follow * min(own_fit, 2)
        return value

    def _shed_value(self, view: PublicView, tiles: list[int]) -> float:
        """Worth of getting rid of these tiles under the blocked rule; larger near a block."""
        rules = view.rules
        near = 1.0 if view.drawable == 0 else 1.0 / (1.0 + view.drawable)
        weight = self.w_shed * (0.25 + near)
        if rules.out_scoring != "fixed":  # the other hands' pips are the award: shed always
            weight = self.w_shed * (1.0 + near)
        rule = rules.blocked_rule
        value = 0.0
        for t in tiles:
            pips = PIPS[t] / 12.0
            if rule in ("german", "american"):
                value += (1.0 if IS_DOUBLE[t] else 0.0) + pips
            elif rule == "pips":
                value += pips
            else:  # most_doubles: doubles win blocks, keep them
                value += (-1.0 if IS_DOUBLE[t] else 0.0) + 0.25 * pips
        return weight * value

    # ------------------------------------------------------------------ hidden-tile estimates

    @staticmethod
    def _holders_size(view: PublicView, numbers: int) -> int:
        """Hidden places a tile with these numbers can be: boneyard plus non-void other hands."""
        total = view.boneyard_size
        for s, size in enumerate(view.hand_sizes):
            if s != view.seat and not view.voids[s] & numbers:
                total += size
        return total

    def _tile_chance(self, view: PublicView, seat: int, tile: int) -> float:
        """Chance that ``seat`` holds at least one unseen copy of ``tile``."""
        copies = view.unseen_counts[tile]
        numbers = NUMBER_BITS[tile]
        if not copies or view.voids[seat] & numbers or not view.hand_sizes[seat]:
            return 0.0
        holders = self._holders_size(view, numbers)
        share = min(1.0, view.hand_sizes[seat] / holders)
        return 1.0 - (1.0 - share) ** copies

    def _header_threat(
        self, view: PublicView, seat: int, ends: tuple[int, int], flags: tuple[bool, bool]
    ) -> float:
        """Expected points (match loss counted as ``MATCH_VALUE``) of ``seat``'s header next."""
        chance = self._tile_chance(view, seat, TILE_ID[ends])
        if not chance:
            return 0.0
        rules = view.rules
        score = view.scores[rules.side_of[seat]]
        points = cap_header(header_threat_value(ends, flags), rules.target - score, rules.end_caps)
        if score + points >= rules.target:
            return chance * MATCH_VALUE
        if view.hand_sizes[seat] == 1:  # the header tile is their last: domino too
            points += rules.domino_points
            if score + points >= rules.target:
                return chance * MATCH_VALUE
        return chance * points

    def _play_chance(self, view: PublicView, seat: int, fits: int) -> float:
        """Chance that ``seat`` holds a tile fitting the ends (unseen tiles, voids respected)."""
        size = view.hand_sizes[seat]
        if not size:
            return 0.0
        hidden = 0
        fitting = 0
        void = view.voids[seat]
        for t in range(NUM_TILES):
            c = view.unseen_counts[t]
            if c and not NUMBER_BITS[t] & void:
                hidden += c
                if fits >> t & 1:
                    fitting += c
        if not hidden or not fitting:
            return 0.0
        return 1.0 - (1.0 - fitting / hidden) ** size

    def _domino_threat(self, view: PublicView, seat: int, fits: int) -> float:
        """Expected points (or match loss) from ``seat`` going out on its next turn."""
        if view.hand_sizes[seat] != 1:
            return 0.0
        rules = view.rules
        chance = self._play_chance(view, seat, fits)
        if rules.out_scoring != "fixed":
            return chance * self._out_value(view, rules.side_of[seat], 1)
        score = view.scores[rules.side_of[seat]]
        if score + rules.domino_points >= rules.target:
            return chance * MATCH_VALUE
        return chance * rules.domino_points

    def _out_value(self, view: PublicView, side: int, playing: int) -> float:
        """Expected award (or ``MATCH_VALUE`` for a match won) when ``side`` wins the hand by
        going out under pip scoring: the other sides' tiles times the mean unseen pips.

        ``playing``: tiles the going-out seat still holds (0 when it is the viewer going out).
        """
        rules = view.rules
        if rules.single_hand:
            return MATCH_VALUE
        hidden = sum(view.unseen_counts)
        mean = (
            sum(c * PIPS[t] for t, c in enumerate(view.unseen_counts) if c) / hidden
            if hidden
            else 0.0
        )
        pips = 0.0
        for seat, size in enumerate(view.hand_sizes):
            if rules.side_of[seat] == side:
                continue
            if seat == view.seat:
                pips += sum(PIPS[t] * c for t, c in enumerate(view.hand_counts) if c)
            else:
                pips += mean * size
        award = out_points(rules.out_scoring, round(pips))
        if rules.has_target and view.scores[side] + award >= rules.target:
            return MATCH_VALUE
        return float(award)

    def _fives_threat(
        self, view: PublicView, seat: int, ends: tuple[int, int], flags: tuple[bool, bool]
    ) -> float:
        """Expected points (a match loss as ``MATCH_VALUE``) of ``seat``'s best Fives count next:
        the largest chance-weighted count over the unseen tiles fitting the ends."""
        if not view.hand_sizes[seat] or view.voids[seat] & (1 << ends[0] | 1 << ends[1]) == (
            1 << ends[0] | 1 << ends[1]
        ):
            return 0.0
        rules = view.rules
        score = view.scores[rules.side_of[seat]]
        fits = CONTAINS[ends[0]] | CONTAINS[ends[1]]
        worst = 0.0
        for t in range(NUM_TILES):
            if not fits >> t & 1 or not view.unseen_counts[t]:
                continue
            best = 0
            for e in (0, 1):
                if CONTAINS[ends[e]] >> t & 1:
                    best = max(best, play_result("fives", 2 * t + e, ends, flags)[0])
            if not best:
                continue
            chance = self._tile_chance(view, seat, t)
            worth = MATCH_VALUE if score + best >= rules.target else best
            worst = max(worst, chance * worth)
        return worst


def default_weights() -> dict[str, float]:
    """The default :class:`HeuristicAgent`'s weights, by name (:data:`WEIGHT_NAMES` order)."""
    return HeuristicAgent().weights
