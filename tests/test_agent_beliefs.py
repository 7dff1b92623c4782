"""``GET /api/games/<id>/beliefs`` (server/web/beliefs.py) on a real run_server.py over real sockets, SQLite
and the MongoDB wire server: what the agent seats believed, said and reasoned, shown only after the end.

- before the end: ``game_not_over`` and nothing else (no seats, no counts), to players and spectators alike;
- after: every agent seat's reports equal its ``tom_reported`` events, each truth equals the reference
  values of the real target (craft_rules.values.reference_values over the turn's public hands), the human
  seat and its own reports never appear; a ToM bot's reasoning reaches the other player, not a spectator;
- ``show_agent_reasoning: false`` leaves no reasoning for anyone;
- an LLM seat (LangChain ChatOpenAI against agents/testing/openai_server.py) shows its trace reasoning.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from e2e_helpers import ADMIN, Client, MakeServer, ServerProcess, play_duel, write_config
from mongo_server import database_uri, drop_database

from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer
from craft_rules.loader import load_rule_set
from craft_rules.values import reference_values
from server.game.gamelog import GameLog, decode_log
from server.web.beliefs import (
    MAX_REASONING_STEPS,
    MAX_TEXT_CHARS,
    ComputedBeliefs,
    reasoning_entries,
    reasoning_note,
    reasoning_text,
)

HUMAN_V0 = 7  # the person's own reports, which no answer may use (V2 is judged by the reference values)
HUMAN_V1 = 3


def tom_hall(show_reasoning: bool = True, bot_spec: str = "tom2") -> dict[str, Any]:
    return {
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "generated"},
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": bot_spec, "name": "Tomas"}],
        "allow_custom_seats": False,
        "game": {"max_turns": 3, "tom_orders": [[0, 1], [0, 1, 2]], "show_agent_reasoning": show_reasoning},
    }


def config(folder: Path, database: str | None = None, halls: dict[str, Any] | None = None) -> Path:
    path = write_config(folder, database_uri=database)
    settings = yaml.safe_load(path.read_text(encoding="utf-8"))
    settings["halls"].update(halls or {"tom_bot": tom_hall(), "tom_quiet": tom_hall(show_reasoning=False)})
    path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    return path


def beliefs(client: Client | requests.Session, url: str, game_id: str) -> tuple[int, dict[str, Any]]:
    if isinstance(client, Client):
        return client.rest("GET", f"/api/games/{game_id}/beliefs")
    response = client.get(f"{url}/api/games/{game_id}/beliefs", timeout=30)
    return response.status_code, response.json()


def start_game(person: Client, hall: str) -> str:
    created = person.call("create_game", {"hall": hall, "join": True})
    assert created["ok"], created
    return str(created["game"]["game_id"])


def play_as_person(person: Client, game_id: str, on_each_step: Any = None, timeout: float = 120) -> None:
    """Seat 0 to the end: reports (HUMAN_V0 / HUMAN_V1 everywhere), passes, rejects, finishes crafting;
    ``on_each_step()`` is called while the game runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = person.rest("GET", f"/api/games/{game_id}/view")
        assert status == 200, body
        view = body["view"]
        if view["finished"]:
            return
        if on_each_step is not None:
            on_each_step()
        legal = view["legal_actions"]
        if "report_tom" in legal:
            items = view["tom"]["items"]
            ack = person.act(
                game_id,
                "report_tom",
                v0={i: HUMAN_V0 for i in items},
                v1={"1": {i: HUMAN_V1 for i in items}},
            )
        elif "decide" in legal:
            ack = person.act(game_id, "decide", accept=False, message="not this one")
        elif "pass" in legal:
            ack = person.act(game_id, "pass")
        elif "finish_crafting" in legal:
            ack = person.act(game_id, "finish_crafting")
        else:
            time.sleep(0.05)
            continue
        assert ack["ok"], ack
    raise AssertionError(f"game {game_id} did not end in {timeout} s")


def researcher_log(server: ServerProcess, game_id: str) -> GameLog:
    response = requests.get(f"{server.url}/api/admin/games/{game_id}/export", auth=ADMIN, timeout=30)
    assert response.status_code == 200, response.text
    return decode_log(response.text.splitlines())


def turn_hands(log: GameLog) -> dict[int, list[dict[str, int]]]:
    """The public hands at the start of each turn (what its reports cover)."""
    hands = [dict(h) for h in log.header.instance.hands]  # type: ignore[union-attr]
    found: dict[int, list[dict[str, int]]] = {}
    for event in log.events:
        if event.type in ("game_started", "hands_revealed"):
            hands = [dict(h) for h in event.payload["hands"]]
        if event.type == "phase_started" and event.payload.get("phase") == "tom_report":
            found[int(event.payload["turn"])] = [dict(h) for h in hands]
    return found


