"""The one base class of TradeCraft's errors that cross a boundary (to a client, a CLI user, a log reader or
another package).

It lives in the bottom layer so every package may raise and catch it: ``except TradeCraftError`` catches
any of them, and each answers with the same shape, ``to_dict() -> {"code", "message", "details"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class TradeCraftError(Exception):
    """``code`` is machine-readable (clients switch on it), ``message`` a full sentence saying what is wrong
    and what to do, ``details`` a JSON-safe dict (the offending field, item, seat, ...).

    A subclass whose errors all share one code sets it as the class attribute ``code``. One that reports more
    fields in :meth:`to_dict` names the attributes in :attr:`extra_fields`; they come between ``message`` and
    ``details``.
    """

    code: str = "error"
    #: Attributes of a subclass that :meth:`to_dict` reports besides code, message and details.
    extra_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def to_dict(self) -> dict[str, Any]:
        extra = {name: _dumped(getattr(self, name)) for name in self.extra_fields}
        return {"code": self.code, "message": self.message, **extra, "details": self.details}

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's default pickling calls the class with ``args`` (the message alone), which the
        # subclasses' constructors refuse; an error raised in a worker process must reach its parent intact.
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[TradeCraftError], args: tuple[Any, ...], state: dict[str, Any]) -> TradeCraftError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


def _dumped(value: Any) -> Any:
    """A pydantic model (e.g. the action a local game refused) as its dict; anything else unchanged."""
    return value.model_dump() if hasattr(value, "model_dump") else value
