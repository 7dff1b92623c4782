"""Remote play over a live server: RemoteConnection (python-socketio client, API token or session cookie)
against ``run_server.py`` on loopback, through a TCP proxy that can break the network on purpose.

Needs a real server process: remote clients over the network, a proxy breaking sockets, a crash.

Covered: a remote random bot plays a whole game against a server bot; a browser-less "human" (cookie
login, a scripted client using queries) plays a whole game, and its query answers equal the local
connection's; dropped sockets mid-game are healed without losing or repeating an event; an action whose
answer is lost with the socket is applied exactly once; ``tradecraft bot`` as a subprocess plays a whole
game against another remote client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from e2e_helpers import ADMIN, DUEL_TRADE, ROOT, MakeServer, ServerProcess
from net_proxy import Proxy

from agents.bots.registry import make_policy
from agents.connection import ConnectionFailed, SeatConnection
from agents.driver import SeatOutcome, run_seat
from agents.local_connection import LocalTable
from agents.remote import RemoteConnection, login_cookie, retry_pause
from craft_rules.loader import load_rule_set
from craft_rules.tasks import parse_instance_file
from server.game import GameSettings


@pytest.fixture
def proxy(server: ServerProcess) -> Iterator[Proxy]:
    net = Proxy(server.port)
    yield net
    net.close()


def make_token(server: ServerProcess, name: str) -> str:
    answer = requests.post(f"{server.url}/api/admin/tokens", json={"name": name}, auth=ADMIN, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()["token"]


def create_game(server: ServerProcess, token: str, seats: list[Any], hall: str = "duel") -> str:
    answer = requests.post(
        f"{server.url}/api/games",
        json={"hall": hall, "seats": seats, "join": False},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["game"]["game_id"]


def whole_log(server: ServerProcess, game_id: str, token: str, seat: int) -> list[dict[str, Any]]:
    """The seat's whole log as the server holds it now (REST, independent of the connection under test)."""
    answer = requests.get(
        f"{server.url}/api/games/{game_id}/events",
        params={"after": -1, "seat": seat},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["events"]


class Recording:
    """Wraps a policy and keeps every event it is shown (to check each arrives once, in order)."""

    def __init__(self, policy: Any, delay: float = 0.0) -> None:
        self.policy = policy
        self.delay = delay
        self.seen: list[dict[str, Any]] = []

    def observe(self, events: list[dict[str, Any]]) -> None:
        self.seen.extend(events)

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        time.sleep(self.delay)
        return self.policy.act(view, legal)


@pytest.mark.slow
def test_a_remote_random_bot_plays_a_whole_game_against_a_server_bot(server: ServerProcess) -> None:
    token = make_token(server, "remote-random")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random"}])
    with RemoteConnection(server.url, game_id, token=token) as conn:
        assert isinstance(conn, SeatConnection) and conn.seat == 0 and conn.status == "running"
        bot = Recording(make_policy("random", 7))
        outcome = run_seat(bot, conn, turn_timeout=60)
        assert conn.finished and conn.status == "finished"
    view = outcome.final_view
    assert view["finished"] and view["end_reason"] in ("max_turns", "target_crafted")
    assert outcome.actions > 0 and not outcome.fallbacks and not outcome.refusals
    log = whole_log(server, game_id, token, 0)
    assert bot.seen == log  # every event exactly once, in order, with the server's times
    assert [e["n"] for e in bot.seen] == list(range(len(log))) and all("time" in e for e in log)
    assert log[-1]["type"] == "game_ended"


def test_connection_failures_are_typed(server: ServerProcess) -> None:
    token = make_token(server, "typed-failures")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random"}])
    with pytest.raises(ConnectionFailed) as bad_token:
        RemoteConnection(server.url, game_id, token="tc_not-a-token", reconnect_timeout=5).connect()
    assert bad_token.value.code == "invalid_token" and "tc_not-a-token" not in bad_token.value.message
    with pytest.raises(ConnectionFailed) as no_game:
        RemoteConnection(server.url, "no-such-game", token=token, reconnect_timeout=5).connect()
    assert no_game.value.code == "unknown_game"
    with RemoteConnection(server.url, game_id, token=token):
        other = make_token(server, "typed-failures-2")
        with pytest.raises(ConnectionFailed) as taken:
            RemoteConnection(server.url, game_id, token=other, seat=0, reconnect_timeout=5).connect()
        assert taken.value.code in ("seat_taken", "game_full")
    with pytest.raises(ConnectionFailed) as down:
        RemoteConnection("http://127.0.0.1:9", game_id, token=token, reconnect_timeout=1).connect()
    assert down.value.code == "connection_lost"


class ScriptedHuman:
    """A browser-less person: trades ingot for coal, then crafts the torch it needs using the queries
    (possible crafts from the crafting hand), as someone clicking through the GUI would."""

    def __init__(self, conn: RemoteConnection) -> None:
        self.conn = conn
        self.queries = 0

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        if "decide" in legal:
            return {"type": "decide", "accept": False, "message": "no thanks"}
        if "propose" in legal:
            hands = view["hands"]
            if hands[0].get("iron_ingot") and hands[1].get("coal"):
                return {"type": "propose", **DUEL_TRADE}
            return {"type": "pass"}
        if "craft" in legal:
            answer = self.conn.query({"type": "possible_crafts"})
            self.queries += 1
            assert answer["ok"], answer
            runnable = {c["recipe"]: c for c in answer["answer"]["crafts"]}
            hand = view["crafting_hand"]
            if "torch" in runnable and not hand.get("torch"):
                return {"type": "craft", "recipe": "torch", "runs": "1/4"}
            if "stick" in runnable and not hand.get("stick") and hand.get("coal"):
                return {"type": "craft", "recipe": "stick", "runs": "1/2"}
        return {"type": "finish_crafting"} if "finish_crafting" in legal else {"type": "pass"}


def test_a_browser_less_human_plays_a_whole_game_against_a_server_bot(server: ServerProcess) -> None:
    cookie = login_cookie(server.url, "Ada")
    assert cookie.startswith("tradecraft_session=")
    created = requests.post(
        f"{server.url}/api/games",
        json={"hall": "duel", "seats": ["open", {"kind": "bot", "bot": "random?accept_probability=1"}]},
        headers={"Cookie": cookie},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    game_id = created.json()["game"]["game_id"]
    with RemoteConnection(server.url, game_id, cookie=cookie) as conn:
        assert conn.seat == 0
        human = ScriptedHuman(conn)
        outcome = run_seat(human, conn, turn_timeout=60)
    view = outcome.final_view
    assert view["finished"] and human.queries >= 1 and not outcome.fallbacks
    # the bot accepts every proposal: the trade happens and the human crafts its torch and wins
    assert 0 in view["winners"] and view["hands"][0].get("torch") == 1, view
    with pytest.raises(ConnectionFailed):
        login_cookie(server.url, "")  # an empty name is refused with the server's code


def test_remote_and_local_queries_agree(server: ServerProcess, tmp_path: Path) -> None:
    token = make_token(server, "queries-agree")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random"}])
    instance_file = Path(server.config).parent / "instances" / "minecraft" / "1p_v_1p" / "servertest.json"
    instance = parse_instance_file(instance_file, "minecraft", "1p_v_1p")[0]
    local = LocalTable.new(instance, GameSettings(max_turns=3), load_rule_set("minecraft"), 0).connection(0)
    queries = [
        {"type": "item_info", "item": "torch"},
        {"type": "recipe_search", "text": "shears", "limit": 5},
        {"type": "possible_crafts", "limit": 20},
        {"type": "craftable"},
        {"type": "craftable", "item": "shears"},
        {"type": "crafting_tree", "item": "torch", "count": 2},
        {"type": "item_info", "item": "no_such_item"},
        {"type": "recipe_search", "text": ""},
    ]
    with RemoteConnection(server.url, game_id, token=token) as remote:
        assert remote.view()["turn"] == 1 and remote.view()["phase"] == "trade_propose"
        for query in queries:
            far, near = remote.query(query), local.query(query)
            assert far["ok"] == near["ok"], query
            if far["ok"]:
                assert far["answer"] == near["answer"] and far["seat"] == near["seat"] == 0
            else:
                assert far["error"]["code"] == near["error"]["code"], query


@pytest.mark.slow
def test_dropped_sockets_mid_game_are_healed_without_losing_or_repeating_events(
    server: ServerProcess, proxy: Proxy
) -> None:
    tokens = [make_token(server, f"flaky-{uuid.uuid4().hex[:6]}") for _ in range(2)]
    game_id = create_game(server, tokens[0], ["agent", "agent"], hall="duel")
    players = [
        Recording(make_policy("random", 1), delay=0.15),
        Recording(make_policy("random", 2), delay=0.15),
    ]
    outcomes: dict[int, SeatOutcome] = {}
    errors: list[BaseException] = []
    # seat 0 goes through the flaky network; seat 1 straight to the server
    conns = [
        RemoteConnection(proxy.url, game_id, token=tokens[0], seat=0, timeout=5).connect(),
        RemoteConnection(server.url, game_id, token=tokens[1], seat=1).connect(),
    ]

    def play(seat: int) -> None:
        try:
            outcomes[seat] = run_seat(players[seat], conns[seat], turn_timeout=60)
        except BaseException as err:  # reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=play, args=(seat,)) for seat in (0, 1)]
    for thread in threads:
        thread.start()
    drops = 0
    while any(t.is_alive() for t in threads) and drops < 4:
        time.sleep(0.4)
        drops += proxy.drop_all() > 0
    for thread in threads:
        thread.join(timeout=90)
    for conn in conns:
        conn.close()
    assert not errors, errors
    assert drops >= 2 and conns[0].reconnects >= 2
    for seat in (0, 1):
        assert outcomes[seat].final_view["finished"]
        log = whole_log(server, game_id, tokens[seat], seat)
        assert players[seat].seen == log  # nothing lost, nothing twice
        assert not [r for r in outcomes[seat].refusals if r["error"]["code"] == "idempotency_conflict"]


def test_an_action_whose_answer_is_lost_with_the_socket_is_applied_once(
    server: ServerProcess, proxy: Proxy
) -> None:
    token = make_token(server, "lost-answer")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random?finish_probability=1"}])
    with RemoteConnection(proxy.url, game_id, token=token, timeout=5) as conn:
        assert conn.wait_for_turn(10) and conn.act({"type": "pass"})["ok"]
        assert conn.wait_for_turn(10) and conn.view()["phase"] == "craft"
        assert conn.view()["crafting_hand"]["oak_planks"] == "2"
        conn.events()
        proxy.lose_next_answer()
        answer = conn.act({"type": "craft", "recipe": "stick", "runs": "1/2"})  # 1 of the 2 planks
        assert answer["ok"], answer
        assert proxy.cuts == 1 and conn.reconnects == 1
        # applied once: one plank left and two sticks, not zero and four
        assert conn.view()["crafting_hand"] == {
            "cobblestone": "1",
            "iron_ingot": "1",
            "oak_planks": "1",
            "stick": "2",
        }
        crafted = [e for e in conn.events() if e["type"] == "crafted"]
        assert len(crafted) == 1
        log = whole_log(server, game_id, token, 0)
        assert sum(e["type"] == "crafted" for e in log) == 1
        # the game plays on normally over the new socket
        outcome = run_seat(make_policy("random", 3), conn, turn_timeout=60)
        assert outcome.final_view["finished"]


def tradecraft_cli() -> list[str]:
    return [sys.executable, "-c", "from tradecraft.cli import main; main()"]


@pytest.mark.slow
def test_tradecraft_bot_plays_a_whole_game_against_another_remote_client(
    server: ServerProcess, tmp_path: Path
) -> None:
    tokens = [make_token(server, "cli-host"), make_token(server, "cli-bot")]
    game_id = create_game(server, tokens[0], ["agent", "agent"])
    traces = tmp_path / "traces.jsonl"
    env = {**os.environ, "TRADECRAFT_TOKEN": tokens[1]}  # the token by environment, not on the command line
    bot = subprocess.Popen(
        [
            *tradecraft_cli(),
            "bot",
            "--server",
            server.url,
            "--game",
            game_id,
            "--seat",
            "1",
            "--policy",
            "random?accept_probability=0.8",
            "--seed",
            "5",
            "--traces",
            str(traces),
            "--json",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with RemoteConnection(server.url, game_id, token=tokens[0], seat=0) as host:
            outcome = run_seat(make_policy("random", 8), host, turn_timeout=60)
        out, err = bot.communicate(timeout=60)
    finally:
        if bot.poll() is None:
            bot.kill()
    assert bot.returncode == 0, err
    result = json.loads(out)
    assert result["ok"] and result["seat"] == 1 and result["status"] == "finished" and result["finished"]
    assert result["winners"] == outcome.winners and result["end_reason"] == outcome.final_view["end_reason"]
    assert result["actions"] > 0 and result["fallbacks"] == 0 and traces.exists()
    assert tokens[1] not in out + err


@pytest.mark.slow
def test_tradecraft_bot_refusals_are_typed(server: ServerProcess) -> None:
    token = make_token(server, "cli-refusals")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random"}])
    cases = [
        (["--policy", "nobody", "--token", token], "unknown_bot"),
        (["--policy", "random?speed=9", "--token", token], "invalid_bot_spec"),
        (["--token", "tc_wrong"], "invalid_token"),
    ]
    for extra, code in cases:
        done = subprocess.run(
            [*tradecraft_cli(), "bot", "--server", server.url, "--game", game_id, "--json", *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        assert json.loads(done.stdout)["error"]["code"] == code


def test_tradecraft_bot_starts_without_the_web_layer() -> None:
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from tradecraft.cli import main\n"
        "result = CliRunner().invoke(main, ['bot', '--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "import agents.bot_cli, agents.remote, agents.driver\n"
        "web = ('flask', 'flask_socketio', 'werkzeug', 'server.web.app', 'server.table.master')\n"
        "print(sorted(m for m in web if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_seat_handed_to_a_bot_for_idleness_stops_the_driver(server: ServerProcess) -> None:
    token = make_token(server, "too-slow")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random"}], hall="idle")
    slow = Recording(make_policy("random", 4), delay=1.5)  # the hall's deadlines are 0.5 s
    with RemoteConnection(server.url, game_id, token=token) as conn:
        outcome = run_seat(slow, conn, turn_timeout=30)
        assert outcome.seat_lost is not None and outcome.seat_lost["code"] == "seat_taken_over"
        assert len(outcome.refusals) == 1 and not outcome.fallbacks  # stopped at once, no retry storm
        seats = conn.envelope()["seats"]
        assert seats[0]["bot"]  # the server's bot plays the seat on


def test_pushes_and_acks_in_any_order_give_each_event_once_and_the_newest_envelope() -> None:
    conn = RemoteConnection("http://127.0.0.1:9", "g1", token="tc_x")  # never connected: bookkeeping only

    def event(n: int) -> dict[str, Any]:
        return {"n": n, "type": f"e{n}", "actor": None, "payload": {}, "visibility": "public"}

    def envelope(size: int, events: list[int], game_id: str = "g1") -> dict[str, Any]:
        view = {"log_size": size, "your_turn": False, "finished": False}
        return {"game_id": game_id, "status": "running", "seat": 0, "log_size": size, "view": view,
                "events": [event(n) for n in events]}  # fmt: skip

    conn._absorb(envelope(3, [0, 1, 2]))
    conn._absorb(envelope(5, [3, 4]))  # an ack ...
    conn._absorb(envelope(4, [3]))  # ... and the older push it overtook
    conn._absorb(envelope(9, [7, 8], game_id="another"))  # another game's push is ignored
    assert conn.envelope()["log_size"] == 5
    assert [e["n"] for e in conn.events()] == [0, 1, 2, 3, 4]
    conn._absorb(envelope(5, [2, 3, 4]))  # repeats of what was handed out
    assert conn.events() == []
    conn._absorb(envelope(7, [6]))  # event 5 missing: nothing past the gap is handed out
    with conn._cond:
        ready = 5 in conn._log
    assert not ready and conn.envelope()["log_size"] == 7


@pytest.mark.slow
def test_remote_players_ride_out_a_server_crash_and_restart(make_server: MakeServer) -> None:
    first = make_server()
    tokens = [make_token(first, f"crash-{seat}") for seat in (0, 1)]
    game_id = create_game(first, tokens[0], ["agent", "agent"])
    players = [
        Recording(make_policy("random", 11), delay=0.2),
        Recording(make_policy("random", 12), delay=0.2),
    ]
    conns = [
        RemoteConnection(
            first.url, game_id, token=tokens[s], seat=s, timeout=5, reconnect_timeout=60
        ).connect()
        for s in (0, 1)
    ]
    outcomes: dict[int, SeatOutcome] = {}
    errors: list[BaseException] = []

    def play(seat: int) -> None:
        try:
            outcomes[seat] = run_seat(players[seat], conns[seat], turn_timeout=90)
        except BaseException as err:  # reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=play, args=(seat,)) for seat in (0, 1)]
    for thread in threads:
        thread.start()
    time.sleep(0.8)  # a few moves in
    first.kill()  # SIGKILL: no goodbye to any socket
    assert not conns[0].finished  # the crash really is mid-game
    seen_before = len(players[0].seen)
    time.sleep(1.0)
    second = make_server(first.config, port=first.port)
    for thread in threads:
        thread.join(timeout=120)
    for conn in conns:
        conn.close()
    assert not errors, errors
    assert all(conn.reconnects >= 1 for conn in conns)
    for seat in (0, 1):
        assert outcomes[seat].final_view["finished"]
        assert players[seat].seen == whole_log(second, game_id, tokens[seat], seat)
    assert len(players[0].seen) > seen_before


class Tracing(Recording):
    """A policy that keeps a trace record of every move, as an LLM agent does."""

    def __init__(self, policy: Any) -> None:
        super().__init__(policy)
        self.pending: list[dict[str, Any]] = []
        self.moves = 0

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        action = super().act(view, legal)
        self.moves += 1
        self.pending.append({"kind": "decision", "move": self.moves, "prompt": "p" * 3_000, "action": action})
        return action

    def drain_traces(self) -> list[dict[str, Any]]:
        out, self.pending = self.pending, []
        return out


def researcher_log(server: ServerProcess, game_id: str) -> Any:
    from server.game.gamelog import decode_log

    answer = requests.get(f"{server.url}/api/admin/games/{game_id}/export", auth=ADMIN, timeout=30)
    assert answer.status_code == 200, answer.text
    return decode_log(answer.text.splitlines())


def test_a_remote_agents_traces_are_kept_with_the_game_for_researchers_only(server: ServerProcess) -> None:
    token = make_token(server, "remote-tracer")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random"}])
    with RemoteConnection(server.url, game_id, token=token) as conn:
        agent = Tracing(make_policy("random", 3))
        outcome = run_seat(agent, conn, turn_timeout=60)
    assert agent.moves > 0 and len(outcome.traces) == agent.moves
    log = researcher_log(server, game_id)
    kept = [t for t in log.traces if t.seat == 0]
    assert len(kept) == agent.moves
    # each record is linked to the event its move produced, and that event is the seat's own action
    events = {e.seq: e for e in log.events}
    for trace in kept:
        assert trace.event_seq is not None and events[trace.event_seq].actor == 0
    participant = requests.get(
        f"{server.url}/api/admin/games/{game_id}/export",
        params={"seat": 0},
        auth=ADMIN,
        timeout=30,
    )
    assert participant.status_code == 200 and "ppppp" not in participant.text


def test_trace_requests_are_bounded_and_only_an_agents_own_seat(server: ServerProcess) -> None:
    token = make_token(server, "trace-bounds")
    other = make_token(server, "trace-other")
    game_id = create_game(server, token, ["agent", "agent"])

    def send(who: str, body: dict[str, Any] | None = None, **headers: str) -> requests.Response:
        return requests.post(
            f"{server.url}/api/games/{game_id}/traces",
            json=body if body is not None else {"traces": [{"note": "x"}]},
            headers={"Authorization": f"Bearer {who}", **headers},
            timeout=10,
        )

    requests.post(
        f"{server.url}/api/games/{game_id}/join",
        json={"seat": 0},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert send(other).json()["error"]["code"] == "spectator"  # holds no seat in this game
    requests.post(
        f"{server.url}/api/games/{game_id}/join",
        json={"seat": 1},
        headers={"Authorization": f"Bearer {other}"},
        timeout=10,
    )
    mine = send(token, {"traces": [{"note": "x"}], "seat": 1})
    assert mine.status_code == 403 and mine.json()["error"]["code"] == "not_your_seat"
    for bad in ([], [1, 2], [{"n": i} for i in range(51)], "text"):
        answer = send(token, {"traces": bad})
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_request", bad
    assert send(token, {"traces": [{"n": 1}], "event_n": 10**6}).json()["error"]["code"] == "invalid_request"
    assert send(token, {"traces": [{"n": 1}], "event_n": True}).json()["error"]["code"] == "invalid_request"
    ok = send(token, {"traces": [{"note": "kept"}], "event_n": 0, "batch_id": "b1"}).json()
    assert ok["ok"] and ok["stored"] == 1 and ok["seat"] == 0
    resent = send(token, {"traces": [{"note": "kept"}], "event_n": 0, "batch_id": "b1"}).json()
    assert resent["ok"] and resent["stored"] == 1 and resent["duplicate"] is True  # counted once
    assert (
        send(token, {"traces": [{"n": 1}], "batch_id": "x" * 65}).json()["error"]["code"] == "invalid_request"
    )
    cookie = login_cookie(server.url, "Person")
    person = requests.post(
        f"{server.url}/api/games/{game_id}/traces",
        json={"traces": [{"n": 1}]},
        headers={"Cookie": cookie},
        timeout=10,
    )
    assert person.status_code == 403 and person.json()["error"]["code"] == "not_an_agent"
    log = researcher_log(server, game_id)
    assert [t.model_dump().get("note") for t in log.traces] == ["kept"]


@pytest.mark.slow
def test_each_seat_has_its_own_share_of_the_games_trace_records(make_server: MakeServer) -> None:
    """One agent used to be able to fill the game's whole trace quota and crowd out its opponent's."""
    server = make_server(env={"TRADECRAFT__BOTS__TRACES_PER_GAME": "10"})
    tokens = [make_token(server, "share-a"), make_token(server, "share-b")]
    game_id = create_game(server, tokens[0], ["agent", "agent"])
    for seat, token in enumerate(tokens):
        requests.post(
            f"{server.url}/api/games/{game_id}/join",
            json={"seat": seat},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )

    def send(token: str, count: int) -> dict[str, Any]:
        return requests.post(
            f"{server.url}/api/games/{game_id}/traces",
            json={"traces": [{"i": i} for i in range(count)]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        ).json()

    greedy = send(tokens[0], 8)
    assert greedy["ok"] and (greedy["stored"], greedy["dropped"]) == (5, 3)
    assert send(tokens[0], 1)["stored"] == 0
    fair = send(tokens[1], 5)
    assert fair["ok"] and fair["stored"] == 5
    log = researcher_log(server, game_id)
    assert sorted(t.seat for t in log.traces) == [0] * 5 + [1] * 5


def test_a_remote_seat_waits_out_a_rate_limit_instead_of_failing_the_request(make_server: MakeServer) -> None:
    """A request the server refuses for now (``rate_limited`` with ``retry_after``, ``action_in_progress``)
    is sent again after the pause, within ``reconnect_timeout``: the policy never sees a busy server."""
    server = make_server(overrides={"limits": {"socket_events_per_connection": {"count": 4, "seconds": 1}}})
    token = make_token(server, "patient")
    game_id = create_game(server, token, ["agent", {"kind": "bot", "bot": "random"}])
    with RemoteConnection(server.url, game_id, token=token, reconnect_timeout=20) as conn:
        answers = [conn.query({"type": "item_info", "item": "stick"}) for _ in range(10)]
    assert all(answer["ok"] for answer in answers), [a.get("error") for a in answers]


@pytest.mark.parametrize(
    ("answer", "pause"),
    [
        ({"ok": True}, None),
        ({"ok": False, "error": {"code": "not_your_turn"}}, None),
        ({"ok": False, "error": {"code": "action_in_progress"}}, 0.2),
        ({"ok": False, "error": {"code": "rate_limited", "details": {"retry_after": 2}}}, 2.0),
        ({"ok": False, "error": {"code": "rate_limited", "details": {"retry_after": "2"}}}, 1.0),
        ({"ok": False, "error": {"code": "rate_limited", "details": {"retry_after": 10**9}}}, 1.0),
    ],
)
def test_which_answers_are_sent_again(answer: dict[str, Any], pause: float | None) -> None:
    assert retry_pause(answer) == pause
