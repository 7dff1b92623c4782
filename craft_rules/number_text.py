"""The one grammar of numbers written as text by a client (query strings, path parameters, JSON strings
holding numbers, run amounts such as "1/4").

Python's own conversions are far looser than any client needs: ``int(" 1 ")``, ``int("+1")``,
``int("1_000")``, ``int("١")`` (Arabic-Indic one) and ``float("nan")`` all succeed, and such text then
travels on into headers, file names and logs. Here a number is ASCII digits only, with an optional leading
``-`` only where a negative is meaningful, at most :data:`NUMBER_TEXT_MAX_CHARS` characters, checked before
any conversion. Every layer reads numbers through this module (the web layer through
``server.table.errors.parse_count``, which turns a refusal into ``invalid_request``).
"""

from __future__ import annotations

import re
from fractions import Fraction

#: Longest number text read from a client; checked before conversion.
NUMBER_TEXT_MAX_CHARS = 18

# [0-9], not \d: in a str pattern \d matches every Unicode decimal digit
_WHOLE = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
# a run amount: a whole number, a decimal, a decimal with an exponent of at most 3 digits ("1e-3", and
# "1e+16" as repr writes a float) or a fraction ("1/4"); a sign so a negative is refused as such
_RATIONAL = re.compile(r"-?(?:[0-9]+/[0-9]+|[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]{1,3})?)")


def whole_number(text: str, *, negative: bool = False) -> int | None:
    """The integer ``text`` spells (ASCII digits, a leading ``-`` only with ``negative``), or None."""
    if not isinstance(text, str) or len(text) > NUMBER_TEXT_MAX_CHARS or not _WHOLE.fullmatch(text):
        return None
    if text.startswith("-") and not negative:
        return None
    return int(text)


def decimal_number(text: str) -> float | None:
    """The non-negative decimal ``text`` spells (``10``, ``0.5``: no sign, exponent, nan or inf), or None."""
    if not isinstance(text, str) or len(text) > NUMBER_TEXT_MAX_CHARS or not _DECIMAL.fullmatch(text):
        return None
    return float(text)


def rational_number(text: str, max_chars: int) -> Fraction | None:
    """The exact rational ``text`` spells (``2``, ``0.25``, ``1/4``, ``1e-3``, ``-1``), or None;
    ``max_chars`` bounds the text (a zero denominator is None too). The caller bounds the exponent."""
    if not isinstance(text, str) or len(text) > max_chars or not _RATIONAL.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except ZeroDivisionError:
        return None
