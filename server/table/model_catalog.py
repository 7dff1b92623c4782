"""The LLM opponents the operator lists (``bots.models``): checked at start, their providers probed.

A listed model is seatable by any game's creator (:class:`server.table.policies.BotRegistry`). Two checks
keep a seat from stalling on a provider that cannot answer:

* **At start** (:meth:`ModelCatalog.check`) every entry's spec is built once; a spec the policy refuses
  stops the server with a message naming the entry. A spec refused only because its key is missing from the
  environment is not an error: the model is shown as unavailable, naming the variable to set.
* **Availability** (:meth:`ModelCatalog.refresh`): each provider is asked for its model list, which spends no
  tokens (OpenAI-compatible servers: ``GET <base URL>/models``). Every probe runs in its own thread and is
  abandoned at ``bots.model_probe_timeout_seconds``, so a check never takes longer than that, however the
  provider misbehaves. Results are cached for ``bots.model_probe_interval_seconds``; a stale cache is
  refreshed in the background when someone next asks. Providers without an OpenAI-compatible API are only
  checked for their key (``<PROVIDER>_API_KEY``).

No Flask here: the web layer shows :meth:`ModelCatalog.availability` in the lobby and the registry refuses a
game with an unavailable model (``model_unavailable``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from server.table.config import BotsSection, ListedModel, SettingsError
from server.table.errors import ServerError
from server.table.policy_specs import CREDENTIAL_URL, model_of, policy_name

log = logging.getLogger(__name__)

OPENAI_COMPATIBLE = ("openai", "vllm", "ollama", "llamacpp", "lmstudio")
"""Providers with an OpenAI-compatible HTTP API (``ChatOpenAI``; agents/llm/factory.py uses this too)."""
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
#: Largest model list read from a provider; a longer one is not searched for the model's id.
MAX_MODEL_LIST_BYTES = 4_000_000


@dataclass(frozen=True)
class Availability:
    """What the last check of a listed model found: ``available`` None = not checked yet; ``reason`` says
    why it is unavailable in a plain sentence for players (no URL, no spec option, no provider's model
    list); ``detail`` is the operator's version, for the server log only; ``checked_at`` is wall-clock
    seconds."""

    available: bool | None
    reason: str = ""
    checked_at: float | None = None
    detail: str = ""

    def public(self) -> dict[str, Any]:
        return {"available": self.available, "reason": self.reason, "checked_at": self.checked_at}


UNCHECKED = Availability(None, "not checked yet")
#: What players read for a model the server cannot reach (a key or URL missing; the log says which).
NOT_SET_UP = "this server is not set up to reach its provider yet"
UNREACHABLE = "its provider cannot be reached right now"
REFUSED_KEY = "its provider refused this server's key"


#: Environment variables naming a provider's server; they may carry credentials and are never shown.
BASE_URL_VARIABLES = ("OPENAI_BASE_URL", "OLLAMA_BASE_URL", "ANTHROPIC_BASE_URL", "AZURE_OPENAI_ENDPOINT")


def redacted_url(url: str) -> str:
    """``url`` fit for the server log: its scheme, host, port and path, without ``user:password@`` and
    without a query (where an ``api-key=`` may sit)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urllib.parse.urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def public_spec(spec: str) -> str:
    """A policy spec as players may see it: the policy and model (``llm:openai:gpt-4o-mini``) without its
    options, which can name the operator's servers (``base_url``)."""
    return spec.split("?", 1)[0]


def spec_option(spec: str, key: str) -> str | None:
    """The value of option ``key`` in a policy spec's ``?key=value&...`` part, or None."""
    query = spec.split("?", 1)[1] if "?" in spec else ""
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if name == key:
            return value
    return None


@dataclass(frozen=True)
class Endpoint:
    """Where a listed model's provider answers and what authenticates it, read from its spec and the
    environment as the ``llm`` policy reads them (agents/llm/factory.py)."""

    provider: str
    model: str
    base_url: str | None  # None: the provider has no OpenAI-compatible API to ask
    key_variable: str
    key: str | None

    @classmethod
    def of(cls, spec: str, environ: Mapping[str, str]) -> Endpoint:
        provider, _, model = (model_of(spec) or "").partition(":")
        if provider in OPENAI_COMPATIBLE:
            url = spec_option(spec, "base_url") or environ.get("OPENAI_BASE_URL") or None
            if url is None and provider == "openai":
                url = OPENAI_DEFAULT_URL
            return cls(provider, model, url, "OPENAI_API_KEY", environ.get("OPENAI_API_KEY") or None)
        variable = f"{provider.upper()}_API_KEY"
        return cls(provider, model, None, variable, environ.get(variable) or None)

    def local_problem(self) -> str | None:
        """Why the model cannot be reached, found without the network (a missing key or URL), or None."""
        if not self.provider:
            return None  # not an LLM spec: nothing to reach
        if self.provider in OPENAI_COMPATIBLE and self.base_url is None:
            return (
                f"no server URL for provider {self.provider!r}: set OPENAI_BASE_URL in the server's "
                "environment or the spec's base_url option"
            )
        needs_key = self.base_url is None or self.base_url == OPENAI_DEFAULT_URL
        if needs_key and not self.key:
            return f"{self.key_variable} is not set in the server's environment"
        return None


