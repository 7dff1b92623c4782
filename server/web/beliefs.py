"""``GET /api/games/<id>/beliefs``: after a game, what each agent seat (a built-in bot or an LLM agent,
never a person) believed, turn by turn, beside the truth; what it said; and why it moved, where the game
allows it.

For every bot or agent seat of a **finished** game:

- ``reports``: its V0 / V1 / V2 value reports (``tom_reported`` events), each value beside the truth: the
  reference values (``craft_rules/values.py``) of the real target the report is about, computed over the
  public hands at the start of that turn (:func:`analysis.tom_scores.tom_score_rows`): V0 and V2 against the
  seat's own target (V2 is its guess of what the other thinks it needs; an opponent who had read its target
  exactly would hold those values), V1 about seat ``j`` against ``j``'s target. Another seat's own reports
  are never used or shown (a person's reports stay private after the game).
- ``messages``: its proposal and reply messages, from the events the caller could see while playing (a
  rejected proposal stays between its two parties).
- ``reasoning``: one entry per decision, from the trace records its policy left: an LLM's reasoning text, a
  ToM bot's weighed options in a sentence. Shown only when the game's ``show_agent_reasoning`` is on, and
  only to the seat's own holder, to the other player of a two-player game, and to admins: a policy's
  reasoning may mention a rejected proposal, which only its two parties saw, so spectators and the other
  players of a larger game never read it (whatever the game held, so its absence says nothing).

Before the end the request is refused with ``game_not_over`` and nothing else (no counts, no seats). Cost is
bounded: a finished game is read and computed once (its log is that of the finished game, its traces at most
``bots.traces_per_game``) and the answer cached (:data:`CACHED_GAMES` games; trace records an API agent
sends after that are in the researchers' export only); each answer holds at most
:data:`MAX_TURNS` turns of reports, :data:`MAX_MESSAGES` messages of at most :data:`MAX_TEXT_CHARS`
characters and :data:`MAX_REASONING_STEPS` reasoning entries of at most :data:`MAX_TEXT_CHARS` characters
per seat (``truncated`` says what was cut). At most :data:`COMPUTING_AT_ONCE` games are computed at once,
one computation per game; a request that would wait more than :data:`COMPUTE_WAIT_SECONDS` for them is
refused ``too_busy`` (HTTP 503, ``details.retry_after``) and can simply ask again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from flask import Blueprint, Response, current_app, jsonify, request, session
from pydantic import BaseModel, ConfigDict, Field

from analysis.tom_scores import tom_score_rows
from craft_rules.model import RuleSet
from server.game.events import Event, visible_to
from server.table.errors import ServerError
from server.table.game_logs import load_game_log
from server.table.live import LiveGame
from server.table.master import Table
from server.table.principal import Principal
from server.web.auth import basic_password, resolve_principal
from server.web.errors import error_body, http_status
from server.web.replay import is_admin
from server.web.services import current_services

#: Finished games whose beliefs are kept computed in memory.
CACHED_GAMES = 16
#: Games computed at once (each reads a whole log and replays its turns); a request waits at most
#: COMPUTE_WAIT_SECONDS for its game's computation or a free slot, else it is refused ``too_busy``.
COMPUTING_AT_ONCE = 2
COMPUTE_WAIT_SECONDS = 5.0
#: Turns of value reports an answer holds per seat (the first ones).
MAX_TURNS = 100
#: Messages an answer holds per seat (the first ones), and the longest text of a message or reasoning entry.
MAX_MESSAGES = 200
MAX_TEXT_CHARS = 2000
#: Reasoning entries an answer holds per seat (the first ones).
MAX_REASONING_STEPS = 300
_CUT = "…"

AGENT_KINDS = ("bot", "agent")
"""Seat kinds whose beliefs are shown: the server's bots (built-in or LLM) and API-token agents."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ItemBelief(_Model):
    item: str
    reported: float = Field(description="the seat's value, 0-10")
    truth: float | None = Field(description="the reference value, 0-10 (None: the rule set is unavailable)")


class Report(_Model):
    """One value report of one turn: V0 (``about`` None), or V1 / V2 about seat ``about``."""

    turn: Annotated[int, Field(ge=0)]
    order: Literal[0, 1, 2]
    about: Annotated[int, Field(ge=0)] | None
    items: list[ItemBelief]