def check_reports_against_log(answer: dict[str, Any], log: GameLog, agent_seat: int) -> None:
    """The agent's reports are exactly its tom_reported events; every truth is a reference value of the
    real target the report is about; the person's seat and its reports appear nowhere."""
    rules = load_rule_set("minecraft")
    targets = log.header.instance.targets  # type: ignore[union-attr]
    whole = log.header.settings.get("crafting_runs") == "whole"
    hands = turn_hands(log)
    assert [s["seat"] for s in answer["seats"]] == [agent_seat]
    reports = answer["seats"][0]["reports"]
    events = [e.payload for e in log.events if e.type == "tom_reported" and e.payload["seat"] == agent_seat]
    assert events, "the bot reported"
    expected = []
    for payload in events:
        turn = payload["turn"]
        expected.append((turn, 0, None, payload["v0"]))
        for order in ("v1", "v2"):
            for about, values in (payload.get(order) or {}).items():
                expected.append((turn, int(order[1]), int(about), values))
    shown = [
        (r["turn"], r["order"], r["about"], {i["item"]: i["reported"] for i in r["items"]}) for r in reports
    ]
    assert sorted(shown, key=repr) == sorted(expected, key=repr)
    for report in reports:
        about = agent_seat if report["order"] in (0, 2) else report["about"]
        truth = reference_values(rules, targets[about], hands[report["turn"]], whole_runs=whole)
        assert {i["item"]: i["truth"] for i in report["items"]} == {
            i["item"]: truth[i["item"]] for i in report["items"]
        }
    assert all(r["about"] in (None, 0) for r in reports)  # only the opponent is estimated


@pytest.fixture(scope="module")
def tom_server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    return make_server(config(tmp_path_factory.mktemp("beliefs")))


def test_beliefs_are_refused_until_the_end_then_match_the_log(tom_server: ServerProcess) -> None:
    person = Client(tom_server.url, "Ada").connect()
    spectator = requests.Session()
    try:
        game_id = start_game(person, "tom_bot")
        refusals: list[tuple[int, dict[str, Any]]] = []

        def ask_early() -> None:
            if len(refusals) < 6:
                refusals.append(beliefs(person, tom_server.url, game_id))
                refusals.append(beliefs(spectator, tom_server.url, game_id))

        play_as_person(person, game_id, ask_early)
        assert len(refusals) >= 4
        for status, body in refusals:  # the same few keys whatever the game holds: nothing leaks
            assert status == 409
            assert body["ok"] is False and body["error"]["code"] == "game_not_over"
            assert (
                set(body["error"]["details"]) == {"status"}
                and body["error"]["details"]["status"] == "running"
            )
            assert "seats" not in body and "report" not in json.dumps(body)

        log = researcher_log(tom_server, game_id)
        status, mine = beliefs(person, tom_server.url, game_id)
        assert status == 200, mine
        check_reports_against_log(mine, log, agent_seat=1)
        seat = mine["seats"][0]
        assert seat["kind"] == "bot" and seat["policy"] == "tom2" and seat["name"] == "Tomas"
        assert mine["viewer_seats"] == [0]
        # the other player of a duel reads the bot's reasoning: each of its proposals and decisions
        assert seat["reasoning_note"] is None and seat["reasoning"], seat
        decided = {
            (e.payload["turn"], e.type)
            for e in log.events
            if e.actor == 1 and e.type in ("proposed", "passed")
        }
        proposals = [r for r in seat["reasoning"] if r["decision"] == "propose"]
        assert {r["turn"] for r in proposals} == {turn for turn, _ in decided}
        assert all("possible offers" in r["text"] for r in proposals)
        # the person rejected every proposal: those stay between the two, so a spectator reads no message
        # of the bot's (and no reasoning, which may mention them), but the same reports and truths
        status, public = beliefs(spectator, tom_server.url, game_id)
        assert status == 200, public
        assert public["viewer_seats"] == []
        spectator_seat = public["seats"][0]
        assert spectator_seat["reasoning"] is None and "players" in spectator_seat["reasoning_note"]
        assert spectator_seat["reports"] == seat["reports"]
        assert spectator_seat["messages"] == []
        assert "not this one" not in json.dumps(public)
    finally:
        person.close()
        spectator.close()


