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
    "ZWNJ between Latin letters": "A\u200cda",
    "ZWJ between Latin letters": "A\u200dda",
    "ZWNJ at the end": "Ada\u200c",
    "ZWJ after a Persian letter (no virama)": "\u0639\u0644\u06cc\u200d\u0631\u0636\u0627",
    "ZWNJ after a virama, then nothing": "\u0915\u094d\u200c",
    "emoji joined by ZWJ": "\U0001f468\u200d\U0001f469\u200d\U0001f467 Ada",
}
#: Names with no letter or digit: they reduced to an empty key (all clashing with each other), and a person
#: named "🤖" read as a bot.
EMPTY_LOOKING = {"full stop": ".", "hyphen": "-", "dots": "...", "robot": "🤖", "heart": "❤️"}
IMPERSONATING = {
    "Cyrillic А among Latin": "\u0410d\u0430",
    "Greek omicron in Bob": "B\u03bfb",
    "random bot": "random bot",
    "tom1 bot": "tom1 bot",
    "tom1bot": "tom1bot",
    "a policy id alone": "random",
    "a policy id in capitals": "TOM1",
    "a policy id, small": "tom1",
    "a policy id in Cyrillic look-alikes": "\u0422\u041e\u041c1 \u0412\u041e\u0422",
    "admin, a digit for i": "Adm1n",
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
    "Persian with ZWNJ": "\u0639\u0644\u06cc\u200c\u0631\u0636\u0627",  # علی‌رضا
    "Persian with ZWNJ after dal": "\u0645\u062d\u0645\u062f\u200c\u062d\u0633\u06cc\u0646",  # محمد‌حسین
    "Sinhala with ZWJ after al-lakuna": "\u0dc1\u0dca\u200d\u0dbb\u0dd3 \u0dbd\u0d82\u0d9a\u0dcf",
    "Hindi with ZWNJ after a virama": "\u0915\u094d\u200c\u0937",
    # names that read as bot ids by skeleton (i/l/1 and o/0 fold together) but are names
    "Tomi": "Tomi",
    "Toml": "Toml",
    "Tomo": "Tomo",
    "Ilm": "Ilm",
    "a zero for the o of a policy id": "T0M1",
    "Russian word here": "\u0412\u043e\u0442",
    "Adam": "Adam",
}
#: Real names from many scripts (checked by hand against the rule's refusals).
REAL_NAMES = [
    "José García",
    "François Müller",
    "Søren Kierkegaard",
    "Łukasz Żółć",
    "Đặng Thị Hồng",
    "Ngô Bảo Châu",
    "İsmail Çelik",
    "Björk Guðmundsdóttir",
    "Þórður",
    "Siobhán Ní Bhriain",
    "O'Brien",
    "Mary-Jane",
    "Zoë",
    "Dvořák",
    "Ștefan",
    "Lili",
    "Ivo",
    "Olli",
    "Timo",
    "Ilona",
    "Nico",
    "Иван Петров",
    "Владимир",
    "Ёлка",
    "Олена",
    "Γιώργος",
    "Σωκράτης",
    "نرگس",
    "عبدالله",
    "فاطمة الزهراء",
    "דוד",
    "יִצְחָק",
    "राम",
    "श्रीनिवास",
    "অর্জুন",
    "প্রিয়াঙ্কা",
    "ஸ்ரீனிவாசன்",
    "తెలుగు",
    "ಕನ್ನಡ",
    "മലയാളം",
    "සමන්",
    "สมชาย",
    "ສົມສັກ",
    "မြန်မာ",
    "ខ្មែរ",
    "ქეთევან",
    "Արամ",
    "ኢትዮጵያ",
    "ᏣᎳᎩ",
    "王芳",
    "田中太郎",
    "김민준",
    "Rūta",
    "X Æ A-12",
    "R2-D2",
    "Agent 47",
    "J.R.R. Tolkien",
    "Lilo",
    "Illo",
    "Ilya",
    "Io",
    "Li",
]


@pytest.mark.parametrize("raw", HIDING.values(), ids=HIDING.keys())
def test_hiding_names_are_refused(raw: str) -> None:
    with pytest.raises(InvalidName):
        normalise_name(raw)


@pytest.mark.parametrize("raw", IMPERSONATING.values(), ids=IMPERSONATING.keys())
def test_impersonating_names_are_refused(raw: str) -> None:
    with pytest.raises(InvalidName):
        normalise_name(raw)


@pytest.mark.parametrize("raw", EMPTY_LOOKING.values(), ids=EMPTY_LOOKING.keys())
def test_names_without_a_letter_or_digit_are_refused(raw: str) -> None:
    for kind in ("human", "agent", "bot"):
        with pytest.raises(InvalidName, match="letter or digit"):
            normalise_name(raw, kind=kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", ORDINARY.values(), ids=ORDINARY.keys())
def test_ordinary_names_of_every_script_are_kept(raw: str) -> None:
    assert normalise_name(raw) == unicodedata.normalize("NFKC", raw)


@pytest.mark.parametrize("raw", REAL_NAMES)
def test_real_names_are_kept(raw: str) -> None:
    assert normalise_name(raw) == unicodedata.normalize("NFKC", raw)


def test_bot_ids_are_matched_on_the_text_and_look_alikes_only_across_scripts() -> None:
    for refused in ("tom1", "tom1bot", "tom1 bot", "TOM1", "Tom1-Bot", "tom0", "llm", "LLM 2"):
        with pytest.raises(InvalidName):
            normalise_name(refused)
    for kept in ("Tomi", "Toml", "Tomo", "Ilm", "ILM"):
        assert normalise_name(kept) == kept
    # a seat's name is still compared by skeleton with the other seats
    assert name_clash("Tomi", ["TOMl"]) == "TOMl"


def test_joiners_do_not_tell_two_names_apart() -> None:
    with_zwnj = "\u0645\u062d\u0645\u062f\u200c\u062d\u0633\u06cc\u0646"
    assert name_clash(with_zwnj, [with_zwnj.replace("\u200c", "")]) is not None


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
    [HIDING["Hangul filler"], HIDING["line separator"], *IMPERSONATING.values(), *EMPTY_LOOKING.values()],
)
def test_the_server_refuses_them_at_login(server: ServerProcess, raw: str) -> None:
    answer = requests.post(server.url + "/api/login", json={"name": raw}, timeout=10)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_name"


def test_the_server_keeps_ordinary_names(server: ServerProcess) -> None:
    for raw in (
        "李小龙",
        "हिन्दी",
        "Nguyễn Thị Ánh Tuyết",
        "❤️ Ada",
        "\uff21\uff44\uff41",
        ORDINARY["Persian with ZWNJ"],
        ORDINARY["Sinhala with ZWJ after al-lakuna"],
        "Tomi",
        "Ilm",
    ):
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