class Message(_Model):
    turn: Annotated[int, Field(ge=0)]
    kind: Literal["proposal", "reply"]
    to: Annotated[int, Field(ge=0)] | None = Field(description="the seat the message was written to")
    text: str


class Reasoning(_Model):
    turn: Annotated[int, Field(ge=0)] | None
    decision: str = Field(description="what was decided: propose, decide, report, craft, or move (unknown)")
    text: str


class SeatBeliefs(_Model):
    seat: Annotated[int, Field(ge=0)]
    name: str | None
    kind: Literal["bot", "agent"]
    policy: str | None = Field(description="the bot's policy spec (tom1, llm:openai:MODEL, ...); None: agent")
    reports: list[Report]
    messages: list[Message]
    reasoning: list[Reasoning] | None = Field(description="None: not shown to this caller (see note)")
    reasoning_note: str | None = Field(description="why the reasoning is not shown, in a sentence")
    truncated: list[str] = Field(
        description="which lists were cut at their bound: reports, messages, reasoning"
    )


class BeliefsAnswer(_Model):
    ok: Literal[True] = True
    game_id: str
    players: Annotated[int, Field(ge=2)]
    viewer_seats: list[int] = Field(description="the seats the caller held")
    seats: list[SeatBeliefs] = Field(description="every bot or agent seat; a person's seat never appears")


# ------------------------------------------------------------------------------------------- computing
class ComputedBeliefs:
    """A finished game's agent seats as computed once; answers filter it per caller."""

    def __init__(
        self,
        players: int,
        show_reasoning: bool,
        seats: list[dict[str, Any]],
        messages: dict[int, list[tuple[Event, Message]]],
        reasoning: dict[int, list[Reasoning]],
        reasoning_cut: dict[int, bool],
    ) -> None:
        self.players = players
        self.show_reasoning = show_reasoning
        self.seats = seats
        self.messages = messages
        self.reasoning = reasoning
        self.reasoning_cut = reasoning_cut


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + _CUT


def _reports(log: Any, rules: Any, seats: Iterable[int]) -> tuple[dict[int, list[Report]], set[int]]:
    """Each agent seat's reports beside the truth, from :func:`tom_score_rows` (its rows only: another seat's
    reports, the ``opponent_report`` column, are never read)."""
    wanted = set(seats)
    grouped: dict[tuple[int, int, int, int | None], list[ItemBelief]] = {}
    own_truth: dict[tuple[int, int, str], Any] = {}
    rows = [row for row in tom_score_rows(log, rules) if row["seat"] in wanted]
    for row in rows:
        if row["order"] == 0:
            own_truth[(row["seat"], row["turn"], row["item"])] = row["reference"]
    for row in rows:
        seat, turn, order, about = row["seat"], row["turn"], row["order"], row["opponent_seat"]
        # V2 is judged against the seat's own target, never against the other's (possibly a person's) V1
        truth = own_truth.get((seat, turn, row["item"])) if order == 2 else row["reference"]
        grouped.setdefault((seat, turn, order, about), []).append(
            ItemBelief(item=row["item"], reported=row["value"], truth=truth)
        )
    out: dict[int, list[Report]] = {}
    cut: set[int] = set()
    for (seat, turn, order, about), items in sorted(grouped.items(), key=lambda kv: _report_key(kv[0])):
        if turn > MAX_TURNS:
            cut.add(seat)
            continue
        out.setdefault(seat, []).append(Report(turn=turn, order=order, about=about, items=items))  # type: ignore[arg-type]
    return out, cut


def _report_key(key: tuple[int, int, int, int | None]) -> tuple[int, int, int, int]:
    seat, turn, order, about = key
    return seat, turn, order, -1 if about is None else about


