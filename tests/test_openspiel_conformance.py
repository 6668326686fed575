"""OpenSpiel's own checkers on the ``bergen`` game, run as shipped (nothing wrapped or filtered).

- ``pyspiel.random_sim_test(serialize=True)`` on every preset and seating, on changed options,
  and with an observer of every ``IIGObservationType``;
- ``load_game(str(game))`` and ``serialize_game_and_state`` / ``deserialize_game_and_state``
  round trips;
- what each observation type shows and hides;
- ``generate_playthrough`` on the small variant, compared with ``tests/playthroughs/
  bergen_small.txt`` as OpenSpiel compares ``integration_tests/playthroughs/``. After a change
  that is meant to alter it, regenerate it with ``python tests/test_openspiel_conformance.py``
  and review the diff.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from absl import flags  # noqa: E402  (installed with open_spiel)
from open_spiel.python.algorithms import generate_playthrough  # noqa: E402
from open_spiel.python.observation import make_observation  # noqa: E402

from bergen_env.errors import InvalidOptionError  # noqa: E402
from bergen_env.openspiel import (  # noqa: E402
    FLAG_PARAMETERS,
    SMALL_GAME,
    BergenGame,
    game_parameters,
)
from bergen_env.rules import PRESETS, Rules  # noqa: E402

PLAYTHROUGH = Path(__file__).parent / "playthroughs" / "bergen_small.txt"
PLAYTHROUGH_SEED = 0
#: (players, partnerships): every seating; -1 lets the preset decide (individual play with 2 or
#: 3 players), 0 and 1 choose it with 4.
SEATINGS = ((2, -1), (3, -1), (4, 0), (4, 1))
#: Options changed from each preset's values (played with three seats).
CHANGED = {
    "standard": {"target": 31, "reserve": 1, "lead": "highest", "end_caps": 0, "voluntary_draw": 1},
    "traditional": {"target": 7, "domino_points": 3, "leftover_penalty": 2, "blocked_rule": "pips"},
    "double_set": {"target": 9, "hand_size": 4, "end_caps": 1, "lead": "lowest"},
    "draw": {"single_hand": 0, "target": 40, "reserve": 2, "lead": "highest"},
    "fives": {"target": 31, "reserve": 0, "lead": "highest_any"},
}
PRIVATE = (
    pyspiel.PrivateInfoType.NONE,
    pyspiel.PrivateInfoType.SINGLE_PLAYER,
    pyspiel.PrivateInfoType.ALL_PLAYERS,
)
OBS_TYPES = [
    pyspiel.IIGObservationType(public_info=public, perfect_recall=recall, private_info=private)
    for public, recall, private in itertools.product((False, True), (False, True), PRIVATE)
]


def obs_id(t: pyspiel.IIGObservationType) -> str:
    public = "public" if t.public_info else "nopublic"
    recall = "recall" if t.perfect_recall else "norecall"
    return f"{public}-{t.private_info.name.lower()}-{recall}"


def seating_id(value: tuple) -> str:
    return f"{value[0]}p" + {-1: "", 0: "-individual", 1: "-partnerships"}[value[1]]


@pytest.mark.parametrize("seating", SEATINGS, ids=seating_id)
@pytest.mark.parametrize("preset", PRESETS)
def test_random_sim_test_with_serialization(preset: str, seating: tuple) -> None:
    players, partnerships = seating
    game = pyspiel.load_game(
        f"bergen(rules={preset},num_players={players},partnerships={partnerships})"
    )
    expected = Rules.preset(
        preset, num_players=players, partnerships=None if partnerships < 0 else bool(partnerships)
    )
    assert game.variant.rules == expected
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)


def test_random_sim_test_on_the_small_variant() -> None:
    game = pyspiel.load_game(SMALL_GAME)
    pyspiel.random_sim_test(game, num_sims=20, serialize=True, verbose=False)


def rules_of(preset: str, changes: dict) -> Rules:
    overrides = {k: bool(v) if k in FLAG_PARAMETERS else v for k, v in changes.items()}
    return Rules.preset(preset, num_players=3, **overrides)


@pytest.mark.parametrize("preset", PRESETS)
def test_changed_options_load_from_the_game_string(preset: str) -> None:
    changes = CHANGED[preset]
    expected = rules_of(preset, changes)
    assert all(
        getattr(expected, k) != getattr(Rules.preset(preset, num_players=3), k) for k in changes
    )
    text = ",".join(f"{k}={v}" for k, v in changes.items())
    from_dict = pyspiel.load_game("bergen", {"rules": preset, "num_players": 3, **changes})
    from_text = pyspiel.load_game(f"bergen(rules={preset},num_players=3,{text})")
    assert from_dict.variant.rules == from_text.variant.rules == expected
    again = pyspiel.load_game(str(from_dict))
    assert str(again) == str(from_dict) == str(from_text)
    assert again.variant.rules == expected
    assert pyspiel.load_game("bergen", game_parameters(expected)).variant.rules == expected
    pyspiel.random_sim_test(again, num_sims=1, serialize=True, verbose=False)


def test_the_game_string_names_every_option() -> None:
    game = pyspiel.load_game("bergen(rules=fives,num_players=4)")
    params = game.get_parameters()
    assert set(params) == set(game.get_type().parameter_specification)
    assert (params["partnerships"], params["target"], params["reserve"]) == (1, 61, 1)
    assert params["lead"] == "rotate" and params["end_caps"] == 0


def random_states(game, seed: int):
    """Every state of one random match, chance outcomes drawn by their probabilities."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    yield state
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state = state.child(int(rng.choice(outcomes, p=probs)))
        else:
            state = state.child(int(rng.choice(state.legal_actions())))
        yield state


