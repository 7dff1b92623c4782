"""The one rule for every name a user or operator can set: display names, bot seat names, API token names.

A name is NFC-normalised and trimmed, has 1 to :data:`NAME_MAX_CHARS` characters and no character of Unicode
category C: no control characters (NUL, newlines, escapes), no format characters (bidi overrides and isolates
such as U+202E, zero-width joiners), no private-use or unassigned code points. So a name cannot reorder the
text around it in the lobby, hide itself, or carry terminal escapes into logs. HTML stays plain text (pages
escape it). Emoji sequences joined with U+200D are refused with the rest of category Cf.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from craft_rules.errors import TradeCraftError

NAME_MAX_CHARS = 40


class InvalidName(TradeCraftError, ValueError):
    """A name breaking the rule; the message says what to change."""

    code = "invalid_name"

    def __init__(self, message: str) -> None:
        super().__init__(self.code, message)


def normalise_name(raw: Any, what: str = "name") -> str:
    """The name as stored, or :class:`InvalidName` naming the broken rule."""
    if not isinstance(raw, str):
        raise InvalidName(f'Send the {what} as a string, e.g. "Ada".')
    # the length check first bounds the normalisation's work
    if len(raw) > 4 * NAME_MAX_CHARS:
        raise InvalidName(f"A {what} has 1 to {NAME_MAX_CHARS} characters; choose a shorter one.")
    name = unicodedata.normalize("NFC", raw).strip()
    if not name or len(name) > NAME_MAX_CHARS:
        raise InvalidName(f"A {what} has 1 to {NAME_MAX_CHARS} characters; choose another one.")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InvalidName(
            f"A {what} cannot contain control, format (e.g. right-to-left override) or unassigned characters."
        )
    return name


def name_clash(name: str, others: list[str]) -> str | None:
    """The name among ``others`` (or the reserved word) that ``name`` could be mistaken for, or None.

    Contract for issue 18 item 7 (a confusable-skeleton check against the seats of the same game and the
    reserved words); until it lands this compares casefolded names only."""
    folded = name.casefold()
    for other in others:
        if other.casefold() == folded:
            return other
    return None
