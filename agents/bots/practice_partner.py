"""The partner of the guided practice game (server/web/practice.py, ``/practice``).

A teaching partner, not an opponent: it accepts every proposal it can pay for (so the player's first
proposal goes through) and, when it proposes, makes one fixed proposal (options ``offer`` and ``request``,
as ``fixed_offer`` takes them), so the guide knows what the player will be asked to accept. It crafts its
own target as soon as it can, like every scripted partner, and reports V0 only.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.bots.oracle import CraftingOracle
from agents.bots.registry import card
from agents.bots.scripted import FixedOffer, FixedOfferOptions


class PracticePartner(FixedOffer):
    """Accepts every proposal it can pay for; proposes its fixed ``offer`` for its fixed ``request``."""

    name = "practice_partner"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": "the same proposal every turn",
        "it_accepts": "always (when it holds what is asked)",
        "propose": "request what you need that it holds",
        "decide": "accept its proposal when it gives you what you need",
    }

    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        return True


@card(
    "Practice partner",
    "Accepts every trade it can pay for and offers one stick for one cobblestone (the guided practice game).",
    "scripted",
    in_lobby=False,
)
def practice_partner(seed: int, options: FixedOfferOptions) -> PracticePartner:
    """Practice partner: accepts every proposal; proposes a fixed trade (offer/request as item:count,...)."""
    return PracticePartner(seed, offer=options.offer, request=options.request)


practice_partner.best_response = dict(PracticePartner.best_response)  # type: ignore[attr-defined]