@pytest.mark.parametrize(
    "game_string", [SMALL_GAME, "bergen(rules=fives,num_players=4,target=20,reserve=0)"]
)
def test_serialize_round_trip(game_string: str) -> None:
    game = pyspiel.load_game(game_string)
    states = list(random_states(game, seed=5))
    for state in states[::3] + states[-1:]:  # the terminal state included
        text = pyspiel.serialize_game_and_state(game, state)
        game2, state2 = pyspiel.deserialize_game_and_state(text)
        assert str(game2) == str(game)
        assert str(state2) == str(state)
        assert state2.history() == state.history()
        assert state2.is_terminal() == state.is_terminal()
        assert state2.returns() == state.returns()
        for p in range(game.num_players()):
            assert state2.information_state_string(p) == state.information_state_string(p)
            assert state2.observation_tensor(p) == state.observation_tensor(p)
            assert state2.information_state_tensor(p) == state.information_state_tensor(p)
        if not state2.is_terminal():  # the restored state plays on like the original
            after = states[states.index(state) + 1]
            assert str(state2.child(after.history()[-1])) == str(after)
    assert states[-1].is_terminal()


@pytest.mark.parametrize("obs_type", OBS_TYPES, ids=obs_id)
def test_random_sim_test_with_every_observer(obs_type: pyspiel.IIGObservationType) -> None:
    game = pyspiel.load_game("bergen(num_players=3,target=6)")
    observer = game.make_observer(obs_type, {})
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False, observer=observer)


@pytest.mark.parametrize("obs_type", OBS_TYPES, ids=obs_id)
def test_observer_views_tile_the_tensor(obs_type: pyspiel.IIGObservationType) -> None:
    game = pyspiel.load_game("bergen(rules=double_set,num_players=4,partnerships=1)")
    obs = make_observation(game, obs_type)
    assert sum(v.size for v in obs.dict.values()) == obs.tensor.size
    for state in itertools.islice(random_states(game, seed=1), 0, 400, 9):
        for p in range(game.num_players()):
            obs.set_from(state, p)
            assert np.isfinite(obs.tensor).all()
            assert isinstance(obs.string_from(state, p), str)


def test_default_observers_are_openspiels_observation_and_information_state() -> None:
    game = pyspiel.load_game("bergen(num_players=3)")
    observation = make_observation(game, pyspiel.IIGObservationType(perfect_recall=False))
    info = make_observation(game, pyspiel.IIGObservationType(perfect_recall=True))
    for state in itertools.islice(random_states(game, seed=2), 0, 200, 5):
        for p in range(3):
            observation.set_from(state, p)
            info.set_from(state, p)
            assert list(observation.tensor) == state.observation_tensor(p)
            assert list(info.tensor) == state.information_state_tensor(p)
            assert observation.string_from(state, p) == state.observation_string(p)
            assert info.string_from(state, p) == state.information_state_string(p)


def decision_states(game, seeds, every: int = 3):
    for seed in seeds:
        for i, state in enumerate(random_states(game, seed)):
            if i % every == 0 and not state.is_chance_node() and not state.is_terminal():
                yield state


def observed(obs, state, player) -> tuple[bytes, str]:
    obs.set_from(state, player)
    return obs.tensor.tobytes(), obs.string_from(state, player)


