"""`tradecraft play`: a headless local game between built-in bots, for a quick look and for self-play."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from agents.bot_cli import policies_text
from agents.bots.registry import (
    MODEL_SPEC_OPTION,
    PolicySpecError,
    describe_policies,
    make_policy,
    parse_policy_spec,
    policy_names,
)
from agents.local import LocalPlayError, LocalResult, derive_seed, play_local
from agents.narrator import narrate_events
from craft_rules.errors import TradeCraftError
from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.tasks import (
    TaskInstance,
    get_instance,
    iter_instances,
    mode_for_players,
    parse_instance_file,
)
from server.game import GameError, GameSettings
from server.game.gamelog import encode_log

DEFAULT_RULESET = "minecraft"


class PlayError(TradeCraftError):
    """Why ``tradecraft play`` cannot start. ``code`` is machine-readable; the message says what to do."""


def split_players(spec: str) -> list[str]:
    """Split ``--players`` at the commas between seats: ``"random,llm:x?tom=0,1,random"`` is three seats.

    A comma inside a spec's options (``tom=0,1``) belongs to that option: a piece that is not a policy
    name and follows a spec with options continues it.
    """
    names = set(policy_names())
    seats: list[str] = []
    for piece in (p.strip() for p in spec.split(",")):
        head = piece.split("?", 1)[0].split(":", 1)[0]
        if seats and "?" in seats[-1] and head not in names:
            seats[-1] += "," + piece
        elif piece:
            seats.append(piece)
    return seats


def parse_players(spec: str) -> list[str]:
    """``"random,random"`` -> ``["random", "random"]``; every entry must be a valid policy spec."""
    names = split_players(spec)
    if len(names) < 2:
        raise PlayError(
            "wrong_player_count",
            f"--players names {len(names)} bot(s); name one per seat, at least two, e.g. random,random.",
        )
    for name in names:
        try:
            make_policy(name, 0)  # builds nothing lasting: checks the name and its options now
        except PolicySpecError as err:
            raise PlayError(err.code, err.message) from None
    return names


def _instance_from_file(ruleset: str | None, ref: str, players: int) -> TaskInstance:
    """``path/to/file.json`` or ``path/to/file.json#2``: an instance file of your own."""
    path_text, _, index_text = ref.partition("#")
    ruleset = ruleset or DEFAULT_RULESET
    try:
        instances = parse_instance_file(Path(path_text), ruleset, mode_for_players(players), f"{ruleset}:")
    except RuleSetError as err:
        raise PlayError("invalid_instance", f"{err}; fix the file or pick a shipped instance.") from err
    index = int(index_text) if index_text.isdigit() else 0
    if index >= len(instances):
        raise PlayError(
            "unknown_instance",
            f"{path_text} holds {len(instances)} instance(s); #{index} is out of range.",
        )
    return instances[index]


def resolve_instance(ruleset: str | None, ref: str | None, players: int) -> TaskInstance:
    """The instance ``ref`` names: a full id, an index into the rule set's instances for ``players``
    seats (by default the first of those), or an instance file ``path.json[#index]``.
    ``ruleset`` defaults to the id's own, else minecraft."""
    if ref is not None and ref.partition("#")[0].endswith(".json"):
        instance = _instance_from_file(ruleset, ref, players)
    elif ref is not None and not ref.isdigit():
        try:
            instance = get_instance(ref)
        except KeyError:
            raise PlayError(
                "unknown_instance",
                f"There is no task instance {ref!r}; `tradecraft tasks list` shows the ids "
                "(or pass an index such as --instance 0).",
            ) from None
        if ruleset is not None and instance.ruleset != ruleset:
            raise PlayError(
                "ruleset_mismatch",
                f"Instance {ref} belongs to rule set {instance.ruleset}, not {ruleset}; drop --ruleset or "
                "pick one of its instances.",
            )
    else:
        ruleset = ruleset or DEFAULT_RULESET
        mode = mode_for_players(players)
        candidates = list(iter_instances(ruleset, mode))
        index = int(ref) if ref is not None else 0
        if not candidates:
            raise PlayError(
                "no_instances",
                f"Rule set {ruleset} ships no {mode} instances ({players} players); "
                "`tradecraft tasks list` shows what exists.",
            )
        if index >= len(candidates):
            raise PlayError(
                "unknown_instance",
                f"Rule set {ruleset} has {len(candidates)} {mode} instances "
                f"(indexes 0..{len(candidates) - 1}); --instance {index} is out of range.",
            )
        instance = candidates[index]
    if instance.players != players:
        raise PlayError(
            "wrong_player_count",
            f"Instance {instance.id} is for {instance.players} players but --players names {players}; "
            f"name {instance.players} bots.",
        )
    return instance


