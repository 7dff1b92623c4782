"""Test-only policies for a live server (``tests/policy_server.py`` injects :func:`factory` through
``create_app(policy_factory=...)``). Each wraps the real random bot and adds one behaviour the server must
cope with, recording what it was shown and asked in JSON lines under ``$TC_TEST_POLICY_RECORDS`` (one file
per policy object, flushed per line, so a SIGKILLed server leaves complete lines).

Specs: ``sleepy?seconds=S``, ``observer[?seconds=S]``, ``tracer[?size=BYTES&count=N]``, ``hang``,
``illegal``, ``llm:<anything>`` (a tracer standing in for the LLM agent of branch lang-llm) and anything the
installed registry knows (``random``, ``tom1``, ...).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from agents.bots.registry import make_policy

SECRET_ENV = "OPENAI_API_KEY"


class Recorded:
    """A random bot that records its seed, every observe() and every act() to its own file."""

    def __init__(self, name: str, seed: int, options: dict[str, str]) -> None:
        self.name = name
        self.seed = seed
        self.options = options
        self.inner = make_policy("random", seed)
        folder = Path(os.environ.get("TC_TEST_POLICY_RECORDS", "."))
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{name}-{seed}-{uuid.uuid4().hex[:8]}.jsonl"
        self.observed = 0
        self._write({"built": name, "seed": seed, "options": options})

    def _write(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"at": time.time(), **record}) + "\n")

    def observe(self, events: list[dict[str, Any]]) -> None:
        self.observed += len(events)
        self._write({"observe": events})

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        self._write({"act": view["seat"], "log_size": view["log_size"], "observed": self.observed})
        seconds = float(self.options.get("seconds", 0))
        if seconds:
            time.sleep(seconds)
        return self.inner.act(view, legal)


class Tracer(Recorded):
    """Leaves ``count`` trace records per move, one of them ``size`` bytes long and one quoting the
    provider key of the server's environment (which must never be stored)."""

    def __init__(self, name: str, seed: int, options: dict[str, str]) -> None:
        super().__init__(name, seed, options)
        self.traces: list[dict[str, Any]] = []

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        action = super().act(view, legal)
        size, count = int(self.options.get("size", 200_000)), int(self.options.get("count", 3))
        self.traces.append({"kind": "llm_call", "prompt": "p" * size, "usage": {"prompt_tokens": size}})
        self.traces.append({"step": "oops", "echo": f"key={os.environ.get(SECRET_ENV, '')}"})
        for index in range(count - 2):
            self.traces.append({"step": "decision", "index": index, "action": action["type"]})
        return action

    def drain_traces(self) -> list[dict[str, Any]]:
        drained, self.traces = self.traces, []
        return drained


class Hang(Recorded):
    """Never answers (until the server process ends)."""

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        self._write({"act": view["seat"], "log_size": view["log_size"], "observed": self.observed})
        threading.Event().wait()
        raise AssertionError("unreachable")


class Illegal(Recorded):
    """Always answers with a craft, whatever the phase: refused unless the seat is crafting."""

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        self._write({"act": view["seat"], "log_size": view["log_size"], "observed": self.observed})
        return {"type": "craft", "recipe": "torch", "runs": 1}


KINDS = {"sleepy": Recorded, "observer": Recorded, "tracer": Tracer, "hang": Hang, "illegal": Illegal}


def factory(spec: str, seed: int) -> Any:
    head, _, query = spec.partition("?")
    name = head.split(":", 1)[0]
    options = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
    if name == "llm":
        return Tracer("llm", seed, {"size": "100", "count": "2"})
    if name in KINDS:
        return KINDS[name](name, seed, options)
    return make_policy(spec, seed)


def names() -> list[str]:
    return sorted(KINDS)


def read_records(folder: Path, name: str | None = None) -> list[list[dict[str, Any]]]:
    """Every policy object's records (one list per object, in its order), oldest object first."""
    files = [p for p in folder.glob("*.jsonl") if name is None or p.name.startswith(f"{name}-")]
    out = []
    for path in files:
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if lines:
            out.append(lines)
    return sorted(out, key=lambda records: records[0]["at"])
