"""What a table keeps secret: the deals of matches still to be played, and whose links are whose.

Everything a player or a spectator can read (seat views, the spectator view, the finished
match's replay and frames) is searched for a number that deals the next match, the way the
server deals; the share box with every link must stay with the table's creator whatever seat a
rematch gives them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx2")

from starlette.testclient import TestClient  # noqa: E402
from test_web import play_through  # noqa: E402

from bergen_env.engine import BergenState  # noqa: E402
from bergen_env.rules import Rules  # noqa: E402
from bergen_env.web import Limits, TableManager  # noqa: E402
from bergen_env.web.app import create_app  # noqa: E402
from bergen_env.web.tables import SEED_BITS, Table, owner_token  # noqa: E402


def client_for() -> tuple[TestClient, TableManager]:
    manager = TableManager(
        agents={"greedy": "greedy"}, pace=0, limits=Limits(max_hands=1, creations_per_minute=100)
    )
    return TestClient(create_app(manager), client=("203.0.113.9", 40000)), manager


def integers(value: Any) -> Iterator[int]:
    """Every integer in a JSON value, and every run of digits in its strings."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, str):
        digits = "".join(c if c.isdigit() else " " for c in value).split()
        yield from (int(d) for d in digits if len(d) < 60)
    elif isinstance(value, dict):
        for v in value.values():
            yield from integers(v)
    elif isinstance(value, list):
        for v in value:
            yield from integers(v)


def first_hands(rules: Rules, seed: int, key: tuple[int, ...]) -> list[list[int]]:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))
    state = BergenState(rules, seed=rng)
    return [sorted(state.hand_tiles(s)) for s in range(rules.num_players)]


def readable(client: TestClient, links: dict[str, Any]) -> list[Any]:
    """What the players and a spectator of a table can read now."""
    out: list[Any] = [client.get(f"/api{s['link']}").json() for s in links["seats"] if s["link"]]
    out.append(client.get(f"/api/w/{links['table']}").json())
    replay = client.get(f"/api/w/{links['table']}/replay")
    if replay.status_code == 200:
        out.append(json.loads(replay.text))
        out.append(client.get(f"/api/w/{links['table']}/frames").json())
    with client.websocket_connect(f"/ws/w/{links['table']}") as ws:
        out.append(ws.receive_json())
    return out


@pytest.mark.parametrize("seats", [["person", "person"], ["person", "greedy"]])
def test_nothing_a_player_or_spectator_reads_predicts_the_next_deal(seats: list[str]) -> None:
    """A match played to its end, then a rematch: no number anyone at the table could read
    deals the rematch (as the match's own seed, or as a table seed spawning match 1)."""
    client, manager = client_for()
    with client:
        links = client.post("/api/tables", json={"seats": seats}).json()
        tokens = [s["link"][3:] for s in links["seats"] if s["link"]]
        play_through(client, tokens)
        seen = readable(client, links)
        finished = seen[-3]
        assert finished["format"] == "bergen-replay/1"  # its own seed may show (for --verify)
        assert client.post(f"/api/s/{tokens[0]}/rematch", json={}).status_code == 200
        table, _ = manager.by_token(tokens[0])
        rules = table.rules
        dealt = [sorted(h) for h in table.recorder.current_hand["deal"]["hands"]]
        seen += readable(client, links)
        numbers = {n for value in seen for n in integers(value) if n >= 0}
        assert finished["seed"] in numbers
        for n in numbers:
            for key in ((0,), (0, 1)):
                assert first_hands(rules, n, key) != dealt, (n, key)
        assert table.row.seed not in numbers and table.row.seed != finished["seed"]
        assert table.row.seed < 2**SEED_BITS


def test_seeds_are_fresh_and_wide() -> None:
    """Every match draws its own seed from the OS: wide enough not to be tabulated."""
    client, manager = client_for()
    with client:
        seeds = set()
        for _ in range(20):
            links = client.post("/api/tables", json={"seats": ["person", "person"]}).json()
            seeds.add(manager.tables[links["table"]].row.seed)
            manager.tables.clear()
        assert len(seeds) == 20 and max(seeds).bit_length() > 100


@pytest.mark.parametrize("seats", [["person", "person"], ["person", "greedy", "person"]])
def test_the_share_box_stays_with_its_creator_across_rematches(seats: list[str]) -> None:
    """Seats rotate at every rematch; the links go to the creator only, each link still plays
    for the person it was given to."""
    client, manager = client_for()
    with client:
        body = {"seats": seats, "num_players": len(seats)}
        links = client.post("/api/tables", json=body).json()
        tokens = [s["link"][3:] for s in links["seats"] if s["link"]]
        creator, friends = tokens[0], tokens[1:]
        for match in range(4):
            mine = client.get(f"/api/s/{creator}").json()
            assert mine["match"] == match
            share = mine["share"]
            assert sorted(s["link"] for s in share["seats"] if s["link"]) == sorted(
                f"/s/{t}" for t in tokens
            )
            for s in share["seats"]:  # each link's seat number is its holder's seat now
                if s["link"]:
                    assert client.get(f"/api{s['link']}").json()["seat"] == s["seat"]
            for friend in friends:
                assert "share" not in client.get(f"/api/s/{friend}").json(), match
            if match == 3:
                break
            play_through(client, tokens)
            answer = client.post(f"/api/s/{friends[0]}/rematch", json={})
            assert answer.status_code == 200 and "share" not in answer.json()
        table, _ = manager.by_token(creator)
        table.row.owner = None  # a row stored before owners were: derived from the rotation
        assert owner_token(table.row) == creator
        assert "share" in client.get(f"/api/s/{creator}").json()
        assert "share" not in client.get(f"/api/s/{friends[0]}").json()


def test_a_row_stored_before_fresh_seeds_deals_its_match_as_it_did() -> None:
    """A live table stored by an older server (one seed for the table, no owner) is restored
    with the same deal, its creator found from the rotation."""
    client, manager = client_for()
    with client:
        links = client.post("/api/tables", json={"seats": ["person", "person"]}).json()
        table = manager.tables[links["table"]]
        creator = links["seats"][0]["link"][3:]
        row = dataclasses.replace(
            table.row,
            match=1,
            kinds=table.row.kinds[::-1],
            tokens=table.row.tokens[::-1],
            seed=12345,
            fresh_seeds=False,
            owner=None,
        )
        old = Table(
            row, {}, store=manager.store, limits=manager.limits, pace=0, clock=manager.clock
        )
        expected = first_hands(old.rules, 12345, (0, 1))
        dealt = [sorted(h) for h in old.recorder.current_hand["deal"]["hands"]]
        assert dealt == expected and old.seats[old.host].token == creator