@pytest.mark.parametrize(
    "game_string", ["bergen(num_players=2)", "bergen(rules=draw,num_players=4)"]
)
def test_what_each_observation_type_hides(game_string: str) -> None:
    """States that differ only in tiles a player cannot see (resampled from its view) look the
    same to its public and own observations; the other seats' private view tells them apart."""
    game = pyspiel.load_game(game_string)
    n = game.num_players()
    kinds = {obs_id(t): make_observation(game, t) for t in OBS_TYPES}
    public = [k for k in kinds if k.startswith("public-none")]
    own = [k for k in kinds if "single" in k]
    everyone = [k for k in kinds if "all_players" in k]
    told_apart = 0
    for state in decision_states(game, seeds=range(3)):
        seat = state.current_player()
        for i in range(3):
            sample = state.resample(seat, np.random.default_rng(i))
            for k in public:  # public: the same for every seat, hidden tiles ignored
                views = {observed(kinds[k], s, p) for s in (state, sample) for p in range(n)}
                assert len(views) == 1, k
            for k in own:  # the seat's own view: hidden tiles ignored
                assert observed(kinds[k], state, seat) == observed(kinds[k], sample, seat), k
            hidden = [state.held_tiles(p) != sample.held_tiles(p) for p in range(n)]
            if any(hidden):
                told_apart += 1
                for k in everyone:
                    assert observed(kinds[k], state, seat) != observed(kinds[k], sample, seat), k
                other = hidden.index(True)
                for k in own:
                    if "nopublic" in k and "norecall" in k:
                        assert observed(kinds[k], state, other) != observed(kinds[k], sample, other)
    assert told_apart >= 5


def test_private_observation_holds_no_public_information() -> None:
    """The private-only observation of a seat is a function of the tiles it holds."""
    game = pyspiel.load_game("bergen(num_players=3)")
    single, everyone = (
        make_observation(
            game,
            pyspiel.IIGObservationType(public_info=False, perfect_recall=False, private_info=kind),
        )
        for kind in (pyspiel.PrivateInfoType.SINGLE_PLAYER, pyspiel.PrivateInfoType.ALL_PLAYERS)
    )
    seen: dict[tuple, tuple] = {}
    for state in random_states(game, seed=3):
        hands = tuple(tuple(state.held_tiles(p)) for p in range(3))
        for p in range(3):
            key = ("single", p, hands[p])
            assert seen.setdefault(key, observed(single, state, p)) == observed(single, state, p)
            key = ("all", p, hands)
            assert seen.setdefault(key, observed(everyone, state, p)) == observed(
                everyone, state, p
            )
    assert len(seen) > 30


def test_information_state_tensor_has_perfect_recall_on_the_small_variant() -> None:
    """Over the small variant's whole tree, the acting player's information state tensor tells
    two decision nodes apart exactly when its (perfect-recall) string does."""
    game = pyspiel.load_game(SMALL_GAME)
    by_string: dict[str, tuple] = {}
    by_tensor: dict[tuple, str] = {}
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack += [state.child(a) for a, _ in state.chance_outcomes()]
            continue
        p = state.current_player()
        text, tensor = state.information_state_string(p), tuple(state.information_state_tensor(p))
        assert by_string.setdefault(text, tensor) == tensor
        assert by_tensor.setdefault(tensor, text) == text
        stack += [state.child(a) for a in state.legal_actions()]
    assert len(by_string) == 394  # docs/openspiel.md


def test_bad_parameter_names_get_the_closest_name() -> None:
    with pytest.raises(InvalidOptionError, match="'tagret' \\(did you mean 'target'\\?\\)"):
        BergenGame({"tagret": 3})
    with pytest.raises(InvalidOptionError, match="one parameter per rule option"):
        BergenGame({"options": "target=3,reserve=0"})
    # through load_game, OpenSpiel checks the names first and lists the valid ones
    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'options'.*reserve.*target"):
        pyspiel.load_game("bergen", {"options": "target=3"})


def test_playthrough_matches_the_kept_file() -> None:
    if not flags.FLAGS.is_parsed():  # what absltest.main() does before OpenSpiel's own test
        flags.FLAGS.mark_as_parsed()
    original, new = generate_playthrough.replay(str(PLAYTHROUGH))
    assert original.startswith(f"game: {SMALL_GAME}\n")
    assert new == original, "regenerate: python tests/test_openspiel_conformance.py"


if __name__ == "__main__":  # regenerate the playthrough file
    PLAYTHROUGH.parent.mkdir(exist_ok=True)
    PLAYTHROUGH.write_text(
        generate_playthrough.playthrough(SMALL_GAME, None, seed=PLAYTHROUGH_SEED)
    )
    print(f"wrote {PLAYTHROUGH}")
