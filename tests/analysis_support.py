"""Real games for the analysis tests: short games of built-in bots (and an LLM-like policy that leaves the
LLM agent's trace records), their game logs, and a store written the way the experiment runner writes it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.bots.registry import make_policy
from agents.local import LocalResult, play_local
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.tasks import get_instance
from server.game import GameSettings
from server.game.gamelog import GameLog
from server.store import Store

#: The model the LLM-like policy names (the shipped price table prices it as gpt-4o).
LLM_MODEL = "gpt-4o-2024-08-06"
#: The move on which the LLM-like policy plays a traced fallback (one invalid call, then the bot's move).
FALLBACK_MOVE = 5


class FakeClock:
    """Seconds since the epoch that advance 0.5 s per reading."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


class LLMLike:
    """Plays like ``inner`` (a bot) and leaves the trace records the LLM agent leaves (agents/llm/agent.py):
    ``llm_prefix`` once (its system prompt holds the seat's target), per move one ``llm_call`` (tokens
    120 in / 40 cached / 15 out, 0.5 s), every third move first a failed tool call and a provider retry, on
    its second move an illegal action the engine refuses (the ``refused`` hook then traces it), and on move
    :data:`FALLBACK_MOVE` a ``fallback`` record (one invalid call) instead of a ``decision``."""

    def __init__(self, inner: Any, model: str = LLM_MODEL) -> None:
        self.inner, self.model = inner, model
        self.moves = 0
        self.refusals = 0
        self._traces: list[dict[str, Any]] = []
        self._invalid: dict[str, int] = {}
        self._started = False

    def observe(self, events: list[dict[str, Any]]) -> None:
        hook = getattr(self.inner, "observe", None)
        if hook is not None:
            hook(events)

    def refused(self, error: Mapping[str, Any]) -> None:
        self.refusals += 1
        self._traces.append({"source": "llm", "trace": "refused", "error": dict(error)})

    def drain_traces(self) -> list[dict[str, Any]]:
        inner = getattr(self.inner, "drain_traces", None)
        out = [*(inner() if inner is not None else []), *self._traces]
        self._traces = []
        return out

    def _call(self, key: str, step: int, retries: int = 0) -> None:
        prompt = [{"role": "human", "content": f"move {key}: your hand is secret"}]
        self._traces.append(
            {
                "source": "llm", "trace": "llm_call", "model": self.model, "decision": key, "step": step,
                "prompt": prompt, "latency_s": 0.5, "provider_retries": [{"status": 429}] * retries,
                "completion": {"role": "ai", "content": "ok"}, "reasoning": "I think",
                "tokens": {"prompt_tokens": 120, "cached_prompt_tokens": 40, "completion_tokens": 15,
                           "source": "provider"},
                "finish_reason": "tool_calls",
            }
        )  # fmt: skip

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        key = str(view["move_key"])
        if not self._started:
            self._started = True
            self._traces.append(
                {
                    "source": "llm", "trace": "llm_prefix", "model": self.model,
                    "system": f"You play TradeCraft. Your target: {view['target']}", "tokens": 300,
                }
            )  # fmt: skip
        first_try = key not in self._invalid
        self._invalid.setdefault(key, 0)
        step = 1
        if first_try:
            self.moves += 1
            if self.moves % 3 == 0:
                self._call(key, step, retries=1)
                self._traces.append({"source": "llm", "trace": "tool_error", "decision": key,
                                     "error": {"code": "not_a_tool_call"}})  # fmt: skip
                self._invalid[key] += 1
                step += 1
        else:
            self._invalid[key] += 1  # the engine refused what this move sent
        self._call(key, step)
        if first_try and self.moves == 2:
            action: dict[str, Any] = {"type": "craft", "recipe": "no_such_recipe", "runs": 1}
        else:
            action = dict(self.inner.act(view, legal))
        if first_try and self.moves == FALLBACK_MOVE:  # its answer was no valid call: the safe move instead
            self._invalid[key] += 1
            errors = ["invalid_action"] * self._invalid[key]
            reason = "too_many_invalid_calls"
            fallback = {"source": "llm", "trace": "fallback", "decision": key, "reason": reason}
            self._traces.append({**fallback, "action": action, "errors": errors})
            return action
        self._traces.append(
            {"source": "llm", "trace": "decision", "decision": key, "action": action, "steps": step,
             "invalid": self._invalid[key], "fallback": False}
        )  # fmt: skip
        return action