def _messages(events: list[Event], seats: set[int]) -> dict[int, list[tuple[Event, Message]]]:
    """Every message the agent seats wrote, with the event it was read in (the caller's visibility decides).

    A message of an accepted trade is in the private ``proposed`` / ``decided`` events and, when the game
    makes it public, in ``trade_executed`` too: each is kept with every event that carries it, and an answer
    shows it once, from the first event its caller saw."""
    out: dict[int, list[tuple[Event, Message]]] = {}
    for event in events:
        p = event.payload
        turn = int(p.get("turn") or 0)
        if event.type == "proposed" and p.get("proposer") in seats and p.get("message"):
            msg = Message(turn=turn, kind="proposal", to=p.get("to"), text=_cut(str(p["message"])))
            out.setdefault(int(p["proposer"]), []).append((event, msg))
        elif event.type == "decided" and p.get("seat") in seats and p.get("message"):
            msg = Message(turn=turn, kind="reply", to=p.get("proposer"), text=_cut(str(p["message"])))
            out.setdefault(int(p["seat"]), []).append((event, msg))
        elif event.type == "trade_executed":
            if p.get("proposer") in seats and p.get("message"):
                msg = Message(turn=turn, kind="proposal", to=p.get("to"), text=_cut(str(p["message"])))
                out.setdefault(int(p["proposer"]), []).append((event, msg))
            if p.get("to") in seats and p.get("reply"):
                msg = Message(turn=turn, kind="reply", to=p.get("proposer"), text=_cut(str(p["reply"])))
                out.setdefault(int(p["to"]), []).append((event, msg))
    return out


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


def _offer_text(offer: Any, rules: RuleSet, seat_names: list[str]) -> str:
    """A ToM bot's offer record (``{"to", "offer", "request"}``: item counts it gives and asks) in words."""
    if not isinstance(offer, Mapping):
        return "nothing"

    def side(counts: Any) -> str:
        pairs = counts.items() if isinstance(counts, Mapping) else []
        return ", ".join(f"{n} {rules.display_name(str(item))}" for item, n in pairs) or "nothing"

    to = offer.get("to")
    whom = seat_names[to] if isinstance(to, int) and 0 <= to < len(seat_names) else f"seat {to}"
    return f"offer {whom} {side(offer.get('offer'))} for {side(offer.get('request'))}"


#: The decision an LLM call was for, by the phase in its move key (``turn:phase:crafts``, views.move_key).
_DECISION_OF_PHASE = {
    "tom_report": "report",
    "trade_propose": "propose",
    "trade_decide": "decide",
    "trade": "decide",
    "craft": "craft",
}


def _decision_of_move_key(key: Any) -> str:
    """``propose`` / ``decide`` / ``report`` / ``craft`` for an LLM call's move key, ``move`` when unknown
    (the same words as the bots' records, so the page names every decision alike)."""
    parts = key.split(":") if isinstance(key, str) else []
    return _DECISION_OF_PHASE.get(parts[1], "move") if len(parts) == 3 else "move"


def reasoning_text(trace: Mapping[str, Any], rules: RuleSet, seat_names: list[str]) -> tuple[str, str] | None:
    """``(decision, text)`` of one trace record, or None when it records no decision's reasoning.

    An LLM's ``llm_call`` gives its reasoning text (think blocks, provider reasoning, free text); a ToM-k
    bot's ``propose`` / ``decide`` records and the planner's ``candidates`` give the numbers it weighed, in a
    sentence. A record of the move alone (the scripted partners' ``decide``) is no reasoning."""
    if trace.get("trace") == "llm_call":
        text = trace.get("reasoning")
        if not isinstance(text, str) or not text.strip():
            return None
        return _decision_of_move_key(trace.get("decision")), text.strip()
    event = trace.get("event")
    if event == "candidates" and isinstance(trace.get("best"), list):  # the planner bot's best offers
        best = [b for b in trace["best"][:3] if isinstance(b, Mapping)]
        if not best:
            return None
        ranked = "; ".join(
            f"{_offer_text(b.get('offer'), rules, seat_names)} (gain {_number(b.get('gain'))})" for b in best
        )
        return "propose", f"Its best offers by how much they bring its target closer: {ranked}."
    if event == "propose" and "offers" in trace:  # a ToM-k bot's weighed offers
        chosen = trace.get("chosen")
        candidates = trace.get("candidates") if isinstance(trace.get("candidates"), list) else []
        best = candidates[0].get("ev") if candidates and isinstance(candidates[0], Mapping) else None
        text = (
            f"Weighed {trace.get('offers', 0)} possible offers; the best one's expected gain (its score for "
            f"how much the trade helps it) was {_number(best)}. "
        )
        text += (
            f"Chose to {_offer_text(chosen, rules, seat_names)}."
            if chosen
            else "None was worth making, so it passed."
        )
        return "propose", text
    if event == "decide" and "utility" in trace:  # a ToM-k bot's acceptance utility
        verdict = "accepted" if trace.get("accept") else "rejected"
        text = (
            f"Gain for its target {_number(trace.get('gain'))}, risk of helping the other finish first "
            f"{_number(trace.get('race'))}, overall worth {_number(trace.get('utility'))} (above 0 means "
            f"worth accepting): it {verdict}."
        )
        return "decide", text
    return None