def probe(endpoint: Endpoint, timeout: float) -> Availability:
    """Ask the provider whether it serves the model, spending no tokens; never raises."""
    problem = endpoint.local_problem()
    if problem is not None:
        return Availability(False, NOT_SET_UP, time.time(), problem)
    if endpoint.base_url is None:  # a provider without a model list to ask: its key is all we can check
        return Availability(True, "", time.time(), f"{endpoint.key_variable} is set (provider not probed)")
    url = endpoint.base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json"}
    if endpoint.key:
        headers["Authorization"] = f"Bearer {endpoint.key}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as answer:
            body = answer.read(MAX_MODEL_LIST_BYTES + 1)
    except urllib.error.HTTPError as err:
        refused = err.code in (401, 403)
        why = f"refused the key in {endpoint.key_variable}" if refused else "failed"
        detail = f"the provider {why} (HTTP {err.code} from {redacted_url(url)})"
        reason = REFUSED_KEY if refused else "its provider answered with an error"
        return Availability(False, reason, time.time(), detail)
    except (OSError, ValueError) as err:  # refused, unreachable, timed out, a malformed URL
        cause = getattr(err, "reason", err)
        said = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
        detail = f"the provider at {redacted_url(url)} cannot be reached: {said}"
        timed_out = isinstance(cause, TimeoutError) or "timed out" in said
        reason = f"its provider did not answer within {timeout:g} s" if timed_out else UNREACHABLE
        return Availability(False, reason, time.time(), detail)
    available, detail = _lists_model(body, endpoint.model)
    reason = "" if available else "its provider does not offer this model at the moment"
    return Availability(available, reason, time.time(), detail)


def _lists_model(body: bytes, model: str) -> tuple[bool, str]:
    """Whether a model list (``{"data": [{"id": ...}]}``) offers ``model``, and the operator's detail; a
    list too long to search, or a server that lists nothing, is taken at its word that it serves what it
    is asked for."""
    if len(body) > MAX_MODEL_LIST_BYTES:
        return True, ""
    try:
        listed = [entry.get("id") for entry in json.loads(body).get("data", [])]
    except (ValueError, AttributeError, TypeError):
        return False, "the provider's model list is not the JSON an OpenAI-compatible server sends"
    if listed and model not in listed:
        shown = ", ".join(str(name) for name in listed[:5]) + (", ..." if len(listed) > 5 else "")
        return False, f"the provider does not offer the model {model!r} (it lists {shown})"
    return True, ""


