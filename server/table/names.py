"""The one rule for every name a user or operator can set: display names, bot seat names, API token names,
hall seat names from settings.

A name is stored NFKC-normalised (so full-width, ligature and other compatibility forms read as what they
look like), trimmed, with each run of white space made one space, 1 to :data:`NAME_MAX_CHARS` characters.
Refused, each with a sentence saying what to change (:class:`InvalidName`, code ``invalid_name``):

- characters of Unicode category C: control characters (NUL, newlines, escapes), format characters (bidi
  overrides and isolates such as U+202E, zero-width spaces and joiners), private-use and unassigned code
  points; line and paragraph separators (U+2028, U+2029);
- invisible characters that are not of category C: the rest of Default_Ignorable_Code_Point (Hangul fillers
  U+3164 / U+FFA0 / U+115F / U+1160, the combining grapheme joiner, Mongolian and other variation selectors
  except one emoji presentation selector after a symbol) and the blank U+2800 BRAILLE PATTERN BLANK;
- a name that starts with a combining mark (so one made of marks only), or more than
  :data:`MAX_MARKS_PER_BASE` marks on one character (counted decomposed: Vietnamese, Hindi vowel signs,
  Arabic and Hebrew pointing stay well under it; stacked "zalgo" marks do not);
- letters of more than one of the Latin, Greek and Cyrillic scripts in one name ("Аdа" with a Cyrillic А):
  these three scripts share look-alike letters, and no ordinary name mixes them, so the mix is refused
  outright rather than guessed at;
- reserved words, compared by :func:`name_key` (the confusable skeleton): "admin", "administrator",
  "moderator", "server", "system", "you" and "Player N" (the labels the pages and the agents' text use)
  as a word of the name; for a person's name also what reads as a bot: the word "bot", "bots" or "llm",
  or a registered bot policy id with or without "bot" ("random bot", "tom1bot", "random").

Two names clash (:func:`name_clash`) when their keys are equal: same confusable skeleton (Unicode's
confusables data, through the ``confusable-homoglyphs`` package), case folded, white space and punctuation
ignored. HTML stays plain text (pages escape it). Emoji sequences joined with U+200D are refused with the
rest of category Cf.
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
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InvalidName(
            f"A {what} cannot contain control (e.g. tab, newline), format (e.g. right-to-left override, "
            "zero-width space) or unassigned characters."
        )
    name = " ".join(name.split())  # only space separators are left to split at
    if not name or len(name) > NAME_MAX_CHARS:
        raise InvalidName(f"A {what} has 1 to {NAME_MAX_CHARS} characters; choose another one.")
    _check_visible(name, what)
    _check_marks(name, what)
    _check_scripts(name, what)
    reserved = reserved_word(name, kind=kind)
    if reserved is not None:
        raise InvalidName(
            f"A {what} cannot be or look like {reserved!r}: the pages and the players use it to mean "
            "something else. Choose another one."
        )
    return name


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
    words, word = [], []
    for ch in skeleton(unicodedata.normalize("NFKC", name)):
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
def _bot_ids() -> dict[str, str]:
    """The registered bot policies' ids by key (entry points: read, never imported)."""
    return {name_key(entry.name): entry.name for entry in entry_points(group=POLICY_ENTRY_POINTS)}


@cache
def _reserved_keys() -> tuple[dict[str, str], dict[str, str], frozenset[str]]:
    """The reserved words by key (always; for persons), and the keys of the digits (for "Player N")."""
    always = {name_key(word): word for word in _ALWAYS_RESERVED}
    bot_like = {name_key(word): word for word in _BOT_WORDS}
    digits = frozenset(name_key(str(d)) for d in range(10))
    return always, bot_like, digits


def reserved_word(name: str, *, kind: NameKind = "human") -> str | None:
    """The reserved word ``name`` is or reads as, or None (``kind``: a person's name may not read as a
    bot's; a bot seat's or an API client's may)."""
    always, bot_like, digits = _reserved_keys()
    words = name_words(name)
    for word in words:
        if word in always:
            return always[word]
    key = "".join(words)
    player = name_key("player")
    if key.startswith(player) and all(ch in digits for ch in key[len(player) :]):
        return "Player N"
    if kind == "human":
        for word in words:
            if word in bot_like:
                return bot_like[word]
        for bot_key, bot in _bot_ids().items():
            if key in (bot_key, bot_key + name_key("bot"), bot_key + name_key("bots")):
                return f"{bot} bot"
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
