"""The log's lines as a reader at seat 1 should read them, in every language of the page.

Each case is a move or a hand's end, seen from seat index 0 of a two-player game against
``greedy`` (``"you"`` cases: the reader's own seat; ``"other"``: seat index 1), or of a
four-player partnership game. :data:`EXPECTED` holds the one grammatical line per language;
``test_web.py`` checks the catalog's texts and ``test_web_browser.py`` the page's own code
(``describe.js``) against it.
"""

from __future__ import annotations

from typing import Any

#: Case name -> (what it is, the message's game, the event or hand result).
CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "play_you": ("event", "solo", {"seat": 0, "kind": "play", "tile": [3, 5], "end": 0}),
    "play_other": ("event", "solo", {"seat": 1, "kind": "play", "tile": [3, 5], "end": 1}),
    "draw_you": ("event", "solo", {"seat": 0, "kind": "draw"}),
    "draw_other": ("event", "solo", {"seat": 1, "kind": "draw"}),
    "pass_you": ("event", "solo", {"seat": 0, "kind": "pass"}),
    "pass_other": ("event", "solo", {"seat": 1, "kind": "pass"}),
    "open_you": ("event", "solo", {"seat": 0, "kind": "play", "tile": [6, 6], "opens": True}),
    "double_you": ("event", "solo", {"seat": 0, "kind": "double_play", "tile": [4, 4]}),
    "domino_you": (
        "result",
        "solo",
        {"reason": "domino", "seat": 0, "winner": 0, "points": [2, 0]},
    ),
    "domino_other": (
        "result",
        "solo",
        {"reason": "domino", "seat": 1, "winner": 1, "points": [0, 2]},
    ),
    "target_you": (
        "result",
        "solo",
        {"reason": "target", "seat": 0, "winner": 0, "points": [2, 0]},
    ),
    "blocked_you": (
        "result",
        "solo",
        {"reason": "blocked", "winner": 0, "points": [2, 0], "blocked_rule": "german"},
    ),
    "blocked_other": (
        "result",
        "solo",
        {"reason": "blocked", "winner": 1, "points": [0, 2], "blocked_rule": "german"},
    ),
    "domino_team_you": (
        "result",
        "teams",
        {"reason": "domino", "seat": 0, "winner": 0, "points": [2, 0]},
    ),
    "target_team_other": (
        "result",
        "teams",
        {"reason": "target", "seat": 1, "winner": 1, "points": [0, 2]},
    ),
}

#: The reader's message for each game of :data:`CASES` (what describe.js reads of it).
GAMES: dict[str, dict[str, Any]] = {
    "solo": {
        "seat": 0,
        "game": {"partnerships": False, "side_of": [0, 1], "blocked_rule": "german"},
        "seats": [{"seat": 0, "kind": "person"}, {"seat": 1, "kind": "greedy"}],
    },
    "teams": {
        "seat": 0,
        "game": {"partnerships": True, "side_of": [0, 1, 0, 1], "blocked_rule": "pips"},
        "seats": [{"seat": i, "kind": "greedy" if i else "person"} for i in range(4)],
    },
}