def test_reasoning_is_kept_from_everyone_when_the_game_says_so(tom_server: ServerProcess) -> None:
    person = Client(tom_server.url, "Bea").connect()
    try:
        game_id = start_game(person, "tom_quiet")
        play_as_person(person, game_id)
        status, answer = beliefs(person, tom_server.url, game_id)
        admin = requests.get(f"{tom_server.url}/api/games/{game_id}/beliefs", auth=ADMIN, timeout=30).json()
    finally:
        person.close()
    assert status == 200
    for body in (answer, admin):
        seat = body["seats"][0]
        assert seat["reasoning"] is None and "settings" in seat["reasoning_note"]
        assert seat["reports"], "the reports are still shown"


def test_people_only_games_show_no_seat_and_waiting_games_are_refused(tom_server: ServerProcess) -> None:
    p0, p1 = Client(tom_server.url, "Gus").connect(), Client(tom_server.url, "Hal").connect()
    try:
        game_id = start_game(p0, "duel")
        status, waiting = beliefs(p1, tom_server.url, game_id)
        assert status == 409 and waiting["error"]["details"] == {"status": "waiting"}
        assert p1.call("join", {"game_id": game_id})["ok"]
        play_duel(game_id, p0, p1)
        status, answer = beliefs(p1, tom_server.url, game_id)
    finally:
        p0.close()
        p1.close()
    assert status == 200, answer
    assert answer["seats"] == [] and answer["viewer_seats"] == [1]
    assert "ingot for coal" not in json.dumps(answer)  # a person's messages are not an agent's


def test_reasoning_reaches_the_seat_the_other_duellist_and_admins_only() -> None:
    duel = ComputedBeliefs(2, True, [], {}, {}, {})
    trio = ComputedBeliefs(3, True, [], {}, {}, {})
    quiet = ComputedBeliefs(2, False, [], {}, {}, {})
    assert reasoning_note(duel, 1, [0], admin=False) is None
    assert reasoning_note(duel, 1, [], admin=False) is not None  # a spectator
    assert reasoning_note(duel, 1, [], admin=True) is None
    assert reasoning_note(trio, 1, [0], admin=False) is not None  # it may mention a proposal seat 0 never saw
    assert reasoning_note(trio, 1, [1], admin=False) is None  # the agent's own holder
    assert reasoning_note(trio, 1, [], admin=True) is None
    assert reasoning_note(quiet, 1, [0], admin=True) is not None  # the setting wins
    # the sentence depends on who asks, never on what the game held
    assert reasoning_note(trio, 1, [0], admin=False) == reasoning_note(trio, 2, [0], admin=False)


def test_unknown_and_malformed_games_are_typed_errors(tom_server: ServerProcess) -> None:
    for game_id in ("no-such-game", "x" * 300):
        response = requests.get(f"{tom_server.url}/api/games/{game_id}/beliefs", timeout=10)
        assert response.status_code in (400, 404)
        assert response.json()["ok"] is False and response.json()["error"]["code"]


def test_the_mongodb_store_serves_the_same_beliefs(
    make_server: MakeServer, tmp_path: Path, mongo_uri: str
) -> None:
    database = database_uri(mongo_uri, f"tc_beliefs_{tmp_path.name[-12:]}")
    server = make_server(config(tmp_path, database))
    person = Client(server.url, "Cy").connect()
    try:
        game_id = start_game(person, "tom_bot")
        assert beliefs(person, server.url, game_id)[0] == 409
        play_as_person(person, game_id)
        status, answer = beliefs(person, server.url, game_id)
        log = researcher_log(server, game_id)
    finally:
        person.close()
        server.stop()
        drop_database(database)
    assert status == 200, answer
    check_reports_against_log(answer, log, agent_seat=1)
    assert answer["seats"][0]["reasoning"]