def seat_tom_orders(names: list[str]) -> list[list[int]]:
    """The game's ``tom_orders`` from the seats' ``tom=`` options (``llm:...?tom=0,1``); [] when none asks.

    The policy validated the option already (``parse_players``); a seat without it reports nothing.
    """
    orders = [parse_policy_spec(name).options.get("tom") for name in names]
    if not any(orders):
        return []
    return [[int(o) for o in text.split(",")] if text else [] for text in orders]


def seat_records(names: list[str]) -> list[dict[str, Any]]:
    """Who played each seat, for the log header: a bot, or an LLM agent and its model (no credentials)."""
    records = []
    for seat, name in enumerate(names):
        spec = parse_policy_spec(name)
        record: dict[str, Any] = {"seat": seat, "kind": "bot", "name": name, "bot": name}
        if spec.name == "llm":
            record = {"seat": seat, "kind": "llm", "name": name, "model": spec.options.get(MODEL_SPEC_OPTION)}
        records.append(record)
    return records


def run_play(
    ruleset: str | None,
    instance_ref: str | None,
    names: list[str],
    seed: int,
    max_turns: int | None,
    clock: Callable[[], float] | None = None,
    crafting_runs: str | None = None,
) -> LocalResult:
    """Play one game between the bots ``names`` (one per seat); ``clock`` stamps its events.

    ``crafting_runs``: ``whole`` | ``rational``; None plays the rule the instance was made for (its file
    says; ``rational`` when it does not), so the paper set plays whole runs as the paper's games did."""
    instance = resolve_instance(ruleset, instance_ref, len(names))
    try:
        rules = load_rule_set(instance.ruleset)
    except RuleSetError as err:
        raise PlayError("unknown_ruleset", f"{err}; `tradecraft rules list` shows the rule sets.") from err
    settings = GameSettings(
        ruleset=instance.ruleset,
        crafting_runs=crafting_runs or instance.crafting_runs or "rational",
        **({"max_turns": max_turns} if max_turns else {}),
        **({"tom_orders": orders} if (orders := seat_tom_orders(names)) else {}),
    )
    # each seat's bot gets its own seed, derived from the game seed, so seats do not mirror each other
    policies = [make_policy(name, derive_seed(seed, "seat", seat)) for seat, name in enumerate(names)]
    try:
        result = play_local(instance, settings, rules, policies, seed, clock=clock)
    except (LocalPlayError, GameError) as err:
        raise PlayError(err.code, err.message) from err
    return result


