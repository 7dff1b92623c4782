"""Two LLM agents play each other through a live server: each with `run_bot` (what `tradecraft bot` runs),
a RemoteConnection over Socket.IO with an API token, and the real ChatOpenAI against the project's
OpenAI-compatible test server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_helpers import Client, ServerProcess, write_config

from agents.bot_cli import run_bot
from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer

ADMIN = ("admin", "test-admin-password")
API_KEY = "sk-remote-test-key-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(write_config(tmp_path_factory.mktemp("llm-remote"))).start()
    yield proc
    proc.stop()


def test_two_llm_agents_play_a_tom_game_through_a_live_server(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = Client(server.url, "host")
    tokens = [
        host.rest("POST", "/api/admin/tokens", {"name": f"llm-{seat}"}, auth=ADMIN)[1]["token"]
        for seat in range(2)
    ]
    status, created = host.rest("POST", "/api/games", {"hall": "tom", "join": False})
    assert status == 201, created
    game_id = created["game"]["game_id"]
    outcomes: dict[int, dict[str, Any]] = {}
    failures: list[BaseException] = []
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1)) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)

        def play(seat: int) -> None:
            try:
                spec = "llm:openai:test-model?timeout=10"
                outcomes[seat] = run_bot(server.url, game_id, tokens[seat], spec, seat=seat, seed=seat)
            except BaseException as err:  # surfaced below, with the thread's seat
                failures.append(err)

        threads = [threading.Thread(target=play, args=(seat,)) for seat in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        requests = len(llm.requests)
    assert not failures, failures
    assert {s: o["finished"] for s, o in outcomes.items()} == {0: True, 1: True}
    assert requests > 4 and not outcomes[0]["fallback_actions"] and not outcomes[1]["fallback_actions"]
    events = host.rest("GET", f"/api/games/{game_id}/events")[1]["events"]
    assert any(e["type"] == "trade_executed" for e in events) or any(e["type"] == "passed" for e in events)
    # the hall asks seat 0 for V0+V1+V2: its agent's reports carry all three (seen in its own traces)
    calls = [t for t in outcomes[0]["trace_records"] if t.get("trace") == "decision"]
    reports = [t["action"] for t in calls if t["action"]["type"] == "report_tom"]
    assert reports and all(r["v1"] and r["v2"] for r in reports)
    assert API_KEY not in json.dumps(outcomes)
    host.close()
