"""Bergen as an OpenSpiel Python game: ``import bergen_env.openspiel`` registers ``"bergen"``.

    import pyspiel
    import bergen_env.openspiel  # noqa: F401

    game = pyspiel.load_game("bergen", {"rules": "traditional", "players": 3})

Needs the ``openspiel`` extra (``pip install bergen_env[openspiel]``). The rules are the
engine's (:class:`bergen_env.engine.BergenState` plays every move); this module adds what
OpenSpiel needs on top:

==================  ==================================================================
parameters          ``rules`` (a preset: standard, traditional, double_set),
                    ``players`` (2-4), ``partnerships`` (bool), ``options`` (rule
                    overrides, ``"target=10,reserve=0"``), ``max_pip`` (6; a smaller
                    value deals only tiles whose halves are all <= it: small variants
                    for equilibrium solvers), ``max_hands`` (100; a match still
                    unfinished after it ends with zero returns)
players             the seats; in partnerships seats 0/2 and 1/3 are sides
actions             the engine's action ids (:mod:`bergen_env.actions`): play tile on an
                    end, draw, pass (and the double plays of two sets)
chance              explicit: every tile of every deal (seat 0's hand, then seat 1's,
                    ...; with one set each hand in ascending order; a deal without a
                    double is dealt again, RULES.md §4) and the tile of every draw
                    (uniform over the boneyard's tiles)
returns             the engine's: +1 to the winning side, -1/(sides-1) to the others;
                    zeros for a match cut by ``max_hands``
observation tensor  the project's observation (:class:`bergen_env.observation.Encoder`,
                    240 floats, from the player's seat); zeros while a hand is dealt
information state   string: the match from the player's seat with perfect recall (its
                    dealt tiles, its drawn tiles, every public move); tensor: the same
                    240-float observation as above (it is not perfect recall)
==================  ==================================================================

``state.resample_from_infostate(player, sampler)`` deals the tiles ``player`` cannot see again,
consistently with the public moves (:class:`bergen_env.agents.sampling.HiddenTileSampler`), so
OpenSpiel's ISMCTS bot can search it (with ``use_observation_string=True``; see
:mod:`bergen_env.agents.openspiel_bot`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np
import pyspiel

from bergen_env.actions import DOUBLE_PLAY, DRAW, PASS, action_str
from bergen_env.engine import BergenState, PublicView, lead_of
from bergen_env.errors import InvalidOptionError
from bergen_env.observation import OBS_SIZE, Encoder
from bergen_env.rules import PRESETS, RULE_OPTIONS, Rules
from bergen_env.tiles import DOUBLE_ID, NUM_TILES, TILES, tile_str

GAME_NAME = "bergen"
_TILE_TEXT = tuple(tile_str(t) for t in range(NUM_TILES))
_action_text = functools.lru_cache(maxsize=None)(action_str)
DEFAULT_MAX_HANDS = 100
_PARAMETERS = {
    "rules": "standard",
    "players": 2,
    "partnerships": False,
    "options": "",
    "max_pip": 6,
    "max_hands": DEFAULT_MAX_HANDS,
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
    parameter_specification=_PARAMETERS,
)


def parse_options(text: str) -> dict[str, Any]:
    """``"target=10,end_caps=false"`` -> ``{"target": 10, "end_caps": False}``."""
    out: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InvalidOptionError(f"game parameter 'options': expected key=value, got {item!r}")
        value = value.strip()
        if value.lower() in ("true", "false"):
            out[key.strip()] = value.lower() == "true"
        else:
            try:
                out[key.strip()] = int(value)
            except ValueError:
                out[key.strip()] = value
    return out


def game_parameters(rules: Rules, **extra: Any) -> dict[str, Any]:
    """Game parameters that play ``rules`` exactly (every option spelt out), plus ``extra``."""
    options = ",".join(
        f"{k}={str(v).lower() if isinstance(v, bool) else v}"
        for k, v in rules.to_dict().items()
        if k in RULE_OPTIONS
    )
    return {
        "rules": rules.name if rules.name in PRESETS else "standard",
        "players": rules.num_players,
        "partnerships": rules.partnerships,
        "options": options,
        **extra,
    }


def state_from_view(
    game: pyspiel.Game, view: PublicView, rng: np.random.Generator
) -> BergenGameState:
    """A state of ``game`` that ``view.seat`` cannot tell from the real one (between moves).

    The tiles the seat cannot see are sampled (:class:`HiddenTileSampler`). The state recalls
    the current hand only, and the split of each seat's tiles into dealt and drawn ones is a
    reconstruction (the view does not say which tiles were drawn).
    """
    from bergen_env.agents.sampling import HiddenTileSampler

    state = game.new_initial_state()
    m = state._m
    if view.rules != m.variant.rules:
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
    preset = params["rules"]
    if preset not in PRESETS:
        raise InvalidOptionError(f"game parameter 'rules' must be one of {PRESETS}, got {preset!r}")
    return Rules.preset(
        preset,
        num_players=params["players"],
        partnerships=params["partnerships"],
        **parse_options(params["options"]),
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


@functools.lru_cache(maxsize=64)
def _encoder(rules: Rules) -> Encoder:
    return Encoder(rules)


@functools.lru_cache(maxsize=64)
def _variant(items: tuple[tuple[str, Any], ...]) -> Variant:
    params = dict(items)
    unknown = sorted(set(params) - set(_PARAMETERS))
    if unknown:
        raise InvalidOptionError(
            f"unknown game parameter(s) {unknown}; known: {sorted(_PARAMETERS)}"
        )
    params = {**_PARAMETERS, **params}
    rules = rules_from_parameters(params)
    max_pip, max_hands = int(params["max_pip"]), int(params["max_hands"])
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
        per_hand = sum(variant.pool) * (2 + n) + n  # plays + draws + passes between them
        info = pyspiel.GameInfo(
            num_distinct_actions=rules.num_actions,
            max_chance_outcomes=NUM_TILES,
            num_players=n,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=variant.max_hands * per_hand,
        )
        super().__init__(_GAME_TYPE, info, {**_PARAMETERS, **(params or {})})

    @property
    def variant(self) -> Variant:
        return variant_of(self.get_parameters())

    def new_initial_state(self) -> BergenGameState:
        return BergenGameState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Any = None
    ) -> BergenObserver:
        return BergenObserver(
            iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params
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
        "hand_start",
        "events",
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
        self.hand_start = 0  # index in events of the current hand's first dealt tile
        self.events: list[tuple[str, int, int]] = []

    def __deepcopy__(self, memo: dict) -> _Match:
        c = _Match.__new__(_Match)
        c.variant = self.variant
        c.engine = None if self.engine is None else self.engine.clone()
        c.deal, c.remaining, c.events = list(self.deal), list(self.remaining), list(self.events)
        c.dealing, c.drawing, c.hand, c.cut = self.dealing, self.drawing, self.hand, self.cut
        c.hand_start = self.hand_start
        return c


class BergenGameState(pyspiel.State):
    """A match: chance deals tiles and draws, the engine plays the moves."""

    def __init__(self, game: BergenGame) -> None:
        super().__init__(game)
        # OpenSpiel clones a Python state by deep-copying its __dict__: one holder that copies
        # itself cheaply (the engine's clone, flat lists of immutable entries)
        self._m = _Match(variant_of(game.get_parameters()))

    @property
    def engine(self) -> BergenState | None:
        """The engine's match state (None until the first hand is dealt)."""
        return self._m.engine

    @property
    def history_events(self) -> list[tuple[str, int, int]]:
        """(kind, seat, value): "deal" (tile), "redeal", "draw" (tile), "move" (action id)."""
        return self._m.events

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
        from bergen_env.agents.sampling import HiddenTileSampler

        e = self._m.engine
        if e is None or self._dealing() or self._m.drawing or self.is_terminal():
            raise pyspiel.SpielError("resampling needs a state between moves of a hand")
        view = self.game_view(player)
        hands, boneyard = HiddenTileSampler(view).sample(rng)
        c = self.clone()
        c._m.engine = BergenState.from_view(view, hands, boneyard, np.random.default_rng(0))
        c._m.engine.hand_results = list(e.hand_results)
        # the other seats' private events of this hand now follow the sampled tiles
        c._m.events = _resampled_events(self._m.events, self._m.hand_start, player, hands, e)
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
        if leader is None:  # no double: dealt again (RULES.md §4)
            self._m.events.append(("redeal", -1, self._m.hand))
            return
        self._m.hand_start = len(self._m.events) - len(hands) * size
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
            self._m.cut = e.hand_number >= self._m.variant.max_hands

    # ---------------------------------------------------------------- observations

    def observation_array(self, player: int) -> np.ndarray:
        """The project's observation of ``player`` (zeros while a hand is being dealt)."""
        if self._m.engine is None or self._dealing():
            return np.zeros(OBS_SIZE, dtype=np.float32)
        return self._m.variant.encoder.observe(self._m.engine, player)

    def observation_text(self, player: int) -> str:
        """What ``player`` sees now (not its memory): hand, line, counts, scores, voids."""
        if self._m.engine is None or self._dealing():
            return f"p{player} hand {self._m.hand} dealing"
        v = self._m.engine.public_view(player)
        line = " ".join(f"{a}{b}" for a, b in v.line)
        return (
            f"p{player} hand {v.hand_number} scores {list(v.scores)} turn {v.current_player}"
            f"{' draw' if self._m.drawing else ''} | mine {' '.join(tile_str(t) for t in v.hand)}"
            f" | line {line} | sizes {list(v.hand_sizes)} bone {v.boneyard_size}/{v.drawable}"
            f" | voids {list(v.voids)} lead {v.lead_tile}"
        )

    def information_text(self, player: int) -> str:
        """The match from ``player``'s seat with perfect recall."""
        parts = [f"p{player}"]
        own: list[int] = []
        for kind, seat, value in self._m.events:
            if kind == "deal":
                if seat == player:
                    own.append(value)
                continue
            if own:  # the player's dealt tiles, in one (sorted) entry
                parts.append("hand " + " ".join(_TILE_TEXT[t] for t in sorted(own)))
                own = []
            if kind == "redeal":
                parts.append("redeal")
            elif kind == "draw":
                parts.append(f"{seat}:got {_TILE_TEXT[value]}" if seat == player else f"{seat}:got")
            else:
                parts.append(f"{seat}:{_action_text(value)}")
        if own:
            parts.append("hand " + " ".join(_TILE_TEXT[t] for t in sorted(own)))
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


class BergenObserver:
    """OpenSpiel's observer interface: one flat tensor with named views, and strings."""

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType, params: Any) -> None:
        if params:
            raise ValueError(f"the bergen observer takes no parameters, got {params}")
        if iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER or not (
            iig_obs_type.public_info
        ):
            raise ValueError(
                "the bergen observer gives one player's view (public and own private "
                f"information) only, got {iig_obs_type}"
            )
        self.perfect_recall = iig_obs_type.perfect_recall
        self.tensor = np.zeros(OBS_SIZE, dtype=np.float32)
        self.dict = Encoder.views(self.tensor)

    def set_from(self, state: BergenGameState, player: int) -> None:
        self.tensor[:] = state.observation_array(player)

    def string_from(self, state: BergenGameState, player: int) -> str:
        if self.perfect_recall:
            return state.information_text(player)
        return state.observation_text(player)


pyspiel.register_game(_GAME_TYPE, BergenGame)