#: Language -> case -> the line (for a hand's end: its last line, the one that names who won).
EXPECTED: dict[str, dict[str, str]] = {
    "en": {
        "play_you": "You played [3|5] on the left",
        "play_other": "Seat 2 (greedy) played [3|5] on the right",
        "draw_you": "You drew a tile",
        "draw_other": "Seat 2 (greedy) drew a tile",
        "pass_you": "You passed",
        "pass_other": "Seat 2 (greedy) passed",
        "open_you": "You opened with [6|6]",
        "double_you": "You played both [4|4]",
        "domino_you": "You went out (domino): +2.",
        "domino_other": "Seat 2 (greedy) went out (domino): +2.",
        "target_you": "You reached the target in the middle of the hand.",
        "blocked_you": "You won the blocked hand: +2.",
        "blocked_other": "Blocked hand won by Seat 2 (greedy): +2.",
        "domino_team_you": "You went out (domino). Your team (seats 1+3): +2.",
        "target_team_other": "Team 2 (seats 2+4) reached the target in the middle of the hand.",
    },
    "fi": {
        "play_you": "Sinä pelasit [3|5] vasempaan päähän",
        "play_other": "Paikka 2 (ahne) pelasi [3|5] oikeaan päähän",
        "draw_you": "Sinä nostit laatan",
        "draw_other": "Paikka 2 (ahne) nosti laatan",
        "pass_you": "Sinä passasit",
        "pass_other": "Paikka 2 (ahne) passasi",
        "open_you": "Sinä aloitit laatalla [6|6]",
        "double_you": "Sinä pelasit molemmat [4|4]",
        "domino_you": "Sinä pääsit laatoistasi (domino): +2.",
        "domino_other": "Paikka 2 (ahne) pääsi laatoistaan (domino): +2.",
        "target_you": "Sinä saavutit tavoitteen kesken jaon.",
        "blocked_you": "Sinä voitit tukkeutuneen jaon: +2.",
        "blocked_other": "Tukkeutuneen jaon voitti Paikka 2 (ahne): +2.",
        "domino_team_you": "Sinä pääsit laatoistasi (domino). Tiimisi (paikat 1+3): +2.",
        "target_team_other": "Tiimi 2 (paikat 2+4) saavutti tavoitteen kesken jaon.",
    },
    "nl": {
        "play_you": "Jij speelde [3|5] aan de linker kant",
        "play_other": "Plaats 2 (gretig) speelde [3|5] aan de rechter kant",
        "draw_you": "Jij pakte een steen",
        "draw_other": "Plaats 2 (gretig) pakte een steen",
        "pass_you": "Jij paste",
        "pass_other": "Plaats 2 (gretig) paste",
        "open_you": "Jij opende met [6|6]",
        "double_you": "Jij speelde beide [4|4]",
        "domino_you": "Jij bent uit (domino): +2.",
        "domino_other": "Plaats 2 (gretig) is uit (domino): +2.",
        "target_you": "Jij bereikte het doel midden in de ronde.",
        "blocked_you": "Jij wint de vastgelopen ronde: +2.",
        "blocked_other": "Vastgelopen ronde gewonnen door Plaats 2 (gretig): +2.",
        "domino_team_you": "Jij bent uit (domino). Jouw team (plaatsen 1+3): +2.",
        "target_team_other": "Team 2 (plaatsen 2+4) bereikte het doel midden in de ronde.",
    },
    "cs": {
        "play_you": "Hrajete [3|5] na levý konec",
        "play_other": "Hráč 2 (hladový) hraje [3|5] na pravý konec",
        "draw_you": "Lížete si kámen",
        "draw_other": "Hráč 2 (hladový) si líže kámen",
        "pass_you": "Pasujete",
        "pass_other": "Hráč 2 (hladový) pasuje",
        "open_you": "Zahajujete kamenem [6|6]",
        "double_you": "Hrajete oba [4|4]",
        "domino_you": "Vykládáte poslední kámen (domino): +2.",
        "domino_other": "Hráč 2 (hladový) vykládá poslední kámen (domino): +2.",
        "target_you": "Dosahujete cíle uprostřed kola.",
        "blocked_you": "Zablokované kolo vyhráváte: +2.",
        "blocked_other": "Zablokované kolo vyhrává Hráč 2 (hladový): +2.",
        "domino_team_you": "Vykládáte poslední kámen (domino). Váš tým (místa 1+3): +2.",
        "target_team_other": "Tým 2 (místa 2+4) dosahuje cíle uprostřed kola.",
    },
    "ru": {
        "play_you": "Вы выложили [3|5] на левый конец",
        "play_other": "Игрок 2 (жадный) выложил [3|5] на правый конец",
        "draw_you": "Вы взяли кость",
        "draw_other": "Игрок 2 (жадный) взял кость",
        "pass_you": "Вы пропустили ход",
        "pass_other": "Игрок 2 (жадный) пропустил ход",
        "open_you": "Вы начали с [6|6]",
        "double_you": "Вы выложили оба [4|4]",
        "domino_you": "Вы вышли (домино): +2.",
        "domino_other": "Игрок 2 (жадный) вышел (домино): +2.",
        "target_you": "Вы достигли цели посреди кона.",
        "blocked_you": "Вы выиграли «рыбу»: +2.",
        "blocked_other": "«Рыбу» выигрывает Игрок 2 (жадный): +2.",
        "domino_team_you": "Вы вышли (домино). Ваша команда (места 1+3): +2.",
        "target_team_other": "Цель достигнута посреди кона: Команда 2 (места 2+4).",
    },
}

#: The catalog text each case reads and its fields (the reader's own seat: the ``_you`` text).
KEYS: dict[str, tuple[str, dict[str, Any]]] = {
    "play_you": ("ev_play_you", {"tile": "[3|5]", "end": ("left",)}),
    "play_other": ("ev_play", {"who": ("seat",), "tile": "[3|5]", "end": ("right",)}),
    "draw_you": ("ev_draw_you", {}),
    "draw_other": ("ev_draw", {"who": ("seat",)}),
    "pass_you": ("ev_pass_you", {}),
    "pass_other": ("ev_pass", {"who": ("seat",)}),
    "open_you": ("ev_open_you", {"tile": "[6|6]"}),
    "double_you": ("ev_double_you", {"tile": "[4|4]"}),
    "domino_you": ("end_domino_you", {"p": 2}),
    "domino_other": ("end_domino", {"who": ("seat",), "p": 2}),
    "target_you": ("end_target_you", {}),
    "blocked_you": ("end_blocked_win_you", {"p": 2}),
    "blocked_other": ("end_blocked_win", {"side": ("seat",), "p": 2}),
    "domino_team_you": ("end_domino_team_you", {"side": ("your_team",), "p": 2}),
    "target_team_other": ("end_target", {"side": ("team",)}),
}
