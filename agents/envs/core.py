"""What the Gymnasium and PettingZoo environments share: spaces, tool calls, the match, observations, rewards.

**Actions** are tool calls ``{"tool": name, "args": {...}}``, given as a dict or as its JSON text (the
action space is a :class:`gymnasium.spaces.Text` of that JSON); the engine's own object
(``{"type": "pass"}``, as the narrator's action formats write it) is accepted too. The tools are the
player action types (:data:`~server.game.actions.PLAYER_ACTION_TYPES`: ``report_tom``, ``propose``,
``pass``, ``decide``, ``craft``, ``finish_crafting``, ``resign``) and the in-phase queries
(:data:`~server.game.queries.QUERY_MODELS`: ``item_info``, ``recipe_search``, ``possible_crafts``,
``crafting_tree``, ``craftable``, ``match_grid``, ``craft_options``, ``history``); the arguments are the
model's fields without ``type``.
A query is answered into the next observation and does not advance the game. A malformed call or an
illegal action gets the protocol's typed error (the same ``{code, message, details}`` a server sends)
in the observation and the info, and changes nothing.

**Observations** are a dict: ``text`` (the narrator's observation, :func:`agents.narrator.observation`:
the stable rules-and-target prefix, the state now, the news since the seat last acted, then the answer
to its last request), ``view`` (the player view as JSON text), ``tool_mask`` (1 for each tool usable
now, in :data:`TOOLS` order), ``your_turn`` (0/1) and ``turn``. The info holds the same view as a dict,
the last ``result`` (an ack, a query answer or a refusal), ``error``, ``legal_tools`` and, at the end,
``winners``, ``scores`` and ``end_reason``.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces

from agents.bots.registry import PolicySpecError, make_policy
from agents.connection import MAX_ACTION_BYTES, oversized
from agents.driver import SeatOutcome, take_turn
from agents.envs.observation import (
    MAX_TEXT_CHARS,
    TEXT_CHARSET,
    SeatObserver,
    copy_data,
    cut_text,
    escape_text,
)
from agents.envs.observation import fit_text as fit_text
from agents.local import LocalResult, derive_seed
from agents.local_connection import LocalConnection, LocalTable
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance, get_instance, iter_instances, mode_for_players
from server.game import GameError, GameSettings, Timeout, viewer_log, visible_to
from server.game.actions import PLAYER_ACTION_TYPES
from server.game.gamelog import GameLog, TraceRecord, trace_fields
from server.game.policy import Policy
from server.game.queries import QUERY_MODELS

TOOLS: tuple[str, ...] = (*PLAYER_ACTION_TYPES, *QUERY_MODELS)
"""Every tool an agent may call: the action types, then the queries (the order of ``tool_mask``)."""
ACTION_TOOLS = frozenset(PLAYER_ACTION_TYPES)
QUERY_TOOLS = frozenset(QUERY_MODELS)

MAX_TURN_COUNTER = 1_000_000

ACTION_CHARSET = frozenset(chr(c) for c in range(0x20, 0x7F))
"""Printable ASCII: the JSON text of a tool call (``json.dumps`` escapes the rest)."""

DEFAULT_OPPONENT = "random"
DEFAULT_RULESET = "minecraft"
DEFAULT_MAX_STEPS = 2_000
"""Env steps (actions, queries and refused calls together) after which an episode is truncated, so an
agent that only queries or keeps sending illegal calls cannot run forever."""
MAX_DRIVEN_ACTIONS_PER_PHASE = 1_000
"""Moves the driven seats may make in one phase before a system timeout ends it (a stuck policy's guard,
as in :func:`agents.local.play_local`)."""


_TEXT_PROTOTYPE: spaces.Text | None = None


def _text_space() -> spaces.Text:
    """A Text space over :data:`TEXT_CHARSET`. Building one indexes 63k characters (a third of a second),
    so one prototype is built and each space is a shallow copy of it with its own random generator."""
    global _TEXT_PROTOTYPE
    if _TEXT_PROTOTYPE is None:
        _TEXT_PROTOTYPE = spaces.Text(max_length=MAX_TEXT_CHARS, min_length=0, charset=TEXT_CHARSET)
    space = copy.copy(_TEXT_PROTOTYPE)
    space._np_random = None  # seeded on first use or by space.seed(), never shared with another space
    return space


def observation_space() -> spaces.Dict:
    """The observation space of one seat (build it once per agent and hand out that object)."""
    return spaces.Dict(
        {
            "text": _text_space(),
            "view": _text_space(),
            "tool_mask": spaces.MultiBinary(len(TOOLS)),
            "your_turn": spaces.Discrete(2),
            "turn": spaces.Box(low=0, high=MAX_TURN_COUNTER, shape=(1,), dtype=np.int64),
        }
    )


def action_space() -> spaces.Text:
    """The action space: the JSON text of ``{"tool": ..., "args": {...}}`` (dicts are accepted as well)."""
    return spaces.Text(max_length=MAX_ACTION_BYTES, min_length=0, charset=ACTION_CHARSET)


# ------------------------------------------------------------------------------------ tool calls
def tool_call(action: Mapping[str, Any]) -> dict[str, Any]:
    """An engine action or query (``{"type": ..., ...}``) as a tool call ``{"tool", "args"}``."""
    args = dict(action)
    return {"tool": args.pop("type"), "args": args}


@dataclass(frozen=True)
class ParsedCall:
    kind: str  # "action" or "query"
    payload: dict[str, Any]  # the engine's object: {"type": tool, **args}


def parse_tool_call(call: Any) -> ParsedCall:
    """Read a tool call (dict or JSON text); ``GameError("invalid_action")`` saying what is wrong."""
    if isinstance(call, (str, np.str_)):
        try:
            call = json.loads(str(call))
        except ValueError as err:
            raise GameError(
                "invalid_action",
                f'The action is not JSON ({err.msg}); send {{"tool": "<name>", "args": {{...}}}}.',
                {"problems": [{"field": "", "problem": "not JSON", "kind": "json"}]},
            ) from None
    if not isinstance(call, Mapping):
        raise GameError(
            "invalid_action",
            'An action is an object {"tool": "<name>", "args": {...}}; got ' + type(call).__name__ + ".",
            {"problems": [{"field": "", "problem": "not an object", "kind": "type"}]},
        )
    if "tool" not in call and isinstance(call.get("type"), str):
        # the engine's own object, as the narrator's action formats write it: {"type": "pass"}
        if call["type"] in TOOLS:  # what the slow path below makes of it, without the detour
            kind = "query" if call["type"] in QUERY_TOOLS else "action"
            return ParsedCall(kind, {"type": call["type"], **{k: v for k, v in call.items() if k != "type"}})
        call = tool_call(call)
    extra = sorted(set(call) - {"tool", "args"})
    tool, args = call.get("tool"), call.get("args", {})
    if extra or not isinstance(tool, str) or tool not in TOOLS:
        raise GameError(
            "invalid_action",
            f"Unknown tool {tool!r}; call one of: {', '.join(TOOLS)}."
            if not extra
            else f"A tool call has only the keys 'tool' and 'args', not {extra}.",
            {"problems": [{"field": "tool", "problem": "unknown tool", "kind": "tag"}], "tools": list(TOOLS)},
        )
    if args is None:
        args = {}
    if not isinstance(args, Mapping) or "type" in args:
        raise GameError(
            "invalid_action",
            "'args' is an object of the tool's fields (without 'type').",
            {"problems": [{"field": "args", "problem": "not an object of fields", "kind": "type"}]},
        )
    return ParsedCall("query" if tool in QUERY_TOOLS else "action", {"type": tool, **args})


# --------------------------------------------------------------------------------------- setup
def resolve_instance(
    instance: str | int | TaskInstance | None, ruleset: str = DEFAULT_RULESET, players: int = 2
) -> TaskInstance:
    """A task instance from an id, an index into the rule set's instances for ``players`` seats, or None
    (the first of them); ``ValueError`` saying what exists otherwise."""
    if isinstance(instance, TaskInstance):
        return instance
    if isinstance(instance, str) and not instance.isdigit():
        try:
            return get_instance(instance)
        except KeyError:
            raise ValueError(
                f"There is no task instance {instance!r}; `tradecraft tasks list` shows the ids."
            ) from None
    index = int(instance) if instance is not None else 0
    candidates = list(iter_instances(ruleset, mode_for_players(players)))
    if not 0 <= index < len(candidates):
        raise ValueError(
            f"Rule set {ruleset} has {len(candidates)} instance(s) for {players} players; index {index} "
            "is out of range."
        )
    return candidates[index]


def make_settings(
    settings: GameSettings | Mapping[str, Any] | None, instance: TaskInstance, **overrides: Any
) -> GameSettings:
    base = settings.model_dump() if isinstance(settings, GameSettings) else dict(settings or {})
    base.setdefault("ruleset", instance.ruleset)
    if instance.crafting_runs is not None:  # the rule the instance was made and validated for
        base.setdefault("crafting_runs", instance.crafting_runs)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return GameSettings(**base)


def make_policies(
    specs: str | Policy | Sequence[str | Policy] | Mapping[int, str | Policy] | None,
    seats: Sequence[int],
    seed: int,
) -> dict[int, Policy]:
    """One policy per driven seat: a spec (seeded from the game seed and the seat) or a policy object."""
    if specs is None:
        specs = DEFAULT_OPPONENT
    if isinstance(specs, Mapping):
        chosen = {seat: specs[seat] for seat in seats}
    elif isinstance(specs, str) or not isinstance(specs, Sequence):
        chosen = dict.fromkeys(seats, specs)
    else:
        if len(specs) != len(seats):
            raise ValueError(f"Give one opponent per driven seat {list(seats)}; got {len(specs)}.")
        chosen = dict(zip(seats, specs, strict=True))
    shared = [seat for seat, spec in chosen.items() if not isinstance(spec, str)]
    if len({id(chosen[seat]) for seat in shared}) < len(shared):
        # one object playing two seats would carry one seat's private view (its crafting, its rejected
        # proposals) into the other's decisions
        raise ValueError(
            f"One policy object cannot play several seats ({shared}): give one object per seat, or a spec "
            "such as 'tom1' (each seat then gets its own)."
        )
    out: dict[int, Policy] = {}
    for seat, spec in chosen.items():
        if isinstance(spec, str):
            try:
                out[seat] = make_policy(spec, derive_seed(seed, "seat", seat))
            except PolicySpecError as err:
                raise ValueError(f"{err.message} [{err.code}]") from None
        else:
            out[seat] = spec
    return out


# -------------------------------------------------------------------------------------- the match
@dataclass
class Match:
    """One game: a local table, a connection per seat, the policies of the driven seats, and per seat
    the news not yet shown in a step's observation and the answer to its last request."""

    table: LocalTable
    driven: dict[int, Policy]
    narrate: bool = True
    """False: ``text`` holds only the answer to the last request, not the narration (RL throughput)."""
    ack_views: bool = False
    """True: the ack of an agent's accepted action (``info["result"]``) carries the view right after
    that action, as a server's does. Off by default: the info's own ``view`` is the seat's view when it
    is next asked to act, and the one in between (before the other seats moved) costs a whole view per
    step that only this echo would read (``"view": null``, the rest of the ack is there)."""
    conns: list[LocalConnection] = field(init=False)
    last: list[dict[str, Any] | None] = field(init=False)
    outcomes: dict[int, SeatOutcome] = field(init=False)
    observers: list[SeatObserver] = field(init=False)
    _current: dict[int, _State] = field(init=False, default_factory=dict)
    _handed_result: dict[int, dict[str, Any]] = field(init=False, default_factory=dict)
    _driving: dict[int, LocalConnection | _Unobserved] = field(init=False)

    def __post_init__(self) -> None:
        # the driven seats' policies read the view before each move: their acks need none
        self.conns = [
            self.table.connection(
                seat,
                ack_views=self.ack_views and seat not in self.driven,
                # the driver reads an ack's events only to link the policy's traces to its move
                ack_events=seat not in self.driven
                or callable(getattr(self.driven[seat], "drain_traces", None)),
            )
            for seat in range(self.table.game.players)
        ]
        players = self.table.game.players
        # per seat, positions in the game's log: narrated up to _seen; not yet shown from _shown on,
        # which is event number _shown_n of the seat's own log
        self._seen = [0] * players
        self._shown = [0] * players
        self._shown_n = [0] * players
        self.last = [None] * players
        self.outcomes = {seat: SeatOutcome(seat=seat) for seat in self.driven}
        rules = self.table.game.rules
        self.observers = [SeatObserver(rules, seat, self.narrate) for seat in range(players)]
        # what the driver plays each driven seat through: a policy that observes nothing is handed no
        # events, so none are built for it (as agents.local.play_local builds none)
        self._driving = {
            seat: self.conns[seat]
            if callable(getattr(policy, "observe", None))
            else _Unobserved(self.conns[seat])
            for seat, policy in self.driven.items()
        }

    @classmethod
    def start(
        cls,
        instance: TaskInstance,
        settings: GameSettings,
        rules: RuleSet,
        seed: int,
        driven: dict[int, Policy],
        narrate: bool = True,
        ack_views: bool = False,
    ) -> Match:
        table = LocalTable.new(instance, settings, rules, seed, game_id=f"env-{seed}")
        return cls(table, driven, narrate, ack_views)

    @property
    def game(self) -> Any:
        return self.table.game

    def advance(self) -> None:
        """Let the driven seats move until a seat not driven is awaited or the game ends."""
        game = self.game
        phase_key, phase_moves = (game.turn, game.phase), 0
        while not game.finished:
            awaited = sorted(game.waiting_for())
            movers = [s for s in awaited if s in self.driven]
            if not movers:
                return  # a seat the caller plays is awaited (or nobody is)
            for seat in movers:
                if game.finished or seat not in game.waiting_for():
                    continue
                moved = take_turn(self.driven[seat], self._driving[seat], self.outcomes[seat])  # type: ignore[arg-type]
                phase_moves += 1
                if not moved and seat in game.waiting_for():
                    phase_moves = MAX_DRIVEN_ACTIONS_PER_PHASE  # nothing it can do: end the phase
            if (game.turn, game.phase) != phase_key:
                phase_key, phase_moves = (game.turn, game.phase), 0
            elif phase_moves >= MAX_DRIVEN_ACTIONS_PER_PHASE and not game.finished:
                self.table.apply(None, Timeout(phase=game.phase, turn=game.turn))
                phase_key, phase_moves = (game.turn, game.phase), 0

    def handle(self, seat: int, call: Any) -> dict[str, Any]:
        """Carry out one tool call of ``seat``: the protocol's answer (ack, query answer or refusal)."""
        # a text is measured before it is parsed; an object's payload is measured by the connection
        too_large = oversized(call, "action") if isinstance(call, str) else None
        if too_large is not None:
            return too_large
        try:
            parsed = parse_tool_call(call)
        except GameError as err:
            return {"ok": False, "error": err.to_dict()}
        conn = self.conns[seat]
        return conn.query(parsed.payload) if parsed.kind == "query" else conn.act(parsed.payload)

    def collect(self, seat: int) -> None:
        """Narrate the game's events since the seat's last look into its unshown news."""
        events = self.game.events
        seen = self._seen[seat]
        if seen < len(events):
            self.observers[seat].add_news(events[seen:])
            self._seen[seat] = len(events)

    @property
    def news(self) -> list[list[dict[str, Any]]]:
        """Per seat, the news not yet shown, as the seat's viewer-log records (``n`` numbered in its own
        log, what a client receives; built when asked)."""
        events = self.game.events
        return [
            viewer_log(events[self._shown[seat] : self._seen[seat]], seat, start=self._shown_n[seat])
            for seat in range(self.game.players)
        ]

    def _state(self, seat: int) -> _State:
        """The seat's current state and what is built from it, once per state (and lazily: the text
        only when an observation is asked for)."""
        self.collect(seat)
        key = (len(self.game.events), self._shown[seat])
        state = self._current.get(seat)
        if state is None or state.key != key:
            view = self.conns[seat].view()
            state = self._current[seat] = _State(
                key=key,
                view=view,
                view_json=_VIEW_JSON.encode(view),
                legal=list(view.get("legal_actions") or []),
                finished=bool(view["finished"]),
                your_turn=int(bool(view.get("your_turn"))),
                turn=min(int(view.get("turn") or 0), MAX_TURN_COUNTER),
            )
        return state

    def _text(self, seat: int, state: _State) -> str:
        result = self.last[seat]
        if state.text is None or state.text_result is not result:
            if state.base is None and self.narrate:
                assert state.view is not None  # the text is told before the view is handed out
                state.base = self.observers[seat].narration(state.view)
            answer = describe_result(result) if result is not None else None
            state.text, state.text_result = join_text(state.base, answer), result
        return state.text

    def observation(self, seat: int) -> dict[str, Any]:
        """The seat's observation now: the narrator's text (news since its last step, then the answer
        to its last call), the view as JSON, the tool mask, whether it is awaited, the turn."""
        state = self._state(seat)
        return {
            "text": self._text(seat, state),
            "view": cut_text(state.view_json),  # ASCII: nothing to escape
            "tool_mask": self.observers[seat].mask(state.legal, not state.finished, TOOLS, QUERY_TOOLS),
            "your_turn": state.your_turn,
            "turn": np.array([state.turn], dtype=np.int64),
        }

    def info(self, seat: int) -> dict[str, Any]:
        """The seat's info now: the view as a dict, the last call's ``result`` and ``error``, the legal
        tools, and at the end ``winners``, ``scores`` and ``end_reason``. Nothing in it is shared with an
        earlier info or with the engine: the engine's view is handed out once (after everything built
        from it), later infos of the same state get copies; a result handed out before is copied too."""
        state = self._state(seat)
        original = self.last[seat]
        result = original
        if result is not None:
            if result is self._handed_result.get(seat):
                result = copy_data(result)
            else:
                self._handed_result[seat] = result
        view = state.view
        if view is None:
            view = json.loads(state.view_json)
        else:
            self._text(seat, state)  # told from the engine's view before the caller may change it
            self.conns[seat].table.release_view(seat)  # the next view of this seat is built afresh
            state.view = None
            if original is not None and original.get("view") is view:
                view = json.loads(state.view_json)  # the ack handed out (or to be) holds the engine's
        info: dict[str, Any] = {
            "view": view,
            "result": result,
            "error": copy_data(result.get("error")) if result is not None and not result.get("ok") else None,
            "legal_tools": legal_tools(state.legal, not state.finished),
        }
        game = self.game
        if game.finished:
            info.update(winners=list(game.winners), scores=game.scores, end_reason=game.end_reason)
        return info

    def observe(self, seat: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The seat's observation and info now (:meth:`observation`, :meth:`info`)."""
        return self.observation(seat), self.info(seat)

    def game_log(self, *, game_id: str | None = None, meta: Mapping[str, Any] | None = None) -> GameLog:
        """The game so far as a researcher game log (:mod:`server.game.gamelog`, ``source: local``), with
        the driven seats' trace records (``drain_traces``) linked to the events their moves produced."""
        game = self.game
        traces = []
        for seat, outcome in self.outcomes.items():
            for record in outcome.traces:
                fields = dict(record)
                n = fields.pop("event_n", None)
                seq = None if n is None else self.table.seq_of(seat, n)
                traces.append(TraceRecord(**trace_fields(fields, seat, seq, fields.get("time"))))
        seats = [
            {"seat": s, "kind": "bot", "name": type(p).__name__, "bot": getattr(p, "name", None)}
            if s in self.driven
            else {"seat": s, "kind": "agent", "name": "env"}
            for s, p in ((s, self.driven.get(s)) for s in range(game.players))
        ]
        result = LocalResult(
            winners=list(game.winners),
            turns=game.turn,
            events=list(game.events),
            log_sha256=game.log_digest(),
            end_reason=game.end_reason,
            actions=sum(1 for e in game.events if e.actor is not None),
            timeouts=0,
            game=game,
            times=list(self.table.times),
            traces=traces,
        )
        return result.game_log(game_id=game_id or self.table.game_id, seats=seats, meta=meta)

    def mark_shown(self, seat: int) -> None:
        """The seat acted on its observation: its news (up to its last look) has been shown."""
        events, shown, seen = self.game.events, self._shown[seat], self._seen[seat]
        self._shown_n[seat] += sum(1 for event in events[shown:seen] if visible_to(event, seat))
        self._shown[seat] = seen
        self.observers[seat].news_shown()


class _Unobserved:
    """A driven seat's connection for a policy without an ``observe`` hook: :meth:`events` is empty (the
    driver would build the seat's new log records only to drop them); the rest is the connection's."""

    def __init__(self, conn: LocalConnection) -> None:
        self._conn = conn

    def events(self) -> list[dict[str, Any]]:
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


_VIEW_JSON = json.JSONEncoder(check_circular=False)
"""``json.dumps`` with its defaults, the same text, without the check for reference cycles (a view is a
tree of fresh dicts and lists): about an eighth faster."""


@dataclass(eq=False, slots=True)
class _State:
    """One seat's observation pieces for one state of the game (its events and the seat's news)."""

    key: tuple[int, int]  # (events in the game, where the seat's unshown news starts)
    view: dict[str, Any] | None  # the engine's view; None once handed out in an info
    view_json: str  # json.dumps of the view (whole: copies of the view are made from it)
    legal: list[str]
    finished: bool
    your_turn: int
    turn: int
    base: str | None = None  # the narration (prefix, state, news), escaped; None until told
    text: str | None = None  # the observation text for the result ``text_result``
    text_result: dict[str, Any] | None = None


@functools.lru_cache(maxsize=256)
def _legal_tools(legal: tuple[str, ...], queries_open: bool) -> tuple[str, ...]:
    return tuple(t for t in TOOLS if t in legal or (queries_open and t in QUERY_TOOLS))


def legal_tools(legal: list[str], queries_open: bool) -> list[str]:
    """The tools usable now, in :data:`TOOLS` order (a fresh list)."""
    return list(_legal_tools(tuple(legal), queries_open))


def join_text(narration: str | None, answer: str | None) -> str:
    """The observation text: the narration, then the answer to the last call, fitted to the space."""
    if answer is None:
        return cut_text(narration or "")
    answer = escape_text(answer)
    return cut_text(answer if narration is None else narration + "\n\n" + answer)


def describe_result(result: Mapping[str, Any]) -> str:
    """The answer to the seat's last request, for the end of its observation text."""
    if not result.get("ok"):
        error = result.get("error") or {}
        details = json.dumps(error.get("details") or {}, sort_keys=True)
        return (
            f"## Your last request was refused\n{error.get('code')}: {error.get('message')} "
            f"(details: {details}). Nothing changed."
        )
    if "answer" in result:
        answer = dict(result["answer"])
        return f"## Answer to your {answer.get('type')} query\n" + json.dumps(answer, sort_keys=True)
    return "## Your last action was accepted"


def outcome_reward(game: Any, seat: int, mode: str = "outcome") -> float:
    """The seat's reward when the game has ended (0 before).

    ``outcome``: +1 for a sole win, -1 when others won and you did not, 0 for a shared win or no winner
    (the turn limit). ``points``: the game's own points (``settings.scoring``: 3 for a sole win, 1 each
    for a shared win, 0 otherwise, by default).
    """
    if not game.finished:
        return 0.0
    if mode == "points":
        scores = game.scores or [0] * game.players
        return float(scores[seat])
    winners = list(game.winners)
    if seat in winners:
        return 1.0 if len(winners) == 1 else 0.0
    return -1.0 if winners else 0.0


def load_rules(instance: TaskInstance) -> RuleSet:
    return load_rule_set(instance.ruleset)


REWARD_MODES = ("outcome", "points")