class ModelCatalog:
    """The listed models and the last word on each one's availability (thread-safe)."""

    def __init__(
        self,
        bots: BotsSection,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.entries: list[ListedModel] = list(bots.models)
        self.timeout = bots.model_probe_timeout_seconds
        self.interval = bots.model_probe_interval_seconds
        self._environ = os.environ if environ is None else environ
        self._clock = clock
        self._lock = threading.Lock()
        self._status: dict[str, Availability] = {}
        self._checked_at: float | None = None  # clock time of the last finished refresh
        self._refreshing: threading.Thread | None = None

    def public_id(self, entry: ListedModel) -> str:
        """What players see and send for a listed model: its :func:`public_spec`, numbered (``#2``) when
        another entry has the same one (two entries differing only in their options)."""
        shown = public_spec(entry.spec)
        same = [other for other in self.entries if public_spec(other.spec) == shown]
        return shown if len(same) == 1 else f"{shown}#{same.index(entry) + 1}"

    def entry(self, spec: str) -> ListedModel | None:
        """The listed model ``spec`` names: by its full spec (the settings') or its :meth:`public_id`."""
        return next(
            (entry for entry in self.entries if spec in (entry.spec, self.public_id(entry))),
            None,
        )

    # ------------------------------------------------------------------------------------------ at start
    def check(self, make: Callable[[str, int], Any], installed: list[str]) -> None:
        """Build every entry's policy once: :class:`SettingsError` naming the first entry whose spec is
        refused, except for a missing key or URL (then the model is unavailable, saying which)."""
        for index, entry in enumerate(self.entries):
            where = f"bots.models[{index}] ({entry.name!r})"
            if policy_name(entry.spec) not in installed:
                raise SettingsError(
                    f"{where}: spec {entry.spec!r} names no installed policy (installed: "
                    f"{', '.join(installed)}); write an llm spec such as llm:openai:gpt-4o-mini?tom=0."
                )
            endpoint = Endpoint.of(entry.spec, self._environ)
            problem = endpoint.local_problem()
            try:
                make(entry.spec, 0)
            except ServerError as err:
                # only a refusal about the missing key is an unavailable model; a bad option (even with the
                # key missing too) is the operator's to fix now
                if problem is None or endpoint.key_variable not in err.message:
                    raise SettingsError(
                        f"{where}: spec {entry.spec!r} is refused: {err.message} Fix the entry's spec in "
                        "the settings (or remove the entry)."
                    ) from None
            if problem is not None:
                with self._lock:
                    self._record(entry, Availability(False, NOT_SET_UP, time.time(), problem))
        for variable in BASE_URL_VARIABLES:
            if CREDENTIAL_URL.search(self._environ.get(variable) or ""):
                # the llm policy reads it as it is; the server only ever shows or logs it redacted
                log.warning(
                    "%s carries credentials (user:password@); it is used but never shown: %s",
                    variable,
                    redacted_url(self._environ[variable]),
                )

    def start(self) -> None:
        """Probe every listed model in the background (never delays the caller)."""
        self._refresh_in_background()

    # ------------------------------------------------------------------------------------------ queries
    def availability(self, spec: str) -> Availability:
        """The cached word on ``spec`` (refreshed in the background once it is older than the interval)."""
        entry = self.entry(spec)
        with self._lock:
            stale = self._checked_at is None or self._clock() - self._checked_at >= self.interval
            status = self._status.get(entry.spec if entry else spec, UNCHECKED)
        if stale:
            self._refresh_in_background()
        return status

    def require_available(self, spec: str) -> None:
        """Nothing if the listed model ``spec`` answered its last check, else ``model_unavailable``. A model
        never checked is checked now (at most ``model_probe_timeout_seconds``)."""
        entry = self.entry(spec)
        if entry is None:
            return
        with self._lock:
            checked = self._status.get(entry.spec, UNCHECKED).available is not None
        if checked:
            status = self.availability(entry.spec)  # the cached word (a stale one is checked behind it)
        else:  # asked now, once, rather than in the background as well
            self.refresh([entry])
            with self._lock:
                status = self._status.get(entry.spec, UNCHECKED)
        if not status.available:
            raise ServerError(
                "model_unavailable",
                f"{entry.name} cannot play right now: {status.reason or 'its provider did not answer'}. "
                "Pick another opponent, or try again later.",
                {"bot": self.public_id(entry), "model": entry.name, "reason": status.reason},
                status=503,
            )

    # ------------------------------------------------------------------------------------------ probing
    def refresh(self, entries: list[ListedModel] | None = None) -> None:
        """Probe ``entries`` (default: all) at once; returns within the probe timeout (plus a moment),
        marking a probe still running then as unavailable."""
        entries = self.entries if entries is None else entries
        answered: set[str] = set()
        threads = []
        for entry in entries:
            endpoint = Endpoint.of(entry.spec, self._environ)

            def run(entry: ListedModel = entry, endpoint: Endpoint = endpoint) -> None:
                found = probe(endpoint, self.timeout)
                with self._lock:  # each answer is shown as soon as it comes: a slow provider delays no other
                    if entry.spec not in answered:
                        answered.add(entry.spec)
                        self._record(entry, found)

            thread = threading.Thread(target=run, name="model-probe", daemon=True)
            thread.start()
            threads.append(thread)
        deadline = time.monotonic() + self.timeout + 0.5
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            for entry in entries:
                if entry.spec not in answered:  # still hanging: its late answer is dropped
                    answered.add(entry.spec)
                    reason = f"its provider did not answer within {self.timeout:g} s"
                    self._record(entry, Availability(False, reason, time.time(), reason))
            if entries is self.entries:
                self._checked_at = self._clock()

    def _record(self, entry: ListedModel, found: Availability) -> None:
        """Keep ``found`` as the word on ``entry`` (the lock held); the operator's detail of a model found
        unavailable goes to the log (once per new detail), players see only the plain reason."""
        held = self._status.get(entry.spec, UNCHECKED)
        if found.available is False and (held.available is not False or held.detail != found.detail):
            log.warning("listed model %s is unavailable: %s", entry.name, found.detail or found.reason)
        self._status[entry.spec] = found

    def _refresh_in_background(self) -> None:
        if not self.entries:
            return
        with self._lock:
            if self._refreshing is not None and self._refreshing.is_alive():
                return  # one refresh at a time
            self._checked_at = self._clock()  # nobody starts another until this one is due again
            self._refreshing = threading.Thread(target=self._background, name="model-catalog", daemon=True)
            self._refreshing.start()

    def _background(self) -> None:
        try:
            self.refresh()
        except Exception:  # a probe never raises; this guards the thread against the unforeseen
            log.exception("checking the listed models failed")
