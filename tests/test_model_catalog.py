"""LLM opponents listed by the operator (``bots.models``): settings refused with a clear message, each
provider's availability checked over real HTTP (one that answers, one that fails, one that hangs, none at all)
within the bound, and an unavailable model refused at creation (``model_unavailable``) without a game made."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from e2e_helpers import Client, MakeServer, write_config
from in_process import InProcessApp

from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer
from server.table.config import BotsSection, Settings, SettingsError, load_settings
from server.table.errors import SERVER_ERROR_CODES, ServerError
from server.table.model_catalog import Endpoint, ModelCatalog, probe
from server.table.policies import BotRegistry

MODEL = {"name": "Test model", "description": "A scripted model.", "cost_note": "free"}


class ModelList:
    """A provider's ``GET /v1/models`` over real HTTP: answers ``status`` with a list of ``models``, or
    never answers at all (``hang``: the connection is accepted by the kernel, nothing is ever read)."""

    def __init__(self, status: int = 200, models: tuple[str, ...] = ("test-model",), hang: bool = False):
        self.status, self.models, self.hang = status, models, hang
        self.asked = 0
        self.headers: list[dict[str, str]] = []
        if hang:
            self._socket = socket.socket()
            self._socket.bind(("127.0.0.1", 0))
            self._socket.listen(8)
            self.port = self._socket.getsockname()[1]
            return
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                owner.asked += 1
                owner.headers.append(dict(self.headers))
                body = json.dumps({"object": "list", "data": [{"id": m} for m in owner.models]}).encode()
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        if self.hang:
            self._socket.close()
        else:
            self._httpd.shutdown()
            self._httpd.server_close()


@contextmanager
def provider(**options: Any) -> Iterator[ModelList]:
    server = ModelList(**options)
    try:
        yield server
    finally:
        server.close()


def listed(spec: str, **bots: Any) -> BotsSection:
    return BotsSection.model_validate({"models": [{**MODEL, "spec": spec}], **bots})


@pytest.fixture
def no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------------------------------ settings
@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"spec": "llm:openai:gpt-4o?api_key=sk-1"}, ["credential", "OPENAI_API_KEY"]),
        ({"spec": "llm:openai:gpt-4o?base_url=https://me:pw@host/v1"}, ["credential"]),
        ({"name": "bad\u202ename", "spec": "llm:openai:gpt-4o"}, ["bots.models.0.name"]),
        ({"cost_note": "x" * 200, "spec": "llm:openai:gpt-4o"}, ["bots.models.0.cost_note"]),
        ({"spec": "llm:openai:gpt-4o", "price": 3}, ["price"]),
    ],
)
def test_a_listed_model_with_a_key_a_bad_name_or_an_unknown_field_is_refused(
    tmp_path: Path, entry: dict[str, Any], words: list[str]
) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump({"bots": {"models": [{**MODEL, **entry}]}}), encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, environ={})
    for word in words:
        assert word in str(refused.value)


def test_two_entries_with_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match=r"bots.models\[1\] \('Test model'\) repeats the name"):
        BotsSection.model_validate(
            {"models": [{**MODEL, "spec": "llm:openai:a"}, {**MODEL, "spec": "llm:openai:b"}]}
        )


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nosuch:model", ["bots.models[0] ('Test model')", "no installed policy", "llm:openai:"]),
        ("llm:openai:m?base_url=http://127.0.0.1:9/v1&tom=7", ["bots.models[0] ('Test model')", "tom=7"]),
        ("llm:openai:m?base_url=http://127.0.0.1:9/v1&colour=red", ["colour", "Fix the entry's spec"]),
        # no key in the environment either: the bad option is still what stops the start
        ("llm:openai:gpt-4o-mini?tom=5", ["tom=5", "one of 0 | 0,1 | 0,1,2"]),
    ],
)
def test_a_spec_no_policy_accepts_stops_the_start_naming_the_entry(
    spec: str, words: list[str], no_provider_env: None
) -> None:
    registry = BotRegistry(settings=Settings(bots=listed(spec)))
    with pytest.raises(SettingsError) as refused:
        registry.start_models()
    for word in words:
        assert word in str(refused.value)


def test_a_missing_key_is_not_a_start_error_but_shows_the_model_unavailable_naming_the_variable(
    no_provider_env: None,
) -> None:
    registry = BotRegistry(settings=Settings(bots=listed("llm:openai:gpt-4o-mini?tom=0")))
    registry.start_models()
    status = registry.models.availability("llm:openai:gpt-4o-mini?tom=0")  # type: ignore[union-attr]
    # players read a plain sentence; the variable to set is the operator's detail (the server log)
    assert status.available is False and "OPENAI_API_KEY is not set" in status.detail
    assert status.reason == "this server is not set up to reach its provider yet"
    with pytest.raises(ServerError) as refused:
        registry.require("llm:openai:gpt-4o-mini?tom=0")
    assert refused.value.code == "model_unavailable" and refused.value.status == 503
    assert "not set up" in refused.value.message and "Test model" in refused.value.message
    assert "OPENAI_API_KEY" not in refused.value.message
    assert "model_unavailable" in SERVER_ERROR_CODES


# ------------------------------------------------------------------------------------------ probing
def test_a_provider_that_lists_the_model_is_available_and_gets_the_key_from_the_environment() -> None:
    with provider() as server:
        endpoint = Endpoint.of(f"llm:openai:test-model?base_url={server.url}", {"OPENAI_API_KEY": "sk-env"})
        assert probe(endpoint, 2.0).available is True
        other = Endpoint.of(f"llm:openai:gpt-5?base_url={server.url}", {})
        missing = probe(other, 2.0)
    assert server.headers[0]["Authorization"] == "Bearer sk-env" and "Authorization" not in server.headers[1]
    assert missing.available is False and "does not offer the model 'gpt-5'" in missing.detail
    assert "test-model" in missing.detail  # the provider's own list: for the operator only
    assert missing.reason == "its provider does not offer this model at the moment"


@pytest.mark.parametrize(
    ("status", "detail", "reason"),
    [
        (500, "HTTP 500", "its provider answered with an error"),
        (401, "refused the key in OPENAI_API_KEY", "its provider refused this server's key"),
    ],
)
def test_a_provider_that_fails_is_unavailable_saying_how(status: int, detail: str, reason: str) -> None:
    with provider(status=status) as server:
        found = probe(Endpoint.of(f"llm:vllm:test-model?base_url={server.url}", {}), 2.0)
    assert found.available is False and detail in found.detail and found.reason == reason


def test_a_provider_nobody_listens_on_is_unavailable() -> None:
    with provider() as server:
        url = server.url
    found = probe(Endpoint.of(f"llm:openai:test-model?base_url={url}", {}), 2.0)
    assert found.available is False and "cannot be reached" in found.reason and url not in found.reason


def test_a_hanging_provider_is_unavailable_within_the_bound_and_the_others_are_not_held_up() -> None:
    with provider(hang=True) as hung, provider() as fine:
        specs = [
            f"llm:openai:test-model?base_url={hung.url}",
            f"llm:openai:test-model?base_url={fine.url}&tom=0",
        ]
        bots = BotsSection.model_validate(
            {
                "models": [{**MODEL, "name": f"Model {i}", "spec": spec} for i, spec in enumerate(specs)],
                "model_probe_timeout_seconds": 0.5,
            }
        )
        catalog = ModelCatalog(bots, environ={})
        started = time.monotonic()
        catalog.refresh()
        took = time.monotonic() - started
    assert took < 0.5 + 0.5 + 0.4, (
        took
    )  # the probe timeout plus the join's margin, whatever the provider does
    hung_status, fine_status = (catalog.availability(spec) for spec in specs)
    assert hung_status.available is False and (
        "0.5 s" in hung_status.reason or "timed out" in hung_status.reason
    )
    assert fine_status.available is True


def test_availability_is_cached_for_the_interval_then_checked_again_in_the_background() -> None:
    now = [0.0]
    with provider() as server:
        spec = f"llm:openai:test-model?base_url={server.url}"
        catalog = ModelCatalog(
            listed(spec, model_probe_interval_seconds=60), environ={}, clock=lambda: now[0]
        )
        assert catalog.availability(spec).available is None  # not checked yet: a check starts
        deadline = time.monotonic() + 5
        while catalog.availability(spec).available is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert catalog.availability(spec).available is True and server.asked == 1
        for _ in range(20):
            catalog.availability(spec)
        now[0] = 59.0
        catalog.availability(spec)
        time.sleep(0.2)
        assert server.asked == 1  # within the interval: the cached word
        server.status = 500
        now[0] = 61.0
        catalog.availability(spec)  # stale: answered from the cache, checked again behind it
        deadline = time.monotonic() + 10  # its own wait: a busy machine may have used the first one up
        while catalog.availability(spec).available and time.monotonic() < deadline:
            time.sleep(0.02)
    assert server.asked == 2 and catalog.availability(spec).available is False


# ------------------------------------------------------------------------------------------ seating
def test_a_listed_model_is_seatable_without_allowed_specs_and_described_for_the_lobby() -> None:
    with provider() as server:
        spec = f"llm:openai:test-model?base_url={server.url}&tom=0"
        registry = BotRegistry(settings=Settings(bots=listed(spec)))
        registry.start_models()
        shown = "llm:openai:test-model"  # offered without the spec's options (its base_url)
        assert spec not in registry.seatable() and shown in registry.seatable()
        assert registry.require(shown) == shown and registry.require(spec) == spec
        opponents = {o["spec"]: o for o in registry.opponents()}
    assert registry.seat_name(spec) == registry.seat_name(shown) == "Test model"
    assert registry.seat_name("tom1") == "tom1 bot"
    model = opponents[shown]
    assert model["kind"] == "llm" and model["name"] == "Test model" and model["available"] is True
    assert model["description"] == "A scripted model." and model["cost_note"] == "free"
    # built-in bots by the names their policies declare, never their raw ids
    assert opponents["random"]["name"] == "Random bot" and opponents["random"]["strength"] == "easy"
    assert opponents["tom1"]["name"] == "ToM-1 bot" and opponents["tom1"]["strength"] == "hard"
    assert all(o["name"] != o["spec"] and o["description"] for o in opponents.values())
    # a test stand-in stays seatable by its spec but is not offered to players
    assert "simulated_llm" in registry.seatable() and "simulated_llm" not in opponents
    # the lobby's order: LLMs first, then bots from the easiest, scripted partners last
    kinds = [(o["kind"], o["strength"]) for o in registry.opponents()]
    assert kinds[0][0] == "llm" and kinds[-1][1] == "scripted"
    assert kinds.index(("bot", "easy")) < kinds.index(("bot", "medium")) < kinds.index(("bot", "hard"))


def test_a_model_never_checked_is_checked_before_a_game_seats_it() -> None:
    with provider(status=503) as server:
        spec = f"llm:openai:test-model?base_url={server.url}"
        registry = BotRegistry(settings=Settings(bots=listed(spec)))  # no start: nothing checked yet
        with pytest.raises(ServerError) as refused:
            registry.require(spec)
        time.sleep(0.3)  # a second, background check would have reached the provider by now
        asked = server.asked
    assert refused.value.code == "model_unavailable" and "answered with an error" in refused.value.message
    assert asked == 1 and refused.value.details["reason"] == "its provider answered with an error"
    assert server.url not in json.dumps([refused.value.message, refused.value.details])


def test_creating_a_game_with_an_unavailable_model_is_refused_and_makes_no_game(tmp_path: Path) -> None:
    with provider(status=500) as server:
        spec = f"llm:openai:test-model?base_url={server.url}"
        path = write_config(tmp_path, overrides={"bots": {"models": [{**MODEL, "spec": spec}]}})
        app = InProcessApp(path)
        try:
            app.services.bots.models.refresh()  # type: ignore[union-attr]
            host = app.client("creator")
            seats = ["open", {"kind": "bot", "bot": spec}]
            status, answer = host.rest("POST", "/api/games", {"hall": "duel", "seats": seats})
            _, bots = host.rest("GET", "/api/bots")
            lobby = app.http().get("/").get_data(as_text=True)
            games = app.services.store.list_games()
        finally:
            app.close()
    assert status == 503 and answer["error"]["code"] == "model_unavailable", answer
    assert "answered with an error" in answer["error"]["message"] and games == []
    (shown,) = [o for o in bots["opponents"] if o["spec"] == "llm:openai:test-model"]
    assert shown["available"] is False and shown["reason"] == "its provider answered with an error"
    assert "llm:openai:test-model" in bots["bots"] and server.url not in json.dumps([answer, bots])
    assert "Test model (LLM, unavailable)" in lobby and "Why: its provider answered with an error" in lobby
    assert server.url not in lobby


# ------------------------------------------------------------------------------------------ a real game
def test_a_listed_model_is_seated_by_a_creator_and_plays_a_game_to_the_end(
    tmp_path: Path, make_server: MakeServer
) -> None:
    """run_server.py with bots.models pointing at the project's OpenAI-compatible test server: a person
    seats the model from the lobby's list (no allowed_specs), the installed `llm` policy (LangChain
    ChatOpenAI over HTTP) plays every move, and the seat carries the model's plain name."""
    with OpenAITestServer(policy=ScriptedPlayer()) as model_server:
        spec = f"llm:openai:test-model?base_url={model_server.base_url}&timeout=10&backoff=0.01"
        path = write_config(
            tmp_path, overrides={"bots": {"move_delay_seconds": 0.0, "models": [{**MODEL, "spec": spec}]}}
        )
        server = make_server(path, env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
        host = Client(server.url, "model-fan").connect()
        try:
            listed_bots = requests.get(f"{server.url}/api/bots", timeout=10).json()
            offered = "llm:openai:test-model"  # what the lobby offers: the spec without its options
            seats = [{"kind": "bot", "bot": offered}, {"kind": "bot", "bot": "random"}]
            created = host.call("create_game", {"hall": "duel", "seats": seats})
            assert created["ok"], created
            game_id = created["game"]["game_id"]
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                game = requests.get(f"{server.url}/api/games/{game_id}", timeout=10).json()["game"]
                if game["status"] == "finished":
                    break
                time.sleep(0.3)
        finally:
            host.close()
            server.stop()
    assert offered in listed_bots["bots"] and "llm:openai:test-model" not in json.dumps(
        [o["name"] for o in listed_bots["opponents"]]
    )
    assert model_server.base_url not in json.dumps([listed_bots, game])  # the operator's server, unshown
    assert game["status"] == "finished", game
    # the seat holds the offered id; the policy was built from the full spec (it reached the server)
    assert game["seats"][0]["name"] == "Test model" and game["seats"][0]["bot"] == offered
    chats = [r for r in model_server.requests if r.get("messages")]
    assert chats, "the model was asked for its moves"


def test_run_server_refuses_to_start_with_a_bad_entry_and_says_which(tmp_path: Path) -> None:
    path = write_config(tmp_path, overrides={"bots": {"models": [{**MODEL, "spec": "llm:openai:m?tom=5"}]}})
    done = subprocess.run(
        [sys.executable, "run_server.py", "--config", str(path), "--port", "0"],
        cwd=Path(__file__).resolve().parent.parent,
        env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "bots.models[0] ('Test model')" in done.stderr and "tom=5" in done.stderr
    assert "Traceback" not in done.stderr
