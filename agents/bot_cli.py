"""`tradecraft bot`: attach any registered policy to a seat of a game on a running server; `tradecraft bots`:
the installed policies and their options.

The policy plays through :class:`agents.remote.RemoteConnection` (Socket.IO, an API token), exactly as a
browser would, until the game ends; dropped connections are healed by the connection itself. Imports stay
light (no Flask): the policy's own module loads only when the spec names it.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click


class _Failed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def run_bot(
    server: str,
    game_id: str,
    token: str,
    policy_spec: str,
    *,
    seat: int | None = None,
    seed: int = 0,
    retries: int = 2,
    timeout: float = 15.0,
    reconnect_timeout: float = 60.0,
    progress: bool = False,
) -> dict[str, Any]:
    """Play the seat to the end; the outcome as a JSON-safe dict (``traces`` included)."""
    from agents.bots.registry import PolicySpecError, make_policy
    from agents.connection import ConnectionFailed
    from agents.driver import run_seat
    from agents.remote import RemoteConnection
    from server.game.policy import FALLBACK

    try:
        policy = make_policy(policy_spec, seed)
    except PolicySpecError as err:
        raise _Failed(err.code, err.message) from None
    conn = RemoteConnection(
        server, game_id, token=token, seat=seat, timeout=timeout, reconnect_timeout=reconnect_timeout
    )
    try:
        conn.connect()
        if progress:
            click.echo(f"game {game_id}: playing seat {conn.seat} with {policy_spec}", err=True)
        outcome = run_seat(
            policy,
            conn,
            on_refusal=replace(FALLBACK, retries=retries),
            on_move=(lambda o: click.echo(f"  action {o.actions}", err=True)) if progress else None,
        )
        status = conn.status
    except ConnectionFailed as err:
        raise _Failed(err.code, err.message) from None
    finally:
        conn.close()
    return {
        "ok": True,
        "game_id": game_id,
        "policy": policy_spec,
        "status": status,
        "reconnects": conn.reconnects,
        **outcome.summary(),
        "fallback_actions": [f["action"] for f in outcome.fallbacks],
        "trace_records": outcome.traces,
    }


@click.command("bot")
@click.option(
    "--server",
    "server",
    required=True,
    envvar="TRADECRAFT_SERVER",
    help="server URL, e.g. http://127.0.0.1:5000",
)
@click.option("--game", "game_id", required=True, help="the game id (from the lobby or create_game)")
@click.option(
    "--seat", type=click.IntRange(0, 63), default=None, help="the seat to take (default: any free one)"
)
@click.option(
    "--policy",
    "policy_spec",
    default="random",
    show_default=True,
    help="a policy spec (`tradecraft bots` lists them), e.g. random?accept_probability=0.9 or "
    "llm:openai:gpt-4o-mini?tom=0,1",
)
@click.option(
    "--token",
    required=True,
    envvar="TRADECRAFT_TOKEN",
    help="API token (`tradecraft admin create-token NAME`); or set TRADECRAFT_TOKEN",
)
@click.option("--seed", type=int, default=0, show_default=True, help="the policy's seed")
@click.option(
    "--retries",
    type=click.IntRange(0, 10),
    default=2,
    show_default=True,
    help="retries of a refused move before the fallback",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.5, 600),
    default=15.0,
    show_default=True,
    help="seconds to wait for an answer",
)
@click.option(
    "--reconnect-timeout",
    type=click.FloatRange(1, 3600),
    default=60.0,
    show_default=True,
    help="seconds to keep reconnecting before giving up",
)
@click.option(
    "--traces",
    "traces_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="write the policy's trace records (JSON lines) to this file",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--quiet", is_flag=True, help="no progress lines on stderr")
def bot_command(
    server: str,
    game_id: str,
    seat: int | None,
    policy_spec: str,
    token: str,
    seed: int,
    retries: int,
    timeout: float,
    reconnect_timeout: float,
    traces_path: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Play one seat of a game on a running server with a bot or an LLM agent, until the game ends."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        if traces_path is not None and not traces_path.parent.is_dir():
            raise _Failed(
                "invalid_path", f"--traces {traces_path}: the folder {traces_path.parent} does not exist."
            )
        outcome = run_bot(
            server,
            game_id,
            token,
            policy_spec,
            seat=seat,
            seed=seed,
            retries=retries,
            timeout=timeout,
            reconnect_timeout=reconnect_timeout,
            progress=not quiet and not as_json,
        )
    except _Failed as err:
        if as_json:
            click.echo(json.dumps({"ok": False, "error": {"code": err.code, "message": err.message}}))
            sys.exit(1)
        raise click.ClickException(f"{err.message} [{err.code}]") from None
    traces = outcome.pop("trace_records")
    if traces_path is not None:
        with traces_path.open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(record, default=str) + "\n" for record in traces)
        outcome["traces_file"] = str(traces_path)
    if as_json:
        click.echo(json.dumps(outcome, indent=2))
        return
    winners = outcome["winners"]
    click.echo(
        f"game {game_id} {outcome['status']}: seat {outcome['seat']} made {outcome['actions']} move(s) "
        f"({outcome['fallbacks']} fallback(s), {outcome['reconnects']} reconnect(s)); winners: "
        + (", ".join(f"Player {s}" for s in winners) if winners else "none")
        + f" ({outcome['end_reason']})"
    )


def policies_text(policies: list[dict[str, Any]]) -> str:
    """:func:`agents.bots.registry.describe_policies` as text: each policy, then its options, one a line."""
    lines = []
    for entry in policies:
        lines.append(f"{entry['name']:<14} {entry['summary']}")
        for option in entry["options"]:
            lines.append(f"    {' | '.join(option['names']):<24} {option['help']}")
        if not entry["options"]:
            lines.append("    (no options)")
    return "\n".join(lines)


@click.command("bots")
@click.argument("names", nargs=-1)
@click.option(
    "--json", "as_json", is_flag=True, help="machine-readable output (options with their JSON schema)"
)
def bots_command(names: tuple[str, ...], as_json: bool) -> None:
    """List the installed policies (bots, LLM agents), or those NAMES, with their options: what values each
    takes (type, bounds, choices) and its default.

    A spec sets options as name?key=value&key=value, e.g. random?accept_probability=0.9 or
    llm:openai:gpt-4o-mini?tom=0,1 (the part after `llm:` is the option model_spec).
    """
    from agents.bots.registry import describe_policies, policy_names

    unknown = sorted(set(names) - set(policy_names()))
    if unknown:
        raise click.ClickException(
            f"No policy {', '.join(unknown)}; choose among: {', '.join(policy_names())} [unknown_bot]"
        )
    policies = [entry for entry in describe_policies() if not names or entry["name"] in names]
    click.echo(json.dumps(policies, indent=2) if as_json else policies_text(policies))
