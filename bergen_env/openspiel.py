"""Bergen as an OpenSpiel Python game: ``import bergen_env.openspiel`` registers ``"bergen"``.

    import pyspiel
    import bergen_env.openspiel  # noqa: F401

    game = pyspiel.load_game("bergen(rules=fives,players=4,target=31)")
    pyspiel.load_game(str(game))  # the same game

Needs the ``openspiel`` extra (``pip install bergen_env[openspiel]``). The rules are the
engine's (:class:`bergen_env.engine.BergenState` plays every move); this module adds what
OpenSpiel needs on top:

==================  ==================================================================
parameters          ``rules`` (a preset: standard, traditional, double_set, draw,
                    fives), ``players`` (2-4; OpenSpiel's name in every game, the
                    envs' ``num_players``), ``partnerships`` (1 or 0), every rule
                    option of :data:`bergen_env.rules.RULE_OPTIONS` as its own parameter
                    (``target=31``, ``reserve=1``, ``lead=highest``, ``end_caps=0``, ...;
                    yes/no options are 1 or 0; the defaults, -1 and ``preset``, take the
                    preset's value for the seating), ``max_pip`` (6; a smaller value
                    deals only tiles whose halves are all <= it: small variants for
                    equilibrium solvers), ``max_hands`` (:data:`MAX_HANDS`; a match
                    still unfinished after it ends with zero returns). ``str(game)``
                    spells out every option, so it loads the same game
players             the seats; in partnerships seats 0/2 and 1/3 are sides
actions             the engine's action ids (:mod:`bergen_env.actions`): play tile on an
                    end, draw, pass (and the double plays of two sets)
chance              explicit: every tile of every deal (seat 0's hand, then seat 1's,
                    ...; with one set each hand in ascending order; a deal without a
                    double is dealt again: docs/rules.md, "Dealing and the lead") and
                    the tile of every draw (uniform over the boneyard's tiles)
returns             the engine's: +1 to the winning side, -1/(sides-1) to the others;
                    zeros for a match cut by ``max_hands``
observation tensor  the project's observation (:class:`bergen_env.observation.Encoder`,
                    240 floats, from the player's seat); zeros while a hand is dealt
information state   perfect recall from the player's seat. String: the whole match (its
                    dealt tiles, its drawn tiles, every public move). Tensor: the deal
                    in play (its dealt and drawn tiles, every move in order) and the
                    public position, scores included (see :class:`BergenObserver`)
==================  ==================================================================

:class:`BergenObserver` gives every ``pyspiel.IIGObservationType`` (public information or
not, private information of no player, the observing player or every player, with or without
perfect recall).

``state.resample_from_infostate(player, sampler)`` deals the tiles ``player`` cannot see again,
consistently with the public moves (:class:`bergen_env.hidden_tiles.HiddenTileSampler`), so
OpenSpiel's ISMCTS bot can search it (with ``use_observation_string=True``; see
:mod:`bergen_env.agents.openspiel_bot`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from bergen_env.errors import install_hint

try:
    import pyspiel
except ModuleNotFoundError as exc:
    if exc.name != "pyspiel":
        raise
    raise ModuleNotFoundError(
        f"bergen_env.openspiel needs OpenSpiel, the [openspiel] extra: {install_hint('openspiel')}",
        name="pyspiel",
    ) from None

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS, action_str
from bergen_env.engine import BergenState, PublicView, lead_of
from bergen_env.env_options import DEFAULT_MAX_HANDS
from bergen_env.errors import InvalidOptionError
from bergen_env.observation import OBS_LAYOUT, STATE_SLICES, Encoder
from bergen_env.rules import OPTION_TYPES, PRESETS, RULE_OPTIONS, Rules, build_rules
from bergen_env.tiles import DOUBLE_ID, NUM_NUMBERS, NUM_TILES, TILES, tile_str
from bergen_env.validation import check_int, closest, did_you_mean

GAME_NAME = "bergen"
_TILE_TEXT = tuple(tile_str(t) for t in range(NUM_TILES))
_action_text = functools.lru_cache(maxsize=None)(action_str)
#: The default hand cap of the game (100): a twentieth of the envs'
#: :data:`~bergen_env.env_options.DEFAULT_MAX_HANDS`. An OpenSpiel state recalls its whole
#: match (its information state string and ``serialize_game_and_state`` grow with every move),
#: so one step costs more the longer the match, and OpenSpiel's checkers (``random_sim_test``
#: with ``serialize=True``) and algorithms would slow without bound on the rare match that
#: drifts for thousands of hands (4-player individual ``traditional``; docs/openspiel.md).
MAX_HANDS = DEFAULT_MAX_HANDS // 20
#: The small variant for exact solvers and the playthrough: the six tiles up to [2|2], two
#: players with hands of two, both boneyard tiles drawable, one hand to a target of 2.
SMALL_GAME = "bergen(hand_size=2,max_hands=1,max_pip=2,reserve=0,target=2)"
#: The preset's value: the default of a number option (every valid value is >= 0) and of a
#: yes/no option, which is 1 (on) or 0 (off).
PRESET_INT = -1
#: The preset's value: the default of a named option (``lead``, ``blocked_rule``, ...).
PRESET_STR = "preset"
#: Yes/no options: OpenSpiel parameters are typed by their default and a default must stand for
#: "the preset's value", so these are the integers 1, 0 or -1.
FLAG_PARAMETERS = tuple(k for k, kind in OPTION_TYPES.items() if kind is bool)
#: Every game parameter with its default (OpenSpiel's ``parameter_specification``). A rule option
#: left at its default takes the chosen preset's value for the chosen seating.
PARAMETERS: dict[str, Any] = {
    "rules": "standard",
    "players": 2,  # OpenSpiel's name for it in every game (the envs' num_players)
    "partnerships": PRESET_INT,
    **{k: PRESET_STR if OPTION_TYPES[k] is str else PRESET_INT for k in RULE_OPTIONS},
    "max_pip": 6,
    "max_hands": MAX_HANDS,
}

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Bergen domino (bergen_env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    provides_factored_observation_string=True,
    parameter_specification=PARAMETERS,
)


def _unknown_parameters(names: list[str]) -> str:
    """The error text for unknown game parameters: the closest valid name and all of them."""
    valid = sorted(PARAMETERS)
    parts = []
    for name in names:
        if name == "options":
            parts.append(
                "'options' (the packed option string) was replaced by one parameter per rule "
                "option, e.g. target=10,reserve=0"
            )
            continue
        parts.append(did_you_mean(name, valid))
    return f"unknown game parameter {'; '.join(parts)}; valid parameters are {valid}"


def game_parameters(rules: Rules, **extra: Any) -> dict[str, Any]:
    """Game parameters that play ``rules`` exactly (every option spelt out), plus ``extra``."""
    out: dict[str, Any] = {
        "rules": rules.name if rules.name in PRESETS else "standard",
        "players": rules.num_players,
    }
    for k in ("partnerships", *RULE_OPTIONS):
        value = getattr(rules, k)
        out[k] = int(value) if k in FLAG_PARAMETERS else value
    return {**out, **extra}


def state_from_view(
    game: pyspiel.Game, view: PublicView, rng: np.random.Generator
) -> BergenGameState:
    """A state of ``game`` that ``view.seat`` cannot tell from the real one (between moves).

    The tiles the seat cannot see are sampled (:class:`HiddenTileSampler`). The state recalls
    the current hand only, and the split of each seat's tiles into dealt and drawn ones is a
    reconstruction (the view does not say which tiles were drawn).
    """
    from bergen_env.hidden_tiles import HiddenTileSampler

    state = game.new_initial_state()
    m = state._m
    if dataclasses.replace(view.rules, name=m.variant.rules.name) != m.variant.rules:
        raise ValueError(f"the view's rules {view.rules} are not the game's {m.variant.rules}")
    pool = m.variant.pool
    view = dataclasses.replace(
        view, unseen_counts=tuple(min(u, pool[t]) for t, u in enumerate(view.unseen_counts))
    )
    hands, boneyard = HiddenTileSampler(view).sample(rng)
    m.engine = BergenState.from_view(view, hands, boneyard, np.random.default_rng(0))
    m.dealing, m.hand = False, view.hand_number
    events: list[tuple[str, int, int]] = []
    for seat in range(view.rules.num_players):
        events += [("deal", seat, -1)] * view.rules.hand_size
    for seat, action in view.moves:
        events.append(("move", seat, action))
        if action == DRAW:
            events.append(("draw", seat, -1))
    m.events = _resampled_events(events, 0, -1, hands, m.engine)
    return state


def rules_from_parameters(params: dict[str, Any]) -> Rules:
    """The rules that the game parameters name (errors name the bad parameter)."""
    preset = params.get("rules", PARAMETERS["rules"])
    if preset not in PRESETS:
        raise InvalidOptionError(
            f"game parameter 'rules' must be one of {PRESETS}, got {preset!r}"
            f"{closest(preset, PRESETS)}"
        )
    given: dict[str, Any] = {}
    for k in ("partnerships", *RULE_OPTIONS):
        value = params.get(k, PARAMETERS[k])
        if type(value) is type(PARAMETERS[k]) and value == PARAMETERS[k]:
            continue  # the preset's value
        if k in FLAG_PARAMETERS:
            if value not in (0, 1):
                raise InvalidOptionError(
                    f"game parameter {k!r} must be 1 (on), 0 (off) or -1 (the preset's), "
                    f"got {value!r}"
                )
            value = bool(value)
        given[k] = value
    return build_rules(
        preset,
        num_players=params.get("players", PARAMETERS["players"]),
        partnerships=given.pop("partnerships", None),
        **given,
    )


@dataclasses.dataclass(frozen=True)
class Variant:
    """What one set of game parameters plays: the rules, the tiles in play and the hand limit."""

    rules: Rules
    max_pip: int
    max_hands: int
    #: Copies of each tile id in play (zero for tiles above ``max_pip``).
    pool: tuple[int, ...]

    @property
    def encoder(self) -> Encoder:
        return _encoder(self.rules)

    @property
    def max_draws(self) -> int:
        """The most draws one deal can hold: every tile not dealt."""
        return sum(self.pool) - self.rules.num_players * self.rules.hand_size

    @property
    def max_moves(self) -> int:
        """The most moves one deal can hold: plays and draws, and at most ``players - 1``
        passes after each (a full round of passes would have been a blocked hand)."""
        return self.rules.num_players * (sum(self.pool) + self.max_draws)


@functools.lru_cache(maxsize=64)
def _encoder(rules: Rules) -> Encoder:
    return Encoder(rules)


@functools.lru_cache(maxsize=64)
def _variant(items: tuple[tuple[str, Any], ...]) -> Variant:
    params = dict(items)
    unknown = sorted(set(params) - set(PARAMETERS))
    if unknown:
        raise InvalidOptionError(_unknown_parameters(unknown))
    rules = rules_from_parameters(params)
    max_pip = check_int("max_pip", params.get("max_pip", PARAMETERS["max_pip"]))
    max_hands = check_int("max_hands", params.get("max_hands", PARAMETERS["max_hands"]))
    if not 0 <= max_pip <= 6:
        raise InvalidOptionError(f"game parameter 'max_pip' must be 0..6, got {max_pip}")
    if max_hands < 1:
        raise InvalidOptionError(f"game parameter 'max_hands' must be >= 1, got {max_hands}")
    pool = tuple(rules.sets if max(TILES[t]) <= max_pip else 0 for t in range(NUM_TILES))
    dealt = rules.num_players * rules.hand_size
    if dealt > sum(pool):
        raise InvalidOptionError(
            f"{rules.num_players} hands of {rules.hand_size} need {dealt} tiles, but "
            f"max_pip={max_pip} leaves {sum(pool)}"
        )
    return Variant(rules, max_pip, max_hands, pool)


def variant_of(params: dict[str, Any]) -> Variant:
    """The :class:`Variant` of a game's parameters (errors name the bad parameter)."""
    return _variant(tuple(sorted(params.items())))


