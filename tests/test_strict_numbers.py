"""One strict number parser: every client text that becomes a number is ASCII digits (a '-' only where a
negative means something), bounded; and headers are built from validated values only.

Needs a real server process: a header the server cannot write shows only on a real socket (a status line
sent, then a dropped connection).
"""

from __future__ import annotations

import base64
import socket
import uuid
from fractions import Fraction

import pytest
import requests
from e2e_helpers import ADMIN_PASSWORD, Client, MakeServer, ServerProcess, play_duel

from craft_rules.crafting import InvalidRunsError, parse_runs
from craft_rules.number_text import decimal_number, rational_number, whole_number
from server.table.errors import ServerError, parse_count, parse_seconds

#: Text Python's int()/float() accept but no client needs: whitespace, signs, underscores, other digits.
LOOSE_WHOLE = ["1\n", " 1", "1 ", "+1", "1_0", "١", "٣", "²", "１", "0x1", "", "-"]
LOOSE_SECONDS = ["1e3", "nan", "inf", "-1", "+1", " 1", "1.", ".5", "1_0", "٣", "1.5.2", "1" * 19]


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(admin_password=ADMIN_PASSWORD)


@pytest.mark.parametrize("text", LOOSE_WHOLE)
def test_whole_numbers_are_ascii_digits_only(text: str) -> None:
    assert whole_number(text) is None and whole_number(text, negative=True) is None
    with pytest.raises(ServerError) as err:
        parse_count(text, "seat")
    assert err.value.code == "invalid_request" and err.value.status == 400


def test_whole_numbers_that_pass() -> None:
    assert parse_count("0", "n") == 0 and parse_count("12", "n") == 12 and parse_count(7, "n") == 7
    assert parse_count("-1", "after", negative=True) == -1
    for refused in ("-1", -1, True, 1.0, "9" * 19, 10**18):
        with pytest.raises(ServerError):
            parse_count(refused, "n")


@pytest.mark.parametrize("text", LOOSE_SECONDS)
def test_seconds_are_digits_with_one_optional_fraction(text: str) -> None:
    assert decimal_number(text) is None
    with pytest.raises(ServerError):
        parse_seconds(text, "wait")


def test_seconds_that_pass() -> None:
    assert parse_seconds("10", "wait") == 10.0 and parse_seconds("0.5", "wait") == 0.5


@pytest.mark.parametrize("text", ["١/٤", " 1/4", "1/4 ", "1_0", "+1", "²", "1/ 4", "0x10", "½", "1e+9999"])
def test_run_amounts_use_the_same_grammar(text: str) -> None:
    assert rational_number(text, 40) is None or text == "1e+9999"
    with pytest.raises(InvalidRunsError):
        parse_runs(text)


def test_run_amounts_that_pass() -> None:
    assert parse_runs("1/4") == Fraction(1, 4) and parse_runs("0.25") == Fraction(1, 4)
    assert parse_runs("1e-3") == Fraction(1, 1000) and parse_runs(0.5) == Fraction(1, 2)


def basic(password: str) -> str:
    return base64.b64encode(f"admin:{password}".encode()).decode()


@pytest.fixture(scope="module")
def game_id(server: ServerProcess) -> str:
    player = Client(server.url, f"N-{uuid.uuid4().hex[:6]}")
    try:
        return str(player.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]["game_id"])
    finally:
        player.close()


def query_targets(game_id: str) -> list[tuple[str, bool]]:
    """(path with a {} for the bad number, admin?) for every route that reads a number from the URL."""
    return [
        (f"/api/admin/games/{game_id}/export?seat={{}}", True),
        ("/api/admin/games?limit={}", True),
        (f"/api/games/{game_id}/view?seat={{}}", False),
        (f"/api/games/{game_id}/events?after={{}}", False),
        (f"/api/games/{game_id}/events?wait={{}}", False),
        ("/api/games?limit={}", False),
        ("/api/me/games?limit={}", False),
        (f"/api/games/{game_id}/replay?step={{}}", False),
        (f"/api/games/{game_id}/replay?turn={{}}", False),
    ]


# percent-encoded as a client would send them
BAD_QUERY_NUMBERS = [
    *["1%0A", "%D9%A1", "%201", "%2B1", "1_0", "%C2%B2", "%D9%A3", "1e3", "nan", "1%0D%0AX:%201"],
]


@pytest.mark.parametrize("number", BAD_QUERY_NUMBERS)
def test_number_texts_in_urls_are_invalid_request_never_500(
    server: ServerProcess, game_id: str, number: str
) -> None:
    for template, admin in query_targets(game_id):
        target = template.format(number)
        raw = raw_get_with_auth(server, target, admin)
        status_line, _, rest = raw.partition(b"\r\n")
        assert status_line.startswith(b"HTTP/1.1 400"), (target, raw[:300])
        head, _, body = rest.partition(b"\r\n\r\n")
        assert b"invalid_request" in body, (target, raw[:300])
        assert b"\nX:" not in head, (target, head)


def raw_get_with_auth(server: ServerProcess, target: str, admin: bool) -> bytes:
    auth = f"Authorization: Basic {basic(ADMIN_PASSWORD)}\r\n" if admin else ""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\r\n".encode())
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_export_file_names_are_built_from_the_parsed_seat_and_quoted(server: ServerProcess) -> None:
    p0, p1 = Client(server.url, f"E-{uuid.uuid4().hex[:6]}"), Client(server.url, f"F-{uuid.uuid4().hex[:6]}")
    try:
        game = p0.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]
        game_id = game["game_id"]
        p1.rest("POST", f"/api/games/{game_id}/join", {})
        p0.connect().call("join", {"game_id": game_id})
        p1.connect().call("join", {"game_id": game_id})
        play_duel(game_id, p0, p1)
        answer = requests.get(
            f"{server.url}/api/admin/games/{game_id}/export",
            params={"seat": "01"},
            auth=("admin", ADMIN_PASSWORD),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text[:200]
        assert answer.headers["Content-Disposition"] == f'attachment; filename="{game_id}-seat1.jsonl"'
        assert answer.text.count("\n") > 2
    finally:
        p0.close()
        p1.close()


def test_a_game_id_of_another_shape_never_reaches_the_header() -> None:
    from server.web.admin import attachment

    assert attachment("abc_DEF-12", ".jsonl") == 'attachment; filename="abc_DEF-12.jsonl"'
    for odd in ('a"b', "a\nb", "a;b", "a b", "é", "x" * 65):
        assert attachment(odd, ".jsonl") == 'attachment; filename="game.jsonl"'
