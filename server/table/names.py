"""The one rule for every name a user or operator can set: display names, bot seat names, API token names,
hall seat names from settings.

A name is stored NFKC-normalised (so full-width, ligature and other compatibility forms read as what they
look like), trimmed, with each run of white space made one space, 1 to :data:`NAME_MAX_CHARS` characters.
Refused, each with a sentence saying what to change (:class:`InvalidName`, code ``invalid_name``):

- characters of Unicode category C: control characters (NUL, newlines, escapes), format characters (bidi
  overrides and isolates such as U+202E, zero-width spaces), private-use and unassigned code points; line
  and paragraph separators (U+2028, U+2029). The zero-width non-joiner and joiner (U+200C, U+200D) only
  where RFC 5892 Appendix A allows them, approximately (:func:`_joiner_in_context`): after a virama
  (Sinhala "ශ්‍රී"), or a ZWNJ between joining letters (Persian "علی‌رضا"); never between Latin letters;
- invisible characters that are not of category C: the rest of Default_Ignorable_Code_Point (Hangul fillers
  U+3164 / U+FFA0 / U+115F / U+1160, the combining grapheme joiner, Mongolian and other variation selectors
  except one emoji presentation selector after a symbol) and the blank U+2800 BRAILLE PATTERN BLANK;
- a name that starts with a combining mark (so one made of marks only), or more than
  :data:`MAX_MARKS_PER_BASE` marks on one character (counted decomposed: Vietnamese, Hindi vowel signs,
  Arabic and Hebrew pointing stay well under it; stacked "zalgo" marks do not);
- letters of more than one of the Latin, Greek and Cyrillic scripts in one name ("Аdа" with a Cyrillic А):
  these three scripts share look-alike letters, and no ordinary name mixes them, so the mix is refused
  outright rather than guessed at;
- a name without a letter or digit (".", "...", "🤖", "❤️"): nothing in it tells people apart;
- reserved words: "admin", "administrator", "moderator", "server", "system", "you" and "Player N" (the
  labels the pages and the agents' text use) as a word of the name, compared by :func:`name_key` (the
  confusable skeleton: "Adm1n" is "admin"); for a person's name also what reads as a bot: the word "bot",
  "bots" or "llm", or a registered bot policy id with or without "bot" ("random bot", "tom1bot", "TOM1"),
  compared on the text itself when it is ASCII ("Tomi", "Tomo" and "Ilm" are names, not "tom1", "tom0"
  and "llm") and by skeleton otherwise ("ТОМ1 ВОТ" in Cyrillic letters).

Two names clash (:func:`name_clash`) when their keys are equal: same confusable skeleton (Unicode's
confusables data, through the ``confusable-homoglyphs`` package), case folded, white space and punctuation
ignored (so two names differing only by a joiner clash). HTML stays plain text (pages escape it). Emoji
sequences joined with U+200D are refused (a ZWJ there follows no virama).
"""

from __future__ import annotations

import string
import unicodedata
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Literal

from confusable_homoglyphs import categories as script_categories
from confusable_homoglyphs import confusables as confusable_data

from craft_rules.errors import TradeCraftError

NAME_MAX_CHARS = 40
MAX_MARKS_PER_BASE = 3
"""Combining marks one character may carry (decomposed). Two cover Vietnamese (ệ = e + ̣ + ̂); three
cover pointed Hebrew and Arabic (a letter, a dagesh or shadda and a vowel sign)."""

NameKind = Literal["human", "agent", "bot"]
"""Who carries the name: a person's display name, an API client's token name, a bot seat's name."""

POLICY_ENTRY_POINTS = "tradecraft.policies"