class BergenGame(pyspiel.Game):
    """The OpenSpiel game; see the module docstring for its parameters."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        variant = variant_of(params or {})
        rules = variant.rules
        n = rules.num_players
        info = pyspiel.GameInfo(
            num_distinct_actions=rules.num_actions,
            max_chance_outcomes=NUM_TILES,
            num_players=n,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=variant.max_hands * variant.max_moves,
        )
        # every option resolved: str(game) names the exact rules and loads the same game
        resolved = game_parameters(rules, max_pip=variant.max_pip, max_hands=variant.max_hands)
        super().__init__(_GAME_TYPE, info, resolved)
        self._variant = variant

    @property
    def variant(self) -> Variant:
        return self._variant

    def new_initial_state(self) -> BergenGameState:
        return BergenGameState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Any = None
    ) -> BergenObserver:
        if isinstance(iig_obs_type, dict):  # OpenSpiel's make_observer(params) passes only these
            iig_obs_type, params = None, iig_obs_type
        return BergenObserver(
            self.variant, iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params
        )


class _Match:
    """The mutable part of a :class:`BergenGameState` (see its ``__init__``)."""

    __slots__ = (
        "variant",
        "engine",
        "dealing",
        "deal",
        "remaining",
        "drawing",
        "hand",
        "cut",
        "deal_start",
        "events",
        "recall",
    )

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self.engine: BergenState | None = None
        self.dealing = True  # chance deals the hand's tiles
        self.deal: list[int] = []  # tiles dealt so far in this deal, seat by seat
        self.remaining = list(variant.pool)  # per tile id, copies not yet dealt
        self.drawing = False  # a draw was chosen; chance picks its tile
        self.hand = 0  # the hand being dealt or played
        self.cut = False  # ended by max_hands
        self.deal_start = 0  # index in events of the current deal's first dealt tile
        self.events: list[tuple[str, int, int]] = []
        #: (private seats, public) -> (deal_start, history text of events[:deal_start])
        self.recall: dict[tuple[tuple[int, ...], bool], tuple[int, str]] = {}

    def __deepcopy__(self, memo: dict) -> _Match:
        c = _Match.__new__(_Match)
        c.variant = self.variant
        c.engine = None if self.engine is None else self.engine.clone()
        c.deal, c.remaining, c.events = list(self.deal), list(self.remaining), list(self.events)
        c.dealing, c.drawing, c.hand, c.cut = self.dealing, self.drawing, self.hand, self.cut
        c.deal_start = self.deal_start
        c.recall = dict(self.recall)
        return c


class BergenGameState(pyspiel.State):
    """A match: chance deals tiles and draws, the engine plays the moves."""

    def __init__(self, game: BergenGame) -> None:
        super().__init__(game)
        # OpenSpiel clones a Python state by deep-copying its __dict__: one holder that copies
        # itself cheaply (the engine's clone, flat lists of immutable entries)
        self._m = _Match(game.variant)

    @property
    def engine(self) -> BergenState | None:
        """The engine's match state (None until the first hand is dealt)."""
        return self._m.engine

    # ---------------------------------------------------------------- OpenSpiel API

    def current_player(self) -> int:
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        if self._m.drawing or self._m.dealing:
            return pyspiel.PlayerId.CHANCE
        return self._m.engine.current_player

    def is_terminal(self) -> bool:
        return self._m.cut or (self._m.engine is not None and self._m.engine.terminal)

    def _dealing(self) -> bool:
        return self._m.dealing

    def _legal_actions(self, player: int) -> list[int]:
        assert self._m.engine is not None
        return self._m.engine.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._m.drawing:
            e = self._m.engine
            assert e is not None
            left = e.boneyard[e.bone_pos :]
            tiles = sorted(set(left))
            return [(t, left.count(t) / len(left)) for t in tiles]
        return self._deal_outcomes()

    def _deal_outcomes(self) -> list[tuple[int, float]]:
        """The next dealt tile's distribution: each hand a uniformly random set of tiles.

        With one set each hand is dealt in ascending order, so a hand is one path of the tree
        (not one per order): the next tile is the smallest of the ``j`` still to come, drawn
        from the ``m`` candidates above the last one with probability C(above, j-1) / C(m, j).
        With two sets the tiles come in dealing order, each with probability copies / left.
        """
        m = self._m
        if m.variant.rules.sets == 2:
            total = sum(m.remaining)
            return [(t, c / total) for t, c in enumerate(m.remaining) if c]
        size = m.variant.rules.hand_size
        j = size - len(m.deal) % size
        last = m.deal[-1] if len(m.deal) % size else -1
        candidates = [t for t in range(last + 1, NUM_TILES) if m.remaining[t]]
        ways = math.comb(len(candidates), j)
        out = []
        for i, t in enumerate(candidates):
            above = len(candidates) - i - 1
            if above < j - 1:
                break
            out.append((t, math.comb(above, j - 1) / ways))
        return out

    def _apply_action(self, action: int) -> None:
        if self._m.drawing:
            self._draw(int(action))
        elif self._dealing():
            self._deal_tile(int(action))
        else:
            e = self._m.engine
            assert e is not None
            seat = e.current_player
            if action == DRAW:
                self._m.events.append(("move", seat, DRAW))
                self._m.drawing = True
                return
            e.apply_action(int(action))
            self._m.events.append(("move", seat, int(action)))
            self._after_move()

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"{'draw' if self._m.drawing else 'deal'} {tile_str(action)}"
        return action_str(action)

    def returns(self) -> list[float]:
        if self._m.engine is None or self._m.cut:
            return [0.0] * self._m.variant.rules.num_players
        return list(self._m.engine.returns())

    def __str__(self) -> str:
        if self._m.engine is None or self._dealing():
            return f"dealing hand {self._m.hand}: {[tile_str(t) for t in self._m.deal]}"
        return repr(self._m.engine)

    def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> BergenGameState:
        """A state ``player_id`` cannot tell from this one: the hidden tiles dealt again.

        Only between moves (not while dealing or drawing). ``probability_sampler`` (OpenSpiel's
        uniform sampler) seeds the draw; use :meth:`resample` for a numpy Generator.
        """
        seed = int(probability_sampler() * 2**31)
        return self.resample(player_id, np.random.default_rng(seed))

    def resample(self, player: int, rng: np.random.Generator) -> BergenGameState:
        """Like :meth:`resample_from_infostate`, drawing from ``rng``."""
        from bergen_env.hidden_tiles import HiddenTileSampler

        e = self._m.engine
        if e is None or self._dealing() or self._m.drawing or self.is_terminal():
            raise pyspiel.SpielError("resampling needs a state between moves of a hand")
        view = self.game_view(player)
        hands, boneyard = HiddenTileSampler(view).sample(rng)
        c = self.clone()
        c._m.engine = BergenState.from_view(view, hands, boneyard, np.random.default_rng(0))
        c._m.engine.hand_results = list(e.hand_results)
        # the other seats' private events of this hand now follow the sampled tiles
        c._m.events = _resampled_events(self._m.events, self._m.deal_start, player, hands, e)
        return c

    def game_view(self, player: int) -> PublicView:
        """The engine's public view of ``player``, with the unseen tiles limited to the pool."""
        assert self._m.engine is not None
        view = self._m.engine.public_view(player)
        pool = self._m.variant.pool
        unseen = tuple(min(u, pool[t]) for t, u in enumerate(view.unseen_counts))
        return dataclasses.replace(view, unseen_counts=unseen)

    # ---------------------------------------------------------------- dealing and drawing

    def _deal_tile(self, tile: int) -> None:
        if tile not in dict(self._deal_outcomes()):
            raise pyspiel.SpielError(
                f"deal {tile_str(tile)}: not a possible next tile (left: {self._m.remaining}; "
                f"one set deals each hand in ascending order)"
            )
        rules = self._m.variant.rules
        self._m.remaining[tile] -= 1
        self._m.deal.append(tile)
        seat = (len(self._m.deal) - 1) // rules.hand_size
        self._m.events.append(("deal", seat, tile))
        if len(self._m.deal) < rules.num_players * rules.hand_size:
            return
        size = rules.hand_size
        hands = [self._m.deal[s * size : (s + 1) * size] for s in range(rules.num_players)]
        leader, lead_tile = lead_of(rules, hands, self._m.hand)
        self._m.deal = []
        self._m.dealing = leader is None
        self._m.remaining = list(self._m.variant.pool)
        if leader is None:  # no double: dealt again (docs/rules.md, "Dealing and the lead")
            self._m.events.append(("redeal", -1, self._m.hand))
            self._m.deal_start = len(self._m.events)
            return
        boneyard = [t for t, c in enumerate(self._m.remaining) for _ in range(c)]
        for tiles in hands:
            for t in tiles:
                boneyard.remove(t)
        # the boneyard's order is not used: every draw is its own chance node
        template = (self._m.engine or BergenState(rules, seed=0)).public_view(0)
        view = dataclasses.replace(
            template,
            current_player=leader,
            lead_tile=lead_tile,
            moves=(),
            line=(),
            line_counts=(0,) * NUM_TILES,
            ends=None,
            end_doubles=(False, False),
            voids=(0,) * rules.num_players,
        )
        results = self._m.engine.hand_results if self._m.engine is not None else []
        self._m.engine = BergenState.from_view(view, hands, boneyard, np.random.default_rng(0))
        self._m.engine.hand_results = list(results)

    def _draw(self, tile: int) -> None:
        e = self._m.engine
        assert e is not None
        left = e.boneyard[e.bone_pos :]
        if tile not in left:
            raise pyspiel.SpielError(f"draw {tile_str(tile)}: it is not in the boneyard")
        left.remove(tile)
        e.boneyard = e.boneyard[: e.bone_pos] + [tile] + left
        seat = e.current_player
        e.apply_action(DRAW)
        self._m.drawing = False
        self._m.events.append(("draw", seat, tile))
        self._after_move()

    def _after_move(self) -> None:
        e = self._m.engine
        assert e is not None
        if not e.terminal and e.hand_number != self._m.hand:  # the hand ended: deal the next
            self._m.hand = e.hand_number
            self._m.dealing = True
            self._m.deal_start = len(self._m.events)
            self._m.cut = e.hand_number >= self._m.variant.max_hands

    # ---------------------------------------------------------------- observations

    def held_tiles(self, seat: int) -> list[int]:
        """The tiles ``seat`` holds now (while dealing: those dealt to it so far)."""
        m = self._m
        if m.engine is not None and not m.dealing:
            return m.engine.hand_tiles(seat)
        return [v for kind, s, v in m.events[m.deal_start :] if kind == "deal" and s == seat]

    def public_text(self) -> str:
        """What every seat sees now: hand number, scores, turn, line, sizes, boneyard, voids."""
        m, e = self._m, self._m.engine
        scores = f" scores {list(e.scores)}" if e is not None else ""
        if m.cut:
            return f"hand {m.hand} cut{scores}"
        if e is None or m.dealing:
            return f"hand {m.hand} dealing {len(m.deal)} dealt{scores}"
        line = " ".join(f"{a}{b}" for a, b in e.line) or "-"
        lead = "-" if e.lead_tile is None else _TILE_TEXT[e.lead_tile]
        return (
            f"hand {e.hand_number}{scores} turn {e.current_player}"
            f"{' draw' if m.drawing else ''} | line {line} | sizes {list(e.hand_len)}"
            f" bone {e.boneyard_size}/{e.drawable} | voids {list(e.voids)} lead {lead}"
        )

    def history_text(self, private: tuple[int, ...], public: bool) -> str:
        """The match with perfect recall: the public events if ``public`` (deals, moves, that a
        seat drew) and the private ones of the seats in ``private`` (their dealt and drawn
        tiles)."""
        m = self._m
        # the text of the finished deals only grows: kept per view, extended from where it ended
        done, text = m.recall.get((private, public), (0, ""))
        if done > m.deal_start:  # not a prefix of this match
            done, text = 0, ""
        if done != m.deal_start:
            more = _history_text(m.events[done : m.deal_start], private, public)
            text = f"{text} {more}" if text and more else text or more
            m.recall[(private, public)] = (m.deal_start, text)
        now = _history_text(m.events[m.deal_start :], private, public)
        return f"{text} {now}" if text and now else text or now


