"""Two LLM agents play each other through a live server: each with `run_bot` (what `tradecraft bot` runs),
a RemoteConnection over Socket.IO with an API token, and the real ChatOpenAI against the project's
OpenAI-compatible test server.

Needs a real server process: the agents are remote clients (RemoteConnection), as `tradecraft bot` is.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import requests
from e2e_helpers import ADMIN, DUEL, Client, ServerProcess

from agents.bot_cli import run_bot
from agents.driver import run_seat
from agents.remote import RemoteConnection, login_cookie
from agents.testing.openai_server import OpenAITestServer, Reply
from agents.testing.scripted_player import ScriptedPlayer
from server.game.gamelog import decode_log

API_KEY = "sk-remote-test-key-0123456789"


@pytest.mark.slow
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
        model_calls = len(llm.requests)
    assert not failures, failures
    assert {s: o["finished"] for s, o in outcomes.items()} == {0: True, 1: True}
    assert model_calls > 4 and not outcomes[0]["fallback_actions"] and not outcomes[1]["fallback_actions"]
    events = host.rest("GET", f"/api/games/{game_id}/events")[1]["events"]
    assert any(e["type"] == "trade_executed" for e in events) or any(e["type"] == "passed" for e in events)
    # the hall asks seat 0 for V0+V1+V2: its agent's reports carry all three (seen in its own traces)
    calls = [t for t in outcomes[0]["trace_records"] if t.get("trace") == "decision"]
    reports = [t["action"] for t in calls if t["action"]["type"] == "report_tom"]
    assert reports and all(r["v1"] and r["v2"] for r in reports)
    # and the server's log holds both seats' reports of their own order sets: V0+V1+V2 and V0
    export = requests.get(f"{server.url}/api/admin/games/{game_id}/export", auth=ADMIN, timeout=30)
    assert export.status_code == 200, export.text
    events = decode_log(export.text.splitlines()).events
    reported = [(e.actor, e.payload) for e in events if e.type == "tom_reported"]
    assert {seat for seat, _ in reported} == {0, 1}
    assert all((p["v1"] is not None and p["v2"] is not None) == (seat == 0) for seat, p in reported)
    assert all(p["v1"] is None for seat, p in reported if seat == 1)
    assert API_KEY not in json.dumps(outcomes) and API_KEY not in export.text
    host.close()


class TerminalHuman:
    """A person at a terminal, without a browser: a cookie login, the same Socket.IO protocol. At seat 1
    of the ``tom`` hall: reports V0, accepts every offer, asks seat 0 for its iron ingot with its coal,
    crafts the shears from what the crafting hand can make (a query) and finishes."""

    def __init__(self, conn: RemoteConnection) -> None:
        self.conn = conn
        self.seen: list[dict[str, Any]] = []

    def observe(self, events: list[dict[str, Any]]) -> None:
        self.seen.extend(events)

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        if "report_tom" in legal:
            return {"type": "report_tom", "v0": dict.fromkeys(view["tom"]["items"], 5)}
        if "decide" in legal:
            return {"type": "decide", "accept": True, "message": "deal"}
        if "propose" in legal:
            hands = view["hands"]
            if hands[1].get("coal") and hands[0].get("iron_ingot"):
                return {"type": "propose", "to": 0, "offer": {"coal": 1}, "request": {"iron_ingot": 1}}
            return {"type": "pass"}
        if "craft" in legal and not view["crafting_hand"].get("shears"):
            answer = self.conn.query({"type": "possible_crafts"})
            assert answer["ok"], answer
            for craft in answer["answer"]["crafts"]:
                if craft["recipe"] == "shears":
                    return {"type": "craft", "recipe": "shears", "runs": craft["max_runs"]}
        return {"type": "finish_crafting"}


@pytest.mark.slow
def test_a_remote_llm_agent_recovers_from_every_fault_against_a_terminal_human_through_a_live_server(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tradecraft bot`'s path with an `llm:` spec at seat 0 (V0+V1+V2) and a browser-less person at seat
    1: malformed JSON, a 429, a timeout and a trade the server refuses are each recovered from over the
    network; the ToM reports and the agent's traces land in the server's log, the <think> text in the
    researcher's traces only."""
    host = Client(server.url, "host")
    token = host.rest("POST", "/api/admin/tokens", {"name": "llm-vs-human"}, auth=ADMIN)[1]["token"]
    cookie = login_cookie(server.url, "Grace")
    status, created = host.rest(
        "POST", "/api/games", {"hall": "tom", "seats": ["agent", "human"], "join": False}
    )
    assert status == 201, created
    game_id = created["game"]["game_id"]
    player = ScriptedPlayer(accept_every=1)
    refused_once: list[bool] = []
    # the tools' check against the view passes everything here, so the empty trade (an action model the
    # tools parsed, sent as its JSON) reaches the server, whose engine refuses it (as when a view went stale)
    monkeypatch.setattr("agents.llm.decision.check_against_view", lambda view, action, rules: None)

    def policy(request: dict[str, Any]) -> Reply:
        reply = player(request)
        name, args = reply.tool_calls[0]
        if name == "propose" and not refused_once:
            refused_once.append(True)  # an empty trade: valid JSON, the server's engine refuses it
            return Reply(
                content="<think>Bluff first: they must not see the ingot matters.</think>",
                tool_calls=[("propose", {"to": 1, "offer": {}, "request": {}})],
            )
        if name == "propose":
            return Reply(tool_calls=[(name, {**args, "message": "<think>hide the plan</think>A swap?"})])
        return reply

    script = [
        Reply(tool_calls=[("report_tom", '{"v0": {"coal": ')]),  # malformed JSON
        Reply(status=429, retry_after=0.01, content="slow down"),
        Reply(delay=2.5, tool_calls=[("pass", {})]),  # longer than the client's timeout
    ]
    outcomes: dict[str, Any] = {}
    failures: list[BaseException] = []
    with OpenAITestServer(script, policy=policy) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)

        def agent() -> None:
            try:
                spec = "llm:openai:test-model?timeout=1&backoff=0.01&max_invalid=4"
                outcomes["agent"] = run_bot(server.url, game_id, token, spec, seat=0, seed=3)
            except BaseException as err:  # surfaced below
                failures.append(err)

        thread = threading.Thread(target=agent)
        thread.start()
        with RemoteConnection(server.url, game_id, cookie=cookie, seat=1) as conn:
            human = TerminalHuman(conn)
            outcomes["human"] = run_seat(human, conn, turn_timeout=60)
        thread.join(60)
    assert not failures, failures
    agent_outcome, human_outcome = outcomes["agent"], outcomes["human"]
    assert agent_outcome["finished"] and human_outcome.final_view["finished"]
    assert not agent_outcome["fallback_actions"] and not human_outcome.fallbacks
    # the server refused the empty trade with its typed error; the agent was told and chose again
    assert agent_outcome["refusals"] == 1

    researcher = requests.get(f"{server.url}/api/admin/games/{game_id}/export", auth=ADMIN, timeout=30)
    assert researcher.status_code == 200, researcher.text
    log = decode_log(researcher.text.splitlines())
    reports = {e.actor: e.payload for e in log.events if e.type == "tom_reported" and e.payload["turn"] == 1}
    assert reports[0]["v1"] and reports[0]["v2"] and reports[1]["v1"] is None
    assert set(reports[0]["v0"]) == set(reports[1]["v0"]) == set(DUEL["hands"][0]) | set(DUEL["hands"][1])
    traces = [t.model_dump() for t in log.traces]
    assert traces and {t["seat"] for t in traces} == {0}
    retried = [r["kind"] for t in traces if t.get("trace") == "llm_call" for r in t["provider_retries"]]
    assert retried[:2] == ["rate_limit", "timeout"]
    answers = [r["answer"] for t in traces if t.get("trace") == "tool_results" for r in t["results"]]
    assert answers[0]["error"]["code"] == "invalid_action"
    refused = [t for t in traces if t.get("trace") == "refused"]
    assert [t["error"]["code"] for t in refused] == ["empty_trade"]
    assert any("Bluff first" in (t.get("reasoning") or "") for t in traces if t.get("trace") == "llm_call")
    events_text = json.dumps([e.to_dict() for e in log.events])
    assert "Bluff" not in events_text and "hide the plan" not in events_text
    assert "Bluff" not in json.dumps(human.seen) and "hide the plan" not in json.dumps(human.seen)
    messages = [e.payload.get("message") for e in log.events if e.type == "proposed" and e.actor == 0]
    assert "A swap?" in messages
    participant = requests.get(
        f"{server.url}/api/admin/games/{game_id}/export", params={"seat": 1}, auth=ADMIN, timeout=30
    )
    assert participant.status_code == 200 and "llm_call" not in participant.text
    assert "Bluff" not in participant.text and API_KEY not in researcher.text + server.log()
    host.close()
