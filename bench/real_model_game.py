"""One game of an LLM seat driven by a real model on an OpenAI-compatible server (e.g. llama.cpp's
``llama-server``) against a built-in bot, and how much of it the model really played.

The LLM seat is the project's own policy, built from a spec exactly as ``tradecraft play`` builds it
(``llm:llamacpp:<model>?base_url=<url>&<options>``, :func:`agents.bots.registry.make_policy`), and the
game is :func:`agents.local.play_local` on a ``paper`` instance with the paper protocol
(:func:`agents.tournament.settings_for`), its turn limit capped by ``--turns`` so a small model on a CPU
finishes in minutes. Printed as the game goes, per move of the LLM seat: whether the move was the model's
own (a ``decision`` trace with ``fallback`` false) or the logged fallback (and why), model calls, prompt
tokens and latency. At the end: the share of own moves, the tool mode the agent used, prompt tokens and
latency per call, time and retries per move.

Usage (docs/open-models.md shows how to build and start the server)::

    python bench/real_model_game.py --base-url http://127.0.0.1:8091/v1 --model qwen2.5-coder-0.5b \\
        --options "timeout=600" --turns 3

It reads the agent's traces only, so it runs on any version of the agent: fields a version does not
write (the probed mode, per-attempt records) are reported as absent, not guessed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.bots.registry import make_policy
from agents.local import LocalProgress, play_local
from agents.tournament import settings_for
from craft_rules.loader import load_rule_set
from craft_rules.tasks import get_instance, instance_set_ids
from server.game.policy import FALLBACK

MOVE_TRACES = ("decision", "fallback")
"""The trace kinds that close one move of the LLM seat: the model's own action, or the fallback."""


def llm_spec(model: str, base_url: str, options: str) -> str:
    """The policy spec of the LLM seat; ``options`` is the spec's query string without the ``?``."""
    query = [f"base_url={base_url}"] + [part for part in options.split("&") if part]
    return f"llm:llamacpp:{model}?{'&'.join(query)}"


def spread(values: Sequence[float], unit: str = "", digits: int = 0) -> str:
    """``median m, mean a, max x`` of ``values`` (``n/a`` when empty)."""
    if not values:
        return "n/a"
    fmt = f"{{:.{digits}f}}{unit}"
    median, mean, high = statistics.median(values), statistics.fmean(values), max(values)
    return f"median {fmt.format(median)}, mean {fmt.format(mean)}, max {fmt.format(high)} (n={len(values)})"


def mode_of(records: Sequence[dict[str, Any]]) -> str:
    """The tool mode the agent reports (probe result, prefix settings or decision traces), else a note
    that this agent has no modes (it binds the tools natively and never sends ``tool_choice``)."""
    for record in records:
        if record.get("trace") == "llm_probe":
            chosen = record.get("mode") or (record.get("result") or {}).get("mode")
            if chosen:
                return f"{chosen} (probed; tool_choice={record.get('tool_choice')})"
    for record in records:
        settings = record.get("settings") or {}
        for key in ("tool_mode", "mode"):
            if record.get("trace") == "llm_prefix" and settings.get(key):
                return f"{settings[key]} (tool_choice={settings.get('tool_choice')})"
            if record.get("trace") == "decision" and record.get(key):
                return str(record[key])
    return "native, implicit (this agent reports no tool mode: tools bound, no tool_choice sent)"


def completion_text(record: dict[str, Any], limit: int = 160) -> str:
    """A short, single-line view of what the model answered in one ``llm_call`` (for the live log)."""
    completion = record.get("completion")
    if not completion:
        return "(no answer)"
    calls = completion.get("tool_calls") or []
    if calls:
        return "tool calls: " + json.dumps([[c.get("name"), c.get("args")] for c in calls])[:limit]
    content = completion.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return "text: " + " ".join(text.split())[:limit]