def _seat_text(player: int, text: str) -> str:
    """``text`` as seen from ``player``'s seat."""
    return f"p{player} {text}" if text else f"p{player}"


def _history_text(
    events: list[tuple[str, int, int]], private: tuple[int, ...], public: bool
) -> str:
    """``events`` as :meth:`BergenGameState.history_text` shows them."""
    parts: list[str] = []
    run: dict[int, list[int]] = {}  # tiles of the deal in progress, by private seat
    dealt = False

    def flush() -> None:
        nonlocal dealt
        if dealt and public:
            parts.append("deal")
        for seat in sorted(run):
            parts.append(f"{seat}:hand " + " ".join(_TILE_TEXT[t] for t in sorted(run[seat])))
        run.clear()
        dealt = False

    for kind, seat, value in events:
        if kind == "deal":
            dealt = True
            if seat in private:
                run.setdefault(seat, []).append(value)
            continue
        if dealt:
            flush()
        if kind == "redeal":
            if public:
                parts.append("redeal")
        elif kind == "draw":
            if seat in private:
                parts.append(f"{seat}:got {_TILE_TEXT[value]}")
            elif public:
                parts.append(f"{seat}:got")
        elif public:
            parts.append(f"{seat}:{_action_text(value)}")
    flush()
    return " ".join(parts)


