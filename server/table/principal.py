"""Who acts at a table: an authenticated person or API token (the web layer finds out which, in
``server/web/auth.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a person (user id) or an API token (``token:<id>``)."""

    id: str
    name: str
    kind: Literal["human", "agent"]
    scopes: frozenset[str] = field(default_factory=lambda: frozenset({"play"}))

    @property
    def is_admin(self) -> bool:
        return "admin" in self.scopes

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "kind": self.kind}