@dataclass
class Played:
    """One played game: its result, its log and how its seats were described."""

    result: LocalResult
    log: GameLog
    seats: list[dict[str, Any]]
    meta: dict[str, Any]


#: Short games in the paper's configuration: seat 0 reports V0+V1+V2, seat 1 (the baseline) V0 only.
def paper_settings(max_turns: int = 3) -> GameSettings:
    return GameSettings(
        ruleset="minecraft",
        max_turns=max_turns,
        crafting_runs="whole",
        allow_pass=False,
        tom_orders=[[0, 1, 2], [0]],
    )


def play(
    instance_id: str,
    specs: Sequence[str],
    *,
    seed: int = 1,
    llm_seats: Sequence[int] = (),
    game_id: str | None = None,
    meta: Mapping[str, Any] | None = None,
    settings: GameSettings | None = None,
    models: Mapping[int, str] | None = None,
) -> Played:
    """Play ``instance_id`` with bots ``specs`` (seats in ``llm_seats`` wrapped in :class:`LLMLike`, naming
    ``models[seat]``, by default :data:`LLM_MODEL`); seat 1 is the runner's non-focal baseline."""
    instance = get_instance(instance_id)
    rules = minecraft()
    bots = [make_policy(spec, seed + seat) for seat, spec in enumerate(specs)]
    model = {seat: (models or {}).get(seat, LLM_MODEL) for seat in llm_seats}
    policies = [LLMLike(bot, model[seat]) if seat in model else bot for seat, bot in enumerate(bots)]
    seats = [
        {"seat": seat, "kind": "agent" if seat in model else "bot", "name": f"{spec}-{seat}",
         "bot": None if seat in model else spec, "model": model.get(seat), "focal": seat == 0}
        for seat, spec in enumerate(specs)
    ]  # fmt: skip
    result = play_local(
        instance, settings or paper_settings(), rules, policies, seed, clock=FakeClock(1_800_000_000.0 + seed)
    )
    game_id = game_id or f"{instance_id}@{seed}"
    log = result.game_log(game_id=game_id, seats=seats, meta=meta)
    return Played(result, log, seats, dict(meta or {}))


_RULES: dict[str, RuleSet] = {}


def minecraft() -> RuleSet:
    if "minecraft" not in _RULES:
        _RULES["minecraft"] = load_rule_set("minecraft")
    return _RULES["minecraft"]


def store_game(
    store: Store, played: Played, *, status: str = "finished", extra: Mapping[str, Any] = ()
) -> None:
    """Write a played game as the runner does: create it (metadata, seats), append its events and traces
    move by move as they happened, then set its status."""
    log, game = played.log, played.result.game
    store.create_game(
        log.game_id,
        {
            "mode": game.instance.mode, "ruleset": game.rules.name, "ruleset_hash": game.rules.content_hash,
            "instance_id": game.instance.id, "settings": game.settings.model_dump(mode="json"),
            "seed": game.seed, "seats": played.seats, "status": "running",
            "created_at": log.header.created_at, **played.meta, **dict(extra),
        },
    )  # fmt: skip
    events = [e.to_dict() | {"time": t} for e, t in zip(log.events, log.times, strict=True)]
    store.append_events(log.game_id, events)
    traces = [t.model_dump(mode="json") for t in log.traces]
    if traces:
        store.append_traces(log.game_id, traces)
    store.update_game(log.game_id, status=status, finished_at=log.header.finished_at)


def experiment_meta(experiment: str, job_key: str, attempt: int, condition: str) -> dict[str, Any]:
    return {
        "experiment": experiment, "job_key": job_key, "attempt": attempt, "source": "experiment",
        "condition": condition,
    }  # fmt: skip