class Tally:
    """Collects the LLM seat's traces as the game streams them and prints each finished move."""

    def __init__(self, seat: int, show_replies: bool) -> None:
        self.seat = seat
        self.show_replies = show_replies
        self.records: list[dict[str, Any]] = []
        self.move_seconds: list[float] = []
        self._calls_this_move: list[dict[str, Any]] = []
        self._last = time.perf_counter()

    def __call__(self, progress: LocalProgress) -> None:
        now = time.perf_counter()
        closed = False
        for trace in progress.traces:
            if trace.seat != self.seat:
                continue
            record = dict(trace.model_extra or {})
            self.records.append(record)
            kind = record.get("trace")
            if kind == "llm_call":
                self._calls_this_move.append(record)
                if self.show_replies:
                    print(f"      call {len(self._calls_this_move)}: {completion_text(record)}", flush=True)
            elif kind in MOVE_TRACES:
                closed = True
                self._print_move(record, now - self._last)
        if closed:
            self.move_seconds.append(now - self._last)
        self._last = now

    def _print_move(self, record: dict[str, Any], seconds: float) -> None:
        calls = self._calls_this_move
        self._calls_this_move = []
        latencies = [c.get("latency_s") or 0.0 for c in calls]
        prompts = [(c.get("tokens") or {}).get("prompt_tokens") for c in calls]
        if record.get("trace") == "decision":
            outcome = f"own      {json.dumps(record.get('action'))[:90]}"
        else:
            errors = ",".join(record.get("errors") or []) or "-"
            outcome = f"FALLBACK {record.get('reason')} [{errors}] -> {json.dumps(record.get('action'))[:60]}"
        print(
            f"  move {len(self.move_seconds) + 1:>3} {record.get('decision', '?'):<28} {outcome}\n"
            f"           {len(calls)} calls, {seconds:.1f} s (model {sum(latencies):.1f} s), "
            f"prompt tokens {prompts}",
            flush=True,
        )


