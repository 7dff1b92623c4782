"""The one name rule (server/table/names.py): names that hide or impersonate are refused, ordinary names of
every script are kept, and name_clash finds the seat a name could be mistaken for.

The refused names are the ones issue 18 item 7 found accepted; the real server refuses them at login.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
import requests
from e2e_helpers import MakeServer, ServerProcess, write_config

from server.table.config import SettingsError, load_settings
from server.table.names import InvalidName, name_clash, name_key, normalise_name

HIDING = {
    "Hangul filler": "\u3164",
    "halfwidth Hangul filler": "Ada\uffa0",
    "Hangul choseong filler": "\u115fAda",
    "Braille blank": "\u2800",
    "zero-width space": "A\u200bda",
    "combining grapheme joiner": "Ada\u034f",
    "variation selector on a letter": "Ada\ufe00",
    "line separator": "Ada\u2028Admin",
    "paragraph separator": "Ada\u2029",
    "bidi override": "\u202eAda",
    "combining marks only": "\u0301\u0301\u0301",
    "39 stacked marks": "a" + "\u0301" * 39,
    "four marks on one letter": "Ada\u0301\u0302\u0303\u0304",
    "tab": "Ada\tBo",
    "ideographic spaces only": "\u3000\u3000",
}
IMPERSONATING = {
    "Cyrillic А among Latin": "\u0410d\u0430",
    "Greek omicron in Bob": "B\u03bfb",
    "random bot": "random bot",
    "tom1 bot": "tom1 bot",
    "tom1bot": "tom1bot",
    "a policy id alone": "random",
    "a policy id, digits as letters": "T0M1",
    "LLM seat label": "llm:openai:gpt-4o bot",
    "Admin (server)": "Admin (server)",
    "admin in full-width letters": "\uff41\uff44\uff4d\uff49\uff4e",
    "server": "Server",
    "moderator": "Moderator Mo",
    "(you)": "Ada (you)",
    "Player 1 (you)": "Player 1 (you)",
    "Player 2": "Player 2",
    "Player 2 with a digit for l": "P1ayer 2",
}
ORDINARY = {
    "Latin": "Ada Lovelace",
    "Chinese": "李小龙",
    "Arabic": "محمد",
    "Hindi with vowel signs": "हिन्दी",
    "Vietnamese, two marks on a letter": "Nguyễn Thị Ánh Tuyết",
    "Vietnamese decomposed": "Nguye\u0302\u0303n",
    "pointed Hebrew": "שָׁלוֹם",
    "Russian": "Мария",
    "Greek": "Ελένη",
    "Japanese": "さくら・サクラ",
    "emoji": "Ada 🎲",
    "emoji with presentation selector": "❤️ Ada",
    "emoji with skin tone": "👍🏽 Bo",
    "flag": "🇫🇷 Zoé",
    "words near reserved ones": "Robot Abbot",
    "markup as text": "<b>Ada</b>",
}


@pytest.mark.parametrize("raw", HIDING.values(), ids=HIDING.keys())
def test_hiding_names_are_refused(raw: str) -> None:
    with pytest.raises(InvalidName):
        normalise_name(raw)


@pytest.mark.parametrize("raw", IMPERSONATING.values(), ids=IMPERSONATING.keys())
def test_impersonating_names_are_refused(raw: str) -> None:
    with pytest.raises(InvalidName):
        normalise_name(raw)


@pytest.mark.parametrize("raw", ORDINARY.values(), ids=ORDINARY.keys())
def test_ordinary_names_of_every_script_are_kept(raw: str) -> None:
    assert normalise_name(raw) == unicodedata.normalize("NFKC", raw)


def test_names_are_nfkc_normalised_and_spaces_collapsed() -> None:
    assert normalise_name("\uff21\uff44\uff41") == "Ada"  # full-width
    assert normalise_name("\ufb01ona") == "fiona"  # ligature
    assert normalise_name("  Ada \u3000 Lovelace ") == "Ada Lovelace"
    assert normalise_name("Nguye\u0302\u0303n") == "Nguyễn"


def test_bot_seats_and_tokens_may_read_as_bots_but_never_as_staff() -> None:
    assert normalise_name("random bot", kind="bot") == "random bot"
    assert normalise_name("llm bot 1", kind="agent") == "llm bot 1"
    for kind in ("human", "agent", "bot"):
        with pytest.raises(InvalidName):
            normalise_name("Admin (server)", kind=kind)  # type: ignore[arg-type]


def test_skeleton_keys_fold_case_look_alikes_and_punctuation() -> None:
    assert name_key("Ada") == name_key("ADA") == name_key("\u0410\u0434\u0430".replace("\u0434", "d"))
    assert name_key("B0b") == name_key("Bob")
    assert name_key("rnary") == name_key("Mary")
    assert name_key("A.d-a") == name_key("Ada")
    assert name_key("Ada") != name_key("Adam")


def test_name_clash_names_the_seat_or_the_reserved_word() -> None:
    assert name_clash("Ada", ["random bot", "ADA"]) == "ADA"
    assert name_clash("B0b", ["Bob"]) == "Bob"
    assert name_clash("\u0410da", ["Ada"]) == "Ada"  # an all-Cyrillic-looking start still clashes
    assert name_clash("Ada", ["Eve", "Adam"]) is None
    assert name_clash("Admin", []) == "admin"
    assert name_clash("Player 1", ["Ada"]) == "Player N"
    # a bot-like name is refused at join only for a person (agents' token names may say bot)
    assert name_clash("random bot", []) is None
    assert name_clash("random bot", [], kind="human") == "bot"


def test_hall_seat_names_from_settings_follow_the_rule(tmp_path: Path) -> None:
    def hall(name: str) -> dict[str, object]:
        seats = [{"kind": "bot", "bot": "random", "name": name}, {"kind": "open"}]
        return {"named": {"ruleset": "minecraft", "players": 2, "seats": seats}}

    assert load_settings(write_config(tmp_path / "ok", overrides={"halls": hall("random bot")}), environ={})
    for index, name in enumerate(("Admin (server)", "\u3164", "Player 1")):
        config = write_config(tmp_path / str(index), overrides={"halls": hall(name)})
        with pytest.raises(SettingsError, match="bot seat name"):
            load_settings(config, environ={})


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server()


@pytest.mark.parametrize(
    "raw",
    [HIDING["Hangul filler"], HIDING["line separator"], *IMPERSONATING.values()],
)
def test_the_server_refuses_them_at_login(server: ServerProcess, raw: str) -> None:
    answer = requests.post(server.url + "/api/login", json={"name": raw}, timeout=10)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_name"


def test_the_server_keeps_ordinary_names(server: ServerProcess) -> None:
    for raw in ("李小龙", "हिन्दी", "Nguyễn Thị Ánh Tuyết", "❤️ Ada", "\uff21\uff44\uff41"):
        answer = requests.post(server.url + "/api/login", json={"name": raw}, timeout=10)
        assert answer.status_code == 200, answer.text
        assert answer.json()["user"]["name"] == unicodedata.normalize("NFKC", raw)


@pytest.mark.parametrize(
    ("seated", "joining"), [("Twin-1a2b", "TWIN-1A2B"), ("Iris", "lris"), ("iris", "IRIS")]
)
def test_case_variants_clash_like_look_alikes(seated: str, joining: str) -> None:
    # capital I looks like l, small i does not: the two cases of a letter must share a class
    assert name_clash(joining, [seated]) == seated


def test_ordinary_different_names_do_not_clash() -> None:
    assert name_clash("Iris", ["Irif"]) is None
    assert name_clash("Sam", ["Tom", "Anna", "Lily"]) is None
