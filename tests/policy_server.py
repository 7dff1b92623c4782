"""``run_server.py`` with the test-only policies of ``tests/bot_policies.py`` injected through
``create_app(policy_factory=...)``: the real server, over real sockets, seating policies that sleep, learn,
trace, hang or cheat. Used by tests/test_server_bots.py through ``ServerProcess(script=...)``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import bot_policies  # noqa: E402

import run_server  # noqa: E402
from server.web.app import create_app  # noqa: E402


def create_app_with_test_policies(settings: Any = None, **options: Any) -> Any:
    return create_app(settings, policy_factory=bot_policies.factory, **options)


if __name__ == "__main__":
    run_server.create_app = create_app_with_test_policies  # type: ignore[attr-defined]
    sys.exit(run_server.main())