def reasoning_entries(
    traces: Iterable[Any], events: list[Event], seats: set[int], rules: RuleSet, seat_names: list[str]
) -> tuple[dict[int, list[Reasoning]], dict[int, bool]]:
    out: dict[int, list[Reasoning]] = {}
    cut: dict[int, bool] = {}
    for record in traces:
        fields = record.model_dump() if isinstance(record, BaseModel) else dict(record)
        seat = fields.get("seat")
        if seat not in seats:
            continue
        found = reasoning_text(fields, rules, seat_names)
        if found is None:
            continue
        entries = out.setdefault(seat, [])
        if len(entries) >= MAX_REASONING_STEPS:
            cut[seat] = True
            continue
        seq = fields.get("event_seq")
        turn = fields.get("turn")
        if isinstance(seq, int) and 0 <= seq < len(events):
            turn = events[seq].payload.get("turn", turn)
        turn = turn if isinstance(turn, int) and not isinstance(turn, bool) and turn >= 0 else None
        entries.append(Reasoning(turn=turn, decision=_cut(found[0])[:64], text=_cut(found[1])))
    return out, cut


def compute(table: Table, live: LiveGame) -> ComputedBeliefs:
    """Read and compute a finished game's agent seats (the store's log, traces, the rule set)."""
    with live.lock:
        seat_rows = [
            {"seat": s.seat, "name": s.name, "kind": s.kind, "policy": s.bot if s.kind == "bot" else None}
            for s in live.seats
            if s.kind in AGENT_KINDS
        ]
        players = len(live.seats)
        seat_names = [s.name or f"seat {s.seat}" for s in live.seats]
        show = bool(live.settings.show_agent_reasoning)
        rules = live.rules
    agents = {row["seat"] for row in seat_rows}
    stored = load_game_log(table.store, live.game_id, rules=rules, traces=bool(agents) and show)
    reports, cut_reports = _reports(stored.log, rules, agents) if agents else ({}, set())
    messages = _messages(stored.log.events, agents)
    reasoning, cut_reasoning = reasoning_entries(
        stored.log.traces, stored.log.events, agents, rules, seat_names
    )
    for row in seat_rows:
        row["reports"] = reports.get(row["seat"], [])
        row["reports_cut"] = row["seat"] in cut_reports
    return ComputedBeliefs(players, show, seat_rows, messages, reasoning, cut_reasoning)