def _tiles_played(action: int) -> tuple[int, ...]:
    """The tiles an action puts on the line (none for a draw or a pass)."""
    if action < DRAW:
        return (action >> 1,)
    if action > PASS:  # two copies of a double at once (two sets)
        return (DOUBLE_ID[action - DOUBLE_PLAY],) * 2
    return ()


def _resampled_events(
    events: list[tuple[str, int, int]],
    first: int,
    player: int,
    hands: list[list[int]],
    e: BergenState,
) -> list[tuple[str, int, int]]:
    """``events`` with the other seats' private tiles of the current hand (from index ``first``)
    rewritten to fit the sampled ``hands``: each seat's tiles this hand (played ones first) are
    split into its dealt hand and, in order, its draws."""
    held: dict[int, list[int]] = {}
    for s in range(e.num_players):
        if s != player:
            played = [t for seat, a in e.moves if seat == s for t in _tiles_played(a)]
            held[s] = played + sorted(hands[s])
    out = list(events[:first])
    for kind, seat, value in events[first:]:
        if seat in held and kind in ("deal", "draw"):  # dealt tiles come first
            value = held[seat].pop(0)
        out.append((kind, seat, value))
    return out


#: The views of the global state (:data:`bergen_env.observation.STATE_LAYOUT`) that every seat
#: sees: the public part of a position, in absolute seats and sides.
PUBLIC_VIEWS = (
    "line",
    "left_end",
    "right_end",
    "end_doubles",
    "line_empty",
    "to_move",
    "seats",
    "hand_sizes",
    "voids",
    "boneyard",
    "scores",
    "need",
)
_KEPT_WHILE_DEALING = ("seats", "scores", "need")
#: Columns of a move in a ``history`` row, after the seat's: the tile (28), then left end,
#: right end, draw, pass. A double play marks its double and both ends.
_LEFT, _DRAW_COLUMN = NUM_TILES, NUM_TILES + 2
MOVE_WIDTH = NUM_TILES + 4
_MOVE_COLUMNS = (
    *((a >> 1, _LEFT + (a & 1)) for a in range(DRAW)),
    (_DRAW_COLUMN,),
    (_DRAW_COLUMN + 1,),
    *((DOUBLE_ID[n], _LEFT, _LEFT + 1) for n in range(NUM_NUMBERS)),
)