# invisible characters outside category C: Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties)
# minus category C, which is refused whole; plus U+2800, a blank that is not ignorable but shows nothing
_INVISIBLE = frozenset(
    [
        *(0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0),
        *range(0x180B, 0x1810),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)
_EMOJI_SELECTORS = frozenset({0xFE0E, 0xFE0F})
_CONFUSABLE_SCRIPTS = frozenset({"LATIN", "GREEK", "CYRILLIC"})
_ZWNJ, _ZWJ = "\u200c", "\u200d"
_VIRAMA = 9  # the canonical combining class of viramas (Devanagari, Sinhala, Bengali, ...)
# scripts whose letters join cursively (Unicode's ArabicShaping.txt gives them Joining_Type D, R or L)
_JOINING_SCRIPTS = (
    *("ARABIC ", "SYRIAC ", "NKO ", "MANDAIC ", "MONGOLIAN ", "MANICHAEAN ", "PSALTER PAHLAVI "),
    *("PHAGS-PA ", "ADLAM ", "HANIFI ROHINGYA ", "SOGDIAN ", "OLD UYGHUR ", "CHORASMIAN "),
)
_ALWAYS_RESERVED = frozenset({"admin", "administrator", "moderator", "server", "system", "you"})
_BOT_WORDS = frozenset({"bot", "bots", "llm"})


class InvalidName(TradeCraftError, ValueError):
    """A name breaking the rule; the message says what to change."""

    code = "invalid_name"

    def __init__(self, message: str) -> None:
        super().__init__(self.code, message)


def normalise_name(raw: Any, what: str = "name", *, kind: NameKind = "human") -> str:
    """The name as stored, or :class:`InvalidName` naming the broken rule (see the module's text).

    ``kind``: who carries it; only a person's name may not read as a bot's."""
    if not isinstance(raw, str):
        raise InvalidName(f'Send the {what} as a string, e.g. "Ada".')
    # the length check first bounds the normalisation's work (NFKC expands a character 18-fold at most)
    if len(raw) > 4 * NAME_MAX_CHARS:
        raise InvalidName(f"A {what} has 1 to {NAME_MAX_CHARS} characters; choose a shorter one.")
    name = unicodedata.normalize("NFKC", raw)
    if any(unicodedata.category(ch) in ("Zl", "Zp") for ch in name):
        raise InvalidName(f"A {what} is one line: it cannot contain a line or paragraph separator.")
    if any(
        unicodedata.category(ch).startswith("C") and not _joiner_in_context(name, i)
        for i, ch in enumerate(name)
    ):
        raise InvalidName(
            f"A {what} cannot contain control (e.g. tab, newline), format (e.g. right-to-left override, "
            "zero-width space) or unassigned characters; a zero-width joiner or non-joiner only where its "
            "script uses one (after a virama, or between two joining letters such as Arabic ones)."
        )
    name = " ".join(name.split())  # only space separators are left to split at
    if not name or len(name) > NAME_MAX_CHARS:
        raise InvalidName(f"A {what} has 1 to {NAME_MAX_CHARS} characters; choose another one.")
    _check_visible(name, what)
    _check_marks(name, what)
    _check_scripts(name, what)
    if not any(unicodedata.category(ch)[0] in "LN" for ch in name):
        raise InvalidName(
            f"A {what} needs at least one letter or digit: symbols, punctuation and emoji alone do not "
            "tell people apart."
        )
    reserved = reserved_word(name, kind=kind)
    if reserved is not None:
        raise InvalidName(
            f"A {what} cannot be or look like {reserved!r}: the pages and the players use it to mean "
            "something else. Choose another one."
        )
    return name


def _joiner_in_context(name: str, index: int) -> bool:
    """Whether ``name[index]`` is a ZWNJ or ZWJ where RFC 5892 (Appendix A.1, A.2) allows one: after a
    virama (combining class 9: "ශ්‍රී", "क्‌ष"), or, for ZWNJ only, between two letters of a cursive-joining
    script, combining marks skipped ("علی‌رضا"). Python's ``unicodedata`` has no Joining_Type, so every
    letter of those scripts counts as joining on both sides: looser than the RFC for right-joining letters
    (ZWNJ after Arabic dal, as Persian writers type in "محمد‌حسین"), never looser between letters of other
    scripts (no joiner hides between Latin letters). Either joiner must be followed by a letter or mark:
    one at the end of a word joins nothing."""
    joiner = name[index]
    if joiner not in (_ZWNJ, _ZWJ):
        return False
    after = name[index + 1] if index + 1 < len(name) else ""
    if not after or unicodedata.category(after)[0] not in "LM":
        return False
    if index > 0 and unicodedata.combining(name[index - 1]) == _VIRAMA:
        return True
    if joiner == _ZWJ:
        return False
    before = next((ch for ch in reversed(name[:index]) if unicodedata.category(ch)[0] != "M"), "")
    after = next((ch for ch in name[index + 1 :] if unicodedata.category(ch)[0] != "M"), "")
    return _cursive_letter(before) and _cursive_letter(after)


def _cursive_letter(ch: str) -> bool:
    return (
        bool(ch)
        and unicodedata.category(ch)[0] == "L"
        and unicodedata.name(ch, "").startswith(_JOINING_SCRIPTS)
    )


def _check_visible(name: str, what: str) -> None:
    previous = ""
    for ch in name:
        point = ord(ch)
        if point in _EMOJI_SELECTORS and previous and unicodedata.category(previous) == "So":
            previous = ch  # an emoji's presentation selector ("❤️"), one only
            continue
        if point in _INVISIBLE:
            raise InvalidName(
                f"A {what} cannot contain invisible or blank characters (such as U+{point:04X}); "
                "use letters, digits or symbols that show."
            )
        previous = ch


def _check_marks(name: str, what: str) -> None:
    decomposed = unicodedata.normalize("NFD", name)
    if unicodedata.category(decomposed[0]).startswith("M"):
        raise InvalidName(f"A {what} starts with a letter, digit or symbol, not a combining mark.")
    run = 0
    for ch in decomposed:
        run = run + 1 if unicodedata.category(ch).startswith("M") else 0
        if run > MAX_MARKS_PER_BASE:
            raise InvalidName(
                f"A {what} has at most {MAX_MARKS_PER_BASE} accents or other combining marks on one "
                "character."
            )


def _check_scripts(name: str, what: str) -> None:
    scripts = {script_categories.alias(ch) for ch in name if ch.isalpha()} & _CONFUSABLE_SCRIPTS
    if len(scripts) > 1:
        mixed = " and ".join(sorted(s.title() for s in scripts))
        raise InvalidName(
            f"A {what} cannot mix {mixed} letters: they include look-alikes (Cyrillic А and Latin A). "
            "Write it in one of them."
        )


# ------------------------------------------------------------------------------------------ skeletons
@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype: one representative of the characters Unicode's confusables
    data says look alike (an ASCII letter where the class holds one), or the sequence it looks like ("m"
    reads as "rn")."""
    data: dict[str, list[dict[str, str]]] = confusable_data.confusables_data
    parent: dict[str, str] = {}

    def root(ch: str) -> str:
        while parent.get(ch, ch) != ch:
            grandparent = parent.get(parent[ch], parent[ch])
            parent[ch] = grandparent
            ch = grandparent
        return ch

    sequences: dict[str, str] = {}
    for wrapped, glyphs in data.items():
        key = wrapped.replace("\u200e", "")  # the data wraps right-to-left glyphs in marks
        for glyph in glyphs:
            other = glyph["c"].replace("\u200e", "")
            if len(key) == 1 and len(other) == 1:
                parent.setdefault(key, key)
                parent.setdefault(other, other)
                a, b = root(key), root(other)
                if a != b:
                    parent[a] = b
            elif len(key) == 1:  # a character and the sequence it looks like
                sequences[key] = other
            elif len(other) == 1:
                sequences[other] = key
    # Names are compared case-folded, so an ASCII letter's two cases are one class: without this "TWIN"
    # (I looks like l) and "twin" had different skeletons. Only ASCII: other scripts' case pairs chain
    # unrelated classes together (long s folds to s and looks like f).
    for upper in string.ascii_uppercase:
        for ch in (upper, upper.lower()):
            parent.setdefault(ch, ch)
        a, b = root(upper), root(upper.lower())
        if a != b:
            parent[a] = b
    members: dict[str, list[str]] = {}
    for ch in list(parent):
        members.setdefault(root(ch), []).append(ch)
    prototypes = {}
    for group in members.values():
        chosen = min(group, key=lambda c: (not c.isascii(), not c.isalpha(), not c.islower(), c))
        for ch in group:
            prototypes[ch] = chosen
    prototypes.update(sequences)
    return prototypes


def skeleton(text: str) -> str:
    """``text`` as it looks: decomposed, each character replaced by its confusable prototype, case folded,
    repeated until nothing changes ("Аdа", "ADA", "Ada" and "Αdα" share one)."""
    prototypes = _prototypes()
    current = text
    for _ in range(4):  # casefolding can uncover a new prototype (0 -> O -> o) once or twice
        mapped = "".join(prototypes.get(ch, ch) for ch in unicodedata.normalize("NFD", current)).casefold()
        if mapped == current:
            break
        current = mapped
    return current


def name_words(name: str) -> list[str]:
    """The skeleton's words: runs of letters, digits and marks (white space and punctuation split them)."""
    return _words(skeleton(unicodedata.normalize("NFKC", name)))


def plain_words(name: str) -> list[str]:
    """The words as written (NFKC), no look-alike folded: what bot ids are matched on."""
    return _words(unicodedata.normalize("NFKC", name))


def _words(text: str) -> list[str]:
    words, word = [], []
    for ch in text:
        if unicodedata.category(ch)[0] in "LMN" and ord(ch) not in _EMOJI_SELECTORS:
            word.append(ch)
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return words


def name_key(name: str) -> str:
    """What two names must differ in to be told apart: the skeleton without white space or punctuation."""
    return "".join(name_words(name))


@cache
def _bot_readings() -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """What a person's name may not read as: each bot word, and each registered bot policy id (entry
    points: read, never imported) alone or followed by "bot" or "bots"; as (the word to report, its plain
    forms, its skeleton keys)."""
    readings = [(word, (word,)) for word in sorted(_BOT_WORDS)]
    for entry in entry_points(group=POLICY_ENTRY_POINTS):
        bot = entry.name
        readings.append((f"{bot} bot", (bot, f"{bot} bot", f"{bot} bots")))
    return tuple(
        (
            label,
            frozenset("".join(plain_words(form)).casefold() for form in forms),
            frozenset(name_key(form) for form in forms),
        )
        for label, forms in readings
    )


def _reads_as(text: str, plain: frozenset[str], keys: frozenset[str]) -> bool:
    """Whether ``text`` (plain words joined) reads as one of a bot's forms. ASCII text must be that form
    exactly, case folded: by skeleton "Tomi" and "Toml" read as "tom1", "Tomo" as "tom0", "Ilm" as
    "llm", all ordinary names. Text with other characters can only look like an ASCII bot id through
    look-alikes ("ТОМ1 ВОТ" in Cyrillic), so it is compared by skeleton (of the text before case folding:
    capital Т looks like T, small т not like t)."""
    if text.isascii():
        return text.casefold() in plain
    return name_key(text) in keys


@cache
def _reserved_keys() -> tuple[dict[str, str], frozenset[str]]:
    """The always-reserved words by key, and the keys of the digits (for "Player N")."""
    always = {name_key(word): word for word in _ALWAYS_RESERVED}
    digits = frozenset(name_key(str(d)) for d in range(10))
    return always, digits


def reserved_word(name: str, *, kind: NameKind = "human") -> str | None:
    """The reserved word ``name`` is or reads as, or None (``kind``: a person's name may not read as a
    bot's; a bot seat's or an API client's may).

    Staff words and "Player N" are compared by skeleton ("Adm1n" is "admin"): ordinary names rarely come
    near them. Bot words and ids by :func:`_reads_as`: they are short and hold digits and l, so a skeleton
    would refuse ordinary names."""
    always, digits = _reserved_keys()
    words = name_words(name)
    for word in words:
        if word in always:
            return always[word]
    key = "".join(words)
    player = name_key("player")
    if key.startswith(player) and all(ch in digits for ch in key[len(player) :]):
        return "Player N"
    if kind == "human":
        plain = plain_words(name)
        readings = _bot_readings()
        for word in plain:
            for label, forms, keys in readings:
                if label in _BOT_WORDS and _reads_as(word, forms, keys):
                    return label
        joined = "".join(plain)
        for label, forms, keys in readings:
            if label not in _BOT_WORDS and _reads_as(joined, forms, keys):
                return label
    return None


def name_clash(name: str, others: list[str], kind: NameKind | None = None) -> str | None:
    """The name among ``others`` (the other seats' names) that ``name`` could be mistaken for — same
    :func:`name_key` — or the reserved word it reads as, or None.

    ``kind``: the joining principal's kind; "human" also refuses names that read as a bot's (display names
    are checked for that when set: this catches names stored before the rule)."""
    reserved = reserved_word(name, kind=kind or "agent")
    if reserved is not None:
        return reserved
    key = name_key(name)
    for other in others:
        if name_key(other) == key:
            return other
    return None