def report(tally: Tally, wall: float, result: Any) -> dict[str, Any]:
    """Print the game's figures and return them as JSON-safe data."""
    records = tally.records
    calls = [r for r in records if r.get("trace") == "llm_call"]
    answered = [r for r in calls if r.get("completion")]
    decisions = [r for r in records if r.get("trace") == "decision" and not r.get("fallback")]
    fallbacks = [r for r in records if r.get("trace") == "fallback"]
    moves = len(decisions) + len(fallbacks)
    prompt_tokens = [(r.get("tokens") or {}).get("prompt_tokens") for r in answered]
    prompt_tokens = [t for t in prompt_tokens if isinstance(t, int)]
    sources = Counter((r.get("tokens") or {}).get("source") for r in answered)
    completion_tokens = [
        t for r in answered if isinstance(t := (r.get("tokens") or {}).get("completion_tokens"), int)
    ]
    latencies = [float(r.get("latency_s") or 0.0) for r in calls]
    calls_per_move = Counter(r.get("decision") for r in calls)
    move_keys = [r.get("decision") for r in decisions + fallbacks]
    calls_each_move = [calls_per_move.get(key, 0) for key in move_keys]
    # answers the agent refused and asked again for (typed error), per move: what a retry costs
    invalid_each_move = [int(r.get("invalid") or 0) for r in decisions] + [
        len(r.get("errors") or []) for r in fallbacks
    ]
    provider_retries = sum(len(r.get("provider_retries") or []) for r in calls)
    attempts = sum(len(r.get("attempts") or []) for r in calls)
    finish = Counter(r.get("finish_reason") for r in answered)
    errors = Counter(code for r in fallbacks for code in r.get("errors") or [])
    figures = {
        "moves": moves,
        "own_moves": len(decisions),
        "fallback_moves": len(fallbacks),
        "own_share": round(len(decisions) / moves, 4) if moves else None,
        "fallback_reasons": dict(Counter(r.get("reason") for r in fallbacks)),
        "fallback_basis": dict(Counter(r.get("basis") for r in fallbacks if r.get("basis"))),
        "fallback_error_codes": dict(errors),
        "mode": mode_of(records),
        "model_calls": len(calls),
        "answered_calls": len(answered),
        "attempts_recorded": attempts or None,
        "prompt_tokens": prompt_tokens,
        "token_source": dict(sources),
        "completion_tokens": completion_tokens,
        "finish_reasons": dict(finish),
        "latency_s": latencies,
        "move_seconds": [round(s, 2) for s in tally.move_seconds],
        "calls_per_move": calls_each_move,
        "invalid_answers_per_move": invalid_each_move,
        "provider_retries": provider_retries,
        "wall_seconds": round(wall, 1),
        "turns": result.turns,
        "end_reason": result.end_reason,
        "winners": result.winners,
        "engine_refusals": result.refusals,
    }
    share = f"{100 * figures['own_share']:.0f}%" if moves else "n/a"
    print("\nsummary (LLM seat)")
    print(
        f"  moves                     {moves}: {len(decisions)} the model's own ({share}), "
        f"{len(fallbacks)} fallbacks {figures['fallback_reasons'] or ''}"
    )
    if errors:
        print(f"  errors before fallbacks   {dict(errors)}")
    if figures["fallback_basis"]:
        print(f"  fallback basis            {figures['fallback_basis']}")
    print(f"  tool mode                 {figures['mode']}")
    print(f"  model calls               {len(calls)} ({len(answered)} answered), finish {dict(finish)}")
    print(f"  prompt tokens per call    {spread(prompt_tokens)}  source {dict(sources)}")
    print(f"  completion tokens / call  {spread(completion_tokens)}")
    print(f"  latency per call          {spread(latencies, ' s', 1)}")
    print(f"  time per move             {spread(tally.move_seconds, ' s', 1)}")
    print(f"  model calls per move      {spread(calls_each_move, '', 1)}  (queries included)")
    print(f"  retries per move          {spread(invalid_each_move, '', 1)}  (invalid answers)")
    print(
        f"  provider retries          {provider_retries}"
        + (f"; attempts recorded {attempts}" if attempts else "")
    )
    print(
        f"  game                      {result.turns} turns, {result.end_reason}, winners {result.winners}, "
        f"engine refusals {result.refusals}, {wall:.0f} s wall"
    )
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8091/v1", help="the server's /v1 URL")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="the model name sent to the server")
    parser.add_argument(
        "--options", default="", help="more options of the llm spec, e.g. 'tool_mode=json_schema&timeout=600'"
    )
    parser.add_argument("--turns", type=int, default=3, help="cap on the game's turns (paper protocol: 15)")
    parser.add_argument("--instance", default=None, help="task instance id (default: the first paper one)")
    parser.add_argument("--opponent", default="random", help="the other seat's policy spec")
    parser.add_argument("--llm-seat", type=int, default=0, choices=(0, 1))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-replies", action="store_true", help="print each model answer, shortened")
    parser.add_argument("--json", type=Path, default=None, help="write the figures and the traces here")
    args = parser.parse_args(argv)

    instance = get_instance(args.instance or instance_set_ids("paper")[0])
    settings = settings_for(instance, args.seed)
    capped = dataclasses.replace(
        instance, max_turn=min(instance.turn_limit(settings.max_turns), max(1, args.turns))
    )
    spec = llm_spec(args.model, args.base_url, args.options)
    policies: list[Any] = [None, None]
    policies[args.llm_seat] = make_policy(spec, args.seed)
    policies[1 - args.llm_seat] = make_policy(args.opponent, args.seed + 1)
    print(
        f"{instance.id}, {capped.max_turn} turns at most; seat {args.llm_seat}: {spec}; "
        f"seat {1 - args.llm_seat}: {args.opponent}",
        flush=True,
    )

    tally = Tally(args.llm_seat, args.show_replies)
    started = time.perf_counter()
    result = play_local(
        capped,
        settings,
        load_rule_set(instance.ruleset),
        policies,
        args.seed,
        on_refusal=FALLBACK,
        on_progress=tally,
    )
    figures = report(tally, time.perf_counter() - started, result)
    if args.json is not None:
        payload = {"spec": spec, "instance": instance.id, "figures": figures, "traces": tally.records}
        args.json.write_text(json.dumps(payload, indent=1, default=str))
        print(f"  figures and traces        {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
