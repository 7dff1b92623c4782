"""What the server itself reads from a policy spec (``name[:model][?key=value&...]``, grammar in
``agents/bots/registry.py``) without importing any policy: the policy's name, the model, and whether the spec
tries to carry a credential.

Provider credentials (API keys, tokens, passwords) come only from the server's environment, where the policy
reads them (e.g. ``OPENAI_API_KEY``). A spec is stored with its game, shown to players as the seat's bot and
written to exports, so a spec that carries one is refused before it is stored anywhere.
"""

from __future__ import annotations

import re

from craft_rules.errors import TradeCraftError

#: Option keys that name a credential; a spec with one is refused (``credentials_in_spec``).
CREDENTIAL_OPTION = re.compile(r"key|token|secret|passw|auth|credential|cookie|bearer", re.IGNORECASE)
#: ``scheme://user:password@host`` in an option value (e.g. a base URL with credentials in it).
CREDENTIAL_URL = re.compile(r"://[^/?#&\s]*@")


class SpecError(TradeCraftError, ValueError):
    """A spec the server refuses before any policy sees it; ``code`` is machine-readable."""


def policy_name(spec: str) -> str:
    """The registry name a spec picks: ``"llm"`` for ``"llm:openai:gpt-4o?tom=0,1"``."""
    return spec.split("?", 1)[0].split(":", 1)[0].strip().lower()


def model_of(spec: str) -> str | None:
    """The model part (``"openai:gpt-4o"`` of ``"llm:openai:gpt-4o?tom=0,1"``), None when there is none."""
    head = spec.split("?", 1)[0]
    return head.split(":", 1)[1] if ":" in head else None


def check_no_credentials(spec: str) -> str:
    """``spec`` unchanged, or :class:`SpecError` ``credentials_in_spec`` if an option looks like one."""
    query = spec.split("?", 1)[1] if "?" in spec else ""
    for part in query.split("&") if query else []:
        key, _, value = part.partition("=")
        if CREDENTIAL_OPTION.search(key) or CREDENTIAL_URL.search(value):
            raise SpecError(
                "credentials_in_spec",
                f"Policy spec option {key!r} looks like a credential. Specs are stored with the game and "
                "shown to players; give provider keys to the server in its environment (e.g. "
                "OPENAI_API_KEY), never in a spec.",
            )
    return spec