def _fail(err: PlayError, as_json: bool) -> NoReturn:
    if as_json:
        json.dump({"ok": False, "error": {"code": err.code, "message": err.message}}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        sys.exit(1)
    raise click.ClickException(f"{err.message} [{err.code}]")


def _text(outcome: dict[str, Any]) -> str:
    winners = outcome["winners"]
    seats = "  ".join(f"{seat}: {name}" for seat, name in enumerate(outcome["bots"]))
    return "\n".join(
        [
            f"instance    {outcome['instance_id']} ({outcome['players']} players, seed {outcome['seed']})",
            f"players     {seats}",
            "winners     " + (", ".join(f"Player {s}" for s in winners) if winners else "none"),
            f"end         {outcome['end_reason']} after {outcome['turns']} turn(s)",
            f"events      {outcome['events']} "
            f"({outcome['actions']} player actions, {outcome['timeouts']} timeouts)",
            f"log sha256  {outcome['log_sha256']}",
            *([f"game log    {outcome['log']}"] if "log" in outcome else []),
        ]
    )


def _list_policies(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    policies = describe_policies()
    if ctx.params.get("as_json"):
        json.dump(policies, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        click.echo(policies_text(policies))
    ctx.exit()


@click.command("play")
@click.option(
    "--ruleset", default=None, help=f"rule set (default: the instance's own, else {DEFAULT_RULESET})"
)
@click.option(
    "--instance",
    "instance_ref",
    default=None,
    help="a full instance id (minecraft/1p_v_1p/file#0), an index into the rule set's instances "
    "for the number of players (default: the first), or an instance file of your own: path.json[#index]",
)
@click.option(
    "--players",
    default="random,random",
    show_default=True,
    help="one policy spec per seat, comma-separated: a name (`tradecraft bots` lists them), "
    "optionally with options, e.g. random,random?accept_probability=0.9; an LLM agent is "
    "llm:<provider>:<model>[?tom=0,1&persona=fair&cot=1] (docs/llm-agents.md)",
)
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the game and its bots")
@click.option("--max-turns", type=click.IntRange(1, 10_000), default=None, help="turn limit (default 10)")
@click.option(
    "--runs",
    "crafting_runs",
    type=click.Choice(["whole", "rational"]),
    default=None,
    help="crafting-runs rule (default: the one the instance was made for, else rational)",
)
@click.option(
    "--narrate",
    "narrate_seat",
    type=int,
    default=None,
    help="also print the game as the narrator tells it to this seat",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="also write the game log (the researcher JSONL format the server exports) to this file",
)
@click.option("--json", "as_json", is_flag=True, is_eager=True, help="machine-readable output")
@click.option(
    "--list-policies",
    is_flag=True,
    expose_value=False,
    callback=_list_policies,
    help="list the installed policies (bots) and their options, then exit (as `tradecraft bots`)",
)
def play_command(
    ruleset: str | None,
    instance_ref: str | None,
    players: str,
    seed: int,
    max_turns: int | None,
    crafting_runs: str | None,
    narrate_seat: int | None,
    log_path: Path | None,
    as_json: bool,
) -> None:
    """Play a headless local game between built-in bots and print the outcome.

    The outcome: winners, turns, number of events and the sha256 of the canonical event log (the same
    arguments always give the same hash). With --log, the game log also records when each event happened.
    """
    try:
        names = parse_players(players)
        if narrate_seat is not None and not 0 <= narrate_seat < len(names):
            raise PlayError(
                "unknown_player",
                f"--narrate {narrate_seat} is not a seat; seats are 0..{len(names) - 1}.",
            )
        if log_path is not None and log_path.parent and not log_path.parent.is_dir():
            raise PlayError(
                "invalid_log_path",
                f"--log {log_path}: the folder {log_path.parent} does not exist; create it.",
            )
        result = run_play(
            ruleset, instance_ref, names, seed, max_turns, time.time if log_path else None, crafting_runs
        )
    except PlayError as err:
        _fail(err, as_json)
    outcome: dict[str, Any] = {"ok": True, **result.summary(), "bots": names}
    if log_path is not None:
        seats = seat_records(names)
        bot_seeds = {f"seat{seat}": derive_seed(seed, "seat", seat) for seat in range(len(names))}
        log = result.game_log(game_id=f"local-{result.game.instance.id}-{seed}", seats=seats, seeds=bot_seeds)
        with log_path.open("w", encoding="utf-8") as handle:
            handle.writelines(encode_log(log))
        outcome["log"] = str(log_path)
    narration = None
    if narrate_seat is not None:
        narration = narrate_events(result.events, narrate_seat, result.game.rules)
        outcome["narration"] = {"seat": narrate_seat, "text": narration}
    if as_json:
        json.dump(outcome, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    click.echo(_text(outcome))
    if narration is not None:
        click.echo(f"\nThe game as Player {narrate_seat} was told it:\n{narration}")