# ------------------------------------------------------------------------------------------ an LLM seat
@pytest.mark.slow
def test_an_llm_seat_shows_its_trace_reasoning_and_messages(make_server: MakeServer, tmp_path: Path) -> None:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1, explain=True)) as model_server:
        spec = "llm:openai:test-model?timeout=10&backoff=0.01"
        path = config(
            tmp_path,
            halls={
                "llm_bot": {
                    **tom_hall(bot_spec=spec),
                    "seats": [{"kind": "open"}, {"kind": "bot", "bot": spec, "name": "Model"}],
                }
            },
        )
        env = {"OPENAI_API_KEY": "sk-test-beliefs-0123456789", "OPENAI_BASE_URL": model_server.base_url}
        server = make_server(path, env=env)
        person = Client(server.url, "Dee").connect()
        try:
            game_id = start_game(person, "llm_bot")
            play_as_person(person, game_id)
            status, answer = beliefs(person, server.url, game_id)
            spectator = requests.get(f"{server.url}/api/games/{game_id}/beliefs", timeout=30).json()
            log = researcher_log(server, game_id)
        finally:
            person.close()
            server.stop()
    assert status == 200, answer
    check_reports_against_log(answer, log, agent_seat=1)
    # the person rejected every proposal of the model: a spectator reads none of them, nor its reasoning
    assert spectator["seats"][0]["messages"] == [] and spectator["seats"][0]["reasoning"] is None
    assert "My plan" not in json.dumps(spectator) and "swap" not in json.dumps(spectator)
    seat = answer["seats"][0]
    assert seat["policy"] == spec
    texts = [r["text"] for r in seat["reasoning"]]
    assert texts and all(t.startswith("My plan ") for t in texts), texts
    traced = [t for t in log.traces if (t.model_extra or {}).get("reasoning")]
    assert len(texts) == len(traced)
    proposals = [e.payload["message"] for e in log.events if e.type == "proposed" and e.actor == 1]
    assert any(proposals), "the model wrote messages with its proposals"
    assert [m["text"] for m in seat["messages"] if m["kind"] == "proposal"] == [p for p in proposals if p]


def test_each_policys_trace_becomes_a_sentence_or_nothing() -> None:
    rules = load_rule_set("minecraft")
    names = ["Ada", "Tomas"]
    offer = {"to": 0, "offer": {"coal": 1}, "request": {"iron_ingot": 1}}
    tom_propose = {"event": "propose", "offers": 4, "candidates": [{"ev": 0.25}], "chosen": offer}
    assert reasoning_text(tom_propose, rules, names) == (
        "propose",
        "Weighed 4 possible offers; the best one's expected gain (its score for how much the trade helps it) "
        "was 0.25. Chose to offer Ada 1 Coal for 1 Iron Ingot.",
    )
    assert "passed" in reasoning_text({**tom_propose, "chosen": None}, rules, names)[1]  # type: ignore[index]
    decided = reasoning_text({"event": "decide", "gain": 0.5, "race": 0.1, "utility": -0.2}, rules, names)
    assert decided is not None and decided[1].endswith("it rejected.")
    planner = {"event": "candidates", "best": [{"offer": offer, "gain": 0.4}]}
    assert reasoning_text(planner, rules, names) == (
        "propose",
        "Its best offers by how much they bring its target closer: offer Ada 1 Coal for 1 Iron Ingot "
        "(gain 0.40).",
    )
    llm = {"trace": "llm_call", "decision": "2:trade_propose:0", "reasoning": "  I need coal.  "}
    assert reasoning_text(llm, rules, names) == ("propose", "I need coal.")
    # an LLM call's move key names its decision in the bots' words; anything else is "move"
    for key, word in (("1:tom_report:0", "report"), ("3:trade_decide:0", "decide"), ("3:craft:2", "craft")):
        assert reasoning_text({**llm, "decision": key}, rules, names) == (word, "I need coal.")
    for odd in ("turn 2 propose", "1:unknown:0", None, 7):
        assert reasoning_text({**llm, "decision": odd}, rules, names) == ("move", "I need coal.")
    for nothing in (
        {"event": "decide", "accept": False},  # a scripted partner's move, no reasoning
        {"event": "report", "v0": {}},
        {"trace": "llm_call", "reasoning": None},
        {"trace": "llm_probe"},
    ):
        assert reasoning_text(nothing, rules, names) is None


def test_reasoning_is_bounded_per_seat_and_per_text() -> None:
    rules = load_rule_set("minecraft")
    long = "why " * 1000
    traces = [{"seat": 1, "trace": "llm_call", "decision": "move", "reasoning": long}] * (
        MAX_REASONING_STEPS + 5
    )
    traces.append({"seat": 0, "trace": "llm_call", "reasoning": "a person's seat is never read"})
    found, cut = reasoning_entries(traces, [], {1}, rules, ["Ada", "Model"])
    assert set(found) == {1} and cut == {1: True}
    assert len(found[1]) == MAX_REASONING_STEPS
    assert all(len(r.text) == MAX_TEXT_CHARS + 1 and r.text.endswith("…") for r in found[1])


def test_the_server_reads_value_reports_without_loading_pandas() -> None:
    """The beliefs endpoint uses analysis.tom_scores (pure Python); importing it must not pull in the
    analysis package's pandas tables, which cost a server process about 150 MB (the deployment test's RSS
    bound failed when it did)."""
    script = (
        "import sys, server.web.app, analysis.tom_scores\n"
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