class BergenObserver:
    """OpenSpiel's observer interface for every ``pyspiel.IIGObservationType``.

    One flat float32 ``tensor`` with named views in ``dict``, and ``string_from``. Seats and
    sides are absolute, except in the default observation. The pieces:

    ==========================  ============================================================
    public, private of one      the project's observation (:class:`~bergen_env.observation.
    player, no perfect recall   Encoder`, 240 floats from the player's seat; zeros while a
    (OpenSpiel's default)       hand is dealt)
    private of one player       ``player`` (one-hot seat), ``hand`` (its tile counts; while
                                dealing, the tiles dealt to it so far)
    private of all players      ``hands`` (players x 28 tile counts)
    public                      the public views of the global state (:data:`PUBLIC_VIEWS`:
                                line, ends, turn, hand sizes, voids, boneyard sizes, scores,
                                need; while dealing only seats, scores and need) and
                                ``phase`` ([hand being dealt, draw being dealt])
    perfect recall, private     ``dealt`` (the deal's dealt tiles of each private seat),
                                ``draws`` (its drawn tiles in order, one row per draw)
    perfect recall, public      ``history``: every move of the deal in order, one row each
                                (one-hot seat; the tile (28), left end, right end, draw,
                                pass)
    ==========================  ============================================================

    Perfect recall: the strings recall the whole match. The tensors recall the deal in play;
    earlier deals (and deals dealt again for want of a double) are summed up by the scores,
    as a fixed-size tensor cannot hold a match of any length. So a tensor has perfect recall
    exactly when the match is one deal that cannot be dealt again (``max_hands=1`` or
    ``single_hand``, and hands that always hold a double, e.g. the small variant of
    ``docs/openspiel.md``).
    """

    def __init__(
        self, variant: Variant, iig_obs_type: pyspiel.IIGObservationType, params: Any
    ) -> None:
        if params:
            raise ValueError(f"the bergen observer takes no parameters, got {params}")
        self.variant = variant
        self.public = bool(iig_obs_type.public_info)
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        private = iig_obs_type.private_info
        self.single = private == pyspiel.PrivateInfoType.SINGLE_PLAYER
        self.all = private == pyspiel.PrivateInfoType.ALL_PLAYERS
        self.default = self.public and self.single and not self.perfect_recall
        rules = variant.rules
        n = rules.num_players
        pieces: list[tuple[str, tuple[int, ...]]] = []
        if self.default:
            pieces = [(name, (size,)) for name, size in OBS_LAYOUT]
        else:
            if self.single:
                pieces += [("player", (n,)), ("hand", (NUM_TILES,))]
            if self.all:
                pieces.append(("hands", (n, NUM_TILES)))
            if self.public:
                pieces += [
                    (k, (STATE_SLICES[k].stop - STATE_SLICES[k].start,)) for k in PUBLIC_VIEWS
                ]
                pieces.append(("phase", (2,)))
            if self.perfect_recall:
                k = 1 if self.single else n if self.all else 0
                if k:
                    pieces.append(("dealt", (k, NUM_TILES)[self.single :]))
                    if variant.max_draws:
                        pieces.append(("draws", (k, variant.max_draws, NUM_TILES)[self.single :]))
                if self.public:
                    pieces.append(("history", (variant.max_moves, n + MOVE_WIDTH)))
        self.tensor = np.zeros(sum(math.prod(shape) for _, shape in pieces), np.float32)
        self.dict: dict[str, np.ndarray] = {}
        start = 0
        for name, shape in pieces:
            size = math.prod(shape)
            self.dict[name] = self.tensor[start : start + size].reshape(shape)
            start += size

    def set_from(self, state: BergenGameState, player: int) -> None:
        """Write what ``player`` observes of ``state`` into ``tensor``."""
        self.tensor.fill(0)
        m, e, d = state._m, state._m.engine, self.dict
        live = e is not None and not m.dealing
        if self.default:
            if live:
                self.tensor[:] = self.variant.encoder.observe(e, player)
            return
        n = self.variant.rules.num_players
        if self.single:
            d["player"][player] = 1
            np.add.at(d["hand"], state.held_tiles(player), 1)
        if self.all:
            for seat in range(n):
                np.add.at(d["hands"][seat], state.held_tiles(seat), 1)
        if self.public:
            if e is not None:
                full = self.variant.encoder.state(e)
                for name in PUBLIC_VIEWS if live else _KEPT_WHILE_DEALING:
                    d[name][:] = full[STATE_SLICES[name]]
            d["phase"][:] = (m.dealing, m.drawing)
        if self.perfect_recall:
            self._set_recall(m, (player,) if self.single else range(n) if self.all else ())

    def _set_recall(self, m: _Match, seats: Iterable[int]) -> None:
        d, n = self.dict, self.variant.rules.num_players
        row = {seat: i for i, seat in enumerate(seats)}
        drawn = [0] * len(row)
        history = d.get("history")
        moves = 0
        for kind, seat, value in m.events[m.deal_start :]:
            if kind == "move":
                if history is not None:
                    if moves == len(history):
                        raise RuntimeError(f"a deal longer than {moves} moves: {m.events}")
                    history[moves, seat] = 1
                    for column in _MOVE_COLUMNS[value]:
                        history[moves, n + column] = 1
                moves += 1
            elif seat in row:
                i = row[seat]
                if kind == "deal":
                    d["dealt"].reshape(-1, NUM_TILES)[i, value] += 1
                else:  # a draw
                    d["draws"].reshape(len(row), -1, NUM_TILES)[i, drawn[i], value] = 1
                    drawn[i] += 1

    def string_from(self, state: BergenGameState, player: int) -> str:
        """What ``player`` observes of ``state``, as text."""
        seats = (player,) if self.single else tuple(range(state.num_players())) if self.all else ()
        if self.perfect_recall:
            text = state.history_text(seats, self.public)
            return _seat_text(player, text) if self.single else text
        return self.text(state, seats, self.public, player if self.single else None)

    @staticmethod
    def text(
        state: BergenGameState, seats: tuple[int, ...], public: bool, player: int | None
    ) -> str:
        """The position now: the public part if ``public``, and the tiles ``seats`` hold."""
        parts = [state.public_text()] if public else []
        for seat in seats:
            tiles = " ".join(_TILE_TEXT[t] for t in state.held_tiles(seat)) or "-"
            parts.append(f"mine {tiles}" if seat == player else f"{seat}:holds {tiles}")
        text = " | ".join(parts)
        return text if player is None else _seat_text(player, text)


pyspiel.register_game(_GAME_TYPE, BergenGame)