class _GameComputation:
    """The lock of one game's computation and how many requests hold or wait for it (the entry is dropped
    when the last one leaves, so the table holds only games being asked for right now)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


class BeliefsCache:
    """Computed beliefs of the last few finished games (LRU). The work is bounded: one computation per game
    at a time (a burst of requests for one game costs one computation, the others wait for it), at most
    :data:`COMPUTING_AT_ONCE` games computed at once, and no request waits longer than
    :data:`COMPUTE_WAIT_SECONDS` for either: it is refused ``too_busy`` (HTTP 503) instead."""

    def __init__(
        self,
        size: int = CACHED_GAMES,
        at_once: int = COMPUTING_AT_ONCE,
        wait_seconds: float = COMPUTE_WAIT_SECONDS,
    ) -> None:
        self._size = size
        self._wait_seconds = wait_seconds
        self._games: OrderedDict[str, ComputedBeliefs] = OrderedDict()
        self._lock = threading.Lock()
        self._computations: dict[str, _GameComputation] = {}
        self._slots = threading.BoundedSemaphore(at_once)

    def _cached(self, game_id: str) -> ComputedBeliefs | None:
        with self._lock:
            found = self._games.get(game_id)
            if found is not None:
                self._games.move_to_end(game_id)
            return found

    def _busy(self, game_id: str) -> ServerError:
        return ServerError(
            "too_busy",
            f"The server is computing what other games' agents believed; ask again for game {game_id} in "
            "a few seconds.",
            {"retry_after": max(1, round(self._wait_seconds))},
            status=503,
        )

    def get(self, table: Table, live: LiveGame) -> ComputedBeliefs:
        found = self._cached(live.game_id)  # a cached game never waits for another's computation
        if found is not None:
            return found
        deadline = time.monotonic() + self._wait_seconds
        with self._lock:
            computation = self._computations.setdefault(live.game_id, _GameComputation())
            computation.users += 1
        try:
            if not computation.lock.acquire(timeout=self._wait_seconds):
                raise self._busy(live.game_id)
            try:
                found = self._cached(live.game_id)  # computed while this request waited
                if found is not None:
                    return found
                if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    raise self._busy(live.game_id)
                try:
                    computed = compute(table, live)
                finally:
                    self._slots.release()
                with self._lock:
                    self._games[live.game_id] = computed
                    while len(self._games) > self._size:
                        self._games.popitem(last=False)
                return computed
            finally:
                computation.lock.release()
        finally:
            with self._lock:
                computation.users -= 1
                if computation.users == 0:
                    del self._computations[live.game_id]


# -------------------------------------------------------------------------------------------- answering
def reasoning_note(computed: ComputedBeliefs, seat: int, viewer_seats: list[int], admin: bool) -> str | None:
    """None when the caller may read ``seat``'s reasoning, else why not (see the module's docstring)."""
    if not computed.show_reasoning:
        return "This game's settings keep the agents' reasoning for the researchers."
    if admin or seat in viewer_seats:
        return None
    if computed.players == 2 and viewer_seats:
        return None  # the other player saw every proposal the agent made or answered
    if computed.players == 2:
        return "Only the game's players read the agents' reasoning: it may mention proposals only they saw."
    return (
        "In games of three or more the agents' reasoning is kept for researchers: it may mention proposals "
        "that only two players saw."
    )


def beliefs_answer(
    table: Table, cache: BeliefsCache, game_id: str, principal: Principal | None, admin: bool
) -> dict[str, Any]:
    live = table.get(game_id)
    with live.lock:
        table.catch_up(live)
        finished = live.status == "finished" and live.game is not None and live.game.finished
        status = live.status
        viewer_seats = live.seats_of(principal) if principal is not None else []
    if not finished:
        raise ServerError(
            "game_not_over",
            f"Game {game_id} is {status}: what its agents believed is shown once it has finished.",
            {"status": status},
            status=409,
        )
    computed = cache.get(table, live)
    seats = []
    for row in computed.seats:
        seat = row["seat"]
        shown: list[Message] = []
        seen: set[tuple[int, str]] = set()
        for event, message in computed.messages.get(seat, []):
            key = (message.turn, message.kind)
            if key in seen or not any(visible_to(event, v) for v in (viewer_seats or [None])):
                continue
            seen.add(key)
            shown.append(message)
        note = reasoning_note(computed, seat, viewer_seats, admin)
        reasoning = computed.reasoning.get(seat, []) if note is None else None
        truncated = [
            name
            for name, cut in (
                ("reports", row["reports_cut"]),
                ("messages", len(shown) > MAX_MESSAGES),
                ("reasoning", note is None and computed.reasoning_cut.get(seat, False)),
            )
            if cut
        ]
        seats.append(
            SeatBeliefs(
                seat=seat,
                name=row["name"],
                kind=row["kind"],
                policy=row["policy"],
                reports=row["reports"],
                messages=shown[:MAX_MESSAGES],
                reasoning=reasoning,
                reasoning_note=note,
                truncated=truncated,
            )
        )
    answer = BeliefsAnswer(
        game_id=live.game_id, players=computed.players, viewer_seats=viewer_seats, seats=seats
    )
    return answer.model_dump()


# ---------------------------------------------------------------------------------------------- route
#: ``GET /api/games/<id>/beliefs`` (:class:`BeliefsAnswer`).
beliefs = Blueprint("beliefs", __name__, url_prefix="/api/games")
_CACHE_KEY = "tradecraft_beliefs"


@beliefs.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int]:
    return jsonify({"ok": False, "error": error_body(err)}), http_status(err)


@beliefs.get("/<game_id>/beliefs")
def game_beliefs(game_id: str) -> tuple[Response, int]:
    services = current_services()
    cache = current_app.extensions.setdefault(_CACHE_KEY, BeliefsCache())
    principal = (
        None
        if basic_password(request.headers)
        else resolve_principal(services.store, request.headers, session)
    )
    return jsonify(beliefs_answer(services.table, cache, game_id, principal, is_admin(principal))), 200
